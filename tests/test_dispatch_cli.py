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
