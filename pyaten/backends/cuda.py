"""`pyaten.backends.cuda` as a CPU-only PyTorch has it: flags that can be read and set.

    pyaten.backends.cuda.matmul.allow_tf32 = True      # as PyTorch, a setting, no effect here
    pyaten.backends.cuda.is_built()                     # False

`matmul.allow_tf32` and `pyaten.set_float32_matmul_precision` are one setting, as in
PyTorch: "highest" is allow_tf32 False, "high" and "medium" are True. pyaten computes float32
matrix products in float32 whatever the setting (NumPy has no TF32).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "cudnn_sdp_enabled", "enable_cudnn_sdp", "enable_flash_sdp", "enable_math_sdp",
    "enable_mem_efficient_sdp", "flash_sdp_enabled", "is_built", "is_flash_attention_available",
    "math_sdp_enabled", "matmul", "mem_efficient_sdp_enabled",
]

PRECISIONS = ("highest", "high", "medium")


class cuBLASModule:  # noqa: N801 - named like torch.backends.cuda.cuBLASModule
    """`pyaten.backends.cuda.matmul`: cuBLAS's flags; an unknown name raises as in PyTorch."""

    _FLAGS = (
        "allow_tf32", "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation", "fp32_precision",
    )

    def __init__(self) -> None:
        state = {
            "allow_fp16_reduced_precision_reduction": True,
            "allow_bf16_reduced_precision_reduction": True,
            "allow_fp16_accumulation": False,
        }
        object.__setattr__(self, "_state", state)
        object.__setattr__(self, "_precision", "highest")
        object.__setattr__(self, "_fp32_precision", "none")

    def __getattr__(self, name: str) -> Any:
        if name == "allow_tf32":
            return self._precision != "highest"
        if name == "fp32_precision":
            return self._fp32_precision
        if name in self._state:
            return self._state[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_tf32":
            _expect_bool(value, "set_allow_tf32_cublas")
            self.set_precision("high" if value else "highest")
        elif name == "fp32_precision":
            if value not in ("ieee", "tf32", "none"):
                raise RuntimeError(f"Invalid precision: {value}; expected ieee, tf32 or none")
            object.__setattr__(self, "_fp32_precision", value)
        elif name in self._state:
            _expect_bool(value, name)
            self._state[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")

    def set_precision(self, precision: str) -> None:
        """What `pyaten.set_float32_matmul_precision` sets (see the module doc)."""
        object.__setattr__(self, "_precision", precision)
        object.__setattr__(self, "_fp32_precision", "ieee" if precision == "highest" else "tf32")


def _expect_bool(value: Any, what: str) -> None:
    if not isinstance(value, bool):
        raise RuntimeError(f"{what} expects a bool, but got {type(value).__name__}")


matmul = cuBLASModule()


def is_built() -> bool:
    """False: pyaten is not built with CUDA."""
    return False


def is_flash_attention_available() -> bool:
    """False: no CUDA."""
    return False


# scaled_dot_product_attention's CUDA backends: enabled by default, as flags only here.
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _SDP["math"]


def cudnn_sdp_enabled() -> bool:
    return _SDP["cudnn"]


def enable_flash_sdp(enabled: bool) -> None:
    _SDP["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _SDP["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    _SDP["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    _SDP["cudnn"] = bool(enabled)
