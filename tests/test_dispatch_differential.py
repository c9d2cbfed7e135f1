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
import subprocess
import sys
import textwrap

import pytest

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
