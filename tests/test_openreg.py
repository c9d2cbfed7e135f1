"""The example device extensions/openreg: conformance, memory, autograd, nn and optimisers.

openreg must pass the conformance kit (pyaten/testing/conformance.py) for every operator its
manifest claims, run those natively (no CPU fallback), and train the demo CNN to the CPU's
losses. Its package is imported from extensions/openreg when it is not installed.
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

import pyaten
import pyaten.backends as backends
from pyaten.testing import conformance

ROOT = Path(__file__).resolve().parents[1]
OPENREG_DIR = ROOT / "extensions" / "openreg"
MANIFEST = yaml.safe_load((OPENREG_DIR / "pyaten_openreg" / "openreg.yaml").read_text())


def _import_openreg():
    try:
        import pyaten_openreg
    except ImportError:
        sys.path.insert(0, str(OPENREG_DIR))
        import pyaten_openreg
    return pyaten_openreg


@pytest.fixture(scope="module", autouse=True)
def openreg():
    """The device, registered for this module's tests only (other modules see no openreg)."""
    already = "openreg" in backends.devices()  # e.g. by the pytest plugin's --pyaten-device
    package = _import_openreg()
    if "openreg" not in backends.devices():
        package.register()
    yield package
    if not already:
        package.unregister()


def _claimed_names() -> set[str]:
    """Base names of the operators the manifest claims (`add.out` -> `add`)."""
    ops = list(MANIFEST["supported"]) + list(MANIFEST["structured"])
    return {op.partition(".")[0].rstrip("_") for op in ops}


CLAIMED = _claimed_names()


def _fallbacks() -> dict[str, int]:
    return {op: calls for _, op, _, calls in backends.fallback_report("openreg").rows}


# -- registration and runtime --------------------------------------------------------------------


def test_import_registers_two_devices():
    assert "openreg" in backends.devices()
    assert pyaten.openreg.device_count() == 2
    assert pyaten.openreg.is_available()
    assert pyaten.device("openreg:1").index == 1
    x = pyaten.ones(2, device="openreg:1")
    assert x.device == pyaten.device("openreg:1")
    assert x.is_openreg and not pyaten.ones(2).is_openreg


def test_set_device_moves_the_default_index():
    try:
        pyaten.openreg.set_device(1)
        assert pyaten.openreg.current_device() == 1
        assert pyaten.empty(3, device="openreg").device == pyaten.device("openreg:1")
    finally:
        pyaten.openreg.set_device(0)
    assert pyaten.empty(3, device="openreg").device == pyaten.device("openreg:0")


def test_invalid_index_is_refused():
    with pytest.raises(RuntimeError, match="openreg"):
        pyaten.empty(3, device="openreg:2")


def test_unregister_then_register_again(openreg):
    openreg.unregister()
    try:
        assert "openreg" not in backends.devices()
        with pytest.raises(RuntimeError, match="device type"):
            pyaten.device("openreg")
    finally:
        openreg.register()
    assert (pyaten.ones(2, device="openreg") + 1).cpu().tolist() == [2.0, 2.0]


# -- memory --------------------------------------------------------------------------------------


def test_storage_holds_a_pool_buffer_not_an_array(openreg):
    memory = openreg.memory
    x = pyaten.arange(6.0).to("openreg")
    data = x.untyped_storage().data
    assert isinstance(data, memory.Buffer) and not isinstance(data, np.ndarray)
    assert data.device_index == 0
    assert x.untyped_storage().data_ptr() == data.data_ptr() != 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8",
                                   "uint8", "bool", "complex64"])
def test_round_trip_keeps_values(dtype):
    values = pyaten.tensor([[0, 1, 2], [3, 4, 5]]).to(getattr(pyaten, dtype))
    moved = values.to("openreg")
    assert moved.dtype is values.dtype and moved.device.type == "openreg"
    back = moved.cpu()
    assert back.device.type == "cpu"
    assert back.tolist() == values.tolist()


def test_non_contiguous_copies_both_ways():
    base = pyaten.arange(12.0).view(3, 4)
    moved = base.t().to("openreg")
    assert moved.cpu().tolist() == base.t().tolist()
    target = pyaten.zeros(4, 3)
    target.copy_(moved)
    assert target.tolist() == base.t().tolist()
    on_device = pyaten.zeros(4, 3, device="openreg")
    on_device.copy_(base.t())
    assert on_device.cpu().tolist() == base.t().tolist()


