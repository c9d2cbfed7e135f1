"""`pyaten demo`: train a small CNN on scikit-learn's handwritten digits, then show what ran.

The digits (1797 images of 8x8 pixels, shipped inside scikit-learn) are split into a training
and a test set; a two-convolution network learns them with Adam and cross-entropy through
`pyaten.nn`, `pyaten.optim` and `pyaten.utils.data.DataLoader`, as PyTorch code would. Each
epoch prints its mean training loss and the test accuracy (a tqdm bar runs meanwhile). The
second training step (the first also creates Adam's state) is recorded with
`pyaten.dispatch.trace()`; a table then lists, for the forward pass, the backward pass and the
optimizer step, each operator called, how often, and the dispatch keys its calls went through.
A loss/accuracy plot is saved as a PNG.

scikit-learn, tqdm and matplotlib come with the `examples` extra
(`pip install -e ".[examples]"`); they are imported only when the command runs.
`tools/demo_torch.py` trains the same model with PyTorch for comparison.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HELP = "train a small CNN on the handwritten digits and show the operators one step calls"

TEST_FRACTION = 0.2
PHASES = ("forward", "backward", "step")
_EXTRA_HINT = 'pyaten demo needs the examples extra: pip install -e ".[examples]"'


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--epochs", type=int, default=5, metavar="N",
                        help="passes over the training set (default: 5)")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N",
                        help="images per training step (default: 32)")
    parser.add_argument("--lr", type=float, default=0.01,
                        help="Adam's learning rate (default: 0.01)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds the split, the weights and the shuffling (default: 0)")
    parser.add_argument("--out", type=Path, default=Path("build/pyaten-demo"), metavar="DIR",
                        help="folder for the plot (default: build/pyaten-demo)")
    parser.add_argument("--steps", type=int, default=None, metavar="N",
                        help="stop each epoch after N steps (default: the whole training set)")


# -- data and model (also used by tools/demo_torch.py, with torch) -----------------------------


def load_split(seed: int) -> tuple[Any, Any, Any, Any]:
    """The digits as NumPy arrays: (train images, train labels, test images, test labels).

    Images are float32 of shape (N, 1, 8, 8) scaled to [0, 1]; labels are int64. The test set
    is a seeded random 20% of the images.
    """
    import numpy as np
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = round(len(labels) * TEST_FRACTION)
    test, train = order[:n_test], order[n_test:]
    return images[train], labels[train], images[test], labels[test]


def build_model(nn: Any) -> Any:
    """The demo's CNN from an `nn` namespace: `pyaten.nn`, or `torch.nn` for the comparison."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 16 x 4 x 4
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 32 x 2 x 2
        nn.Flatten(),
        nn.Linear(32 * 2 * 2, 10),
    )


# -- one step's operators ----------------------------------------------------------------------


@dataclass
class OperatorCalls:
    """How often one operator was called in a phase and the key paths its calls took."""

    calls: int = 0
    paths: dict[str, int] = field(default_factory=dict)


StepSummary = dict[str, dict[str, OperatorCalls]]  # phase -> operator -> its calls


def key_path(node: Any) -> str:
    """The keys one call went through: its chosen key, then each redispatch's, e.g.
    "AutogradCPU -> CPU"; a composite kernel (run under the Autograd key, calling other
    operators) shows as "AutogradCPU [CompositeImplicitAutograd]"."""
    keys = [node.key]
    current = node
    while True:
        redispatch = next((c for c in current.children if c.redispatch), None)
        if redispatch is None:
            break
        keys.append(redispatch.key)
        current = redispatch
    path = " -> ".join(keys)
    return f"{path} [CompositeImplicitAutograd]" if node.rule == "math kernel" else path


def count_calls(nodes: Iterable[Any], into: dict[str, OperatorCalls]) -> None:
    """Add every operator call under `nodes` (nested calls too, redispatches not) to `into`."""
    for node in nodes:
        if not node.redispatch:
            entry = into.setdefault(node.operator, OperatorCalls())
            entry.calls += 1
            path = key_path(node)
            entry.paths[path] = entry.paths.get(path, 0) + 1
        count_calls(node.children, into)


