"""pyaten.profiler against torch.profiler: the events a training step records (operators,
autograd nodes, the optimizer's ranges) and their counts, the table's layout, shapes,
memory columns, schedules and the Chrome trace."""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter

import pytest
import torch
import torch.autograd.profiler
import torch.profiler

import pyaten
import pyaten.autograd.profiler
import pyaten.profiler


def _mlp_step(m, prof_mod, **options):
    """One training step of a small MLP under `m`'s profiler; returns the profiler."""
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Linear(4, 8), m.nn.ReLU(), m.nn.Linear(8, 2))
    opt = m.optim.Adam(model.parameters())
    x, y = m.randn(3, 4), m.randn(3, 2)
    with prof_mod.profile(activities=[prof_mod.ProfilerActivity.CPU], **options) as prof:
        loss = m.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return prof


def _is_autograd(name: str) -> bool:
    return name.startswith("autograd::engine::evaluate_function: ") or name.endswith("Backward0")


def _compared_events(events) -> Counter:
    """The events both libraries make the same way: operators called at the top (by the
    user, the optimizer or an autograd node), the children of the composite aten::linear,
    autograd's evaluate_function/node pairs, and record_function ranges. Below a kernel
    (aten::addmm's expand/copy_ in PyTorch's C++) the implementations differ by design."""
    found = Counter()
    for e in events:
        parent = e.cpu_parent
        if parent is None or parent.name == "aten::linear" or (
            _is_autograd(parent.name) and parent.name != "torch::autograd::AccumulateGrad"
        ):
            found[e.name] += 1
    return found


# The optimizer's update operators (PyTorch's single-tensor Adam; pyaten's divides in place).
ADAM_UPDATE = ("aten::lerp_", "aten::mul_", "aten::addcmul_", "aten::sqrt", "aten::addcdiv_")


def test_training_step_records_pytorchs_events_and_counts() -> None:
    ours = _mlp_step(pyaten, pyaten.profiler)
    theirs = _mlp_step(torch, torch.profiler)
    assert _compared_events(ours.events()) == _compared_events(theirs.events())

    def update_ops(prof):
        step = [e for e in prof.events() if e.name == "Optimizer.step#Adam.step"]
        assert len(step) == 1
        return Counter(c.name for c in step[0].cpu_children if c.name in ADAM_UPDATE)

    assert update_ops(ours) == update_ops(theirs)
    assert update_ops(ours) == Counter({name: 4 for name in ADAM_UPDATE})


def test_linear_forward_and_backward_tree() -> None:
    def tree(m, prof_mod):
        lin = m.nn.Linear(3, 2)
        x = m.ones(5, 3)
        with prof_mod.profile() as prof:
            lin(x).sum().backward()
        out = []
        for e in prof.events():
            if e.cpu_parent is None or _is_autograd(e.cpu_parent.name):
                depth = 0 if e.cpu_parent is None else 1 + (e.cpu_parent.cpu_parent is not None)
                out.append((depth, e.name, [c.name for c in e.cpu_children
                                            if not c.name.startswith("aten::as_strided")]))
        return out

    ours, theirs = tree(pyaten, pyaten.profiler), tree(torch, torch.profiler)
    # linear's children are t and addmm (a composite calls them; redispatches are no events)
    assert ours[0] == theirs[0] == (0, "aten::linear", ["aten::t", "aten::addmm"])
    assert [(d, n) for d, n, _ in ours] == [(d, n) for d, n, _ in theirs]


def test_each_call_is_one_event() -> None:
    a = pyaten.ones(2, 2, requires_grad=True)
    with pyaten.profiler.profile() as prof:
        a + a  # Autograd -> CPU: one call, one event
    names = [e.name for e in prof.events()]
    assert names == ["aten::add"]
    assert prof.events()[0].count == 1


