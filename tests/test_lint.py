"""The linter: one fixture per rule, each marking its expected diagnostics in place.

A fixture line that should get a diagnostic ends with `# expect: CODE[, CODE]`; the test
lints the file (warnings included) and compares the (line, code) pairs exactly. PyTorch's
own three files must produce nothing at all.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import TORCH_DERIVATIVES_YAML as REAL_DERIVATIVES
from _helpers import TORCH_NATIVE_YAML as REAL_NATIVE
from _helpers import TORCH_TAGS_YAML as REAL_TAGS
from hypothesis import given, settings
from hypothesis import strategies as st

from pyaten.cli import main
from pyaten.codegen.naming import default_kernel_name
from pyaten.declarations import Diagnostic, lint, lint_files, load_native_functions
from pyaten.declarations.dispatch_keys import DISPATCH_KEYS, suggest_dispatch_key
from pyaten.declarations.entry_rules import _default_kernel_name
from pyaten.declarations.rules import RULES

FIXTURES = Path(__file__).parent / "fixtures" / "lint"
PROJECT_NATIVE = Path(__file__).parent.parent / "pyaten" / "native" / "native_functions.yaml"
ALL_FIXTURES = sorted(p for p in FIXTURES.rglob("*.yaml"))

_EXPECT = re.compile(r"#\s*expect:\s*([a-z, -]+?)\s*$")
# codes that no file fixture can trigger; each has its own test below
_NO_FIXTURE = {"no-native-file", "unreadable"}


def expectations(path: Path) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = _EXPECT.search(line)
        if m:
            out.extend((number, code.strip()) for code in m.group(1).split(","))
    return sorted(out)


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_diagnostics_at_the_marked_lines(path: Path) -> None:
    found = lint(path, warnings=True)
    assert sorted((d.line, d.code) for d in found) == expectations(path)
    for d in found:
        assert d.path == str(path)
        assert d.message and d.code in RULES
        assert d.severity == RULES[d.code].severity


def test_every_rule_has_a_fixture() -> None:
    covered = {code for p in ALL_FIXTURES for _, code in expectations(p)}
    assert set(RULES) - _NO_FIXTURE <= covered
    assert covered <= set(RULES)


def test_every_rule_is_documented() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "lint.md").read_text()
    for code, rule in RULES.items():
        assert f"| `{code}` | {rule.severity} |" in doc


def test_warnings_only_when_asked() -> None:
    path = FIXTURES / "redundant_default.yaml"
    assert lint(path) == []
    assert [d.severity for d in lint(path, warnings=True)] == ["warning"]


@pytest.mark.parametrize("path", [REAL_NATIVE, REAL_TAGS, REAL_DERIVATIVES], ids=lambda p: p.name)
def test_pytorch_files_are_clean(path: Path) -> None:
    assert lint(path, warnings=True) == []


def test_the_projects_own_files_are_clean_with_warnings(capsys) -> None:
    assert main(["lint", "-W", str(PROJECT_NATIVE)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "1 file, no problems\n"


@pytest.mark.parametrize("path", [REAL_NATIVE, PROJECT_NATIVE], ids=["pytorch", "pyaten"])
def test_redundant_dispatch_uses_the_code_generators_default_name(path: Path) -> None:
    # The warning says an entry's table is what no `dispatch:` gives; that is true only if the
    # rule and the code generator agree on the default kernel name for every entry.
    for fn in load_native_functions(path):
        assert _default_kernel_name(fn) == default_kernel_name(fn.func.name), fn.func.name


def test_hints_say_what_to_write() -> None:
    (d,) = lint(FIXTURES / "unknown_key.yaml")
    assert "dispatch" in d.hint
    bad = lint(FIXTURES / "unknown_dispatch_key.yaml")
    assert "SparseCPU" in bad[0].hint
    assert "derivatives.yaml" in bad[1].hint
    (tag,) = lint(FIXTURES / "unknown_tag.yaml")
    assert "'pointwise'" in tag.hint
    (syntax,) = lint(FIXTURES / "schema_syntax.yaml")
    assert "column" in syntax.message and "^" in syntax.hint


def test_derivatives_checked_against_the_native_file_given(tmp_path: Path) -> None:
    # The derivatives file alone in a folder: nothing beside it, so pass the native file.
    text = (FIXTURES / "derivatives_unknown_input.yaml").read_text()
    lone = tmp_path / "derivatives.yaml"
    lone.write_text(text)
    native = FIXTURES / "native_functions.yaml"
    expected = expectations(FIXTURES / "derivatives_unknown_input.yaml")
    found = lint_files([native, lone])
    assert [(d.line, d.code) for d in found] == expected
    assert all(d.path == str(lone) for d in found)
    assert [(d.line, d.code) for d in lint(lone, native=native)] == expected


def test_no_native_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyaten.declarations.derivatives as derivatives

    monkeypatch.setattr(derivatives, "_PYATEN_NATIVE", str(tmp_path / "absent.yaml"))
    lone = tmp_path / "derivatives.yaml"
    lone.write_text("- name: abs(Tensor self) -> Tensor\n  self: grad\n")
    (d,) = lint(lone)
    assert d.code == "no-native-file" and "pyaten lint" in d.hint


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    (d,) = lint(missing)
    assert d.code == "unreadable"
    binary = tmp_path / "native_functions.yaml"
    binary.write_bytes(b"- func: \xff\xfe(Tensor self) -> Tensor\n")
    (d,) = lint(binary)
    assert (d.code, d.path) == ("unreadable", str(binary))


def test_cli_prints_path_line_code_message_and_hint(capsys: pytest.CaptureFixture) -> None:
    path = FIXTURES / "unknown_key.yaml"
    assert main(["lint", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    line = expectations(path)[0][0]
    assert out[0] == f"{path}:{line}: unknown-key: unknown key 'dispach'"
    assert out[1].startswith("    ") and "dispatch" in out[1]


def test_cli_exit_status() -> None:
    clean = FIXTURES / "native_functions.yaml"
    warned = FIXTURES / "redundant_default.yaml"
    assert main(["lint", str(clean)]) == 0
    assert main(["lint", "-W", str(warned)]) == 0  # warnings alone do not fail
    assert main(["lint", str(clean), str(FIXTURES / "clean_derivatives.yaml")]) == 0


def test_cli_native_option_and_warning_label(tmp_path: Path, capsys) -> None:
    lone = tmp_path / "derivatives.yaml"
    lone.write_text((FIXTURES / "derivatives_unknown_input.yaml").read_text())
    native = FIXTURES / "native_functions.yaml"
    assert main(["lint", "--native", str(native), str(lone)]) == 1
    out = capsys.readouterr().out
    assert f"{lone}:3: derivative-unknown-input:" in out
    assert main(["lint", "-W", str(FIXTURES / "redundant_default.yaml")]) == 0
    assert "redundant-default (warning):" in capsys.readouterr().out


def test_cli_runs_as_a_program_on_pytorch_files() -> None:
    cmd = [sys.executable, "-m", "pyaten.cli", "lint", str(REAL_NATIVE), str(REAL_DERIVATIVES)]
    root = Path(__file__).parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr == "2 files, no problems\n"


@pytest.mark.parametrize(
    ("args", "summary"),
    [
        (["clean"], "1 file, no problems"),
        (["clean", "clean_derivatives"], "2 files, no problems"),
        (["clean", "clean"], "1 file, no problems"),  # a file named twice is checked once
        (["redundant_default"], "1 file: no errors (1 warning; -W shows them)"),
        (["-W", "redundant_default"], "1 file: 0 errors, 1 warning"),
        (["-W", "redundant_dispatch"], "1 file: 0 errors, 3 warnings"),
        (["unknown_key"], "1 file: 1 error, 0 warnings"),
        (["unknown_key", "redundant_dispatch"], "2 files: 1 error (3 warnings; -W shows them)"),
    ],
)
def test_cli_ends_with_a_summary_line(args: list[str], summary: str, capsys) -> None:
    names = {"clean": "native_functions"}
    argv = [a if a.startswith("-") else str(FIXTURES / f"{names.get(a, a)}.yaml") for a in args]
    main(["lint", *argv])
    assert capsys.readouterr().err.splitlines() == [summary]


def test_diagnostic_str() -> None:
    d = Diagnostic("f.yaml", 3, "unknown-key", "unknown key 'x'", "hint")
    assert str(d) == "f.yaml:3: unknown-key: unknown key 'x'"


# -- robustness: mangled files give diagnostics, never exceptions ---------------------------

_NATIVE_TEXT = (FIXTURES / "native_functions.yaml").read_text()
_DERIV_TEXT = (FIXTURES / "clean_derivatives.yaml").read_text()
_NOISE = st.sampled_from(list(":-[]{}(),!#*&|>'\"\t ?=.") + ["True", "5", "null", "a!", "\n  "])
_VALUES = st.sampled_from(["[x]", "{a: b}", "5", "True", "null", "[[1]]", "''", "[x, {y: z}]"])


@st.composite
def mangled(draw, text: str) -> str:
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["delete", "duplicate", "poke", "indent", "value"]))
        if action == "delete" and len(lines) > 1:
            del lines[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
        elif action == "poke" and lines[i]:
            j = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:j] + draw(_NOISE) + lines[i][j + 1 :]
        elif action == "indent":
            lines[i] = "  " + lines[i]
        elif action == "value" and ": " in lines[i]:
            lines[i] = lines[i].split(": ", 1)[0] + ": " + draw(_VALUES)
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(mangled(_NATIVE_TEXT))
def test_mangled_native_files_never_raise(text: str) -> None:
    from pyaten.declarations import read_native_functions

    _, diagnostics = read_native_functions(text, "x.yaml")
    n_lines = text.count("\n") + 1
    for d in diagnostics:
        assert d.code in RULES and 0 <= d.line <= n_lines


@functools.cache
def _fixture_functions():
    """The fixture native file's records (read once: the mangled-file tests share them)."""
    from pyaten.declarations import load_native_functions

    return tuple(load_native_functions(FIXTURES / "native_functions.yaml"))


