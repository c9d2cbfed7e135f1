"""The Python-level linear algebra functions of `torch.functional`: `einsum`, `tensordot`,
`chain_matmul` and `norm` take argument forms their operators' schemas do not (operands as
varargs, `dims` as an int, `p` as a string), and turn them into operator calls, as PyTorch's
wrappers do. `pyaten/__init__.py` puts them in place of the bare bindings; the operators
stay reachable as `pyaten.ops.aten.<name>`.
"""

from __future__ import annotations

from typing import Any

from pyaten.core.tensor import Tensor


def _ops() -> Any:
    from pyaten.native.ops_handles import aten_ops

    return aten_ops()


def einsum(*args: Any) -> Tensor:
    """einsum(equation, *operands) or einsum(equation, [operands]); also the sublist form
    einsum(op1, sublist1, op2, sublist2, ..., [sublist_out])."""
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least "
            "one operand and its subscripts list"
        )
    equation, operands = args[0], args[1:]
    if not isinstance(equation, str):
        equation, operands = _sublist_equation(args)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return _ops().einsum.default(equation, list(operands), None)


def _sublist_equation(args: tuple) -> tuple[str, tuple]:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

    def subscripts(sublist) -> str:
        text = []
        for s in sublist:
            if s is Ellipsis:
                text.append("...")
            elif isinstance(s, int) and 0 <= s < 52:
                text.append(letters[s])
            else:
                raise ValueError(
                    f"einsum(): expected subscript to be within the range [0, 52), but got {s}"
                )
        return "".join(text)

    operands = args[0::2]
    lhs = ",".join(subscripts(s) for s in args[1::2])
    if len(args) % 2 == 1:
        return lhs + "->" + subscripts(args[-1]), operands[:-1]
    return lhs, operands


def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Tensor | None = None) -> Tensor:
    """Contract `dims` (an int: the last dims of `a` with the first of `b`; or two lists)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (tuple, list)):
        if len(dims) != 2:
            raise RuntimeError(
                "tensordot expects dims to be int or Tuple[List[int], List[int]] or "
                f"List[List[int]] containing two lists, but got dims={dims}"
            )
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    elif isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        raise RuntimeError(
            "tensordot expects dims to be int or Tuple[List[int], List[int]] or "
            f"List[List[int]] containing two lists, but got dims={dims}"
        )
    if out is None:
        return _ops().tensordot.default(a, b, dims_a, dims_b)
    return _ops().tensordot.out(a, b, dims_a, dims_b, out=out)


def chain_matmul(*matrices: Tensor, out: Tensor | None = None) -> Tensor:
    """The product of the matrices, in the cheapest order (deprecated: linalg.multi_dot)."""
    if out is None:
        return _ops().chain_matmul.default(list(matrices))
    return _ops().chain_matmul.out(list(matrices), out=out)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,  # noqa: A002
         out: Tensor | None = None, dtype: Any = None) -> Tensor:
    """torch.norm: a vector norm, or with p="fro"/"nuc" over two dims a matrix norm, through
    torch.linalg's operators as PyTorch's wrapper does."""
    ops = _ops()
    dims = [dim] if isinstance(dim, int) else (None if dim is None else list(dim))
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            if out is None:
                return ops.linalg_vector_norm.default(input, 2, dims, keepdim, dtype)
            return ops.linalg_vector_norm.out(input, 2, dims, keepdim, dtype, out=out)
        if dims is None:
            dims = list(range(input.dim()))
        if out is None:
            return ops.linalg_matrix_norm.str_ord(input, p, dims, keepdim, dtype)
        return ops.linalg_matrix_norm.str_ord_out(input, p, dims, keepdim, dtype, out=out)
    order = 2.0 if p is None else p
    if out is None:
        return ops.linalg_vector_norm.default(input, order, dims, keepdim, dtype)
    return ops.linalg_vector_norm.out(input, order, dims, keepdim, dtype, out=out)


# What pyaten/__init__.py puts at the top level in place of the bindings of the same names.
TOP_LEVEL = {"einsum": einsum, "tensordot": tensordot, "chain_matmul": chain_matmul,
             "norm": norm}


def tensor_norm(self: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
                dtype: Any = None) -> Tensor:
    """Tensor.norm: torch.norm as a method (PyTorch's is Python too)."""
    return norm(self, p, dim, keepdim, dtype=dtype)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """torch.cdist: `compute_mode` by name, as the operator's int code."""
    modes = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1,
             "donot_use_mm_for_euclid_dist": 2}
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return _ops().cdist.default(x1, x2, p, modes[compute_mode])


TOP_LEVEL["cdist"] = cdist
