"""The backend conformance kit: run every operator's samples on a device and on the CPU.

    report = pyaten.testing.run_backend_conformance("openreg")
    print(report)                  # the per-operator coverage table
    report.failing()               # operators whose device results differ or raise

Each row of the sample table (`samples()`) names the operator overload it exercises
(`add.Tensor`), a call written in pyaten's public API, and its inputs as small recipes
(`F(3, 4)`: float32 values, `I((5,), 0, 3)`: int64 in [0, 3), `B(3, 4)`: bools). The kit
builds the inputs on the CPU from a seeded generator, copies them to the device, runs the call
on both, brings the device's outputs back with `.cpu()` and compares shapes, dtypes and
values; a row marked `grad` also compares the gradients `backward()` leaves on the inputs.
Each operator is then classified:

- native: every sample matched and no call inside fell back to the CPU;
- fallback: every sample matched, but some call ran through the device's CPU fallback
  (counted by `pyaten.backends.fallback_report()`; the detail names those operators);
- failing: a sample raised on the device or gave a different result (the detail says which).
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ConformanceReport",
    "Mismatch",
    "OperatorResult",
    "Sample",
    "check_sample",
    "operators",
    "run_backend_conformance",
    "samples",
]

STATUSES = ("native", "fallback", "failing")


# -- input recipes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class F:
    """A float tensor of these sizes, values in [low, high) (float32 unless `dtype`)."""

    sizes: tuple
    low: float = -2.0
    high: float = 2.0
    dtype: str = "float32"

    def __init__(self, *sizes: int, low: float = -2.0, high: float = 2.0,
                 dtype: str = "float32") -> None:
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "dtype", dtype)

    def build(self, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(self.low, self.high, self.sizes).astype(self.dtype)


@dataclass(frozen=True)
class I:  # noqa: E742 - a recipe read as "I((3,), 0, 5)": an int64 tensor
    """An int64 tensor of `sizes` with values in [low, high)."""

    sizes: tuple
    low: int
    high: int

    def build(self, rng: np.random.Generator) -> np.ndarray:
        sizes = self.sizes if isinstance(self.sizes, tuple) else (self.sizes,)
        return rng.integers(self.low, self.high, sizes, dtype=np.int64)


@dataclass(frozen=True)
class B:
    """A bool tensor of these sizes."""

    sizes: tuple

    def __init__(self, *sizes: int) -> None:
        object.__setattr__(self, "sizes", sizes)

    def build(self, rng: np.random.Generator) -> np.ndarray:
        return rng.random(self.sizes) < 0.5


_RECIPES = (F, I, B)


@dataclass(frozen=True)
class Sample:
    """One call of one operator: `call(*inputs)` on tensors made from `inputs`' recipes."""

    op: str  # the operator overload it exercises, "name.overload" ("relu" for .default)
    call: Callable[..., Any]
    inputs: tuple
    grad: bool = False  # also compare the gradients of the float inputs
    atol: float = 1e-5
    rtol: float = 1.3e-6

    @property
    def name(self) -> str:
        return self.op.partition(".")[0]


