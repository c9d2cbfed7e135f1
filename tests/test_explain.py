"""`pyaten explain` / `pyaten.explain()`: the trees of representative calls, from the JSON form.

Each case is written once as a function of a module (`pyaten` or `torch`) so the same call runs
in both: declarations are checked against torch's registered schemas, dispatch rules against
torch's computed dispatch table, meta's decisions and results against torch's results, and the
explained call's return value against the plain call's.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from _helpers import dtype_name
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten import cli
from pyaten.dispatch import trace
from pyaten.library import Library
from pyaten.native import registry as kernel_registry

REPO = Path(pyaten.__file__).resolve().parent.parent
YAML = REPO / "pyaten" / "native" / "native_functions.yaml"


# -- helpers ---------------------------------------------------------------------------------


def explained(fn, *, depth=None):
    """Run `fn()` under pyaten.explain(): (its value, the explanation as parsed JSON)."""
    with pyaten.explain(depth=depth) as ex:
        value = fn()
    assert ex.internal_error is None
    return value, json.loads(ex.to_json()), ex


def cli_json(expr: str, *options: str) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["explain", expr, "--format", "json", *options])
    return code, json.loads(out.getvalue())


def find_call(data: dict, operator: str) -> dict:
    """The first call of `operator`, searching top-level calls and then nested ones."""
    pending = list(data["calls"])
    while pending:
        call = pending.pop(0)
        if call["operator"] == operator:
            return call
        pending += call["kernel"]["calls"]
    names = [c["operator"] for c in data["calls"]]
    raise AssertionError(f"{operator} not explained; calls: {names}")


def yaml_line(func_prefix: str) -> int:
    """1-based line of `- func: <func_prefix>` in the project's native_functions.yaml."""
    for number, line in enumerate(YAML.read_text().splitlines(), 1):
        if line.startswith(f"- func: {func_prefix}"):
            return number
    raise AssertionError(func_prefix)


def site_of(fn) -> str:
    path = Path(inspect.getsourcefile(fn)).resolve().relative_to(REPO)
    return f"{path}:{fn.__code__.co_firstlineno}"


def torch_rule(operator: str, key: str) -> str:
    """The rule torch's computed dispatch table gives `key` of `operator`."""
    for line in torch._C._dispatch_dump_table(operator).splitlines():
        if line.startswith(f"{key}:"):
            return line.rsplit("[", 1)[1].rstrip("]")
    return "missing"


def torch_keys(t: torch.Tensor) -> list[str]:
    text = str(torch._C._dispatch_keys(t))
    return [k.strip() for k in text[len("DispatchKeySet(") : -1].split(",") if k.strip()]


def dispatcher_slot(operator: str, key: str) -> dict:
    """What pyaten's own table introspection says about one slot (a second source of truth)."""
    return pyaten.dispatch.explain(operator).as_dict()[key]


def same_value(a, b) -> None:
    """The explained call returned exactly what the plain call returns."""
    assert type(a) is type(b)
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    assert a.stride() == b.stride()
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def like_torch(result: dict, t: torch.Tensor) -> None:
    assert result["type"] == "Tensor"
    assert result["shape"] == list(t.shape)
    assert result["dtype"] == str(t.dtype).removeprefix("torch.")
    assert result["strides"] == list(t.stride())


def check_declaration(call: dict, torch_op, declared_by: str | None = None) -> None:
    """The `func:` text equals torch's schema; loc is the line of the YAML entry (of the entry
    whose `autogen:` made it, for `declared_by`)."""
    decl = call["declaration"]
    name = declared_by or call["operator"].split("::")[1]
    assert "aten::" + decl["func"] == str(torch_op._schema)
    assert decl["loc"] == f"pyaten/native/native_functions.yaml:{yaml_line(name + '(')}"


