"""Plug-in devices (pyaten.backends): registry, slots, copies, device checks, fallback
policies and counters, manifests and their lint, explain.

The devices here are toys defined in this file: a pool of `Buffer` objects holding NumPy
bytes that only the toy's kernels read (core sees an opaque object). extensions/openreg is the
full example device, tested in tests/test_openreg.py.
"""

from __future__ import annotations

import contextlib
import types
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

import pyaten
import pyaten.backends as backends
from pyaten.backends import kernel_api as K
from pyaten.core.storage import Storage
from pyaten.declarations.model import DeclarationError
from pyaten.native.kernels.binary import add_stub

# --- a toy device -------------------------------------------------------------------------------


class Buffer:
    """A toy device's memory: an object, not an array (core cannot view it)."""

    __slots__ = ("bytes", "index")

    def __init__(self, nbytes: int, index: int) -> None:
        self.bytes = np.zeros(nbytes, np.uint8)
        self.index = index


class HostBuffer(np.ndarray):
    """A toy buffer core may still view (for the explain test, which prints results)."""


def host(t: pyaten.Tensor) -> np.ndarray:
    """The toy kernels' view of a tensor's elements (a CPU tensor's own NumPy view)."""
    if t.device.type == "cpu":
        return t.detach().numpy()
    buf = t.untyped_storage().data
    raw = buf if isinstance(buf, np.ndarray) else buf.bytes
    size = t.dtype.itemsize
    return np.ndarray(tuple(t.shape), t.dtype.numpy, raw, t.storage_offset() * size,
                      tuple(s * size for s in t.stride()))  # fmt: skip


def grow(storage, nbytes: int) -> None:
    """A toy storage's bigger buffer holding its old bytes."""
    old = storage.data
    if isinstance(old, np.ndarray):
        new = np.zeros(nbytes, np.uint8).view(HostBuffer)
        new[: storage.nbytes] = old[: storage.nbytes]
    else:
        new = Buffer(nbytes, old.index)
        new.bytes[: storage.nbytes] = old.bytes[: storage.nbytes]
    storage.data, storage.nbytes = new, nbytes


def required_kernels(calls: list[str]) -> dict[str, object]:
    """The minimum kernel set of a toy device (each call logged in `calls`)."""

    def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                            memory_format=None):  # fmt: skip
        return K.empty_tensor(size, dtype or pyaten.get_default_dtype(), device)

    def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
        return K.empty_tensor(size, dtype or pyaten.get_default_dtype(), device, stride)

    def _copy_from(self, dst, non_blocking=False):
        calls.append("_copy_from")
        assert self.dtype == dst.dtype and self.shape == dst.shape
        host(dst)[...] = host(self)
        return dst

    def resize_(self, size, memory_format=None):
        return K.resize_storage(self, size)

    def _copy_from_and_resize(self, dst):
        resize_(dst, self.shape)
        return _copy_from(self, dst)

    def set_(self, source, storage_offset, size, stride=()):
        return K.set_storage(self, source, storage_offset, size, stride)

    def as_strided(self, size, stride, storage_offset=None):
        return K.view_tensor(self, size, stride, storage_offset)

    def _local_scalar_dense(self):
        return host(self).item()

    def fill_(self, value):
        host(self)[...] = value
        return self

    return {
        "empty.memory_format": empty_memory_format,
        "empty_strided": empty_strided,
        "_copy_from": _copy_from,
        "_copy_from_and_resize": _copy_from_and_resize,
        "resize_": resize_,
        "set_.source_Storage_storage_offset": set_,
        "as_strided": as_strided,
        "view": backends.upstream_kernel("view"),
        "_local_scalar_dense": _local_scalar_dense,
        "fill_.Scalar": fill_,
    }


@contextlib.contextmanager
def toy_device(
    name: str, *, fallback: str = "cpu", host_memory: bool = False, runtime: object = None,
    kernels: bool = True,
) -> Iterator[backends.Device]:  # fmt: skip
    """Register a toy device for the block, then unregister it (and its stubs)."""
    calls: list[str] = []
    if host_memory:
        allocate = lambda n, i: np.zeros(n, np.uint8).view(HostBuffer)  # noqa: E731
    else:
        allocate = Buffer
    dev = backends.register_device(name, allocator=allocate, fallback=fallback, runtime=runtime,
                                   grow=grow)
    dev.calls = calls
    try:
        if kernels:
            for op, fn in required_kernels(calls).items():
                dev.register_kernel(op, fn)
        yield dev
    finally:
        backends.unregister_device(name)
        add_stub.deregister(name)


