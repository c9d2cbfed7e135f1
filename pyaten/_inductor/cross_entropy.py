"""Cross-entropy's pieces as one C kernel each way: `_log_softmax` + `nll_loss_forward`, and
`nll_loss_backward` + `_log_softmax_backward_data`.

Note: the fused cross-entropy
    `F.cross_entropy(logits, target)` reaches the graph as a `_log_softmax` over the class
    dim whose one consumer of interest is `nll_loss_forward`, and its backward as an
    `nll_loss_backward` (a one-hot row per sample) read only by
    `_log_softmax_backward_data`. On a batch of 64 x 10 each of those four kernels costs
    more in NumPy calls than its arithmetic, so where the graph has the pattern (2-d
    contiguous float32/float64 logits, the class dim last, no class weights, `mean` or
    `sum` reduction, 1-d int64 targets) each pair runs as one C function in the graph's
    library, writing what the two kernels would:

    - forward: each row's log-softmax as the eager kernel computes a small row (the row's
      max, NaN propagating; the exponentials of `x - max` summed in double; `x - (max +
      log(sum))` rounded once), then the loss `-sum(picked) / count` (or the sum), and the
      total weight, the number of counted targets;
    - backward: `g - exp(y) * sum(g)` per row, where `g` is the one-hot row of `-grad /
      total_weight` (or `-grad`) at the target, zeros for an ignored target, as eager's two
      kernels compute it in the tensor's dtype; and where the graph sums that gradient
      over the batch (`sum(grad, [0], keepdim=True)`: the bias gradient of the layer
      before), that sum too, the rows added in order as NumPy's reduction adds them.

    A target outside `[0, classes)` (other than `ignore_index`) makes the C function return
    1 before anything is returned, and the two operators' own kernels then run on the same
    values, raising eager's error. The loss is summed in double where eager's NumPy sum
    adds pairwise in the tensor's dtype: the two may differ in the last bit.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from pyaten.core.broadcast import new_row_major
from pyaten.core.device import CPU
from pyaten.fx.node import Node

__all__ = ["Match", "find", "sources", "caller"]

_FORWARD = """\
int {name}(int64_t n, int64_t c, const void *x_obj, const void *t_obj, int64_t t_s,
           int64_t ignore, int64_t mean, const void *y_obj, const void *loss_obj,
           const void *total_obj) {{
    const {t} *x = DATA(x_obj);
    const int64_t *target = DATA(t_obj);
    {t} *y = DATA(y_obj);
    for (int64_t i = 0; i < n; i++) {{
        int64_t k = target[i * t_s];
        if (k != ignore && (k < 0 || k >= c)) return 1;
    }}
    double picked = 0.0;
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {{
        const {t} *row = x + i * c;
        {t} top = row[0];
        for (int64_t j = 1; j < c; j++) {{
            {t} v = row[j];
            if (v > top || v != v) top = v;
        }}
        double total = 0.0;
        for (int64_t j = 0; j < c; j++) total += (double){exp}(row[j] - top);
        double shift = (double)top + log(total);
        for (int64_t j = 0; j < c; j++) y[i * c + j] = ({t})((double)row[j] - shift);
        int64_t k = target[i * t_s];
        if (k != ignore) {{
            picked += (double)y[i * c + k];
            count += 1;
        }}
    }}
    {t} loss = ({t})(-picked), counted = ({t})count;
    *({t} *)DATA(loss_obj) = mean ? loss / counted : loss;
    *({t} *)DATA(total_obj) = counted;
    return 0;
}}
"""

_BACKWARD = """\
int {name}(int64_t n, int64_t c, const void *g_obj, const void *y_obj, const void *t_obj,
           int64_t t_s, int64_t ignore, int64_t mean, const void *w_obj, const void *out_obj,
           int64_t with_sum, const void *sum_obj) {{
    const {t} *y = DATA(y_obj);
    const int64_t *target = DATA(t_obj);
    {t} *out = DATA(out_obj);
    {t} grad = *(const {t} *)DATA(g_obj);
    {t} scale = mean ? grad / *(const {t} *)DATA(w_obj) : grad;
    {t} value = -scale;
    for (int64_t i = 0; i < n; i++) {{
        int64_t k = target[i * t_s];
        if (k != ignore && (k < 0 || k >= c)) return 1;
    }}
    for (int64_t i = 0; i < n; i++) {{
        int64_t k = target[i * t_s];
        {t} g = k == ignore ? ({t})0 : value;
        for (int64_t j = 0; j < c; j++) {{
            {t} one_hot = j == k ? g : ({t})0;
            {t} e = {exp}(y[i * c + j]) * g;
            out[i * c + j] = one_hot - e;
        }}
    }}
    if (with_sum) {{  /* sum(out, [0], keepdim=True): rows added in order, as NumPy does */
        {t} *total = DATA(sum_obj);
        for (int64_t j = 0; j < c; j++) total[j] = out[j];
        for (int64_t i = 1; i < n; i++) {{
            for (int64_t j = 0; j < c; j++) total[j] += out[i * c + j];
        }}
    }}
    return 0;
}}
"""


class Match:
    """A fused pair: the node whose step computes both (`at`), the node it takes over
    (`skipped`), the kind ("forward" or "backward") and the pair's constants."""

    def __init__(self, kind: str, at: Node, skipped: Node, inputs: list[Node], dtype: Any,
                 shape: tuple, ignore: int, mean: bool) -> None:
        self.kind, self.at, self.skipped, self.inputs = kind, at, skipped, inputs
        self.dtype, self.shape, self.ignore, self.mean = dtype, shape, ignore, mean
        self.column_sum: Node | None = None  # a batch sum of the backward's result

    @property
    def outputs(self) -> list[Node]:
        """The nodes whose values the step returns, in order."""
        if self.kind == "forward":
            return [self.at, self.skipped]
        return [self.at] + ([self.column_sum] if self.column_sum is not None else [])

    @property
    def taken(self) -> list[Node]:
        """The nodes the step computes besides `at` (they get no step of their own)."""
        return [n for n in self.outputs[1:] + [self.skipped] if n is not None]