def traced_step(model: Any, optimizer: Any, images: Any, labels: Any) -> tuple[Any, StepSummary]:
    """One training step with each phase under `pyaten.dispatch.trace()`: (loss, summary)."""
    from pyaten import dispatch
    from pyaten.nn import functional as F

    summary: StepSummary = {phase: {} for phase in PHASES}
    optimizer.zero_grad()
    with dispatch.trace() as forward:
        loss = F.cross_entropy(model(images), labels)
    with dispatch.trace() as backward:
        loss.backward()
    with dispatch.trace() as step:
        optimizer.step()
    for phase, recorded in zip(PHASES, (forward, backward, step)):
        count_calls(recorded.nodes, summary[phase])
    return loss, summary


def format_summary(summary: StepSummary) -> str:
    """The table: phase, operator, calls, the key paths (with counts where they differ)."""
    header = f"{'phase':<9}{'operator':<40}{'calls':>5}  keys"
    lines = [header, "-" * len(header)]
    for phase in PHASES:
        label = phase
        for operator, entry in sorted(summary[phase].items(), key=lambda item: -item[1].calls):
            if len(entry.paths) == 1:
                keys = next(iter(entry.paths))
            else:
                keys = ", ".join(f"{path} x{n}" for path, n in entry.paths.items())
            lines.append(f"{label:<9}{operator:<40}{entry.calls:>5}  {keys}")
            label = ""
    totals = ", ".join(
        f"{sum(e.calls for e in summary[p].values())} {p}" for p in PHASES
    )
    lines.append(f"{sum(len(summary[p]) for p in PHASES)} rows; calls: {totals}")
    return "\n".join(lines)


# -- training ----------------------------------------------------------------------------------


@dataclass
class History:
    """Per-epoch figures for the printout and the plot."""

    losses: list[float] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)


def accuracy(model: Any, images: Any, labels: Any) -> float:
    """The fraction of `images` the model classifies as `labels`."""
    import pyaten

    model.eval()
    with pyaten.no_grad():
        predicted = model(images).argmax(1)
    model.train()
    return (predicted == labels).float().mean().item()


def train_epoch(
    model: Any,
    optimizer: Any,
    batches: Iterable[tuple[Any, Any]],
    on_step: Callable[[float], None],
    summary: StepSummary | None,
    traced_index: int = 0,
) -> float:
    """One pass over `batches`; the mean training loss. Step number `traced_index` (from 0)
    is traced into `summary` when one is given (an empty dict to fill)."""
    from pyaten.nn import functional as F

    total, seen = 0.0, 0
    for index, (images, labels) in enumerate(batches):
        if summary is not None and index == traced_index:
            loss, traced = traced_step(model, optimizer, images, labels)
            summary.update(traced)
        else:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        value = loss.item()
        total += value * len(labels)
        seen += len(labels)
        on_step(value)
    return total / max(seen, 1)


def steps_per_epoch(loader: Any, steps: int | None) -> int:
    """How many steps an epoch takes: the loader's batches, at most `steps`."""
    return len(loader) if steps is None else min(steps, len(loader))


def limited(batches: Iterable[Any], steps: int | None) -> Iterable[Any]:
    """The first `steps` items of `batches` (all of them for None)."""
    for index, batch in enumerate(batches):
        if steps is not None and index >= steps:
            return
        yield batch