def test_table_layout_matches_pytorch() -> None:
    def table(m, prof_mod, **kw):
        return _mlp_step(m, prof_mod).key_averages().table(**kw)

    for kw in ({"sort_by": "cpu_time_total", "row_limit": 5}, {"sort_by": "count"}, {}):
        ours, theirs = table(pyaten, pyaten.profiler, **kw), table(torch, torch.profiler, **kw)
        o_lines, t_lines = ours.split("\n"), theirs.split("\n")
        assert o_lines[:3] == t_lines[:3]  # separator, header, separator: same widths
        assert o_lines[-3] == t_lines[-3] and o_lines[-1] == t_lines[-1] == ""
        assert re.fullmatch(r"Self CPU time total: [0-9.]+(us|ms|s)", o_lines[-2])
        if "row_limit" in kw:
            assert len(o_lines) == len(t_lines) == 3 + 5 + 3
    ours = _mlp_step(pyaten, pyaten.profiler).key_averages()
    counts = [e.count for e in sorted(ours, key=lambda e: e.count, reverse=True)]
    rows = ours.table(sort_by="count").split("\n")[3:-3]
    assert [int(r.split()[-1]) for r in rows] == counts


def test_record_shapes_and_group_by_input_shape() -> None:
    def shapes(m, prof_mod):
        lin = m.nn.Linear(4, 8)
        with prof_mod.profile(record_shapes=True) as prof:
            lin(m.ones(3, 4))
        by_name = {e.name: e.input_shapes for e in prof.events()}
        table = prof.key_averages(group_by_input_shape=True).table(sort_by="count")
        plain = prof.key_averages().table()
        return by_name, table.split("\n")[1], "Input Shapes" in plain

    (ours, o_header, o_plain), (theirs, t_header, t_plain) = (
        shapes(pyaten, pyaten.profiler), shapes(torch, torch.profiler))
    for name in ("aten::linear", "aten::t", "aten::addmm"):
        assert ours[name] == theirs[name], name
    assert o_header.split() == t_header.split()
    assert o_plain == t_plain is False


def test_profile_memory_columns() -> None:
    def run(m, prof_mod):
        with prof_mod.profile(profile_memory=True) as prof:
            m.zeros(256, 256)  # 256 KB of float32
        return prof.key_averages().table(), prof.key_averages()

    (ours, o_avg), (theirs, _) = run(pyaten, pyaten.profiler), run(torch, torch.profiler)
    assert ours.split("\n")[1].split() == theirs.split("\n")[1].split()
    assert "CPU Mem" in ours and "Self CPU Mem" in ours
    zeros = next(e for e in o_avg if e.key == "aten::zeros")
    assert zeros.cpu_memory_usage == 256 * 256 * 4
    assert "256.00 KB" in ours


def test_record_function_nests_operator_events() -> None:
    for m, prof_mod in ((pyaten, pyaten.profiler), (torch, torch.profiler)):
        with prof_mod.profile() as prof:
            with prof_mod.record_function("my_block"):
                m.ones(2).add(1)
        block = next(e for e in prof.events() if e.name == "my_block")
        assert block.cpu_parent is None
        assert [c.name for c in block.cpu_children][-1] == "aten::add"


def test_legacy_autograd_profiler_and_decorator() -> None:
    @pyaten.autograd.profiler.record_function("decorated")
    def work(x):
        return x * 2

    x = pyaten.ones(3)
    with pyaten.autograd.profiler.profile(record_shapes=True) as prof:
        work(x)
    names = [e.key for e in prof.key_averages()]
    assert names == ["decorated", "aten::mul"]
    assert "Input Shapes" not in prof.key_averages().table()
    assert "Input Shapes" in prof.table()  # the events themselves
    assert prof.self_cpu_time_total > 0
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        pyaten.autograd.profiler.profile().key_averages()


@pytest.mark.parametrize("args", [
    {"wait": 1, "warmup": 1, "active": 2},
    {"wait": 0, "warmup": 1, "active": 1, "repeat": 2},
    {"wait": 2, "warmup": 0, "active": 3, "repeat": 1, "skip_first": 1},
    {"wait": 1, "warmup": 2, "active": 1, "skip_first": 3, "skip_first_wait": 1},
])
def test_schedule_actions_and_trace_ready(args) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours_fn, theirs_fn = pyaten.profiler.schedule(**args), torch.profiler.schedule(**args)
    assert [ours_fn(i).name for i in range(14)] == [theirs_fn(i).name for i in range(14)]

    def run(m, prof_mod, fn):
        ready = []

        def on_ready(prof):
            kept = ("ProfilerStep*", "aten::ones", "aten::add")
            ready.append(sorted(Counter(e.name for e in prof.events() if e.name in kept).items()))

        with prof_mod.profile(schedule=fn, on_trace_ready=on_ready) as prof:
            for _ in range(8):
                m.ones(2).add(1)
                prof.step()
        return ready

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = run(pyaten, pyaten.profiler, ours_fn)
        theirs = run(torch, torch.profiler, theirs_fn)
    assert ours == theirs


