"""Every registration and call error path: same exception type and message as torch.library.

Each case runs the same steps against `torch.library` and `pyaten.library` (in fresh
namespaces) and compares the exception type and the message with file:line positions masked.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.library as tl  # noqa: E402
from _helpers import FakeTensor, noop_kernel  # noqa: E402

import pyaten.dispatch as pd  # noqa: E402
import pyaten.library as pl  # noqa: E402

_ids = itertools.count()


def _mask(text: str) -> str:
    text = re.sub(r"registered at \S+:\d+", "registered at FILE", text)
    text = re.sub(r"block at \S+:\d+\)", "block at FILE)", text)
    return text


def _outcome(fn, m, ns):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(m, ns)
    except Exception as exc:
        return type(exc).__name__, _mask(str(exc))
    return None


# Each case: steps(lib_module, ns) that should raise on its last step.
CASES = {
    "unsupported_kind": lambda m, ns: m.Library(ns, "BOGUS"),
    "reserved_namespace_def": lambda m, ns: m.Library("prim", "DEF"),
    "reserved_namespace_fragment": lambda m, ns: m.Library("prim", "FRAGMENT"),
    "fragment_on_wildcard": lambda m, ns: m.Library("_", "FRAGMENT"),
    "second_def": lambda m, ns: (m.Library(ns, "DEF"), m.Library(ns, "DEF")),
    "define_in_impl": lambda m, ns: m.Library(ns, "IMPL").define("f(Tensor x) -> Tensor"),
    "define_name_only": lambda m, ns: m.Library(ns, "FRAGMENT").define("f"),
    "define_wrong_namespace": lambda m, ns: m.Library(ns, "FRAGMENT").define(
        "other::f(Tensor x) -> Tensor"
    ),
    "define_bad_alias_analysis": lambda m, ns: m.Library(ns, "FRAGMENT").define(
        "f(Tensor x) -> Tensor", alias_analysis="PURE"
    ),
    "duplicate_define": lambda m, ns: _twice_defined(m, ns),
    "impl_wrong_namespace": lambda m, ns: m.Library(ns, "FRAGMENT").impl(
        "other::f", noop_kernel, "CPU"
    ),
    "impl_key_clash": lambda m, ns: m.Library(ns, "IMPL", "CPU").impl("f", noop_kernel, "CUDA"),
    "impl_unparsable_key": lambda m, ns: m.Library(ns, "IMPL").impl("f", noop_kernel, "NotAKey"),
    "impl_unparsable_backend_variant": lambda m, ns: m.Library(ns, "IMPL").impl(
        "f", noop_kernel, "AutogradHIP"
    ),
    "impl_not_callable": lambda m, ns: m.Library(ns, "IMPL").impl("f", 3, "CPU"),
    "meta_after_cia": lambda m, ns: _meta_after_cia(m, ns),
    "meta_on_unknown_operator": lambda m, ns: m.Library(ns, "IMPL").impl("f", noop_kernel, "Meta"),
    "no_override": lambda m, ns: _no_override(m, ns),
    "fallback_outside_wildcard": lambda m, ns: m.Library(ns, "IMPL").fallback(noop_kernel, "CPU"),
    "fallback_empty_key": lambda m, ns: m.Library("_", "IMPL").fallback(noop_kernel, ""),
    "fallback_duplicate": lambda m, ns: m.Library("_", "IMPL").fallback(noop_kernel, "Python"),
    "destroyed_define": lambda m, ns: _destroyed(m, ns),
}


def _twice_defined(m, ns):
    lib = m.Library(ns, "FRAGMENT")
    lib.define("f.ov(Tensor x) -> Tensor")
    lib.define("f.ov(Tensor x) -> Tensor")


def _meta_after_cia(m, ns):
    lib = m.Library(ns, "FRAGMENT")
    lib.define("f(Tensor x) -> Tensor")
    lib.impl("f", noop_kernel, "CompositeImplicitAutograd")
    lib.impl("f", noop_kernel, "Meta")


def _no_override(m, ns):
    lib = m.Library(ns, "FRAGMENT")
    lib.define("f(Tensor x) -> Tensor")
    lib.impl("f", noop_kernel, "CPU")
    lib.impl("f", noop_kernel, "CPU", allow_override=False)


def _destroyed(m, ns):
    lib = m.Library(ns, "FRAGMENT")
    lib._destroy()
    lib.define("f(Tensor x) -> Tensor")


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_matches_torch(case: str) -> None:
    n = next(_ids)
    expected = _outcome(CASES[case], tl, f"pyaten_err_t{n}")
    actual = _outcome(CASES[case], pl, f"pyaten_err_t{n}x")
    assert expected is not None, "torch accepted the case"
    assert actual is not None, f"pyaten accepted the case; torch raised {expected}"
    # Namespaces differ by the trailing "x"; everything else must be equal.
    assert actual[0] == expected[0]
    assert actual[1].replace(f"pyaten_err_t{n}x", f"pyaten_err_t{n}") == expected[1]


def _defined(m, ns, schema="f(Tensor self, Tensor other) -> Tensor"):
    lib = m.Library(ns, "DEF")
    lib.define(schema)
    return lib


@contextlib.contextmanager
def _defined_in_both(ns, schema="f(Tensor self, Tensor other) -> Tensor"):
    """The op defined under `ns` in torch and in pyaten, each with a no-op CPU kernel."""
    name = schema.split("(")[0]
    lib_t, lib_o = _defined(tl, ns, schema), _defined(pl, ns, schema)
    lib_t.impl(name, noop_kernel, "CPU")
    lib_o.impl(name, noop_kernel, "CPU")
    try:
        yield
    finally:
        lib_t._destroy()
        lib_o.close()


def test_bad_schema_is_a_runtime_error_like_torch() -> None:
    for m in (tl, pl):
        lib = m.Library(f"pyaten_err_bad{next(_ids)}", "FRAGMENT")
        with pytest.raises(RuntimeError):
            lib.define("f(Tensor x -> Tensor")
        lib._destroy()


def test_could_not_run_message_matches_torch_head() -> None:
    with _defined_in_both("pyaten_err_run"):
        # torch has no CUDA here; reach the CUDA slot through redispatch instead.
        with pytest.raises(NotImplementedError) as theirs:
            torch.ops.pyaten_err_run.f.default.redispatch(
                torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA), torch.ones(1), torch.ones(1)
            )
        with pytest.raises(NotImplementedError) as ours:
            pd.get_operator("pyaten_err_run::f").call(FakeTensor("cuda"), FakeTensor())
        # pyaten's message is short by default (Note: the "could not run" error, short and
        # full): PyTorch's first sentence and key list without the mobile-build paragraph;
        # the exception's .details holds PyTorch's whole first line.
        head = str(theirs.value).split("\n")[0]
        first_sentence, _, rest = head.partition(". ")
        available = rest[rest.index("'pyaten_err_run::f' is only available"):]
        assert str(ours.value).split("\n")[0] == f"{first_sentence}. {available}"
        assert ours.value.details.split("\n")[0] == head
        assert "selective/custom build" not in str(ours.value)


def test_no_tensor_arguments_message_matches_torch_head() -> None:
    with _defined_in_both("pyaten_err_empty", "g(Tensor[] xs) -> Tensor"):
        with pytest.raises(NotImplementedError) as theirs:
            torch.ops.pyaten_err_empty.g([])
        with pytest.raises(NotImplementedError) as ours:
            pd.get_operator("pyaten_err_empty::g").call([])
        assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


def test_meta_fallback_message_matches_torch() -> None:
    with _defined_in_both("pyaten_err_meta"):
        meta = torch.ones(1, device="meta")
        with pytest.raises(NotImplementedError) as theirs:
            torch.ops.pyaten_err_meta.f(meta, meta)
        with pytest.raises(NotImplementedError) as ours:
            pd.get_operator("pyaten_err_meta::f").call(FakeTensor("meta"), FakeTensor("meta"))
        assert str(ours.value) == str(theirs.value)


def test_ambiguous_autogradother_message_matches_torch() -> None:
    for m in (tl, pl):
        lib = _defined(m, "pyaten_err_amb" + ("o" if m is pl else ""))
        lib.impl("f", noop_kernel, "SparseCPU")
        lib.impl("f", noop_kernel, "CompositeImplicitAutograd")
        if m is tl:
            with pytest.raises(RuntimeError) as theirs:
                torch.ops.pyaten_err_amb.f.default.redispatch(
                    torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradOther),
                    torch.ones(1),
                    torch.ones(1),
                )
            lib._destroy()
        else:
            with pytest.raises(RuntimeError) as ours:
                pd.get_operator("pyaten_err_ambo::f").call(FakeTensor("hip"), FakeTensor("hip"))
            lib.close()
    sentence = str(ours.value).split(". ")[0].replace("pyaten_err_ambo", "pyaten_err_amb")
    assert sentence in str(theirs.value)


def test_override_warning_once_per_process_and_not_for_meta() -> None:
    code = """