def t(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


def p(values, dtype=pyaten.float32):
    return pyaten.tensor(values, dtype=dtype)


# --- registry, slots, names -------------------------------------------------------------------


def test_two_devices_get_two_slots_and_their_key_names() -> None:
    with toy_device("toya") as a, toy_device("toyb") as b:
        assert a.slot != b.slot and {a.slot, b.slot} <= set(backends.SLOTS)
        assert a.keys == pyaten.dispatch.DispatchKeySet([a.slot, "Autograd" + a.slot])
        assert backends.get_device("toyb") is b and set(backends.devices()) >= {"toya", "toyb"}
        assert pyaten.dispatch.display_name("Autograd" + a.slot) == "Autogradtoya"
        assert pyaten.dispatch.parse_dispatch_key("TOYB").name == b.slot
        x = pyaten.ones(2).to("toya")
        assert x._keyset == pyaten.dispatch.backend_keyset_bits("toya")
        assert isinstance(x.untyped_storage().data, Buffer)
    assert "toya" not in backends.devices()


def test_registration_changes_only_the_slots_rows_of_dispatch_tables() -> None:
    ops = ["aten::mm.out", "aten::add.Tensor", "aten::copy_", "aten::empty_strided"]
    before = {op: pyaten.dispatch.dump_table(op) for op in ops}
    with toy_device("toya") as dev:
        after = {op: pyaten.dispatch.dump_table(op) for op in ops}
        changed = {(op, key) for op in ops for key in before[op] if before[op][key] !=
                   after[op][key]}  # fmt: skip
        assert {key for _, key in changed} <= {dev.slot, "Autograd" + dev.slot}
        assert after["aten::mm.out"][dev.slot] == "fallback"  # the device's boxed fallback
        assert after["aten::copy_"][dev.slot] == dev.slot  # the glue kernel
        assert after["aten::empty_strided"][dev.slot] == dev.slot  # the device's kernel
    assert {op: pyaten.dispatch.dump_table(op) for op in ops} == before


def test_registration_errors() -> None:
    with pytest.raises(ValueError, match="lower-case identifier"):
        backends.register_device("Toy")
    with pytest.raises(ValueError, match="slot must be one of"):
        backends.register_device("toyz", slot="PrivateUse9")
    with pytest.raises(ValueError, match="fallback must be one of 'error', 'warn', 'cpu'"):
        backends.register_device("toyz", fallback="maybe")
    assert "toyz" not in backends.devices()  # a failed registration leaves nothing behind
    with pytest.raises(RuntimeError, match="already a device type"):
        backends.register_device("cpu")
    with toy_device("toya") as a:
        with pytest.raises(RuntimeError, match="already registered"):
            backends.register_device("toya")
        with pytest.raises(RuntimeError, match=f"slot {a.slot} is already used by device 'toya'"):
            backends.register_device("toyz", slot=a.slot)
        with pytest.raises(ValueError, match="no plug-in device named 'nope'"):
            backends.unregister_device("nope")
        with pytest.raises(ValueError, match="registered: .*toya"):
            backends.fallback_report("nope")


def test_every_slot_taken_is_a_clear_error() -> None:
    free = [s for s in backends.SLOTS if s not in pyaten.dispatch.keys.backend_names()]
    with contextlib.ExitStack() as stack:
        for i in range(len(free)):
            stack.enter_context(toy_device(f"toyfull{i}", kernels=False))
        with pytest.raises(RuntimeError, match="every PrivateUse slot is taken"):
            backends.register_device("toyextra")


def test_device_strings_indices_methods_and_runtime_module() -> None:
    class Runtime:
        def device_count(self):
            return 2

    with toy_device("toya", runtime=Runtime()):
        d = pyaten.device("toya:1")
        assert (d.type, d.index, str(d), repr(d)) == ("toya", 1, "toya:1",
                                                      "device(type='toya', index=1)")
        assert pyaten.device("toya", 1) == d and pyaten.device("toya").index is None
        rt = pyaten.toya
        assert rt.device_count() == 2 and rt.is_available() and rt.current_device() == 0
        x = pyaten.ones(3)
        assert x.toya().device == pyaten.device("toya:0") and x.toya().is_toya
        assert x.toya(1).device == d and not x.is_toya
        with rt.device(1):
            assert rt.current_device() == 1
            assert x.to("toya").device == d  # "toya" means the current device
            assert pyaten.empty(2, device="toya").device == d
        assert rt.current_device() == 0
        with pytest.raises(RuntimeError, match="invalid device index 2"):
            rt.set_device(2)
        rt.synchronize()
        m = pyaten.nn.Linear(2, 2).toya(1)
        assert m.weight.device == d and m.weight.is_toya
        assert pyaten.toya is __import__("sys").modules["pyaten.toya"]
    assert not hasattr(pyaten.Tensor, "toya") and not hasattr(pyaten, "toya")
    with pytest.raises(RuntimeError, match="device type at start of device string: toya"):
        pyaten.device("toya")


# --- copies ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "bfloat16"])
def test_to_and_cpu_round_trip(dtype: str) -> None:
    values = [[1, 0, 3], [4, 5, 0]]
    with toy_device("toya") as dev:
        x = p(values, getattr(pyaten, dtype))
        y = x.to("toya")
        assert y.device.type == "toya" and y.dtype == x.dtype and y.shape == x.shape
        assert dev.calls == ["_copy_from"]
        back = y.cpu()
        assert back.device.type == "cpu" and back.tolist() == x.tolist()
        # a transposed (non-contiguous) source, a dtype change on the way, and device indices
        z = x.t().to("toya:1", dtype=pyaten.float64)
        assert z.device == pyaten.device("toya:1") and z.dtype == pyaten.float64
        expected = t(values, getattr(torch, dtype)).t().to(torch.float64)
        np.testing.assert_array_equal(z.cpu().numpy(), expected.float().numpy())
        assert z.to("toya:0").device == pyaten.device("toya:0")


def test_core_reads_device_memory_only_through_copy_from() -> None:
    with toy_device("toya") as dev:
        x = p([[1.5, 2.0]]).to("toya")
        dev.calls.clear()
        assert repr(x) == "tensor([[1.5000, 2.0000]], device='toya:0')"
        assert x.tolist() == [[1.5, 2.0]] and x[0, 1].item() == 2.0
        assert dev.calls == ["_copy_from"] * 3  # one host copy each
        assert float(x[0, 0]) == 1.5 and bool(x[0, 0] > 1) and f"{x[0, 0]:.1f}" == "1.5"
        with pytest.raises(RuntimeError, match="memory belongs to the device"):
            x._numpy()
        with pytest.raises(TypeError, match="can't convert toya:0 device type tensor to numpy"):
            x.numpy()
        x.resize_(3, 2)  # the device's resize_ grows its own buffer
        assert x.shape == (3, 2) and x.untyped_storage().nbytes == 24


def test_copies_between_two_plugin_devices_go_through_the_host() -> None:
    with toy_device("toya") as a, toy_device("toyb") as b:
        x = pyaten.arange(6.0).reshape(2, 3).to("toya")
        y = x.to("toyb")
        assert y.device.type == "toyb" and y.cpu().tolist() == [[0, 1, 2], [3, 4, 5]]
        # toya: the first .to() and the copy out; toyb: the copy in and y.cpu()
        assert a.calls.count("_copy_from") == 2 and b.calls.count("_copy_from") == 2
        dst = pyaten.zeros(2, 3, device="toyb")
        dst.copy_(x[0])  # broadcast from another device
        assert dst.cpu().tolist() == [[0, 1, 2], [0, 1, 2]]


# --- dispatch and device checks ---------------------------------------------------------------


def test_two_devices_dispatch_independently() -> None:
    with toy_device("toya") as a, toy_device("toyb") as b:
        seen = []
        a.register_kernel("mm", lambda x, y: seen.append("a") or pyaten.zeros(2, 2, device="toya"))
        b.register_kernel("mm", lambda x, y: seen.append("b") or pyaten.ones(2, 2, device="toyb"))
        xa, xb = pyaten.eye(2).to("toya"), pyaten.eye(2).to("toyb")
        assert xa.mm(xa).cpu().tolist() == [[0, 0], [0, 0]]
        assert xb.mm(xb).cpu().tolist() == [[1, 1], [1, 1]]
        assert seen == ["a", "b"]
        assert (xb + xb).cpu().tolist() == [[2, 0], [0, 2]]  # b's fallback, counted for b
        assert backends.fallback_report("toyb").calls("add.out") == 1
        assert backends.fallback_report("toya").calls("add.out") == 0


def _message(fn) -> str:
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


def test_cross_device_calls_raise_pytorchs_errors() -> None:
    same = "Expected all tensors to be on the same device, but "
    with toy_device("toya") as a, toy_device("toyb"):
        a.register_kernel("mm", lambda x, y: x)  # ExactSame: the generated wrapper checks
        c = pyaten.ones(2, 2)
        x, x1, xb = c.to("toya:0"), c.to("toya:1"), c.to("toyb")
        wrapper = f"wrapper_{a.slot}__mm"
        cases = [
            # TensorIterator's rule (add is NoCheck): found at least two devices
            (lambda: c + x, same + "found at least two devices, toya:0 and cpu!"),
            (lambda: x + c, same + "found at least two devices, toya:0 and cpu!"),
            (lambda: x + x1, same + "found at least two devices, toya:0 and toya:1!"),
            (lambda: x + xb, same + "found at least two devices, toya:0 and toyb:0!"),
            # the device's own kernel of an ExactSame operator: got <arg> is on ...
            (lambda: x.mm(c), same + "got mat2 is on cpu, different from other tensors on "
             f"toya:0 (when checking argument in method {wrapper})"),
            (lambda: c.mm(x1), same + "got mat2 is on toya:1, different from other tensors "
             f"on cpu (when checking argument in method {wrapper})"),
            # the fallback checks before copying anything (bmm falls back)
            (lambda: x.unsqueeze(0).bmm(x1.unsqueeze(0)), same + "got mat2 is on toya:1, "
             "different from other tensors on toya:0 (when checking argument in method "
             f"wrapper_{a.slot}_out_bmm_out)"),
        ]
        for fn, expected in cases:
            assert _message(fn) == expected
        # 0-dim CPU tensors join a device computation, as in PyTorch
        assert (x + pyaten.tensor(2.0)).cpu().tolist() == [[3, 3], [3, 3]]
        assert (pyaten.tensor(2.0) * x).device == x.device


def test_device_guard_makes_the_tensors_index_current() -> None:
    class Runtime:
        def device_count(self):
            return 2

    with toy_device("toya", runtime=Runtime()) as dev:
        seen = []

        def mm(a, b):
            seen.append(pyaten.toya.current_device())
            return a

        dev.register_kernel("mm", mm)
        x1 = pyaten.eye(2).to("toya:1")
        x1.mm(x1)
        pyaten.eye(2).to("toya:0").mm(pyaten.eye(2).to("toya:0"))
        assert seen == [1, 0] and pyaten.toya.current_device() == 0


def test_device_check_follows_device_check_in_the_yaml() -> None:
    from pyaten.backends.device_check import check_mode

    assert check_mode("mm") == "exact"  # default ExactSame
    assert check_mode("add.Tensor") == "iterator"  # NoCheck, pointwise
    assert check_mode("copy_") == check_mode("_copy_from") == "none"
    assert check_mode("index.Tensor") == "none"  # NoCheck: mixes devices on purpose


# --- fallback policies --------------------------------------------------------------------------


def test_cpu_fallback_results_mutations_and_counters() -> None:
    with toy_device("toya") as dev:
        values = [[0.5, -1.0], [2.0, 3.0]]
        x = p(values).to("toya")
        report = backends.fallback_report("toya")
        report.reset()
        got = pyaten.exp(x)
        np.testing.assert_allclose(got.cpu().numpy(), torch.exp(t(values)).numpy(), rtol=1e-6)
        x.mul_(2)  # in place on the device: the CPU result is copied back into x
        assert x.cpu().tolist() == [[1.0, -2.0], [4.0, 6.0]] and x.device.type == "toya"
        out = pyaten.empty(0, device="toya")
        r = pyaten.sin(x, out=out)  # out= resized through _copy_from_and_resize
        assert r is out and out.shape == (2, 2)
        np.testing.assert_allclose(out.cpu().numpy(), np.sin([[1.0, -2.0], [4.0, 6.0]]),
                                   rtol=1e-6)  # fmt: skip
        values_, indices = x.max(dim=1)  # several outputs, each back on the device
        assert values_.device.type == indices.device.type == "toya"
        assert indices.cpu().tolist() == [0, 1]
        report = backends.fallback_report("toya")
        assert report.calls("exp.out") == 1 and report.calls("aten::mul.out") == 1
        assert report.calls("sin.out") == 1 and report.total >= 4
        text = str(report)
        assert text.splitlines()[0].split() == ["device", "operator", "policy", "calls"]
        assert "toya    aten::exp.out" in text and text.endswith("operator(s)")
        assert report.as_dict()["toya"]["aten::exp.out"] == {"calls": 1, "policy": "cpu"}
        report.reset()
        assert backends.fallback_report("toya").total == 0
        assert str(backends.fallback_report("toya")) == "no operator fell back on 'toya'"
        assert dev.calls.count("_copy_from") > 0


def test_views_never_fall_back() -> None:
    with toy_device("toya"):
        x = pyaten.ones(4, 2).to("toya")
        with pytest.raises(NotImplementedError, match="view operator 'aten::unfold'.*never fall"):
            x.unfold(0, 2, 1)
        with pytest.raises(NotImplementedError, match="view operator 'aten::view_as_complex'"):
            pyaten.view_as_complex(x)
        assert backends.fallback_report("toya").calls("unfold") == 1
        # composite views reach as_strided, which the device has: still views
        v = x.t()
        assert v.untyped_storage() is x.untyped_storage() and v.stride() == (1, 2)


def test_error_and_warn_policies_and_per_operator_overrides() -> None:
    with toy_device("toya", fallback="error"):
        x = pyaten.ones(2).to("toya")
        with pytest.raises(NotImplementedError) as info:
            pyaten.exp(x)
        assert str(info.value).startswith(
            "The operator 'aten::exp.out' is not implemented for the 'toya' device, and its "
            "fallback policy is 'error'."
        )
        backends.set_fallback("toya", "cpu", op="exp")  # a name: every overload
        assert pyaten.exp(x).cpu().tolist() == pytest.approx([np.e, np.e])
        backends.set_fallback("toya", "warn", op="aten::exp.out")  # the overload wins
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pyaten.exp(x)
            pyaten.exp(x)
        messages = [str(w.message) for w in caught if "falls back to the CPU" in str(w.message)]
        assert len(messages) == 1 and "'aten::exp.out'" in messages[0]
        report = backends.fallback_report("toya")
        assert report.as_dict()["toya"]["aten::exp.out"] == {"calls": 4, "policy": "warn"}
        with pytest.raises(ValueError, match="policy must be one of"):
            backends.set_fallback("toya", "sometimes")


def test_a_policy_for_a_composite_operator_routes_it_to_the_fallback() -> None:
    # pyaten's `convolution` is CompositeExplicitAutograd and reads NumPy memory directly:
    # on a device with opaque memory it must run through the fallback.
    with toy_device("toya") as dev:
        x, w = pyaten.ones(1, 1, 3, 3), pyaten.ones(1, 1, 2, 2)
        with pytest.raises(RuntimeError, match="memory belongs to the device"):
            pyaten.nn.functional.conv2d(x.to("toya"), w.to("toya"))
        backends.set_fallback("toya", "cpu", op="convolution")
        got = pyaten.nn.functional.conv2d(x.to("toya"), w.to("toya"))
        assert got.device.type == "toya" and got.cpu().tolist() == [[[[4.0, 4.0], [4.0, 4.0]]]]
        assert "convolution" in dev.forced
        assert backends.fallback_report("toya").calls("convolution") == 1
        dev.force_fallback("convolution_backward")
        xd = x.to("toya").requires_grad_()
        pyaten.nn.functional.conv2d(xd, w.to("toya")).sum().backward()
        assert xd.grad.cpu().tolist() == [[[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]]]


def test_storages_of_a_device_grow_through_its_grow_function() -> None:
    grown = []

    def logged_grow(storage, nbytes):
        grown.append(nbytes)
        grow(storage, nbytes)

    dev = backends.register_device("toyg", allocator=Buffer, grow=logged_grow)
    try:
        for op, fn in required_kernels([]).items():
            dev.register_kernel(op, fn)
        x = p([1.0, 2.0]).to("toyg")
        x.untyped_storage().resize_(16)  # core's Storage.resize_ (out= resizing uses it)
        assert grown == [16] and x.untyped_storage().nbytes == 16 and x.tolist() == [1.0, 2.0]
        x.resize_(3)  # the toy's resize_ kernel: kernel_api.resize_storage, default grow
        assert x.shape == (3,) and grown == [16]  # 12 bytes fit
        x.resize_(5)
        assert grown == [16, 20] and x[:2].tolist() == [1.0, 2.0]
    finally:
        backends.unregister_device("toyg")
    backends.register_device("toyn", allocator=Buffer)  # no grow function
    try:
        storage = Storage(8, pyaten.device("toyn:0"))
        assert isinstance(storage.data, Buffer)
        with pytest.raises(RuntimeError, match="registered no grow function"):
            storage.resize_(16)
    finally:
        backends.unregister_device("toyn")


def test_autograd_runs_through_the_device() -> None:
    with toy_device("toya"):
        values = [[1.0, -2.0], [3.0, 0.5]]
        x = p(values).to("toya").requires_grad_()
        loss = (x * x + x.exp()).sum()
        loss.backward()
        tx = t(values).requires_grad_()
        (tx * tx + tx.exp()).sum().backward()
        assert x.grad.device.type == "toya"
        np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-6)
        assert loss.cpu().item() == pytest.approx((tx * tx + tx.exp()).sum().item(), rel=1e-6)