def test_schedule_arguments_are_checked() -> None:
    for bad in ({"wait": -1, "warmup": 1, "active": 1}, {"wait": 1, "warmup": 1, "active": 0}):
        with pytest.raises(AssertionError) as ours:
            pyaten.profiler.schedule(**bad)
        with pytest.raises(AssertionError) as theirs:
            torch.profiler.schedule(**bad)
        assert str(ours.value) == str(theirs.value)
    with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
        pyaten.profiler.schedule(wait=0, warmup=0, active=1)


def test_export_chrome_trace(tmp_path) -> None:
    lin = pyaten.nn.Linear(3, 2)
    with pyaten.profiler.profile(record_shapes=True, with_stack=True) as prof:
        lin(pyaten.ones(1, 3)).sum().backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    assert {e["ph"] for e in events} == {"X"}
    assert all(e["dur"] >= 0 and "ts" in e and "tid" in e and "pid" in e for e in events)
    by_name = {e["name"]: e for e in events}
    assert by_name["aten::linear"]["args"]["Input Dims"] == [[1, 3], [2, 3], [2]]
    assert "autograd::engine::evaluate_function: AddmmBackward0" in by_name
    # a child lies inside its parent's interval, as Perfetto nests them
    linear, addmm = by_name["aten::linear"], by_name["aten::addmm"]
    assert linear["ts"] <= addmm["ts"] and addmm["ts"] + addmm["dur"] <= linear["ts"] + linear[
        "dur"] + 1e-3
    assert "test_profiler.py" in by_name["aten::linear"]["args"]["Call stack"]


def test_with_stack_source_column_and_stacks(tmp_path) -> None:
    with pyaten.profiler.profile(with_stack=True) as prof:
        pyaten.ones(2).add(1)
    table = prof.key_averages(group_by_stack_n=2).table()
    assert "Source Location" in table and "test_profiler.py" in table
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path))
    assert any(line.endswith(tuple("0123456789")) for line in path.read_text().splitlines())


def test_nested_profilers_refused_and_hooks_removed() -> None:
    from pyaten.autograd import engine
    from pyaten.dispatch import trace

    with pyaten.profiler.profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with pyaten.profiler.profile():
                pass
    assert engine.node_hook is None and trace._CALL_HOOK is None and not trace.ACTIVE


def test_sort_keys_as_pytorch() -> None:
    for m, prof_mod in ((pyaten, pyaten.profiler), (torch, torch.profiler)):
        with prof_mod.profile() as prof:
            m.ones(2).add(1)
        table = prof.key_averages().table(sort_by="cuda_time_total")  # 0 on the CPU
        assert "aten::add" in table
        with pytest.raises(AttributeError, match="has no attribute 'bogus'"):
            prof.key_averages().table(sort_by="bogus")


def test_tensorboard_trace_handler_writes_gzipped_traces(tmp_path) -> None:
    import gzip

    handler = pyaten.profiler.tensorboard_trace_handler(str(tmp_path), "worker0", use_gzip=True)
    with pyaten.profiler.profile(schedule=pyaten.profiler.schedule(wait=0, warmup=1, active=1),
                                 on_trace_ready=handler) as prof:
        for _ in range(2):
            pyaten.ones(2).add(1)
            prof.step()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 1 and files[0].startswith("worker0.")
    assert files[0].endswith(".pt.trace.json.gz")
    with gzip.open(tmp_path / files[0], "rt") as f:
        names = {e["name"] for e in json.load(f)["traceEvents"]}
    assert {"aten::add", "ProfilerStep#1"} <= names
