"""Sparse layouts (COO, CSR, CSC, BSR, BSC) against PyTorch: construction, conversions, parts,
printing, the key sets and dispatch tables, operators, gradients and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.dispatch as pd

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
warnings.filterwarnings("ignore", message=".*Sparse.*beta.*")

DENSE = np.array([[0.0, 1.0, 0.0, 0.0], [2.0, 0.0, 3.0, 0.0], [0.0, 0.0, 0.0, 4.0],
                  [5.0, 0.0, 0.0, 0.0]], dtype=np.float32)


def both(array: np.ndarray):
    return pyaten.tensor(array.tolist(), dtype=getattr(pyaten, str(array.dtype))), \
        torch.tensor(array)


def as_np(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t.detach().numpy())


def assert_same_sparse(ours, theirs) -> None:
    """Same layout, size, dtype, nnz, parts and dense values."""
    assert ours.layout.name == str(theirs.layout).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    if theirs.layout == torch.strided:
        np.testing.assert_allclose(as_np(ours), as_np(theirs), rtol=1e-6, atol=1e-6)
        return
    assert ours._nnz() == theirs._nnz()
    assert ours.sparse_dim() == theirs.sparse_dim() and ours.dense_dim() == theirs.dense_dim()
    if theirs.layout == torch.sparse_coo:
        assert ours.is_coalesced() == theirs.is_coalesced()
        pairs = [(ours._indices(), theirs._indices()), (ours._values(), theirs._values())]
    elif theirs.layout in (torch.sparse_csr, torch.sparse_bsr):
        pairs = [(ours.crow_indices(), theirs.crow_indices()),
                 (ours.col_indices(), theirs.col_indices()), (ours.values(), theirs.values())]
    else:
        pairs = [(ours.ccol_indices(), theirs.ccol_indices()),
                 (ours.row_indices(), theirs.row_indices()), (ours.values(), theirs.values())]
    for a, b in pairs:
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(as_np(a), as_np(b), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(as_np(ours.to_dense()), as_np(theirs.to_dense()), rtol=1e-6,
                               atol=1e-6)


def same_error(fn_ours, fn_theirs) -> None:
    with pytest.raises(Exception) as theirs:
        fn_theirs()
    with pytest.raises(type(theirs.value)) as ours:
        fn_ours()
    # the first sentence: the dispatcher's "Could not run" error goes on differently
    assert str(ours.value).split(". ")[0] == str(theirs.value).split(". ")[0]


CONVERSIONS = [
    ("to_sparse", ()), ("to_sparse", (1,)), ("to_sparse_csr", ()),
    ("to_sparse_csc", ()), ("to_sparse_bsr", ((2, 2),)), ("to_sparse_bsc", ((2, 1),)),
    ("to_sparse_bsr", ((1, 4),)),
]


@pytest.mark.parametrize("method,args", CONVERSIONS)
def test_conversions_from_dense_match_torch(method: str, args: tuple) -> None:
    ours, theirs = both(DENSE)
    assert_same_sparse(getattr(ours, method)(*args), getattr(theirs, method)(*args))


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr", "sparse_csc"])
def test_to_sparse_layout_keyword(layout: str) -> None:
    ours, theirs = both(DENSE)
    assert_same_sparse(ours.to_sparse(layout=getattr(pyaten, layout)),
                       theirs.to_sparse(layout=getattr(torch, layout)))


@pytest.mark.parametrize("source", ["to_sparse", "to_sparse_csr", "to_sparse_csc"])
@pytest.mark.parametrize("target", ["to_sparse", "to_sparse_csr", "to_sparse_csc"])
def test_conversions_between_layouts(source: str, target: str) -> None:
    ours, theirs = both(DENSE)
    assert_same_sparse(getattr(getattr(ours, source)(), target)(),
                       getattr(getattr(theirs, source)(), target)())


def test_block_layouts_to_coo_and_back() -> None:
    ours, theirs = both(DENSE)
    assert_same_sparse(ours.to_sparse_bsr((2, 2)).to_sparse(),
                       theirs.to_sparse_bsr((2, 2)).to_sparse())
    assert_same_sparse(ours.to_sparse_bsc((1, 2)).to_sparse(),
                       theirs.to_sparse_bsc((1, 2)).to_sparse())
    assert_same_sparse(ours.to_sparse_csr().to_sparse_bsr((1, 2)),
                       theirs.to_sparse_csr().to_sparse_bsr((1, 2)))
    same_error(lambda: ours.to_sparse_bsr((2, 2)).to_sparse_csr(),
               lambda: theirs.to_sparse_bsr((2, 2)).to_sparse_csr())


def test_key_sets_are_torchs() -> None:
    ours, theirs = both(DENSE)
    for method in ("to_sparse", "to_sparse_csr", "to_sparse_csc"):
        assert repr(pd.DispatchKeySet.from_raw(getattr(ours, method)()._keyset)) == repr(
            torch._C._dispatch_keys(getattr(theirs, method)()))


def test_layout_answers() -> None:
    ours, _ = both(DENSE)
    coo, csr, csc = ours.to_sparse(), ours.to_sparse_csr(), ours.to_sparse_csc()
    assert (coo.is_sparse, coo.is_sparse_csr) == (True, False)
    assert (csr.is_sparse, csr.is_sparse_csr) == (False, True)
    assert (csc.is_sparse, csc.is_sparse_csr) == (False, False)
    assert ours.layout is pyaten.strided and coo.layout is pyaten.sparse_coo
    assert isinstance(coo, pyaten.Tensor)


def test_coo_factory_and_coalesce() -> None:
    idx = [[1, 0, 1, 2], [0, 2, 0, 1]]
    vals = [1.0, 2.0, 3.0, 4.0]
    ours = pyaten.sparse_coo_tensor(pyaten.tensor(idx), pyaten.tensor(vals), (3, 3))
    theirs = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), (3, 3))
    assert_same_sparse(ours, theirs)
    assert_same_sparse(ours.coalesce(), theirs.coalesce())
    inferred = pyaten.sparse_coo_tensor(pyaten.tensor(idx), pyaten.tensor(vals))
    assert tuple(inferred.shape) == tuple(torch.sparse_coo_tensor(idx, vals).shape)
    empty = pyaten.sparse_coo_tensor((2, 3))
    assert_same_sparse(empty, torch.sparse_coo_tensor(size=(2, 3)))


def test_coo_with_dense_dims() -> None:
    array = np.arange(24, dtype=np.float64).reshape(2, 3, 4) % 5
    array[1] = 0
    ours, theirs = both(array)
    assert_same_sparse(ours.to_sparse(2), theirs.to_sparse(2))
    assert_same_sparse(ours.to_sparse(dense_dim=2), theirs.to_sparse(dense_dim=2))


@pytest.mark.parametrize("layout", ["csr", "csc", "bsr", "bsc"])
def test_compressed_factories(layout: str) -> None:
    dense = torch.tensor(DENSE)
    args = ((2, 2),) if layout[0] == "b" else ()
    made = getattr(dense, f"to_sparse_{layout}")(*args)
    if layout in ("csr", "bsr"):
        parts = (made.crow_indices(), made.col_indices(), made.values())
    else:
        parts = (made.ccol_indices(), made.row_indices(), made.values())
    ours_parts = [pyaten.tensor(p.numpy().tolist(), dtype=getattr(pyaten, str(p.dtype)[6:]))
                  for p in parts]
    factory = getattr(pyaten, f"sparse_{layout}_tensor")
    assert_same_sparse(factory(*ours_parts, (4, 4)), made)
    assert_same_sparse(factory(*ours_parts), getattr(torch, f"sparse_{layout}_tensor")(*parts))
    layout_token = getattr(pyaten, f"sparse_{layout}")
    assert_same_sparse(pyaten.sparse_compressed_tensor(*ours_parts, (4, 4), layout=layout_token),
                       made)


def test_printing_matches_torch() -> None:
    for array in (DENSE, DENSE.astype(np.float64), np.zeros((2, 3), np.float32),
                  DENSE.astype(np.int64)):
        ours, theirs = both(array)
        for method, args in CONVERSIONS:
            if array.shape != (4, 4) and method.startswith("to_sparse_b"):
                continue
            text = repr(getattr(theirs, method)(*args)).replace("torch.", "pyaten.")
            assert repr(getattr(ours, method)(*args)) == text, method


ERRORS = [
    ("to_sparse(3)", lambda m: m(DENSE).to_sparse(3)),
    ("to_sparse(0)", lambda m: m(DENSE).to_sparse(0)),
    ("bsr without blocksize", lambda m: m(DENSE).to_sparse(layout=m.sparse_bsr)),
    ("bsr bad blocksize", lambda m: m(DENSE).to_sparse_bsr((3, 3))),
    ("indices of dense", lambda m: m(DENSE).indices()),
    ("values of dense", lambda m: m(DENSE).values()),
    ("crow of coo", lambda m: m(DENSE).to_sparse().crow_indices()),
    ("col of csc", lambda m: m(DENSE).to_sparse_csc().col_indices()),
    ("coalesce of csr", lambda m: m(DENSE).to_sparse_csr().coalesce()),
    ("is_coalesced of dense", lambda m: m(DENSE).is_coalesced()),
    ("to_dense dtype", lambda m: m(DENSE).to_sparse().to_dense(m.float64)),
    ("indices uncoalesced", lambda m: m.sparse_coo_tensor(
        m.tensor([[1, 0, 1]]), m.tensor([1.0, 2.0, 3.0])).indices()),
    ("nnz mismatch", lambda m: m.sparse_coo_tensor(
        m.tensor([[0, 1]]), m.tensor([1.0, 2.0, 3.0]), (2,))),
    ("size rank", lambda m: m.sparse_coo_tensor(
        m.tensor([[0, 1], [0, 1]]), m.tensor([1.0, 2.0]), (2,))),
    ("compressed without layout", lambda m: m.sparse_compressed_tensor(
        m.tensor([0, 1, 2]), m.tensor([0, 1]), m.tensor([1.0, 2.0]), (2, 2))),
    ("to_sparse sparse_dim of coo", lambda m: m(DENSE).to_sparse().to_sparse(1)),
    ("numpy of sparse", lambda m: m(DENSE).to_sparse().numpy()),
    ("missing kernel", lambda m: m(DENSE).to_sparse().cumsum(0)),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name: str, call) -> None:
    def ours_module(array=None):  # noqa: ANN001, ANN202
        return pyaten

    class Ours:
        def __call__(self, array):  # noqa: ANN001, ANN204
            return pyaten.tensor(array.tolist())

        def __getattr__(self, name):  # noqa: ANN001, ANN204
            return getattr(pyaten, name)

    class Theirs:
        def __call__(self, array):  # noqa: ANN001, ANN204
            return torch.tensor(array)

        def __getattr__(self, name):  # noqa: ANN001, ANN204
            return getattr(torch, name)

    same_error(lambda: call(Ours()), lambda: call(Theirs()))


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 6), cols=st.integers(1, 6), density=st.floats(0, 1),
       seed=st.integers(0, 2**16))
def test_random_conversions_round_trip(rows: int, cols: int, density: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    array = (rng.standard_normal((rows, cols)) * (rng.random((rows, cols)) < density))
    array = array.astype(np.float32)
    ours, theirs = both(array)
    for method in ("to_sparse", "to_sparse_csr", "to_sparse_csc"):
        assert_same_sparse(getattr(ours, method)(), getattr(theirs, method)())


# --- operators -------------------------------------------------------------------------------

UNCOALESCED = ([[1, 0, 1, 3], [0, 2, 0, 1]], [1.0, -2.0, 3.0, 0.5])


def uncoalesced(module):
    idx, vals = UNCOALESCED
    return module.sparse_coo_tensor(module.tensor(idx), module.tensor(vals), (4, 4))


UNARY = ["abs", "neg", "relu", "sin", "sinh", "tan", "tanh", "asinh", "atan", "sqrt", "expm1",
         "log1p", "trunc", "floor", "ceil", "sign", "sgn", "frac", "round", "deg2rad",
         "rad2deg"]


@pytest.mark.parametrize("name", UNARY)
def test_pointwise_family(name: str) -> None:
    ours, theirs = both(DENSE - 1.5 * (DENSE > 2))
    for method in ("to_sparse", "to_sparse_csr"):
        assert_same_sparse(getattr(getattr(ours, method)(), name)(),
                           getattr(getattr(theirs, method)(), name)())
    assert_same_sparse(getattr(uncoalesced(pyaten), name)(), getattr(uncoalesced(torch), name)())


BINARY = [
    ("sparse * dense", lambda m, a, b: a.to_sparse() * b),
    ("dense * sparse", lambda m, a, b: a * b.to_sparse()),
    ("sparse * sparse", lambda m, a, b: a.to_sparse() * b.to_sparse()),
    ("sparse * 2", lambda m, a, b: a.to_sparse() * 2),
    ("csr * 2.5", lambda m, a, b: a.to_sparse_csr() * 2.5),
    ("csr * csr", lambda m, a, b: a.to_sparse_csr() * b.to_sparse_csr()),
    ("sparse + sparse", lambda m, a, b: a.to_sparse() + b.to_sparse()),
    ("sparse + uncoalesced", lambda m, a, b: a.to_sparse() + uncoalesced(m)),
    ("add alpha", lambda m, a, b: m.add(a.to_sparse(), b.to_sparse(), alpha=3)),
    ("dense + sparse", lambda m, a, b: a + b.to_sparse()),
    ("csr + csr", lambda m, a, b: a.to_sparse_csr() + b.to_sparse_csr()),
    ("dense + csr", lambda m, a, b: a + b.to_sparse_csr()),
    ("sum", lambda m, a, b: a.to_sparse().sum()),
    ("sum dim", lambda m, a, b: a.to_sparse().sum(0)),
    ("sum dims", lambda m, a, b: a.to_sparse().sum((0, 1))),
    ("sum keepdim", lambda m, a, b: a.to_sparse().sum(1, keepdim=True)),
    ("sum csr", lambda m, a, b: a.to_sparse_csr().sum()),
    ("sparse.sum", lambda m, a, b: m.sparse.sum(a.to_sparse())),
    ("sparse.sum dim", lambda m, a, b: m.sparse.sum(a.to_sparse(), 1)),
    ("mm coo dense", lambda m, a, b: m.mm(a.to_sparse(), b)),
    ("mm dense coo", lambda m, a, b: m.mm(a, b.to_sparse())),
    ("mm coo coo", lambda m, a, b: m.mm(a.to_sparse(), b.to_sparse())),
    ("mm csr dense", lambda m, a, b: m.mm(a.to_sparse_csr(), b)),
    ("mm csc dense", lambda m, a, b: m.mm(a.to_sparse_csc(), b)),
    ("mm bsr dense", lambda m, a, b: m.mm(a.to_sparse_bsr((2, 2)), b)),
    ("sparse.mm", lambda m, a, b: m.sparse.mm(a.to_sparse(), b)),
    ("sparse.mm csr", lambda m, a, b: m.sparse.mm(a.to_sparse_csr(), b)),
    ("addmm", lambda m, a, b: m.addmm(b, a.to_sparse(), b, beta=2, alpha=0.5)),
    ("addmm csr", lambda m, a, b: m.addmm(b, a.to_sparse_csr(), b)),
    ("sparse.addmm", lambda m, a, b: m.sparse.addmm(b, a.to_sparse(), b)),
    ("sampled_addmm", lambda m, a, b: m.sparse.sampled_addmm(a.to_sparse_csr(), b, b,
                                                             beta=0.5, alpha=2)),
    ("softmax", lambda m, a, b: m.sparse.softmax(a.to_sparse(), 1)),
    ("softmax dim0", lambda m, a, b: m.sparse.softmax(a.to_sparse(), 0)),
    ("log_softmax", lambda m, a, b: m.sparse.log_softmax(a.to_sparse(), 1)),
    ("t", lambda m, a, b: a.to_sparse().t()),
    ("t csr", lambda m, a, b: a.to_sparse_csr().t()),
    ("transpose", lambda m, a, b: uncoalesced(m).transpose(0, 1)),
    ("index_select", lambda m, a, b: a.to_sparse().index_select(1, m.tensor([3, 0, 3]))),
    ("index_select dim0", lambda m, a, b: uncoalesced(m).index_select(0, m.tensor([1, 3]))),
]


@pytest.mark.parametrize("name,call", BINARY, ids=[b[0] for b in BINARY])
def test_operators_match_torch(name: str, call) -> None:
    other = (DENSE.T * 2 + 1).astype(np.float32)
    a, ta = both(DENSE)
    b, tb = both(other)
    ours, theirs = call(pyaten, a, b), call(torch, ta, tb)
    if theirs.layout == torch.sparse_coo and name.startswith(("sparse +", "t", "index")):
        # the same entries, in torch's order up to coalescing
        assert ours.is_coalesced() == theirs.is_coalesced()
        if name != "sparse + uncoalesced":  # torch keeps one fewer duplicate there
            assert ours._nnz() == theirs._nnz()
        np.testing.assert_allclose(as_np(ours.to_dense()), as_np(theirs.to_dense()), rtol=1e-6)
        assert_same_sparse(ours.coalesce(), theirs.coalesce())
        return
    assert_same_sparse(ours, theirs)


OP_ERRORS = [
    ("add sparse dense", lambda m: m(DENSE).to_sparse() + m(DENSE)),
    ("sum csr dim", lambda m: m(DENSE).to_sparse_csr().sum(0)),
    ("mm shapes", lambda m: m.mm(m(DENSE).to_sparse(), m(DENSE[:3]))),
    ("mm bsc dense", lambda m: m.mm(m(DENSE).to_sparse_bsc((2, 2)), m(DENSE))),
    ("missing cumprod kernel", lambda m: m(DENSE).to_sparse().cumprod(0)),
    ("missing view kernel", lambda m: m(DENSE).to_sparse().view(16)),
]


@pytest.mark.parametrize("name,call", OP_ERRORS, ids=[e[0] for e in OP_ERRORS])
def test_operator_errors_match_torch(name: str, call) -> None:
    class Ours:
        def __call__(self, array):  # noqa: ANN001, ANN204
            return pyaten.tensor(array.tolist())

        def __getattr__(self, name):  # noqa: ANN001, ANN204
            return getattr(pyaten, name)

    class Theirs:
        def __call__(self, array):  # noqa: ANN001, ANN204
            return torch.tensor(array)

        def __getattr__(self, name):  # noqa: ANN001, ANN204
            return getattr(torch, name)

    same_error(lambda: call(Ours()), lambda: call(Theirs()))


@pytest.mark.parametrize("qualname,key,kernel", [
    ("aten::add.Tensor", "SparseCPU", "SparseCPU"), ("aten::add.Tensor", "SparseCsrCPU",
                                                     "SparseCsrCPU"),
    ("aten::mm", "SparseCPU", "SparseCPU"), ("aten::_to_dense", "SparseCsrMeta",
                                             "SparseCsrMeta"),
    ("aten::values", "SparseCPU", "SparseCPU"), ("aten::values", "CPU",
                                                 "CompositeExplicitAutograd"),
    ("aten::sin", "SparseCPU", "SparseCPU"), ("aten::cumsum", "SparseCPU", "missing"),
])
def test_dispatch_tables_have_torchs_sparse_entries(qualname: str, key: str, kernel: str) -> None:
    assert pd.dump_table(qualname)[key] == kernel
    line = [x for x in torch._C._dispatch_dump_table(qualname).splitlines()
            if x.startswith(key + ":")]
    assert bool(line) == (kernel != "missing")


def test_explain_shows_the_sparse_kernel() -> None:
    s = pyaten.tensor(DENSE.tolist()).to_sparse()
    with pd.trace() as t:
        s.neg()
    keys = [node["key"] for node in t.as_dicts()]
    assert "SparseCPU" in str(t.as_dicts()) and keys


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 8), k=st.integers(1, 8), m=st.integers(1, 5), density=st.floats(0, 1),
       seed=st.integers(0, 2**16))
def test_random_sparse_mm(n: int, k: int, m: int, density: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((n, k)) * (rng.random((n, k)) < density)).astype(np.float64)
    b = rng.standard_normal((k, m))
    (oa, ta), (ob, tb) = both(a), both(b)
    for method in ("to_sparse", "to_sparse_csr"):
        assert_same_sparse(pyaten.sparse.mm(getattr(oa, method)(), ob),
                           torch.sparse.mm(getattr(ta, method)(), tb))
    assert_same_sparse(oa.to_sparse() + ob.t().t().to_sparse() if n == k == m else
                       oa.to_sparse().sum(0), ta.to_sparse() + tb.t().t().to_sparse()
                       if n == k == m else ta.to_sparse().sum(0))


# --- autograd --------------------------------------------------------------------------------

GRAD_CASES = [
    ("sparse.mm", lambda m, s, d: m.sparse.mm(s, d)),
    ("mm", lambda m, s, d: m.mm(s, d)),
    ("to_dense", lambda m, s, d: s.to_dense() * m.arange(16.0).reshape(4, 4)),
    ("values", lambda m, s, d: s.values() * m.arange(5.0)),
]


@pytest.mark.parametrize("layout", ["to_sparse", "to_sparse_csr"])
@pytest.mark.parametrize("name,call", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(layout: str, name: str, call) -> None:
    """The gradient of a sparse input has torch's layout (sparse, the input's pattern, for
    sparse.mm, to_dense and values; dense for mm) and values."""
    dense = np.arange(16, dtype=np.float32).reshape(4, 4) % 3
    grads = []
    for module, make in ((pyaten, lambda a: pyaten.tensor(a.tolist())), (torch, torch.tensor)):
        s = getattr(make(DENSE), layout)().requires_grad_()
        d = make(dense).requires_grad_()
        call(module, s, d).sum().backward()
        grads.append((s.grad, d.grad))
    (ours_s, ours_d), (theirs_s, theirs_d) = grads
    if theirs_s.layout == torch.sparse_coo:  # torch's gradient is flagged uncoalesced
        ours_s, theirs_s = ours_s.coalesce(), theirs_s.coalesce()
    assert_same_sparse(ours_s, theirs_s)
    if theirs_d is not None:
        np.testing.assert_allclose(as_np(ours_d), as_np(theirs_d), rtol=1e-6)


COO_GRAD_CASES = [
    ("sparse.sum", lambda m, s: m.sparse.sum(s)),
    ("sparse.sum dim", lambda m, s: (m.sparse.sum(s, 1).to_dense() * m.arange(4.0)).sum()),
    ("softmax", lambda m, s: (m.sparse.softmax(s, 1).to_dense() * m.arange(16.0).reshape(4, 4)
                              ).sum()),
    ("log_softmax", lambda m, s: (m.sparse.log_softmax(s, 0).to_dense()
                                  * m.arange(16.0).reshape(4, 4)).sum()),
    ("mul add", lambda m, s: ((s * 2 + s).to_dense() * m.arange(16.0).reshape(4, 4)).sum()),
]


@pytest.mark.parametrize("name,call", COO_GRAD_CASES, ids=[c[0] for c in COO_GRAD_CASES])
def test_coo_gradients_match_torch(name: str, call) -> None:
    grads = []
    for module, make in ((pyaten, lambda a: pyaten.tensor(a.tolist())), (torch, torch.tensor)):
        s = make(DENSE).to_sparse().requires_grad_()
        call(module, s).backward()
        grads.append(s.grad)
    assert_same_sparse(grads[0].coalesce(), grads[1].coalesce())


def test_grad_fn_names() -> None:
    s = pyaten.tensor(DENSE.tolist()).to_sparse().requires_grad_()
    assert type(pyaten.sparse.mm(s, pyaten.ones(4, 2)).grad_fn).__name__ == \
        type(torch.sparse.mm(torch.tensor(DENSE).to_sparse().requires_grad_(),
                             torch.ones(4, 2)).grad_fn).__name__
    text = repr(s).replace("pyaten.", "torch.")
    assert text == repr(torch.tensor(DENSE).to_sparse().requires_grad_())


# --- save / load -----------------------------------------------------------------------------


def test_save_load_round_trip_and_torch_interop(tmp_path) -> None:
    ours, theirs = both(DENSE)
    made = {"coo": ours.to_sparse(), "csr": ours.to_sparse_csr(), "bsc": ours.to_sparse_bsc((2, 2))}
    path = tmp_path / "sparse.pt"
    pyaten.save(made, path)
    for name, loaded in pyaten.load(path).items():
        np.testing.assert_array_equal(as_np(loaded.to_dense()), DENSE)
        assert loaded.layout is made[name].layout
    for name, loaded in torch.load(path).items():  # PyTorch reads pyaten's file
        assert_same_sparse(made[name], loaded)
    torch.save({"coo": theirs.to_sparse(), "csc": theirs.to_sparse_csc()}, path)
    for name, loaded in pyaten.load(path).items():  # and pyaten reads PyTorch's
        assert_same_sparse(loaded, getattr(theirs, "to_sparse" if name == "coo" else
                                           "to_sparse_csc")())


# --- the Python factories: array-likes, keywords, check_invariants --------------------------

FACTORY_CASES = [
    ("coo lists", lambda m: m.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], (2, 3))),
    ("coo int values", lambda m: m.sparse_coo_tensor([[0, 1]], [1, 2], (3,))),
    ("coo dtype", lambda m: m.sparse_coo_tensor([[0, 1]], [1, 2], (3,), dtype=m.float64)),
    ("coo size only", lambda m: m.sparse_coo_tensor((2, 3))),
    ("coo size keyword", lambda m: m.sparse_coo_tensor([[0, 1]], [1.0, 2.0], size=(4,))),
    ("csr lists", lambda m: m.sparse_csr_tensor([0, 1, 2], [1, 0], [1.0, 2.0], (2, 2))),
    ("csc inferred", lambda m: m.sparse_csc_tensor([0, 1, 2], [1, 0], [1.0, 2.0])),
    ("compressed", lambda m: m.sparse_compressed_tensor([0, 1, 2], [1, 0], [1.0, 2.0], (2, 2),
                                                        layout=m.sparse_csr)),
]


@pytest.mark.parametrize("name,call", FACTORY_CASES, ids=[c[0] for c in FACTORY_CASES])
def test_factories_take_array_likes(name: str, call) -> None:
    assert_same_sparse(call(pyaten), call(torch))


INVARIANTS = [
    ("coo out of range", lambda m: m.sparse_coo_tensor([[0, 5]], [1.0, 2], (2,),
                                                       check_invariants=True)),
    ("coo negative", lambda m: m.sparse_coo_tensor([[0, -1]], [1.0, 2], (2,),
                                                   check_invariants=True)),
    ("crow first", lambda m: m.sparse_csr_tensor([1, 2, 2], [0, 1], [1.0, 2], (2, 2),
                                                 check_invariants=True)),
    ("crow last", lambda m: m.sparse_csr_tensor([0, 1, 1], [0, 1], [1.0, 2], (2, 2),
                                                check_invariants=True)),
    ("crow length", lambda m: m.sparse_csr_tensor([0, 1, 2, 2], [0, 1], [1.0, 2], (2, 2),
                                                  check_invariants=True)),
    ("col range", lambda m: m.sparse_csr_tensor([0, 1, 2], [0, 5], [1.0, 2], (2, 2),
                                                check_invariants=True)),
    ("col order", lambda m: m.sparse_csr_tensor([0, 2, 2], [1, 0], [1.0, 2], (2, 2),
                                                check_invariants=True)),
    ("csc row order", lambda m: m.sparse_csc_tensor([0, 2, 2], [1, 1], [1.0, 2], (2, 2),
                                                    check_invariants=True)),
]


@pytest.mark.parametrize("name,call", INVARIANTS, ids=[c[0] for c in INVARIANTS])
def test_check_invariants_errors(name: str, call) -> None:
    same_error(lambda: call(pyaten), lambda: call(torch))


def test_every_sparse_kernel_is_at_a_key_torch_has() -> None:
    """Each kernel pyaten registers directly at a sparse key is registered there in PyTorch
    too (the same native_functions.yaml entries, minus the other devices)."""
    from pyaten.declarations import load_native_functions
    from pyaten.native.loader import NATIVE_YAML

    keys = ("SparseCPU", "SparseCsrCPU", "SparseMeta", "SparseCsrMeta")
    problems = []
    for record in load_native_functions(str(NATIVE_YAML)):
        name = record.func.name
        qualname = f"aten::{name.name}" + (f".{name.overload}" if name.overload else "")
        ours = pd.dump_table(qualname)
        theirs = {line.split(": ", 1)[0]: line for line in
                  torch._C._dispatch_dump_table(qualname).splitlines() if ": " in line}
        for key in keys:
            if ours.get(key) == key and not theirs.get(key, "").endswith("[kernel]"):
                problems.append(f"{qualname} {key}")
    assert not problems, problems


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 5), density=st.floats(0, 1),
       seed=st.integers(0, 2**16), dim=st.sampled_from([0, 1, -1]))
def test_random_add_mul_sum(rows: int, cols: int, density: float, seed: int, dim: int) -> None:
    rng = np.random.default_rng(seed)

    def draw():
        mask = rng.random((rows, cols)) < density
        return (rng.standard_normal((rows, cols)) * mask).astype(np.float32)

    (a, ta), (b, tb) = both(draw()), both(draw())
    assert_same_sparse(a.to_sparse() + b.to_sparse(), ta.to_sparse() + tb.to_sparse())
    assert_same_sparse(a.to_sparse() * b.to_sparse(), ta.to_sparse() * tb.to_sparse())
    assert_same_sparse(a.to_sparse() * b, ta.to_sparse() * tb)
    assert_same_sparse(a.to_sparse().sum(dim), ta.to_sparse().sum(dim))
    assert_same_sparse(a.to_sparse_csr().relu(), ta.to_sparse_csr().relu())


def test_meta_sparse_tensors_print_and_answer_as_torch() -> None:
    ours = pyaten.sparse_coo_tensor((2, 3), device="meta")
    theirs = torch.sparse_coo_tensor(size=(2, 3), device="meta")
    assert repr(ours) == repr(theirs).replace("torch.", "pyaten.")
    assert (ours._nnz(), ours.sparse_dim(), ours.is_coalesced()) == (
        theirs._nnz(), theirs.sparse_dim(), theirs.is_coalesced())
    assert tuple(ours.values().shape) == tuple(theirs.values().shape)


def test_strided_tensor_layout_answers() -> None:
    ours, theirs = both(DENSE)
    assert (ours.is_sparse, ours.is_sparse_csr) == (theirs.is_sparse, theirs.is_sparse_csr)
    assert ours.sparse_dim() == theirs.sparse_dim() and ours.dense_dim() == theirs.dense_dim()
    assert ours.to_dense() is ours and theirs.to_dense() is theirs


def test_products_see_in_place_writes_to_the_parts() -> None:
    ours, theirs = both(DENSE)
    weights = np.arange(8, dtype=np.float32).reshape(4, 2)
    for method in ("to_sparse", "to_sparse_csr"):
        s, t = getattr(ours, method)(), getattr(theirs, method)()
        pyaten.sparse.mm(s, pyaten.tensor(weights.tolist()))  # builds the cached SciPy form
        s.values().mul_(3)
        t.values().mul_(3)
        assert_same_sparse(pyaten.sparse.mm(s, pyaten.tensor(weights.tolist())),
                           torch.sparse.mm(t, torch.tensor(weights)))


def test_detach_keeps_the_layout() -> None:
    ours, theirs = both(DENSE)
    for method in ("to_sparse", "to_sparse_csr"):
        o = getattr(ours, method)().requires_grad_()
        t = getattr(theirs, method)().requires_grad_()
        assert_same_sparse((o * 2).detach(), (t * 2).detach())
        assert not o.detach().requires_grad


# --- cat and bmm on SparseCPU (dispatch rows PyTorch has) -------------------------------------

def _coo_pair(array: np.ndarray, sparse_dim: int | None = None):
    ours, theirs = both(array)
    if sparse_dim is None:
        return ours.to_sparse(), theirs.to_sparse()
    return ours.to_sparse(sparse_dim), theirs.to_sparse(sparse_dim)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 999), dim=st.integers(-3, 2), sparse_dim=st.sampled_from([None, 1, 2]),
       count=st.integers(1, 3), wide=st.booleans())
def test_cat_sparse_as_torch(seed, dim, sparse_dim, count, wide) -> None:
    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(count):
        shape = [2, 3, 2]
        shape[dim % 3] += i
        array = rng.integers(-2, 3, size=shape).astype(np.float64 if wide and i else np.float32)
        array[rng.random(shape) < 0.5] = 0
        pairs.append(_coo_pair(array, sparse_dim))
    ours = pyaten.cat([p[0] for p in pairs], dim)
    theirs = torch.cat([p[1] for p in pairs], dim)
    assert_same_sparse(ours, theirs)


def test_cat_sparse_errors_as_torch() -> None:
    a, ta = _coo_pair(DENSE)
    b, tb = _coo_pair(DENSE[:3, :3])
    c, tc = _coo_pair(DENSE, 1)
    cases = [
        (lambda: pyaten.cat([a, pyaten.ones(4, 4)]), lambda: torch.cat([ta, torch.ones(4, 4)])),
        (lambda: pyaten.cat([a, b]), lambda: torch.cat([ta, tb])),
        (lambda: pyaten.cat([a, c]), lambda: torch.cat([ta, tc])),
        (lambda: pyaten.cat([a, a], 2), lambda: torch.cat([ta, ta], 2)),
    ]
    for ours_call, theirs_call in cases:
        with pytest.raises(Exception) as expected:
            theirs_call()
        with pytest.raises(type(expected.value), match=re_escape(str(expected.value))):
            ours_call()


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 999), b=st.integers(1, 3), n=st.integers(1, 5), m=st.integers(1, 5),
       p=st.integers(1, 4), dtype=st.sampled_from(["float32", "float64", "int64"]))
def test_bmm_sparse_as_torch(seed, b, n, m, p, dtype) -> None:
    rng = np.random.default_rng(seed)
    left = rng.integers(-3, 4, size=(b, n, m)).astype(dtype)
    left[rng.random(left.shape) < 0.6] = 0
    right = rng.integers(-3, 4, size=(b, m, p)).astype(dtype)
    (sl, tsl), (dr, tdr) = _coo_pair(left), both(right)
    ours, theirs = pyaten.bmm(sl, dr), torch.bmm(tsl, tdr)
    assert ours.layout is pyaten.strided and tuple(ours.stride()) == tuple(theirs.stride())
    assert_same_sparse(ours, theirs)


def test_bmm_sparse_errors_and_gradient_as_torch() -> None:
    rng = np.random.default_rng(3)
    left = rng.standard_normal((2, 3, 4)).astype(np.float32)
    left[left < 0] = 0
    right = rng.standard_normal((2, 4, 5)).astype(np.float32)
    (sl, tsl), (dr, tdr) = _coo_pair(left), both(right)
    (h, th), (s2, ts2) = _coo_pair(left, 2), _coo_pair(left[0])
    cases = [
        (lambda: pyaten.bmm(sl, dr.to_sparse()), lambda: torch.bmm(tsl, tdr.to_sparse())),
        (lambda: pyaten.bmm(h, dr), lambda: torch.bmm(th, tdr)),
        (lambda: pyaten.bmm(s2, dr), lambda: torch.bmm(ts2, tdr)),
        (lambda: pyaten.bmm(sl, dr[0]), lambda: torch.bmm(tsl, tdr[0])),
        (lambda: pyaten.bmm(sl, dr[:1]), lambda: torch.bmm(tsl, tdr[:1])),
        (lambda: pyaten.bmm(sl, dr.transpose(1, 2)), lambda: torch.bmm(tsl, tdr.transpose(1, 2))),
        (lambda: pyaten.bmm(sl, dr.double()), lambda: torch.bmm(tsl, tdr.double())),
        (lambda: pyaten.bmm(dr, sl), lambda: torch.bmm(tdr, tsl)),
    ]
    for ours_call, theirs_call in cases:
        with pytest.raises(Exception) as expected:
            theirs_call()
        with pytest.raises(type(expected.value), match=re_escape(str(expected.value))):
            ours_call()
    sl.requires_grad_(True)
    dr.requires_grad_(True)
    tsl.requires_grad_(True)
    tdr.requires_grad_(True)
    pyaten.bmm(sl, dr).sum().backward()
    torch.bmm(tsl, tdr).sum().backward()
    assert_same_sparse(sl.grad, tsl.grad)
    assert_same_sparse(dr.grad, tdr.grad)


# --- sparse masks of strided inputs in pyaten.masked -----------------------------------------

@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "mean", "softmax", "norm"])
@pytest.mark.parametrize("convert", ["to_sparse", "to_sparse_csr"])
def test_masked_with_a_sparse_mask_as_torch(name, convert) -> None:
    rng = np.random.default_rng(7)
    values = rng.standard_normal((3, 4)).astype(np.float32)
    mask = rng.random((3, 4)) < 0.5
    ours = getattr(pyaten.masked, name)(pyaten.from_numpy(values), 1,
                                        mask=getattr(pyaten.from_numpy(mask), convert)())
    theirs = getattr(torch.masked, name)(torch.from_numpy(values), 1,
                                         mask=getattr(torch.from_numpy(mask), convert)())
    assert ours.layout is pyaten.strided and theirs.layout == torch.strided
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, equal_nan=True)
    # a sparse mask of lower rank broadcasts, as PyTorch's
    row = pyaten.from_numpy(mask[0]).to_sparse()
    np.testing.assert_allclose(
        getattr(pyaten.masked, name)(pyaten.from_numpy(values), 1, mask=row).numpy(),
        getattr(torch.masked, name)(torch.from_numpy(values), 1,
                                    mask=torch.from_numpy(mask[0]).to_sparse()).numpy(),
        rtol=1e-6, equal_nan=True)
