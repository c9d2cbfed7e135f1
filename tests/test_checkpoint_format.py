"""pyaten.save / pyaten.load in PyTorch's checkpoint format, both ways against torch: what one
saves the other loads (every dtype, views sharing storage, modules, optimizers, NumPy
arrays, the legacy format), `weights_only` by default with PyTorch's allow-list, mmap and
map_location; hostile and corrupt files refused with nothing executed; memory bounded."""

from __future__ import annotations

import collections
import io
import os
import pickle
import pickletools
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch
from _helpers import DTYPE_NAMES, assert_same
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.serialization import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def saved(m, obj, **kwargs) -> bytes:
    buffer = io.BytesIO()
    m.save(obj, buffer, **kwargs)
    return buffer.getvalue()


def sample(m, dtype: str, shape=(3, 4)):
    values = np.arange(np.prod(shape)).reshape(shape) - 5
    if dtype.startswith("complex"):
        values = values + 0.5j * values
    elif dtype.startswith(("float", "bfloat")):
        values = values / 4
    return m.tensor(values.tolist(), dtype=getattr(m, dtype))


def views(m, dtype: str) -> dict:
    base = sample(m, dtype)
    return {"base": base, "t": base.t(), "tail": base[1:, ::2], "row": base[2], "empty": base[:0]}


def check_views(ours, theirs) -> None:
    """`ours` (pyaten's or torch's tensors) equal torch's `theirs`, strides and offsets too."""
    for key in theirs:
        if isinstance(ours[key], torch.Tensor):
            assert ours[key].dtype == theirs[key].dtype and torch.equal(ours[key], theirs[key])
            assert ours[key].stride() == theirs[key].stride()
        else:
            assert_same(ours[key], theirs[key], strides=True)
        assert ours[key].storage_offset() == theirs[key].storage_offset()


# --- both ways ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_every_dtype_both_ways(dtype):
    theirs = torch.load(io.BytesIO(saved(pyaten, views(pyaten, dtype))), weights_only=True)
    check_views(theirs, views(torch, dtype))  # what torch reads from pyaten's file
    ours = pyaten.load(io.BytesIO(saved(torch, views(torch, dtype))))
    check_views(ours, views(torch, dtype))  # what pyaten reads from torch's file
    assert all(ours[k].untyped_storage() is ours["base"].untyped_storage() for k in ours)
    theirs["tail"][0, 0] = 1  # torch's loaded views share one storage too
    assert theirs["base"][1, 0].item() == 1


def test_views_share_storage_after_loading():
    for m in (pyaten, torch):
        loaded = pyaten.load(io.BytesIO(saved(m, views(m, "float32"))))
        loaded["tail"][0, 0] = 100.0
        assert loaded["base"][1, 0].item() == 100.0
        assert loaded["t"][0, 1].item() == 100.0


def test_pickle_is_the_one_torch_writes():
    def build(m):
        t = m.arange(6.0).reshape(2, 3)
        return {"w": t, "v": t[1:], "p": m.nn.Parameter(m.ones(2)), "s": m.Size([2, 3]),
                "d": m.float16, "i": m.zeros(2, dtype=m.int64), "bf": m.ones(1, dtype=m.bfloat16),
                "g": m.ones(1, requires_grad=True), "l": [1, 2.5, "x", None, (1, 2)],
                "o": collections.OrderedDict(a=m.zeros(1)), "dev": m.device("cpu")}

    ours = zipfile.ZipFile(io.BytesIO(saved(pyaten, build(pyaten))))
    theirs = zipfile.ZipFile(io.BytesIO(saved(torch, build(torch))))
    assert ours.namelist() == theirs.namelist()
    for name in theirs.namelist():
        if not name.endswith("serialization_id"):
            assert ours.read(name) == theirs.read(name), name
    raw = saved(pyaten, build(pyaten))
    for info in ours.infolist():  # every record's bytes start on a 64-byte boundary
        start = info.header_offset + 30 + struct.unpack_from("<HH", raw, info.header_offset + 26)[0]
        start += struct.unpack_from("<HH", raw, info.header_offset + 26)[1]
        assert start % 64 == 0 and info.compress_type == zipfile.ZIP_STORED


