"""PyTorch's CPU random streams, bit for bit: after the same seed, every random operator gives
PyTorch's values (10,000 of them per dtype, 5 seeds) and leaves the generator in PyTorch's
state (the 5056-byte `get_rng_state`), states move both ways, and a seeded program (init,
dropout, a shuffling DataLoader) prints PyTorch's numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

SEEDS = (0, 1, 7, 42, 2**40 + 3)
N = 10_000
FLOATS = ("float32", "float64", "float16", "bfloat16")
PROBS = np.linspace(0, 1, N)


def _values(t) -> np.ndarray:
    if t.dtype in (torch.bfloat16, pyaten.bfloat16):
        t = t.float()
    return t.numpy()


def assert_same_stream(ours, theirs, seeds=SEEDS) -> None:
    """Run both draws after the same seed: equal values (NaN too) and equal generator state."""
    for seed in seeds:
        pyaten.manual_seed(seed)
        got = ours()
        torch.manual_seed(seed)
        want = theirs()
        a, b = _values(got), _values(want)
        assert a.dtype == b.dtype and a.shape == b.shape, (seed, a.dtype, b.dtype)
        mismatched = np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))
        assert mismatched.size == 0, (seed, mismatched[:5], a.ravel()[mismatched[:5]],
                                      b.ravel()[mismatched[:5]])
        assert bytes(pyaten.get_rng_state().numpy()) == bytes(torch.get_rng_state().numpy())


def _both(expr):
    return (lambda: expr(pyaten)), (lambda: expr(torch))


# (name, expression over the module m and the dtype name d, dtypes)
CASES = [
    ("rand", lambda m, d: m.rand(N, dtype=getattr(m, d)), FLOATS),
    ("randn", lambda m, d: m.randn(N, dtype=getattr(m, d)), FLOATS),
    ("randn_tail", lambda m, d: m.randn(N + 7, dtype=getattr(m, d)), FLOATS),
    ("randn_small", lambda m, d: m.randn(5, 3, dtype=getattr(m, d)), FLOATS),
    ("uniform_", lambda m, d: m.empty(N, dtype=getattr(m, d)).uniform_(-3.1, 2.7), FLOATS),
    ("normal_", lambda m, d: m.empty(N, dtype=getattr(m, d)).normal_(1.5, 0.3), FLOATS),
    ("normal_strided", lambda m, d: m.empty(40, 30, dtype=getattr(m, d)).t().normal_(), FLOATS),
    ("uniform_strided", lambda m, d: m.empty(40, 30, dtype=getattr(m, d)).t().uniform_(),
     FLOATS),
    ("exponential_", lambda m, d: m.empty(N, dtype=getattr(m, d)).exponential_(2.5), FLOATS),
    ("cauchy_", lambda m, d: m.empty(N, dtype=getattr(m, d)).cauchy_(0.5, 2.0), FLOATS),
    ("log_normal_", lambda m, d: m.empty(N, dtype=getattr(m, d)).log_normal_(0.5, 0.7), FLOATS),
    ("geometric_", lambda m, d: m.empty(N, dtype=getattr(m, d)).geometric_(0.3), FLOATS),
    ("bernoulli_p", lambda m, d: m.empty(N, dtype=getattr(m, d)).bernoulli_(0.3),
     FLOATS + ("int64", "uint8", "bool")),
    ("random_", lambda m, d: m.empty(N, dtype=getattr(m, d)).random_(),
     FLOATS + ("int64", "int32", "int16", "int8", "uint8", "bool")),
    ("random_from_to", lambda m, d: m.empty(N, dtype=getattr(m, d)).random_(3, 100),
     FLOATS + ("int64", "int32", "uint8")),
    ("randint", lambda m, d: m.randint(-5, 1000, (N,), dtype=getattr(m, d)),
     ("int64", "int32", "int16", "float32", "float64")),
    ("randint_wide", lambda m, d: m.randint(-2**40, 2**40, (N,), dtype=getattr(m, d)),
     ("int64", "float64")),
    ("randint_span_2_28", lambda m, d: m.randint(5, 2**28 + 5, (N,), dtype=getattr(m, d)),
     ("int64", "int32", "float64")),
    ("randint_span_below_2_28", lambda m, d: m.randint(5, 2**28 + 4, (N,), dtype=getattr(m, d)),
     ("int64", "int32", "float64")),
    ("random_full_range", lambda m, d: m.empty(N, dtype=getattr(m, d)).random_(-2**63, None),
     ("int64",)),
    ("randperm", lambda m, d: m.randperm(N, dtype=getattr(m, d)), ("int64", "int32", "float32")),
    ("randn_complex", lambda m, d: m.randn(N // 2, dtype=getattr(m, d)),
     ("complex64", "complex128")),
    ("rand_complex", lambda m, d: m.rand(N // 2, dtype=getattr(m, d)),
     ("complex64", "complex128")),
    ("bernoulli_tensor", lambda m, d: m.bernoulli(m.tensor(PROBS).to(getattr(m, d))),
     ("float32", "float64", "bfloat16")),
    ("normal_mean_tensor", lambda m, d: m.normal(m.arange(N, dtype=getattr(m, d)) / 100, 2.0),
     ("float32", "float64")),
    ("normal_std_tensor", lambda m, d: m.normal(0.5, m.arange(N, dtype=getattr(m, d)) / N),
     ("float32", "float64")),
    ("normal_both_tensors", lambda m, d: m.normal(m.zeros(N, dtype=getattr(m, d)),
                                                 m.ones(N, dtype=getattr(m, d))),
     ("float32", "float64")),
    ("multinomial_replacement", lambda m, d: m.multinomial(
        m.arange(1, 101, dtype=getattr(m, d)).reshape(4, 25), N // 4, True),
     ("float32", "float64")),
    ("multinomial", lambda m, d: m.multinomial(m.arange(1, 1001, dtype=getattr(m, d)), 100),
     ("float32", "float64")),
    ("poisson", lambda m, d: m.poisson(m.tensor([0.0, 0.5, 3.0, 12.0, 300.0, 1e7],
                                                dtype=getattr(m, d)).repeat(50)),
     ("float32", "float64")),
    ("dropout", lambda m, d: m.nn.functional.dropout(m.ones(N, dtype=getattr(m, d)), 0.3),
     ("float32", "float64")),
    ("alpha_dropout", lambda m, d: m.nn.functional.alpha_dropout(
        m.ones(100, 100, dtype=getattr(m, d)), 0.2, training=True), ("float32",)),
    ("native_dropout", lambda m, d: m.cat([t.to(getattr(m, d)).reshape(-1) for t in
                                           m.native_dropout(m.ones(100, 100, dtype=getattr(m, d)),
                                                            0.3, True)]),
     ("float32", "float64")),
    ("dropout2d", lambda m, d: m.nn.functional.dropout2d(
        m.ones(8, 16, 5, 5, dtype=getattr(m, d)), 0.5), ("float32",)),
]


@pytest.mark.parametrize("name, expr, dtypes", CASES, ids=[c[0] for c in CASES])
def test_first_values_equal_pytorch(name, expr, dtypes):
    for d in dtypes:
        ours, theirs = (lambda d=d: expr(pyaten, d)), (lambda d=d: expr(torch, d))
        assert_same_stream(ours, theirs)


LAYOUTS = [
    lambda m: m.empty(3, 4, 5).permute(2, 0, 1).uniform_(),
    lambda m: m.empty(10, 8)[::2, 1::3].uniform_(),
    lambda m: m.empty(3, 4, 5).permute(1, 2, 0).normal_(),
    lambda m: m.empty(20, 8)[:, ::2].normal_(),
    lambda m: m.empty(6, 5).t().bernoulli_(m.rand(5, 6)),
    lambda m: m.empty(6, 5).bernoulli_(m.rand(5)),
    lambda m: m.empty(6, 5, dtype=m.complex64).t().normal_(),
    lambda m: m.empty(6, 5, dtype=m.int64).t().random_(0, 7),
    lambda m: m.rand_like(m.empty(2, 3, 4, 5).contiguous(memory_format=m.channels_last)),
    lambda m: m.randn_like(m.empty(2, 3, 4, 5).contiguous(memory_format=m.channels_last)),
    lambda m: m.empty(()).normal_(),
]


@pytest.mark.parametrize("expr", LAYOUTS, ids=[str(i) for i in range(len(LAYOUTS))])
def test_strided_tensors_draw_in_memory_order(expr):
    """A strided tensor is filled in the order PyTorch's TensorIterator walks it."""
    assert_same_stream(*_both(expr), seeds=SEEDS[:2])


