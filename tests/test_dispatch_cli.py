"""`pyaten dispatch OP`, explain() and the trace of a call through a fallback."""

from __future__ import annotations

import json

from _helpers import FakeTensor

import pyaten.dispatch as pd
import pyaten.library as pl
from pyaten.cli import main


def test_cli_prints_the_explained_table(capsys) -> None:
    with pl.Library("pyaten_cli", "DEF") as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x, "CPU")
        lib.impl("f", lambda x: x, "CompositeExplicitAutograd")
        assert main(["dispatch", "pyaten_cli::f"]) == 0
        out = capsys.readouterr().out
        assert "operator: pyaten_cli::f" in out
        # one block per group of keys served alike: the keys, then rule, kernel and site
        blocks = {b.split(",")[0].split("\n")[0]: b for b in out.split("\n\n")[1:]}
        assert "rule    kernel:" in blocks["CPU"]
        assert "at      tests/test_dispatch_cli.py:" in blocks["CPU"]
        composite = blocks["Undefined"]
        assert "CUDA" in composite.split("\n    rule")[0]
        assert "rule    default backend kernel:" in composite
        assert "(registered for CompositeExplicitAutograd)" in " ".join(composite.split())
        assert "NestedTensorCPU" not in out  # missing slots hidden without --all
        assert main(["dispatch", "pyaten_cli::f", "--json", "--all"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert len(data) == 137 and data["NestedTensorCPU"]["serves"] == "missing"
        assert data["AutogradCPU"]["rule"] == "backend fallback"
    assert main(["dispatch", "pyaten_cli::f"]) == 1
    assert "no operator named pyaten_cli::f" in capsys.readouterr().err


def test_explain_agrees_with_dump_table() -> None:
    with pl.Library("pyaten_cli_explain", "DEF") as lib:
        lib.define("g(Tensor x) -> Tensor")
        lib.impl("g", lambda x: x, "SparseCPU")
        lib.impl("g", lambda x: x)
        table = pd.dump_table("pyaten_cli_explain::g")
        explained = pd.explain("pyaten_cli_explain::g", show_missing=True).as_dict()
        assert {k: v["serves"] for k, v in explained.items()} == table
        assert table["AutogradOther"] == "ambiguous_autogradother"
        assert explained["CPU"]["rule"] == "math kernel"


def test_trace_shows_the_autograd_fallback_hop() -> None:
    with pl.Library("pyaten_cli_trace", "DEF") as lib:
        lib.define("h(Tensor x) -> Tensor")
        lib.impl("h", lambda x: "done", "CPU")
        op = pd.get_operator("pyaten_cli_trace::h")
        assert op.call(FakeTensor()) == "done"  # cached fast path skips the fallback hop
        with pd.trace() as t:
            assert op.call(FakeTensor()) == "done"
        (root,) = t.as_dicts()
        assert (root["key"], root["rule"], root["kernel"]) == (
            "AutogradCPU",
            "backend fallback",
            "autograd_fallback",
        )
        (child,) = root["children"]
        assert (child["key"], child["keyset"]) == ("CPU", "DispatchKeySet(CPU)")
        with pd.trace() as t:
            try:
                op.call(FakeTensor("cuda"))
            except NotImplementedError:
                pass
        assert t.as_dicts()[0]["children"][0]["error"].startswith("NotImplementedError: Could")


def test_dump_lists_stacks_like_torch() -> None:
    import re
    import warnings

    torch = __import__("pytest").importorskip("torch")
    import torch.library as tl

    def register(m, ns):
        lib = m.Library(ns, "DEF")
        lib.define("f(Tensor x) -> Tensor")
        other = m.Library(ns, "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            other.impl("f", lambda x: x, "CPU")
            other.impl("f", lambda x: x, "CPU")
            other.impl("f", m.fallthrough_kernel, "AutogradCPU")
            other.impl("f", lambda x: x, "Dense")
            other.impl("f", lambda x: x, "CompositeExplicitAutograd")
        return lib, other

    theirs = register(tl, "pyaten_cli_dump")
    ours = register(pl, "pyaten_cli_dump")

    def shape(text):
        return [re.sub(r"registered at \S+:\d+", "X", line) for line in text.splitlines()]

    assert shape(pd.dump("pyaten_cli_dump::f")) == shape(
        torch._C._dispatch_dump("pyaten_cli_dump::f")
    )
    for lib in (*theirs, *ours):
        lib._destroy()


# -- the layout keys: sparse, quantized and nested rows and calls ------------------------------

_LAYOUT_KEYS = ("SparseCPU", "SparseCsrCPU", "QuantizedCPU", "NestedTensorCPU")
_LAYOUT_OPS = (
    "aten::add.Tensor", "aten::mul.Tensor", "aten::mm", "aten::addmm", "aten::values",
    "aten::_nnz", "aten::_to_dense", "aten::coalesce", "aten::sum", "aten::neg", "aten::sin",
    "aten::relu", "aten::t", "aten::transpose.int", "aten::index_select", "aten::int_repr",
    "aten::dequantize.self", "aten::q_scale", "aten::q_zero_point", "aten::quantize_per_tensor",
    "aten::softmax.int", "aten::_softmax", "aten::linear", "aten::bmm", "aten::matmul",
    "aten::unbind.int", "aten::cat", "aten::view", "aten::reshape", "aten::clone",
    "aten::layer_norm", "aten::native_layer_norm", "aten::scaled_dot_product_attention",
)  # fmt: skip
# (operator, key) rows where torch registers a kernel and pyaten does not (yet): kernels
# issue 33's layouts have not needed; listed so that a new difference fails the test.
_KNOWN_LAYOUT_GAPS = {
    ("aten::clone", "SparseCPU"): "default backend kernel",
    ("aten::clone", "SparseCsrCPU"): "default backend kernel",
}


def test_layout_rows_agree_with_torch() -> None:
    import re

    torch = __import__("pytest").importorskip("torch")
    differences = {}
    for op in _LAYOUT_OPS:
        theirs = {}
        for line in torch._C._dispatch_dump_table(op).splitlines():
            m = re.match(r"(\w+): .*\[(.*)\]$", line)
            if m:
                theirs[m.group(1)] = m.group(2)
        ours = pd.explain(op, show_missing=True).as_dict()
        for key in _LAYOUT_KEYS:
            if ours[key]["rule"] != theirs.get(key, "missing"):
                differences[(op, key)] = ours[key]["rule"]
    assert differences == _KNOWN_LAYOUT_GAPS


def test_cli_shows_the_layout_kernels(capsys) -> None:
    assert main(["dispatch", "aten::mm", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["SparseCPU"]["rule"], data["SparseCPU"]["kernel"]) == ("kernel", "_sparse_mm")
    assert data["SparseCsrCPU"]["kernel"] == "_sparse_csr_mm"
    assert main(["dispatch", "aten::int_repr"]) == 0
    out = capsys.readouterr().out
    blocks = {b.split("\n")[0]: b for b in out.split("\n\n")[1:]}
    assert "kernel  int_repr_quantized_cpu (registered for QuantizedCPU)" in blocks["QuantizedCPU"]


def test_calls_on_layout_inputs_trace_their_layout_key() -> None:
    import pyaten

    sparse = pyaten.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    csr = pyaten.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse_csr()
    quantized = pyaten.quantize_per_tensor(pyaten.ones(2), 0.1, 0, pyaten.quint8)
    nested = pyaten.nested.nested_tensor([pyaten.ones(2, 3), pyaten.ones(4, 3)])
    cases = [
        (lambda: sparse.neg(), "SparseCPU", "layout=pyaten.sparse_coo"),
        (lambda: csr.values(), "SparseCsrCPU", "layout=pyaten.sparse_csr"),
        (lambda: quantized.int_repr(), "QuantizedCPU", "dtype=pyaten.quint8"),
        (lambda: nested.sin(), "NestedTensorCPU", "shape=[2, -1, 3]"),
    ]
    for call, key, described in cases:
        with pd.trace() as t:
            call()
        (root,) = t.as_dicts()
        assert key in root["keyset"]
        assert [c["key"] for c in root["children"]] == [key]
        with pyaten.explain() as ex:
            call()
        text = " ".join(str(ex).split())
        assert described in text and f"-> {key} [kernel:" in text