def check_kernel_hop(call: dict, operator: str) -> dict:
    """The last hop: its rule equals torch's for that key, its site equals the table's."""
    hop = call["dispatch"][-1]
    slot = dispatcher_slot(operator, hop["key"])
    assert hop["rule"] == slot["rule"] == torch_rule(operator, hop["key"])
    assert hop["kernel"] == slot["kernel"]
    assert hop["registered_at"] and hop["registered_at"] in slot["registered_at"]
    return hop


# -- the cases ---------------------------------------------------------------------------------


def add_case(m):
    return m.add(m.tensor([[1.5], [-2.0]]), m.tensor([1, 2, 3]), alpha=2)


def test_add_structured_broadcasting_and_scalar():
    plain = add_case(pyaten)
    value, data, _ = explained(lambda: add_case(pyaten))
    expected = add_case(torch)
    same_value(value, plain)
    np.testing.assert_allclose(value.numpy(), expected.numpy())

    call = find_call(data, "aten::add.Tensor")
    check_declaration(call, torch.ops.aten.add.Tensor)
    assert call["declaration"]["structured_delegate"] == "aten::add.out"
    assert call["declaration"]["delegate_dispatch"] == {"CPU": "add_out"}
    binding = call["binding"]
    assert binding["python_name"] == "pyaten.add"
    assert binding["overload"] == "aten::add.Tensor"
    assert binding["arguments"]["alpha"] == "int 2"
    assert binding["arguments"]["other"].startswith("Tensor(shape=[3], dtype=pyaten.int64")

    first = call["dispatch"][0]
    args = torch.tensor([[1.5], [-2.0]]), torch.tensor([1, 2, 3])
    assert [a["name"] for a in first["arguments"]] == ["self", "other"]
    for arg, t in zip(first["arguments"], args):
        assert arg["keys"] == torch_keys(t)
    assert first["tls_included"] == ["BackendSelect", "ADInplaceOrView"]
    assert first["fallthrough_dropped"]
    for key in first["fallthrough_dropped"]:  # torch's table has a fallthrough there too
        (line,) = [x for x in torch._C._dispatch_dump_table("aten::add.Tensor").splitlines()
                   if x.startswith(f"{key}:")]
        assert "fallthrough" in line
    assert [h["key"] for h in call["dispatch"]] == ["AutogradCPU", "CPU"]
    assert call["dispatch"][1]["redispatch"] is True
    hop = check_kernel_hop(call, "aten::add.Tensor")
    assert hop["registered_at"] == site_of(kernel_registry.lookup("add_out"))

    kernel = call["kernel"]
    assert kernel["kind"] == "structured" and kernel["wrapper"] == "functional"
    assert kernel["name"] == "wrapper_CPU_add_Tensor"
    (decided,) = kernel["meta"]["outputs"]
    assert decided["broadcast_shape"] == list(torch.broadcast_shapes((2, 1), (3,)))
    assert decided["common_dtype"] == "pyaten." + dtype_name(torch.result_type(*args))
    assert decided["action"] == "allocated"
    assert kernel["meta"]["function"] == "meta_add_Tensor"
    assert kernel["meta"]["at"] == site_of(kernel_registry.lookup("meta_add_Tensor"))
    assert kernel["impl"]["function"] == "add_out"
    like_torch(call["result"], expected)


def test_inplace_op():
    x, tx = pyaten.ones(2, 3), torch.ones(2, 3)
    _, data, _ = explained(lambda: x.add_(pyaten.tensor([1.0, 2.0, 3.0]), alpha=-1))
    tx.add_(torch.tensor([1.0, 2.0, 3.0]), alpha=-1)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())

    y = pyaten.ones(2, 3)
    returned = y.add_(pyaten.tensor([1.0, 2.0, 3.0]), alpha=-1)
    assert returned is y
    with pyaten.explain():
        z = pyaten.ones(2, 3)
        returned = z.add_(pyaten.tensor([1.0, 2.0, 3.0]), alpha=-1)
    assert returned is z
    same_value(z, y)

    call = find_call(data, "aten::add_.Tensor")
    check_declaration(call, torch.ops.aten.add_.Tensor)
    assert call["binding"]["python_name"] == "Tensor.add_"
    assert call["binding"]["overload"] == "aten::add_.Tensor"
    check_kernel_hop(call, "aten::add_.Tensor")
    kernel = call["kernel"]
    assert (kernel["kind"], kernel["wrapper"]) == ("structured", "inplace")
    assert kernel["meta"]["outputs"][0]["action"] == "checked in place"
    assert kernel["returns"].startswith("'self' itself")
    like_torch(call["result"], tx)
    assert call["result"]["values"].replace(" ", "") == "tensor([[0.,-1.,-2.],[0.,-1.,-2.]])"


