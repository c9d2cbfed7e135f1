"""pyaten.compile beside pyaten eager, PyTorch eager and torch.compile (one thread).

Run: .venv/bin/python benchmarks/bench_compile.py [--quick]

Cases (best CPU time of this process over interleaved repeats, in ms; the machine is shared):
- a chain of 10 pointwise operators on 1M float32 values (mul, add, relu, mul, sub, mul,
  neg, div, maximum, add), the same kind of chain with a sigmoid (one exp per element),
  and a chain of transcendental functions (sin, exp, tanh, cos, sqrt);
- a training step (forward, cross-entropy, backward, SGD) of the MLP 784-256-10, batch 64,
  and of the demo CNN (pyaten/commands/demo.py), batch 64: the loss function (model and
  cross-entropy) compiled, backward through its compiled backward graph, the optimizer
  step eager (both libraries);
- a small GPT block (dim 64, 4 heads, 32 tokens, batch 4) forward + backward;
- the MLP step cut into phases (zero_grad, forward call, backward, optimizer step) for
  pyaten compiled and torch eager, and pyaten's compiled graphs timed alone;
- compile times: the first two calls in a fresh process, eager (pyaten's own first-call
  costs), compiled with empty caches (capture, then the C compiler or Numba building the
  loops), compiled with the loops on disk but the graph cache off (capture again), and
  compiled with the graphs and loops on disk (no capture), with the loops built by the C
  compiler (the default where one is found) and by Numba (PYATEN_NO_CC=1).

torch.compile's default backend (inductor) needs a C++ toolchain; where it fails the table
says so and shows torch.compile(backend="aot_eager") instead.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _best_ms(fns: list, repeat: int) -> list[float]:
    """Best CPU milliseconds of each function, timed interleaved after a warm-up."""
    for fn in fns:
        if fn is not None:
            fn()
            fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            if fn is None:
                continue
            start = time.process_time()
            fn()
            best[i] = min(best[i], time.process_time() - start)
    return [b * 1e3 for b in best]


# -- programs, written once for both libraries ------------------------------------------------

def arith_chain(x):
    y = (x * 2.0 + 1.0).relu() * x - 0.5
    return (-(y * 3.0) / 1.5).maximum(x) + x


def sigmoid_chain(x):
    y = (x * 2.0 + 1.0).relu() * x - 0.5
    return (y.sigmoid() * 3.0).clamp(max=2.0) / 1.5 + x


def transcendental_chain(x):
    y = (x * 0.5).sin().exp() - 1.0
    return y.tanh() + (x.cos().abs() + 1.0).sqrt() * 2.0


def mlp(nn):
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def gpt_block(nn, F, dim=64, heads=4, length=32):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (c // heads) ** 0.5)
            att = att.softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    return Block()


def _copy_weights(src, dst, torch):
    with torch.no_grad():
        for p, q in zip(dst.parameters(), src.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy().copy()))


def _check_torch_compile(torch, compiled, args):
    try:
        compiled(*args)
        return True
    except Exception:  # noqa: BLE001 - inductor without a toolchain
        return False


def _row(name, times, note=""):
    pe, pc, te, tc = times
    speed_eager = pe / pc
    vs_torch = pc / te
    print(f"| {name} | {pe:.2f} | {pc:.2f} | {te:.2f} | "
          f"{'-' if tc == float('inf') else f'{tc:.2f}'} | {speed_eager:.1f}x | "
          f"{vs_torch:.2f}x | {note} |")


def pointwise(repeat, torch, pyaten, tcomp_kind):
    data = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
    x, xt = pyaten.tensor(data), torch.tensor(data)
    for name, fn in (("10 pointwise ops, 1M float32", arith_chain),
                     ("10 pointwise ops with sigmoid, 1M float32", sigmoid_chain),
                     ("transcendental chain, 1M float32", transcendental_chain)):
        compiled = pyaten.compile(fn)
        tcompiled = torch.compile(fn, backend=tcomp_kind)
        times = _best_ms([lambda f=fn: f(x), lambda f=compiled: f(x), lambda f=fn: f(xt),
                          lambda f=tcompiled: f(xt)], repeat)
        np.testing.assert_allclose(compiled(x).numpy(), fn(xt).numpy(), rtol=1e-4, atol=1e-5)
        _row(name, times)


def training(repeat, torch, pyaten, tcomp_kind):
    from pyaten.commands.demo import build_model

    rng = np.random.default_rng(0)
    cases = (
        ("MLP 784-256-10 step, batch 64", lambda nn: mlp(nn), (64, 784)),
        ("demo CNN step, batch 64", lambda nn: build_model(nn), (64, 1, 8, 8)),
    )
    for name, make, shape in cases:
        data = rng.standard_normal(shape).astype(np.float32)
        labels = rng.integers(0, 10, shape[0])
        pyaten.manual_seed(0)
        model = make(pyaten.nn)
        twin = make(torch.nn)
        _copy_weights(model, twin, torch)
        x, y = pyaten.tensor(data), pyaten.tensor(labels)
        xt, yt = torch.tensor(data), torch.tensor(labels)
        opt = pyaten.optim.SGD(model.parameters(), lr=0.01)
        topt = torch.optim.SGD(twin.parameters(), lr=0.01)

        def loss_of(net, F):
            return lambda a, b: F.cross_entropy(net(a), b)

        def step(loss_fn, optimizer, a, b):
            def run():
                optimizer.zero_grad()
                loss = loss_fn(a, b)
                loss.backward()
                optimizer.step()
                return loss
            return run

        eager = loss_of(model, pyaten.nn.functional)
        teager = loss_of(twin, torch.nn.functional)
        times = _best_ms([step(eager, opt, x, y), step(pyaten.compile(eager), opt, x, y),
                          step(teager, topt, xt, yt),
                          step(torch.compile(teager, backend=tcomp_kind), topt, xt, yt)],
                         repeat)
        _row(name, times)


def phases(repeat, torch, pyaten):
    """The MLP step cut into phases (best of `repeat` x 30 steps, microseconds): zero_grad,
    the forward call, backward, the optimizer step, for pyaten compiled and torch eager;
    and, for pyaten, the compiled forward and backward graphs alone (what the call and
    backward add beside them is the guard check, the autograd node and the engine)."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((64, 784)).astype(np.float32)
    labels = rng.integers(0, 10, 64)
    pyaten.manual_seed(0)
    model, twin = mlp(pyaten.nn), mlp(torch.nn)
    _copy_weights(model, twin, torch)
    x, y = pyaten.tensor(data), pyaten.tensor(labels)
    xt, yt = torch.tensor(data), torch.tensor(labels)
    opt = pyaten.optim.SGD(model.parameters(), lr=0.01)
    topt = torch.optim.SGD(twin.parameters(), lr=0.01)
    F, TF = pyaten.nn.functional, torch.nn.functional
    step = pyaten.compile(lambda a, b: F.cross_entropy(model(a), b))
    sides = [(opt.zero_grad, lambda: step(x, y), opt.step),
             (topt.zero_grad, lambda: TF.cross_entropy(twin(xt), yt), topt.step)]
    best = [[float("inf")] * 4 for _ in sides]
    for _ in range(repeat * 30):
        for side, (zero, forward, update) in enumerate(sides):
            marks = [time.perf_counter()]
            zero()
            marks.append(time.perf_counter())
            loss = forward()
            marks.append(time.perf_counter())
            loss.backward()
            marks.append(time.perf_counter())
            update()
            marks.append(time.perf_counter())
            for i in range(4):
                best[side][i] = min(best[side][i], marks[i + 1] - marks[i])
    run = step.last_entry.run
    inputs = [x, y, *step.last_entry.constants]
    saved = run.forward_fn(*inputs)[1:]
    seed = pyaten.ones(())
    graphs = _best_ms([lambda: run.forward_fn(*inputs), lambda: run.backward_fn(*saved, seed)],
                      repeat * 30)
    print("\n| MLP step phase (us, best) | zero_grad | forward call | backward | optimizer "
          "step | total |")
    print("|---|---|---|---|---|---|")
    for name, row in zip(("pyaten compiled", "torch eager"), best):
        cells = " | ".join(f"{v * 1e6:.0f}" for v in row)
        print(f"| {name} | {cells} | {sum(row) * 1e6:.0f} |")
    print(f"| pyaten graphs alone | | {graphs[0] * 1e3:.0f} | {graphs[1] * 1e3:.0f} | | |")


