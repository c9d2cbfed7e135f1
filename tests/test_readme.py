"""The README's commands stay true: their Python expressions run, without torch, and print what
the README shows; `.ci/run` runs each command exactly as written; the main job installs no
torch."""

from __future__ import annotations

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
        r"```bash\n(.*?pyaten explain \"[^\"]*\")\n```.*?```text\n(.*?)```", README, re.S
    )
]

# Runs the CLI in a process where `import torch` fails, as after the README's first command.
_NO_TORCH = (
    "import sys; sys.modules['torch'] = None; from pyaten.cli import main; "
    "sys.exit(main(sys.argv[1:]))"
)


def test_readme_has_the_two_commands() -> None:
    assert len(COMMANDS) == 2, COMMANDS
    main_job, tests = COMMANDS
    assert ".venv/bin/pip install -e . " in main_job  # the project alone, not the dev extra
    assert "[dev]" not in main_job
    assert '.venv/bin/pip install -e ".[dev]"' in tests and "pytest" in tests
    assert len(EXPLAINED) == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_ci_runs_the_readme_command_as_written(command: str) -> None:
    assert command in CI.splitlines(), f".ci/run must run the README's command: {command}"


def test_main_install_needs_no_torch() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = [re.split(r"[<>=!~ \[;]", dep)[0].lower() for dep in project["dependencies"]]
    assert "torch" not in needed
    assert project["scripts"]["pyaten"] == "pyaten.cli:main"  # the README's .venv/bin/pyaten
    assert any(dep.startswith("torch") for dep in project["optional-dependencies"]["dev"])


def _matches(shown: str, printed: str) -> bool:
    # Source line numbers move with every edit; the README's `:10` stands for any line.
    pattern = re.sub(r"(\\\.(?:py|yaml)):\d+", r"\1:\\d+", re.escape(shown))
    return re.fullmatch(pattern, printed) is not None


def _check_shown_output(shown: str, printed: str) -> None:
    """Every line the README shows appears in order; a `...` line stands for any lines."""
    out = printed.splitlines()
    position, skipping = 0, False
    for line in shown.splitlines():
        if line.strip().startswith("..."):
            skipping = True
            continue
        while skipping and position < len(out) and not _matches(line, out[position]):
            position += 1
        assert position < len(out), f"README line not printed: {line!r}"
        assert _matches(line, out[position]), (
            f"README shows {line!r} where `pyaten explain` prints {out[position]!r}"
        )
        position, skipping = position + 1, False
    assert position == len(out) or skipping, f"printed beyond the README: {out[position:]}"


@pytest.mark.parametrize("expression,shown", EXPLAINED, ids=[e for e, _ in EXPLAINED])
def test_readme_explain_runs_without_torch_and_prints_what_it_shows(expression, shown) -> None:
    run = [sys.executable, "-c", _NO_TORCH, "explain", expression]
    result = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    _check_shown_output(shown, result.stdout)