def _samples() -> tuple[Sample, ...]:
    from pyaten.nn import functional as fn

    S = Sample
    x, y, v = F(3, 4), F(4), F(4)
    positive = F(3, 4, low=0.1, high=3.0)
    return (
        # creation, copies and fills
        S("empty.memory_format", lambda a: a.new_empty((2, 3)).fill_(1.5), (x,)),
        S("new_zeros", lambda a: a.new_zeros((2, 3)), (x,)),
        S("full", lambda a: a.new_full((2, 2), 7.0), (x,)),
        S("clone", lambda a: a.clone(), (x,), grad=True),
        S("contiguous", lambda a: a.t().contiguous(), (x,)),
        S("copy_", lambda a, b: a.clone().copy_(b), (x, y)),
        S("fill_.Scalar", lambda a: a.clone().fill_(3.25), (x,)),
        S("zero_", lambda a: a.clone().zero_(), (x,)),
        S("_to_copy", lambda a: a.to(dtype=_dtype("float64")), (x,), grad=True),
        S("empty_strided", lambda a: _aten().empty_strided((2, 3), (1, 2), dtype=a.dtype,
                                                          device=a.device).fill_(2.0), (x,)),
        S("item", lambda a: a[1, 2].item(), (x,)),
        S("_local_scalar_dense", lambda a: _aten()._local_scalar_dense.default(a[2, 1]), (x,)),
        S("set_.source_Storage_storage_offset", lambda a: _set_storage(a), (x,)),
        # views
        S("view", lambda a: a.view(4, 3), (x,), grad=True),
        S("reshape", lambda a: a.t().reshape(12), (x,)),
        S("as_strided", lambda a: a.as_strided((2, 2), (1, 4), 1), (x,)),
        S("transpose.int", lambda a: a.transpose(0, 1), (x,), grad=True),
        S("permute", lambda a: a.view(3, 2, 2).permute(2, 0, 1), (x,)),
        S("expand", lambda a: a.expand(3, 4), (y,), grad=True),
        S("unsqueeze", lambda a: a.unsqueeze(1), (x,)),
        S("squeeze.dim", lambda a: a.view(3, 1, 4).squeeze(1), (x,)),
        S("select.int", lambda a: a.select(1, 2), (x,), grad=True),
        S("slice.Tensor", lambda a: a[1:, ::2], (x,), grad=True),
        S("resize_", lambda a: a.clone().resize_(20).narrow(0, 0, 12), (x,)),
        S("unfold", lambda a: a.unfold(1, 2, 1), (x,), grad=True),
        # pointwise
        S("add.Tensor", lambda a, b: a.add(b, alpha=2), (x, y), grad=True),
        S("add.Scalar", lambda a: a + 1.5, (x,)),
        S("add_.Tensor", lambda a, b: a.clone().add_(b), (x, y)),
        S("sub.Tensor", lambda a, b: a - b, (x, y), grad=True),
        S("mul.Tensor", lambda a, b: a * b, (x, y), grad=True),
        S("mul.Scalar", lambda a: a * 3, (I((3, 4), -5, 5),)),
        S("div.Tensor", lambda a, b: a / b, (x, positive), grad=True),
        S("div.Tensor_mode", lambda a, b: a.div(b, rounding_mode="floor"), (x, positive)),
        S("neg", lambda a: -a, (x,), grad=True),
        S("abs", lambda a: a.abs(), (x,), grad=True),
        S("sgn", lambda a: a.sgn(), (x,)),
        S("exp", lambda a: a.exp(), (x,), grad=True),
        S("log", lambda a: a.log(), (positive,), grad=True),
        S("sqrt", lambda a: a.sqrt(), (positive,), grad=True),
        S("rsqrt", lambda a: a.rsqrt(), (positive,)),
        S("sin", lambda a: a.sin(), (x,), grad=True),
        S("cos", lambda a: a.cos(), (x,), grad=True),
        S("tanh", lambda a: a.tanh(), (x,), grad=True),
        S("sigmoid", lambda a: a.sigmoid(), (x,), grad=True),
        S("relu", lambda a: a.relu(), (x,), grad=True),
        S("relu_", lambda a: a.clone().relu_(), (x,)),
        S("pow.Tensor_Scalar", lambda a: a.pow(2), (x,), grad=True),
        S("pow.Tensor_Tensor", lambda a, b: a.pow(b), (positive, x)),
        S("maximum", lambda a, b: a.maximum(b), (x, y)),
        S("minimum", lambda a, b: a.minimum(b), (x, y)),
        S("clamp", lambda a: a.clamp(-0.5, 0.5), (x,), grad=True),
        S("addcmul", lambda a, b, c: a.addcmul(b, c, value=0.5), (x, y, x), grad=True),
        S("addcdiv", lambda a, b, c: a.addcdiv(b, c, value=2), (x, y, positive), grad=True),
        S("lerp.Scalar", lambda a, b: a.lerp(b, 0.75), (x, y), grad=True),
        S("lerp.Tensor", lambda a, b, w: a.lerp(b, w), (x, y, F(3, 4, low=0, high=1))),
        S("eq.Tensor", lambda a, b: a == b, (I((3, 4), 0, 3), I((4,), 0, 3))),
        S("ne.Scalar", lambda a: a != 1, (I((3, 4), 0, 3),)),
        S("lt.Tensor", lambda a, b: a < b, (x, y)),
        S("le.Scalar", lambda a: a <= 0.5, (x,)),
        S("gt.Tensor", lambda a, b: a > b, (x, y)),
        S("ge.Scalar", lambda a: a >= 0, (x,)),
        S("where.self", lambda c, a, b: _where(c, a, b), (B(3, 4), x, y), grad=True),
        S("logical_not", lambda a: a.logical_not(), (B(3, 4),)),
        S("logical_and", lambda a, b: a.logical_and(b), (B(3, 4), B(3, 4))),
        S("logical_or", lambda a, b: a.logical_or(b), (B(3, 4), B(4))),
        S("lt.Scalar", lambda a: a < 0.25, (x,)),
        S("eq.Scalar", lambda a: a == 1, (I((3, 4), 0, 3),)),
        # reductions
        S("sum", lambda a: a.sum(), (x,), grad=True),
        S("sum.dim_IntList", lambda a: a.sum(1, keepdim=True), (x,), grad=True),
        S("mean", lambda a: a.mean(), (x,), grad=True),
        S("mean.dim", lambda a: a.mean(0), (x,), grad=True),
        S("amax", lambda a: a.amax(1), (x,)),
        S("amin", lambda a: a.amin(0), (x,)),
        S("argmax", lambda a: a.argmax(1), (x,)),
        S("argmin", lambda a: a.argmin(), (x,)),
        S("max.dim", lambda a: tuple(a.max(1)), (x,)),
        S("prod", lambda a: a.prod(), (F(2, 3, low=0.5, high=1.5),)),
        S("var.correction", lambda a: a.var(1), (x,)),
        S("std.correction", lambda a: a.std(), (x,)),
        S("logsumexp", lambda a: a.logsumexp(1), (x,)),
        S("sum.dim_IntList", lambda a: a.sum(0), (I((3, 4), -9, 9),)),
        # matmul
        S("mm", lambda a, b: a.mm(b), (x, F(4, 5)), grad=True),
        S("addmm", lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=2), (F(5), x, F(4, 5)),
          grad=True),
        S("bmm", lambda a, b: a.bmm(b), (F(2, 3, 4), F(2, 4, 2)), grad=True),
        S("matmul", lambda a, b: a @ b, (F(2, 3, 4), F(4, 2)), grad=True),
        S("mv", lambda a, b: a.mv(b), (x, v)),
        S("dot", lambda a, b: a.dot(b), (y, v)),
        S("linear", lambda a, w, b: fn.linear(a, w, b), (x, F(5, 4), F(5)), grad=True),
        # operators a device usually leaves to the CPU fallback
        S("cat", lambda a, b: _cat((a, b)), (x, F(2, 4)), grad=True),
        S("stack", lambda a, b: _stack((a, b)), (x, x)),
        S("cumsum", lambda a: a.cumsum(1), (x,)),
        S("sort", lambda a: tuple(a.sort(1)), (x,)),
        S("topk", lambda a: tuple(a.topk(2)), (x,)),
        S("index_select", lambda a, i: a.index_select(0, i), (x, I((5,), 0, 3))),
        S("gather", lambda a, i: a.gather(1, i), (x, I((3, 2), 0, 4))),
        S("softmax.int", lambda a: fn.softmax(a, 1), (x,), grad=True),
        S("log_softmax.int", lambda a: fn.log_softmax(a, 1), (x,), grad=True),
        S("cross_entropy_loss", lambda a, t: fn.cross_entropy(a, t), (x, I((3,), 0, 4)),
          grad=True),
        S("nll_loss", lambda a, t: fn.nll_loss(a.log_softmax(1), t, reduction="sum"),
          (x, I((3,), 0, 4)), grad=True),
        S("nll_loss", lambda a, t: fn.nll_loss(a, t, reduction="none", ignore_index=1),
          (x, I((3,), 0, 4)), grad=True),
        S("nll_loss", lambda a, w, t: fn.nll_loss(a, t, weight=w),
          (x, F(4, low=0.5), I((3,), 0, 4)), grad=True),
        S("conv2d", lambda a, w, b: fn.conv2d(a, w, b, padding=1),
          (F(1, 2, 5, 5), F(3, 2, 3, 3), F(3)), grad=True, atol=1e-4),
        S("max_pool2d", lambda a: fn.max_pool2d(a, 2), (F(1, 2, 4, 4),), grad=True),
        S("layer_norm", lambda a, w, b: fn.layer_norm(a, (4,), w, b), (x, y, v), grad=True,
          atol=1e-4),
        S("embedding", lambda w, i: fn.embedding(i, w), (x, I((2, 3), 0, 3))),
        S("masked_fill.Scalar", lambda a, m: a.masked_fill(m, -1.0), (x, B(3, 4))),
        S("flip", lambda a: a.flip(0), (x,)),
        S("tril", lambda a: a.tril(), (x,)),
    )


