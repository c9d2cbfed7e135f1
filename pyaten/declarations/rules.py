"""The catalogue of lint codes: each code's severity and what it means (docs/lint.md).

Every diagnostic the package emits uses one of these codes; the tests check that each has a
fixture under tests/fixtures/lint/ that triggers it at the right line.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Rule", "RULES"]


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    severity: str  # "error" or "warning"
    file: str  # "native", "derivatives", "tags" or "any"
    summary: str


_E, _W = "error", "warning"

RULES: dict[str, Rule] = {
    r.code: r
    for r in [
        Rule("unreadable", _E, "any", "the file cannot be read as UTF-8 text"),
        Rule("yaml-syntax", _E, "any", "the file is not valid YAML"),
        Rule("bad-file", _E, "any", "the file is not a list of entries"),
        Rule("bad-entry", _E, "any", "an entry is not a mapping"),
        Rule("duplicate-key", _E, "any", "a key appears twice in one entry"),
        Rule("bad-value", _E, "any", "a key's value has the wrong type or form"),
        Rule("missing-func", _E, "native", "an entry has no `func:`"),
        Rule("unknown-key", _E, "any", "a key that the format does not have"),
        Rule("schema-syntax", _E, "any", "the schema does not parse (column given)"),
        Rule("out-not-mutable", _E, "native", "an out argument lacks `(a!)`"),
        Rule("out-not-keyword-only", _E, "native", "a returned mutable argument is positional"),
        Rule("out-not-last", _E, "native", "a keyword-only argument follows out arguments"),
        Rule("return-alias-unknown", _E, "native", "a return aliases a set no argument has"),
        Rule("inplace-naming", _E, "native", "trailing `_` and in-place behaviour disagree"),
        Rule("method-without-self", _E, "native", "`variants: method` without a `self`"),
        Rule("unknown-dispatch-key", _E, "native", "a dispatch key that is not valid there"),
        Rule("duplicate-dispatch-key", _E, "native", "one dispatch key given two kernels"),
        Rule(
            "key-not-generated",
            _W,
            "native",
            "a valid dispatch key that torchgen generates no registration for",
        ),
        Rule("conflicting-composite-keys", _E, "native", "two Composite* keys that subsume"),
        Rule(
            "dispatch-with-manual-registration",
            _E,
            "native",
            "`dispatch` together with `manual_kernel_registration: True`",
        ),
        Rule("unknown-tag", _E, "native", "a tag that tags.yaml does not list"),
        Rule("duplicate-overload", _E, "native", "two entries with one name and overload"),
        Rule(
            "multiple-default-overloads",
            _E,
            "native",
            "two entries of one name with no overload name",
        ),
        Rule("structured-without-out", _E, "native", "`structured: True` on a non-out entry"),
        Rule(
            "structured-and-delegate",
            _E,
            "native",
            "`structured: True` and `structured_delegate` on one entry",
        ),
        Rule("structured-delegate-missing", _E, "native", "delegate names no declared entry"),
        Rule(
            "structured-delegate-not-structured",
            _E,
            "native",
            "delegate names an entry that is not structured",
        ),
        Rule(
            "structured-delegate-mismatch",
            _E,
            "native",
            "delegate has a different functional signature",
        ),
        Rule(
            "delegate-with-backend-kernel",
            _E,
            "native",
            "a delegating entry also names a structured backend's kernel",
        ),
        Rule("precomputed-without-structured", _E, "native", "`precomputed` needs structured"),
        Rule("ufunc-without-structured", _E, "native", "`ufunc_inner_loop` needs structured"),
        Rule("method-in-module", _E, "native", "`python_module` together with a method variant"),
        Rule("autogen-invalid", _E, "native", "autogen names something it cannot generate"),
        Rule("missing-name", _E, "derivatives", "an entry has no `name:`"),
        Rule("derivative-unknown-schema", _E, "derivatives", "`name:` matches no declared schema"),
        Rule(
            "derivative-unknown-input",
            _E,
            "derivatives",
            "a formula names something that is neither an input nor an output",
        ),
        Rule("duplicate-derivative", _E, "derivatives", "two entries for one schema"),
        Rule(
            "formula-outside-dispatch",
            _E,
            "derivatives",
            "a formula beside `dispatch:` (it would be ignored)",
        ),
        Rule("unknown-autograd-key", _E, "derivatives", "a `dispatch:` key that is not autograd"),
        Rule(
            "non-differentiable-conflict",
            _E,
            "derivatives",
            "an input has a formula and is `non_differentiable`",
        ),
        Rule(
            "formula-syntax",
            _E,
            "derivatives",
            "a formula of a `# formulas: python` file is not a Python expression",
        ),
        Rule(
            "formula-unknown-name",
            _W,
            "derivatives",
            "a Python formula reads a plain name that is no argument, output or `grad`",
        ),
        Rule(
            "missing-derivative",
            _W,
            "derivatives",
            "a non-composite operator with a Tensor input has no entry (python formulas only)",
        ),
        Rule("no-native-file", _E, "derivatives", "no native file to check against"),
        Rule("bad-native-file", _E, "derivatives", "the native file it depends on has errors"),
        Rule("missing-backend-key", _E, "backend", "`backend` or `cpp_namespace` is missing"),
        Rule("unknown-backend", _E, "backend", "`backend` is not a backend component"),
        Rule("backend-unknown-op", _E, "backend", "an operator the native file lacks"),
        Rule("duplicate-op", _E, "backend", "an operator listed twice under one key"),
        Rule(
            "backend-mixed-autograd",
            _E,
            "backend",
            "variants of one function split between `supported` and `autograd`",
        ),
        Rule("bad-tags-file", _E, "tags", "a tags file entry without `tag:`"),
        Rule("duplicate-tag", _E, "tags", "a tag listed twice"),
        Rule("redundant-default", _W, "native", "a key set to its default value"),
        Rule(
            "redundant-dispatch",
            _W,
            "native",
            "a lone CompositeImplicitAutograd kernel with the default name",
        ),
        Rule(
            "inherits-without-structured",
            _W,
            "native",
            "`structured_inherits` without `structured: True`",
        ),
    ]
}