@settings(max_examples=100, deadline=None)
@given(mangled(_DERIV_TEXT))
def test_mangled_derivatives_files_never_raise(text: str) -> None:
    from pyaten.declarations import read_derivatives

    _, diagnostics = read_derivatives(text, "d.yaml", _fixture_functions())
    for d in diagnostics:
        assert d.code in RULES


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(DISPATCH_KEYS)), st.data())
def test_case_slips_suggest_the_key(key: str, data) -> None:
    flips = data.draw(st.lists(st.booleans(), min_size=len(key), max_size=len(key)))
    slipped = "".join(c.swapcase() if f else c for c, f in zip(key, flips))
    assert suggest_dispatch_key(slipped) == key


@pytest.mark.parametrize(
    "typo, key",
    [("SparseCUP", "SparseCPU"), ("QuantizedCuda", "QuantizedCUDA"),
     ("CompositeImplicit", "CompositeImplicitAutograd"), ("NestedTensorCuda", "NestedTensorCUDA")],
)  # fmt: skip
def test_typos_suggest_the_key(typo: str, key: str) -> None:
    assert suggest_dispatch_key(typo) == key


@settings(max_examples=100, deadline=None)
@given(mangled((FIXTURES / "clean_backend.yaml").read_text()))
def test_mangled_backend_files_never_raise(text: str) -> None:
    from pyaten.declarations import read_backend_yaml

    _, diagnostics = read_backend_yaml(text, "b.yaml", _fixture_functions())
    for d in diagnostics:
        assert d.code in RULES


