"""Sparse tensors on a plug-in device (openreg): kernels from its manifest, key sets, errors.

The key sets and the "Could not run" message come from PyTorch itself, probed in a
subprocess (renaming PyTorch's PrivateUse1 backend cannot be undone in a process); values
are compared with PyTorch's CPU results.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.backends as backends
from pyaten.dispatch import DispatchKeySet

ROOT = Path(__file__).resolve().parents[1]
OPENREG_DIR = ROOT / "extensions" / "openreg"
DENSE = [[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]


@pytest.fixture(scope="module", autouse=True)
def openreg():
    already = "openreg" in backends.devices()
    try:
        import pyaten_openreg
    except ImportError:
        sys.path.insert(0, str(OPENREG_DIR))
        import pyaten_openreg
    if "openreg" not in backends.devices():
        pyaten_openreg.register()
    yield pyaten_openreg
    if not already:
        pyaten_openreg.unregister()


_TORCH_PROBE = textwrap.dedent(
    """
    import json, torch
    torch.utils.rename_privateuse1_backend("openreg")
    class W(torch.Tensor):
        @staticmethod
        def __new__(cls, layout):
            return torch.Tensor._make_wrapper_subclass(
                cls, (2, 3), device="openreg", layout=layout, dtype=torch.float32)
        @classmethod
        def __torch_dispatch__(cls, func, types, args, kwargs=None):
            raise RuntimeError("unreachable")
    python = torch._C.DispatchKeySet(torch._C.DispatchKey.Python) | torch._C.DispatchKeySet(
        torch._C.DispatchKey.PythonTLSSnapshot)
    w = W(torch.sparse_coo)
    keys = torch._C._dispatch_keys(w) - python
    with torch._C._ExcludeDispatchKeyGuard(python):
        try:
            torch.ops.aten.cumsum.default(w, 0)
        except NotImplementedError as e:
            message = str(e).split(" This could be")[0]
    print(json.dumps({"sparse_keys": keys.raw_repr(), "message": message}))
    """
)


@pytest.fixture(scope="module")
def torch_answers() -> dict:
    out = subprocess.run([sys.executable, "-c", _TORCH_PROBE], capture_output=True, text=True,
                         timeout=300, check=True)  # fmt: skip
    return json.loads(out.stdout)


def _same(ours: pyaten.Tensor, theirs: torch.Tensor, atol: float = 0.0, rtol: float = 0.0
          ) -> None:
    """Same dtype, shape and values (a strided CPU tensor of ours against torch's)."""
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=atol, rtol=rtol)


def _sparse(device: str = "openreg") -> pyaten.Tensor:
    return pyaten.tensor(DENSE).to(device).to_sparse()


def test_key_set_is_pytorchs(openreg, torch_answers) -> None:
    if backends.get_device("openreg").slot != "PrivateUse1":
        pytest.skip("openreg is not on PrivateUse1 in this process")
    for s in (_sparse(), pyaten.tensor(DENSE).to_sparse().to("openreg")):
        assert s._keyset == torch_answers["sparse_keys"]
        assert s.layout is pyaten.sparse_coo and s.is_sparse
        assert s.device == pyaten.device("openreg:0")
    csr = pyaten.tensor(DENSE).to_sparse_csr().to("openreg")
    assert str(DispatchKeySet.from_raw(csr._keyset)) == (
        "DispatchKeySet(SparseCsrPrivateUse1, ADInplaceOrView, AutogradPrivateUse1, "
        "AutocastPrivateUse1)"
    )


def test_missing_sparse_kernel_error_is_pytorchs(torch_answers) -> None:
    with pytest.raises(NotImplementedError) as info:
        pyaten.cumsum(_sparse(), 0)
    assert str(info.value).startswith(torch_answers["message"] + " ")
    assert "'Sparseopenreg' backend" in torch_answers["message"]


def test_manifest_registers_sparse_kernels(openreg) -> None:
    dev = backends.get_device("openreg")  # the one registered now (not a stale DEVICE)
    assert ("Sparse", "_to_dense") in dev.layout_kernels
    assert ("SparseCsr", "mm") in dev.layout_kernels
    entry = pyaten.dispatch.get_operator("aten::mm")
    assert any(k.name == "Sparse" + dev.slot and v for k, v in entry.kernels.items())


