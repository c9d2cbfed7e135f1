"""The Python forms `torch.functional` gives some operators: `meshgrid(*tensors, indexing=)`,
`broadcast_tensors(*tensors)` and `atleast_1d/2d/3d(*tensors)`.

Their schemas take one `Tensor[]`, but PyTorch's Python functions also take the tensors as
separate arguments; these wrappers gather them and call the generated bindings (so every call
still dispatches), returning tuples as PyTorch's functions do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_NAMES = ("meshgrid", "broadcast_tensors", "atleast_1d", "atleast_2d", "atleast_3d",
          "block_diag", "cartesian_prod")


def _gather(tensors: tuple) -> Any:
    """`f(a, b)` and `f([a, b])` both mean the list `[a, b]`; `f(a)` means `a`."""
    if len(tensors) == 1:
        return tensors[0]
    return list(tensors)


def _make_meshgrid(generated: Callable[..., Any]) -> Callable[..., Any]:
    def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple:
        """Coordinate grids of 0-d or 1-d tensors (`indexing="ij"` or `"xy"`)."""
        given = _gather(tensors)
        given = list(given) if isinstance(given, (list, tuple)) else [given]
        if indexing is None:
            return tuple(generated(given))
        return tuple(generated(given, indexing=indexing))

    return meshgrid


def _make_broadcast_tensors(generated: Callable[..., Any]) -> Callable[..., Any]:
    def broadcast_tensors(*tensors: Any) -> tuple:
        """The tensors expanded to their common shape (views; an unchanged one as itself)."""
        return tuple(generated(list(tensors)))

    return broadcast_tensors


def _make_atleast(generated: Callable[..., Any], name: str) -> Callable[..., Any]:
    def atleast(*tensors: Any) -> Any:
        given = _gather(tensors)
        result = generated(given)
        return tuple(result) if isinstance(result, list) else result

    atleast.__name__ = atleast.__qualname__ = name
    atleast.__doc__ = f"`{name}(t)` or `{name}(a, b, ...)` / `{name}([a, b])` (a tuple)."
    return atleast


def _make_variadic(generated: Callable[..., Any], name: str) -> Callable[..., Any]:
    def variadic(*tensors: Any) -> Any:
        return generated(list(tensors))

    variadic.__name__ = variadic.__qualname__ = name
    variadic.__doc__ = f"`{name}(a, b, ...)`: the tensors as separate arguments."
    return variadic


def _make_unravel_index(namespace: dict[str, Any]) -> Callable[..., Any]:
    def unravel_index(indices: Any, shape: Any) -> tuple:
        """The coordinates, one tensor per dim of `shape`, of flat `indices` (`-1` is last)."""
        dtype = getattr(indices, "dtype", None)
        if dtype is None or dtype.is_complex or dtype.is_floating_point or str(dtype).endswith(
                "bool"):
            if dtype is None:  # torch reads `.is_complex()` of whatever it was given
                raise AttributeError(
                    f"'{type(indices).__name__}' object has no attribute 'is_complex'")
            raise TypeError(f"expected 'indices' to be integer dtype, but got {dtype}")
        if isinstance(shape, int):
            shape = (shape,)
        elif isinstance(shape, (list, tuple)):
            for size in shape:
                if not isinstance(size, int):
                    raise TypeError("expected 'shape' sequence to only contain ints, but got "
                                    f"{type(size)}")
            shape = tuple(shape)
        else:
            raise TypeError(f"expected 'shape' to be int or sequence of ints, but got "
                            f"{type(shape)}")
        if any(size < 0 for size in shape):
            raise ValueError(f"'shape' cannot have negative values, but got {shape}")
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):  # row-major strides of `shape`
            strides[d] = strides[d + 1] * shape[d + 1]
        tensor, int64 = namespace["tensor"], namespace["int64"]
        flat = indices.unsqueeze(-1).floor_divide(
            tensor(strides, device=indices.device, dtype=int64))
        return tuple(
            flat.remainder(tensor(shape, device=indices.device, dtype=int64)).unbind(-1))

    return unravel_index


def _make_lu(namespace: dict[str, Any]) -> Callable[..., Any]:
    def lu(A: Any, pivot: bool = True, get_infos: bool = False, out: Any = None) -> tuple:  # noqa: N803
        """`torch.lu`: (LU, pivots), with `info` too for `get_infos=True` (deprecated in
        PyTorch for `linalg.lu_factor(_ex)`)."""
        result = namespace["_lu_with_info"](A, pivot=pivot, check_errors=not get_infos)
        result = result if get_infos else tuple(result)[:2]
        if out is None:
            return result
        if len(out) - int(get_infos) != 2:
            raise TypeError(f"expected tuple of {2 + int(get_infos)} elements but got {len(out)}")
        if not isinstance(out, (tuple, list)):
            raise TypeError(f"argument 'out' must be tuple of Tensors, not {type(out).__name__}")
        for target, value in zip(out, result):
            target.resize_as_(value).copy_(value)
        return out

    return lu


def _lu_method(lu: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Any, pivot: bool = True, get_infos: bool = False) -> tuple:
        """`t.lu(pivot=True, get_infos=False)`: `pyaten.lu(t, ...)`."""
        return tuple(lu(self, pivot=pivot, get_infos=get_infos))  # a plain tuple, as torch's

    method.__name__ = method.__qualname__ = "lu"
    return method


def install(namespace: dict[str, Any]) -> None:
    """Replace the generated bindings in `namespace` (pyaten's globals) by these forms."""
    present = {name: namespace[name] for name in _NAMES if name in namespace}
    if "meshgrid" in present:
        namespace["meshgrid"] = _make_meshgrid(present["meshgrid"])
    if "broadcast_tensors" in present:
        namespace["broadcast_tensors"] = _make_broadcast_tensors(present["broadcast_tensors"])
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        if name in present:
            namespace[name] = _make_atleast(present[name], name)
    for name in ("block_diag", "cartesian_prod"):
        if name in present:
            namespace[name] = _make_variadic(present[name], name)
    namespace["unravel_index"] = _make_unravel_index(namespace)
    if "_lu_with_info" in namespace:
        namespace["lu"] = _make_lu(namespace)
        if "Tensor" in namespace:  # torch's Tensor.lu is the same Python function
            namespace["Tensor"].lu = _lu_method(namespace["lu"])
    if "segment_reduce" in namespace:  # torch keeps the private name as an alias
        namespace["_segment_reduce"] = namespace["segment_reduce"]
    from pyaten import _lowrank  # torch's svd_lowrank/pca_lowrank (Python, over operators)

    namespace["svd_lowrank"] = _lowrank.svd_lowrank
    namespace["pca_lowrank"] = _lowrank.pca_lowrank