# -- the layout keys (sparse, quantized, nested) against torchgen itself ------------------------

_LAYOUT_TABLES = [
    "SparseCPU: k", "SparseCsrCPU: k", "QuantizedCPU: k", "NestedTensorCPU: k",
    "SparseMeta, SparseCsrMeta, QuantizedMeta, NestedTensorMeta: k", "SparseCUDA: k",
    "SparseCsrMPS: k", "NestedTensorHPU: k",
    "CompositeImplicitAutograd: k\n    CompositeImplicitAutogradNestedTensor: n",
    "CompositeExplicitAutograd: k\n    CompositeImplicitAutogradNestedTensor: n",
    "CompositeImplicitAutogradNestedTensor: n",
    "CompositeExplicitAutogradNonFunctional: k\n    CompositeImplicitAutogradNestedTensor: n",
    "SparseCpu: k", "Sparsecsrcpu: k", "QuantisedCPU: k", "NestedCPU: k",
    "SparsePrivateUse1: k", "SparseCsrPrivateUse2: k", "QuantizedXPU: k",
    "NestedTensorPrivateUse1: k", "XLA: k", "Sparse: k", "AutogradNestedTensor: k",
    "AutogradPrivateUse1: k",
]  # fmt: skip


def _torchgen_verdict(entry_text: str) -> str:
    """"ok", "unknown" (torchgen cannot parse the key), "unsupported" (a key, but not one it
    generates for) or "conflict" (another assertion), from torchgen's own parser."""
    import yaml
    from torchgen.model import Location, NativeFunction

    entry = yaml.safe_load(entry_text)[0]
    try:
        NativeFunction.from_yaml(entry, Location("x.yaml", 1), set())
    except AssertionError as exc:
        text = str(exc)
        if text.startswith("unknown dispatch key"):
            return "unknown"
        return "unsupported" if "is not a supported dispatch key" in text else "conflict"
    return "ok"