# --- manifests -------------------------------------------------------------------------------

_REQUIRED_YAML = "".join(f"- {op}\n" for op in backends.REQUIRED_KERNELS)


def _kernels_namespace(calls: list[str], **extra: object) -> types.SimpleNamespace:
    funcs = {}
    for op, fn in required_kernels(calls).items():
        funcs[op.replace(".", "_")] = fn
    funcs.update(extra)
    return types.SimpleNamespace(**funcs)


def test_manifest_strategies_and_overrides(tmp_path: Path) -> None:
    ran: list[str] = []

    def add_kernel(op, alpha):
        ran.append("add_stub")
        a, b = op.inputs
        host(op.outputs[0])[...] = host(a) + alpha * host(b)

    def mul_out(op, self, other, out):
        ran.append("mul_out")
        host(out)[...] = host(self) * host(other)

    def meta_sub_Tensor(op, self, other, alpha):  # noqa: N802 - the naming rule's name
        ran.append("meta_sub")
        op.build_borrowing_binary_op(self, other) if hasattr(op, "build_borrowing_binary_op") \
            else op.build_binary_op(self, other)

    def sub_out(op, self, other, alpha, out):
        ran.append("sub_out")
        host(out)[...] = host(self) - alpha * host(other)

    def my_mm(self, mat2):
        ran.append("mm")
        out = pyaten.empty(self.shape[0], mat2.shape[1], device=self.device)
        host(out)[...] = host(self) @ host(mat2)
        return out

    manifest = tmp_path / "toya.yaml"
    manifest.write_text(
        "backend: toya\ncpp_namespace: toya\nfallback: cpu\nsupported:\n" + _REQUIRED_YAML
        + "- func: mm\n  dispatch: {PrivateUse1: my_mm}\n"
        + "structured:\n  add.out: stub\n  mul.out: impl\n  sub.out: meta_impl\n"
        + "fallback_overrides:\n  topk: error\n"
    )
    with toy_device("toya", kernels=False) as dev:
        add_stub.register("toya", add_kernel)
        kernels = _kernels_namespace(dev.calls, mul_out=mul_out, meta_sub_Tensor=meta_sub_Tensor,
                                     sub_out=sub_out, my_mm=my_mm)  # fmt: skip
        loaded = dev.load_manifest(manifest, kernels)
        assert {"add.Tensor", "add_.Tensor", "add.out", "mul.Tensor", "mm"} <= set(
            loaded.registered
        )
        a, b = [[1.0, 2.0], [3.0, 4.0]], [[0.5, 1.0], [2.0, -1.0]]
        x, y = p(a).to("toya"), p(b).to("toya")
        for got, want in [
            (x + y, t(a) + t(b)),
            (pyaten.add(x, y, alpha=2), torch.add(t(a), t(b), alpha=2)),
            (x * y, t(a) * t(b)),
            (x - y, t(a) - t(b)),
            (x.mm(y), t(a).mm(t(b))),
        ]:
            assert got.device.type == "toya"
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy())
        assert ran == ["add_stub", "add_stub", "mul_out", "meta_sub", "sub_out", "mm"]
        x.add_(y)
        assert x.cpu().tolist() == [[1.5, 3.0], [5.0, 3.0]] and ran[-1] == "add_stub"
        out = pyaten.empty(0, device="toya")
        assert pyaten.add(x, y, out=out) is out  # meta resizes out: the device's grow
        assert out.tolist() == [[2.0, 4.0], [7.0, 2.0]] and ran[-1] == "add_stub"
        with pytest.raises(NotImplementedError, match="fallback policy is 'error'"):
            x.topk(1)
        before = backends.fallback_report("toya").total
        assert (x + pyaten.tensor(1.0)).device.type == "toya"  # native: no fallback
        assert backends.fallback_report("toya").total == before
        assert "def wrapper_PrivateUse" in loaded.generated.source


