"""vmap over PyTorch's OpInfo database: every operator pyaten has, against torch.func.vmap.

`torch.testing._internal.common_methods_invocations.op_db` describes each operator with sample
inputs. For every OpInfo whose function is `torch.<name>` with `pyaten.<name>` beside it, the
first float64 sample is batched (each tensor argument stacked three times, shifted) and run:
- over one level, with every tensor argument mapped, then with each one alone mapped over
  its last dimension; equal to torch.func.vmap and to a Python loop over the samples;
- over two levels (a second batch of two in front);
- as `vmap(grad(f))` where OpInfo says the operator is differentiable.
Where torch.func itself refuses a case the case is skipped; `KNOWN` lists the cases pyaten
still gets wrong, with the reason. `test_coverage_report` checks `batching_coverage()`.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch
import torch.func as tf

import pyaten
import pyaten.func as pf

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

B1, B2 = 3, 2

# as_strided's offset is absolute: under vmap each sample's view starts at the offset plus
# the sample's batch stride (torch's rule), where a loop gives every sample the same offset
_NOT_A_LOOP = {"as_strided", "as_strided_copy"}
# operators whose values are uninitialised: only shapes and dtypes compare
_NO_VALUES = {"empty_like", "new_empty", "new_empty_strided"}
_LAYOUTS = {"to_sparse"}  # another layout: not vmap's
# operators whose pyaten kernels differ from torch's outside vmap too (by up to 1e-6
# relative, more near their zeros): their (rtol, atol)
_TOLERANCE = {"special.bessel_j0": (1e-5, 1e-6), "special.bessel_y1": (1e-5, 1e-6),
              "special.airy_ai": (1e-5, 1e-6)}
# eigenvectors are unique up to a phase per column, which LAPACK's calls pick differently:
# the output that holds them, compared after fixing each column's phase
_EIGENVECTORS = {"linalg.eig": 1, "linalg.eigh": 1}
# (test, OpInfo name, variant) -> why pyaten's vmap still differs from torch.func's there
KNOWN: dict[tuple[str, str, str], str] = {}


def _to_pyaten(x):
    if isinstance(x, torch.nn.PairwiseDistance):  # a distance function argument
        return pyaten.nn.PairwiseDistance(x.norm, x.eps, x.keepdim)
    if isinstance(x, torch.Tensor):
        return pyaten.tensor(x.detach().numpy().copy())
    if isinstance(x, (torch.dtype, torch.memory_format, torch.layout)):
        return getattr(pyaten, str(x).split(".")[-1])
    if isinstance(x, torch.device):
        return pyaten.device(str(x))
    if isinstance(x, (list, tuple)):
        return type(x)(_to_pyaten(y) for y in x)
    if isinstance(x, dict):
        return {k: _to_pyaten(v) for k, v in x.items()}
    return x


def _batch(t: torch.Tensor, size: int) -> torch.Tensor:
    if t.is_floating_point():
        return torch.stack([t + 0.25 * i for i in range(size)])
    return torch.stack([t] * size)


def _resolve(lib, name: str):
    """`lib.linalg.inv` for "linalg.inv"; None where `lib` lacks it."""
    obj = lib
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _cases():
    cases, seen = [], set()
    for info in op_db:
        key = (info.name, info.variant_test_name)
        if key in seen or info.name.startswith("sparse.") or _resolve(pyaten, info.name) is None:
            continue
        if info.op is not _resolve(torch, info.name) and (
                info.method_variant is None or not hasattr(pyaten.Tensor, info.name)
                or info.name in _LAYOUTS):
            continue  # OpInfo calls a lambda of its own, with no method to call instead
        if torch.float64 not in info.supported_dtypes("cpu"):
            continue
        seen.add(key)
        label = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
        cases.append((info, label))
    return cases


def _params(cases: list, test: str) -> list:
    params = []
    for info, label in cases:
        reason = KNOWN.get((test, info.name, info.variant_test_name))
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        params.append(pytest.param(info, id=label, marks=marks))
    return params


def _sample(info):
    """The OpInfo's first float64 sample (made here, not at collection: making every
    operator's samples takes a minute)."""
    sample = next(iter(info.sample_inputs("cpu", torch.float64)), None)
    if sample is None or not isinstance(sample.input, torch.Tensor):
        pytest.skip("no sample whose input is a tensor")
    return sample


