"""pyaten's safetensors functions (`pyaten.serialization.save_safetensors` /
`load_safetensors`) against torch.save / torch.load: what comes back (values, dtypes, shapes,
strides, shared storage, containers) is what PyTorch's round trip gives; broken, hostile and
PyTorch-pickle files are refused with a clear error. (PyTorch's own checkpoint format, which
`pyaten.save` writes, is tested in test_checkpoint_format.py.)"""

from __future__ import annotations

import collections
import io
import json
import math
import os
import pickle

import numpy as np
import pytest
import safetensors.torch
import torch
from _helpers import DTYPE_NAMES, assert_same, from_torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.serialization import load_safetensors, save_safetensors


def round_trip(m, obj, **load_kwargs):
    buffer = io.BytesIO()
    (m.save if m is torch else save_safetensors)(obj, buffer)
    buffer.seek(0)
    if m is torch:
        return torch.load(buffer, **load_kwargs)
    return load_safetensors(buffer, **load_kwargs)


def sample(m, dtype: str, shape=(3, 4)):
    values = np.arange(math.prod(shape)).reshape(shape) - 5
    if dtype.startswith("complex"):
        values = values + 0.5j * values
    elif dtype.startswith(("float", "bfloat")):
        values = values / 4
    return m.tensor(values.tolist(), dtype=getattr(m, dtype))


def same(ours, theirs) -> None:
    """Loaded objects are the same: tensors with strides, containers with their types."""
    if isinstance(theirs, torch.Tensor):
        assert_same(ours, theirs, strides=True)
        assert ours.requires_grad == theirs.requires_grad
        assert type(ours).__name__ == type(theirs).__name__
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for key in theirs:
            same(ours[key], theirs[key])
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
    elif isinstance(theirs, float) and math.isnan(theirs):
        assert isinstance(ours, float) and math.isnan(ours)
    else:
        assert type(ours) is type(theirs) and ours == theirs, (ours, theirs)


def same_round_trip(build) -> tuple:
    ours, theirs = round_trip(pyaten, build(pyaten)), round_trip(torch, build(torch))
    same(ours, theirs)
    return ours, theirs


# --- round trips ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_every_dtype(dtype, tmp_path):
    same_round_trip(lambda m: sample(m, dtype))
    same_round_trip(lambda m: {"x": sample(m, dtype).t(), "y": sample(m, dtype)[1:, ::2]})
    path = tmp_path / f"{dtype}.safetensors"
    save_safetensors(sample(pyaten, dtype), path)
    assert_same(load_safetensors(str(path)), sample(torch, dtype))
    assert_same(pyaten.load(str(path)), sample(torch, dtype))  # pyaten.load recognises it


@pytest.mark.parametrize("view", [
    lambda t: t.t(),
    lambda t: t[1:],
    lambda t: t[:, 1::2],
    lambda t: t[2],
    lambda t: t.reshape(2, 6)[:, 3:],
    lambda t: t[:0],
    lambda t: t[1, 2],
])
def test_non_contiguous_and_views(view):
    same_round_trip(lambda m: view(m.arange(12.0).reshape(3, 4)))
    same_round_trip(lambda m: [m.arange(12.0).reshape(3, 4), view(m.arange(12.0).reshape(3, 4))])


def test_views_come_back_sharing_storage():
    def scenario(m):
        base = m.arange(12.0).reshape(3, 4)
        loaded = round_trip(m, {"base": base, "tail": base[1:], "t": base.t(), "row": base[2]})
        loaded["tail"][0, 0] = 100.0
        loaded["t"][3, 2] = -1.0
        return [loaded[k] for k in ("base", "tail", "t", "row")]

    ours, theirs = scenario(pyaten), scenario(torch)
    for a, b in zip(ours, theirs):
        assert_same(a, b, strides=True)
    assert ours[0].untyped_storage() is ours[1].untyped_storage()


def test_same_tensor_twice_is_one_object():
    for m in (pyaten, torch):
        t = m.ones(2)
        loaded = round_trip(m, [t, t, m.ones(2)])
        assert loaded[0] is loaded[1] and loaded[0] is not loaded[2]


def test_nested_containers():
    def build(m):
        return {
            "list": [1, 2.5, None, True, "text", -(2**70)],
            "tuple": (m.tensor([1, 2]), ("inner", [m.zeros(2, 2)])),
            "floats": [float("inf"), -0.0, 1e-300],
            "ordered": collections.OrderedDict([("b", 1), ("a", m.tensor(3.5))]),
            3: "int key",
            "empty": [{}, [], ()],
        }

    same_round_trip(build)
    ours = round_trip(pyaten, {"nan": float("nan"), "z": 1 + 2j, "dtype": pyaten.float16,
                               "size": pyaten.Size([2, 3])})
    assert math.isnan(ours["nan"]) and ours["z"] == 1 + 2j
    assert ours["dtype"] is pyaten.float16 and ours["size"] == pyaten.Size([2, 3])