def _name(node: Any) -> str:
    if not isinstance(node, Node) or node.op != "call_function" or \
            getattr(node.target, "namespace", None) != "aten":
        return ""
    return node.target.__name__


def _args(node: Node) -> list[Any] | None:
    try:
        return list(node.target._entry.normalize(node.args, dict(node.kwargs)))
    except Exception:  # noqa: BLE001 - unusual arguments: no match
        return None


def _meta(node: Any) -> dict | None:
    return node.meta.get("tensor_meta") if isinstance(node, Node) else None


def _rows(node: Any) -> tuple | None:
    """(shape, dtype) of a contiguous 2-d float32/float64 node."""
    meta = _meta(node)
    if meta is None or len(meta["shape"]) != 2 or meta["dtype"].name not in ("float32",
                                                                            "float64"):
        return None
    shape = tuple(meta["shape"])
    if shape[0] == 0 or shape[1] == 0 or tuple(meta["stride"]) != (shape[1], 1):
        return None
    return shape, meta["dtype"]


def _targets(node: Any, n: int) -> bool:
    meta = _meta(node)
    return meta is not None and meta["dtype"].name == "int64" and tuple(meta["shape"]) == (n,)


def _nll(args: list[Any], shape: tuple) -> bool:
    """No class weights, `mean` (1) or `sum` (2), an int ignore_index."""
    return args[3] is None and args[4] in (1, 2) and type(args[5]) is int


def find(nodes: list[Node]) -> list[Match]:
    """The graph's fused cross-entropy pairs (Note: the fused cross-entropy)."""
    order = {node: i for i, node in enumerate(nodes)}
    found = []
    for node in nodes:
        name = _name(node)
        if name == "_log_softmax.default":
            match = _forward(node, order)
        elif name == "_log_softmax_backward_data.default":
            match = _backward(node)
        else:
            continue
        if match is not None:
            found.append(match)
    return found


