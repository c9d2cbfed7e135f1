"""Generated modules split into units defined on first use (pyaten/native/lazy_code.py), and
kernel registrations deferred to an operator's first use (registry.defer_kernels)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
import traceback
from types import ModuleType

import pytest

from pyaten.dispatch import registry
from pyaten.dispatch.keys import parse_dispatch_key
from pyaten.native import lazy_code

SOURCE = textwrap.dedent('''
    import math

    SCALE = 2

    def helper(x):
        return x * SCALE

    def uses_helper(x):
        return helper(x) + 1

    uses_helper.tag = "kept with its def"

    class Base:
        pass

    class Child(Base):
        def twice(self, x):
            return uses_helper(x) * 2

    def eager_one():
        return math.pi

    TABLE = [eager_one]

    def twice_defined():
        return 1

    def twice_defined():
        return 2

    def fails():
        raise ValueError("from the generated line")

    def binding(*args, **kwargs):
        """binding(Tensor input) -> Tensor"""
        return helper(len(args))

    def Tensor_binding(self, *args, **kwargs):
        return (self, args, kwargs)
''')


def _module(tmp_path, name: str = "lazy_demo") -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(SOURCE)
    data = lazy_code.split(SOURCE, str(path))
    (tmp_path / f"{name}.lazy").write_bytes(data)
    module = ModuleType(name)
    module.__file__ = str(path)
    lazy_code.define(module, lazy_code.read(tmp_path / f"{name}.lazy"))
    return module


def test_statements_run_units_wait(tmp_path) -> None:
    module = _module(tmp_path)
    defined = vars(module)
    assert defined["SCALE"] == 2
    assert "eager_one" in defined and defined["TABLE"] == [defined["eager_one"]]
    assert defined["twice_defined"]() == 2  # defined twice: the module's order decides
    for name in ("helper", "uses_helper", "Base", "Child", "fails"):
        assert name not in defined
    assert {"helper", "uses_helper", "Child", "fails", "binding"} <= set(dir(module))


def test_a_unit_comes_with_what_it_names(tmp_path) -> None:
    module = _module(tmp_path)
    assert module.Child().twice(3) == 14
    defined = vars(module)
    assert {"Child", "Base", "uses_helper", "helper"} <= set(defined)
    assert module.uses_helper.tag == "kept with its def"
    assert issubclass(module.Child, module.Base)
    assert "fails" not in defined


def test_lines_and_source_are_the_generated_files(tmp_path) -> None:
    module = _module(tmp_path)
    line = SOURCE.splitlines().index("def fails():") + 1
    assert module.fails.__code__.co_firstlineno == line
    assert module.fails.__code__.co_filename == module.__file__
    assert inspect.getsource(module.fails).startswith("def fails():")
    with pytest.raises(ValueError) as info:
        module.fails()
    frame = traceback.extract_tb(info.tb)[-1]
    assert (frame.filename, frame.lineno) == (module.__file__, line + 1)


def test_a_binding_is_a_stub_until_its_first_call(tmp_path) -> None:
    module = _module(tmp_path)
    fn = module.binding
    method = module.Tensor_binding
    assert fn.__doc__ == "binding(Tensor input) -> Tensor"
    assert str(inspect.signature(fn)) == "(*args, **kwargs)"
    assert str(inspect.signature(method)) == "(self, *args, **kwargs)"
    assert inspect.getsource(fn).startswith("def binding(*args, **kwargs):")  # the real def
    assert fn.__code__.co_filename == module.__file__
    assert "helper" not in vars(module)  # nothing it needs is defined yet
    fn.__qualname__ = "renamed"  # what the loader does to public functions
    assert fn(1, 2, 3) == 6
    assert module.binding is fn and vars(module)["binding"] is fn  # the same object, now real
    assert "helper" in vars(module)
    assert fn.__qualname__ == "renamed" and fn.__code__.co_filename == module.__file__
    assert fn() == 0
    assert method(1, 2, k=3) == (1, (2,), {"k": 3})


def test_unknown_name_is_an_attribute_error(tmp_path) -> None:
    module = _module(tmp_path)
    with pytest.raises(AttributeError, match="module 'lazy_demo' has no attribute 'nope'"):
        module.nope  # noqa: B018
    assert getattr(module, "nope", None) is None


def test_not_a_split_file(tmp_path) -> None:
    for data in (b"", b"garbage", lazy_code.split(SOURCE, "x.py")[:20]):
        path = tmp_path / "bad.lazy"
        path.write_bytes(data)
        with pytest.raises((ValueError, EOFError, TypeError)):
            lazy_code.read(path)


# --- deferred registrations --------------------------------------------------------------------

def _kernel(tag: str):  # noqa: ANN202
    def kernel(x):  # noqa: ANN001, ANN202
        return tag

    kernel.__name__ = tag
    return kernel


@pytest.fixture
def op():  # noqa: ANN201
    from pyaten.schema import parse

    handles = [registry.define(parse("lazytest::f(Tensor x) -> Tensor"))]
    yield "lazytest::f", handles
    for handle in reversed(handles):
        handle.remove()
    registry._DEFERRED.pop("lazytest::f", None)


def _stack(name: str, key: str) -> list[str]:
    entry = registry.find_operator(name)
    return [k.fn.__name__ for k in entry.kernels.get(parse_dispatch_key(key), [])]


def test_deferred_kernels_come_before_later_ones_at_their_key(op) -> None:
    name, handles = op
    cpu, meta, autocast = (parse_dispatch_key(k) for k in ("CPU", "Meta", "AutocastCPU"))
    ran = []

    def register() -> None:
        ran.append(True)
        handles.append(registry.register_kernel(name, cpu, _kernel("deferred_cpu")))
        handles.append(registry.register_kernel(name, meta, _kernel("deferred_meta")))

    registry.defer_kernels(name, (cpu, meta), register)
    assert not ran
    with registry.batch():  # as import registers (outside a batch the table is rebuilt at once)
        handles.append(registry.register_kernel(name, autocast, _kernel("autocast")))
        assert not ran  # another key: still waiting
    with pytest.warns(UserWarning, match="Overriding a previously registered kernel"):
        registry._override_warned = False
        handles.append(registry.register_kernel(name, cpu, _kernel("later_cpu")))
    assert ran == [True]
    assert _stack(name, "CPU") == ["deferred_cpu", "later_cpu"]
    assert _stack(name, "Meta") == ["deferred_meta"]
    handles.pop().remove()  # the later one: the deferred kernel serves CPU again
    assert _stack(name, "CPU") == ["deferred_cpu"]


def test_reading_the_kernels_runs_every_deferred_registration_in_order(op) -> None:
    name, handles = op
    cpu = parse_dispatch_key("CPU")
    for tag in ("first", "second"):
        registry.defer_kernels(
            name, (cpu,),
            lambda tag=tag: handles.append(registry.register_kernel(name, cpu, _kernel(tag))),
        )
    assert registry._DEFERRED[name]
    registry._override_warned = True  # the second deferred kernel overrides the first
    assert _stack(name, "CPU") == ["first", "second"]
    assert name not in registry._DEFERRED


def test_deferred_and_eager_tables_are_equal(op) -> None:
    from pyaten.dispatch import dump_table

    name, handles = op
    cpu, autograd = parse_dispatch_key("CPU"), parse_dispatch_key("Autograd")
    eager = [registry.register_kernel(name, cpu, _kernel("k_cpu")),
             registry.register_kernel(name, autograd, _kernel("k_autograd"))]
    want = dump_table(name)
    for handle in reversed(eager):
        handle.remove()
    registry.defer_kernels(
        name, (cpu, autograd),
        lambda: handles.extend([registry.register_kernel(name, cpu, _kernel("k_cpu")),
                                registry.register_kernel(name, autograd, _kernel("k_autograd"))]),
    )
    assert dump_table(name) == want


def test_import_defers_registrations_and_units() -> None:
    # After `import pyaten` most operators still wait; calling one registers its kernels
    # and defines the generated functions it needs, and autograd works through them.
    code = textwrap.dedent('''
        import json, sys, pyaten
        from pyaten.dispatch import registry, dump_table
        native = sys.modules["pyaten._generated.native_functions"]
        autograd = sys.modules["pyaten._generated.autograd"]
        before = {
            "waiting": "aten::atan2" in registry._DEFERRED,
            "wrapper": "wrapper_CPU_atan2" in vars(native),
            "backward": "Atan2Backward0" in vars(autograd),
        }
        a = pyaten.tensor([1.0, 2.0], requires_grad=True)
        pyaten.atan2(a, pyaten.tensor([3.0, 4.0])).sum().backward()
        after = {
            "waiting": "aten::atan2" in registry._DEFERRED,
            "wrapper": "wrapper_CPU_atan2" in vars(native),
            "backward": "Atan2Backward0" in vars(autograd),
        }
        print(json.dumps({"before": before, "after": after, "grad": a.grad.tolist(),
                          "cpu": dump_table("aten::atan2")["CPU"]}))
    ''')
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] == {"waiting": True, "wrapper": False, "backward": False}
    assert got["after"] == {"waiting": False, "wrapper": True, "backward": True}
    assert got["grad"] == pytest.approx([3 / 10, 4 / 20])
    assert got["cpu"] == "CPU"