def test_state_dict_round_trip_and_interop(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"fc1.weight": rng.standard_normal((4, 3)).astype(np.float32),
              "fc1.bias": rng.standard_normal(4).astype(np.float32),
              "steps": np.array(7)}

    def build(m):
        return collections.OrderedDict((k, m.tensor(v)) for k, v in arrays.items())

    same_round_trip(build)
    path = tmp_path / "model.safetensors"
    save_safetensors(build(pyaten), path)
    by_torch = safetensors.torch.load_file(str(path))  # an ordinary safetensors file
    for key, value in by_torch.items():
        assert_same(from_torch(value), value)
        np.testing.assert_array_equal(value.numpy(), arrays[key])
    other = tmp_path / "from_torch.safetensors"
    safetensors.torch.save_file(build(torch), str(other))
    loaded = load_safetensors(other)
    assert sorted(loaded) == sorted(arrays)
    for key in arrays:
        assert_same(loaded[key], torch.tensor(arrays[key]))


def test_requires_grad_and_map_location():
    same_round_trip(lambda m: [m.ones(2, requires_grad=True), m.ones(2)])
    loaded = round_trip(pyaten, {"w": pyaten.ones(2)}, map_location="cpu")
    assert str(loaded["w"].device) == "cpu"
    loaded = round_trip(pyaten, pyaten.ones(2), map_location={"cpu": "cpu"})
    assert str(loaded.device) == "cpu"


def test_parameters_and_module_state_dicts():
    same_round_trip(lambda m: [m.nn.Parameter(m.ones(2)),
                               m.nn.Parameter(m.zeros(3), requires_grad=False), m.ones(1)])

    def scenario(m):
        m.manual_seed(0)
        model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Linear(4, 2))
        loaded = round_trip(m, model.state_dict())
        fresh = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Linear(4, 2))
        fresh.load_state_dict(loaded)
        return loaded, [p for p in fresh.parameters()]

    ours, theirs = scenario(pyaten), scenario(torch)
    assert list(ours[0]) == list(theirs[0])
    for a, b in zip(ours[0].values(), theirs[0].values()):
        assert a.shape == b.shape and not a.requires_grad and not b.requires_grad
    for p, loaded in zip(ours[1], ours[0].values()):
        assert pyaten.equal(p.detach(), loaded)


def test_file_objects_and_paths(tmp_path):
    t = pyaten.arange(5)
    path = tmp_path / "t.safetensors"
    with open(path, "wb") as handle:
        save_safetensors(t, handle)
    with open(path, "rb") as handle:
        assert pyaten.equal(load_safetensors(handle), t)
    save_safetensors(t, str(path))
    assert pyaten.equal(load_safetensors(os.fspath(path)), t)


@pytest.mark.parametrize("obj", [{1, 2}, object(), [lambda: 0], {(1, 2): pyaten.ones(1)}])
def test_unsupported_objects_are_refused(obj):
    with pytest.raises(TypeError, match="pyaten.save_safetensors: cannot save"):
        save_safetensors(obj, io.BytesIO())


def test_meta_tensors_are_refused():
    with pytest.raises(RuntimeError, match="no data to save"):
        save_safetensors(pyaten.empty(2, device="meta"), io.BytesIO())


# --- files that must be refused -------------------------------------------------------------

def saved_bytes(obj=None) -> bytes:
    buffer = io.BytesIO()
    save_safetensors({"a": pyaten.arange(6.0), "b": [1, "x"]} if obj is None else obj, buffer)
    return buffer.getvalue()


def refused(data: bytes, match: str = "pyaten.load") -> None:
    with pytest.raises(RuntimeError, match=match):
        load_safetensors(io.BytesIO(data))


def test_truncated_files():
    data = saved_bytes()
    for cut in (0, 3, 8, 20, len(data) // 2, len(data) - 1):
        refused(data[:cut])


def test_oversized_header_length():
    data = saved_bytes()
    refused((len(data) * 10).to_bytes(8, "little") + data[8:], "larger than the file")
    refused((2**63).to_bytes(8, "little") + data[8:], "larger than the limit")


def test_corrupt_header():
    data = saved_bytes()
    size = int.from_bytes(data[:8], "little")
    refused(data[:8] + b"{" * size + data[8 + size:], "not valid JSON")
    refused(data[:8] + b"[" + b" " * (size - 1) + data[8 + size:])
    refused(data[:8] + b"\xff" * size + data[8 + size:])


def rewrite_metadata(edit) -> bytes:
    """A file whose pyaten document was changed by `edit(document)`, header re-serialized."""
    data = saved_bytes({"a": pyaten.arange(6.0), "v": pyaten.arange(6.0)[1:], "n": [1]})
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    document = json.loads(header["__metadata__"]["pyaten"])
    edit(document)
    header["__metadata__"]["pyaten"] = json.dumps(document)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + size:]


