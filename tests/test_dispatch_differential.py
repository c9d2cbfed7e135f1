"""pyaten's computed dispatch tables equal PyTorch's for random registration sequences.

Each seed builds a random sequence of kernel registrations (runtime, alias and building-block
keys, fallthroughs, removals, impls before the def) and replays it through `torch.library`
(read back with `torch._C._dispatch_dump_table`) and through `pyaten.library`
(`pyaten.dispatch.dump_table`). Sequences with global fallbacks run in a subprocess, because
fallbacks are process-wide and some (AutogradPrivateUse1's) cannot be restored.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import pyaten
import pyaten.dispatch as pd

pytest.importorskip("torch")

sys.path.insert(0, os.path.dirname(__file__))
import _dispatch_sequences as sequences  # noqa: E402

OPERATOR_SEEDS = 400
FALLBACK_SEEDS = 200
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("block", range(8))
def test_operator_registrations_match_torch(block: int) -> None:
    per_block = OPERATOR_SEEDS // 8
    failures = []
    for seed in range(block * per_block, (block + 1) * per_block):
        problem = sequences.compare(seed, with_fallbacks=False)
        if problem:
            failures.append(problem)
    assert not failures, "\n".join(failures[:5])


def test_global_fallback_sequences_match_torch_in_subprocess() -> None:
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {os.path.join(ROOT, "tests")!r})
        sys.path.insert(0, {ROOT!r})
        import _dispatch_sequences as sequences
        problems = [sequences.compare(10_000 + s, with_fallbacks=True)
                    for s in range({FALLBACK_SEEDS})]
        print(json.dumps([p for p in problems if p]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-3000:]
    problems = json.loads(out.stdout.strip().splitlines()[-1])
    assert problems == [], "\n".join(problems[:5])


def test_baseline_fallbacks_match_torch() -> None:
    # An operator with no kernels shows exactly the process's global fallbacks.
    expected, actual, _ = sequences.replay([("define",)], "pyaten_diff_baseline")
    assert actual == expected


def test_generator_covers_the_interesting_cases() -> None:
    # The seeds above must exercise every kind of registration the spec distinguishes.
    import random

    kinds = set()
    for seed in range(OPERATOR_SEEDS):
        for step in sequences.random_sequence(random.Random(seed), False):
            kinds.add(step[0])
            if step[0] == "impl":
                kinds.add(("fallthrough" if step[2] else "kernel", step[1]))
    assert {"impl", "remove", "define"} <= kinds
    for key in ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "Autograd", "Dense"):
        assert ("kernel", key) in kinds
    assert any(k[0] == "fallthrough" for k in kinds if isinstance(k, tuple))


# --- the tables of our declared operators vs PyTorch's own -----------------------------------

# Deliberate differences, by key family. PyTorch registers per-operator kernels at these keys
# from layers pyaten does not generate per operator (autograd's VariableType, ADInplaceOrView,
# the tracer, functionalization, functorch batching rules, autocast policies, the
# ZeroTensor/Conjugate/Negative fallthrough lists), or for layouts pyaten does not implement
# (sparse, sparse compressed, quantized, nested, mkldnn). pyaten serves those keys with its
# global fallbacks/fallthroughs or not at all.
_NOT_COMPARED = re.compile(
    r"^(Autograd\w*|ADInplaceOrView|Tracer|Functionalize|FuncTorch\w*|Batched\w*|VmapMode"
    r"|Autocast\w*|ZeroTensor|Conjugate|Negative|Python\w*|PreDispatch"
    r"|Sparse\w*|SparseCsr\w*|Quantized\w*|NestedTensor\w*|Mkldnn\w*)$"
)


def _torch_native_table(qualname: str, keys) -> dict[str, str]:
    """PyTorch's table for one of its own operators, in dump_table's vocabulary."""
    import torch

    table = dict.fromkeys(keys, "missing")
    for line in torch._C._dispatch_dump_table(qualname).splitlines():
        if not line.strip():
            continue
        key, rest = line.split(": ", 1)
        if _NOT_COMPARED.match(key):
            continue
        if rest.startswith("fallthrough"):
            table[key] = "fallthrough"
        elif rest.endswith("[backend fallback]"):
            table[key] = "fallback"
        elif "site-packages/torch/" in rest:
            table[key] = "python"  # a kernel torch registers from Python (meta functions)
        elif rest.endswith("[kernel]"):
            table[key] = key  # a kernel registered directly at this key
        else:  # an alias-key kernel: its generated file names the alias
            match = re.search(r"Register(\w+?)(?:_\d+)?\.cpp", rest)
            assert match is not None, line
            table[key] = match.group(1)
    return table


def test_declared_operator_tables_match_torch():
    from pyaten.declarations import load_native_functions
    from pyaten.native.loader import NATIVE_YAML

    problems = []
    for record in load_native_functions(str(NATIVE_YAML)):
        name = record.func.name
        qualname = f"aten::{name.name}" + (f".{name.overload}" if name.overload else "")
        ours = pd.dump_table(qualname)
        theirs = _torch_native_table(qualname, ours)
        for key, value in ours.items():
            expected = theirs[key]
            if value == expected or _NOT_COMPARED.match(key):
                continue
            if expected == "python" and key == "Meta" and value != "missing":
                continue  # torch's Python meta function; ours is the generated/declared one
            if expected == "python" and key == "MPS":
                continue  # a Python MPS kernel of torch's (linalg_lu_solve.out): no MPS here
            problems.append(f"{qualname} {key}: ours {value}, torch {expected}")
    assert not problems, "\n".join(problems[:20])


def test_factory_goes_through_backend_select_to_meta():
    a = pd.dump_table("aten::empty.memory_format")
    assert a["BackendSelect"] == "BackendSelect" and a["Meta"] == "Meta"
    assert a["Undefined"] == "missing"
    with pd.trace() as t:
        x = pyaten.empty(2, device="meta")
    assert x.device.type == "meta" and tuple(x.shape) == (2,)
    node = t.as_dicts()[0]
    assert node["key"] == "BackendSelect"
    assert node["children"][0]["key"] == "Meta" and node["children"][0]["redispatch"]