def test_sparse_on_openreg_matches_torch() -> None:
    t = torch.tensor(DENSE).to_sparse()
    s = _sparse()
    _same(s.coalesce().indices().cpu(), t.coalesce().indices())
    _same(s.coalesce().values().cpu(), t.coalesce().values())
    assert s._nnz() == t._nnz() and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert s.values().device.type == "openreg"
    _same(s.to_dense().cpu(), t.to_dense())
    summed = s + s
    assert summed.layout is pyaten.sparse_coo and summed.device.type == "openreg"
    _same(summed.to_dense().cpu(), (t + t).to_dense())
    _same((s * s).to_dense().cpu(), (t * t).to_dense())
    m = torch.arange(6.0).reshape(3, 2)
    product = pyaten.mm(s, pyaten.tensor(m.numpy()).to("openreg"))
    assert product.device.type == "openreg" and product.layout is pyaten.strided
    _same(product.cpu(), torch.mm(t, m))
    back = s.cpu()
    assert back.device.type == "cpu" and back.layout is pyaten.sparse_coo
    _same(back.to_dense(), t.to_dense())


def test_csr_on_openreg_matches_torch() -> None:
    t = torch.tensor(DENSE).to_sparse_csr()
    c = pyaten.tensor(DENSE).to_sparse_csr().to("openreg")
    assert c.layout is pyaten.sparse_csr and c._nnz() == 3
    _same(c.crow_indices().cpu(), t.crow_indices())
    _same(c.col_indices().cpu(), t.col_indices())
    _same(c.values().cpu(), t.values())
    _same(c.to_dense().cpu(), t.to_dense())
    m = torch.ones(3, 4)
    _same(pyaten.mm(c, pyaten.ones(3, 4).to("openreg")).cpu(), torch.mm(t, m))


def test_sparse_to_copy_keeps_index_dtype() -> None:
    # `.to(dtype)` of a sparse tensor converts the values only (the path `.to("openreg")` uses)
    t = torch.tensor(DENSE).to_sparse().double()
    s = pyaten.tensor(DENSE).to_sparse().double()
    assert s.layout is pyaten.sparse_coo
    _same(s._indices(), t._indices())
    _same(s._values(), t._values())
    tc = torch.tensor(DENSE).to_sparse_csr().to(torch.float64)
    sc = pyaten.tensor(DENSE).to_sparse_csr().to(pyaten.float64)
    _same(sc.crow_indices(), tc.crow_indices())
    _same(sc.values(), tc.values())


@settings(max_examples=15, deadline=None, derandomize=True)
@given(
    st.integers(1, 5), st.integers(1, 5), st.integers(1, 4),
    st.integers(0, 2**31 - 1), st.floats(0.1, 0.9),
)  # fmt: skip
def test_sparse_mm_and_add_on_openreg(rows, inner, cols, seed, density) -> None:
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((rows, inner)) * (rng.random((rows, inner)) < density))
    a = a.astype(np.float32)
    b = rng.standard_normal((inner, cols)).astype(np.float32)
    ta, tb = torch.from_numpy(a).to_sparse(), torch.from_numpy(b)
    sa = pyaten.tensor(a).to("openreg").to_sparse()
    sb = pyaten.tensor(b).to("openreg")
    _same(pyaten.mm(sa, sb).cpu(), torch.mm(ta, tb), atol=1e-5, rtol=1e-5)
    dense = pyaten.tensor(a).to("openreg")
    _same((dense + sa).cpu(), torch.from_numpy(a) + ta)


def test_register_kernel_layout_checked(openreg) -> None:
    with pytest.raises(ValueError, match="layout must be one of Sparse, SparseCsr"):
        # the device registered now (another test may have re-registered openreg since
        # pyaten_openreg.DEVICE was made)
        backends.get_device("openreg").register_kernel("cumsum", lambda *a: None,
                                                       layout="Quantized")