def test_module_and_optimizer_state_dicts_both_ways():
    def trained(m):
        m.manual_seed(0)
        model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.ReLU(), m.nn.Linear(4, 2))
        with m.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(m.arange(p.numel(), dtype=m.float32).reshape(p.shape) / (i + 5))
        opt = m.optim.Adam(model.parameters(), lr=0.1)
        model(m.ones(2, 3)).sum().backward()
        opt.step()
        return model, opt

    for source, target in ((pyaten, torch), (torch, pyaten)):
        model, opt = trained(source)
        blob = saved(source, {"model": model.state_dict(), "opt": opt.state_dict()})
        loaded = target.load(io.BytesIO(blob), weights_only=True)
        fresh, fresh_opt = trained(target)
        fresh.load_state_dict(loaded["model"])
        fresh_opt.load_state_dict(loaded["opt"])
        assert list(loaded["model"]) == list(model.state_dict())
        assert loaded["opt"]["param_groups"] == opt.state_dict()["param_groups"]
        for ours, theirs in zip(fresh.parameters(), model.parameters()):
            assert np.array_equal(np.asarray(ours.detach().tolist()),
                                  np.asarray(theirs.detach().tolist()))
        state = loaded["opt"]["state"][0]
        assert sorted(state) == ["exp_avg", "exp_avg_sq", "step"]


def test_whole_modules_need_weights_only_false():
    model = pyaten.nn.Sequential(pyaten.nn.Linear(3, 2), pyaten.nn.ReLU())
    blob = saved(pyaten, model)
    in_torch = torch.load(io.BytesIO(blob), weights_only=False)
    assert type(in_torch) is torch.nn.Sequential and type(in_torch[0]) is torch.nn.Linear
    x = [[1.0, 2.0, 3.0]]
    assert np.allclose(in_torch(torch.tensor(x)).tolist(), model(pyaten.tensor(x)).tolist())
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.container.Sequential"):
        pyaten.load(io.BytesIO(blob))
    back = pyaten.load(io.BytesIO(saved(torch, in_torch)), weights_only=False)
    assert type(back) is pyaten.nn.Sequential
    assert np.allclose(back(pyaten.tensor(x)).tolist(), model(pyaten.tensor(x)).tolist())
    with safe_globals([pyaten.nn.Sequential, pyaten.nn.Linear, pyaten.nn.ReLU, set]):
        allowed = pyaten.load(io.BytesIO(blob))
    assert type(allowed) is pyaten.nn.Sequential


def test_numpy_arrays_with_weights_only_false():
    obj = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.float64(2.5)}
    for m in (pyaten, torch):
        blob = saved(m, obj)
        for reader in (pyaten, torch):
            loaded = reader.load(io.BytesIO(blob), weights_only=False)
            assert np.array_equal(loaded["a"], obj["a"]) and loaded["b"] == 2.5
        with pytest.raises(pickle.UnpicklingError, match="numpy"):
            pyaten.load(io.BytesIO(blob))


def test_legacy_format_both_ways(tmp_path):
    for m in (torch, pyaten):
        blob = saved(m, views(m, "float64"), _use_new_zipfile_serialization=False)
        assert blob[:2] == b"\x80\x02"  # a pickle sequence, not a zip
        for reader in (pyaten, torch):
            check_views(reader.load(io.BytesIO(blob)), views(torch, "float64"))
        path = tmp_path / f"{m.__name__}.pt"
        path.write_bytes(blob)
        check_views(pyaten.load(path), views(torch, "float64"))
        check_views(pyaten.load(path, weights_only=False), views(torch, "float64"))
        with pytest.raises(RuntimeError, match="mmap can only be used"):
            pyaten.load(path, mmap=True)