def _aten() -> Any:
    import pyaten

    return pyaten.ops.aten


def _set_storage(a: Any) -> Any:
    target = a.new_empty(0)
    return _aten().set_.source_Storage_storage_offset(
        target, a.untyped_storage(), 1, (2, 2), (1, 4))


def _dtype(name: str) -> Any:
    import pyaten

    return getattr(pyaten, name)


def _where(c: Any, a: Any, b: Any) -> Any:
    import pyaten

    return pyaten.where(c, a, b)


def _cat(tensors: Sequence[Any]) -> Any:
    import pyaten

    return pyaten.cat(list(tensors))


def _stack(tensors: Sequence[Any]) -> Any:
    import pyaten

    return pyaten.stack(list(tensors))


_SAMPLES: tuple[Sample, ...] | None = None


def samples() -> tuple[Sample, ...]:
    """The sample table (built on first use: it imports pyaten.nn)."""
    global _SAMPLES
    if _SAMPLES is None:
        _SAMPLES = _samples()
    return _SAMPLES


def operators() -> list[str]:
    """The operator overloads the kit has samples for, in table order."""
    return list(dict.fromkeys(s.op for s in samples()))


# -- running one sample ------------------------------------------------------------------------


class Mismatch(AssertionError):
    """A device result that differs from the CPU's."""


