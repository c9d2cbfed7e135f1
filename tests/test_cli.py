"""The `pyaten` command line as a user meets it: output that fits a terminal, names resolved
and suggested, help that explains every action, and quiet exits when the reader goes away.

Command-specific behaviour is tested beside its module (test_lint.py, test_explain.py,
test_dispatch_cli.py, test_codegen.py); this file holds what every command must do.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pyaten  # noqa: F401  (registers the built-in operators)
from pyaten import dispatch
from pyaten.cli import CLOSED_PIPE_STATUS, main
from pyaten.commands._names import close_names, overloads
from pyaten.dispatch.keys import RUNTIME_KEYS

ROOT = Path(__file__).resolve().parent.parent
NATIVE_YAML = ROOT / "pyaten" / "native" / "native_functions.yaml"
# an absolute path at the start of a line or after a space or parenthesis
ABSOLUTE_PATH = re.compile(r"(^|[\s(])/\w")


def pyaten_cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """`pyaten ARGS` in a fresh interpreter, as a shell would run it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "pyaten.cli", *args], env=env, cwd=ROOT, text=True, **kwargs
    )


# -- pyaten dispatch: the table fits a terminal ------------------------------------------------


def groups(text: str) -> dict[str, tuple[list[str], str]]:
    """The blocks of `pyaten dispatch` output: first key -> (the group's keys, its block)."""
    out = {}
    for block in text.split("\n\n")[1:]:
        head = block.split("\n    rule")[0]
        keys = re.sub(r" \(\d+ keys\)$", "", " ".join(head.split())).split(", ")
        out[keys[0]] = (keys, block)
    return out