def _forward(node: Node, order: dict[Node, int]) -> Match | None:
    args = _args(node)
    rows = _rows(node.args[0])
    if args is None or rows is None or args[1] not in (1, -1) or args[2]:
        return None
    shape, dtype = rows
    for user in node.users:
        if _name(user) != "nll_loss_forward.default":
            continue
        nll = _args(user)
        if nll is None or nll[0] is not node or not _targets(nll[1], shape[0]) or \
                not _nll([None, *nll], shape):
            continue
        if order.get(nll[1], len(order)) > order[node]:
            continue  # the targets must exist where the log-softmax runs
        return Match("forward", node, user, [node.args[0], nll[1]], dtype, shape, nll[4],
                     nll[3] == 1)
    return None


def _backward(node: Node) -> Match | None:
    args = _args(node)
    if args is None:
        return None
    grad, output, dim, input_dtype = args
    rows = _rows(output)
    if rows is None or dim not in (1, -1) or _name(grad) != "nll_loss_backward.default" or \
            list(grad.users) != [node]:
        return None
    shape, dtype = rows
    nll = _args(grad)
    if nll is None or input_dtype != dtype or not _nll(nll, shape) or \
            not _targets(nll[2], shape[0]) or _rows(nll[1]) != rows:
        return None
    tangent, weight = _meta(nll[0]), _meta(nll[6])
    if tangent is None or weight is None or tuple(tangent["shape"]) != () or \
            tuple(weight["shape"]) != () or tangent["dtype"] != dtype or \
            weight["dtype"] != dtype:
        return None
    match = Match("backward", node, grad, [nll[0], output, nll[2], nll[6]], dtype, shape,
                  nll[5], nll[4] == 1)
    for user in node.users:
        if _name(user) == "sum.dim_IntList" and (_args(user) or [None])[1:] == [[0], True,
                                                                                 None]:
            match.column_sum = user
            break
    return match


def sources(matches: list[Match]) -> list[str]:
    """The C functions `x<i>` of the matches (Note: the fused cross-entropy)."""
    parts = []
    for i, match in enumerate(matches):
        f32 = match.dtype.name == "float32"
        template = _FORWARD if match.kind == "forward" else _BACKWARD
        parts.append(template.format(name=f"x{i}", t="float" if f32 else "double",
                                     exp="expf" if f32 else "exp"))
    return parts


def _array(t: Any) -> np.ndarray:
    array = t._numpy()
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def caller(fn: Any, match: Match) -> Callable[..., Any]:
    """The step's callable over the match's inputs, returning the tuple of the values it
    computes; on a bad target, the two operators' own kernels (which raise eager's
    error)."""
    n, c = match.shape
    dtype, ignore, mean = match.dtype, match.ignore, int(match.mean)
    c_int, c_obj = ctypes.c_int64, ctypes.py_object
    fn.restype = ctypes.c_int
    first, second = match.at, match.skipped
    if match.kind == "forward":
        fn.argtypes = [c_int, c_int, c_obj, c_obj, c_int, c_int, c_int, c_obj, c_obj, c_obj]
        reduction = 1 if mean else 2

        def forward(x: Any, target: Any) -> tuple:
            t = target._numpy()
            y = new_row_major((n, c), dtype, CPU)
            loss, total = new_row_major((), dtype, CPU), new_row_major((), dtype, CPU)
            if fn(n, c, _array(x), t, t.strides[0] // 8, ignore, mean, y._np, loss._np,
                  total._np):
                y = first.target(x, -1, False)
                return y, second.target(y, target, None, reduction, ignore)
            return y, (loss, total)

        return forward
    fn.argtypes = [c_int, c_int, c_obj, c_obj, c_obj, c_int, c_int, c_int, c_obj, c_obj,
                   c_int, c_obj]
    reduction = 1 if mean else 2
    summed = match.column_sum

    def backward(grad: Any, output: Any, target: Any, total: Any) -> tuple:
        t = target._numpy()
        out = new_row_major((n, c), dtype, CPU)
        column = new_row_major((1, c), dtype, CPU) if summed is not None else out
        if fn(n, c, grad._numpy(), _array(output), t, t.strides[0] // 8, ignore, mean,
              total._numpy(), out._np, summed is not None, column._np):
            one_hot = second.target(grad, output, target, None, reduction, ignore, total)
            out = first.target(one_hot, output, -1, dtype)
            if summed is None:
                return (out,)
            return out, summed.target(out, [0], True)
        return (out,) if summed is None else (out, column)

    return backward
