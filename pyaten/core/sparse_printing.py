"""`repr` of sparse tensors, laid out as PyTorch prints them.

A COO tensor prints its `indices=` and `values=` parts (each as a tensor body, indented under
its prefix), then `size=`, `nnz=`, the dtype when not a default one, `layout=`, and the
autograd suffix; the first suffix always starts a new line. A compressed tensor prints its
compressed indices, plain indices and values, and its suffixes wrap only at the line width.
"""

from __future__ import annotations

from pyaten.core import dtypes as dt
from pyaten.core.printing import _add_suffixes, _grad_fn_name, tensor_body


def _part_text(part: object, indent: int) -> str:
    if part._storage.data is None:  # a meta part: no values to show
        return "..., size=" + str(tuple(part._sizes))
    text = tensor_body(part._host_values(), part._dtype, indent)
    if part.numel() == 0:
        text += ", size=" + str(tuple(part._sizes))
    return text


def sparse_repr(t: object) -> str:
    from pyaten.core.sparse import ROW_COMPRESSED, sparse_coo

    indent = len("tensor(")
    suffixes = ["size=" + str(tuple(t._sizes))]
    if t._device.type != "meta":
        suffixes.append(f"nnz={t._parts[-1]._sizes[0]}")
    if t._device.type != "cpu":
        suffixes.insert(0, f"device='{t._device}'")
    d = t._dtype
    if d not in (dt.get_default_dtype(), dt.default_complex_dtype(), dt.int64, dt.bool):
        suffixes.append(f"dtype={d}")
    suffixes.append(f"layout=pyaten.{t._layout.name}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{_grad_fn_name(t.grad_fn)}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    if t._layout is sparse_coo:
        names = ("indices", "values")
    elif t._layout in ROW_COMPRESSED:
        names = ("crow_indices", "col_indices", "values")
    else:
        names = ("ccol_indices", "row_indices", "values")
    pieces = []
    for name, part in zip(names, t._parts):
        prefix = name + "=tensor("
        pieces.append(prefix + _part_text(part, indent + len(prefix)) + ")")
    text = "tensor(" + (",\n" + " " * indent).join(pieces)
    if t._layout is sparse_coo:  # PyTorch forces the first suffix of a COO tensor onto a line
        text += ",\n" + " " * indent + suffixes.pop(0)
    return _add_suffixes(text, suffixes, indent)
