"""The README's commands stay true: the demo and the explained expression run without torch and
print what the README shows; `.ci/run` runs each command exactly as written; the main job
installs no torch."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
CI = (ROOT / ".ci" / "run").read_text()

COMMANDS = [
    line
    for block in re.findall(r"```bash\n(.*?)```", README, re.S)
    for line in block.splitlines()
    if line.strip()
]
# Each `pyaten explain "EXPR"` of a command, with the ```text block the README shows after it.
EXPLAINED = [
    (shlex.split(command)[-1], shown)
    for command, shown in re.findall(
        r"```bash\n([^`]*?pyaten explain \"[^\"]*\")\n```.*?```text\n(.*?)```", README, re.S
    )
]
# What the README shows the first command's `pyaten demo` print.
DEMO_SHOWN = re.findall(r"```bash\n[^`]*?pyaten demo\n```.*?```text\n(.*?)```", README, re.S)

# Runs the CLI in a process where `import torch` fails, as after the README's first command.
# (`sys.modules['torch'] = None` would not do: SciPy probes sys.modules for torch arrays.)
_NO_TORCH = """
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, NoTorch())
from pyaten.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_readme_has_the_three_commands() -> None:
    assert len(COMMANDS) == 3, COMMANDS
    main_job, tests, explain = COMMANDS
    # From nothing: a virtual environment, the project with its examples extra (not the dev
    # extra, not torch), then the demo.
    assert main_job.startswith("python3 -m venv .venv && ")
    assert '.venv/bin/pip install -e ".[examples]" && ' in main_job
    assert main_job.endswith(".venv/bin/pyaten demo")
    assert "[dev]" not in main_job
    assert '.venv/bin/pip install -e ".[dev]"' in tests and "pytest" in tests
    assert explain.startswith(".venv/bin/pyaten explain ")
    assert len(EXPLAINED) == 1
    assert len(DEMO_SHOWN) == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_ci_runs_the_readme_command_as_written(command: str) -> None:
    assert command in CI.splitlines(), f".ci/run must run the README's command: {command}"


def test_main_install_needs_no_torch() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for deps in (project["dependencies"], extras["examples"]):
        needed = [re.split(r"[<>=!~ \[;]", dep)[0].lower() for dep in deps]
        assert "torch" not in needed
    assert {"scikit-learn", "tqdm", "matplotlib"} <= {
        re.split(r"[<>=!~ \[;]", dep)[0].lower() for dep in extras["examples"]
    }
    assert project["scripts"]["pyaten"] == "pyaten.cli:main"  # the README's .venv/bin/pyaten
    assert any(dep.startswith("torch") for dep in project["optional-dependencies"]["dev"])


def _matches(shown: str, printed: str) -> bool:
    # Source line numbers move with every edit; the README's `:10` stands for any line.
    pattern = re.sub(r"(\\\.(?:py|yaml)):\d+", r"\1:\\d+", re.escape(shown))
    return re.fullmatch(pattern, printed) is not None


_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")


def _matches_demo(shown: str, printed: str) -> bool:
    """The same text and whole numbers; decimals close (BLAS rounding may differ from machine
    to machine: losses within 5%, accuracies within 1.5 points); the run time free."""
    shown_parts, printed_parts = _NUMBER.split(shown), _NUMBER.split(printed)
    if len(shown_parts) != len(printed_parts):
        return False
    for index, (a, b) in enumerate(zip(shown_parts, printed_parts)):
        if index % 2 == 0 or "." not in a + b:
            if a != b:
                return False
        elif shown_parts[index - 1].endswith("trained in "):
            continue
        elif shown_parts[index + 1].startswith("%"):
            if abs(float(a) - float(b)) > 1.5:
                return False
        elif abs(float(a) - float(b)) > 0.05 * abs(float(b)) + 1e-3:
            return False
    return True


def _check_shown_output(shown: str, printed: str, matches=_matches) -> None:
    """Every line the README shows appears in order; a `...` line stands for any lines."""
    out = printed.splitlines()
    position, skipping = 0, False
    for line in shown.splitlines():
        if line.strip().startswith("..."):
            skipping = True
            continue
        while skipping and position < len(out) and not matches(line, out[position]):
            position += 1
        assert position < len(out), f"README line not printed: {line!r}"
        assert matches(line, out[position]), (
            f"README shows {line!r} where the command prints {out[position]!r}"
        )
        position, skipping = position + 1, False
    assert position == len(out) or skipping, f"printed beyond the README: {out[position:]}"


@pytest.mark.parametrize("expression,shown", EXPLAINED, ids=[e for e, _ in EXPLAINED])
def test_readme_explain_runs_without_torch_and_prints_what_it_shows(expression, shown) -> None:
    run = [sys.executable, "-c", _NO_TORCH, "explain", expression]
    # The README shows a 100-column terminal (the CLI wraps at COLUMNS, else 80).
    env = {**os.environ, "COLUMNS": "100"}
    result = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env=env)
    assert result.returncode == 0, result.stderr
    _check_shown_output(shown, result.stdout)


def test_readme_demo_runs_without_torch_and_prints_what_it_shows(tmp_path) -> None:
    # Run where the README runs it, but in a scratch folder: the plot lands in its build/.
    # The timeout only stops a hang; how long the demo takes is bench_training.py's business.
    run = [sys.executable, "-c", _NO_TORCH, "demo"]
    result = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    _check_shown_output(DEMO_SHOWN[0], result.stdout, _matches_demo)
    assert (tmp_path / "build" / "pyaten-demo" / "training.png").is_file()
