"""The Python key against PyTorch 2.13: TorchDispatchMode, __torch_dispatch__ subclasses,
OpOverload handles, the handler's arguments, errors."""

from __future__ import annotations

import pytest
import torch
import torch.utils._python_dispatch as torch_pd
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.utils._python_dispatch as pyaten_pd
from pyaten.utils import _pytree
from tests._helpers import assert_same

LIBS = {"torch": (torch, torch_pd), "pyaten": (pyaten, pyaten_pd)}


def _log_mode(pd):
    class Log(pd.TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls.append(str(func))
            return func(*args, **(kwargs or {}))

    return Log


# Programs written once against the common API: `P` is torch or pyaten.
def _factories(P):
    return [P.zeros(2, 3), P.ones(4, dtype=P.float64), P.full((2,), 3.0), P.arange(5),
            P.empty(3).fill_(1.0), P.eye(3)]


def _pointwise(P):
    a, b = P.ones(2, 3), P.full((2, 3), 2.0)
    return [a + b, a * 2, a - b, b / a, P.exp(a), P.sigmoid(b), a.relu(), P.where(a > 0, a, b)]


def _reductions(P):
    a = P.ones(3, 4)
    return [a.sum(), a.sum(0), a.mean(dim=1, keepdim=True), a.amax(1), a.max(0).values,
            a.argmax(), P.var(a, 0), a.prod()]


def _views_inplace(P):
    a = P.zeros(4, 4)
    v = a.view(2, 8)
    t = a.t()
    a[0].add_(1)
    a.mul_(2)
    return [v, t, a.transpose(0, 1).contiguous(), a.reshape(16), a.unsqueeze(0), a.expand(2, 4, 4)]


def _indexing(P):
    a = P.arange(12.0).reshape(3, 4)
    i = P.tensor([0, 2])
    a[1, 2] = 5.0
    return [a[i], a[:, 1], a[a > 3], P.gather(a, 1, P.tensor([[0], [1], [2]])),
            a.index_select(0, i), a[1:, ::2]]


def _linear(P):
    P.manual_seed(0)
    m = P.nn.Linear(3, 2)
    return [m(P.ones(4, 3))]


def _conv2d(P):
    P.manual_seed(0)
    m = P.nn.Conv2d(1, 2, 3, padding=1)
    return [m(P.ones(1, 1, 4, 4))]


def _layer_norm(P):
    m = P.nn.LayerNorm(4)
    return [m(P.arange(8.0).reshape(2, 4))]


def _mha(P):
    P.manual_seed(0)
    m = P.nn.MultiheadAttention(4, 2, batch_first=True)
    x = P.ones(1, 3, 4)
    return [m(x, x, x)[0]]


def _mlp_backward(P):
    w1 = P.ones(3, 4, requires_grad=True)
    w2 = P.ones(4, 1, requires_grad=True)
    x = P.arange(6.0).reshape(2, 3)
    loss = (x @ w1).relu().matmul(w2).sum()
    loss.backward()
    return [loss, w1.grad, w2.grad]


def _mlp_cross_entropy(P):
    P.manual_seed(0)
    model = P.nn.Sequential(P.nn.Linear(3, 5), P.nn.Tanh(), P.nn.Linear(5, 2))
    x = P.ones(4, 3)
    y = P.tensor([0, 1, 1, 0])
    loss = P.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return [loss, model[0].weight.grad]


def _softmax_dropout_eval(P):
    a = P.arange(6.0).reshape(2, 3)
    return [P.softmax(a, 1), P.log_softmax(a, -1), P.nn.functional.dropout(a, 0.5, training=False)]


def _cat_stack_split(P):
    a, b = P.ones(2, 2), P.zeros(2, 2)
    return [P.cat([a, b]), P.stack([a, b], 1), *P.split(P.arange(6), 2), *a.chunk(2)]


def _matmul_family(P):
    a = P.ones(2, 3)
    b = P.ones(3, 4)
    return [a @ b, P.mm(a, b), P.addmm(P.zeros(2, 4), a, b), P.bmm(a[None], b[None]),
            P.matmul(P.ones(3), b)]


def _comparisons(P):
    a = P.arange(4)
    return [a == 2, a < 3, a.ge(1), P.eq(a, a), (a > 1).all(), (a > 2).any()]


def _type_conversions(P):
    a = P.arange(4)
    return [a.float(), a.to(P.float64), a.double().half(), a.clone(), a.bool()]


def _scans_sort(P):
    a = P.tensor([3.0, 1.0, 2.0])
    return [a.cumsum(0), P.sort(a).values, P.topk(a, 2).indices, a.cumprod(0)]


def _clamp_abs(P):
    a = P.tensor([-2.0, 0.5, 3.0])
    return [a.clamp(-1, 1), a.abs(), a.clamp_min(0), P.clip(a, max=2.0), a.sign()]


def _losses(P):
    a = P.tensor([[0.2, 0.8], [0.6, 0.4]])
    b = P.tensor([[0.0, 1.0], [1.0, 0.0]])
    F = P.nn.functional
    return [F.mse_loss(a, b), F.l1_loss(a, b), F.binary_cross_entropy(a, b),
            F.smooth_l1_loss(a, b)]


def _pooling(P):
    x = P.arange(16.0).reshape(1, 1, 4, 4)
    F = P.nn.functional
    return [F.max_pool2d(x, 2), F.avg_pool2d(x, 2), F.adaptive_avg_pool2d(x, 1)]


def _embedding(P):
    m = P.nn.Embedding(5, 3)
    P.nn.init.ones_(m.weight)
    return [m(P.tensor([1, 2, 4]))]


def _batch_norm_eval(P):
    m = P.nn.BatchNorm1d(3)
    m.eval()
    return [m(P.ones(2, 3))]


def _backward_of_views(P):
    a = P.ones(2, 3, requires_grad=True)
    (a.t().reshape(6) * 2).sum().backward()
    return [a.grad]


def _backward_twice_accumulates(P):
    a = P.ones(3, requires_grad=True)
    (a * 3).sum().backward()
    (a * a).sum().backward()
    return [a.grad]


def _no_grad_and_detach(P):
    a = P.ones(3, requires_grad=True)
    with P.no_grad():
        b = a * 2
    return [b, a.detach() + 1]


def _where_masked(P):
    a = P.arange(6.0)
    return [a.masked_fill(a > 2, 0.0), P.where(a > 3, a, 0.0), a.nonzero()]


def _integer_ops(P):
    a = P.arange(10)
    return [a // 3, a % 3, a.bitwise_and(5), a.pow(2), a * a]


def _random_shapes_only(P):
    P.manual_seed(0)
    return [P.rand(2, 3).shape, P.randn(4).shape, P.randint(0, 5, (3,)).shape]


def _in_place_on_leaf_grad_free(P):
    a = P.zeros(3)
    a.add_(1).mul_(3).sub_(P.ones(3))
    a.clamp_(0, 1)
    return [a]


def _unary_math(P):
    a = P.linspace(0.5, 2.0, 4)
    return [a.sqrt(), a.log(), P.sin(a), a.cos(), a.tanh(), a.rsqrt(), a.reciprocal()]


def _in_place_activations(P):
    a = P.linspace(-1.0, 1.0, 5)
    F = P.nn.functional
    F.relu(a.clone(), inplace=True)
    b = a.clone().sigmoid_()
    c = a.clone().tanh_()
    return [b, c, F.relu_(a.clone())]


def _gelu_silu(P):
    a = P.linspace(-2, 2, 5)
    F = P.nn.functional
    return [F.gelu(a), F.silu(a), F.leaky_relu(a, 0.1), F.elu(a), F.softplus(a)]


PROGRAMS = [
    _factories, _pointwise, _reductions, _views_inplace, _indexing, _linear, _conv2d,
    _layer_norm, _mha, _mlp_backward, _mlp_cross_entropy, _softmax_dropout_eval,
    _cat_stack_split, _matmul_family, _comparisons, _type_conversions, _scans_sort,
    _clamp_abs, _losses, _pooling, _embedding, _batch_norm_eval, _backward_of_views,
    _backward_twice_accumulates, _no_grad_and_detach, _where_masked, _integer_ops,
    _random_shapes_only, _in_place_on_leaf_grad_free, _unary_math, _in_place_activations,
    _gelu_silu,
]


def _logged(lib: str, program):
    P, pd = LIBS[lib]
    with _log_mode(pd)() as mode:
        results = program(P)
    return mode.calls, results


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__.strip("_") for p in PROGRAMS])
def test_logging_mode_sees_pytorchs_calls(program) -> None:
    ours, our_results = _logged("pyaten", program)
    theirs, their_results = _logged("torch", program)
    assert ours == theirs
    for a, b in zip(our_results, their_results):
        if isinstance(b, torch.Size):
            assert tuple(a) == tuple(b)
        else:
            assert_same(a, b)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__.strip("_") for p in PROGRAMS])