def test_memory_statistics_follow_tensors(openreg):
    gc.collect()
    gc.disable()  # no collection of unrelated garbage between the readings
    try:
        openreg.empty_cache(1)
        openreg.reset_peak_memory_stats(1)
        start = openreg.memory_allocated(1)
        x = pyaten.empty(100, device="openreg:1")  # 400 bytes, rounded to a 64-byte multiple
        assert openreg.memory_allocated(1) == start + 448
        y = pyaten.empty(1000, dtype=pyaten.float64, device="openreg:1")
        assert openreg.memory_allocated(1) == start + 448 + 8000
        assert openreg.max_memory_allocated(1) == start + 8448
        del x, y
        assert openreg.memory_allocated(1) == start
        assert openreg.max_memory_allocated(1) == start + 8448
        assert pyaten.openreg.memory_allocated(1) == start  # the runtime module has them too
        if start == 0:
            assert openreg.memory_reserved(1) > 0  # freed blocks stay cached ...
            openreg.empty_cache(1)
            assert openreg.memory_reserved(1) == 0  # ... until empty_cache
    finally:
        gc.enable()


def test_pool_reuses_cached_blocks_and_merges_free_ranges(openreg):
    memory = openreg.memory
    pool = memory.DevicePool(0)
    a = pool.allocate(100)
    offset = a.offset
    del a
    b = pool.allocate(120)  # the same rounded size: the cached block comes back
    assert b.offset == offset and pool.stats()["segment.current"] == 1
    c, d = pool.allocate(64), pool.allocate(64)
    assert (c.offset, d.offset) == (128, 192)
    del b, c, d
    pool.empty_cache()
    assert pool.stats()["segment.current"] == 0 and pool.allocated == 0
    big = pool.allocate(5 << 20)  # larger than a segment: a segment of its own
    assert pool.reserved() == 5 << 20
    assert big.bytes().nbytes == 5 << 20
    with pytest.raises(RuntimeError, match="negative"):
        pool.allocate(-1)


def test_resize_grows_into_a_new_buffer_keeping_values():
    x = pyaten.arange(4.0).to("openreg")
    old = x.untyped_storage().data
    x.resize_(10)
    assert x.untyped_storage().data is not old
    assert x.cpu()[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    x.resize_(2, 2)
    assert x.cpu().tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_set_points_a_tensor_at_a_storage():
    source = pyaten.arange(6.0).to("openreg")
    t = pyaten.empty(0, device="openreg")
    pyaten.ops.aten.set_.source_Storage_storage_offset(t, source.untyped_storage(), 2, (2, 2),
                                                      (1, 2))
    assert t.cpu().tolist() == [[2.0, 4.0], [3.0, 5.0]]


# -- printing, item, views -------------------------------------------------------------------------


def test_printing_and_item():
    x = pyaten.tensor([[1.5, 2.0], [3.0, 4.0]]).to("openreg")
    assert repr(x) == "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]], device='openreg:0')"
    assert x[1, 0].item() == 3.0
    assert pyaten.tensor(7).to("openreg").item() == 7
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]


def test_views_share_device_memory():
    x = pyaten.zeros(3, 4, device="openreg")
    x[1].fill_(2.0)
    x.t()[3].fill_(5.0)
    x.view(12)[0:2].fill_(-1.0)
    expected = [[-1.0, -1.0, 0.0, 5.0], [2.0, 2.0, 2.0, 5.0], [0.0, 0.0, 0.0, 5.0]]
    assert x.cpu().tolist() == expected
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view(12)


def test_indexing_and_module_methods():
    x = pyaten.arange(6.0).to("openreg:1")
    assert x[x > 2].cpu().tolist() == [3.0, 4.0, 5.0]  # index.Tensor: force_fallback
    assert x[pyaten.tensor([0, 4]).to("openreg:1")].device == pyaten.device("openreg:1")
    x[1] = 7.0
    assert x.cpu().tolist()[:2] == [0.0, 7.0]
    layer = pyaten.nn.Linear(2, 2).openreg()
    assert all(p.device == pyaten.device("openreg:0") for p in layer.parameters())


