"""pyaten.utils.data against torch.utils.data: the same datasets, samplers and loaders give
the same batches (values, dtypes, structure), lengths and errors.

pyaten's random bits differ from PyTorch's, so shuffled orders are compared by injecting
PyTorch's permutation into pyaten's one place of random draws (`_random.randperm`); the
rest of the logic (how permutations become batches and splits) is then compared exactly.
"""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from _helpers import assert_same, same_error
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.utils.data as pdata
from pyaten.utils.data import _random

Point = collections.namedtuple("Point", ["x", "y"])


def same_batch(ours: object, theirs: object) -> None:
    """Two batches (nested containers of tensors and leaves) are the same."""
    if isinstance(theirs, torch.Tensor):
        assert_same(ours, theirs)
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for key in theirs:
            same_batch(ours[key], theirs[key])
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs), (type(ours), type(theirs))
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same_batch(a, b)
    elif isinstance(theirs, np.ndarray):
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert type(ours) is type(theirs) and ours == theirs, (ours, theirs)


def same_batches(ours: pdata.DataLoader, theirs: tdata.DataLoader) -> None:
    assert len(ours) == len(theirs)
    got, expected = list(ours), list(theirs)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        same_batch(a, b)


def tensor_datasets(n: int, seed: int = 0) -> tuple[pdata.TensorDataset, tdata.TensorDataset]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.integers(0, 10, n)
    return (pdata.TensorDataset(pyaten.from_numpy(x), pyaten.from_numpy(y)),
            tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)))


@pytest.fixture
def same_permutations(monkeypatch):
    """pyaten's and PyTorch's samplers get their permutations from two identically seeded
    PyTorch streams, whatever else draws from the loader's generator."""
    original = torch.randperm

    def stream():
        source = torch.Generator().manual_seed(1234)
        return lambda n, generator=None, **kwargs: original(n, generator=source)

    ours, theirs = stream(), stream()
    monkeypatch.setattr(_random, "randperm", lambda n, generator: ours(n).tolist())
    monkeypatch.setattr(torch, "randperm", theirs)


class ListDataset(pdata.Dataset):
    """The same samples in both libraries (they need not be tensors)."""

    def __init__(self, items: list) -> None:
        self.items = items

    def __getitem__(self, i: int) -> object:
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)


# --- loaders: the same batches as PyTorch's for the same order ------------------------------

@pytest.mark.parametrize("batch_size", [1, 3, 4, 10, None])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sequential_batches(batch_size, drop_last):
    if batch_size is None and drop_last:
        return
    ours, theirs = tensor_datasets(10)
    same_batches(pdata.DataLoader(ours, batch_size=batch_size, drop_last=drop_last),
                 tdata.DataLoader(theirs, batch_size=batch_size, drop_last=drop_last))


def test_explicit_sampler_and_batch_sampler():
    ours, theirs = tensor_datasets(9)
    order = [4, 1, 7, 0, 8, 2]
    same_batches(pdata.DataLoader(ours, batch_size=4, sampler=order),
                 tdata.DataLoader(theirs, batch_size=4, sampler=order))
    batches = [[0, 5], [3], [8, 1, 2]]
    same_batches(pdata.DataLoader(ours, batch_sampler=batches),
                 tdata.DataLoader(theirs, batch_sampler=batches))
    ps = pdata.BatchSampler(pdata.SequentialSampler(ours), 4, True)
    ts = tdata.BatchSampler(tdata.SequentialSampler(theirs), 4, True)
    same_batches(pdata.DataLoader(ours, batch_sampler=ps),
                 tdata.DataLoader(theirs, batch_sampler=ts))


def test_shuffle_with_the_same_permutation(same_permutations):
    ours, theirs = tensor_datasets(11)
    loader = pdata.DataLoader(ours, batch_size=3, shuffle=True,
                              generator=pyaten.Generator().manual_seed(0))
    expected = tdata.DataLoader(theirs, batch_size=3, shuffle=True,
                                generator=torch.Generator().manual_seed(0))
    same_batches(loader, expected)  # two epochs: two permutations each
    same_batches(pdata.DataLoader(ours, batch_size=4, shuffle=True, drop_last=True),
                 tdata.DataLoader(theirs, batch_size=4, shuffle=True, drop_last=True))


def test_shuffle_is_a_permutation_and_follows_the_generator():
    data = pdata.TensorDataset(pyaten.arange(20))

    def epoch(seed: int) -> list[int]:
        loader = pdata.DataLoader(data, batch_size=6, shuffle=True,
                                  generator=pyaten.Generator().manual_seed(seed))
        return [int(v) for (batch,) in loader for v in batch]

    first = epoch(3)
    assert sorted(first) == list(range(20))
    assert epoch(3) == first
    assert epoch(4) != first


