"""Calls through the dispatcher: which kernels run, with which key sets, against torch.

Each kernel records (its key, the key set it received) and redispatches below its own key, as
PyTorch's autograd and ADInplaceOrView kernels do; the recorded paths must equal torch's for
the same registrations, tensors and thread-local guards.
"""

from __future__ import annotations

import itertools
import random
import re
import threading
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.library as tl  # noqa: E402
from _helpers import FakeTensor  # noqa: E402

import pyaten.dispatch as pd  # noqa: E402
import pyaten.library as pl  # noqa: E402
from pyaten.dispatch import tls  # noqa: E402
from pyaten.dispatch.keys import full_after  # noqa: E402

_counter = itertools.count()
CALL_KEYS = ["AutogradCPU", "ADInplaceOrView", "BackendSelect", "CPU", "Meta", "AutogradMeta",
             "Autograd", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
             "AutocastCPU"]  # fmt: skip
GUARDS = ["none", "below_autograd", "below_adinplace", "exclude_autogradcpu", "include_python"]


def _torch_guard(name: str):
    if name == "below_autograd":
        return torch._C._AutoDispatchBelowAutograd()
    if name == "below_adinplace":
        return torch._C._AutoDispatchBelowADInplaceOrView()
    if name == "exclude_autogradcpu":
        return torch._C._ExcludeDispatchKeyGuard(
            torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradCPU)
        )
    if name == "include_autocast":
        return torch._C._IncludeDispatchKeyGuard(torch._C.DispatchKey.AutocastCPU)
    return _Null()


def _our_guard(name: str):
    if name == "below_autograd":
        return tls.AutoDispatchBelowAutograd()
    if name == "below_adinplace":
        return tls.AutoDispatchBelowADInplaceOrView()
    if name == "exclude_autogradcpu":
        return tls.ExcludeDispatchKeyGuard("AutogradCPU")
    if name == "include_autocast":
        return tls.IncludeDispatchKeyGuard("AutocastCPU")
    return _Null()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return None


def _missing_key(exc: Exception) -> str:
    m = re.search(r"from the '(\w+)' backend", str(exc))
    if m:
        return f"missing:{m.group(1)}"
    if "no tensor arguments" in str(exc):
        return "missing:Undefined"
    if "Meta tensors" in str(exc):
        return "meta-fallback"
    return f"error:{type(exc).__name__}"


def _register_logging_kernels(lib, op, keys, fallthrough, fallthrough_kernel, log, full_after):
    """Register `f` for each key (torch's or pyaten's Library alike): a fallthrough, or a
    kernel that logs (key, key set) and redispatches below its key as autograd kernels do."""
    for key in keys:
        if key in fallthrough:
            lib.impl("f", fallthrough_kernel, key)
            continue
        # alias keys have no place in the key order to redispatch below
        after = None if key in ("Autograd", "CompositeImplicitAutograd",
                                "CompositeExplicitAutograd") else full_after(key)  # fmt: skip

        def kernel(ks, x, y, key=key, after=after):
            log.append((key, repr(ks)))
            if after is not None and key not in ("CPU", "Meta"):
                return op.redispatch(ks & after, x, y)
            return None

        lib.impl("f", kernel, key, with_keyset=True)


def _run_torch(keys, fallthrough, device, guard):
    ns = f"pyaten_calls_t{next(_counter)}"
    lib = tl.Library(ns, "DEF")
    lib.define("f(Tensor x, Tensor y) -> Tensor")
    op = getattr(torch.ops, ns).f.default
    log = []
    _register_logging_kernels(
        lib, op, keys, fallthrough, tl.fallthrough_kernel, log,
        lambda key: torch._C._dispatch_keyset_full_after(torch._C._parse_dispatch_key(key)),
    )  # fmt: skip
    x = torch.ones(1, device=device)
    try:
        with _torch_guard(guard):
            op(x, torch.ones(1))
    except Exception as exc:
        log.append(_missing_key(exc))
    lib._destroy()
    return log


def _run_ours(keys, fallthrough, device, guard):
    ns = f"pyaten_calls_o{next(_counter)}"
    lib = pl.Library(ns, "DEF")
    lib.define("f(Tensor x, Tensor y) -> Tensor")
    op = pd.get_operator(f"{ns}::f")
    log = []
    _register_logging_kernels(lib, op, keys, fallthrough, pl.fallthrough_kernel, log, full_after)
    try:
        with _our_guard(guard):
            op.call(FakeTensor(device), FakeTensor("cpu"))
    except Exception as exc:
        log.append(_missing_key(exc))
    lib.close()
    return log