def test_cross_device_calls_raise():
    a = pyaten.ones(2, device="openreg:0")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + pyaten.ones(2, device="openreg:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + pyaten.ones(2)
    assert (a + pyaten.tensor(2.0)).cpu().tolist() == [3.0, 3.0]  # 0-dim CPU tensors are fine


# -- conformance ---------------------------------------------------------------------------------

SAMPLES = conformance.samples()


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{s.op}-{i}" for i, s in enumerate(SAMPLES)])
def test_conformance_sample(sample):
    """Every sample matches the CPU on openreg; a claimed operator runs without fallback."""
    before = _fallbacks()
    conformance.check_sample(sample, "openreg")
    fell_back = {op: n - before.get(op, 0) for op, n in _fallbacks().items()
                 if n > before.get(op, 0)}
    name = sample.name.rstrip("_")
    if name in CLAIMED:  # its own overloads ran natively (its backward may fall back)
        own = [op for op in fell_back if op.split("::")[-1].partition(".")[0].rstrip("_") == name]
        assert not own, f"{sample.op} is claimed by openreg.yaml but fell back: {fell_back}"


DTYPE_OPS = {
    "add": lambda x, y: x + y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "neg": lambda x, y: -x,
    "relu": lambda x, y: x.relu(),
    "eq": lambda x, y: x == y,
    "sum": lambda x, y: x.sum(1),
    "sum_all": lambda x, y: x.sum(),
    "mean": lambda x, y: x.mean(1),
    "amax": lambda x, y: x.amax(0),
    "argmax": lambda x, y: x.argmax(1),
    "mm": lambda x, y: x.mm(y.view(4, 1)),
}
DTYPES = ("float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool", "complex64")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(DTYPE_OPS))
def test_native_kernels_agree_with_the_cpu_for_every_dtype(name, dtype):
    """Same values and dtype as the CPU, or the same kind of error with the same message."""
    d = getattr(pyaten, dtype)
    a = pyaten.tensor(np.arange(12).reshape(3, 4) % 5).to(d)
    b = pyaten.tensor(np.arange(4) % 3 + 1).to(d)
    fn = DTYPE_OPS[name]
    try:
        expected = fn(a, b)
    except (RuntimeError, NotImplementedError, TypeError) as error:
        with pytest.raises(type(error)) as raised:
            fn(a.to("openreg"), b.to("openreg"))
        assert str(raised.value) == str(error)
        return
    got = fn(a.to("openreg"), b.to("openreg"))
    assert got.device.type == "openreg"
    got = got.cpu()
    assert got.dtype is expected.dtype and got.shape == expected.shape
    wide = pyaten.complex128 if expected.dtype.is_complex else pyaten.float64
    np.testing.assert_allclose(got.to(wide).numpy(), expected.to(wide).numpy(), rtol=1e-6)


# Claimed operators without a sample of their own: exercised by the backward of sampled
# operators (relu, sigmoid, tanh, softmax, log_softmax, nll_loss), by the softmax and
# nll_loss samples, or tested directly here (_copy_from_and_resize; _copy_from runs in every
# .to()).
NO_SAMPLE_OF_THEIR_OWN = {
    "_copy_from_and_resize", "_copy_from", "threshold_backward", "sigmoid_backward",
    "tanh_backward", "_softmax", "_log_softmax", "_softmax_backward_data",
    "_log_softmax_backward_data", "nll_loss_forward", "nll_loss_backward",
}


def test_every_claimed_operator_has_samples():
    sampled = {s.name.rstrip("_") for s in SAMPLES}
    missing = CLAIMED - sampled - NO_SAMPLE_OF_THEIR_OWN
    assert not missing, f"openreg.yaml claims operators the kit does not exercise: {missing}"


def test_copy_from_and_resize_resizes_the_destination():
    src = pyaten.arange(6.0).view(2, 3).to("openreg")
    dst = pyaten.empty(0, device="openreg")
    out = pyaten.ops.aten._copy_from_and_resize.default(src, dst)
    assert out is dst and dst.shape == (2, 3)
    assert dst.cpu().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_conformance_report_covers_the_manifest():
    report = pyaten.testing.run_backend_conformance("openreg")
    assert report.failing() == [], str(report)
    native = set(report.native())
    for op in ("add.Tensor", "mul.Tensor", "exp", "relu", "sum.dim_IntList", "mm", "addmm",
               "bmm", "where.self", "argmax", "view", "as_strided", "fill_.Scalar"):
        assert op in native, str(report)
    assert "cumsum" in report.fallback() and "sort" in report.fallback()
    text = str(report)
    assert "conformance of device 'openreg' against the CPU" in text
    counts = report.counts()
    assert text.endswith(f"{len(report.results)} operators: {counts['native']} native, "
                         f"{counts['fallback']} through the CPU fallback, 0 failing")