def test_draws_chain_across_calls():
    """The stream continues across operators: the cached normal, odd tails, mixed dtypes."""

    def program(m):
        parts = [m.randn(3), m.randn(1, dtype=m.float64), m.rand(17), m.randn(33),
                 m.randint(0, 10, (5,)), m.randn(7), m.randperm(9), m.empty(5).log_normal_()]
        return m.cat([p.double() for p in parts])

    assert_same_stream(*_both(program))


def test_generator_objects():
    g_ours, g_theirs = pyaten.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    a = pyaten.randn(40, generator=g_ours)
    b = torch.randn(40, generator=g_theirs)
    assert np.array_equal(a.numpy(), b.numpy())
    assert bytes(g_ours.get_state().numpy()) == bytes(g_theirs.get_state().numpy())
    assert g_ours.initial_seed() == g_theirs.initial_seed() == 5
    assert pyaten.Generator().initial_seed() == torch.Generator().initial_seed()
    assert pyaten.Generator().manual_seed(-1).initial_seed() == 2**64 - 1


def test_generator_pickles_and_copies_with_its_stream():
    import copy
    import pickle

    g = pyaten.Generator().manual_seed(5)
    pyaten.randn(16, generator=g)  # the compiled fill, when on
    pyaten.randn(3, generator=g)  # leaves a cached normal
    copies = (lambda g: pickle.loads(pickle.dumps(g)), copy.deepcopy,
              pyaten.Generator.clone_state)
    for make in copies:
        twin = make(g)
        assert bytes(twin.get_state().numpy()) == bytes(g.get_state().numpy())
        a = pyaten.cat([pyaten.randn(700, generator=twin), pyaten.randn(5, generator=twin)])
        b = pyaten.cat([pyaten.randn(700, generator=g), pyaten.randn(5, generator=g)])
        assert np.array_equal(a.numpy(), b.numpy())
        g = twin


