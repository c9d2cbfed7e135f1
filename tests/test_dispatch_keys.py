"""Dispatch keys and key-set arithmetic against torch._C.DispatchKey / DispatchKeySet."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pyaten.dispatch import keys as K  # noqa: E402
from pyaten.dispatch.keys import DispatchKey, DispatchKeySet  # noqa: E402

TK = torch._C.DispatchKey
TS = torch._C.DispatchKeySet

# Random raw patterns, denser in the low (backend) and high (mode) bits that matter.
raw_sets = st.builds(
    lambda a, b, c: (a | b) & c & K.FULL_RAW,
    st.integers(0, 2**62 - 1),
    st.integers(0, 2**62 - 1),
    st.integers(0, 2**62 - 1),
)


def _torch_set(raw: int):
    return TS.from_raw_repr(raw)


def test_enum_values_match_torch() -> None:
    for name, value in TK.__members__.items():
        assert int(K.KEY_BY_NAME[name]) == int(value), name


def test_runtime_keys_are_torch_full_set_in_order() -> None:
    names = repr(_torch_set(K.FULL_RAW))[len("DispatchKeySet(") : -1].split(", ")
    assert K.runtime_keys() == ["Undefined", *names]
    assert len(K.runtime_keys()) == 137


def test_parse_matches_torch_for_every_name() -> None:
    for name in K.KEY_BY_NAME:
        theirs = torch._C._parse_dispatch_key(name)
        if theirs is None:
            with pytest.raises(RuntimeError, match=f"could not parse dispatch key: {name}"):
                K.parse_dispatch_key(name)
        else:
            assert int(K.parse_dispatch_key(name)) == int(theirs), name


@settings(max_examples=400, deadline=None)
@given(raw_sets, raw_sets)
def test_set_algebra_matches_torch(a: int, b: int) -> None:
    ta, tb = _torch_set(a), _torch_set(b)
    pa, pb = DispatchKeySet.from_raw(a), DispatchKeySet.from_raw(b)
    assert (pa | pb).raw == (ta | tb).raw_repr()
    assert (pa & pb).raw == (ta & tb).raw_repr()
    assert (pa - pb).raw == (ta - tb).raw_repr()
    assert repr(pa) == repr(ta)
    assert int(pa.highest_priority_type_id()) == int(ta.highestPriorityTypeId())


@settings(max_examples=300, deadline=None)
@given(raw_sets, st.sampled_from(K.runtime_keys()[1:]))
def test_has_add_remove_match_torch(raw: int, name: str) -> None:
    tkey = torch._C._parse_dispatch_key(name)
    if tkey is None:  # names torch's parser refuses: compare through the enum value
        tkey = TK.__members__.get(name)
    if tkey is None:
        return
    ts, ps = _torch_set(raw), DispatchKeySet.from_raw(raw)
    assert ps.has(name) == ts.has(tkey)
    assert ps.add(name).raw == ts.add(tkey).raw_repr()
    assert ps.remove(name).raw == ts.remove(tkey).raw_repr()


@pytest.mark.parametrize("name", [n for n in K.runtime_keys()[1:] if n in K.PARSEABLE_KEYS])
def test_full_after_matches_torch(name: str) -> None:
    theirs = torch._C._dispatch_keyset_full_after(torch._C._parse_dispatch_key(name))
    assert K.full_after(name).raw == theirs.raw_repr()


@settings(max_examples=300, deadline=None)
@given(raw_sets)
def test_table_index_is_slot_of_highest_key(raw: int) -> None:
    # The slot of a set is the slot of its highest-priority runtime key (CPU column if bare).
    index = K.table_index(raw)
    key = DispatchKeySet.from_raw(raw).highest_priority_type_id()
    if key.is_runtime:
        assert K.runtime_keys()[index] == key.name
    else:  # a bare per-backend functionality bit indexes the CPU column of its block
        assert (
            K.runtime_keys()[index]
            == K.PER_BACKEND[K.FUNCTIONALITIES[(raw >> 16).bit_length() - 1]][0] + "CPU"
        )


@pytest.mark.parametrize(
    "device, make",
    [
        ("cpu", lambda: torch.ones(2)),
        ("meta", lambda: torch.ones(2, device="meta")),
    ],
)
def test_tensor_keysets_match_torch(device: str, make) -> None:
    assert K.backend_keyset_bits(device) == torch._C._dispatch_keys(make()).raw_repr()


def test_tensor_keysets_follow_the_backend_rule() -> None:
    ks = DispatchKeySet.from_raw(K.backend_keyset_bits("cuda"))
    assert repr(ks) == "DispatchKeySet(CUDA, ADInplaceOrView, AutogradCUDA, AutocastCUDA)"
    hip = DispatchKeySet.from_raw(K.backend_keyset_bits("hip"))
    assert repr(hip) == "DispatchKeySet(HIP, ADInplaceOrView, AutogradOther)"
    with pytest.raises(RuntimeError, match="device type"):
        K.backend_keyset_bits("nonsense")


def test_tls_defaults_match_torch() -> None:
    from pyaten.dispatch import tls

    assert tls.tls_local_include_set().raw == torch._C._dispatch_tls_local_include_set().raw_repr()
    assert tls.tls_local_exclude_set().raw == torch._C._dispatch_tls_local_exclude_set().raw_repr()


def test_guards_match_torch() -> None:
    from pyaten.dispatch import tls

    with torch._C._AutoDispatchBelowAutograd(), tls.AutoDispatchBelowAutograd():
        assert tls.tls_local_exclude_set().raw == (
            torch._C._dispatch_tls_local_exclude_set().raw_repr()
        )
    with torch._C._AutoDispatchBelowADInplaceOrView(), tls.AutoDispatchBelowADInplaceOrView():
        assert tls.tls_local_exclude_set().raw == (
            torch._C._dispatch_tls_local_exclude_set().raw_repr()
        )
    with torch._C._IncludeDispatchKeyGuard(TK.Python), tls.IncludeDispatchKeyGuard("Python"):
        assert tls.tls_local_include_set().raw == (
            torch._C._dispatch_tls_local_include_set().raw_repr()
        )
    assert tls.tls_local_include_set().raw == tls.DEFAULT_INCLUDED


def test_keyset_is_immutable_and_hashable() -> None:
    ks = DispatchKeySet(["CPU", "AutogradCPU"])
    with pytest.raises(AttributeError):
        ks.raw = 0  # type: ignore[misc]
    assert {ks: 1}[DispatchKeySet.from_raw(ks.raw)] == 1
    assert list(ks) == [DispatchKey.CPU, DispatchKey.AutogradCPU]
    assert DispatchKey.CPU in ks and len(ks) == 2


def test_register_backend_name_in_subprocess() -> None:
    import subprocess
    import sys

    code = (
        "from pyaten.dispatch import keys as K\n"
        "K.register_backend_name('npu')\n"
        "ks = K.DispatchKeySet.from_raw(K.backend_keyset_bits('npu'))\n"
        "print(ks.has('PrivateUse1'), ks.has('AutogradPrivateUse1'),\n"
        "      K.parse_dispatch_key('AutogradNPU').name, K.display_name('SparsePrivateUse1'))\n"
        "try:\n    K.register_backend_name('xpu2')\nexcept RuntimeError as e:\n    print('err')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.stdout.split() == ["True", "True", "AutogradPrivateUse1", "Sparsenpu", "err"]


def test_ready_made_masks_match_torch() -> None:
    assert K.AFTER_AUTOGRAD.raw == torch._C._after_autograd_keyset.raw_repr()
    assert K.AFTER_AD_INPLACE_OR_VIEW.raw == torch._C._after_ADInplaceOrView_keyset.raw_repr()
    assert K.FULL.raw == torch._C._dispatch_keyset_full().raw_repr()


def test_autograd_backend_mapping_matches_torch() -> None:
    # BK(k) of spec 2.3, the "backend kernel present" test behind AutogradX slots.
    from pyaten.dispatch import rules

    for name in K.runtime_keys():
        if not name.startswith("Autograd") or name == "AutogradFunctionality":
            continue
        slot = K.runtime_keys().index(name)
        theirs = torch._C._dispatch_get_backend_keyset_from_autograd(TK.__members__[name])
        assert rules._BACKEND_PATTERN.get(slot, 0) == theirs.raw_repr(), name


def test_unregister_backend_name_frees_the_slot():
    from pyaten.dispatch import keys as _keys

    _keys.register_backend_name("zzdev", "PrivateUse3")
    try:
        assert _keys.backend_keyset_bits("zzdev")
        assert _keys.display_name("AutogradPrivateUse3") == "Autogradzzdev"  # as c10 prints it
    finally:
        _keys.unregister_backend_name("zzdev")
    assert "PrivateUse3" not in _keys.backend_names()
    with pytest.raises(RuntimeError, match="device type"):
        _keys.backend_keyset_bits("zzdev")
    assert _keys.display_name("AutogradPrivateUse3") == "AutogradPrivateUse3"
    _keys.unregister_backend_name("never-registered")  # ignored