def test_results_under_a_mode_equal_plain_results(program) -> None:
    # Every fast path (bindings, structured kernels) runs both ways: with the mode on, each
    # call goes through the Python key first; the results must not change.
    pyaten.manual_seed(0)
    plain = program(pyaten)
    pyaten.manual_seed(0)
    _, moded = _logged("pyaten", program)
    for a, b in zip(moded, plain):
        assert type(a) is type(b)
        if isinstance(a, pyaten.Tensor):
            assert a.dtype == b.dtype and a.stride() == b.stride()
            assert a.equal(b) or (a.isnan() == b.isnan()).all()
        else:
            assert a == b


# -- the arguments a handler receives -----------------------------------------------------

def _seen(lib: str, fn):
    P, pd = LIBS[lib]
    seen = []

    class Capture(pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((str(func), func.__name__, func._overloadname, str(func.overloadpacket),
                         func.name(), types,
                         [type(a).__name__ if not isinstance(a, (list, tuple)) else
                          [type(x).__name__ for x in a] for a in args],
                         sorted((kwargs or {}).items())))
            return func(*args, **(kwargs or {}))

    with Capture():
        fn(P)
    return seen


@pytest.mark.parametrize("fn", [
    lambda P: P.ones(2) * 2,
    lambda P: P.add(P.ones(2), P.ones(2), alpha=3),
    lambda P: P.ones(2).sum(0, keepdim=True),
    lambda P: P.nn.functional.conv2d(P.ones(1, 1, 3, 3), P.ones(1, 1, 2, 2), stride=1),
    lambda P: P.nn.functional.max_pool2d(P.ones(1, 1, 4, 4), 2),
    lambda P: P.ones(3).to(P.float64),
    lambda P: P.cat([P.ones(1), P.ones(2)]),
    lambda P: P.ones(2, 2).transpose(0, 1),
    lambda P: P.ones(4).view(2, 2),
    lambda P: P.ones(3).clamp(min=0.5),
], ids=["mul_scalar", "add_alpha", "sum_keepdim", "conv2d", "max_pool2d", "to", "cat",
        "transpose", "view", "clamp"])
def test_handler_arguments_as_pytorch(fn) -> None:
    ours = [c for c in _seen("pyaten", fn) if not c[0].startswith("aten.ones")]
    theirs = [c for c in _seen("torch", fn) if not c[0].startswith("aten.ones")]
    assert [c[:7] for c in ours] == [c[:7] for c in theirs]
    for a, b in zip(ours, theirs):
        assert [k for k, _ in a[7]] == [k for k, _ in b[7]]


def test_op_overload_handles_as_pytorchs() -> None:
    for ours, theirs in [(pyaten.ops.aten.add.Tensor, torch.ops.aten.add.Tensor),
                         (pyaten.ops.aten.exp.default, torch.ops.aten.exp.default),
                         (pyaten.ops.aten.sum.dim_IntList, torch.ops.aten.sum.dim_IntList)]:
        assert str(ours) == str(theirs)
        assert repr(ours) == repr(theirs)
        assert ours.__name__ == theirs.__name__
        assert ours.name() == theirs.name()
        assert ours.namespace == theirs.namespace
        assert str(ours.overloadpacket) == str(theirs.overloadpacket)
        assert repr(ours.overloadpacket) == repr(theirs.overloadpacket)
        assert str(ours._schema) == str(theirs._schema)
        assert ours.is_view == theirs.is_view
    assert pyaten.ops.aten.view.default.is_view and torch.ops.aten.view.default.is_view
    # the handle a handler receives is the very object pyaten.ops holds
    seen = []

    class Capture(pyaten_pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    a = pyaten.ones(2)
    with Capture():
        a + a
    assert seen == [pyaten.ops.aten.add.Tensor] and seen[0] is pyaten.ops.aten.add.Tensor


def test_decompose_runs_the_composite_kernel() -> None:
    x, w = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[1.0, 0.0, -1.0]]
    ours = pyaten.ops.aten.linear.default.decompose(pyaten.tensor(x), pyaten.tensor(w))
    theirs = torch.ops.aten.linear.default.decompose(torch.tensor(x), torch.tensor(w))
    assert_same(ours, theirs)
    assert pyaten.ops.aten.add.Tensor.decompose(pyaten.ones(1), pyaten.ones(1)) is NotImplemented
    assert torch.ops.aten.add.Tensor.decompose(torch.ones(1), torch.ones(1)) is NotImplemented


# -- the mode stack -------------------------------------------------------------------------

@pytest.mark.parametrize("lib", ["torch", "pyaten"])
def test_nested_modes_innermost_first_each_seeing_the_calls_of_the_next(lib) -> None:
    P, pd = LIBS[lib]
    order = []

    def mode(name):
        class Named(pd.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                order.append((name, str(func), pd._get_current_dispatch_mode() is not None))
                return func(*args, **(kwargs or {}))

        return Named()

    a = P.ones(2)
    with mode("outer"), mode("inner"):
        a.neg()
    order_by_lib = order
    assert order_by_lib == [("inner", "aten.neg.default", True),
                            ("outer", "aten.neg.default", False)]


@pytest.mark.parametrize("lib", ["torch", "pyaten"])
def test_mode_stack_helpers(lib) -> None:
    P, pd = LIBS[lib]
    Log = _log_mode(pd)
    assert pd._get_current_dispatch_mode() is None
    with Log() as m:
        assert pd._get_current_dispatch_mode() is m
        assert pd._len_torch_dispatch_stack() == 1
        with pd._pop_mode_temporarily() as popped:
            assert popped is m
            assert pd._get_current_dispatch_mode() is None
            P.ones(1) + 1  # not logged
        P.ones(1)
    assert m.calls == ["aten.ones.default"]
    assert pd._get_current_dispatch_mode() is None
    # exiting out of order pops the innermost mode, as PyTorch's __exit__ does
    m1, m2 = Log(), Log()
    m1.__enter__()
    m2.__enter__()
    m1.__exit__(None, None, None)
    assert pd._get_current_dispatch_mode() is m1
    m2.__exit__(None, None, None)
    assert pd._get_current_dispatch_mode() is None


def test_a_mode_leaves_the_thread_local_sets_as_they_were() -> None:
    before = (pyaten.dispatch.tls_local_include_set(), pyaten.dispatch.tls_local_exclude_set())
    Log = _log_mode(pyaten_pd)
    with Log():
        inside = pyaten.dispatch.tls_local_include_set()
        assert inside.has("Python") and inside.has("PythonTLSSnapshot")
    assert (pyaten.dispatch.tls_local_include_set(),
            pyaten.dispatch.tls_local_exclude_set()) == before


@pytest.mark.parametrize("lib", ["torch", "pyaten"])
def test_inside_a_handler_keys_above_python_are_excluded(lib) -> None:
    P, pd = LIBS[lib]
    seen = {}

    class Probe(pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            seen["grad_fn"] = out.grad_fn
            return out

    a = P.ones(2, requires_grad=True)
    with Probe():
        b = a * 2
    assert seen["grad_fn"] is None  # the handler's own call recorded nothing
    assert b.grad_fn is not None  # the autograd kernel above recorded the node


def test_excluded_set_inside_a_handler_is_pytorchs() -> None:
    def names(ks) -> set:
        text = str(ks)
        return set(text[text.index("(") + 1:-1].split(", "))

    seen = {}

    class Probe(pyaten_pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen["pyaten"] = names(pyaten.dispatch.tls_local_exclude_set())
            return func(*args, **(kwargs or {}))

    class TorchProbe(torch_pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen["torch"] = names(torch._C._dispatch_tls_local_exclude_set())
            return func(*args, **(kwargs or {}))

    with Probe():
        pyaten.ones(1).neg()
    with TorchProbe():
        torch.ones(1).neg()
    assert seen["pyaten"] == seen["torch"]


# -- errors ---------------------------------------------------------------------------------

def _error(lib, fn):
    try:
        fn(*LIBS[lib])
    except Exception as error:  # noqa: BLE001 - the class is what we compare
        return type(error), str(error)
    return None


def _returning(pd, value):
    class Returns(pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return value

    return Returns()


def _not_implemented_mode(P, pd):
    class Refuses(pd.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return NotImplemented

        def __repr__(self):
            return "Refuses()"

    with Refuses():
        P.ones(2)


def _wrong_structure(P, pd):
    with _returning(pd, 3):
        P.ones(2)


def _wrong_structure_list(P, pd):
    with _returning(pd, [1, 2]):
        P.ones(2)


def _tensor_for_a_tuple(P, pd):
    a = P.ones(2, 2)
    with _returning(pd, P.ones(1)):
        a.max(0)


@pytest.mark.parametrize("program", [_not_implemented_mode, _wrong_structure,
                                     _wrong_structure_list, _tensor_for_a_tuple])
def test_errors_as_pytorchs(program) -> None:
    ours = _error("pyaten", program)
    theirs = _error("torch", program)
    assert ours is not None and theirs is not None
    assert ours[0] is theirs[0]
    assert ours[1].replace("pyaten", "torch") == theirs[1]


# -- subclasses -----------------------------------------------------------------------------

def _scaled_class(P, tree_map):
    class Scaled(P.Tensor):
        """A wrapper subclass: the values are `inner * scale`."""

        @staticmethod
        def __new__(cls, inner, scale):
            return P.Tensor._make_wrapper_subclass(
                cls, inner.shape, dtype=inner.dtype, device=inner.device,
                requires_grad=inner.requires_grad)

        def __init__(self, inner, scale):
            self.inner = inner
            self.scale = scale

        def __repr__(self):
            return f"Scaled({self.inner * self.scale})"

        def __tensor_flatten__(self):
            return ["inner"], self.scale

        @staticmethod
        def __tensor_unflatten__(inner, ctx, size, stride):
            return Scaled(inner["inner"], ctx)

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            def unwrap(x):
                return x.inner * x.scale if isinstance(x, Scaled) else x

            out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
            return tree_map(lambda x: Scaled(x, 1.0) if isinstance(x, P.Tensor) else x, out)

    return Scaled


def _mlp_on_wrappers(P, tree_map):
    Scaled = _scaled_class(P, tree_map)
    w1 = P.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], requires_grad=True)
    b1 = P.tensor([0.01, -0.02], requires_grad=True)
    w2 = P.tensor([[0.7, -0.8]], requires_grad=True)
    x = P.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
    xs = Scaled(x / 2, 2.0)
    F = P.nn.functional
    y = F.linear(F.linear(xs, w1, b1).relu(), w2).sum()
    y.backward()
    plain = F.linear(F.linear(x, w1, b1).relu(), w2).sum()
    return Scaled, y, w1, b1, w2, plain


def test_wrapper_subclass_runs_an_mlp_forward_and_backward() -> None:
    Scaled, y, w1, b1, w2, plain = _mlp_on_wrappers(pyaten, _pytree.tree_map)
    _, ty, tw1, tb1, tw2, _ = _mlp_on_wrappers(torch, torch.utils._pytree.tree_map)
    assert type(y) is Scaled
    assert y.inner.equal(plain)
    for ours, theirs in [(w1, tw1), (b1, tb1), (w2, tw2)]:
        assert type(ours.grad) is Scaled and type(theirs.grad).__name__ == "Scaled"
        assert_same(ours.grad.inner, theirs.grad.inner)
    assert str(b1.grad) == str(tb1.grad)


def test_wrapper_subclass_metadata_and_refusals() -> None:
    Scaled = _scaled_class(pyaten, _pytree.tree_map)
    TScaled = _scaled_class(torch, torch.utils._pytree.tree_map)
    s = Scaled(pyaten.ones(2, 3), 2.0)
    t = TScaled(torch.ones(2, 3), 2.0)
    assert tuple(s.shape) == tuple(t.shape) and s.stride() == t.stride()
    assert s.dtype.name == str(t.dtype).split(".")[1]
    assert pyaten.dispatch.DispatchKeySet.from_raw(s._keyset).has("Python")
    assert pyaten_pd.is_traceable_wrapper_subclass(s)
    assert torch_pd.is_traceable_wrapper_subclass(t)
    doubled = pyaten_pd.transform_subclass(s, lambda name, x: x * 2)
    assert type(doubled) is Scaled and doubled.inner.equal(pyaten.full((2, 3), 2.0))


@pytest.mark.parametrize("lib", ["torch", "pyaten"])
def test_subclass_ordering_and_not_implemented(lib) -> None:
    P, pd = LIBS[lib]
    calls = []

    def make(name, base, answer):
        def handler(cls, func, types, args=(), kwargs=None):
            calls.append((name, [t.__name__ for t in types]))
            if answer is NotImplemented:
                return NotImplemented
            guard = pd.no_dispatch if P is pyaten else torch._C._DisableTorchDispatch
            with guard():
                return func(*[P.Tensor._make_subclass(P.Tensor, a) if isinstance(a, P.Tensor)
                              else a for a in args])

        return type(name, (base,), {"__torch_dispatch__": classmethod(handler)})

    A = make("A", P.Tensor, NotImplemented)
    B = make("B", A, "ok")
    a = P.Tensor._make_subclass(A, P.ones(2))
    b = P.Tensor._make_subclass(B, P.ones(2))
    out = P.ops.aten.add.Tensor(a, b)
    assert type(out) is P.Tensor
    assert calls == [("B", ["B", "A"])]
    calls.clear()
    with pytest.raises(TypeError, match="all __torch_dispatch__ handlers returned NotImplemented"):
        P.ops.aten.add.Tensor(a, a)
    assert calls == [("A", ["A"])]


# -- pytree ---------------------------------------------------------------------------------

_leaves = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3), st.none())
_trees = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children, children),
        st.dictionaries(st.text(max_size=2), children, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(_trees)
def test_pytree_flatten_matches_pytorchs(tree) -> None:
    ours, spec = _pytree.tree_flatten(tree)
    theirs, tspec = torch.utils._pytree.tree_flatten(tree)
    assert ours == theirs
    assert spec.num_leaves == tspec.num_leaves
    assert _pytree.tree_unflatten(ours, spec) == tree
    assert _pytree.tree_map(str, tree) == torch.utils._pytree.tree_map(str, tree)


def test_pytree_registered_nodes_and_errors() -> None:
    import collections

    Point = collections.namedtuple("Point", "x y")
    tree = {"a": Point(1, [2, 3]), "b": collections.OrderedDict(c=4)}
    leaves, spec = _pytree.tree_flatten(tree)
    assert leaves == torch.utils._pytree.tree_flatten(tree)[0] == [1, 2, 3, 4]
    assert _pytree.tree_unflatten(leaves, spec) == tree

    class Box:
        def __init__(self, v):
            self.v = v

    _pytree.register_pytree_node(Box, lambda b: ([b.v], None), lambda c, _: Box(c[0]))
    try:
        out = _pytree.tree_map(lambda x: x + 1, [Box(1), 2])
        assert out[0].v == 2 and out[1] == 3
        with pytest.raises(ValueError, match="already registered"):
            _pytree.register_pytree_node(Box, lambda b: ([b.v], None), lambda c, _: Box(c[0]))
    finally:
        del _pytree.SUPPORTED_NODES[Box]
    with pytest.raises(ValueError):
        _pytree.tree_unflatten([1], spec)
    assert _pytree.tree_map_only(int, lambda x: -x, [1, "a", (2.0, 3)]) == [-1, "a", (2.0, -3)]


# -- Python kernels: Library.impl(..., "Python") and py_impl -------------------------------

def test_library_kernel_on_the_python_key_replaces_the_fallback_for_that_operator() -> None:
    from pyaten.library import Library

    calls = []

    def neg_kernel(x):
        calls.append("kernel")
        with pyaten_pd.no_dispatch():
            return pyaten.ops.aten.neg.default(x) * 10

    log = _log_mode(pyaten_pd)
    with Library("aten", "IMPL") as lib:
        lib.impl("neg", neg_kernel, "Python")
        with log() as mode:
            out = pyaten.ones(2).neg()
            pyaten.ones(2).exp()
        assert calls == ["kernel"] and out.tolist() == [-10.0, -10.0]
        assert mode.calls == ["aten.ones.default", "aten.ones.default", "aten.exp.default"]
    assert pyaten.ones(2).neg().tolist() == [-1.0, -1.0]  # the Library closed: gone


def test_py_impl_for_a_mode_class_and_for_a_key() -> None:
    class Counting(pyaten_pd.TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.plain = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.plain.append(str(func))
            return func(*args, **(kwargs or {}))

    class Derived(Counting):
        pass

    seen = []
    op = pyaten.ops.aten.sin.default

    @op.py_impl(Counting)
    def sin_under_counting(mode, x):
        seen.append(type(mode).__name__)
        return pyaten.ops.aten.cos.default(x)

    try:
        with Derived() as mode:
            out = pyaten.zeros(2).sin()
        assert seen == ["Derived"] and out.tolist() == [1.0, 1.0]
        assert mode.plain == ["aten.zeros.default"]  # sin went to the py_impl kernel
    finally:
        op._mode_kernels.clear()
    assert pyaten.zeros(1).sin().tolist() == [0.0]


_TENSOR_PROTOCOL = {
    "item": lambda P, a: a[1].item(),
    "float": lambda P, a: float(a[2]),
    "int": lambda P, a: int(a[1]),
    "bool": lambda P, a: bool(a[1] > 0),
    "index": lambda P, a: [1, 2, 3][P.tensor(1)],
    "iter": lambda P, a: list(a),
    "tolist": lambda P, a: a.tolist(),
    "repr": lambda P, a: repr(a),
    "len_size_numel": lambda P, a: (len(a), a.size(0), a.numel(), a.is_contiguous()),
    "equal": lambda P, a: a.equal(a),
}


@pytest.mark.parametrize("name", sorted(_TENSOR_PROTOCOL))
def test_python_protocol_calls_seen_as_in_pytorch(name) -> None:
    def run(lib):
        P, pd = LIBS[lib]
        a = P.arange(4.0)
        with _log_mode(pd)() as mode:
            _TENSOR_PROTOCOL[name](P, a)
        return mode.calls

    assert run("pyaten") == run("torch")


def test_wrapper_subclass_answers_item_and_iteration() -> None:
    Scaled = _scaled_class(pyaten, _pytree.tree_map)
    s = Scaled(pyaten.tensor([1.0, 2.0]), 3.0)
    assert s[1].item() == 6.0 and float(s[0]) == 3.0
    assert [type(x) for x in s] == [Scaled, Scaled]


def test_local_scalar_dense_reads_the_first_element_as_pytorch() -> None:
    for make in (lambda m: m.arange(6.0).reshape(2, 3).t()[1:], lambda m: m.tensor([True]),
                 lambda m: m.tensor([[7]]), lambda m: m.tensor([1 + 2j])):
        ours = pyaten.ops.aten._local_scalar_dense.default(make(pyaten))
        theirs = torch.ops.aten._local_scalar_dense.default(make(torch))
        assert ours == theirs and type(ours) is type(theirs)
    for lib in (torch, pyaten):
        with pytest.raises(RuntimeError, match="_local_scalar_dense: Empty tensor not supported"):
            lib.ops.aten._local_scalar_dense.default(lib.ones(0))