CASES = _cases()
# CI runs a fixed eighth of the operators for each test, a different eighth each (the whole
# database takes minutes on two cores); PYATEN_VMAP_OPINFO=all runs every operator.
_ALL = os.environ.get("PYATEN_VMAP_OPINFO") == "all"


def _share(cases: list, part: int, test: str) -> list:
    return _params(cases if _ALL else cases[part::8], test)


def _functions(info):
    sample = _sample(info)
    args = [sample.input, *sample.args]
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    kwargs, p_kwargs = sample.kwargs, _to_pyaten(sample.kwargs)
    their_op, our_op = info.op, _resolve(pyaten, info.name)
    if their_op is not _resolve(torch, info.name):  # the method (`x.view(...)`, `x.int()`)
        their_op, our_op = info.method_variant, getattr(pyaten.Tensor, info.name)

    def theirs(*a):
        return their_op(*a, **kwargs)

    def ours(*a):
        return our_op(*a, **p_kwargs)

    return args, tensors, theirs, ours


def _phase_fixed(a: np.ndarray) -> np.ndarray:
    """Each column scaled so that its largest entry is real and positive."""
    if a.size == 0:
        return a
    top = np.take_along_axis(a, np.abs(a).argmax(axis=-2)[..., None, :], axis=-2)
    return a * (np.abs(top) / np.where(top == 0, 1, top))


def _same(got, want, name: str = "") -> None:
    got_flat = got if isinstance(got, (tuple, list)) else [got]
    want_flat = want if isinstance(want, (tuple, list)) else [want]
    assert len(got_flat) == len(want_flat)
    for k, (g, w) in enumerate(zip(got_flat, want_flat, strict=True)):
        if not isinstance(w, torch.Tensor):
            continue
        assert tuple(g.shape) == tuple(w.shape)
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        if name in _NO_VALUES:
            continue
        if w.dtype in (torch.bfloat16, torch.complex32):  # no NumPy dtype: compare widened
            w = w.to(torch.complex64 if w.is_complex() else torch.float32)
            g = g.to(pyaten.complex64 if g.is_complex() else pyaten.float32)
        # the conjugate bit may differ (torch's fallback loop materialises ihfftn's)
        g_values = g.detach().resolve_conj().resolve_neg().numpy()
        # force: torch's gradient may be a ZeroTensor (sgn's), which NumPy cannot view
        w_values = w.numpy(force=True)
        if _EIGENVECTORS.get(name) == k:
            g_values, w_values = _phase_fixed(g_values), _phase_fixed(w_values)
        rtol, atol = _TOLERANCE.get(name, (1e-6, 1e-8))
        np.testing.assert_allclose(g_values, w_values, rtol=rtol, atol=atol, equal_nan=True)


def _as_torch(t: pyaten.Tensor) -> torch.Tensor:
    """A torch copy of `t`'s values (bfloat16 and complex32 through their wider types)."""
    wide = {pyaten.bfloat16: (pyaten.float32, torch.bfloat16),
            pyaten.complex32: (pyaten.complex64, torch.complex32)}.get(t.dtype)
    if wide is not None:
        return torch.from_numpy(t.to(wide[0]).numpy()).to(wide[1])
    return torch.from_numpy(t.resolve_conj().resolve_neg().numpy())


def _torch_or_skip(fn):
    try:
        return fn()
    except Exception as e:  # torch.func refuses this case too: nothing to compare
        pytest.skip(f"torch.func: {type(e).__name__}: {str(e)[:80]}")