def _make_inputs(sample: Sample, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [recipe.build(rng) for recipe in sample.inputs]


def _tensors(arrays: list[np.ndarray], device: str, grad: bool) -> list[Any]:
    import pyaten

    tensors = []
    for array in arrays:
        t = pyaten.tensor(array)
        if device != "cpu":
            t = t.to(device)
        if grad and array.dtype.kind == "f":
            t.requires_grad_(True)
        tensors.append(t)
    return tensors


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flatten(item)]
    return [value]


def _host(value: Any) -> Any:
    """A device output as NumPy values (through `.cpu()`), or the Python value itself."""
    import pyaten

    if isinstance(value, pyaten.Tensor):
        t = value.detach().cpu()
        return t.dtype, tuple(t.shape), np.asarray(t.numpy(), dtype=_compare_dtype(t.numpy()))
    return value


def _compare_dtype(array: np.ndarray) -> np.dtype:
    kind = array.dtype.kind
    if kind in "fV" or array.dtype.name == "bfloat16":
        return np.dtype(np.float64)
    return array.dtype


def _compare(what: str, expected: Any, actual: Any, sample: Sample) -> None:
    if isinstance(expected, tuple) and len(expected) == 3 and not isinstance(actual, tuple):
        raise Mismatch(f"{what}: expected a tensor, got {type(actual).__name__}")
    if isinstance(expected, tuple) and len(expected) == 3:
        e_dtype, e_shape, e_values = expected
        a_dtype, a_shape, a_values = actual
        if e_dtype != a_dtype:
            raise Mismatch(f"{what}: dtype {a_dtype}, expected {e_dtype}")
        if e_shape != a_shape:
            raise Mismatch(f"{what}: shape {list(a_shape)}, expected {list(e_shape)}")
        if e_values.dtype.kind in "fc":
            ok = np.allclose(a_values, e_values, rtol=sample.rtol, atol=sample.atol,
                             equal_nan=True)
        else:
            ok = np.array_equal(a_values, e_values)
        if not ok:
            raise Mismatch(f"{what}: values differ (max abs diff "
                           f"{_max_diff(a_values, e_values)})")
        return
    if isinstance(expected, float) and isinstance(actual, float):
        if not math.isclose(expected, actual, rel_tol=sample.rtol, abs_tol=sample.atol):
            raise Mismatch(f"{what}: {actual!r}, expected {expected!r}")
    elif expected != actual or type(expected) is not type(actual):
        raise Mismatch(f"{what}: {actual!r}, expected {expected!r}")