def out_case(m, out):
    return m.add(m.ones(2, 1), m.ones(3), out=out)


def test_out_call_that_resizes():
    out, tout = pyaten.empty(0), torch.empty(0)
    value, data, _ = explained(lambda: out_case(pyaten, out))
    assert value is out
    expected = out_case(torch, tout)
    plain_out = pyaten.empty(0)
    same_value(out_case(pyaten, plain_out), value)

    call = find_call(data, "aten::add.out")
    check_declaration(call, torch.ops.aten.add.out)
    assert call["binding"]["overload"] == "aten::add.out"
    assert [a["name"] for a in call["dispatch"][0]["arguments"]] == ["self", "other", "out"]
    check_kernel_hop(call, "aten::add.out")
    kernel = call["kernel"]
    assert (kernel["kind"], kernel["wrapper"]) == ("structured", "out")
    decided = kernel["meta"]["outputs"][0]
    assert decided["action"] == "resized"
    assert decided["sizes"] == list(expected.shape)
    assert kernel["returns"].startswith("'out' itself")
    like_torch(call["result"], expected)


def test_out_resize_warning_is_reported_like_torch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.add(torch.ones(2, 1), torch.ones(3), out=torch.empty(1))
    code, data = cli_json("pyaten.add(pyaten.ones(2, 1), pyaten.ones(3), out=pyaten.empty(1))")
    assert code == 0
    (text,) = data["warnings"]
    assert text.startswith("UserWarning: An output with one or more elements was resized")
    assert str(caught[0].message).split(".")[0] in text
    assert find_call(data, "aten::add.out")["kernel"]["meta"]["outputs"][0]["action"] == "resized"


def test_view_op():
    x, tx = pyaten.ones(2, 3), torch.ones(2, 3)
    value, data, _ = explained(lambda: x.transpose(0, 1))
    expected = tx.transpose(0, 1)
    plain = x.transpose(0, 1)
    same_value(value, plain)
    assert value._storage is x._storage and plain._storage is x._storage

    call = find_call(data, "aten::transpose.int")
    check_declaration(call, torch.ops.aten.transpose.int)
    assert call["binding"]["python_name"] == "Tensor.transpose"
    hop = check_kernel_hop(call, "aten::transpose.int")
    assert hop["key"] == "CPU"
    assert call["kernel"]["returns"].startswith("a view of 'self'")
    like_torch(call["result"], expected)

    _, data, _ = explained(lambda: x.view(3, 2))
    call = find_call(data, "aten::view")
    assert call["binding"]["rejected"] == [
        {"signature": "(pyaten.dtype dtype)",
         "why": "view() takes 1 positional argument but 2 were given"}
    ]
    assert check_kernel_hop(call, "aten::view")["rule"] == "kernel"
    like_torch(call["result"], tx.view(3, 2))


