"""Loading native_functions.yaml / derivatives.yaml: differential against torchgen on
PyTorch's own files, plus property tests on generated files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyaten.declarations import (
    DISPATCH_KEYS,
    DeclarationError,
    NativeFunctionsGroup,
    group_native_functions,
    load_derivatives,
    load_native_functions,
    load_tags,
    read_native_functions,
)
from pyaten.schema.validate import RESERVED

torchgen_gen = pytest.importorskip("torchgen.gen")
from _helpers import TORCH_DERIVATIVES_YAML as DERIVATIVES  # noqa: E402
from _helpers import TORCH_NATIVE_YAML as NATIVE  # noqa: E402
from _helpers import TORCH_TAGS_YAML as TAGS  # noqa: E402
from torchgen.model import NativeFunctionsGroup as TorchgenGroup  # noqa: E402
from torchgen.packaged.autograd import load_derivatives as torchgen_derivatives  # noqa: E402

# tags torchgen adds by itself; ours are the tags as written in the file
IMPLICIT_TAGS = {"pt2_compliant_tag", "out", "inplace", "generated"}


@pytest.fixture(scope="module")
def theirs():
    return torchgen_gen.parse_native_yaml(str(NATIVE), str(TAGS))


@pytest.fixture(scope="module")
def ours():
    return load_native_functions(NATIVE)


@pytest.fixture(scope="module")
def paired(ours, theirs):
    by_schema = {str(f.func): f for f in theirs.native_functions}
    return [(f, by_schema[f.func.yaml_text()]) for f in ours]


def test_same_functions_as_torchgen_in_the_same_order(ours, theirs) -> None:
    mine = [f.func.yaml_text() for f in ours]  # torchgen's str is the YAML spelling
    them = [str(f.func) for f in theirs.native_functions]
    declared = sum(1 for f in ours if f.generated_from is None)
    assert mine[:declared] == them[:declared]
    assert sorted(mine) == sorted(them)


def test_generated_variants_match_torchgen(paired) -> None:
    generated = [(f, t) for f, t in paired if f.generated_from is not None]
    assert len(generated) > 400
    for f, t in generated:
        assert "generated" in f.tags and "generated" in t.tags
        assert f.loc.line == t.loc.line
        assert f.tags <= t.tags and t.tags - f.tags <= IMPLICIT_TAGS
        assert (f.device_guard, f.device_check) == (t.device_guard, t.device_check.name)


def test_every_field_matches_torchgen(paired) -> None:
    for f, t in paired:
        if f.generated_from is not None:
            continue
        assert f.loc.line == t.loc.line
        assert f.variants == {v.name for v in t.variants}
        assert f.structured == t.structured
        assert str(f.structured_delegate) == str(t.structured_delegate)
        assert f.structured_inherits == t.structured_inherits
        assert f.python_module == t.python_module
        assert f.category_override == t.category_override
        assert f.device_guard == t.device_guard
        assert f.device_check == t.device_check.name
        assert f.manual_kernel_registration == t.manual_kernel_registration
        assert f.manual_cpp_binding == t.manual_cpp_binding
        assert f.use_const_ref_for_mutable_tensors == t.use_const_ref_for_mutable_tensors
        assert f.cpp_no_default_args == t.cpp_no_default_args
        assert [str(n) for n in f.autogen] == [str(n) for n in t.autogen]
        assert f.tags <= t.tags and t.tags - f.tags <= IMPLICIT_TAGS
        assert {k: u.name for k, u in f.ufunc_inner_loop.items()} == {
            k.name: u.name for k, u in t.ufunc_inner_loop.items()
        }
        if t.precomputed is None:
            assert f.precomputed is None
        else:
            assert dict(f.precomputed.replace) == {
                k: tuple(str(a) for a in v) for k, v in t.precomputed.replace.items()
            }
            assert f.precomputed.add == tuple(str(a) for a in t.precomputed.add)


def test_dispatch_tables_match_torchgen(paired, theirs) -> None:
    indices = theirs.backend_indices
    for f, t in paired:
        them = {
            str(k): idx.index[t.func.name].kernel
            for k, idx in indices.items()
            if t.func.name in idx.index
        }
        expected = dict(f.dispatch)
        if f.ufunc_inner_loop:  # torchgen fills CPU/CUDA from the ufunc loops
            expected.update({k: them[k] for k in ("CPU", "CUDA")})
        if f.has_implicit_dispatch:
            assert set(them) == {"CompositeImplicitAutograd"}
        else:
            assert them == expected
        assert f.has_composite_implicit_autograd_kernel == t.has_composite_implicit_autograd_kernel
        assert f.has_composite_explicit_autograd_kernel == t.has_composite_explicit_autograd_kernel
        if f.generated_from is None:  # torchgen copies it from the source for generated ones
            assert f.is_abstract == t.is_abstract


def test_groups_match_torchgen(ours, theirs) -> None:
    groups, ungrouped = group_native_functions(ours)
    them = torchgen_gen.get_grouped_native_functions(theirs.native_functions)
    t_groups = {
        tuple(sorted(str(f.func) for f in g.functions())): g.structured
        for g in them
        if isinstance(g, TorchgenGroup)
    }
    mine = {tuple(sorted(f.func.yaml_text() for f in g.functions())): g.structured for g in groups}
    assert mine == t_groups
    t_single = sorted(str(f.func) for f in them if not isinstance(f, TorchgenGroup))
    assert sorted(f.func.yaml_text() for f in ungrouped) == t_single


def test_derivatives_match_torchgen(ours) -> None:
    infos, _ = torchgen_derivatives.load_derivatives(str(DERIVATIVES), str(NATIVE), str(TAGS))
    by_schema = {str(k): v for k, v in infos.items()}
    entries = load_derivatives(DERIVATIVES, native_functions=ours)
    assert len(entries) == DERIVATIVES.read_text().count("\n- name:")
    for e in entries:
        theirs = by_schema[e.function.func.yaml_text()]
        assert set(e.dispatch) == set(theirs)
        for key, info in theirs.items():
            formulas = e.dispatch[key]
            inputs = {a.name for a in e.schema.arguments}
            backward = {
                n
                for f in formulas
                if f.names[0] in inputs and not f.is_non_differentiable
                for n in f.names
            }
            assert backward == {n for d in info.derivatives for n in d.var_names}
            nondiff = {n for f in formulas if f.is_non_differentiable for n in f.names}
            assert nondiff == set(info.non_differentiable_arg_names)
        od = e.output_differentiability
        if od is not None and all(isinstance(x, bool) for x in od):
            assert list(od) == theirs["Default"].output_differentiability


def test_tags_file_is_read() -> None:
    names = load_tags(TAGS)
    assert {"core", "pointwise", "inplace_view"} <= names
    assert names == load_tags()  # the bundled copy lists the same tags


# -- text input, errors, records -------------------------------------------------------------

SMALL = textwrap.dedent(
    """\
    - func: abs(Tensor self) -> Tensor
      variants: function, method
      structured_delegate: abs.out

    - func: abs_(Tensor(a!) self) -> Tensor(a!)
      structured_delegate: abs.out

    - func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
      structured: True
      dispatch:
        CPU,CUDA , Meta: abs_out
        SparseCPU: abs_sparse_out

    - func: neg(Tensor self) -> Tensor
      dispatch:
        CPU: neg
      autogen: neg.out
      tags: core

    - func: silu_(Tensor(a!) self) -> Tensor(a!)
      dispatch:
        CPU: silu_
      autogen: silu, silu.out
    """
)


def test_text_input_and_comma_lists() -> None:
    fns = {str(f.func.name): f for f in load_native_functions(SMALL)}
    out = fns["abs.out"]
    assert dict(out.dispatch) == {
        "CPU": "abs_out",
        "CUDA": "abs_out",
        "Meta": "abs_out",
        "SparseCPU": "abs_sparse_out",
    }
    assert out.loc.line == 8 and out.loc.path == "<string>"
    assert fns["abs"].variants == {"function", "method"}
    assert fns["neg"].tags == {"core"}
    assert str(fns["abs"].structured_delegate) == "abs.out"


def test_one_line_text_and_missing_paths() -> None:
    (fn,) = load_native_functions("- func: abs(Tensor self) -> Tensor")
    assert str(fn.func) == "abs(Tensor self) -> Tensor"
    with pytest.raises(FileNotFoundError):
        load_native_functions("no/such/native_functions.yaml")
    with pytest.raises(TypeError):
        load_native_functions(42)


def test_autogen_records() -> None:
    fns = {str(f.func.name): f for f in load_native_functions(SMALL)}
    assert str(fns["neg.out"].func) == "neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"
    assert str(fns["silu"].func) == "silu(Tensor self) -> Tensor"
    assert str(fns["silu.out"].func) == "silu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"
    assert str(fns["silu"].generated_from) == "silu_"
    assert "generated" in fns["neg.out"].tags
    assert "neg.out" not in {str(f.func.name) for f in load_native_functions(SMALL, autogen=False)}


def test_structured_group() -> None:
    groups, ungrouped = group_native_functions(load_native_functions(SMALL))
    by_root = {g.root_name: g for g in groups}
    abs_group = by_root["abs"]
    assert isinstance(abs_group, NativeFunctionsGroup) and abs_group.structured
    assert str(abs_group.functional.func.name) == "abs"
    assert str(abs_group.inplace.func.name) == "abs_"
    assert not by_root["neg"].structured
    assert {str(g.out.func.name) for g in groups} == {"abs.out", "neg.out", "silu.out"}
    assert ungrouped == []


def test_load_path_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "native_functions.yaml"
    path.write_text(SMALL + "\n- func: abs(Tensor self) -> Tensor\n")
    with pytest.raises(DeclarationError) as info:
        load_native_functions(path)
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(f"{path}:25: multiple-default-overloads:")
    assert info.value.diagnostics[0].line == 25


def test_derivatives_from_text() -> None:
    fns = load_native_functions(SMALL)
    text = textwrap.dedent(
        """\
        - name: abs(Tensor self) -> Tensor
          self: grad * self.sgn()
          result: auto_element_wise

        - name: neg(Tensor self) -> Tensor
          dispatch:
            Default:
              self: grad.neg()
            AutogradNestedTensor:
              self: non_differentiable
          output_differentiability: [True]
        """
    )
    abs_entry, neg_entry = load_derivatives(text, native_functions=fns)
    assert abs_entry.function is fns[0]
    assert [f.names for f in abs_entry.formulas] == [("self",)]
    assert [f.formula for f in abs_entry.result] == ["auto_element_wise"]
    assert abs_entry.loc.line == 1 and abs_entry.formulas[0].line == 2
    assert set(neg_entry.dispatch) == {"Default", "AutogradNestedTensor"}
    assert neg_entry.formula_for("self") == "grad.neg()"
    assert neg_entry.output_differentiability == (True,)
    with pytest.raises(DeclarationError, match="derivative-unknown-schema"):
        load_derivatives("- name: abs(Tensor x) -> Tensor\n  x: grad\n", native_functions=fns)


# -- properties on generated files -----------------------------------------------------------

# Python keywords are reserved in schema names (`as`, `in`...): the generator avoids them.
_names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True).filter(
    lambda name: name not in RESERVED
)
_key_lists = st.lists(st.sampled_from(sorted(DISPATCH_KEYS)), min_size=1, max_size=4, unique=True)
_tag_pool = sorted(load_tags())


@st.composite
def native_files(draw):
    names = draw(st.lists(_names, min_size=1, max_size=6, unique=True))
    lines: list[str] = []
    expected = []
    for name in names:
        if draw(st.booleans()):
            lines.append("# a comment line")
        if draw(st.booleans()):
            lines.append("")
        entry_line = len(lines) + 1
        lines.append(f"- func: {name}(Tensor self) -> Tensor")
        variants = draw(st.sampled_from(["function", "method", "function, method"]))
        lines.append(f"  variants: {variants}")
        groups = draw(st.lists(_key_lists, max_size=3))
        table: dict[str, str] = {}
        written = []
        for i, keys in enumerate(groups):
            keys = [k for k in keys if k not in table]
            if not keys:
                continue
            kernel = f"{name}_k{i}"
            table.update(dict.fromkeys(keys, kernel))
            sep = draw(st.sampled_from([",", ", ", " ,  "]))
            written.append(f"    {sep.join(keys)}: {kernel}")
        composites = [k for k in table if k.startswith("Composite")]
        if len(composites) > 1:  # a separate rule; keep these files valid
            continue
        if written:
            lines.append("  dispatch:")
            lines.extend(written)
        tags = draw(st.lists(st.sampled_from(_tag_pool), max_size=3, unique=True))
        if tags:
            lines.append(f"  tags: [{', '.join(tags)}]")
        expected.append((name, entry_line, set(variants.split(", ")), table, set(tags)))
    return "\n".join(lines) + "\n", expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(native_files())
def test_generated_files_load_exactly(case) -> None:
    text, expected = case
    fns, diagnostics = read_native_functions(text)
    real = [f for f in fns if f.func.name.name in {e[0] for e in expected}]
    assert [d for d in diagnostics if d.severity == "error"] == []
    assert len(real) == len(expected)
    for f, (name, line, variants, table, tags) in zip(real, expected):
        assert f.func.name.name == name
        assert f.loc.line == line
        assert f.variants == variants
        assert dict(f.dispatch) == table
        assert f.tags == tags


@settings(max_examples=40, deadline=None)
@given(native_files(), st.data())
def test_a_planted_unknown_key_is_reported_at_its_line(case, data) -> None:
    text, expected = case
    lines = text.splitlines()
    entry_lines = [line for _, line, *_ in expected]
    if not entry_lines:
        return
    at = data.draw(st.sampled_from(entry_lines))  # insert right after an entry's func line
    lines.insert(at, "  devic_guard: False")
    _, diagnostics = read_native_functions("\n".join(lines) + "\n")
    assert [(d.line, d.code) for d in diagnostics] == [(at + 1, "unknown-key")]
    assert "device_guard" in diagnostics[0].hint


# -- backend YAML ----------------------------------------------------------------------------


def test_backend_yaml_records() -> None:
    from pyaten.declarations import BackendDeclaration, load_backend_yaml

    fixtures = Path(__file__).parent / "fixtures" / "lint"
    fns = load_native_functions(fixtures / "native_functions.yaml")
    b = load_backend_yaml(fixtures / "clean_backend.yaml", fns)
    assert isinstance(b, BackendDeclaration)
    assert (b.backend, b.cpp_namespace, b.class_name) == (
        "PrivateUse1",
        "my_backend",
        "MyBackendNativeFunctions",
    )
    assert (b.dispatch_key, b.autograd_key) == ("PrivateUse1", "AutogradPrivateUse1")
    assert [str(f.func.name) for f in b.supported] == ["add.Tensor", "abs", "abs_", "abs.out"]
    assert dict(b.kernels) == {
        "add.Tensor": "add_symint",
        "abs": "abs",
        "abs_": "abs_",
        "abs.out": "abs_out",
    }
    assert [str(f.func.name) for f in b.autograd] == ["relu"]
    with pytest.raises(DeclarationError, match="backend-unknown-op"):
        load_backend_yaml("backend: CPU\ncpp_namespace: x\nsupported: [nope]\n", fns)


def test_backend_kernel_names_match_torchgen(tmp_path: Path) -> None:
    from torchgen.gen_backend_stubs import parse_backend_yaml

    from pyaten.declarations import load_backend_yaml

    ops = ["add.Tensor", "add.out", "abs", "abs_", "abs.out", "max.dim", "convolution"]
    text = "backend: XLA\ncpp_namespace: xla\nsupported:\n" + "".join(f"- {o}\n" for o in ops)
    text += "symint: [convolution]\n"
    path = tmp_path / "xla.yaml"
    path.write_text(text)
    theirs = torchgen_gen.parse_native_yaml(str(NATIVE), str(TAGS))
    grouped = torchgen_gen.get_grouped_native_functions(theirs.native_functions)
    parsed = parse_backend_yaml(str(path), grouped, theirs.backend_indices)
    them = {str(k): m.kernel for k, m in parsed.backend_indices[parsed.backend_key].index.items()}
    ours = load_backend_yaml(path, load_native_functions(NATIVE))
    assert dict(ours.kernels) == them


def test_group_invariants() -> None:
    fns = {str(f.func.name): f for f in load_native_functions(SMALL)}
    with pytest.raises(ValueError, match="functional signature"):
        NativeFunctionsGroup(functional=fns["abs"], out=fns["neg.out"])
    with pytest.raises(ValueError, match="not an out variant"):
        NativeFunctionsGroup(functional=fns["abs"], out=fns["abs"])
    with pytest.raises(ValueError, match="at least one"):
        NativeFunctionsGroup()