def _max_diff(a: np.ndarray, b: np.ndarray) -> str:
    try:
        return f"{float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))):.3g}"
    except (TypeError, ValueError):
        return "?"


def _run(sample: Sample, arrays: list[np.ndarray], device: str) -> tuple[list, list]:
    """Outputs and (for grad rows) input gradients of one sample, as host values."""
    inputs = _tensors(arrays, device, sample.grad)
    result = sample.call(*inputs)
    outputs = _flatten(result)
    grads: list[Any] = []
    if sample.grad:
        import pyaten

        loss = None
        for out in outputs:
            if isinstance(out, pyaten.Tensor) and out.requires_grad:
                term = out.sum()
                loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
        grads = [t.grad for t in inputs if t.requires_grad]
        grads = [None if g is None else g for g in grads]
    return [_host(o) for o in outputs], [None if g is None else _host(g) for g in grads]


def check_sample(sample: Sample, device: str, seed: int = 0) -> None:
    """Run `sample` on `device` and on the CPU; raise `Mismatch` (or the device's error)."""
    arrays = _make_inputs(sample, seed)
    expected, expected_grads = _run(sample, arrays, "cpu")
    actual, actual_grads = _run(sample, arrays, device)
    if len(expected) != len(actual):
        raise Mismatch(f"{len(actual)} outputs, expected {len(expected)}")
    for i, (e, a) in enumerate(zip(expected, actual)):
        _compare(f"output {i}", e, a, sample)
    for i, (e, a) in enumerate(zip(expected_grads, actual_grads)):
        if (e is None) != (a is None):
            raise Mismatch(f"grad of input {i}: {'missing' if a is None else 'unexpected'}")
        if e is not None:
            _compare(f"grad of input {i}", e, a, sample)


# -- the report --------------------------------------------------------------------------------


@dataclass
class OperatorResult:
    """What the kit found for one operator on one device."""

    op: str
    status: str = "native"  # native | fallback | failing
    samples: int = 0
    passed: int = 0
    fell_back: dict[str, int] = field(default_factory=dict)  # operator -> fallback calls
    errors: list[str] = field(default_factory=list)

    @property
    def detail(self) -> str:
        if self.errors:
            return self.errors[0]
        if self.fell_back:
            return "fell back: " + ", ".join(
                f"{name} x{calls}" for name, calls in sorted(self.fell_back.items())
            )
        return ""