def test_composite_op():
    a, b = pyaten.ones(2, 3), pyaten.ones(3, 4)
    value, data, _ = explained(lambda: pyaten.matmul(a, b))
    expected = torch.matmul(torch.ones(2, 3), torch.ones(3, 4))
    same_value(value, pyaten.matmul(a, b))

    call = find_call(data, "aten::matmul")
    check_declaration(call, torch.ops.aten.matmul.default)
    assert len(call["dispatch"]) == 1
    hop = check_kernel_hop(call, "aten::matmul")
    assert (hop["key"], hop["rule"]) == ("AutogradCPU", "math kernel")
    kernel = call["kernel"]
    assert (kernel["kind"], kernel["composite"]) == ("composite", "CompositeImplicitAutograd")
    assert kernel["registered_at"] == site_of(kernel_registry.lookup("matmul"))
    mm = kernel["calls"][-1]
    assert mm["operator"] == "aten::mm" and mm["binding"] is None
    assert (call["caller"], mm["caller"]) == ("python", "kernel")
    assert mm["kernel"]["kind"] == "structured"
    assert mm["kernel"]["meta"]["outputs"][0]["sizes"] == list(expected.shape)
    like_torch(mm["result"], expected)
    like_torch(call["result"], expected)


def test_factory():
    value, data, _ = explained(lambda: pyaten.zeros(2, 3, dtype=pyaten.int64))
    expected = torch.zeros(2, 3, dtype=torch.int64)
    same_value(value, pyaten.zeros(2, 3, dtype=pyaten.int64))

    call = find_call(data, "aten::zeros")
    check_declaration(call, torch.ops.aten.zeros.default)
    assert call["binding"]["arguments"]["dtype"] == "pyaten.dtype pyaten.int64"
    assert call["dispatch"][0]["arguments"] == []
    hop = check_kernel_hop(call, "aten::zeros")
    # BackendSelect picks the backend from `device` (None: CPU) and redispatches, as in torch
    assert [h["key"] for h in call["dispatch"]][:1] == ["BackendSelect"]
    assert (hop["key"], hop["rule"]) == ("CPU", "default backend kernel")
    kernel = call["kernel"]
    assert (kernel["kind"], kernel["composite"]) == ("composite", "CompositeExplicitAutograd")
    assert [c["operator"] for c in kernel["calls"]] == ["aten::empty.memory_format", "aten::zero_"]
    like_torch(call["result"], expected)


def test_op_defined_at_run_time_through_library():
    lib = Library("explain_t13", "DEF")
    library_line = inspect.currentframe().f_lineno - 1
    lib.define("scale(Tensor x, float s) -> Tensor")

    def scale_cpu(x, s):
        return pyaten.mul(x, s)

    lib.impl("scale", scale_cpu, "CPU")
    try:
        x = pyaten.tensor([1.0, 2.0])
        value, data, _ = explained(lambda: pyaten.ops.explain_t13.scale(x, 3.0))
        same_value(value, pyaten.ops.explain_t13.scale(x, 3.0))
        np.testing.assert_array_equal(value.numpy(), [3.0, 6.0])

        call = find_call(data, "explain_t13::scale")
        decl = call["declaration"]
        here = Path(__file__).resolve().relative_to(REPO)
        assert decl["source"] == "Library"
        assert decl["func"] == "explain_t13::scale(Tensor x, float s) -> Tensor"
        assert decl["loc"] == f"{here}:{library_line}"
        assert list(decl["kernels"]) == ["CPU"]
        assert call["binding"]["overload"] == "explain_t13::scale"
        hop = call["dispatch"][-1]
        slot = dispatcher_slot("explain_t13::scale", "CPU")
        assert (hop["key"], hop["rule"], hop["kernel"]) == ("CPU", "kernel", slot["kernel"])
        assert hop["registered_at"] and hop["registered_at"] in slot["registered_at"]
        assert hop["registered_at"].startswith(str(here))
        kernel = call["kernel"]
        assert kernel["kind"] == "python" and "scale_cpu" in kernel["name"]
        assert [c["operator"] for c in kernel["calls"]] == ["aten::mul.Tensor"]
        like_torch(call["result"], torch.tensor([1.0, 2.0]) * 3.0)
    finally:
        lib.close()


