"""pyaten: PyTorch's operator system, rebuilt in Python."""

__version__ = "0.1.0"

# --- no cyclic garbage collection while the package loads: import allocates ~300,000 objects
# that all live on (tables, schemas, functions), and the collector's passes over them were
# ~15% of `import pyaten` (docs/performance.md, "Import"). Restored at the end of this file,
# and by `_GcPaused.__del__` if the import fails before it.
import gc as _gc  # noqa: E402


class _GcPaused:
    def __init__(self) -> None:
        self.was_enabled = _gc.isenabled()
        _gc.disable()

    def resume(self) -> None:
        if self.was_enabled:
            self.was_enabled = False
            _gc.enable()

    __del__ = resume


_gc_paused = _GcPaused()

# --- glibc's thresholds raised only on request: PYATEN_MALLOC_TUNING=1 (Note: freed memory kept)
from pyaten.core.memory import tune_from_environment as _tune_from_environment  # noqa: E402

_tune_from_environment()

# --- the dispatcher: keys, tables, Library, dump_table / trace
import pyaten.dispatch as dispatch  # noqa: E402,F401
import pyaten.library as library  # noqa: E402,F401

# --- the tensor core: Tensor, dtypes, devices, promotion, creation, interop
from pyaten.core import *  # noqa: E402,F401,F403
from pyaten.core.quantized import (  # noqa: E402,F401 - torch.qscheme values
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from pyaten.core.symbolic import (  # noqa: E402,F401 - torch.SymInt... (docs/fx.md)
    SymBool,
    SymFloat,
    SymInt,
    sym_float,
    sym_int,
    sym_max,
    sym_min,
    sym_not,
)


# --- the generated API: pyaten.add, Tensor.add, operators, pyaten.ops handles
def _load_generated_api() -> None:
    import pyaten.ops

    # One batch for the operators' kernels (the @native families' imports register some
    # too) and their autograd kernels: each operator's dispatch table is computed once, on
    # its first use after the block (no operator runs in between).
    with dispatch.registry.batch():
        from pyaten.native.loader import load

        globals().update(load().functions)
        import pyaten.autograd  # noqa: F401 - registers the kernels of derivatives.yaml
    globals()["ops"] = pyaten.ops


_load_generated_api()

# --- PyTorch's hand-bound conversions: Tensor.to / .cpu() / .float() ...
from pyaten.native.kernels.copy import attach_tensor_conversions as _attach_conversions  # noqa: E402

_attach_conversions()

# --- Tensor.type and Tensor.chalf, bound by hand as in PyTorch (kernels/convert.py)
from pyaten.native.kernels.convert import attach_conversions as _attach_type  # noqa: E402

_attach_type()

# --- torch.functional's Python forms: meshgrid(*tensors, indexing=), atleast_1d(a, b), ...
from pyaten.functional import install as _install_functional  # noqa: E402

_install_functional(globals())

# --- hand-bound forms: unique(dim=, return_inverse=...), unique_consecutive, nonzero(as_tuple=)
from pyaten.native.kernels.counting import attach_python_forms as _attach_sorting  # noqa: E402

_attach_sorting(globals())

# --- autograd: kernels from derivatives.yaml, the engine, grad mode (docs/autograd.md)
import pyaten.autograd as autograd  # noqa: E402,F401

# --- torch.fft's functions: `pyaten.fft.rfft` (docs/fft.md)
import pyaten.fft as fft  # noqa: E402,F401

# --- torch.linalg's functions: `pyaten.linalg.inv` (docs/linalg.md); torch.functional's
# einsum, tensordot, chain_matmul and norm wrappers in place of their bare bindings
import pyaten.linalg as linalg  # noqa: E402,F401

# --- torch.nn's functions: `pyaten.nn.functional.relu` (docs/nn-functional.md)
import pyaten.nn as nn  # noqa: E402,F401
from pyaten.autograd.anomaly_mode import (  # noqa: E402,F401
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from pyaten.autograd.grad_mode import (  # noqa: E402,F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from pyaten.linalg_functional import TOP_LEVEL as _LINALG_TOP_LEVEL  # noqa: E402
from pyaten.linalg_functional import tensor_norm as _tensor_norm  # noqa: E402

globals().update(_LINALG_TOP_LEVEL)
Tensor.norm = _tensor_norm  # noqa: F405 - torch's Tensor.norm is Python over torch.norm

# --- torch.special's functions: `pyaten.special.entr` (docs/special.md)
import pyaten.special as special  # noqa: E402,F401,I001 - the order below is the load order

# Sparse layouts and torch.sparse's operators (docs/sparse.md)
import pyaten.sparse as sparse  # noqa: E402,F401
from pyaten.core.sparse import (  # noqa: E402,F401
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
)
from pyaten.sparse._factories import (  # noqa: E402,F401 - array-likes, check_invariants
    sparse_bsc_tensor,
    sparse_bsr_tensor,
    sparse_compressed_tensor,
    sparse_coo_tensor,
    sparse_csc_tensor,
    sparse_csr_tensor,
)

# --- explain: `with pyaten.explain() as ex: ...; print(ex)`
from pyaten.utils.explain import explain  # noqa: E402,F401


# --- nested tensors, strided and jagged layouts (docs/nested.md); their autograd kernels
# registered in one batch (each table computed on first use, not once per kernel)
def _load_nested() -> None:
    with dispatch.registry.batch():
        import pyaten.nested

    globals().update(nested=pyaten.nested, jagged=pyaten.nested.jagged)


_load_nested()


# --- mixed precision: `with pyaten.autocast("cpu"): ...`, pyaten.amp.GradScaler (docs/amp.md)
def _install_amp() -> None:
    import pyaten.amp
    import pyaten.cpu
    from pyaten.amp import autocast_mode

    globals().update(amp=pyaten.amp, cpu=pyaten.cpu)
    globals().update({name: getattr(autocast_mode, name) for name in autocast_mode.TOP_LEVEL})


_install_amp()


# --- what real PyTorch programs reach for (docs/cuda-and-compat.md): torch.cuda / mps /
# backends flags as a CPU-only build has them, legacy tensor types, threads and settings
def _install_compat() -> None:
    import pyaten.accelerator
    import pyaten.backends.cuda
    import pyaten.backends.cudnn
    import pyaten.backends.mps
    import pyaten.backends.quantized
    import pyaten.cuda
    import pyaten.mps
    import pyaten.onnx  # noqa: F401 - the imports bind pyaten.cuda, pyaten.mps, ...
    from pyaten import global_settings, legacy_types, tensor_compat, type_info

    for module in (global_settings, type_info):
        globals().update({name: getattr(module, name) for name in module.__all__})
    globals().update(legacy_types.LEGACY_TYPES)
    tensor_compat.install()


_install_compat()


# --- a PyTorch name pyaten lacks says so (docs/coverage.md): `pyaten.linalg` and
# `Tensor.xyz` raise "pyaten does not implement torch.linalg yet"; a method attached later
# replaces its placeholder.
def _install_placeholders() -> None:
    from pyaten.core import Tensor
    from pyaten.utils.torch_api import install_placeholders

    install_placeholders(Tensor, "torch.Tensor")


_install_placeholders()
_gc_paused.resume()
del _gc_paused


_FUNCTIONALIZATION_HELPERS = frozenset((
    "_to_functional_tensor", "_from_functional_tensor", "_is_functional_tensor", "_sync",
    "_functionalize_sync", "_functionalize_replace", "_functionalize_commit_update",
    "_enable_functionalization", "_disable_functionalization",
    "_functionalize_has_data_mutation", "_functionalize_has_metadata_mutation",
    "_functionalize_is_multi_output_view", "_functionalize_mutation_counter",
))


def __getattr__(name: str) -> object:
    """Reached only when `pyaten.<name>` is not found."""
    if name == "optim":  # loaded on first use (docs/optim.md)
        import pyaten.optim as optim

        return optim
    if name in ("_C", "overrides"):  # PyTorch paths of docs/torch-function.md
        import importlib

        return importlib.import_module(f"pyaten.{name}")
    if name in ("func", "vmap"):  # loaded on first use (docs/func.md)
        import pyaten.func as func

        return func if name == "func" else func.vmap
    if name in ("compile", "compile_report", "compiler", "_dynamo"):  # docs/compile.md
        import importlib

        if name in ("compiler", "_dynamo"):
            return importlib.import_module(f"pyaten.{name}")
        return getattr(importlib.import_module("pyaten._dynamo"), name)
    if name == "ao":  # loaded on first use (docs/quantization.md)
        import pyaten.ao as ao

        return ao
    if name == "distributed":  # loaded on first use (docs/distributed.md)
        import pyaten.distributed as distributed

        return distributed
    if name in _FUNCTIONALIZATION_HELPERS:  # torch._to_functional_tensor... (docs/functionalize.md)
        import pyaten._functionalize as functionalization

        return getattr(functionalization, name)
    if name in ("save", "load"):  # loaded on first use (docs/serialization.md)
        import pyaten.serialization as serialization

        return getattr(serialization, name)
    from pyaten.utils.torch_api import module_getattr

    return module_getattr(__name__, "torch", name)