@pytest.mark.parametrize("table", _LAYOUT_TABLES)
def test_layout_dispatch_keys_agree_with_torchgen(table: str, tmp_path: Path) -> None:
    text = f"- func: foo(Tensor self) -> Tensor\n  dispatch:\n    {table}\n"
    path = tmp_path / "native_functions.yaml"
    path.write_text(text)
    codes = {d.code for d in lint(path, warnings=True)}
    verdict = _torchgen_verdict(text)
    if verdict == "ok":
        assert codes == set()
    elif verdict == "unknown":
        assert codes == {"unknown-dispatch-key"}
    elif verdict == "unsupported":
        # a key the dispatcher has but torchgen does not generate for: a warning; a runtime-only
        # key (Sparse, AutogradNestedTensor) cannot hold a kernel at all: an error
        assert codes in ({"key-not-generated"}, {"unknown-dispatch-key"})
    else:
        assert codes == {"conflicting-composite-keys"}


def test_codegen_keys_are_torchgens() -> None:
    import torchgen.model

    from pyaten.declarations.dispatch_keys import CODEGEN_DISPATCH_KEYS

    assert CODEGEN_DISPATCH_KEYS == {str(k) for k in torchgen.model.dispatch_keys}


def test_key_not_generated_hint_points_plugins_at_their_manifest(tmp_path: Path) -> None:
    path = tmp_path / "native_functions.yaml"
    path.write_text("- func: foo(Tensor self) -> Tensor\n  dispatch:\n    CPU: foo\n"
                    "    SparseCsrPrivateUse1: foo_csr\n")  # fmt: skip
    (d,) = lint(path, warnings=True)
    assert (d.line, d.code, d.severity) == (4, "key-not-generated", "warning")
    assert d.message == (
        "foo: torchgen generates no registration for 'SparseCsrPrivateUse1' (it stops with "
        "'Dispatch key SparseCsrPrivateUse1 of kernel foo_csr is not a supported dispatch key.')"
    )
    assert "'sparse:' / 'sparse_csr:'" in d.hint
    assert lint(path) == []  # a warning: only with warnings=True (`pyaten lint -W`)