def test_call_failing_for_lack_of_a_kernel():
    tl = torch.library.Library("explain_t13nk", "DEF")
    try:
        tl.define("only_cuda(Tensor x) -> Tensor")
        tl.impl("only_cuda", lambda x: x, "CUDA")
        with pytest.raises(NotImplementedError) as torch_error:
            torch.ops.explain_t13nk.only_cuda(torch.ones(2))
    finally:
        tl._destroy()
    with Library("explain_t13nk", "DEF") as lib:
        lib.define("only_cuda(Tensor x) -> Tensor")
        lib.impl("only_cuda", lambda x: x, "CUDA")
        x = pyaten.ones(2)
        with pytest.raises(NotImplementedError) as ours, pyaten.explain() as ex:
            pyaten.ops.explain_t13nk.only_cuda(x)
        data = json.loads(ex.to_json())
    first_sentence = str(torch_error.value).split(". ")[0]
    assert str(ours.value).startswith(first_sentence)
    assert data["error"]["type"] == "NotImplementedError"
    assert data["error"]["message"] == str(ours.value)
    assert data["error"]["operator"] == "explain_t13nk::only_cuda"
    call = find_call(data, "explain_t13nk::only_cuda")
    assert call["raised_here"] and call["result"] is None
    assert call["error"].startswith("NotImplementedError: Could not run")
    assert [(h["key"], h["rule"]) for h in call["dispatch"]][-1] == ("CPU", "missing")
    kernel = call["kernel"]
    assert kernel["kind"] == "missing"
    assert kernel["missing"]["registered"] == ["CUDA"]
    backends = re.search(r"only available for these backends: \[(.*?)\]", str(ours.value))
    assert kernel["missing"]["available"] == backends.group(1).split(", ")
    fix = "Library('explain_t13nk', 'IMPL').impl('only_cuda', fn, 'CPU')"
    assert kernel["missing"]["fix"] == fix
    assert ex.failing_call().operator == "explain_t13nk::only_cuda"
    assert "<-- raised here" in str(ex)


# -- the command line ------------------------------------------------------------------------


def cli_text(expr: str, *options: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["explain", expr, *options])
    return code, out.getvalue()


@pytest.mark.parametrize("depth", [None, "1", "2"])
def test_the_error_points_at_a_marker_that_is_printed(depth):
    # matmul decomposes into mm, which raises: at --depth 1 the mm call is not printed, so
    # the error must point at the matmul call that is, and name mm as where it started.
    expr = "pyaten.matmul(pyaten.ones(2, 3), pyaten.ones(2, 3))"
    options = ("--depth", depth) if depth else ()
    code, text = cli_text(expr, *options)
    assert code == 1
    footer = " ".join(text.split("\nerror: ")[1].split("\n", 1)[1].split())
    headers = [line for line in text.splitlines() if re.match(r"\s*call \d", line)]
    if depth == "1":
        (marked,) = [h for h in headers if "<--" in h]
        assert marked.startswith("call 3  aten::matmul")
        assert "<-- raised inside (in aten::mm, below --depth)" in marked
        assert "<-- raised here" not in text
        assert footer == (
            "(raised in aten::mm, inside call 3 aten::matmul, marked <-- raised inside above; "
            "a larger --depth shows it)"
        )
    else:
        (marked,) = [h for h in headers if "<--" in h]
        assert marked.strip().startswith("call 3.1  aten::mm") and "<-- raised here" in marked
        assert footer == "(raised in aten::mm, call 3.1, marked <-- raised here above)"
    _, data = cli_json(expr, *options)
    assert data["error"]["operator"] == "aten::mm"
    matmul = find_call(data, "aten::matmul")
    assert matmul["raised_below"] == ("aten::mm" if depth == "1" else None)
    assert not matmul["raised_here"]



def test_cli_text_has_the_five_parts_and_the_value():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["explain", "pyaten.add(pyaten.ones(2, 3), 1.5, alpha=2)"])
    text = out.getvalue()
    assert code == 0
    for part in ("declaration", "binding", "dispatch", "kernel", "result"):
        assert re.search(rf"^\s+{part}\s", text, re.M), part
    assert "other = Tensor(wrapped number 1.5" in text
    value = torch.add(torch.ones(2, 3), 1.5, alpha=2)
    assert text.rstrip().endswith(" ".join(repr(pyaten.from_numpy(value.numpy())).split()))