import warnings
import pyaten.library as pl
warnings.simplefilter("always")
lib = pl.Library("w", "DEF")
lib.define("f(Tensor x) -> Tensor")
with warnings.catch_warnings(record=True) as rec:
    lib.impl("f", lambda x: x, "Meta"); lib.impl("f", lambda x: x, "Meta")
    print(len(rec))
    lib.impl("f", lambda x: x, "CPU"); lib.impl("f", lambda x: x, "CPU")
    print(len(rec)); print(rec[-1].message.args[0].splitlines()[0])
    print(rec[-1].message.args[0].splitlines()[4])
    lib.impl("f", lambda x: x, "CUDA"); lib.impl("f", lambda x: x, "CUDA")
    print(len(rec))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "0" and lines[1] == "1" and lines[4] == "1"
    assert (
        lines[2] == "Warning only once for all operators,  other operators may also be overridden."
    )
    assert lines[3].strip() == "dispatch key: CPU"


def test_close_restores_previous_kernel_and_releases_namespace() -> None:
    base = _defined(pl, "pyaten_err_life")
    base.impl("f", lambda a, b: "first", "CPU")
    op = pd.get_operator("pyaten_err_life::f")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pl.Library("pyaten_err_life", "IMPL") as over:
            over.impl("f", lambda a, b: "second", "CPU")
            assert op.call(FakeTensor(), FakeTensor()) == "second"
    assert op.call(FakeTensor(), FakeTensor()) == "first"
    base.close()
    assert pd.get_operator("pyaten_err_life::f") is None
    with pytest.raises(RuntimeError, match="Could not find schema for pyaten_err_life::f"):
        op.call(FakeTensor(), FakeTensor())
    again = pl.Library("pyaten_err_life", "DEF")  # the DEF claim was released
    again.close()