def _in_dims_cases(args, tensors):
    cases = [tuple(0 if i in tensors else None for i in range(len(args)))]
    if len(tensors) > 1:
        for k in tensors:
            cases.append(tuple(-1 if i == k else None for i in range(len(args))))
    return cases


def _batched_args(args, in_dims, size):
    out = []
    for a, d in zip(args, in_dims, strict=True):
        out.append(a if d is None else _batch(a, size).movedim(0, d))
    return out


@pytest.mark.parametrize("info", _share(CASES, 0, "one"))
def test_one_level(info) -> None:
    args, tensors, theirs, ours = _functions(info)
    for in_dims in _in_dims_cases(args, tensors):
        batched = _batched_args(args, in_dims, B1)
        want = _torch_or_skip(lambda: tf.vmap(theirs, in_dims=in_dims)(*batched))  # noqa: B023
        p_batched = _to_pyaten(batched)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = pf.vmap(ours, in_dims=in_dims)(*p_batched)
            # the same as calling the operator once per sample
            loop = [ours(*[a if d is None else a.select(d, i) for a, d in
                           zip(p_batched, in_dims, strict=True)]) for i in range(B1)]
        _same(got, want, info.name)
        if isinstance(got, pyaten.Tensor) and info.name not in _NOT_A_LOOP | _NO_VALUES:
            _same(got, torch.stack([_as_torch(r) for r in loop]), info.name)


@pytest.mark.parametrize("info", _share(CASES, 1, "two"))
def test_two_levels(info) -> None:
    args, tensors, theirs, ours = _functions(info)
    inner = tuple(0 if i in tensors else None for i in range(len(args)))
    # the outer level maps the first tensor argument over its dimension 1 and the others
    # over dimension 0
    outer = tuple(None if i not in tensors else (1 if i == tensors[0] else 0)
                  for i in range(len(args)))
    batched = []
    for a, d in zip(args, outer, strict=True):
        if d is None:
            batched.append(a)
        else:
            twice = torch.stack([_batch(a, B1) + (0.5 * j if a.is_floating_point() else 0)
                                 for j in range(B2)])
            batched.append(twice.movedim(0, d))
    want = _torch_or_skip(
        lambda: tf.vmap(tf.vmap(theirs, in_dims=inner), in_dims=outer)(*batched))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = pf.vmap(pf.vmap(ours, in_dims=inner), in_dims=outer)(*_to_pyaten(batched))
    _same(got, want, info.name)


def _scalar(lib, out):
    flat = out if isinstance(out, (tuple, list)) else [out]
    total = None
    for o in flat:
        if isinstance(o, lib.Tensor) and o.is_floating_point():
            term = (o * o).sum()
            total = term if total is None else total + term
    return total


GRAD_CASES = [(info, label) for info, label in CASES if info.supports_autograd]


@pytest.mark.parametrize("info", _share(GRAD_CASES, 2, "grad"))
def test_vmap_of_grad(info) -> None:
    args, tensors, theirs, ours = _functions(info)
    if not args[0].is_floating_point():
        pytest.skip("the first argument is not floating point")
    in_dims = tuple(0 if i in tensors else None for i in range(len(args)))
    batched = _batched_args(args, in_dims, B1)
    want = _torch_or_skip(lambda: tf.vmap(tf.grad(lambda *a: _scalar(torch, theirs(*a))),
                                          in_dims=in_dims)(*batched))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = pf.vmap(pf.grad(lambda *a: _scalar(pyaten, ours(*a))),
                      in_dims=in_dims)(*_to_pyaten(batched))
    _same(got, want)


def test_coverage_report() -> None:
    report = pf.batching_coverage()
    assert set(report) == {"rule", "decomposed", "fallback"}
    assert "aten::sin" in report["rule"] and "aten::aminmax" in report["rule"]
    everything = [name for names in report.values() for name in names]
    assert len(everything) == len(set(everything))