def save_plot(history: History, path: Path) -> None:
    """Training loss and test accuracy per epoch, side by side, as a PNG (no display needed:
    a bare `Figure` renders with Agg)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    epochs = range(1, len(history.losses) + 1)
    figure = Figure(figsize=(9, 3.5), layout="constrained")
    loss_axes, accuracy_axes = figure.subplots(1, 2)
    loss_axes.plot(epochs, history.losses, marker="o")
    loss_axes.set(title="training loss", xlabel="epoch", ylabel="cross-entropy")
    accuracy_axes.plot(epochs, [100 * a for a in history.accuracies], marker="o", color="C1")
    accuracy_axes.set(title="test accuracy", xlabel="epoch", ylabel="%")
    for axes in (loss_axes, accuracy_axes):
        axes.grid(alpha=0.3)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    figure.suptitle("pyaten demo: a CNN on scikit-learn's 8x8 digits")
    figure.savefig(path, dpi=100)


def _check_arguments(args: argparse.Namespace) -> str | None:
    for name in ("epochs", "batch_size"):
        if getattr(args, name) < 1:
            return f"--{name.replace('_', '-')} must be at least 1"
    if args.steps is not None and args.steps < 1:
        return "--steps must be at least 1"
    if args.lr <= 0:
        return "--lr must be positive"
    if args.seed < 0:
        return "--seed must not be negative"
    return None


def _show_loss(bar: Any) -> Callable[[float], None]:
    """A step callback writing the step's loss beside the progress bar."""
    return lambda value: bar.set_postfix(loss=f"{value:.4f}", refresh=False)


def train(
    args: argparse.Namespace, model: Any, optimizer: Any, loader: Any, test: tuple[Any, Any]
) -> tuple[History, StepSummary, int]:
    """Train for `args.epochs`, printing each epoch's figures: (history, the traced step's
    summary, that step's index)."""
    from tqdm import tqdm

    steps = steps_per_epoch(loader, args.steps)
    # The first step also creates Adam's state; the second shows a step as every later one.
    history, summary, traced_index = History(), {}, min(1, steps - 1)
    for epoch in range(1, args.epochs + 1):
        with tqdm(limited(loader, args.steps), total=steps, desc=f"epoch {epoch}/{args.epochs}",
                  unit="step", leave=False, file=sys.stderr) as bar:
            traced = summary if epoch == 1 else None
            loss = train_epoch(model, optimizer, bar, _show_loss(bar), traced, traced_index)
        history.losses.append(loss)
        history.accuracies.append(accuracy(model, *test))
        print(f"epoch {epoch}/{args.epochs}  loss {loss:.4f}  "
              f"test accuracy {100 * history.accuracies[-1]:.2f}%", flush=True)
    return history, summary, traced_index


def run(args: argparse.Namespace) -> int:
    problem = _check_arguments(args)
    if problem is not None:
        print(f"pyaten demo: {problem}", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401
        import sklearn  # noqa: F401
        import tqdm  # noqa: F401
    except ImportError as exc:
        print(f"{_EXTRA_HINT} ({exc})", file=sys.stderr)
        return 2
    import pyaten
    from pyaten import nn, optim
    from pyaten.utils.data import DataLoader, TensorDataset

    started = time.perf_counter()
    train_x, train_y, test_x, test_y = load_split(args.seed)
    pyaten.manual_seed(args.seed)
    model = build_model(nn)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    loader = DataLoader(
        TensorDataset(pyaten.from_numpy(train_x), pyaten.from_numpy(train_y)),
        batch_size=args.batch_size,
        shuffle=True,
    )
    steps = steps_per_epoch(loader, args.steps)
    print(f"digits: {len(train_y)} training and {len(test_y)} test images of 8x8 pixels; "
          f"{steps} steps of {args.batch_size} per epoch")
    print(model)
    test = (pyaten.from_numpy(test_x), pyaten.from_numpy(test_y))
    history, summary, traced_index = train(args, model, optimizer, loader, test)
    elapsed = time.perf_counter() - started

    print(f"\ntrained in {elapsed:.1f} s; final test accuracy {100 * history.accuracies[-1]:.2f}%")
    print("\nthe operators of one training step and the dispatch keys they went through")
    print(f"(pyaten.dispatch.trace() around step {traced_index + 1}'s forward, backward and "
          "Adam step):\n")
    print(format_summary(summary))
    args.out.mkdir(parents=True, exist_ok=True)
    plot = args.out / "training.png"
    save_plot(history, plot)
    print(f"\nloss and accuracy plot: {plot}")
    return 0
