"""`pyaten demo`: it runs (a few steps), prints what it promises, writes its plot, needs no
torch; its model is torch's model, and its training steps are torch's steps.

The differential tests build the demo's network with `build_model(pyaten.nn)` and with
`build_model(torch.nn)`, copy the weights across, train both on the same batches, and compare
losses and weights; tools/demo_torch.py does the same over whole runs.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from _helpers import assert_same, from_torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.cli import main

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")

from pyaten.commands import demo  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EPOCH_LINE = re.compile(r"^epoch 1/1  loss \d+\.\d{4}  test accuracy \d+\.\d\d%$", re.M)
# The CLI in a process where importing torch fails (as after the README's first command);
# `sys.modules['torch'] = None` would not do: SciPy probes sys.modules for torch arrays.
NO_TORCH = """
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, NoTorch())
from pyaten.cli import main
status = main(sys.argv[1:])
print("imported torch:", "torch" in sys.modules, file=sys.stderr)
sys.exit(status)
"""
# A row of the summary: phase (or blank), operator, calls, keys.
ROW = re.compile(r"^(forward|backward|step|)\s+(aten::\S+)\s+(\d+)  (.+)$")


def summary_rows(printed: str) -> dict[str, dict[str, tuple[int, str]]]:
    """The summary table as phase -> operator -> (calls, keys)."""
    rows: dict[str, dict[str, tuple[int, str]]] = {}
    phase = ""
    for line in printed.splitlines():
        match = ROW.match(line)
        if match:
            phase = match[1] or phase
            rows.setdefault(phase, {})[match[2]] = (int(match[3]), match[4])
    return rows


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> tuple[int, str, str, Path]:
    """`pyaten demo --epochs 1 --steps 5` run once where torch cannot be imported:
    (status, stdout, stderr, out folder)."""
    out = tmp_path_factory.mktemp("demo")
    result = subprocess.run(
        [sys.executable, "-c", NO_TORCH, "demo", "--epochs", "1", "--steps", "5", "--out",
         str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    return result.returncode, result.stdout, result.stderr, out


# -- the command as a user runs it ---------------------------------------------------------------


def test_demo_prints_the_epoch_and_the_final_accuracy(demo_run) -> None:
    status, printed, errors, _ = demo_run
    assert status == 0, errors
    assert "1438 training and 359 test images" in printed
    assert "5 steps of 32 per epoch" in printed
    assert EPOCH_LINE.search(printed), printed
    assert re.search(r"final test accuracy \d+\.\d\d%", printed)
    assert "epoch 1/1" in errors  # tqdm's bar goes to stderr


def test_demo_prints_the_model_as_torch_prints_it(demo_run) -> None:
    printed = demo_run[1]
    assert repr(demo.build_model(torch.nn)) in printed


def test_demo_summary_lists_each_phase_with_its_dispatch_keys(demo_run) -> None:
    rows = summary_rows(demo_run[1])
    assert set(rows) == {"forward", "backward", "step"}
    parameters = len(list(demo.build_model(torch.nn).parameters()))
    assert rows["forward"]["aten::convolution"] == (2, "AutogradCPU -> CPU")
    assert rows["forward"]["aten::conv2d"] == (2, "AutogradCPU [CompositeImplicitAutograd]")
    assert rows["forward"]["aten::relu"][0] == 2
    assert rows["backward"]["aten::convolution_backward"] == (2, "AutogradCPU -> CPU")
    assert rows["backward"]["aten::threshold_backward"][0] == 2
    # Adam's single-tensor update: one addcdiv_ per parameter; no state created on step 2.
    assert rows["step"]["aten::addcdiv_"] == (parameters, "AutogradCPU -> CPU")
    assert "aten::zeros_like" not in rows["step"]
    assert "around step 2's forward, backward and Adam step" in demo_run[1]


def test_demo_writes_the_plot(demo_run) -> None:
    image = pytest.importorskip("matplotlib.image")
    plot = demo_run[3] / "training.png"
    assert plot.read_bytes().startswith(PNG_SIGNATURE)
    assert image.imread(plot).shape == (350, 900, 4)  # figsize (9, 3.5) at 100 dpi
    assert f"loss and accuracy plot: {plot}" in demo_run[1]


def test_demo_runs_without_torch(demo_run) -> None:
    """The README's first command installs no torch: the demo must not import it."""
    assert demo_run[0] == 0, demo_run[2]
    assert "imported torch: False" in demo_run[2]