def test_manifest_missing_required_kernels_registers_nothing(tmp_path: Path) -> None:
    manifest = tmp_path / "toya.yaml"
    manifest.write_text("backend: toya\ncpp_namespace: toya\nsupported:\n- mm\n- view\n")
    with toy_device("toya", kernels=False) as dev:
        kernels = types.SimpleNamespace(mm=lambda a, b: a, view=lambda a, s: a)
        with pytest.raises(DeclarationError) as info:
            dev.load_manifest(manifest, kernels)
        (d,) = info.value.diagnostics
        assert (d.path, d.line, d.code) == (str(manifest), 1, "backend-missing-required")
        assert d.message.startswith("the device lacks 9 required kernel(s): empty.memory_format,")
        assert dev.kernels == {}
        with pytest.raises(RuntimeError, match="missing 10 of the required kernels"):
            dev.check_required()


_BAD_MANIFEST = """\
backend: toya
cpp_namespace: toya
fallback: sometimes
supported:
- mmm
- addmm
structured:
  add.Tensor: stub
  mul.out: impel
  exp.out: meta_impl
fallback_overrides:
  topkk: error
"""


def test_manifest_mistakes_are_reported_with_file_and_line(tmp_path: Path) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(_BAD_MANIFEST)
    with toy_device("toya") as dev:
        with pytest.raises(DeclarationError) as info:
            dev.load_manifest(manifest, types.SimpleNamespace(addm=lambda *a: None))
    found = [(d.line, d.code) for d in info.value.diagnostics]
    assert found == [
        (3, "bad-fallback"),
        (5, "backend-unknown-op"),
        (6, "backend-missing-kernel"),
        (8, "backend-not-structured"),
        (9, "bad-strategy"),
        (10, "backend-missing-kernel"),  # meta_exp
        (10, "backend-missing-kernel"),  # exp_out
        (12, "backend-unknown-op"),
    ]
    hints = {d.line: d.hint for d in info.value.diagnostics}
    assert hints[5] == "did you mean 'mm'?" and hints[9] == "did you mean 'impl'?"
    assert hints[6] == "did you mean 'addm'?"
    assert hints[8] == "name its out entry instead: add.out" and "topk" in hints[12]
    assert str(info.value).startswith(f"{manifest}:3: bad-fallback:")


