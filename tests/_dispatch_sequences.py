"""Random registration sequences replayed through torch.library and pyaten.library.

Shared by tests/test_dispatch_differential.py and its subprocess (global fallbacks). Each
torch Library is created by code compiled under a file name that records the registration key,
so the debug text in `torch._C._dispatch_dump_table` says which registration won a slot.
"""

from __future__ import annotations

import random
import re
import warnings

import torch
import torch.library as tl
from _helpers import noop_kernel

import pyaten.dispatch as pd
import pyaten.library as pl
from pyaten.dispatch.keys import ALIAS_KEYS, PARSEABLE_KEYS, PER_BACKEND

RUNTIME_POOL = [k for k in PARSEABLE_KEYS if k not in ALIAS_KEYS and k not in PER_BACKEND]
INTERESTING = [
    "CPU", "CUDA", "Meta", "PrivateUse1", "XLA", "HIP", "MTIA", "IPU", "Lazy", "FPGA",
    "MkldnnCPU", "SparseCPU", "SparseCsrCUDA", "QuantizedCPU", "NestedTensorCPU",
    "AutogradCPU", "AutogradCUDA", "AutogradOther", "AutogradNestedTensor", "AutogradXLA",
    "AutogradPrivateUse1", "AutogradMeta", "Functionalize", "FuncTorchBatched", "Python",
    "ADInplaceOrView", "BackendSelect", "", "Undefined",
    *ALIAS_KEYS, *PER_BACKEND,
]  # fmt: skip
FALLBACK_POOL = [
    "PrivateUse1", "XLA", "CPU", "CUDA", "Meta", "Python", "AutogradPrivateUse1", "AutogradIPU",
    "AutogradNestedTensor", "SparseCPU", "NestedTensorCPU", "Fake", "AutocastXLA",
    "AutocastPrivateUse1", "DeferredInit", "FPGA", "QuantizedCPU", "Dense", "Autograd",
    "CompositeExplicitAutograd", "FuncTorchBatchedDecomposition",
]  # fmt: skip

_DEBUG = re.compile(r"registered at <r\d+\|(\w*)>:1")


def _make_torch_lib(ns: str, tag: str):
    code = compile("Library(ns, 'IMPL')", f"<{tag}>", "eval")
    return eval(code, {"Library": tl.Library, "ns": ns})


def torch_table(qualname: str) -> dict[str, str]:
    """torch's computed table in pyaten.dispatch.dump_table's vocabulary."""
    table = {name: "missing" for name in pd.runtime_keys()}
    for line in torch._C._dispatch_dump_table(qualname).splitlines():
        if not line.strip():
            continue
        key, rest = line.split(": ", 1)
        if rest.startswith("fallthrough"):
            value = "fallthrough"
        elif rest.endswith("[backend fallback]"):
            value = "fallback"
        elif rest.startswith("ambiguous_autogradother"):
            value = "ambiguous_autogradother"
        else:
            m = _DEBUG.match(rest)
            assert m is not None, line
            value = m.group(1)
        table[key] = value
    return table


def _resolved(key: str) -> str:
    return "CompositeImplicitAutograd" if key in ("", "Undefined") else key


def random_sequence(rng: random.Random, with_fallbacks: bool) -> list[tuple]:
    """Steps: ("impl", key, fallthrough) / ("fallback", key, fallthrough) / ("remove", i) /
    ("define",). The operator is defined first unless a "define" step appears."""
    steps: list[tuple] = []
    late_define = rng.random() < 0.1
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if with_fallbacks and r < 0.3:
            steps.append(("fallback", rng.choice(FALLBACK_POOL), rng.random() < 0.3))
        elif r < 0.85 or not steps:
            pool = INTERESTING if rng.random() < 0.6 else RUNTIME_POOL
            steps.append(("impl", rng.choice(pool), rng.random() < 0.15))
        else:
            steps.append(("remove", rng.randrange(len(steps))))
    if late_define:
        steps.insert(rng.randint(1, len(steps)), ("define",))
    return steps