def test_scalars_containers_and_parameters():
    def build(m):
        return {"ints": [1, -(2**70), True], "floats": (0.5, float("inf")), "none": None,
                "text": "é", "bytes": b"\x00\xff", "set": {1, 2}, "complex": 1 + 2j,
                "param": m.nn.Parameter(m.ones(2)), "frozen": m.nn.Parameter(m.ones(1), False),
                "size": m.Size([2, 3]), "dtype": m.bfloat16, "device": m.device("cpu"),
                "meta": m.empty(2, 3, device="meta"), "counter": collections.Counter(a=2)}

    for source, target in ((pyaten, torch), (torch, pyaten)):
        loaded = target.load(io.BytesIO(saved(source, build(source))), weights_only=True)
        expect = build(target)
        for key in ("ints", "floats", "none", "text", "bytes", "set", "complex", "counter"):
            assert loaded[key] == expect[key] and type(loaded[key]) is type(expect[key])
        assert type(loaded["param"]) is type(expect["param"]) and loaded["param"].requires_grad
        assert not loaded["frozen"].requires_grad
        assert loaded["size"] == expect["size"] and type(loaded["size"]) is type(expect["size"])
        assert loaded["dtype"] is expect["dtype"] and loaded["device"] == expect["device"]
        assert loaded["meta"].device.type == "meta" and tuple(loaded["meta"].shape) == (2, 3)


# --- weights_only and the allow-list ----------------------------------------------------

class Point:
    def __init__(self, x: int) -> None:
        self.x = x


def test_safe_globals():
    blob = saved(torch, {"p": Point(3)})
    message = "GLOBAL test_checkpoint_format.Point was not an allowed global by default"
    with pytest.raises(pickle.UnpicklingError, match=message) as info:
        pyaten.load(io.BytesIO(blob))
    assert "weights_only" in str(info.value)
    with safe_globals([Point]):
        assert Point in get_safe_globals()
        assert pyaten.load(io.BytesIO(blob))["p"].x == 3
    assert Point not in get_safe_globals()
    add_safe_globals([(Point, "test_checkpoint_format.Point")])
    try:
        assert pyaten.load(io.BytesIO(blob))["p"].x == 3
    finally:
        clear_safe_globals()
    assert get_safe_globals() == []
    assert pyaten.load(io.BytesIO(blob), weights_only=False)["p"].x == 3
    with pytest.raises(ValueError, match="tuple of length 2"):
        add_safe_globals([(Point,)])
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        pyaten.load(io.BytesIO(blob), pickle_module=pickle, weights_only=True)


def test_error_messages_follow_torch():
    for blob in (saved(torch, {"p": Point(1)}), saved(torch, [_RunsCode("/nonexistent")])):
        with pytest.raises(pickle.UnpicklingError) as ours:
            pyaten.load(io.BytesIO(blob))
        with pytest.raises(pickle.UnpicklingError) as theirs:
            torch.load(io.BytesIO(blob))
        for line in str(theirs.value).replace("torch.serialization", "pyaten.serialization") \
                .splitlines():
            if "GLOBAL" in line:
                assert line.split("GLOBAL")[1] in str(ours.value)


# --- map_location and mmap -----------------------------------------------------------------

def test_map_location_forms(tmp_path):
    blob = saved(torch, views(torch, "float32"))
    seen = []

    def keep(storage, location):
        seen.append(location)
        return None

    for option in ("cpu", pyaten.device("cpu"), {"cpu": "cpu"}, keep,
                   lambda storage, location: storage):
        check_views(pyaten.load(io.BytesIO(blob), map_location=option), views(torch, "float32"))
    assert seen == ["cpu"]
    with pytest.raises(RuntimeError, match="deserialize object on a CUDA device"):
        pyaten.load(io.BytesIO(blob), map_location="cuda:0")
    with pytest.raises(RuntimeError, match="deserialize object on a CUDA device"):
        pyaten.load(io.BytesIO(blob), map_location={"cpu": "cuda"})
    with pytest.raises(TypeError, match="map_location"):
        pyaten.load(io.BytesIO(blob), map_location=3)
    meta = pyaten.load(io.BytesIO(blob), map_location="meta")
    assert meta["base"].device.type == "meta"