def test_call_paths_match_torch_on_random_registrations() -> None:
    rng = random.Random(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(150):
            keys = rng.sample(CALL_KEYS, rng.randint(1, 5))
            if "Meta" in keys and "CompositeImplicitAutograd" in keys:
                keys.remove("Meta")  # torch refuses Meta next to CIA
            if "CompositeExplicitAutograd" in keys and "CompositeImplicitAutograd" in keys:
                # CIA-then-CEA leaves torch's stored table stale (spec 2.9); pyaten follows
                # the computed table, so compare the order where torch's table is current.
                keys.remove("CompositeExplicitAutograd")
                keys.insert(0, "CompositeExplicitAutograd")
            fallthrough = {k for k in keys if rng.random() < 0.15}
            device = rng.choice(["cpu", "cpu", "meta"])
            guard = rng.choice(GUARDS[:4] + ["include_autocast"])
            expected = _run_torch(keys, fallthrough, device, guard)
            actual = _run_ours(keys, fallthrough, device, guard)
            assert actual == expected, (keys, fallthrough, device, guard)


def test_redispatch_onto_a_fallthrough_slot_raises() -> None:
    with pl.Library("pyaten_calls_ft", "DEF") as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", pl.fallthrough_kernel, "CPU")
        op = pd.get_operator("pyaten_calls_ft::f")
        with pytest.raises(RuntimeError, match="fallthrough_kernel was executed"):
            op.redispatch(pd.DispatchKeySet("CPU"), FakeTensor())
        # A plain call masks the fallthrough and ends at Undefined: "no tensor arguments".
        with pytest.raises(NotImplementedError, match="There were no tensor arguments"):
            op.call(FakeTensor())


def test_kwargs_defaults_lists_and_optionals() -> None:
    seen = []
    with pl.Library("pyaten_calls_args", "DEF") as lib:
        lib.define("g(Tensor[] xs, Tensor? w=None, int k=3, *, float s=1.5) -> Tensor")
        lib.impl("g", lambda xs, w, k, s: seen.append((len(xs), w, k, s)) or "cpu", "CPU")
        lib.impl("g", lambda xs, w, k, s: "meta", "Meta")
        op = pd.get_operator("pyaten_calls_args::g")
        assert op.call([FakeTensor(), FakeTensor()], None, 3, 1.5) == "cpu"
        assert op.call([FakeTensor()], k=7) == "cpu"
        assert seen[-1] == (1, None, 7, 1.5)
        assert op.call([FakeTensor()], FakeTensor("meta")) == "meta"  # optional counts
        assert op.call([FakeTensor(), FakeTensor("meta")]) == "meta"  # list elements count
        with pytest.raises(TypeError, match="missing required argument 'xs'"):
            op.call()
        with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
            op.call([FakeTensor()], bogus=1)
        with pytest.raises(TypeError, match=r"argument 'w' \(position 1\) must be Tensor\?"):
            op.call([FakeTensor()], 5, 3, 1.5)
        # An empty list has no tensors: the Undefined slot, which only composites fill.
        with pytest.raises(NotImplementedError, match="no tensor arguments"):
            op.call([])


def test_missing_kernel_message_explains_the_choice() -> None:
    with pl.Library("pyaten_calls_msg", "DEF") as lib:
        lib.define("h(Tensor self, Tensor other) -> Tensor")
        lib.impl("h", lambda a, b: None, "CPU")
        op = pd.get_operator("pyaten_calls_msg::h")
        with pytest.raises(NotImplementedError) as info:
            op.call(FakeTensor("cpu"), FakeTensor("cuda"))
        text = str(info.value)
        assert text.startswith(
            "Could not run 'pyaten_calls_msg::h' with arguments from the 'CUDA' backend."
        )
        assert "is only available for these backends: [CPU, Meta, BackendSelect" in text
        assert "argument 'other': DispatchKeySet(CUDA, ADInplaceOrView, AutogradCUDA" in text
        assert "lib.impl('h', fn, 'CUDA')" in text
        assert "CPU: registered at" not in text  # short by default; the dump is in .details
        assert len(text.splitlines()) <= 6
        details = info.value.details
        assert details.startswith(text.split(". ")[0]) and "CPU: registered at" in details
        assert "thread-local included:" in details


def test_ambiguous_autogradother_raises_on_call() -> None:
    with pl.Library("pyaten_calls_amb", "DEF") as lib:
        lib.define("h(Tensor self) -> Tensor")
        lib.impl("h", lambda a: None, "SparseCPU")
        lib.impl("h", lambda a: None)
        op = pd.get_operator("pyaten_calls_amb::h")
        with pytest.raises(RuntimeError, match="both CompositeImplicitAutograd and a backend"):
            op.call(FakeTensor("hip"))  # HIP tensors use AutogradOther


def test_trace_records_nested_redispatches() -> None:
    with pl.Library("pyaten_calls_trace", "DEF") as lib:
        lib.define("t(Tensor self) -> Tensor")
        op = pd.get_operator("pyaten_calls_trace::t")

        def autograd_kernel(ks, x):
            from pyaten.dispatch import trace

            trace.note("autograd", saved="x")
            return op.redispatch(ks & full_after("AutogradCPU"), x)

        def cpu_kernel(x):
            return 42

        lib.impl("t", autograd_kernel, "AutogradCPU", with_keyset=True)
        lib.impl("t", cpu_kernel, "CPU")
        assert op.call(FakeTensor()) == 42  # fills the cache before tracing
        with pd.trace() as recorded:
            assert op.call(FakeTensor()) == 42
        (root,) = recorded.as_dicts()
        assert root["key"] == "AutogradCPU" and root["rule"] == "kernel"
        assert root["notes"] == [{"kind": "autograd", "saved": "x"}]
        assert root["arguments"][0]["name"] == "self"
        assert "test_dispatch_calls.py" in root["registered_at"]
        (child,) = root["children"]
        assert child["redispatch"] and child["key"] == "CPU" and child["result"] == "42"
        assert child["kernel"].endswith("cpu_kernel")
        text = str(recorded)
        assert "call pyaten_calls_trace::t -> AutogradCPU [kernel]" in text
        assert "  redispatch pyaten_calls_trace::t -> CPU [kernel]" in text
        # Outside the trace nothing is recorded and the cached path is the plain kernel again.
        assert op.call(FakeTensor()) == 42 and len(recorded.nodes) == 1


def test_concurrent_registration_and_calls() -> None:
    with pl.Library("pyaten_calls_thr", "DEF") as lib:
        lib.define("c(Tensor self) -> Tensor")
        lib.impl("c", lambda x: "base", "CPU")
        op = pd.get_operator("pyaten_calls_thr::c")
        errors = []
        stop = threading.Event()

        def caller():
            while not stop.is_set():
                try:
                    assert op.call(FakeTensor()) in ("base", "over")
                except Exception as exc:  # pragma: no cover - reported below
                    errors.append(exc)

        threads = [threading.Thread(target=caller) for _ in range(3)]
        for t in threads:
            t.start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(200):
                over = pl.Library("pyaten_calls_thr", "IMPL")
                over.impl("c", lambda x: "over", "CPU")
                over.close()
        stop.set()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
        assert op.call(FakeTensor()) == "base"


def test_guards_are_thread_local_and_restore_defaults() -> None:
    seen = {}

    def worker():
        seen["worker"] = tls.tls_local_exclude_set().raw

    with tls.AutoDispatchBelowAutograd():
        inside = tls.tls_local_exclude_set().raw
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(timeout=60)
        with tls.ExcludeDispatchKeyGuard("Python"), tls.IncludeDispatchKeyGuard("AutocastCPU"):
            assert tls.tls_is_dispatch_key_excluded("Python")
            assert tls.tls_is_dispatch_key_included("AutocastCPU")
        assert tls.tls_local_exclude_set().raw == inside
        assert len(tls.NONDEFAULT) >= 1
    assert seen["worker"] == tls.DEFAULT_EXCLUDED  # another thread keeps the defaults
    assert tls.tls_local_exclude_set().raw == tls.DEFAULT_EXCLUDED
    assert tls.tls_local_include_set().raw == tls.DEFAULT_INCLUDED
    assert len(tls.NONDEFAULT) == 0


def test_below_autograd_guard_skips_autograd_kernels() -> None:
    with pl.Library("pyaten_calls_guard", "DEF") as lib:
        lib.define("g(Tensor x) -> Tensor")
        lib.impl("g", lambda x: "autograd", "AutogradCPU")
        lib.impl("g", lambda x: "cpu", "CPU")
        op = pd.get_operator("pyaten_calls_guard::g")
        assert op.call(FakeTensor()) == "autograd"
        with tls.AutoDispatchBelowAutograd():
            assert op.call(FakeTensor()) == "cpu"
        assert op.call(FakeTensor()) == "autograd"


def test_an_overload_packet_sees_overloads_defined_after_its_first_call() -> None:
    import pyaten

    with pl.Library("pyaten_calls_pkt", "DEF") as lib:
        lib.define("h(Tensor x) -> Tensor")
        lib.impl("h", lambda x: "one tensor", "CPU")
        packet = pyaten.ops.pyaten_calls_pkt.h
        t = pyaten.ones(2)
        assert packet(t) == "one tensor"
        with pytest.raises(RuntimeError):
            packet(t, t)  # no overload takes two tensors yet
        with pl.Library("pyaten_calls_pkt", "FRAGMENT") as more:
            more.define("h.two(Tensor x, Tensor y) -> Tensor")
            more.impl("h.two", lambda x, y: "two tensors", "CPU")
            assert packet(t, t) == "two tensors"
        with pytest.raises(RuntimeError):
            packet(t, t)  # the fragment is gone again