def _manifest(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "toy.yaml"
    path.write_text("backend: openreg\ncpp_namespace: toy\n" + body)
    return path


def test_manifest_sparse_list_is_checked(tmp_path) -> None:
    from pyaten.backends.manifest import lint_manifest

    class Kernels:
        @staticmethod
        def sparse_values(self):
            return self

    path = _manifest(tmp_path, "sparse:\n- values\n- valuse\n- _to_dense\nsparse_csr: [mm]\n")
    found = {(d.line, d.code): d.message for d in lint_manifest(path, Kernels)}
    assert found[(5, "backend-unknown-op")] == "'valuse' under 'sparse' is not a declared operator"
    assert found[(6, "backend-missing-kernel")].startswith(
        "'_to_dense' is named under 'sparse' but Kernels has no function 'sparse__to_dense'"
    )
    assert found[(7, "backend-missing-kernel")].startswith(
        "'mm' is named under 'sparse_csr' but Kernels has no function 'sparse_csr_mm'"
    )
    assert not any(line == 4 for line, _ in found)  # `values` is bound


def test_explain_shows_the_sparse_plugin_kernel() -> None:
    s = _sparse()
    with pyaten.explain() as ex:
        s + s
    text = " ".join(str(ex).split())
    assert "layout=pyaten.sparse_coo" in text
    assert "self: SparsePrivateUse" in text  # the key set, as PyTorch prints it
    assert "-> Sparseopenreg [kernel: a kernel registered directly for this key]" in text


def test_gradients_through_sparse_on_openreg() -> None:
    t = torch.tensor(DENSE).to_sparse().requires_grad_()
    (t.to_dense() * torch.arange(6.0).reshape(2, 3)).sum().backward()
    s = _sparse().requires_grad_()
    (s.to_dense() * pyaten.arange(6.0).reshape(2, 3).to("openreg")).sum().backward()
    assert s.grad.layout is pyaten.sparse_coo and s.grad.device.type == "openreg"
    _same(s.grad.to_dense().cpu(), t.grad.to_dense())
    tw = torch.ones(3, 2, requires_grad=True)
    torch.mm(torch.tensor(DENSE).to_sparse(), tw).sum().backward()
    w = pyaten.ones(3, 2, device="openreg", requires_grad=True)
    pyaten.mm(_sparse(), w).sum().backward()
    assert w.grad.device.type == "openreg"
    _same(w.grad.cpu(), tw.grad)


def test_unlisted_sparse_kernels_are_reported(tmp_path) -> None:
    import types

    from pyaten.backends.manifest import lint_manifest

    module = types.ModuleType("toy_sparse_kernels")
    exec("def sparse_values(self):\n    return self\n\n"
         "def sparse_csr_mm(self, mat2):\n    return self\n\n"
         "def sparse_helper(x):\n    return x\n", module.__dict__)  # fmt: skip
    path = _manifest(tmp_path, "sparse: [values]\n")
    found = [d for d in lint_manifest(path, module) if d.code == "backend-unlisted-kernel"]
    assert [(d.message, d.hint) for d in found] == [(
        "sparse_csr_mm() implements 'mm' but the manifest does not name it",
        "add it under 'sparse_csr:', or rename it with a leading _",
    )]  # fmt: skip


def test_clone_copies_and_checkpoints_of_sparse_device_tensors() -> None:
    import copy
    import io
    import pickle

    t = torch.tensor(DENSE).to_sparse()
    for s in (pyaten.tensor(DENSE).to_sparse(), _sparse()):
        c = s.clone()
        assert c.layout is pyaten.sparse_coo and c.device == s.device
        assert c._values() is not s._values() and c.is_coalesced() == t.clone().is_coalesced()
        _same(c.to_dense().cpu(), t.clone().to_dense())
        with pytest.raises(RuntimeError) as ours:
            s.clone(memory_format=pyaten.contiguous_format)
        with pytest.raises(RuntimeError) as theirs:
            t.clone(memory_format=torch.contiguous_format)
        assert str(ours.value) == str(theirs.value)
    csr = pyaten.tensor(DENSE).to_sparse_csr().to("openreg").clone()
    assert csr.layout is pyaten.sparse_csr and csr.device.type == "openreg"
    s = _sparse()
    buffer = io.BytesIO()
    pyaten.save(s, buffer)
    buffer.seek(0)
    for back in (pyaten.load(buffer), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert back.layout is pyaten.sparse_coo and back.device.type == "openreg"
        _same(back.to_dense().cpu(), t.to_dense())
