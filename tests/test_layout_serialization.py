"""pyaten.save / pyaten.load of quantized tensors in PyTorch's format, both ways against
PyTorch 2.13 (`torch._utils._rebuild_qtensor` records, read by torch.load's weights_only
default)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

_DTYPES = {"quint8": (torch.quint8, pyaten.quint8), "qint8": (torch.qint8, pyaten.qint8),
           "qint32": (torch.qint32, pyaten.qint32)}


def _name(x: object) -> str:
    return str(x).split(".")[-1]


def _same(expected: object, actual: object) -> None:
    assert _name(actual.dtype) == _name(expected.dtype)
    assert tuple(actual.shape) == tuple(expected.shape)
    assert tuple(actual.stride()) == tuple(expected.stride())
    assert _name(actual.qscheme()) == _name(expected.qscheme())
    if expected.qscheme() == torch.per_tensor_affine:
        assert actual.q_scale() == expected.q_scale()
        assert actual.q_zero_point() == expected.q_zero_point()
    else:
        np.testing.assert_array_equal(actual.q_per_channel_scales().numpy(),
                                      expected.q_per_channel_scales().numpy())
        np.testing.assert_array_equal(actual.q_per_channel_zero_points().numpy(),
                                      expected.q_per_channel_zero_points().numpy())
        assert actual.q_per_channel_axis() == expected.q_per_channel_axis()
    np.testing.assert_array_equal(actual.int_repr().numpy(), expected.int_repr().numpy())


def _torch_bytes(obj: object) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _pyaten_bytes(obj: object) -> bytes:
    buf = io.BytesIO()
    pyaten.save(obj, buf)
    return buf.getvalue()


def _pair_per_tensor(values: np.ndarray, scale: float, zp: int, name: str) -> tuple:
    tdt, pdt = _DTYPES[name]
    return (torch.quantize_per_tensor(torch.from_numpy(values), scale, zp, tdt),
            pyaten.quantize_per_tensor(pyaten.from_numpy(values), scale, zp, pdt))


def _pair_per_channel(values: np.ndarray, axis: int, name: str) -> tuple:
    tdt, pdt = _DTYPES[name]
    n = values.shape[axis]
    scales = np.linspace(0.05, 0.3, n)
    zps = np.arange(n, dtype=np.int64) % 5
    return (torch.quantize_per_channel(torch.from_numpy(values), torch.from_numpy(scales),
                                       torch.from_numpy(zps), axis, tdt),
            pyaten.quantize_per_channel(pyaten.from_numpy(values), pyaten.from_numpy(scales),
                                        pyaten.from_numpy(zps), axis, pdt))


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 4), cols=st.integers(1, 5), name=st.sampled_from(sorted(_DTYPES)),
       scale=st.sampled_from([0.01, 0.1, 0.37]), zp=st.integers(0, 10), seed=st.integers(0, 99))
def test_per_tensor_files_interchange(rows, cols, name, scale, zp, seed) -> None:
    values = np.random.default_rng(seed).normal(size=(rows, cols)).astype(np.float32)
    tq, pq = _pair_per_tensor(values, scale, zp, name)
    _same(tq, pyaten.load(io.BytesIO(_torch_bytes(tq))))
    _same(tq, torch.load(io.BytesIO(_pyaten_bytes(pq))))  # weights_only: PyTorch's allow-list


@settings(max_examples=10, deadline=None)
@given(axis=st.integers(0, 2), name=st.sampled_from(["quint8", "qint8"]), seed=st.integers(0, 99))
def test_per_channel_files_interchange(axis, name, seed) -> None:
    values = np.random.default_rng(seed).normal(size=(3, 2, 4)).astype(np.float32)
    tq, pq = _pair_per_channel(values, axis, name)
    _same(tq, pyaten.load(io.BytesIO(_torch_bytes(tq))))
    _same(tq, torch.load(io.BytesIO(_pyaten_bytes(pq))))


def test_views_keep_their_geometry_and_share_storage() -> None:
    values = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    tq, pq = _pair_per_tensor(values, 0.1, 2, "quint8")
    tdict = {"whole": tq, "row": tq[2], "t": tq.t()}
    pdict = {"whole": pq, "row": pq[2], "t": pq.t()}
    from_torch = pyaten.load(io.BytesIO(_torch_bytes(tdict)))
    from_pyaten = torch.load(io.BytesIO(_pyaten_bytes(pdict)))
    for key in tdict:
        _same(tdict[key], from_torch[key])
        _same(tdict[key], from_pyaten[key])
        assert from_torch[key].storage_offset() == tdict[key].storage_offset()
        assert from_pyaten[key].storage_offset() == tdict[key].storage_offset()
    # one storage record for the three views, as PyTorch writes it
    assert from_pyaten["row"].untyped_storage().data_ptr() == \
        from_pyaten["whole"].untyped_storage().data_ptr()


def test_mixed_checkpoint_with_dense_and_quantized() -> None:
    values = np.random.default_rng(1).normal(size=(2, 3)).astype(np.float32)
    tq, pq = _pair_per_channel(values, 1, "qint8")
    loaded = torch.load(io.BytesIO(_pyaten_bytes({"w": pq, "bias": pyaten.ones(3), "n": 7})))
    _same(tq, loaded["w"])
    assert torch.equal(loaded["bias"], torch.ones(3)) and loaded["n"] == 7
    back = pyaten.load(io.BytesIO(_torch_bytes({"w": tq, "bias": torch.ones(3)})))
    _same(tq, back["w"])
    assert back["bias"].dtype is pyaten.float32


def test_float_qparams_is_written_as_per_channel_affine_like_torch() -> None:
    weights = torch.randn(4, 3)
    tq = torch.quantize_per_channel(weights, torch.rand(4) + 0.1, torch.zeros(4),
                                    0, torch.quint8)
    assert tq.qscheme() == torch.per_channel_affine_float_qparams
    pq = pyaten.load(io.BytesIO(_torch_bytes(tq)))
    expected = torch.load(io.BytesIO(_torch_bytes(tq)))  # PyTorch's own round trip
    assert _name(pq.qscheme()) == _name(expected.qscheme())
    np.testing.assert_array_equal(pq.int_repr().numpy(), expected.int_repr().numpy())
    np.testing.assert_array_equal(pq.dequantize().numpy(), expected.dequantize().numpy())
    again = torch.load(io.BytesIO(_pyaten_bytes(pq)))
    assert again.qscheme() == torch.per_channel_affine_float_qparams
    np.testing.assert_array_equal(again.dequantize().numpy(), expected.dequantize().numpy())


def test_bad_per_channel_records_raise_as_torch() -> None:
    from pyaten.serialization import torch_names

    storage = torch_names.TypedStorage(pyaten.zeros(6, dtype=pyaten.int8).untyped_storage(),
                                       pyaten.qint8)
    scales, zps = pyaten.ones(2, dtype=pyaten.float64), pyaten.zeros(2, dtype=pyaten.int64)
    with pytest.raises(ValueError, match="per_channel axis 2 out of range"):
        torch_names._rebuild_qtensor(storage, 0, (2, 3), (3, 1),
                                     (pyaten.per_channel_affine, scales, zps, 2), False, {})
    with pytest.raises(ValueError, match="size\\[axis\\]=3, got scales=2"):
        torch_names._rebuild_qtensor(storage, 0, (2, 3), (3, 1),
                                     (pyaten.per_channel_affine, scales, zps, 1), False, {})
    with pytest.raises(RuntimeError, match="past the end of its storage"):
        torch_names._rebuild_qtensor(storage, 0, (3, 3), (3, 1),
                                     (pyaten.per_tensor_affine, 0.1, 0), False, {})


# --- strided nested tensors (`torch._utils._rebuild_nested_tensor`) ----------------------------

def _nested_same(ours: object, theirs: object) -> None:
    mine, ref = ours.unbind(), theirs.unbind()
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        assert tuple(a.shape) == tuple(b.shape) and tuple(a.stride()) == tuple(b.stride())
        assert _name(a.dtype) == _name(b.dtype)
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@settings(max_examples=10, deadline=None)
@given(rows=st.lists(st.integers(0, 4), min_size=1, max_size=4), width=st.integers(1, 3),
       transposed=st.booleans(), dtype=st.sampled_from(["float32", "int64"]),
       seed=st.integers(0, 99))
def test_strided_nested_files_interchange(rows, width, transposed, dtype, seed) -> None:
    rng = np.random.default_rng(seed)
    arrays = [rng.integers(-9, 9, size=(r, width)).astype(dtype) for r in rows]
    tn = torch.nested.nested_tensor([torch.from_numpy(a) for a in arrays])
    pn = pyaten.nested.nested_tensor([pyaten.from_numpy(a) for a in arrays])
    if transposed:
        tn, pn = tn.transpose(1, 2), pn.transpose(1, 2)
    _nested_same(pyaten.load(io.BytesIO(_torch_bytes(tn))), tn)
    _nested_same(pn, torch.load(io.BytesIO(_pyaten_bytes(pn))))


@pytest.mark.parametrize("transform", ["plain", "scaled", "transposed", "grad"])
def test_jagged_nested_files_interchange(transform) -> None:
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((n, 3)).astype(np.float32) for n in (2, 4, 1)]
    grad = transform == "grad"
    tn = torch.nested.nested_tensor([torch.from_numpy(a) for a in arrays], layout=torch.jagged,
                                    requires_grad=grad)
    pn = pyaten.nested.nested_tensor([pyaten.from_numpy(a) for a in arrays],
                                     layout=pyaten.jagged, requires_grad=grad)
    if transform == "scaled":  # torch.compile's marks ride in PyTorch's state: read, dropped
        tn, pn = tn * 2, pn * 2
    elif transform == "transposed":
        tn, pn = tn.transpose(1, 2), pn.transpose(1, 2)
    from_torch = pyaten.load(io.BytesIO(_torch_bytes(tn)))
    from_pyaten = torch.load(io.BytesIO(_pyaten_bytes(pn)))
    for ours, theirs in ((from_torch, tn), (pn, from_pyaten)):
        assert ours.layout is pyaten.jagged and theirs.layout == torch.jagged
        assert ours.requires_grad == theirs.requires_grad == grad
        assert ours._ragged_idx == theirs._ragged_idx
        np.testing.assert_array_equal(ours.offsets().numpy(), theirs.offsets().numpy())
        for a, b in zip(ours.unbind(), theirs.unbind()):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_jagged_tensors_sharing_offsets_share_their_ragged_size() -> None:
    tn = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3)], layout=torch.jagged)
    pair = pyaten.load(io.BytesIO(_torch_bytes({"a": tn, "b": tn.sin()})))
    assert pair["a"].shape[1] is pair["b"].shape[1]
    other = pyaten.load(io.BytesIO(_torch_bytes(tn)))
    assert other.shape[1] is not pair["a"].shape[1]


def test_bad_nested_records_are_refused() -> None:
    from pyaten.serialization import torch_names

    buffer = pyaten.zeros(6)
    sizes = pyaten.tensor([[2, 3]])
    with pytest.raises(RuntimeError, match="reaches past the end of its buffer"):
        torch_names._rebuild_nested_tensor(buffer, sizes, pyaten.tensor([[3, 1]]),
                                           pyaten.tensor([1]))
    with pytest.raises(RuntimeError, match="inconsistent shapes"):
        torch_names._rebuild_nested_tensor(buffer, sizes, pyaten.tensor([3, 1]),
                                           pyaten.tensor([0]))
    with pytest.raises(RuntimeError, match="not int64"):
        torch_names._rebuild_nested_tensor(buffer, sizes.int(), pyaten.tensor([[3, 1]]),
                                           pyaten.tensor([0]))
    values = pyaten.zeros(5, 2)
    for offsets, match in ((pyaten.tensor([0, 2, 4]), "do not split the values"),
                           (pyaten.tensor([0, 3, 2, 5]), "do not split the values"),
                           (pyaten.tensor([[0, 5]]), "not a 1-D int64")):
        with pytest.raises(RuntimeError, match=match):
            torch_names._rebuild_njt({"values": values, "offsets": offsets})
    with pytest.raises(RuntimeError, match="lengths"):
        torch_names._rebuild_njt({"values": values, "offsets": pyaten.tensor([0, 5]),
                                  "lengths": pyaten.tensor([5])})