def test_dangling_impl_reattaches_on_define() -> None:
    impl = pl.Library("pyaten_err_dangle", "IMPL")
    impl.impl("f", lambda a, b: "cpu", "CPU")
    assert "pyaten_err_dangle::f" in pd.find_dangling_impls()
    assert pd.get_operator("pyaten_err_dangle::f") is None
    lib = _defined(pl, "pyaten_err_dangle")
    assert pd.get_operator("pyaten_err_dangle::f").call(FakeTensor(), FakeTensor()) == "cpu"
    lib.close()
    assert "pyaten_err_dangle::f" in pd.find_dangling_impls()
    impl.close()
    assert "pyaten_err_dangle::f" not in pd.find_dangling_impls()


def test_decorator_form_and_list_operators() -> None:
    with pl.Library("pyaten_err_deco", "DEF") as lib:
        lib.define("f(Tensor self) -> Tensor")
        lib.define("f.two(Tensor self, Tensor other) -> Tensor")

        @lib.impl("f", dispatch_key="CPU")
        def f_cpu(x):
            return "decorated"

        assert f_cpu(None) == "decorated"  # the decorator returns the function
        assert pd.get_operator("pyaten_err_deco::f").call(FakeTensor()) == "decorated"
        assert pd.list_operators("pyaten_err_deco") == [
            "pyaten_err_deco::f",
            "pyaten_err_deco::f.two",
        ]


def test_garbage_collected_library_removes_its_registrations() -> None:
    import gc

    keep = _defined(pl, "pyaten_err_gc")

    def register_and_drop():
        lib = pl.Library("pyaten_err_gc", "IMPL")
        lib.impl("f", lambda a, b: "temporary", "CPU")
        assert pd.dump_table("pyaten_err_gc::f")["CPU"] == "CPU"

    register_and_drop()
    gc.collect()
    assert pd.dump_table("pyaten_err_gc::f")["CPU"] == "missing"
    keep.close()
    with pytest.raises(AssertionError, match="Library object has been destroyed"):
        keep.impl("f", noop_kernel, "CPU")
