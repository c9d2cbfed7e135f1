"""Train `pyaten demo`'s model with PyTorch and print its test accuracy (needs the dev extra).

    python tools/demo_torch.py --epochs 5 --seed 0              # the same start as the demo
    python tools/demo_torch.py --epochs 5 --seed 0 --init torch  # torch's own seeded start

Data split, model, optimizer, options and defaults are `pyaten demo`'s (taken from
pyaten/commands/demo.py). pyaten's and PyTorch's generators draw different numbers from the
same seed (pyaten's generators now draw PyTorch's numbers, docs/random.md), so two starts
are offered and, from the same seed, give the same first epochs:

- `--init pyaten` (default): the demo's initial weights (`pyaten.manual_seed(SEED)`, then
  `build_model(pyaten.nn)`) are copied into the torch model, and the batches come from the
  demo's seeded `pyaten.utils.data.DataLoader`, so both libraries take the same steps and
  their accuracies can be compared one to one;
- `--init torch`: `torch.manual_seed(SEED)` seeds the weights and torch's DataLoader shuffles,
  as ordinary PyTorch code would; compare over several seeds.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

# The repository root instead of this folder: tools/coverage.py would shadow the `coverage`
# package that Numba imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import pyaten  # noqa: E402
from pyaten.commands.demo import add_arguments, build_model, limited, load_split  # noqa: E402


def accuracy(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        predicted = model(images).argmax(1)
    model.train()
    return (predicted == labels).float().mean().item()


def as_torch(batches: Iterable[tuple]) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """pyaten batches as torch tensors (same values, copied)."""
    for images, labels in batches:
        yield torch.from_numpy(images.numpy().copy()), torch.from_numpy(labels.numpy().copy())


def setup(args: argparse.Namespace, train_x, train_y) -> tuple[torch.nn.Module, Iterable]:
    """The torch model and a re-iterable source of training batches, for `args.init`."""
    if args.init == "torch":
        torch.manual_seed(args.seed)
        model = build_model(torch.nn)
        dataset = torch.utils.data.TensorDataset(
            torch.from_numpy(train_x), torch.from_numpy(train_y)
        )
        return model, torch.utils.data.DataLoader(dataset, args.batch_size, shuffle=True)
    # The demo's order of random draws: the seed, the model's weights, then the shuffles.
    pyaten.manual_seed(args.seed)
    start = build_model(pyaten.nn)
    model = build_model(torch.nn)
    model.load_state_dict(
        {name: torch.from_numpy(value.numpy().copy()) for name, value in start.state_dict().items()}
    )
    dataset = pyaten.utils.data.TensorDataset(
        pyaten.from_numpy(train_x), pyaten.from_numpy(train_y)
    )
    return model, pyaten.utils.data.DataLoader(dataset, args.batch_size, shuffle=True)


def main(argv: list[str] | None = None) -> float:
    """Train as the options say, print each epoch and the result; the final test accuracy."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_arguments(parser)
    parser.add_argument("--init", choices=("pyaten", "torch"), default="pyaten",
                        help="start from the demo's weights and batches, or torch's own")
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return train(args)
    finally:
        torch.set_num_threads(threads)


def train(args: argparse.Namespace) -> float:

    started = time.perf_counter()
    train_x, train_y, test_x, test_y = load_split(args.seed)
    model, loader = setup(args, train_x, train_y)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    test_images, test_labels = torch.from_numpy(test_x), torch.from_numpy(test_y)
    for epoch in range(1, args.epochs + 1):
        total, seen = 0.0, 0
        batches = limited(loader, args.steps)
        for images, labels in as_torch(batches) if args.init == "pyaten" else batches:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(labels)
            seen += len(labels)
        print(f"epoch {epoch}/{args.epochs}  loss {total / seen:.4f}  "
              f"test accuracy {100 * accuracy(model, test_images, test_labels):.2f}%")
    elapsed = time.perf_counter() - started
    final = accuracy(model, test_images, test_labels)
    print(f"\ntorch {torch.__version__} (--init {args.init}): trained in {elapsed:.1f} s; "
          f"final test accuracy {100 * final:.2f}%")
    return final


if __name__ == "__main__":
    main()