def gpt(repeat, torch, pyaten, tcomp_kind):
    data = np.random.default_rng(1).standard_normal((4, 32, 64)).astype(np.float32)
    pyaten.manual_seed(0)
    block = gpt_block(pyaten.nn, pyaten.nn.functional)
    twin = gpt_block(torch.nn, torch.nn.functional)
    _copy_weights(block, twin, torch)
    compiled = pyaten.compile(block)
    tcompiled = torch.compile(twin, backend=tcomp_kind)

    def fwd_bwd(net, lib):
        x = lib.tensor(data, requires_grad=True)

        def run():
            out = net(x)
            out.sum().backward()
            return out
        return run

    times = _best_ms([fwd_bwd(block, pyaten), fwd_bwd(compiled, pyaten), fwd_bwd(twin, torch),
                      fwd_bwd(tcompiled, torch)], repeat)
    _row("GPT block fwd+bwd (4x32x64)", times)


_FIRST_CALL = """
import os, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import pyaten
sys.path.insert(0, {bench!r})
from bench_compile import arith_chain, mlp
case, eager = {case!r}, {eager!r}
wrap = (lambda f: f) if eager else pyaten.compile
if case == "pointwise":
    x = pyaten.tensor(np.ones(1_000_000, np.float32))
    fn = wrap(arith_chain)
    start = time.perf_counter(); fn(x); fn(x)
else:
    if case == "mlp":
        model, shape = mlp(pyaten.nn), (64, 784)
    else:
        from pyaten.commands.demo import build_model
        model, shape = build_model(pyaten.nn), (64, 1, 8, 8)
    fn = wrap(model)
    x = pyaten.tensor(np.ones(shape, np.float32))
    start = time.perf_counter()
    for _ in range(2):
        pyaten.nn.functional.cross_entropy(fn(x), pyaten.zeros(64, dtype=pyaten.int64)).backward()
print(time.perf_counter() - start)
"""