def replay(steps: list[tuple], ns: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Run `steps` through both libraries; returns (torch table, pyaten table, outcome notes).

    The notes record which steps raised on each side (they must agree).
    """
    qualname = f"{ns}::f"
    torch_libs: list = []
    our_libs: list = []
    notes: list[str] = []
    torch_def = our_def = None

    def define() -> None:
        nonlocal torch_def, our_def
        torch_def = tl.Library(ns, "DEF")
        torch_def.define("f(Tensor x) -> Tensor")
        our_def = pl.Library(ns, "DEF")
        our_def.define("f(Tensor x) -> Tensor")

    if ("define",) not in steps:
        define()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, step in enumerate(steps):
            if step[0] == "define":
                define()
                torch_libs.append(None)
                our_libs.append(None)
                continue
            if step[0] == "remove":
                for libs in (torch_libs, our_libs):
                    if step[1] < len(libs) and libs[step[1]] is not None:
                        libs[step[1]]._destroy()
                torch_libs.append(None)
                our_libs.append(None)
                continue
            kind, key, fallthrough = step
            tag = f"r{i}|{_resolved(key)}"
            if kind == "impl":
                t_lib = _make_torch_lib(ns, tag)
                o_lib = pl.Library(ns, "IMPL")
                t_fn = tl.fallthrough_kernel if fallthrough else noop_kernel
                o_fn = pl.fallthrough_kernel if fallthrough else noop_kernel
                t_call = lambda t_lib=t_lib, t_fn=t_fn, key=key: t_lib.impl("f", t_fn, key)
                o_call = lambda o_lib=o_lib, o_fn=o_fn, key=key: o_lib.impl("f", o_fn, key)
            else:
                t_lib = _make_torch_lib("_", tag)
                o_lib = pl.Library("_", "IMPL")
                t_fn = tl.fallthrough_kernel if fallthrough else noop_kernel
                o_fn = pl.fallthrough_kernel if fallthrough else noop_kernel
                t_call = lambda t_lib=t_lib, t_fn=t_fn, key=key: t_lib.fallback(t_fn, key)
                o_call = lambda o_lib=o_lib, o_fn=o_fn, key=key: o_lib.fallback(o_fn, key)
            outcome = []
            for call in (t_call, o_call):
                try:
                    call()
                    outcome.append("ok")
                except Exception as exc:  # the two sides must fail alike
                    outcome.append(type(exc).__name__)
            notes.append(f"step {i} {step}: torch {outcome[0]}, pyaten {outcome[1]}")
            torch_libs.append(t_lib)
            our_libs.append(o_lib)
        expected = torch_table(qualname)
        actual = pd.dump_table(qualname)
        # Tear down: fallbacks must not leak into the next sequence.
        for libs in (torch_libs, our_libs):
            for lib in libs:
                if lib is not None:
                    lib._destroy()
        for lib in (torch_def, our_def):
            if lib is not None:
                lib._destroy()
    return expected, actual, notes


def compare(seed: int, with_fallbacks: bool) -> str | None:
    """None when torch and pyaten agree on sequence `seed`, else a description."""
    rng = random.Random(seed)
    steps = random_sequence(rng, with_fallbacks)
    ns = f"pyaten_diff_{'fb' if with_fallbacks else 'op'}_{seed}"
    expected, actual, notes = replay(steps, ns)
    diffs = [f"{k}: torch {expected[k]} != pyaten {actual.get(k)}"
             for k in expected if expected[k] != actual.get(k)]  # fmt: skip
    mismatched = [n for n in notes if n.split(": torch ")[1].split(", pyaten ") != [
        n.split(": torch ")[1].split(", pyaten ")[0]] * 2]  # fmt: skip
    if diffs or mismatched:
        return f"seed {seed} steps {steps}\n  " + "\n  ".join(mismatched + diffs[:12])
    return None