def test_manifest_op_listed_twice_is_reported(tmp_path: Path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("backend: toya\ncpp_namespace: x\nsupported:\n" + _REQUIRED_YAML
                        + "- add_.Tensor\nstructured:\n  add.out: stub\n")  # fmt: skip
    with toy_device("toya", kernels=False) as dev:
        with pytest.raises(DeclarationError) as info:
            dev.load_manifest(manifest, _kernels_namespace(dev.calls, add__Tensor=print))
    (d,) = info.value.diagnostics
    assert (d.line, d.code) == (4 + len(backends.REQUIRED_KERNELS), "backend-duplicate-op")
    assert d.message == ("'add_.Tensor' is listed under 'supported' but the structured "
                         "'add.out' (stub) already provides it")  # fmt: skip


def test_manifest_named_but_not_implemented_and_wrong_device(tmp_path: Path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("backend: toyb\ncpp_namespace: x\nsupported:\n" + _REQUIRED_YAML
                        + "- addmm\nstructured:\n  exp.out: meta_impl\n")  # fmt: skip
    with toy_device("toya", kernels=False) as dev:
        kernels = _kernels_namespace(dev.calls, addm=lambda *a: None)
        with pytest.raises(DeclarationError) as info:
            dev.load_manifest(manifest, kernels)
    found = [(d.line, d.code, d.message) for d in info.value.diagnostics]
    n = len(backends.REQUIRED_KERNELS)
    assert found == [
        (1, "backend-wrong-device", "this manifest is for 'toyb', not for device 'toya'"),
        (4 + n, "backend-missing-kernel",
         "'addmm' is named but SimpleNamespace has no function 'addmm'"),
        (6 + n, "backend-missing-kernel",
         "'exp.out' is named but SimpleNamespace has no function 'meta_exp'"),
        (6 + n, "backend-missing-kernel",
         "'exp.out' is named but SimpleNamespace has no function 'exp_out'"),
    ]  # fmt: skip
    assert info.value.diagnostics[1].hint == "did you mean 'addm'?"


_KERNELS_FILE = '''\
import numpy as np


def mm(self, mat2):
    return self


def sub_Tensor(self, other, alpha=1):
    return self


def _helper():
    return None
'''


def test_lint_backend_reports_with_file_and_line(tmp_path: Path, capsys) -> None:
    from pyaten.cli import main

    kernels = tmp_path / "toy_kernels.py"
    kernels.write_text(_KERNELS_FILE)
    manifest = tmp_path / "toy.yaml"
    manifest.write_text("backend: toy\ncpp_namespace: toy\nsupported:\n- mm\n- addmm\n- mmm\n")
    status = main(["lint", "--backend", str(manifest), "--kernels", str(kernels)])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert status == 1
    assert lines[0] == (f"{manifest}:1: backend-missing-required: the device lacks 10 required "
                        "kernel(s): empty.memory_format, empty_strided, _copy_from, "
                        "_copy_from_and_resize, resize_, set_.source_Storage_storage_offset, "
                        "as_strided, view, _local_scalar_dense, fill_.Scalar")  # fmt: skip
    assert f"{manifest}:5: backend-missing-kernel: 'addmm' is named but toy_kernels has no " \
        "function 'addmm'" in lines
    assert f"{manifest}:6: backend-unknown-op: 'mmm' under 'supported' is not a declared " \
        "operator" in lines
    assert "    did you mean 'mm'?" in lines
    assert f"{kernels}:8: backend-unlisted-kernel: sub_Tensor() implements 'sub.Tensor' but " \
        "the manifest does not name it" in lines
    assert not any("_helper" in line for line in lines)
    assert err.strip().endswith("1 file: 4 errors, 0 warnings")
    assert main(["lint", "--kernels", str(kernels)]) == 2


# --- explain -------------------------------------------------------------------------------------


def test_explain_shows_a_fallback_and_why() -> None:
    with toy_device("toya", host_memory=True):
        x = pyaten.ones(2).to("toya")
        with pyaten.explain() as ex:
            pyaten.exp(x)
        text = str(ex)
        assert "backend fallback toya_fallback for toya: the 'toya' device's cpu policy" in text
        assert "why: no toya kernel for aten::exp.out" in text
        assert "ran on the CPU: tensor inputs copied from the device" in text
        data = ex.as_dict()
        assert "'policy': 'cpu'" in repr(data)
        backends.set_fallback("toya", "cpu", op="convolution")
        with pyaten.explain(depth=3) as ex:
            pyaten.nn.functional.conv2d(pyaten.ones(1, 1, 2, 2).to("toya"),
                                        pyaten.ones(1, 1, 1, 1).to("toya"))  # fmt: skip
        text = str(ex)
        assert "fallback toya_fallback for toya (forced for this operator)" in text
        assert "why: aten::convolution is routed to the fallback instead of its composite" in text


# --- codegen -----------------------------------------------------------------------------------


def test_gen_backend_is_a_pure_function_of_the_manifest() -> None:
    from pyaten.backends.manifest import operator_records
    from pyaten.codegen.gen_backend import generate_backend, kernel_name
    from pyaten.declarations.backend import read_backend_yaml
    from pyaten.schema.model import OperatorName

    text = ("backend: openreg\ncpp_namespace: x\nsupported:\n- mm\n- sub_.Tensor\n"
            "- func: bmm\n  dispatch: {PrivateUse1: batched}\nautograd:\n- relu\n"
            "structured:\n  mul.out: impl\n  exp.out: meta_impl\n  add.out: stub\n")  # fmt: skip
    decl, problems = read_backend_yaml(text, "m.yaml", operator_records())
    assert problems == [] and decl.device == "openreg" and decl.lines["bmm"] == 6
    first = generate_backend(decl, operator_records(), "PrivateUse2", "m.yaml")
    again = generate_backend(decl, operator_records(), "PrivateUse2", "m.yaml")
    assert first == again
    assert dict(first.device_kernels) == {
        "K_mm": "mm", "K_sub__Tensor": "sub__Tensor", "K_bmm": "batched", "A_relu": "relu",
        "impl_mul_out": "mul_out", "meta_exp": "meta_exp", "impl_exp_out": "exp_out",
    }  # fmt: skip
    assert set(first.upstream_kernels) == {"meta_mul_Tensor", "meta_add_Tensor", "add_out"}
    kinds = {op: kind for op, _, kind in first.registrations}
    assert kinds["mm"] == kinds["sub_.Tensor"] == "kernel" and kinds["relu"] == "autograd"
    assert {kinds[o] for o in ("mul.out", "mul.Tensor", "add_.Tensor", "exp.out")} == {
        "structured"
    }
    assert "def wrapper_PrivateUse2_mul_Tensor(self, other):" in first.source
    assert kernel_name(OperatorName("", "add_", "Tensor")) == "add__Tensor"
    assert kernel_name(OperatorName("", "bmm", ""), {"bmm": "batched"}) == "batched"