def test_dispatch_table_fits_100_columns_with_package_relative_paths(capsys) -> None:
    assert main(["dispatch", "add.Tensor"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert not [line for line in lines if ABSOLUTE_PATH.search(line)]
    assert str(ROOT) not in out
    assert "pyaten/native/kernels/binary.py:" in out  # relative to the package's directory
    # Keys served alike are printed once: far fewer groups than keys with a kernel (add.Tensor
    # has its own sparse, CSR and nested kernels, each a group of one), and every such key in
    # exactly one group.
    served = [k for k, v in dispatch.dump_table("aten::add.Tensor").items() if v != "missing"]
    assert len(lines) < 2 * len(served) and len(groups(out)) <= len(served) // 5
    listed = [key for keys, _ in groups(out).values() for key in keys]
    assert sorted(listed) == sorted(served)


def test_dispatch_groups_say_what_serves_them(capsys) -> None:
    assert main(["dispatch", "add.Tensor", "--all"]) == 0
    blocks = groups(capsys.readouterr().out)
    assert sum(len(keys) for keys, _ in blocks.values()) == len(RUNTIME_KEYS)
    assert blocks["CPU"][0] == ["CPU"]
    assert "rule    kernel: a kernel registered directly" in blocks["CPU"][1]
    assert "wrapper_CPU_add_Tensor (registered for CPU)" in blocks["CPU"][1]
    autograd_keys, autograd = blocks["AutogradOther"]
    assert "AutogradCPU" in autograd_keys and "kernel  ag_add_Tensor" in autograd
    assert "at      pyaten/autograd/derivatives.yaml:" in autograd
    # One fallback function per key, registered on one line: `<key>` stands for the key.
    passing = next(block for keys, block in blocks.values() if "Conjugate" in keys)
    assert "kernel  <key>_fallback" in passing
    # Functionalization's fallback is its own (pyaten/_functionalize/key.py installs it)
    functionalize = next(block for keys, block in blocks.values() if "Functionalize" in keys)
    assert "kernel  functionalize_fallback" in functionalize
    # The Python key and its snapshot have fallbacks of their own (pyaten/dispatch/python_key.py)
    assert "kernel  python_fallback" in blocks["Python"][1]
    assert "kernel  tls_snapshot_fallback" in blocks["PythonTLSSnapshot"][1]
    missing = [block for _, block in blocks.values() if "rule    missing:" in block]
    assert len(missing) == 1 and "\n    kernel  " not in missing[0]


# -- names: a bare name stands for its overloads; an unknown one gets close names ---------------


def test_dispatch_resolves_a_bare_name_to_its_overloads(capsys) -> None:
    assert main(["dispatch", "add"]) == 0
    out = capsys.readouterr().out
    for overload in ("aten::add.Tensor", "aten::add.Scalar", "aten::add.out"):
        assert f"operator: {overload}\n" in out
    assert "aten::rand" not in out
    assert max(len(line) for line in out.splitlines()) <= 100
    # A name that is an operator itself stays one table.
    assert main(["dispatch", "exp"]) == 0
    assert capsys.readouterr().out.count("operator: ") == 1


def test_dispatch_suggests_close_names_for_an_unknown_one(capsys) -> None:
    assert main(["dispatch", "matmull"]) == 1
    err = capsys.readouterr().err
    assert "no operator named aten::matmull" in err
    assert "did you mean: aten::matmul" in err
    assert main(["dispatch", "add.Tensr"]) == 1
    assert "did you mean: aten::add.Tensor," in capsys.readouterr().err
    assert main(["dispatch", "sofmtax"]) == 1
    err = capsys.readouterr().err
    assert "aten::rand" not in err and len(err.splitlines()) <= 3


def test_codegen_show_suggests_close_names_not_every_operator(capsys) -> None:
    assert main(["codegen", "show", "sofmtax"]) == 1
    err = capsys.readouterr().err
    assert "__and__.Scalar" not in err and len(err.splitlines()) <= 3
    assert main(["codegen", "show", "matmull"]) == 1
    assert "did you mean: matmul" in capsys.readouterr().err


def test_codegen_show_resolves_a_bare_name(capsys) -> None:
    assert main(["codegen", "show", "add"]) == 0
    out = capsys.readouterr().out
    shown = re.findall(r"^# ===== (\S+) =====$", out, flags=re.MULTILINE)
    assert {"add.Tensor", "add.Scalar", "add.out"} <= set(shown)
    assert all(name.split(".")[0] == "add" for name in shown)


@pytest.mark.parametrize(
    ("name", "known", "expected"),
    [
        ("add", ["add.Tensor", "add.out", "add_.Tensor", "addmm"], ["add.Tensor", "add.out"]),
        ("exp", ["exp", "exp.out", "expand"], ["exp", "exp.out"]),
        ("aten::add", ["aten::add.Tensor", "foo::add.Tensor"], ["aten::add.Tensor"]),
        ("add.Tensor", ["add.Tensor", "add.Tensor.x"], ["add.Tensor"]),
        ("add.Tensr", ["add.Tensor"], []),
    ],
)
def test_overloads(name: str, known: list[str], expected: list[str]) -> None:
    assert overloads(name, known) == expected


@pytest.mark.parametrize(
    ("name", "known", "expected"),
    [
        ("sofmtax", ["softmax.int", "_softmax", "sum", "__and__.Scalar"], ["softmax", "_softmax"]),
        ("SOFTMAX", ["softmax.int"], ["softmax"]),
        ("aten::add.Tensr", ["aten::add.Tensor", "aten::rand"], ["aten::add.Tensor"]),
        ("aten::ad", ["aten::add.Tensor", "other::ad"], ["aten::add"]),
        ("atn::add", ["aten::add.Tensor"], ["aten::add"]),
        ("zzzz", ["add", "mul"], []),
    ],
)
def test_close_names(name: str, known: list[str], expected: list[str]) -> None:
    assert close_names(name, known) == expected


# -- help ---------------------------------------------------------------------------------------


def test_codegen_help_explains_every_action(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["codegen", "--help"])
    out = capsys.readouterr().out
    for action in ("show NAME", "missing", "path"):
        line = next(x for x in out.splitlines() if x.strip().startswith(action + " "))
        assert len(line.split(None, len(action.split()))[-1]) > 20, line  # a real explanation
    assert max(len(line) for line in out.splitlines()) <= 100


def test_codegen_rejects_a_name_for_missing_and_path(capsys) -> None:
    assert main(["codegen", "path", "add"]) == 2
    assert "takes no operator name" in capsys.readouterr().err


# -- a reader that goes away --------------------------------------------------------------------


def _many_warnings(tmp_path: Path) -> Path:
    # 3000 `redundant-default` warnings: far more than a pipe buffers, so writing must fail.
    entries = "".join(f"- func: f{i}(Tensor self) -> Tensor\n  structured: False\n"
                      for i in range(3000))
    path = tmp_path / "native_functions.yaml"
    path.write_text(entries)
    return path


def test_lint_into_a_reader_that_stops_early_is_quiet(tmp_path: Path) -> None:
    path = _many_warnings(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    writer = subprocess.Popen(
        [sys.executable, "-m", "pyaten.cli", "lint", "-W", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
    )  # fmt: skip
    reader = subprocess.run(
        [sys.executable, "-c", "import sys; print(sys.stdin.readline(), end='')"],
        stdin=writer.stdout, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    writer.stdout.close()
    err = writer.stderr.read().decode()
    writer.stderr.close()
    assert writer.wait(timeout=60) == CLOSED_PIPE_STATUS
    assert "redundant-default (warning)" in reader.stdout
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception" not in err


@pytest.mark.parametrize(
    "args",
    [
        ["dispatch", "add"],
        ["dispatch", "add", "--json", "--all"],
        ["codegen", "show", "add"],
        ["codegen", "path"],
        ["explain", "pyaten.ones(2)"],
        ["schema", "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"],
        ["--help"],
        ["lint", "-W", "MANY"],
    ],
    ids=lambda args: " ".join(args),
)
def test_every_command_is_quiet_on_a_closed_pipe(args: list[str], tmp_path: Path) -> None:
    args = [str(_many_warnings(tmp_path)) if a == "MANY" else a for a in args]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte is written
    try:
        result = pyaten_cli(*args, stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert result.stderr == ""
    assert result.returncode in (0, CLOSED_PIPE_STATUS)


def test_closed_pipe_status_in_process(monkeypatch, capsys) -> None:
    class ClosedPipe:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["schema", "f(Tensor x) -> Tensor"]) == CLOSED_PIPE_STATUS