def test_cli_json_value_matches_plain_call_and_options():
    expr = "x = pyaten.ones(2, 2); x.mul_(3); pyaten.matmul(x, x)"
    code, data = cli_json(expr)
    x = pyaten.ones(2, 2)
    x.mul_(3)
    plain = pyaten.matmul(x, x)
    assert code == 0 and data["expression"] == expr and data["internal_error"] is None
    assert data["value"]["shape"] == list(plain.shape)
    assert data["value"]["values"] == " ".join(repr(plain).split())
    assert [c["operator"] for c in data["calls"]] == ["aten::ones", "aten::mul_.Tensor",
                                                      "aten::matmul"]
    # in-place values are recorded when the call returns, not when the tree is printed
    assert find_call(data, "aten::ones")["result"]["values"] == "tensor([[1., 1.], [1., 1.]])"

    _, shallow = cli_json(expr, "--depth", "1", "--no-values")
    matmul = find_call(shallow, "aten::matmul")
    assert matmul["kernel"]["calls"] == [] and matmul["kernel"]["hidden_calls"] >= 1
    assert "values" not in json.dumps(shallow)


def test_syntax_error_gets_pythons_message():
    expr = "pyaten.add(pyaten.ones(2),"
    try:
        compile(expr, "<EXPR>", "exec")
    except SyntaxError as exc:
        expected = exc
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main(["explain", expr])
    assert code == 2 and out.getvalue() == ""
    assert "Traceback" not in err.getvalue()
    assert err.getvalue().strip().endswith(f"SyntaxError: {expected.msg}")


def test_json_stays_one_document_when_expr_prints():
    code, data = cli_json("print('hello'); pyaten.ones(1)")
    assert code == 0 and data["printed"] == "hello\n"
    assert data["value"]["shape"] == [1]


def test_error_outside_operators_and_state_restored():
    code, data = cli_json("pyaten.ones(2) + undefined_name")
    assert code == 1 and data["error"]["type"] == "NameError"
    assert data["error"]["operator"] is None
    assert not trace.ACTIVE and trace.describe_result is None
    with pytest.raises(ValueError):
        pyaten.explain(depth=0)


# -- property: meta's decisions and results follow torch for any broadcastable pair ----------

_DTYPES = ["float32", "float64", "int64", "int32", "bool"]


@st.composite
def broadcastable(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3))
    other = [draw(st.sampled_from([s, 1])) for s in shape][draw(st.integers(0, len(shape))):]
    return tuple(shape), tuple(other)


@settings(max_examples=25, deadline=None)
@given(broadcastable(), st.sampled_from(_DTYPES), st.sampled_from(_DTYPES), st.booleans())
def test_add_meta_decisions_follow_torch(shapes, dtype_a, dtype_b, swap):
    if dtype_a == dtype_b == "bool":
        dtype_b = "int32"  # bool + bool with alpha 2 is a dtype error in both; not this test
    sa, sb = shapes[::-1] if swap else shapes
    rng = np.random.default_rng(len(sa) * 7 + len(sb))
    na = (rng.integers(-3, 4, size=sa)).astype(dtype_a)
    nb = (rng.integers(-3, 4, size=sb)).astype(dtype_b)
    expected = torch.add(torch.from_numpy(na), torch.from_numpy(nb), alpha=2)
    a, b = pyaten.from_numpy(na), pyaten.from_numpy(nb)
    value, data, _ = explained(lambda: pyaten.add(a, b, alpha=2))
    same_value(value, pyaten.add(a, b, alpha=2))
    call = find_call(data, "aten::add.Tensor")
    decided = call["kernel"]["meta"]["outputs"][0]
    assert decided["broadcast_shape"] == list(expected.shape)
    assert decided["dtype"] == "pyaten." + str(expected.dtype).removeprefix("torch.")
    like_torch(call["result"], expected)
    np.testing.assert_array_equal(value.numpy(), expected.numpy())