def test_iterating_twice_and_len():
    ours, theirs = tensor_datasets(7)
    loader = pdata.DataLoader(ours, batch_size=2)
    same_batches(loader, tdata.DataLoader(theirs, batch_size=2))
    same_batches(loader, tdata.DataLoader(theirs, batch_size=2))
    assert len(pdata.DataLoader(ours, batch_size=2, drop_last=True)) == 3


def test_custom_collate_and_no_batching():
    ours, theirs = tensor_datasets(5)
    got = list(pdata.DataLoader(ours, batch_size=2, collate_fn=lambda b: len(b)))
    assert got == list(tdata.DataLoader(theirs, batch_size=2, collate_fn=lambda b: len(b)))
    items = [np.arange(3) + i for i in range(4)]
    same_batches(pdata.DataLoader(ListDataset(items), batch_size=None),
                 tdata.DataLoader(items, batch_size=None))


def test_concat_subset_and_dataset_add():
    a, ta = tensor_datasets(4, seed=1)
    b, tb = tensor_datasets(3, seed=2)
    joined, tjoined = a + b, ta + tb
    assert len(joined) == len(tjoined) == 7
    for i in range(-7, 7):
        same_batch(joined[i], tjoined[i])
    same_error(lambda: joined[-8], lambda: tjoined[-8])
    subset, tsubset = pdata.Subset(joined, [6, 0, 3]), tdata.Subset(tjoined, [6, 0, 3])
    same_batches(pdata.DataLoader(subset, batch_size=2), tdata.DataLoader(tsubset, batch_size=2))
    assert joined.cumulative_sizes == tjoined.cumulative_sizes


def test_stack_dataset_and_subset_subclass():
    a, ta = tensor_datasets(5, seed=1)
    b, tb = tensor_datasets(5, seed=2)
    for ours, theirs in ((pdata.StackDataset(a, b), tdata.StackDataset(ta, tb)),
                         (pdata.StackDataset(x=a, y=b), tdata.StackDataset(x=ta, y=tb))):
        same_batch(ours[2], theirs[2])
        same_batch(ours.__getitems__([4, 0]), theirs.__getitems__([4, 0]))
        same_batches(pdata.DataLoader(ours, batch_size=2), tdata.DataLoader(theirs, batch_size=2))
    short, tshort = tensor_datasets(4)
    same_error(lambda: pdata.StackDataset(a, short), lambda: tdata.StackDataset(ta, tshort))
    same_error(lambda: pdata.StackDataset(a, y=b), lambda: tdata.StackDataset(ta, y=tb))
    same_error(lambda: pdata.StackDataset(), lambda: tdata.StackDataset())

    def subclass(base):
        return type("MySubset", (base,), {"__getitem__": lambda self, i: i})

    same_error(lambda: subclass(pdata.Subset)(a, [0]), lambda: subclass(tdata.Subset)(ta, [0]))