def test_mmap_maps_without_copying(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(views(torch, "float32"), path)
    before = path.read_bytes()
    loaded = pyaten.load(path, mmap=True)
    check_views(loaded, views(torch, "float32"))
    loaded["base"][0, 0] = 42.0  # copy-on-write: the file keeps its bytes
    assert loaded["tail"].storage_offset() == 4 and path.read_bytes() == before
    with pytest.raises(ValueError, match="file path in order to use the mmap"):
        pyaten.load(io.BytesIO(before), mmap=True)


_RESIDENT = r"""
import sys
import numpy as np
import pyaten
import pyaten.serialization

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

path, mmap = sys.argv[1], sys.argv[2] == "1"
open("/proc/self/clear_refs", "w").write("5")  # the peak starts here
before = status("VmRSS")
loaded = pyaten.load(path, mmap=mmap)
total = sum(t.numel() * t.element_size() for t in loaded.values())
print(status("VmHWM") - before, total)
"""


def resident_growth(path, mmap: bool) -> tuple[int, int]:
    done = subprocess.run(
        [sys.executable, "-c", _RESIDENT, str(path), "1" if mmap else "0"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    added, total = map(int, done.stdout.split())
    return added, total


def test_resident_memory_of_a_load(tmp_path):
    path = tmp_path / "big.pt"
    torch.save({f"w{i}": torch.full((2**21,), float(i)) for i in range(8)}, path)  # 64 MiB
    added, total = resident_growth(path, mmap=True)
    assert total == 64 * 2**20 and added < total // 10
    added, total = resident_growth(path, mmap=False)
    assert total * 0.9 < added < total * 1.25  # the tensors' bytes, read once


# --- hostile and corrupt files --------------------------------------------------------------

class _RunsCode:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


class _Execs(_RunsCode):
    def __reduce__(self):
        return (exec, (f"open({self.path!r}, 'w').close()",))


class _Evals(_RunsCode):
    def __reduce__(self):
        return (eval, (f"open({self.path!r}, 'w')",))


class _Mkdir(_RunsCode):
    def __reduce__(self):
        return (os.mkdir, (self.path,))


class _Popen(_RunsCode):
    def __reduce__(self):
        return (subprocess.Popen, (["touch", self.path],))


class Global:
    """A global written under any name (for crafting pickles)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: object) -> None:
        raise AssertionError("never called")


class Call:
    def __init__(self, func: Global, *args: object) -> None:
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


class Pid:
    def __init__(self, *pid: object) -> None:
        self.pid = pid


class Crafter(pickle._Pickler):
    def reducer_override(self, obj):
        return obj.name if isinstance(obj, Global) else NotImplemented

    def save_global(self, obj, name=None):
        if not isinstance(obj, Global):
            return super().save_global(obj, name)
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, Pid) else None


def crafted(obj: object) -> bytes:
    buffer = io.BytesIO()
    Crafter(buffer, 2).dump(obj)
    return buffer.getvalue()


def archive(pickled: bytes, records: dict | None = None, method=zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as z:
        z.writestr("archive/data.pkl", pickled)
        z.writestr("archive/byteorder", "little")
        for key, data in (records or {}).items():
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", "3\n")
    return buffer.getvalue()


FLOAT = Global("torch", "FloatStorage")
REBUILD = Global("torch._utils", "_rebuild_tensor_v2")
HOOKS = Call(Global("collections", "OrderedDict"))


def tensor_record(key="0", numel=4, offset=0, size=(4,), stride=(1,)) -> Call:
    return Call(REBUILD, Pid("storage", FLOAT, key, "cpu", numel), offset, size, stride, False,
                HOOKS)


FOUR_FLOATS = {"0": np.arange(4, dtype=np.float32).tobytes()}


def good_file() -> bytes:
    return archive(crafted([tensor_record()]), FOUR_FLOATS)


def legacy(obj_pickle: bytes, keys=("0",), data=b"") -> bytes:
    header = b"".join(pickle.dumps(v, protocol=2) for v in (
        0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True}))
    return header + obj_pickle + pickle.dumps(list(keys), protocol=2) + data


def hostile_files(sentinel: str) -> dict[str, tuple[bytes, type, str]]:
    """name -> (file, the error class, a piece of its message)."""
    code = [_RunsCode(sentinel), _Execs(sentinel), _Evals(sentinel), _Mkdir(sentinel),
            _Popen(sentinel)]
    files = {
        f"code-{type(c).__name__}": (archive(pickle.dumps(c, protocol=2)),
                                     pickle.UnpicklingError, "GLOBAL")
        for c in code
    }
    too_far = archive(crafted([tensor_record(offset=3, size=(2,))]), FOUR_FLOATS)
    truncated = good_file()
    unicode_past_end = archive(b"\x80\x02X\xff\xff\xff\x7fabc.")
    central = good_file()
    end = central.rfind(b"PK\x05\x06")
    many_entries = central[:end + 8] + struct.pack("<HH", 0xFFFE, 0xFFFE) + central[end + 12:]
    files.update({
        "code-protocol-4": (archive(pickle.dumps(_RunsCode(sentinel), protocol=4)),
                            pickle.UnpicklingError, "posix.system"),
        "unknown-global": (archive(crafted(Call(Global("shutil", "rmtree"), sentinel))),
                           pickle.UnpicklingError, "GLOBAL shutil.rmtree"),
        "build-tensor-fields": (archive(crafted(_Build(tensor_record(), {"_sizes": (10**9,)})),
                                        FOUR_FLOATS), pickle.UnpicklingError, "build"),
        "tensor-constructor": (archive(crafted(Call(Global("torch", "Tensor"), 2**40))),
                               pickle.UnpicklingError, "reduce"),
        "huge-bytearray": (archive(crafted(Call(Global("builtins", "bytearray"), 2**40))),
                           RuntimeError, "bytearray"),
        "not-a-storage-pid": (archive(crafted(Pid("module", "os", "system"))),
                              pickle.UnpicklingError, "persistent_load of storage"),
        "text-opcodes": (archive(b"(cos\nsystem\nS'touch x'\no."), pickle.UnpicklingError,
                         "GLOBAL os.system"),
        "bad-storage-key": (archive(crafted([tensor_record(key="../../etc/passwd")]),
                                    FOUR_FLOATS), RuntimeError, "no record"),
        "offset-out-of-range": (too_far, RuntimeError, "past the end of its storage"),
        "huge-size": (archive(crafted([tensor_record(size=(2**40,))]), FOUR_FLOATS),
                      RuntimeError, "past the end of its storage"),
        "huge-declared-storage": (archive(crafted([tensor_record(numel=2**40)]), FOUR_FLOATS),
                                  RuntimeError, "record holds 16 bytes"),
        "negative-stride": (archive(crafted([tensor_record(stride=(-1,))]), FOUR_FLOATS),
                            RuntimeError, "non-negative"),
        "string-past-end": (unicode_past_end, pickle.UnpicklingError, "truncated"),
        "truncated-zip": (truncated[: len(truncated) // 2], RuntimeError, "central directory"),
        "compressed-storage": (archive(crafted([tensor_record()]), FOUR_FLOATS,
                                       zipfile.ZIP_DEFLATED), RuntimeError, "compressed"),
        "entry-count-beyond-directory": (many_entries, RuntimeError, "does not fit"),
        "no-data-pkl": (_without_data_pkl(), RuntimeError, "no data.pkl"),
        "legacy-code": (legacy(pickle.dumps(_RunsCode(sentinel), protocol=2)),
                        pickle.UnpicklingError, "posix.system"),
        "legacy-huge-storage": (legacy(crafted([Call(REBUILD, Pid("storage", FLOAT, "0", "cpu",
                                                                   2**40, None), 0, (1,), (1,),
                                                     False, HOOKS)])),
                                RuntimeError, "more than the rest of the file"),
    })
    return files


class _Build:
    """An object whose pickle BUILDs `state` into `inner` after making it."""

    def __init__(self, inner: object, state: dict) -> None:
        self.inner, self.state = inner, state

    def __reduce__(self):
        return (self.inner.func, self.inner.args, (None, self.state))


def _without_data_pkl() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("archive/version", "3\n")
    return buffer.getvalue()


HOSTILE_NAMES = sorted(hostile_files("/unused"))


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_and_corrupt_files_are_refused(name, tmp_path):
    sentinel = tmp_path / "ran"
    data, error, message = hostile_files(str(sentinel))[name]
    with pytest.raises(error, match=message):
        pyaten.load(io.BytesIO(data))
    path = tmp_path / "file.pt"
    path.write_bytes(data)
    with pytest.raises(error):
        pyaten.load(path, mmap=data[:2] == b"PK")
    assert not sentinel.exists()


def test_there_are_twenty_hostile_files():
    assert len(HOSTILE_NAMES) >= 20


def test_the_crafting_helpers_make_loadable_files():
    loaded = pyaten.load(io.BytesIO(good_file()))
    assert loaded[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    record = Call(REBUILD, Pid("storage", FLOAT, "0", "cpu", 4, None), 0, (4,), (1,), False,
                  HOOKS)
    data = legacy(crafted([record]), data=struct.pack("<q", 4) + FOUR_FLOATS["0"])
    assert pyaten.load(io.BytesIO(data))[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.load(io.BytesIO(data))[0].tolist() == [0.0, 1.0, 2.0, 3.0]


_REFERENCES = r"""
import io, sys
import pyaten
import pyaten.serialization

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

data = open(sys.argv[1], "rb").read()
open("/proc/self/clear_refs", "w").write("5")  # the peak starts here
before = status("VmRSS")
loaded = pyaten.load(io.BytesIO(data))
print(status("VmHWM") - before, len(loaded))
"""


def references_file(count: int) -> bytes:
    """A list of one tensor and `count` memo fetches of it: 2 bytes of pickle a reference."""
    head = crafted([tensor_record()])
    body = head[: head.rindex(b"a.")]  # the list and the tensor on the stack
    pickled = body + b"q\xffa(" + b"h\xff" * count + b"e."
    return archive(pickled, FOUR_FLOATS)


@pytest.mark.parametrize("count", [1_000_000])
def test_a_million_references_load_in_bounded_memory(count, tmp_path):
    path = tmp_path / "references.pt"
    path.write_bytes(references_file(count))
    done = subprocess.run(
        [sys.executable, "-c", _REFERENCES, str(path)], capture_output=True, text=True,
        timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), check=True,
    )
    added, length = map(int, done.stdout.split())
    assert length == count + 1
    assert added < 64 * 2**20  # 8 bytes a reference, the file, the interpreter's stack


def test_many_tensor_records_cost_a_few_hundred_bytes_each(tmp_path):
    count = 5_000
    base = pyaten.zeros(4)
    path = tmp_path / "records.pt"
    pyaten.save([base[i % 4 :] for i in range(count)], path)
    done = subprocess.run(
        [sys.executable, "-c", _REFERENCES, str(path)], capture_output=True, text=True,
        timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), check=True,
    )
    added, length = map(int, done.stdout.split())
    assert length == count
    assert added < count * 1024 + 2 * path.stat().st_size + 8 * 2**20


# --- properties ---------------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_checkpoints_load_or_fail_cleanly(data):
    original = bytearray(saved(pyaten, {"a": pyaten.arange(6.0), "b": [1, "x"]}))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(original) - 1))
        original[position] = data.draw(st.integers(0, 255))
    try:
        pyaten.load(io.BytesIO(bytes(original)))
    except (RuntimeError, pickle.UnpicklingError, ValueError):
        pass


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_fail_cleanly(blob):
    with pytest.raises((RuntimeError, pickle.UnpicklingError, ValueError)):
        pyaten.load(io.BytesIO(b"PK\x03\x04" + blob))
    with pytest.raises((RuntimeError, pickle.UnpicklingError, ValueError)):
        pyaten.load(io.BytesIO(b"\x80\x02" + blob))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=3), st.sampled_from(DTYPE_NAMES))
def test_random_views_round_trip_with_torch(shape, dtype):
    source = sample(torch, dtype, tuple(s + 1 for s in shape))
    view = source[..., ::2]
    blob = saved(torch, {"v": view, "base": source})
    ours = pyaten.load(io.BytesIO(blob))
    assert_same(ours["v"], view, strides=True)
    back = torch.load(io.BytesIO(saved(pyaten, ours)))
    assert_same(ours["base"], back["base"], strides=True)
    assert back["v"].untyped_storage().data_ptr() == back["base"].untyped_storage().data_ptr()


def test_pickletools_reads_what_pyaten_writes():
    pickletools.dis(zipfile.ZipFile(io.BytesIO(saved(pyaten, views(pyaten, "int64"))))
                    .read("archive/data.pkl"), out=io.StringIO())


def test_unsafe_globals_in_checkpoint_as_torch_lists_them(tmp_path):
    import datetime

    from pyaten.serialization import get_unsafe_globals_in_checkpoint

    path = tmp_path / "mixed.pt"
    torch.save({"a": np.arange(3), "d": datetime.date(2020, 1, 1), "t": torch.ones(2),
                "s": {1}, "p": Point(1)}, path)
    ours = get_unsafe_globals_in_checkpoint(path)
    assert set(ours) == set(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    with safe_globals([Point]):
        assert "test_checkpoint_format.Point" not in get_unsafe_globals_in_checkpoint(path)
    torch.save({"w": torch.ones(2)}, path)
    assert get_unsafe_globals_in_checkpoint(path) == []


def tar_checkpoint() -> bytes:
    """A checkpoint in the tar format of PyTorch before 0.4, written from its description:
    one float storage of 6, a view of 3 of it, a 2x3 tensor and a tensor over the view."""
    import tarfile

    values = struct.pack("<6f", *range(6))
    storages = (pickle.dumps(1, 2) + pickle.dumps((7, "cpu", torch.FloatStorage), 2)
                + struct.pack("<q", 6) + values + pickle.dumps([(8, 7, 2, 3)], 2))
    tensors = pickle.dumps(2, 2)
    for key, storage, sizes, strides, offset in ((1, 7, (2, 3), (3, 1), 0), (2, 8, (2,), (1,), 1)):
        tensors += pickle.dumps((key, storage, torch.FloatTensor), 2)
        tensors += struct.pack(f"<ii{len(sizes)}q{len(sizes)}qq", len(sizes), 0, *sizes,
                               *strides, offset)

    class Key(str):
        pass

    class Keyed(pickle.Pickler):
        def persistent_id(self, obj):
            return str(obj) if type(obj) is Key else None

    main = io.BytesIO()
    Keyed(main, 2).dump({"w": Key("1"), "part": Key("2"), "n": 3})
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("sys_info", pickle.dumps({}, 2)), ("pickle", main.getvalue()),
                           ("storages", storages), ("tensors", tensors)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_tar_format_of_old_pytorch(tmp_path):
    path = tmp_path / "old.pt"
    path.write_bytes(tar_checkpoint())
    theirs = torch.load(path, weights_only=False)
    ours = pyaten.load(path, weights_only=False)
    check_views(ours, {"w": theirs["w"], "part": theirs["part"]})
    assert ours["n"] == 3
    ours["part"][0] = -1.0  # the view shares the root storage's memory
    assert ours["w"][1, 0].item() == -1.0
    for load in (pyaten.load, torch.load):
        with pytest.raises(RuntimeError, match="weights_only=True.. with files saved in the "
                                               "legacy .tar format"):
            load(path)


def test_a_torch_name_pyaten_lacks_is_named():
    blob = saved(torch, {"f": torch.nn.functional.relu})  # torch.nn.functional.relu exists
    assert pyaten.load(io.BytesIO(blob), weights_only=False)["f"] is pyaten.nn.functional.relu
    blob = crafted(Call(Global("torch.nn.modules.nowhere", "Missing")))
    with pytest.raises(AttributeError, match="names torch.nn.modules.nowhere.Missing, which "
                                             "pyaten does not have"):
        pyaten.load(io.BytesIO(archive(blob)), weights_only=False)