def test_error_raised_in_meta_marks_the_call_like_torch():
    with pytest.raises(RuntimeError) as theirs:
        torch.add(torch.ones(2), torch.ones(3))
    a, b = pyaten.ones(2), pyaten.ones(3)
    with pytest.raises(RuntimeError) as ours, pyaten.explain() as ex:
        pyaten.add(a, b)
    assert str(ours.value) == str(theirs.value)
    call = json.loads(ex.to_json())["calls"][-1]
    assert call["operator"] == "aten::add.Tensor" and call["raised_here"]
    assert call["error"] == f"RuntimeError: {theirs.value}"
    kernel = call["kernel"]
    assert (kernel["kind"], kernel["wrapper"], kernel["impl"]) == ("structured", "functional", None)
    assert kernel["meta"]["outputs"] == []
    text = str(ex)
    assert "impl did not run" in text and "<-- raised here" in text


def test_an_explanation_can_be_reused_and_nested():
    ex = pyaten.explain()
    with ex:
        pyaten.ones(2)
    with ex, pyaten.explain() as inner:
        pyaten.zeros(2)
    assert [c.operator for c in ex.calls] == ["aten::zeros"]
    assert [c.operator for c in inner.calls] == ["aten::zeros"]
    assert not trace.ACTIVE and trace.describe_result is None


def test_after_explaining_the_call_path_holds_no_tracing_wrappers():
    a = pyaten.ones(2)
    entry = pyaten.dispatch.get_operator("aten::add.Tensor")
    with pyaten.explain():
        pyaten.add(a, a)
        assert any(getattr(fn, "__name__", "") == "traced" for fn in entry._cache.values())
    pyaten.add(a, a)
    assert entry._cache and all(getattr(fn, "__name__", "") != "traced"
                                for fn in entry._cache.values())


def test_autogen_out_kernel():
    a, out = pyaten.tensor([1.0, 2.0]), pyaten.empty(0)
    value, data, _ = explained(lambda: pyaten.ops.aten.add.Scalar_out(a, 2, alpha=3, out=out))
    tout = torch.empty(0)
    expected = torch.ops.aten.add.Scalar_out(torch.tensor([1.0, 2.0]), 2, alpha=3, out=tout)
    assert value is out
    np.testing.assert_array_equal(value.numpy(), expected.numpy())

    call = find_call(data, "aten::add.Scalar_out")
    check_declaration(call, torch.ops.aten.add.Scalar_out, declared_by="add_.Scalar")
    assert call["declaration"]["autogen_from"] == "aten::add_.Scalar"
    assert call["binding"] is None and call["caller"] == "python"
    check_kernel_hop(call, "aten::add.Scalar_out")
    kernel = call["kernel"]
    assert (kernel["kind"], kernel["composite"]) == ("autogen", "CompositeExplicitAutograd")
    assert kernel["name"] == "autogen_add_Scalar_out"
    assert [c["operator"] for c in kernel["calls"]] == ["aten::add.Scalar"]
    like_torch(call["result"], expected)