def test_rng_state_round_trips_with_pytorch_bytes():
    torch.manual_seed(3)
    torch.randn(3)  # leaves a cached normal in the state
    torch.rand(700)  # past one twist
    pyaten.set_rng_state(pyaten.tensor(torch.get_rng_state().numpy()))
    state = pyaten.get_rng_state()
    assert state.dtype is pyaten.uint8 and state.shape == (5056,)
    assert bytes(state.numpy()) == bytes(torch.get_rng_state().numpy())
    assert np.array_equal(pyaten.randn(5).numpy(), torch.randn(5).numpy())
    # and back: pyaten's state drives torch
    pyaten.rand(1000)
    torch.set_rng_state(torch.from_numpy(pyaten.get_rng_state().numpy().copy()))
    assert np.array_equal(pyaten.randn(50).numpy(), torch.randn(50).numpy())


def test_rng_state_errors_match_pytorch():
    for bad, error in (
        (pyaten.zeros(5056), TypeError),
        (pyaten.zeros(10, dtype=pyaten.uint8), RuntimeError),
        (pyaten.zeros(5056, dtype=pyaten.uint8), RuntimeError),
    ):
        with pytest.raises(error) as ours:
            pyaten.set_rng_state(bad)
        with pytest.raises(error) as theirs:
            torch.set_rng_state(torch.from_numpy(bad.numpy().copy()))
        assert str(ours.value) == str(theirs.value)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), count=st.integers(0, 70),
       dtype=st.sampled_from(FLOATS))
