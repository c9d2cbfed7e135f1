"""Gradients of the linear-algebra factorizations and of scatter_reduce, pyaten against torch.

OpInfo samples of the decompositions whose outputs carry a sign or phase ambiguity (svd, eig,
eigh, qr...) come with PyTorch's own `output_process_fn_grad` (|U|, U @ Vh, ...) and, for the
Hermitian-input functions, its `gradcheck_wrapper` (A + A^H): the runner here applies both,
so only gauge-invariant functions of the outputs are differentiated, as PyTorch's tests do.
Each sample's input gradients (and, for `SECOND_ORDER`, gradients of gradients) must equal
torch's; the first sample of each OpInfo also passes pyaten's gradcheck.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _grad_helpers import (
    _pyaten_callable,
    _substitute,
    _tensors,
    assert_same_grads,
    check_grads,
    compare_gradients,
    grad_outcomes,
    grad_samples,
    opinfo_grad_cases,
)
from _helpers import from_torch, run_both, to_numpy

import pyaten

GRAD_SURFACE = frozenset("""
linalg.det linalg.slogdet logdet linalg.solve linalg.solve_ex linalg.cholesky linalg.cholesky_ex
cholesky linalg.qr qr linalg.svd linalg.svdvals svd linalg.eigh linalg.eigvalsh linalg.eig
linalg.eigvals linalg.inv_ex linalg.pinv pinverse linalg.lstsq linalg.lu_factor
linalg.lu_factor_ex linalg.lu linalg.lu_solve lu_solve lu_unpack matrix_exp
linalg.householder_product cdist cholesky_solve cholesky_inverse linalg.matrix_power
linalg.tensorinv linalg.tensorsolve linalg.multi_dot scatter_reduce
""".split())

# Gradients of gradients compared too (torch's _cdist_backward has no derivative).
SECOND_ORDER = GRAD_SURFACE - {"cdist"}

# OpInfo variants left out, with the reason.
NOT_YET = {
    ("linalg.pinv", "singular"): "rank-deficient inputs: PyTorch's gradient there is not the "
                                 "constant-rank formula's",
    ("linalg.lstsq", "grad_oriented"): "checked by hand below",
}

# Composites whose result on an empty input (or matrix_power's n=0 identity) has no grad_fn
# in pyaten, where torch's has one: skipped samples.
EMPTY_NOT_YET = frozenset({"linalg.pinv", "pinverse", "linalg.matrix_power"})

# Samples per OpInfo (the module stays well under a minute).
LIMIT = 4

_IDENTITY = (lambda op, *args, **kwargs: op(*args, **kwargs))


def _real_positive_diagonal(op, *args, upper=False, idx=0, **kwargs):
    """pyaten's copy of PyTorch's gradcheck_wrapper_triangular_input_real_positive_diagonal
    (which calls torch.diag_embed)."""
    arg = args[idx]
    new = arg - pyaten.diag_embed(arg.diagonal(0, -2, -1)) + pyaten.diag_embed(
        pyaten.ones_like(arg.diagonal(0, -2, -1)))
    new = new.triu() if upper else new.tril()
    return op(*args[:idx], new, *args[idx + 1:], upper, **kwargs)


def _our_wrapper(info):
    wrapper = info.gradcheck_wrapper or _IDENTITY
    if wrapper.__name__ == "gradcheck_wrapper_triangular_input_real_positive_diagonal":
        return _real_positive_diagonal
    return wrapper


def _run_sample(info, sample, second_order: bool, gradcheck: bool) -> None:
    structure = (sample.input, tuple(sample.args), dict(sample.kwargs))
    all_tensors = _tensors(structure, [])
    if info.name in EMPTY_NOT_YET and (sample.input.numel() == 0 or sample.args == (0,)):
        return
    leaves_t = [t for t in all_tensors if t.requires_grad]
    if not leaves_t:
        return
    fresh_t = {id(t): t.detach().clone().requires_grad_(True) for t in leaves_t}
    plain_t = {id(t): t.detach() for t in all_tensors if not t.requires_grad}
    fresh_o = {}
    for t in all_tensors:
        o = from_torch(t.detach())
        if t.requires_grad:
            o.requires_grad_(True)
        fresh_o[id(t)] = o
    wrapper = info.gradcheck_wrapper or _IDENTITY
    our_wrapper = _our_wrapper(info)
    post = sample.output_process_fn_grad
    fn = _pyaten_callable(info)

    def ours_from(mapping):
        inp, args, kwargs = _substitute(structure, mapping, ours=True)
        return post(our_wrapper(fn, inp, *args, **kwargs))

    def call_ours():
        return ours_from(fresh_o)

    def call_theirs():
        inp, args, kwargs = _substitute(structure, {**plain_t, **fresh_t})
        return post(wrapper(info.op, inp, *args, **kwargs))

    pair = run_both(call_ours, call_theirs)
    if pair is None:
        return
    ours, theirs = pair
    if not compare_gradients(ours, theirs, leaves_t, fresh_o, fresh_t, second_order, 1e-5):
        return
    outs_o = [o for o in (ours if isinstance(ours, (tuple, list)) else [ours])
              if isinstance(o, pyaten.Tensor) and o.requires_grad]
    if gradcheck and all(o.numel() for o in outs_o):
        def as_function(*xs):
            mapping = dict(fresh_o)
            mapping.update({id(t): x for t, x in zip(leaves_t, xs)})
            return ours_from(mapping)

        points = [fresh_o[id(t)].detach().clone().requires_grad_(True) for t in leaves_t]
        if all(p.dtype is pyaten.float64 for p in points):
            assert pyaten.autograd.gradcheck(as_function, points, fast_mode=True)


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_gradients_match_torch(info) -> None:
    samples = grad_samples(info, LIMIT)
    assert samples, "OpInfo gave no float64 samples"
    for k, sample in enumerate(samples):
        _run_sample(info, sample, info.name in SECOND_ORDER, gradcheck=(k == 0))


# complex128 samples of the factorizations (first order, a couple of samples each)
COMPLEX_SURFACE = frozenset("""
linalg.slogdet linalg.cholesky linalg.qr linalg.svd linalg.eigh linalg.eig linalg.pinv
linalg.lstsq linalg.lu_factor linalg.lu linalg.lu_solve lu_unpack matrix_exp
linalg.householder_product cholesky_solve cholesky_inverse
""".split())


@pytest.mark.parametrize("info", opinfo_grad_cases(COMPLEX_SURFACE, NOT_YET))
def test_complex_gradients_match_torch(info) -> None:
    samples = list(info.sample_inputs("cpu", torch.complex128, requires_grad=True))[:2]
    for sample in samples:
        _run_sample(info, sample, False, gradcheck=False)


# --- forward mode: the `result:` formulas against torch's jvp, gauge-invariant outputs ---

FORWARD_NOT_YET = {
    "cdist": "PyTorch has no forward formula for _cdist_forward either",
}


def _forward_cases():
    return [p for p in opinfo_grad_cases(GRAD_SURFACE, NOT_YET)
            if p.values[0].supports_forward_ad and p.id not in FORWARD_NOT_YET
            and p.values[0].name not in FORWARD_NOT_YET]


def _tangent_run(library, fn, wrapper, post, structure, tensors, tangents, convert):
    fw = library.autograd.forward_ad
    mapping = {}
    for t, u in zip(tensors, tangents):
        base = convert(t.detach())
        mapping[id(t)] = fw.make_dual(base, convert(u)) if u is not None else base
    inp, args, kwargs = _substitute(structure, mapping, ours=library is pyaten)
    out = post(wrapper(fn, inp, *args, **kwargs))
    items = out if isinstance(out, (tuple, list)) else [out]
    return [fw.unpack_dual(o).tangent if isinstance(o, library.Tensor) else None for o in items]


@pytest.mark.parametrize("info", _forward_cases())
def test_forward_mode_matches_torch(info) -> None:
    gen = torch.Generator().manual_seed(0)
    fn = _pyaten_callable(info)
    for sample in grad_samples(info, 4):
        structure = (sample.input, tuple(sample.args), dict(sample.kwargs))
        tensors = _tensors(structure, [])
        if info.name in EMPTY_NOT_YET and (sample.input.numel() == 0 or sample.args == (0,)):
            continue
        tangents = [torch.randn(t.shape, generator=gen, dtype=t.dtype) if t.requires_grad
                    else None for t in tensors]
        if all(u is None for u in tangents):
            continue
        post = sample.output_process_fn_grad

        def theirs(structure=structure, tensors=tensors, tangents=tangents, post=post):
            with torch.autograd.forward_ad.dual_level():
                return _tangent_run(torch, info.op, info.gradcheck_wrapper or _IDENTITY, post,
                                    structure, tensors, tangents, lambda x: x)

        def ours(structure=structure, tensors=tensors, tangents=tangents, post=post):
            with pyaten.autograd.forward_ad.dual_level():
                return _tangent_run(pyaten, fn, _our_wrapper(info), post, structure, tensors,
                                    tangents, from_torch)

        pair = run_both(ours, theirs, message=False)
        if pair is None:
            continue
        got, expected = pair
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            if e is None:
                continue
            assert g is not None, "pyaten gave no tangent"
            assert tuple(g.shape) == tuple(e.shape)
            np.testing.assert_allclose(to_numpy(g), to_numpy(e), rtol=1e-6, atol=1e-7)


# --- hand-written cases --------------------------------------------------------------------------

def _rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _well_conditioned(*shape, seed=0, dtype=torch.float64):
    n = shape[-1]
    return _rand(*shape, seed=seed, dtype=dtype) + 3 * torch.eye(n, dtype=dtype)


def _spd(*shape, seed=0, dtype=torch.float64):
    a = _rand(*shape, seed=seed, dtype=dtype)
    return a @ a.mH + shape[-1] * torch.eye(shape[-1], dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_det_slogdet_inv_solve_complex_and_second_order(dtype) -> None:
    a = _well_conditioned(2, 3, 3, dtype=dtype)
    b = _rand(2, 3, 2, seed=1, dtype=dtype)
    check_grads(lambda x: pyaten.linalg.det(x), lambda x: torch.linalg.det(x), [a],
                second_order=True)
    check_grads(lambda x: pyaten.linalg.slogdet(x), lambda x: torch.linalg.slogdet(x), [a],
                second_order=True)
    check_grads(lambda x, y: pyaten.linalg.solve(x, y), lambda x, y: torch.linalg.solve(x, y),
                [a, b], second_order=True)
    check_grads(lambda x, y: pyaten.linalg.solve(x, y, left=False),
                lambda x, y: torch.linalg.solve(x, y, left=False), [a, b.mT], second_order=True)
    check_grads(lambda x: pyaten.linalg.inv(x), lambda x: torch.linalg.inv(x), [a],
                second_order=True)


def test_solve_vector_rhs_and_broadcast() -> None:
    a = _well_conditioned(3, 3)
    check_grads(lambda x, y: pyaten.linalg.solve(x, y), lambda x, y: torch.linalg.solve(x, y),
                [a, _rand(3, seed=2)], second_order=True)
    check_grads(lambda x, y: pyaten.linalg.solve(x, y), lambda x, y: torch.linalg.solve(x, y),
                [a, _rand(4, 3, 2, seed=3)])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_complex(upper) -> None:
    a = _spd(2, 3, 3, dtype=torch.complex128)

    def ours(x):
        return pyaten.linalg.cholesky(x + x.mH, upper=upper)

    def theirs(x):
        return torch.linalg.cholesky(x + x.mH, upper=upper)

    check_grads(ours, theirs, [a])


def test_qr_wide_and_complex() -> None:
    for shape, dtype in (((3, 5), torch.float64), ((2, 5, 3), torch.complex128)):
        a = _rand(*shape, dtype=dtype)
        check_grads(lambda x: (lambda q, r: (q @ r, r.abs()))(*pyaten.linalg.qr(x)),
                    lambda x: (lambda q, r: (q @ r, r.abs()))(*torch.linalg.qr(x)), [a])


def test_svd_complex_gauge_invariant() -> None:
    a = _rand(2, 4, 3, dtype=torch.complex128)

    def ours(x):
        u, s, vh = pyaten.linalg.svd(x, full_matrices=False)
        return u @ vh, s, u.abs()

    def theirs(x):
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        return u @ vh, s, u.abs()

    check_grads(ours, theirs, [a])


def test_eigh_complex_gauge_invariant() -> None:
    a = _rand(2, 4, 4, dtype=torch.complex128)

    def ours(x):
        w, v = pyaten.linalg.eigh(x + x.mH)
        return w, v.abs()

    def theirs(x):
        w, v = torch.linalg.eigh(x + x.mH)
        return w, v.abs()

    check_grads(ours, theirs, [a])


def test_matrix_exp_second_order() -> None:
    a = 0.5 * _rand(2, 3, 3)
    check_grads(lambda x: pyaten.linalg.matrix_exp(x), lambda x: torch.linalg.matrix_exp(x),
                [a], second_order=True)


@pytest.mark.parametrize("p", [0.0, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_cdist_norms(p) -> None:
    x1 = _rand(2, 4, 3)
    x2 = _rand(2, 5, 3, seed=1)
    check_grads(lambda a, b: pyaten.cdist(a, b, p=p), lambda a, b: torch.cdist(a, b, p=p),
                [x1, x2])


def test_cdist_euclidean_mm_path() -> None:
    x1 = _rand(30, 3)
    x2 = _rand(27, 3, seed=1)
    check_grads(lambda a, b: pyaten.cdist(a, b), lambda a, b: torch.cdist(a, b), [x1, x2])


def test_lstsq_residuals_and_vector() -> None:
    a = _rand(5, 3)
    b = _rand(5, 2, seed=1)
    check_grads(lambda x, y: pyaten.linalg.lstsq(x, y, driver="gelsd")[:2],
                lambda x, y: torch.linalg.lstsq(x, y, driver="gelsd")[:2], [a, b])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self) -> None:
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((4, 3)))
    src = torch.tensor(rng.standard_normal((6, 3)))
    src[0, 0] = 0.0  # a single zero (prod's exclusive product)
    src[4, 1] = x[1, 1]  # a tie (amax/amin share the gradient)
    index = torch.tensor(rng.integers(0, 4, (6, 3)))
    index[4, 1] = 1

    def ours(a, s):
        return a.scatter_reduce(0, from_torch(index), s, reduce, include_self=include_self)

    def theirs(a, s):
        return a.scatter_reduce(0, index, s, reduce, include_self=include_self)

    check_grads(ours, theirs, [x, src])


def test_non_differentiable_outputs() -> None:
    x = pyaten.tensor([1.0, 0.0, 2.0], requires_grad=True)
    assert not pyaten.nonzero(x).requires_grad
    assert not pyaten.searchsorted(x.detach(), x).requires_grad
    assert not pyaten.isin(x, x).requires_grad
    assert not pyaten.histc(x, bins=3).requires_grad
    assert not pyaten.rand_like(x).requires_grad
    values = pyaten.unique(x)
    assert values.requires_grad
    with pytest.raises(NotImplementedError, match="_unique2|unique"):
        values.sum().backward()


def test_lu_pivots_and_info_carry_no_gradient() -> None:
    a = pyaten.tensor(_well_conditioned(3, 3).numpy(), requires_grad=True)
    LU, pivots, info = pyaten.linalg.lu_factor_ex(a)  # noqa: N806
    assert LU.requires_grad and not pivots.requires_grad and not info.requires_grad
    P, L, U = pyaten.linalg.lu(a)  # noqa: N806
    assert not P.requires_grad and L.requires_grad and U.requires_grad


def test_det_forward_mode() -> None:
    a = _well_conditioned(3, 3)
    t = _rand(3, 3, seed=5)
    _, theirs = torch.func.jvp(torch.linalg.det, (a,), (t,))
    fw = pyaten.autograd.forward_ad
    with fw.dual_level():
        dual = fw.make_dual(from_torch(a), from_torch(t))
        ours = fw.unpack_dual(pyaten.linalg.det(dual)).tangent
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-8)



def _jvp_both(ours, theirs, primals, tangents):
    _, expected = torch.func.jvp(theirs, tuple(primals), tuple(tangents))
    fw = pyaten.autograd.forward_ad
    with fw.dual_level():
        duals = [fw.make_dual(from_torch(p), from_torch(t)) for p, t in zip(primals, tangents)]
        out = ours(*duals)
        got = [fw.unpack_dual(o).tangent for o in (out if isinstance(out, tuple) else (out,))]
    expected = expected if isinstance(expected, tuple) else (expected,)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(to_numpy(g), e.numpy(), rtol=1e-7, atol=1e-9)


def test_forward_mode_complex_and_lstsq() -> None:
    c = torch.complex128
    a, t = _rand(2, 4, 3, dtype=c), _rand(2, 4, 3, seed=1, dtype=c)
    _jvp_both(lambda x: (lambda q, r: (q @ r, r.abs()))(*pyaten.linalg.qr(x)),
              lambda x: (lambda q, r: (q @ r, r.abs()))(*torch.linalg.qr(x)), [a], [t])
    _jvp_both(lambda x: (lambda u, s, vh: (u @ vh, s, u.abs()))(*pyaten.linalg.svd(x, False)),
              lambda x: (lambda u, s, vh: (u @ vh, s, u.abs()))(*torch.linalg.svd(x, False)),
              [a], [t])
    h, ht = _rand(3, 3, dtype=c), _rand(3, 3, seed=2, dtype=c)
    _jvp_both(lambda x: (lambda w, v: (w, v.abs()))(*pyaten.linalg.eigh(x + x.mH)),
              lambda x: (lambda w, v: (w, v.abs()))(*torch.linalg.eigh(x + x.mH)), [h], [ht])
    _jvp_both(lambda x: pyaten.linalg.cholesky(x @ x.mH + 3 * pyaten.eye(3, dtype=x.dtype)),
              lambda x: torch.linalg.cholesky(x @ x.mH + 3 * torch.eye(3, dtype=c)), [h], [ht])
    _jvp_both(lambda x: pyaten.linalg.slogdet(x), lambda x: torch.linalg.slogdet(x), [h], [ht])
    m, b = _rand(5, 3), _rand(5, 2, seed=3)
    _jvp_both(lambda x, y: pyaten.linalg.lstsq(x, y, driver="gelsd")[:2],
              lambda x, y: torch.linalg.lstsq(x, y, driver="gelsd")[:2], [m, b],
              [_rand(5, 3, seed=4), _rand(5, 2, seed=5)])


def test_det_of_singular_matrices() -> None:
    # torch takes the adjugate (SVD) path when the backward records a graph; without one its
    # LU solve returns zeros for an exactly singular matrix: compare under create_graph
    rank_two = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]],
                            dtype=torch.float64)
    rank_one = torch.outer(_rand(3), _rand(3, seed=1))
    complex_singular = torch.tensor([[[1 + 1j, 2.0], [2 + 2j, 4 - 0j]]], dtype=torch.complex128)
    for a in (rank_two, torch.stack([rank_one, _well_conditioned(3, 3)]), complex_singular):
        g_o, g_t, _, _ = grad_outcomes(lambda x: pyaten.linalg.det(x),
                                       lambda x: torch.linalg.det(x), [a], create_graph=True)
        assert_same_grads(g_o, g_t, rtol=1e-7, atol=1e-12)
    check_grads(lambda x: pyaten.linalg.det(x), lambda x: torch.linalg.det(x), [rank_two],
                second_order=True)


def test_non_contiguous_inputs() -> None:
    a = _well_conditioned(3, 4, 4).mT  # batched column-major views
    b = _rand(3, 2, 4, seed=1).mT
    check_grads(lambda x, y: pyaten.linalg.solve(x, y), lambda x, y: torch.linalg.solve(x, y),
                [a, b], second_order=True)
    check_grads(lambda x: pyaten.linalg.slogdet(x), lambda x: torch.linalg.slogdet(x), [a])
    s = _spd(4, 4)[:, [3, 2, 1, 0]][[3, 2, 1, 0]]
    check_grads(lambda x: pyaten.linalg.cholesky(x + x.mT),
                lambda x: torch.linalg.cholesky(x + x.mT), [s.mT])


def test_out_with_an_input_requiring_grad_raises() -> None:
    a = _well_conditioned(3, 3)

    def ours():
        x = from_torch(a).requires_grad_(True)
        return pyaten.linalg.det(x, out=pyaten.empty((), dtype=pyaten.float64))

    def theirs():
        x = a.clone().requires_grad_(True)
        return torch.linalg.det(x, out=torch.empty((), dtype=torch.float64))

    assert run_both(ours, theirs) is None


def test_cdist_backward_is_an_operator() -> None:
    x1 = pyaten.tensor(_rand(2, 4, 3).numpy(), requires_grad=True)
    x2 = pyaten.tensor(_rand(5, 3, seed=1).numpy(), requires_grad=True)
    d = pyaten.cdist(x1, x2, p=1.5)
    (g1,) = pyaten.autograd.grad(d.sum(), x1, create_graph=True)
    with pytest.raises(NotImplementedError, match="_cdist_backward"):  # as in PyTorch
        pyaten.autograd.grad(g1.sum(), x2)
    meta = pyaten.ops.aten._cdist_backward(pyaten.empty(2, 4, 5, device="meta"),
                                          pyaten.empty(4, 3, device="meta"),
                                          pyaten.empty(2, 5, 3, device="meta"), 2.0,
                                          pyaten.empty(2, 4, 5, device="meta"))
    assert meta.shape == (2, 4, 3) and meta.device.type == "meta"


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_forward_mode(reduce, include_self) -> None:
    x = _rand(4, 3)
    src = _rand(6, 3, seed=1)
    src[1, 2] = 0.0
    index = torch.tensor([[0, 1, 2], [1, 1, 2], [3, 0, 0], [0, 2, 2], [1, 1, 1], [3, 3, 3]])
    tangents = (_rand(4, 3, seed=2), _rand(6, 3, seed=3))

    def theirs(a, s):
        return a.scatter_reduce(0, index, s, reduce, include_self=include_self)

    # torch's forward mode leaves prod's tangent undefined (zeros): its reverse-mode
    # Jacobian-vector product (the double-backward trick) is the reference for all
    expected = torch.autograd.functional.jvp(theirs, (x, src), tangents)[1]
    fw = pyaten.autograd.forward_ad
    with fw.dual_level():
        a = fw.make_dual(from_torch(x), from_torch(tangents[0]))
        s = fw.make_dual(from_torch(src), from_torch(tangents[1]))
        out = a.scatter_reduce(0, from_torch(index), s, reduce, include_self=include_self)
        got = fw.unpack_dual(out).tangent
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=1e-7, atol=1e-9)