def compile_times() -> None:
    print("\n| first two calls in a fresh process (s) | loops by | eager | "
          "compiled, empty caches | compiled, loops on disk, graph cache off | "
          "compiled, graphs and loops on disk |")
    print("|---|---|---|---|---|---|")
    for loops in ("C compiler", "Numba"):
        with tempfile.TemporaryDirectory() as cache:
            # the graph cache's stamp pinned: the tree may be edited while this runs
            env = dict(os.environ, PYATEN_CACHE_DIR=cache, PYATEN_FX_GRAPH_CACHE_STAMP=cache)
            if loops == "Numba":
                env["PYATEN_NO_CC"] = "1"
            for case in ("pointwise", "mlp forward+backward", "cnn forward+backward"):
                seconds = []
                for eager, graphs in ((True, "1"), (False, "1"), (False, "0"), (False, "1")):
                    code = _FIRST_CALL.format(root=ROOT, bench=os.path.dirname(__file__),
                                              case=case.split()[0], eager=eager)
                    out = subprocess.run([sys.executable, "-c", code],
                                         env=dict(env, PYATEN_FX_GRAPH_CACHE=graphs),
                                         capture_output=True, text=True, timeout=300,
                                         check=True)
                    seconds.append(float(out.stdout.strip().splitlines()[-1]))
                print(f"| {case} | {loops} | " + " | ".join(f"{s:.3f}" for s in seconds) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-compile-times", action="store_true",
                        help="skip the fresh-process compile times")
    args = parser.parse_args()
    repeat = 3 if args.quick else 10
    import torch

    import pyaten

    torch.set_num_threads(1)
    probe = torch.compile(lambda t: t * 2 + 1)
    tcomp_kind = "inductor" if _check_torch_compile(torch, probe, (torch.ones(4),)) else \
        "aot_eager"
    print(f"torch {torch.__version__}; torch.compile backend used: {tcomp_kind}; one thread; "
          "ms, best CPU time")
    print("\n| case | pyaten eager | pyaten.compile | torch eager | torch.compile | "
          "compiled vs pyaten eager | compiled / torch eager | |")
    print("|---|---|---|---|---|---|---|---|")
    pointwise(repeat, torch, pyaten, tcomp_kind)
    training(repeat, torch, pyaten, tcomp_kind)
    gpt(repeat, torch, pyaten, tcomp_kind)
    phases(repeat, torch, pyaten)
    if not args.no_compile_times:
        compile_times()


if __name__ == "__main__":
    main()