@pytest.mark.parametrize(
    "option,value,message",
    [
        ("--epochs", "0", "--epochs must be at least 1"),
        ("--batch-size", "0", "--batch-size must be at least 1"),
        ("--steps", "-1", "--steps must be at least 1"),
        ("--lr", "0", "--lr must be positive"),
        ("--seed", "-1", "--seed must not be negative"),
    ],
)
def test_demo_rejects_bad_options(option, value, message, capsys, tmp_path) -> None:
    assert main(["demo", option, value, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"pyaten demo: {message}\n"
    assert not (tmp_path / "training.png").exists()


def test_demo_without_the_examples_extra_says_how_to_install_it(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)
    assert main(["demo", "--steps", "1"]) == 2
    assert 'pip install -e ".[examples]"' in capsys.readouterr().err


def test_demo_is_listed_in_the_help(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert re.search(r"^\s+demo\s+train a small CNN", capsys.readouterr().out, re.M)


# -- the data split -----------------------------------------------------------------------------


def _sorted_rows(images: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(image pixels, label) rows in lexicographic order: a multiset of the examples."""
    rows = np.concatenate([images.reshape(len(labels), -1), labels[:, None]], axis=1)
    return rows[np.lexsort(rows.T[::-1])]


@settings(max_examples=10)
@given(st.integers(0, 2**32 - 1))
def test_split_is_a_seeded_partition_of_the_digits(seed: int) -> None:
    from sklearn.datasets import load_digits

    train_x, train_y, test_x, test_y = demo.load_split(seed)
    assert (train_x.shape, test_x.shape) == ((1438, 1, 8, 8), (359, 1, 8, 8))
    assert (train_x.dtype, train_y.dtype) == (np.float32, np.int64)
    digits = load_digits()
    everything = _sorted_rows(np.concatenate([train_x, test_x]), np.concatenate([train_y, test_y]))
    expected = _sorted_rows((digits.images / 16.0).astype(np.float32), digits.target)
    np.testing.assert_array_equal(everything, expected)
    for first, again in zip((train_x, train_y, test_x, test_y), demo.load_split(seed)):
        np.testing.assert_array_equal(first, again)
    assert not np.array_equal(test_y, demo.load_split(seed + 1)[3])


@given(st.integers(0, 30), st.one_of(st.none(), st.integers(1, 40)))
def test_limited_takes_the_first_steps(length: int, steps: int | None) -> None:
    items = list(range(length))
    expected = items if steps is None else items[:steps]
    assert list(demo.limited(iter(items), steps)) == expected


# -- the same model and the same steps as torch -------------------------------------------------


def copied_model(seed: int) -> tuple[object, torch.nn.Module]:
    """The demo's model in both libraries, pyaten's weights copied from torch's."""
    torch.manual_seed(seed)
    theirs = demo.build_model(torch.nn)
    ours = demo.build_model(pyaten.nn)
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


def test_model_has_torchs_structure_and_default_initialisation() -> None:
    pyaten.manual_seed(0)
    ours = demo.build_model(pyaten.nn)
    theirs = demo.build_model(torch.nn)
    assert repr(ours) == repr(theirs)
    ours_state, their_state = ours.state_dict(), theirs.state_dict()
    assert list(ours_state) == list(their_state)
    for name, value in their_state.items():
        assert tuple(ours_state[name].shape) == tuple(value.shape), name
        # PyTorch's kaiming-uniform default: weights and biases within 1/sqrt(fan_in)
        fan_in = value.numel() // value.shape[0] if value.dim() > 1 else None
        if fan_in is not None:
            bound = 1 / np.sqrt(fan_in)
            assert float(ours_state[name].abs().max()) <= bound + 1e-6, name


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 1000), st.sampled_from([8, 32, 64]))
def test_training_steps_match_torch(seed: int, batch_size: int) -> None:
    """Five Adam steps from the same weights on the same batches: same losses, same weights;
    the traced second step (the demo's summary) changes nothing."""
    train_x, train_y, _, _ = demo.load_split(seed)
    ours, theirs = copied_model(seed)
    our_optimizer = pyaten.optim.Adam(ours.parameters(), lr=0.01)
    their_optimizer = torch.optim.Adam(theirs.parameters(), lr=0.01)
    starts = range(0, 5 * batch_size, batch_size)
    batches = [(train_x[i:i + batch_size], train_y[i:i + batch_size]) for i in starts]

    our_losses: list[float] = []
    pyaten_batches = [(pyaten.from_numpy(x), pyaten.from_numpy(y)) for x, y in batches]
    summary: demo.StepSummary = {}
    demo.train_epoch(ours, our_optimizer, pyaten_batches, our_losses.append, summary, 1)
    assert summary["step"]["aten::addcdiv_"].calls == 6

    their_losses = []
    for x, y in batches:
        their_optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        their_optimizer.step()
        their_losses.append(loss.item())

    assert_same(our_losses, their_losses, rtol=1e-4, atol=1e-5)
    for name, value in theirs.state_dict().items():
        assert_same(ours.state_dict()[name], value, rtol=1e-4, atol=1e-5)


def test_accuracy_matches_torch() -> None:
    _, _, test_x, test_y = demo.load_split(3)
    ours, theirs = copied_model(3)
    with torch.no_grad():
        expected = (theirs(torch.from_numpy(test_x)).argmax(1) == torch.from_numpy(test_y))
    got = demo.accuracy(ours, pyaten.from_numpy(test_x), pyaten.from_numpy(test_y))
    assert got == pytest.approx(expected.float().mean().item())
    assert ours.training  # accuracy() switches to eval mode and back


# -- the summary table ---------------------------------------------------------------------------


def test_summary_counts_nested_calls_and_key_paths() -> None:
    x = pyaten.ones(2, 3, requires_grad=True)
    with pyaten.dispatch.trace() as recorded:
        pyaten.nn.functional.linear(x, pyaten.ones(4, 3), pyaten.ones(4))
    counted: dict[str, demo.OperatorCalls] = {}
    demo.count_calls(recorded.nodes, counted)
    assert counted["aten::linear"].paths == {"AutogradCPU [CompositeImplicitAutograd]": 1}
    assert counted["aten::addmm"].paths == {"AutogradCPU -> CPU": 1}
    assert "aten::t" in counted  # called by linear's composite kernel


def test_summary_table_shows_mixed_key_paths_with_counts() -> None:
    summary = {
        "forward": {"aten::add.Tensor": demo.OperatorCalls(3, {"AutogradCPU -> CPU": 2,
                                                                "CPU": 1})},
        "backward": {},
        "step": {"aten::mul_.Tensor": demo.OperatorCalls(1, {"AutogradCPU -> CPU": 1})},
    }
    lines = demo.format_summary(summary).splitlines()
    assert lines[2].split() == ["forward", "aten::add.Tensor", "3", "AutogradCPU", "->", "CPU",
                                "x2,", "CPU", "x1"]
    assert lines[3].split() == ["step", "aten::mul_.Tensor", "1", "AutogradCPU", "->", "CPU"]
    assert lines[-1] == "2 rows; calls: 3 forward, 0 backward, 1 step"


# -- the accuracy the README states ---------------------------------------------------------------


def test_demo_reaches_the_accuracy_torch_reaches_with_the_same_seed(capsys, tmp_path) -> None:
    """The README's run (default options, seed 0) against tools/demo_torch.py: from the same
    start the same accuracy, up to one test image (225 steps of float32 sums round apart); and
    torch's own seeded start IS the same start, since pyaten draws PyTorch's random numbers."""
    spec = importlib.util.spec_from_file_location("demo_torch", ROOT / "tools" / "demo_torch.py")
    demo_torch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo_torch)
    assert main(["demo", "--out", str(tmp_path)]) == 0
    ours = float(re.findall(r"final test accuracy (\d+\.\d\d)%", capsys.readouterr().out)[-1])
    theirs = 100 * demo_torch.main([])
    assert abs(theirs - ours) <= 100 / 359 + 0.005  # 359 test images; ours printed to 0.01
    assert 100 * demo_torch.main(["--init", "torch"]) == theirs