@pytest.mark.parametrize("edit", [
    lambda d: d["tensors"][1].update(sizes=[100]),
    lambda d: d["tensors"][1].update(offset=10**6),
    lambda d: d["tensors"][1].update(strides=[-1]),
    lambda d: d["tensors"][1].update(sizes=[2, 2]),
    lambda d: d["tensors"][1].update(dtype="object"),
    lambda d: d["tensors"][1].update(storage="nowhere"),
    lambda d: d["tensors"][0].update(device=3),
    lambda d: d["root"]["v"].__setitem__(0, {"t": "tensor", "i": 99}),
    lambda d: d["root"]["v"].__setitem__(2, {"t": "pickle", "v": "cos\nsystem"}),
    lambda d: d["root"].update(k=[]),
    lambda d: d.update(version=99),
    lambda d: d.update(format="other"),
    lambda d: d.update(root={"t": "list", "v": [{"t": "int", "v": "9" * 6000}]}),
    lambda d: d.update(storages={}),
    lambda d: d.update(root=[]),
])
def test_tampered_metadata(edit):
    refused(rewrite_metadata(edit), "invalid safetensors file")


def test_deep_nesting_is_refused():
    deep = {"t": "list", "v": []}
    node = deep
    for _ in range(300):
        child = {"t": "list", "v": []}
        node["v"].append(child)
        node = child
    refused(rewrite_metadata(lambda d: d.update(root=deep)), "nested too deeply")
    nested: list = []
    for _ in range(250):
        nested = [nested]
    with pytest.raises(ValueError, match="nested deeper"):
        save_safetensors(nested, io.BytesIO())


class _RunsCode:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_hostile_pickle_never_runs(tmp_path):
    marker = tmp_path / "ran"
    for protocol in (2, 4, 5):
        refused(pickle.dumps(_RunsCode(str(marker)), protocol=protocol), "load_safetensors")
    refused(pickle.dumps(_RunsCode(str(marker)), protocol=0))
    assert not marker.exists()


def test_torch_checkpoints_are_sent_to_pyaten_load(tmp_path):
    for zipped in (True, False):
        buffer = io.BytesIO()
        torch.save({"w": torch.ones(2)}, buffer, _use_new_zipfile_serialization=zipped)
        with pytest.raises(RuntimeError, match="PyTorch checkpoint") as info:
            load_safetensors(io.BytesIO(buffer.getvalue()))
        assert "pyaten.load" in str(info.value)
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(RuntimeError, match="model.pt' is a PyTorch checkpoint"):
        load_safetensors(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_files_load_or_fail_cleanly(data):
    original = bytearray(saved_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(original) - 1))
        original[position] = data.draw(st.integers(0, 255))
    try:
        load_safetensors(io.BytesIO(bytes(original)))
    except (RuntimeError, ValueError):
        pass


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_fail_cleanly(blob):
    with pytest.raises((RuntimeError, ValueError)):
        load_safetensors(io.BytesIO(blob))


def test_reachable_after_import():
    import pyaten as torch_like

    assert callable(torch_like.save) and callable(torch_like.load)


_RESIDENT = r"""
import sys
import pyaten
from pyaten.serialization import load_safetensors

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

open("/proc/self/clear_refs", "w").write("5")  # the peak starts here
before = status("VmRSS")
loaded = load_safetensors(sys.argv[1])
print(status("VmHWM") - before, sum(t.numel() * t.element_size() for t in loaded.values()))
"""


def test_loading_reads_each_tensor_once(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "big.safetensors"
    save_safetensors({f"w{i}": pyaten.full((2**21,), float(i)) for i in range(8)}, path)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", _RESIDENT, str(path)], capture_output=True,
                          text=True, timeout=120, cwd=root, check=True,
                          env=dict(os.environ, PYTHONPATH=root))
    added, total = map(int, done.stdout.split())
    assert total == 64 * 2**20 and added < total * 1.25  # was three times the size


def test_oversized_pyaten_document_is_refused():
    refused(rewrite_metadata(lambda d: d.update(pad="x" * (17 << 20))), "more than the limit")