def test_user_fallback_and_thread_local_keys_show_nested_redispatches():
    from pyaten.dispatch import DispatchKey, IncludeDispatchKeyGuard, full_after

    key = DispatchKey.TESTING_ONLY_GenericMode
    seen = []

    def logging_fallback(op, keyset, *args):
        seen.append(op.name)
        return op.redispatch(keyset & full_after(key), *args)

    a = pyaten.tensor([1.0, -2.0])
    plain = pyaten.add(a, a)
    registered_line = inspect.currentframe().f_lineno + 1  # a Library's site is its creation
    with Library("_", "IMPL") as lib:
        lib.fallback(logging_fallback, "TESTING_ONLY_GenericMode")
        with IncludeDispatchKeyGuard(key):
            value, data, _ = explained(lambda: pyaten.add(a, a))
    same_value(value, plain)
    assert seen == ["aten::add.Tensor"]
    call = find_call(data, "aten::add.Tensor")
    assert "TESTING_ONLY_GenericMode" in call["dispatch"][0]["tls_included"]
    here = Path(__file__).resolve().relative_to(REPO)
    chain = [(h["key"], h["rule"], h["redispatch"]) for h in call["dispatch"]]
    assert chain == [
        ("TESTING_ONLY_GenericMode", "backend fallback", False),
        ("AutogradCPU", "autograd kernel", True),
        ("CPU", "kernel", True),
    ]
    assert call["dispatch"][0]["kernel"].endswith("logging_fallback")
    assert call["dispatch"][0]["registered_at"] == f"{here}:{registered_line}"
    assert call["kernel"]["wrapper"] == "functional"


# -- table: explaining never changes what a call returns --------------------------------------

TABLE = [
    lambda m: m.ones(2, 3).sum(1),
    lambda m: m.arange(6).reshape(2, 3).mean(dtype=m.float64),
    lambda m: m.cat([m.ones(2), m.zeros(3)]),
    lambda m: m.arange(16).reshape(4, 4)[1:, 2],
    lambda m: m.where(m.arange(3) > 0, m.ones(3), 0.0),
    lambda m: m.ones(2, 3).to(m.float64) * 2,
    lambda m: m.arange(6.0).reshape(2, 3).t().contiguous(),
    lambda m: m.ones(2, 3).clone().copy_(m.arange(3.0)),
    lambda m: m.arange(-3, 3).abs().neg(),
    lambda m: m.full((2,), 3),
    lambda m: m.arange(6.0).reshape(2, 3) @ m.ones(3),
    lambda m: m.div(m.arange(5), 2, rounding_mode="floor"),
    lambda m: m.ones(2, 3).expand(4, 2, 3).permute(2, 0, 1),
    lambda m: m.arange(4.0).unsqueeze(0).squeeze(0).exp(),
]


@pytest.mark.parametrize("case", range(len(TABLE)))
def test_explained_calls_return_what_plain_calls_return(case):
    fn = TABLE[case]
    plain = fn(pyaten)
    with pyaten.dispatch.trace() as plain_trace:
        fn(pyaten)
    value, data, ex = explained(lambda: fn(pyaten))
    same_value(value, plain)
    expected = fn(torch)
    np.testing.assert_allclose(value.numpy(), expected.numpy())
    assert str(value.dtype).removeprefix("pyaten.") == str(expected.dtype).removeprefix("torch.")
    # one explained call per operator call the dispatcher saw, and the last one returned it
    assert [c["operator"] for c in data["calls"]] == [n.operator for n in plain_trace.nodes]
    like_torch(data["calls"][-1]["result"], expected)
    assert all(c["error"] is None for c in data["calls"])


def test_trace_note_next_goes_to_the_next_call_only():
    from pyaten.dispatch import trace as dispatch_trace

    a = pyaten.ones(2)
    with dispatch_trace() as t:
        dispatch_trace.note_next("mine", value=1)
        pyaten.ops.aten.neg.default(a)
        pyaten.ops.aten.neg.default(a)
        dispatch_trace.note_next("dropped")
        dispatch_trace.clear_next()
        pyaten.ops.aten.neg.default(a)
    nodes = t.as_dicts()
    assert [n["kind"] for n in nodes[0]["notes"]][:1] == ["mine"]
    assert nodes[0]["notes"][0]["value"] == 1
    assert all(n["kind"] not in ("mine", "dropped") for node in nodes[1:] for n in node["notes"])
    dispatch_trace.note_next("off")  # tracing off: nothing is kept for a later trace
    with dispatch_trace() as t2:
        pyaten.ops.aten.neg.default(a)
    assert all(n["kind"] != "off" for n in t2.as_dicts()[0]["notes"])