@dataclass
class ConformanceReport:
    """Per-operator results of `run_backend_conformance`; `str(report)` is the table."""

    device: str
    results: dict[str, OperatorResult] = field(default_factory=dict)

    def status(self, op: str) -> str:
        return self.results[op].status

    def by_status(self, status: str) -> list[str]:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        return [op for op, r in self.results.items() if r.status == status]

    def native(self) -> list[str]:
        return self.by_status("native")

    def fallback(self) -> list[str]:
        return self.by_status("fallback")

    def failing(self) -> list[str]:
        return self.by_status("failing")

    def counts(self) -> dict[str, int]:
        return {status: len(self.by_status(status)) for status in STATUSES}

    def __str__(self) -> str:
        width = max([len("operator")] + [len(op) for op in self.results]) + 2
        header = f"{'operator':<{width}}{'status':<10}{'samples':>8}  detail"
        lines = [f"conformance of device '{self.device}' against the CPU", header,
                 "-" * len(header)]
        for op, r in self.results.items():
            detail = r.detail
            if len(detail) > 90:
                detail = detail[:87] + "..."
            lines.append(f"{op:<{width}}{r.status:<10}{f'{r.passed}/{r.samples}':>8}  {detail}")
        counts = self.counts()
        total = len(self.results)
        lines.append("-" * len(header))
        lines.append(
            f"{total} operators: {counts['native']} native, {counts['fallback']} through the "
            f"CPU fallback, {counts['failing']} failing"
        )
        return "\n".join(lines)


# -- fallback counters -------------------------------------------------------------------------


def _fallback_counts(device: str) -> dict[str, int]:
    """Operator -> CPU-fallback calls so far on `device` (empty if no registry is loaded)."""
    try:
        from pyaten import backends
    except ImportError:
        return {}
    if device not in backends.devices():
        return {}
    counts: dict[str, int] = {}
    for _, op, _, calls in backends.fallback_report(device).rows:
        name = op.split("::", 1)[-1]
        counts[name] = counts.get(name, 0) + calls
    return counts


def _device_type(device: str) -> str:
    return device.partition(":")[0]


# -- the entry point ---------------------------------------------------------------------------


def _selected(ops: Iterable[str] | None) -> list[Sample]:
    table = samples()
    if ops is None:
        return list(table)
    wanted = list(ops)
    known = {s.op for s in table} | {s.name for s in table}
    unknown = [op for op in wanted if op not in known]
    if unknown:
        raise ValueError(
            f"run_backend_conformance(): no samples for operator(s) {', '.join(unknown)} "
            f"(pyaten.testing.conformance.operators() lists the known ones)"
        )
    chosen = set(wanted)
    return [s for s in table if s.op in chosen or s.name in chosen]


def run_backend_conformance(
    device: str, ops: Iterable[str] | None = None, *, seed: int = 0
) -> ConformanceReport:
    """Run the kit's samples (all, or those of `ops`: overload or base names) on `device`.

    The device must be registered (import its package first). Nothing is raised for a
    failing operator: the report records it (see the module docstring for the statuses).
    """
    import pyaten

    if not isinstance(device, str):
        device = str(device)
    try:
        pyaten.device(device)
    except RuntimeError as error:
        raise ValueError(f"run_backend_conformance(): unknown device '{device}': {error}") from None
    report = ConformanceReport(device)
    dev_type = _device_type(device)
    for sample in _selected(ops):
        result = report.results.setdefault(sample.op, OperatorResult(sample.op))
        result.samples += 1
        before = _fallback_counts(dev_type)
        try:
            check_sample(sample, device, seed)
        except Mismatch as error:
            result.errors.append(str(error))
        except Exception as error:  # a device kernel's failure is a result, not a crash
            result.errors.append(_error_text(error))
        else:
            result.passed += 1
        after = _fallback_counts(dev_type)
        for op, calls in after.items():
            delta = calls - before.get(op, 0)
            if delta > 0:
                result.fell_back[op] = result.fell_back.get(op, 0) + delta
    for result in report.results.values():
        if result.errors:
            result.status = "failing"
        elif result.fell_back:
            result.status = "fallback"
    return report


def _error_text(error: BaseException) -> str:
    message = str(error).strip().splitlines()
    first = message[0] if message else ""
    frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    where = f" ({frame.name})" if frame is not None else ""
    return f"{type(error).__name__}: {first}{where}"