def test_any_seed_and_size(seed, count, dtype):
    for op in ("rand", "randn"):
        pyaten.manual_seed(seed)
        a = getattr(pyaten, op)(count, dtype=getattr(pyaten, dtype))
        torch.manual_seed(seed)
        b = getattr(torch, op)(count, dtype=getattr(torch, dtype))
        assert np.array_equal(_values(a), _values(b))


def _seeded_program(m) -> list[str]:
    """A small training setup: init, dropout and a shuffling DataLoader, printed."""
    m.manual_seed(1234)
    model = m.nn.Sequential(m.nn.Linear(6, 8), m.nn.ReLU(), m.nn.Dropout(0.25),
                            m.nn.Linear(8, 2))
    m.nn.init.trunc_normal_(model[3].weight, std=0.02)
    data = m.utils.data.TensorDataset(m.randn(12, 6), m.randint(0, 2, (12,)))
    loader = m.utils.data.DataLoader(data, batch_size=4, shuffle=True)
    lines = []
    for epoch in range(2):
        for x, y in loader:
            out = model(x)
            lines.append(f"{epoch} {y.tolist()} {[round(v, 5) for v in out.sum(1).tolist()]}")
    return lines


def test_seeded_program_prints_pytorch_numbers():
    assert _seeded_program(pyaten) == _seeded_program(torch)


@pytest.mark.parametrize("enabled", [False, True], ids=["numpy", "compiled"])
def test_numpy_and_compiled_paths_agree_with_pytorch(enabled):
    """The float32 uniform and normal fills, integer draws and randperm have compiled loops
    beside the NumPy path (pyaten/native/kernels/random_compiled.py); both draw PyTorch's
    numbers, at every size."""
    from pyaten.native import compiled

    if enabled and compiled.available() is None:
        pytest.skip("Numba is not installed")
    compiled.set_enabled(enabled)
    try:
        for size in (16, 17, 4100, N):
            for d in ("float32", "float16", "bfloat16"):
                assert_same_stream(
                    *_both(lambda m, d=d, size=size: m.randn(size, dtype=getattr(m, d))),
                    seeds=SEEDS[:2],
                )
                assert_same_stream(
                    *_both(lambda m, d=d, size=size: m.rand(size, dtype=getattr(m, d))),
                    seeds=SEEDS[:2],
                )
            assert_same_stream(*_both(lambda m, size=size: m.empty(size).normal_(-2.0, 3.5)),
                               seeds=SEEDS[:2])
            assert_same_stream(*_both(lambda m, size=size: m.randperm(size)), seeds=SEEDS[:2])
            assert_same_stream(*_both(lambda m, size=size: m.randint(-7, 1000, (size,))),
                               seeds=SEEDS[:2])
    finally:
        compiled.set_enabled(None)


class _WorkerSeeds:
    """Each item: its index, the worker's seed and a draw from the worker's default stream."""

    def __init__(self, m) -> None:
        self.m = m

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int):
        info = self.m.utils.data.get_worker_info()
        return self.m.tensor([i, info.seed % 1000003, int(self.m.rand(1).item() * 1e6)])


def _worker_batches(m) -> list:
    m.manual_seed(11)
    loader = m.utils.data.DataLoader(_WorkerSeeds(m), batch_size=2, shuffle=True,
                                     num_workers=2, timeout=60)
    return [batch.tolist() for batch in loader]


def test_dataloader_workers_seed_as_pytorch():
    """The base seed, the shuffled order and each worker's stream (worker seed = base seed +
    worker id, the worker's default generator seeded with it) are PyTorch's."""
    assert _worker_batches(pyaten) == _worker_batches(torch)


def test_complex32_rand_and_randn_draw_pytorchs_numbers() -> None:
    import warnings

    import torch

    import pyaten

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn that ComplexHalf is experimental
        for name in ("rand", "randn"):
            torch.manual_seed(3)
            pyaten.manual_seed(3)
            theirs = getattr(torch, name)(5, dtype=torch.chalf)
            ours = getattr(pyaten, name)(5, dtype=pyaten.chalf)
            assert ours.to(pyaten.complex64).tolist() == theirs.to(torch.complex64).tolist()
