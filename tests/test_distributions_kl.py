"""pyaten.distributions' KL divergences, transforms, constraints and constraint registry
against torch.distributions'."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as TD

import pyaten
import pyaten.distributions as PD

_R = np.random.default_rng(1)
A = _R.uniform(0.5, 2.0, (3,))
B = _R.uniform(0.5, 2.0, (3,))
M = _R.normal(size=(3,))
P1 = _R.uniform(0.1, 0.9, (3,))
SIMPLEX = _R.uniform(0.1, 1.0, (3, 4))
SIMPLEX /= SIMPLEX.sum(-1, keepdims=True)
COV1 = np.array([[2.0, 0.5], [0.5, 1.0]])
COV2 = np.array([[1.0, -0.3], [-0.3, 0.5]])

# one instance of each family (name, positional parameters) for the KL table
FAMILY = {
    "Normal": ("Normal", (M, A)),
    "Normal2": ("Normal", (M[::-1].copy(), B)),
    "Bernoulli": ("Bernoulli", (P1,)),
    "Bernoulli2": ("Bernoulli", (P1[::-1].copy(),)),
    "Beta": ("Beta", (A, B)),
    "Beta2": ("Beta", (B, A)),
    "Binomial": ("Binomial", (10, P1)),
    "Binomial2": ("Binomial", (10, P1[::-1].copy())),
    "Categorical": ("Categorical", (SIMPLEX,)),
    "Categorical2": ("Categorical", (SIMPLEX[::-1].copy(),)),
    "Cauchy": ("Cauchy", (M, A)),
    "Dirichlet": ("Dirichlet", (SIMPLEX * 4,)),
    "Dirichlet2": ("Dirichlet", (SIMPLEX[::-1] * 2,)),
    "Exponential": ("Exponential", (A,)),
    "Gamma": ("Gamma", (A, B)),
    "Gumbel": ("Gumbel", (M, A)),
    "Geometric": ("Geometric", (P1,)),
    "HalfNormal": ("HalfNormal", (A,)),
    "Laplace": ("Laplace", (M, A)),
    "OneHotCategorical": ("OneHotCategorical", (SIMPLEX,)),
    "Poisson": ("Poisson", (A,)),
    "Uniform": ("Uniform", (P1 * 0.5, P1 * 0.5 + 0.4)),
    "Uniform-wide": ("Uniform", (M - 3, M + 3)),
    "LogNormal": ("LogNormal", (M, A)),
    "LogNormal2": ("LogNormal", (M[::-1].copy(), B)),
    "Chi2": ("Chi2", (A,)),
    "Pareto": ("Pareto", (A, B + 2)),
    "Pareto2": ("Pareto", (B, A + 0.5)),
    "ContinuousBernoulli": ("ContinuousBernoulli", (P1,)),
    "ContinuousBernoulli2": ("ContinuousBernoulli", (P1[::-1].copy(),)),
    "LowRank": ("LowRankMultivariateNormal", (np.array([0.0, 1.0]),
                                              np.array([[1.0, 0.5], [0.2, -0.3]]), A[:2])),
    "LowRank2": ("LowRankMultivariateNormal", (np.array([1.0, -1.0]),
                                               np.array([[0.3], [0.7]]), B[:2])),
    "MVN": ("MultivariateNormal", (np.array([0.5, 0.0]), COV1)),
}


def make(key: str, lib_name: str):
    name, args = FAMILY[key]
    lib, dists = (torch, TD) if lib_name == "torch" else (pyaten, PD)
    return getattr(dists, name)(*[lib.tensor(a) if isinstance(a, np.ndarray) else a
                                  for a in args])


def same(ours, theirs, rtol: float = 1e-6) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=1e-10, equal_nan=True)


def _registered(p: str, q: str) -> bool:
    from torch.distributions.kl import _dispatch_kl

    return _dispatch_kl(type(make(p, "torch")), type(make(q, "torch"))) is not NotImplemented


# every pair torch registers among these instances, and a few it does not
PAIRS = [(p, q) for p in FAMILY for q in FAMILY if _registered(p, q)] + [
    ("Cauchy", "Normal"), ("Poisson", "Normal"), ("LowRank", "Normal"), ("Beta", "Dirichlet"),
]


@pytest.mark.parametrize("p,q", PAIRS)
def test_kl_divergence_as_torch(p, q):
    tp, tq = make(p, "torch"), make(q, "torch")
    try:
        expected = TD.kl_divergence(tp, tq)
    except Exception as error:  # the same class of failure
        with pytest.raises(type(error)):
            PD.kl_divergence(make(p, "pyaten"), make(q, "pyaten"))
        return
    same(PD.kl_divergence(make(p, "pyaten"), make(q, "pyaten")), expected, rtol=1e-5)


def test_kl_mvn_and_independent():
    loc = np.array([[0.0, 1.0], [1.0, -1.0]])
    p_t = TD.MultivariateNormal(torch.tensor(loc), torch.tensor(COV1))
    q_t = TD.MultivariateNormal(torch.tensor(loc[::-1].copy()), scale_tril=torch.tensor(
        np.linalg.cholesky(COV2)))
    p_p = PD.MultivariateNormal(pyaten.tensor(loc), pyaten.tensor(COV1))
    q_p = PD.MultivariateNormal(pyaten.tensor(loc[::-1].copy()), scale_tril=pyaten.tensor(
        np.linalg.cholesky(COV2)))
    same(PD.kl_divergence(p_p, q_p), TD.kl_divergence(p_t, q_t))
    ip = PD.Independent(PD.Normal(pyaten.tensor(M), pyaten.tensor(A)), 1)
    iq = PD.Independent(PD.Normal(pyaten.tensor(M), pyaten.tensor(B)), 1)
    it = TD.kl_divergence(TD.Independent(TD.Normal(torch.tensor(M), torch.tensor(A)), 1),
                          TD.Independent(TD.Normal(torch.tensor(M), torch.tensor(B)), 1))
    same(PD.kl_divergence(ip, iq), it)


def test_register_kl_dispatch_and_errors():
    class MyNormal(PD.Normal):
        pass

    p = MyNormal(0.0, 1.0)
    q = PD.Normal(1.0, 2.0)
    same(PD.kl_divergence(p, q), TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Normal(1.0, 2.0)))

    @PD.register_kl(MyNormal, PD.Normal)
    def _mine(p, q):
        return pyaten.tensor(42.0)

    try:
        assert PD.kl_divergence(p, q).item() == 42.0
        assert PD.kl_divergence(q, q).item() == 0.0
    finally:
        from pyaten.distributions import kl

        del kl._KL_REGISTRY[MyNormal, PD.Normal]
        kl._KL_MEMOIZE.clear()
    with pytest.raises(NotImplementedError,
                       match="No KL\\(p \\|\\| q\\) is implemented for p type Cauchy and q "
                             "type Normal"):
        PD.kl_divergence(PD.Cauchy(0.0, 1.0), q)
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        PD.register_kl(int, PD.Normal)


def _ambiguous_pair():
    class A(PD.Normal):
        pass

    class Bq(PD.Normal):
        pass

    class C(A):
        pass

    class D(Bq):
        pass

    PD.register_kl(C, Bq)(lambda p, q: pyaten.tensor(1.0))
    PD.register_kl(A, D)(lambda p, q: pyaten.tensor(2.0))
    return A, Bq, C, D


def test_ambiguous_kl_warns():
    from pyaten.distributions import kl

    A, Bq, C, D = _ambiguous_pair()
    try:
        with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence\\(C, D\\)"):
            PD.kl_divergence(C(0.0, 1.0), D(0.0, 1.0))
    finally:
        del kl._KL_REGISTRY[C, Bq]
        del kl._KL_REGISTRY[A, D]
        kl._KL_MEMOIZE.clear()


TRANSFORMS = [
    ("ExpTransform", (), np.array([-1.0, 0.5, 2.0])),
    ("SigmoidTransform", (), np.array([-3.0, 0.5, 2.0])),
    ("TanhTransform", (), np.array([-3.0, 0.5, 2.0])),
    ("SoftplusTransform", (), np.array([-3.0, 0.5, 2.0])),
    ("AffineTransform", (1.5, -2.0), np.array([-1.0, 0.5, 2.0])),
    ("PowerTransform", (2.5,), np.array([0.3, 0.5, 2.0])),
    ("AbsTransform", (), np.array([-1.0, 0.5, 2.0])),
    ("StickBreakingTransform", (), np.array([[-1.0, 0.5, 2.0], [0.0, 0.1, -0.2]])),
    ("SoftmaxTransform", (), np.array([[-1.0, 0.5, 2.0], [0.0, 0.1, -0.2]])),
    ("LowerCholeskyTransform", (), np.array([[1.0, 2.0], [0.3, -0.4]])),
    ("PositiveDefiniteTransform", (), np.array([[1.0, 2.0], [0.3, -0.4]])),
]


@pytest.mark.parametrize("name,args,x", TRANSFORMS)
def test_transforms_as_torch(name, args, x):
    tt = getattr(TD, name)(*args)
    tp = getattr(PD, name)(*args)
    y_t = tt(torch.tensor(x))
    y_p = tp(pyaten.tensor(x))
    same(y_p, y_t)
    same(tp.inv(y_p), tt.inv(y_t))
    assert repr(tp) == repr(tt)
    assert repr(tp.domain) == repr(tt.domain) and repr(tp.codomain) == repr(tt.codomain)
    assert tp.bijective == tt.bijective
    try:
        expected = tt.log_abs_det_jacobian(torch.tensor(x), y_t)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            tp.log_abs_det_jacobian(pyaten.tensor(x), y_p)
        return
    same(tp.log_abs_det_jacobian(pyaten.tensor(x), y_p), expected)
    assert tuple(tp.forward_shape((2, 3))) == tuple(tt.forward_shape((2, 3)))


def test_compose_inverse_cache_and_equality():
    parts_t = [TD.ExpTransform(), TD.AffineTransform(1.0, 3.0)]
    parts_p = [PD.ExpTransform(), PD.AffineTransform(1.0, 3.0)]
    ct, cp = TD.ComposeTransform(parts_t), PD.ComposeTransform(parts_p)
    x = np.array([0.1, 0.5])
    same(cp(pyaten.tensor(x)), ct(torch.tensor(x)))
    same(cp.log_abs_det_jacobian(pyaten.tensor(x), cp(pyaten.tensor(x))),
         ct.log_abs_det_jacobian(torch.tensor(x), ct(torch.tensor(x))))
    assert cp.inv.inv is cp
    assert repr(cp) == repr(ct)
    assert cp.sign == 1 and PD.ExpTransform() == PD.ExpTransform()
    assert PD.AffineTransform(0.0, -1.0).sign == -1
    cached = PD.SigmoidTransform(cache_size=1)
    x_p = pyaten.tensor([40.0])  # saturates: only the cache recovers x
    assert cached.inv(cached(x_p)) is x_p
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        PD.ExpTransform(cache_size=2)
    ind = PD.IndependentTransform(PD.ExpTransform(), 1)
    same(ind.log_abs_det_jacobian(pyaten.tensor(x), ind(pyaten.tensor(x))),
         TD.IndependentTransform(TD.ExpTransform(), 1).log_abs_det_jacobian(
             torch.tensor(x), torch.tensor(x).exp()))
    rs = PD.ReshapeTransform((4,), (2, 2))
    assert tuple(rs(pyaten.zeros(3, 4)).shape) == (3, 2, 2)
    with pytest.raises(ValueError, match="different numbers of elements"):
        PD.ReshapeTransform((3,), (2, 2))


CONSTRAINTS = [
    ("real", None), ("positive", None), ("nonnegative", None), ("unit_interval", None),
    ("boolean", None), ("nonnegative_integer", None), ("positive_integer", None),
    ("simplex", None), ("real_vector", None), ("one_hot", None), ("lower_cholesky", None),
    ("lower_triangular", None), ("positive_definite", None), ("symmetric", None),
    ("square", None), ("corr_cholesky", None), ("positive_semidefinite", None),
    ("interval", (-1.0, 1.0)), ("half_open_interval", (0.0, 1.0)),
    ("greater_than", (0.5,)), ("greater_than_eq", (0.5,)), ("less_than", (0.5,)),
    ("integer_interval", (0, 3)), ("multinomial", (4,)),
]
VALUES = [
    np.array([[0.0, 1.0], [0.5, -1.0]]),
    np.array([[1.0, 0.0], [0.0, 1.0]]),
    np.array([[2.0, 0.0], [1.0, 3.0]]),
    np.array([[0.3, 0.7], [1.0, 0.0]]),
    np.array([[0.6, 0.8], [0.0, 1.0]]).T.copy(),
]


@pytest.mark.parametrize("name,args", CONSTRAINTS)
def test_constraints_as_torch(name, args):
    ct = getattr(TD.constraints, name)
    cp = getattr(PD.constraints, name)
    if args is not None:
        ct, cp = ct(*args), cp(*args)
    assert repr(cp) == repr(ct)
    assert cp.is_discrete == ct.is_discrete and cp.event_dim == ct.event_dim
    for v in VALUES:
        np.testing.assert_array_equal(cp.check(pyaten.tensor(v)).numpy(),
                                      ct.check(torch.tensor(v)).numpy())


def test_dependent_and_independent_constraints():
    assert PD.constraints.is_dependent(PD.constraints.dependent)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        PD.constraints.dependent.check(pyaten.zeros(1))
    with pytest.raises(NotImplementedError, match=".event_dim cannot be determined"):
        _ = PD.constraints.dependent.event_dim
    assert PD.constraints.dependent(event_dim=1).event_dim == 1
    ind = PD.constraints.independent(PD.constraints.positive, 1)
    assert repr(ind) == repr(TD.constraints.independent(TD.constraints.positive, 1))
    np.testing.assert_array_equal(ind.check(pyaten.tensor([[1.0, 2.0], [1.0, -1.0]])).numpy(),
                                  [True, False])
    cat = PD.constraints.cat([PD.constraints.positive, PD.constraints.real], 0, [1, 2])
    np.testing.assert_array_equal(cat.check(pyaten.tensor([-1.0, -1.0, 2.0])).numpy(),
                                  [False, True, True])
    stack = PD.constraints.stack([PD.constraints.positive, PD.constraints.real], 0)
    np.testing.assert_array_equal(stack.check(pyaten.tensor([-1.0, -1.0])).numpy(),
                                  [False, True])


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name,args", [
    ("real", None), ("positive", None), ("nonnegative", None), ("unit_interval", None),
    ("simplex", None), ("interval", (-2.0, 3.0)), ("greater_than", (1.0,)),
    ("less_than", (1.0,)), ("real_vector", None), ("lower_cholesky", None),
    ("positive_definite", None),
])
def test_constraint_registry_as_torch(registry, name, args):
    ct = getattr(TD.constraints, name)
    cp = getattr(PD.constraints, name)
    if args is not None:
        ct, cp = ct(*args), cp(*args)
    try:
        tt = getattr(TD, registry)(ct)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            getattr(PD, registry)(cp)
        return
    tp = getattr(PD, registry)(cp)
    assert repr(tp) == repr(tt)
    x = np.array([[0.3, -0.2], [1.5, 0.4]])
    y = tp(pyaten.tensor(x))
    same(y, tt(torch.tensor(x)))
    assert bool(cp.check(y).all())


def test_registry_errors_and_extension():
    with pytest.raises(TypeError, match="Expected constraint to be either"):
        PD.constraint_registry.ConstraintRegistry().register(3, lambda c: None)
    reg = PD.constraint_registry.ConstraintRegistry()
    reg.register(PD.constraints.positive, lambda c: PD.ExpTransform())
    assert isinstance(reg(PD.constraints.positive), PD.ExpTransform)
    with pytest.raises(NotImplementedError, match="Cannot transform _Real constraints"):
        reg(PD.constraints.real)


def test_structured_transforms_as_torch():
    x = _R.normal(size=(2, 6))
    cp, ct = PD.CorrCholeskyTransform(), TD.CorrCholeskyTransform()
    y_p, y_t = cp(pyaten.tensor(x)), ct(torch.tensor(x))
    same(y_p, y_t)
    assert bool(PD.constraints.corr_cholesky.check(y_p).all())
    same(cp.inv(y_p), ct.inv(y_t))
    same(cp.log_abs_det_jacobian(pyaten.tensor(x), y_p),
         ct.log_abs_det_jacobian(torch.tensor(x), y_t))
    assert tuple(cp.forward_shape((5, 6))) == (5, 4, 4)
    assert tuple(cp.inverse_shape((5, 4, 4))) == (5, 6)
    with pytest.raises(ValueError, match="not a flattened lower-diagonal"):
        cp.forward_shape((5,))
    z = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    cat_p = PD.CatTransform([PD.ExpTransform(), PD.AffineTransform(1.0, 2.0)], 1, [2, 1])
    cat_t = TD.CatTransform([TD.ExpTransform(), TD.AffineTransform(1.0, 2.0)], 1, [2, 1])
    same(cat_p(pyaten.tensor(z)), cat_t(torch.tensor(z)))
    same(cat_p.inv(cat_p(pyaten.tensor(z))), cat_t.inv(cat_t(torch.tensor(z))))
    same(cat_p.log_abs_det_jacobian(pyaten.tensor(z), cat_p(pyaten.tensor(z))),
         cat_t.log_abs_det_jacobian(torch.tensor(z), cat_t(torch.tensor(z))))
    assert repr(cat_p.domain) == repr(cat_t.domain)
    with pytest.raises(AssertionError, match="must equal length 3"):
        cat_p(pyaten.zeros(2, 4))
    st_p = PD.StackTransform([PD.ExpTransform(), PD.SigmoidTransform()], 0)
    st_t = TD.StackTransform([TD.ExpTransform(), TD.SigmoidTransform()], 0)
    zz = z[:, :2].T.copy()
    same(st_p(pyaten.tensor(zz)), st_t(torch.tensor(zz)))
    same(st_p.log_abs_det_jacobian(pyaten.tensor(zz), st_p(pyaten.tensor(zz))),
         st_t.log_abs_det_jacobian(torch.tensor(zz), st_t(torch.tensor(zz))))
    for registry in ("biject_to", "transform_to"):
        for c_p, c_t in [(PD.constraints.corr_cholesky, TD.constraints.corr_cholesky),
                         (PD.constraints.cat([PD.constraints.positive, PD.constraints.real],
                                             0, [1, 2]),
                          TD.constraints.cat([TD.constraints.positive, TD.constraints.real],
                                             0, [1, 2]))]:
            assert type(getattr(PD, registry)(c_p)).__name__ == type(
                getattr(TD, registry)(c_t)).__name__