class Counting(pdata.IterableDataset):
    """0..n-1, split between workers by id (as PyTorch's docs shard)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        info = pdata.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self) -> int:
        return self.n


class TorchCounting(tdata.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset(drop_last):
    same_batches(pdata.DataLoader(Counting(7), batch_size=3, drop_last=drop_last),
                 tdata.DataLoader(TorchCounting(7), batch_size=3, drop_last=drop_last))
    same_batches(pdata.DataLoader(Counting(3), batch_size=None),
                 tdata.DataLoader(TorchCounting(3), batch_size=None))
    chained = Counting(2) + Counting(3)
    assert list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5


# Worker processes: tests/test_data_workers.py (each test there runs under a hard limit).


# --- collate: every element type as torch's default_collate ---------------------------------

COLLATE_CASES = {
    "tensors": lambda m: [m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0])],
    "int_tensors": lambda m: [m.tensor(1), m.tensor(2)],
    "ints": lambda m: [1, 2, 3],
    "floats": lambda m: [1.5, 2.0],
    "bools": lambda m: [True, False],
    "strings": lambda m: ["a", "bc"],
    "bytes": lambda m: [b"a", b"b"],
    "tuples": lambda m: [(1, 2.0, "x"), (3, 4.0, "y")],
    "lists": lambda m: [[1, m.tensor([0.5])], [2, m.tensor([1.5])]],
    "dicts": lambda m: [{"a": 1, "b": m.tensor([1])}, {"a": 2, "b": m.tensor([2])}],
    "ordered": lambda m: [collections.OrderedDict(z=1.0, a=2), collections.OrderedDict(z=3.0,
                                                                                     a=4)],
    "namedtuples": lambda m: [Point(1, m.tensor([1.0])), Point(2, m.tensor([2.0]))],
    "arrays": lambda m: [np.arange(3, dtype=np.int32), np.arange(3, 6, dtype=np.int32)],
    "float_arrays": lambda m: [np.ones((2, 2)), np.zeros((2, 2))],
    "numpy_scalars": lambda m: [np.float32(1.5), np.float32(2.5)],
    "numpy_ints": lambda m: [np.int16(1), np.int16(2)],
    "numpy_bools": lambda m: [np.bool_(True), np.bool_(False)],
    "nested": lambda m: [{"p": Point([1, 2], (m.tensor(1.0), "s"))},
                         {"p": Point([3, 4], (m.tensor(2.0), "t"))}],
}


@pytest.mark.parametrize("case", sorted(COLLATE_CASES))
def test_default_collate(case):
    make = COLLATE_CASES[case]
    same_batch(pdata.default_collate(make(pyaten)), tdata.default_collate(make(torch)))


@pytest.mark.parametrize("case", sorted(COLLATE_CASES))
def test_default_convert(case):
    make = COLLATE_CASES[case]
    for ours, theirs in zip(make(pyaten), make(torch)):
        same_batch(pdata.default_convert(ours), tdata.default_convert(theirs))


@pytest.mark.parametrize("batch", [
    [object(), object()],
    [[1, 2], [3]],
    [np.array(["a"]), np.array(["b"])],
    [None, None],
])
def test_collate_errors(batch):
    same_error(lambda: pdata.default_collate(batch), lambda: tdata.default_collate(batch))


# --- samplers -------------------------------------------------------------------------------

def test_random_sampler_orders_match_torch(monkeypatch):
    sources = {}

    def permutation(n, generator):
        gen = sources.setdefault("g", torch.Generator().manual_seed(7))
        return torch.randperm(n, generator=gen).tolist()

    monkeypatch.setattr(_random, "randperm", permutation)
    for num_samples in (None, 3, 5, 12):
        sources.clear()
        ours = list(pdata.RandomSampler(range(5), num_samples=num_samples,
                                        generator=pyaten.Generator()))
        theirs = list(tdata.RandomSampler(range(5), num_samples=num_samples,
                                          generator=torch.Generator().manual_seed(7)))
        assert ours == theirs
        sources.clear()
        ours = list(pdata.SubsetRandomSampler([10, 20, 30, 40], generator=pyaten.Generator()))
        theirs = list(tdata.SubsetRandomSampler([10, 20, 30, 40],
                                                generator=torch.Generator().manual_seed(7)))
        assert ours == theirs


def test_random_sampler_with_replacement():
    gen = pyaten.Generator().manual_seed(0)
    drawn = list(pdata.RandomSampler(range(4), replacement=True, num_samples=70, generator=gen))
    assert len(drawn) == 70 and set(drawn) == {0, 1, 2, 3}
    again = list(pdata.RandomSampler(range(4), replacement=True, num_samples=70,
                                     generator=pyaten.Generator().manual_seed(0)))
    assert again == drawn
    assert sorted(pdata.RandomSampler(range(6))) == list(range(6))  # default generator


def test_weighted_random_sampler():
    gen = pyaten.Generator().manual_seed(0)
    drawn = list(pdata.WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], 50, generator=gen))
    assert len(drawn) == 50 and set(drawn) == {1, 2}
    once = list(pdata.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7], 4, replacement=False))
    assert sorted(once) == [0, 1, 2, 3]
    assert len(pdata.WeightedRandomSampler([1.0, 2.0], 7)) == 7


@pytest.mark.parametrize("make", [
    lambda m: m.utils.data.RandomSampler(range(3), replacement=1),
    lambda m: m.utils.data.RandomSampler(range(3), num_samples=0),
    lambda m: m.utils.data.RandomSampler([], generator=None),
    lambda m: m.utils.data.WeightedRandomSampler([1.0], 0),
    lambda m: m.utils.data.WeightedRandomSampler([1.0], True),
    lambda m: m.utils.data.WeightedRandomSampler([1.0], 2, replacement=None),
    lambda m: m.utils.data.WeightedRandomSampler([[1.0, 2.0]], 2),
    lambda m: m.utils.data.BatchSampler(range(3), 0, False),
    lambda m: m.utils.data.BatchSampler(range(3), 2.0, False),
    lambda m: m.utils.data.BatchSampler(range(3), 2, None),
])
def test_sampler_errors(make):
    same_error(lambda: make(pyaten), lambda: make(torch))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 30), batch_size=st.integers(1, 8), drop_last=st.booleans())
def test_batches_for_any_size(n, batch_size, drop_last):
    ours, theirs = tensor_datasets(n)
    assert list(pdata.BatchSampler(range(n), batch_size, drop_last)) == list(
        tdata.BatchSampler(range(n), batch_size, drop_last))
    same_batches(pdata.DataLoader(ours, batch_size=batch_size, drop_last=drop_last),
                 tdata.DataLoader(theirs, batch_size=batch_size, drop_last=drop_last))


# --- random_split ---------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 40), parts=st.lists(st.integers(1, 9), min_size=1, max_size=5))
def test_random_split_fractions(monkeypatch_module, n, parts):
    fractions = [p / sum(parts) for p in parts]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            theirs = tdata.random_split(range(n), fractions,
                                        generator=torch.Generator().manual_seed(5))
        except ValueError as error:
            with pytest.raises(ValueError, match=str(error)):
                pdata.random_split(range(n), fractions, generator=pyaten.Generator())
            return
        ours = pdata.random_split(range(n), fractions, generator=pyaten.Generator())
    assert [list(s.indices) for s in ours] == [list(s.indices) for s in theirs]


@pytest.fixture(scope="module")
def monkeypatch_module():
    """PyTorch's permutations for every draw of this module's split tests (seed 5)."""
    patch = pytest.MonkeyPatch()
    patch.setattr(_random, "randperm", lambda n, generator: torch.randperm(
        n, generator=torch.Generator().manual_seed(5)).tolist())
    yield patch
    patch.undo()


def test_random_split_lengths_and_errors(monkeypatch_module):
    ours = pdata.random_split(range(10), [3, 7], generator=pyaten.Generator())
    theirs = tdata.random_split(range(10), [3, 7], generator=torch.Generator().manual_seed(5))
    assert [list(s) for s in ours] == [list(s) for s in theirs]
    for lengths in ([3, 6], [0.5, 0.6], [1.5, -0.5], [0.2, 0.2]):
        same_error(lambda lengths=lengths: pdata.random_split(range(10), lengths),
                   lambda lengths=lengths: tdata.random_split(range(10), lengths))
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        pdata.random_split(range(1), [0.5, 0.5])


def test_random_split_default_generator_is_a_partition():
    parts = pdata.random_split(range(12), [0.25, 0.75])
    assert sorted(i for p in parts for i in p.indices) == list(range(12))
    assert [len(p) for p in parts] == [3, 9]


# --- construction errors and attributes -----------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"sampler": [0, 1], "shuffle": True},
    {"batch_sampler": [[0]], "batch_size": 2},
    {"batch_sampler": [[0]], "shuffle": True},
    {"batch_sampler": [[0]], "sampler": [0]},
    {"batch_sampler": [[0]], "drop_last": True},
    {"batch_size": None, "drop_last": True},
    {"num_workers": -1},
    {"timeout": -1},
    {"prefetch_factor": 2},
    {"num_workers": 1, "prefetch_factor": -1},
    {"persistent_workers": True},
    {"batch_size": 0},
])
def test_loader_errors(kwargs):
    ours, theirs = tensor_datasets(3)
    same_error(lambda: pdata.DataLoader(ours, **kwargs),
               lambda: tdata.DataLoader(theirs, **kwargs))


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"sampler": [0]},
                                    {"batch_sampler": [[0]]}])
def test_iterable_dataset_errors(kwargs):
    ours, theirs = Counting(3), TorchCounting(3)
    same_error(lambda: pdata.DataLoader(ours, **kwargs),
               lambda: tdata.DataLoader(theirs, **kwargs))


def test_frozen_attributes_and_dataset_errors():
    ours, theirs = tensor_datasets(3)
    loader, tloader = pdata.DataLoader(ours), tdata.DataLoader(theirs)
    same_error(lambda: setattr(loader, "batch_size", 2), lambda: setattr(tloader, "batch_size", 2))
    loader.num_workers = 0  # not frozen
    same_error(lambda: pdata.TensorDataset(pyaten.ones(2), pyaten.ones(3)),
               lambda: tdata.TensorDataset(torch.ones(2), torch.ones(3)))
    same_error(lambda: pdata.ConcatDataset([]), lambda: tdata.ConcatDataset([]))
    same_error(lambda: pdata.ConcatDataset([Counting(2)]),
               lambda: tdata.ConcatDataset([TorchCounting(2)]))
    same_error(lambda: pdata.Dataset()[0], lambda: tdata.Dataset()[0])


def test_reachable_like_torch():
    import pyaten as torch_like

    assert torch_like.utils.data.DataLoader is pdata.DataLoader
    for name in ("Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
                 "StackDataset", "random_split", "SequentialSampler", "RandomSampler",
                 "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DataLoader",
                 "default_collate", "default_convert", "get_worker_info"):
        assert hasattr(pdata, name) and hasattr(tdata, name), name