def test_conformance_on_the_cpu_is_all_native_and_ops_filter():
    report = conformance.run_backend_conformance("cpu", ops=["add", "mm", "add_.Tensor"])
    assert sorted(report.results) == ["add.Scalar", "add.Tensor", "add_.Tensor", "mm"]
    assert report.failing() == [] and report.fallback() == []


def test_conformance_rejects_unknown_ops_and_devices():
    with pytest.raises(ValueError, match="no samples for operator"):
        conformance.run_backend_conformance("openreg", ops=["no_such_op"])
    with pytest.raises(ValueError, match="unknown device"):
        conformance.run_backend_conformance("nosuchdevice")


def test_conformance_reports_a_wrong_kernel_as_failing(openreg):
    loops = openreg.loops
    saved = loops.exp_stub
    stub = __import__("pyaten.core.stub", fromlist=["all_stubs"]).all_stubs()["exp_stub"]
    stub.register("openreg", loops._elementwise(np.exp2))
    try:
        report = conformance.run_backend_conformance("openreg", ops=["exp"])
    finally:
        stub.register("openreg", saved)
    assert report.failing() == ["exp"]
    assert "values differ" in report.results["exp"].detail


# -- autograd, nn, optimisers ----------------------------------------------------------------------


def _pair(*shape: int, seed: int = 0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    cpu = pyaten.tensor(values, requires_grad=True)
    dev = pyaten.tensor(values).to("openreg").requires_grad_(True)
    return cpu, dev


def test_autograd_on_the_device_matches_the_cpu():
    (x, xd), (w, wd) = _pair(3, 4), _pair(4, 2, seed=1)
    for a, b in ((x, w), (xd, wd)):
        ((a @ b).tanh() * 2 + a.sum(1, keepdim=True)).relu().mean().backward()
    assert wd.grad.device.type == "openreg" and xd.grad.is_openreg
    np.testing.assert_allclose(xd.grad.cpu().numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(wd.grad.cpu().numpy(), w.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_sigmoid_uses_openregs_own_autograd_kernel():
    (x, xd) = _pair(6)
    yd = xd.sigmoid()
    assert type(yd.grad_fn).__name__ == "_SigmoidBackward"  # the manifest's `autograd:` entry
    assert type(x.sigmoid().grad_fn).__name__ != "_SigmoidBackward"
    yd.sum().backward()
    x.sigmoid().sum().backward()
    np.testing.assert_allclose(xd.grad.cpu().numpy(), x.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make", [
    lambda params: pyaten.optim.SGD(params, lr=0.1, momentum=0.9),
    lambda params: pyaten.optim.Adam(params, lr=0.01),
], ids=["sgd", "adam"])
def test_optimiser_steps_match_the_cpu(make):
    (w, wd) = _pair(5, 3)
    results = []
    for p in (w, wd):
        optimizer = make([p])
        for _ in range(3):
            optimizer.zero_grad()
            (p * p).sum().backward()
            optimizer.step()
        results.append(p.detach().cpu().numpy())
    assert wd.device.type == "openreg"
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def test_linear_module_moves_to_the_device():
    pyaten.manual_seed(0)
    layer = pyaten.nn.Linear(4, 3)
    x = pyaten.randn(2, 4)
    expected = layer(x)
    layer.to("openreg")
    assert layer.weight.device.type == "openreg"
    got = layer(x.to("openreg"))
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_training_the_demo_model_gives_the_cpu_losses():
    from pyaten.commands.demo import build_model
    from pyaten.nn import functional as F

    rng = np.random.default_rng(0)
    images = rng.random((16, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 10, 16)
    losses = {}
    before = _fallbacks()
    for device in ("cpu", "openreg"):
        pyaten.manual_seed(0)
        model = build_model(pyaten.nn).to(device)
        optimizer = pyaten.optim.Adam(model.parameters(), lr=0.01)
        x = pyaten.tensor(images).to(device)
        y = pyaten.tensor(labels).to(device)
        history = []
        for _ in range(4):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            history.append(loss.detach().cpu().item())
        losses[device] = history
        assert next(model.parameters()).device.type == device
    np.testing.assert_allclose(losses["openreg"], losses["cpu"], rtol=1e-5)
    assert losses["cpu"][-1] < losses["cpu"][0]
    # Everything but the convolutions and the pooling ran on openreg's own kernels.
    fell_back = {op for op, n in _fallbacks().items() if n > before.get(op, 0)}
    assert fell_back == {
        "aten::convolution", "aten::convolution_backward", "aten::max_pool2d_with_indices.out",
        "aten::max_pool2d_with_indices_backward.grad_input",
    }


# -- fallback --------------------------------------------------------------------------------------


def test_unclaimed_operators_fall_back_and_are_counted():
    x = pyaten.tensor([[3.0, 1.0, 2.0]]).to("openreg")
    before = backends.fallback_report("openreg").calls("cumsum.out")
    result = x.cumsum(1)
    assert result.device.type == "openreg"
    assert result.cpu().tolist() == [[3.0, 4.0, 6.0]]
    assert backends.fallback_report("openreg").calls("cumsum.out") == before + 1


def test_random_factories_match_the_cpu_stream():
    pyaten.manual_seed(3)
    on_device = pyaten.randn(2, 3, device="openreg")
    pyaten.manual_seed(3)
    on_cpu = pyaten.randn(2, 3)
    assert on_device.device.type == "openreg"
    assert on_device.cpu().tolist() == on_cpu.tolist()


def test_fallback_policy_error_names_the_op():
    x = pyaten.tensor([3.0, 1.0]).to("openreg")
    backends.set_fallback("openreg", "error", op="flip")
    try:
        with pytest.raises(NotImplementedError, match="flip"):
            x.flip(0)
    finally:
        backends.set_fallback("openreg", "cpu", op="flip")
    assert x.flip(0).cpu().tolist() == [1.0, 3.0]


# -- the pytest plugin and the command line --------------------------------------------------------


def test_pytest_plugin_runs_samples_on_the_device(tmp_path):
    test_file = tmp_path / "test_device.py"
    test_file.write_text(textwrap.dedent("""
        from pyaten.testing.pytest_plugin import check_sample

        def test_sample(conformance_sample, pyaten_device):
            assert pyaten_device == "openreg"
            if conformance_sample.op in ("add.Tensor", "mm", "cumsum"):
                check_sample(conformance_sample, pyaten_device)
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(OPENREG_DIR), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "pyaten.testing.pytest_plugin", "--pyaten-device=openreg", str(test_file)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{len(SAMPLES)} passed" in run.stdout
    assert "pyaten conformance: openreg" in run.stdout
    assert "0 failing" in run.stdout


def test_conformance_command(capsys):
    from pyaten.cli import main

    status = main(["conformance", "openreg", "--ops", "add", "cumsum"])
    out = capsys.readouterr().out
    assert status == 0
    assert "add.Tensor" in out and "cumsum" in out and "fallback" in out
    assert main(["conformance", "openreg", "--ops", "nope"]) == 2
    assert "no samples for operator(s) nope" in capsys.readouterr().err
    assert main(["conformance", "nodevice"]) == 2
    assert "cannot import 'pyaten_nodevice'" in capsys.readouterr().err


def test_readme_example_runs(capsys):
    text = (OPENREG_DIR / "README.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(example, "extensions/openreg/README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("openreg:0 ")
    assert int(out[1]) > 0
    assert re.search(r"openreg +aten::randn\.generator_out +cpu", "\n".join(out[2:]))


# -- core conversions of device tensors (creation, copies, pickling, checkpoints) ---------------


def test_factories_copies_and_checkpoints_of_device_tensors():
    import copy
    import io
    import pickle

    t = pyaten.tensor([1.0, 2.0, 3.0], device="openreg")
    assert str(t.device) == "openreg:0"  # the current device, as torch.tensor(..., "cuda")
    assert t._version == 0
    assert pyaten.tensor([[1, 2]], device="openreg:1").device.index == 1
    assert pyaten.ones(2).to("openreg")._version == 0  # a fresh copy is no user write
    for back in (copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        assert back.device.type == "openreg"
        np.testing.assert_array_equal(back.cpu().numpy(), [1.0, 2.0, 3.0])
    deep = copy.deepcopy(t)
    deep.add_(1)
    np.testing.assert_array_equal(t.cpu().numpy(), [1.0, 2.0, 3.0])  # its own memory
    buffer = io.BytesIO()
    pyaten.save({"t": t, "view": t[1:]}, buffer)
    buffer.seek(0)
    loaded = pyaten.load(buffer)
    np.testing.assert_array_equal(loaded["view"].cpu().numpy(), [2.0, 3.0])
    assert loaded["t"].device.type == "openreg"
    with pytest.raises(RuntimeError, match="belongs to the device"):
        t._numpy()
