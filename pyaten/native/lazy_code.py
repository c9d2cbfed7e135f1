"""Generated modules whose functions and classes are defined on first use.

Note: a generated module's units are defined on first use
    The generated native module is ~7 MB of source (~3,300 functions) and the autograd one
    ~2 MB (~2,700 functions and node classes); unmarshalling and running all of it was about a
    quarter of `import pyaten`, and a program uses a few hundred of them. So the cache keeps
    such a module split (`split`): its module-level statements (imports, tables, constants) as
    one code object, and each top-level `def` or `class` (a *unit*) as its own marshalled code
    object, with the other units it names. Import runs the statements only; the module's
    `__getattr__` (PEP 562) defines a unit, together with every unit it names (transitively),
    when code outside the module first asks for it (`getattr(module, name)`: the loaders'
    bindings and registrations, tests, `inspect`). Code inside the module reads its globals
    directly, never through `__getattr__`, which is why a unit is defined only together with
    everything it may reach; a unit that a module-level statement names is defined with the
    statements, in source order. Each unit is compiled from its own lines of the generated
    file, so tracebacks, `inspect.getsource` and `pyaten codegen show` see the same lines.
    The units' code is mapped from the file (`read`), not read: most of it is never touched.
"""

from __future__ import annotations

import ast
import marshal
import mmap
import os
import threading
from pathlib import Path
from types import CodeType, FunctionType, ModuleType

_UNIT_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LOCK = threading.RLock()
_MAGIC = b"pyaten-split-3\n"

# (module-level code, {unit: (offset, length, names of the units it refers to, stub template
# or None, docstring, first line)}, the units' code)
Split = tuple[CodeType, dict[str, tuple], memoryview]


def _names(nodes: list[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def split(source: str, filename: str) -> bytes:
    """The generated module `source` as the marshalled `Split` that `define` runs."""
    tree = ast.parse(source, filename)
    counts: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, _UNIT_TYPES):
            counts[node.name] = counts.get(node.name, 0) + 1
    # A name defined twice stays in the module-level code (its order decides which wins).
    units: dict[str, list[ast.stmt]] = {}
    owner: dict[int, str] = {}  # statement index -> the unit it belongs to
    for i, node in enumerate(tree.body):
        if isinstance(node, _UNIT_TYPES) and counts[node.name] == 1:
            units[node.name] = [node]
            owner[i] = node.name
        elif _sets_attribute_of(node, units):  # `ag_add.below_mask = X` right after its def
            units[node.targets[0].value.id].append(node)  # type: ignore[attr-defined]
            owner[i] = node.targets[0].value.id  # type: ignore[attr-defined]
    refers = {name: tuple(sorted((_names(nodes) & units.keys()) - {name}))
              for name, nodes in units.items()}
    statements = [node for i, node in enumerate(tree.body) if i not in owner]
    eager = _closure(_names(statements) & units.keys(), refers)
    body = [node for i, node in enumerate(tree.body) if owner.get(i, "") in eager or i not in owner]
    module_code = compile(ast.Module(body=body, type_ignores=[]), filename, "exec")
    index: dict[str, tuple[int, int, tuple[str, ...]]] = {}
    chunks: list[bytes] = []
    offset = 0
    for name, nodes in units.items():
        if name in eager:
            continue
        data = marshal.dumps(compile(ast.Module(body=nodes, type_ignores=[]), filename, "exec"))
        shape = _stub_shape(nodes)
        doc = ast.get_docstring(nodes[0], clean=False) if shape is not None else None
        index[name] = (offset, len(data), refers[name], shape, doc, nodes[0].lineno)
        chunks.append(data)
        offset += len(data)
    head = marshal.dumps((module_code, index))
    return _MAGIC + len(head).to_bytes(8, "little") + head + b"".join(chunks)


def _stub_shape(nodes: list[ast.stmt]) -> int | None:
    # Which template stands for the function before its first call: 0 for `f(*args,
    # **kwargs)`, 1 for `f(self, *args, **kwargs)` (the Python bindings); None: no stub.
    node = nodes[0]
    if len(nodes) != 1 or not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return None
    a = node.args
    if (a.posonlyargs or a.kwonlyargs or a.defaults or a.vararg is None or a.kwarg is None
            or a.vararg.annotation or a.kwarg.annotation or node.returns):
        return None
    if not a.args:
        return 0
    if len(a.args) == 1 and a.args[0].arg == "self" and a.args[0].annotation is None:
        return 1
    return None


def _sets_attribute_of(node: ast.stmt, units: dict[str, list[ast.stmt]]) -> bool:
    # `unit.attr = value` whose value names no unit: defined with the unit it decorates.
    return (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and isinstance(node.targets[0].value, ast.Name)
            and node.targets[0].value.id in units
            and not (_names([node.value]) & units.keys()))


def _closure(names: set[str], refers: dict[str, tuple[str, ...]]) -> set[str]:
    done: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in done:
            done.add(name)
            todo.extend(refers[name])
    return done


def load(data: bytes | mmap.mmap) -> Split:
    """What `split` wrote; the units' code stays in `data` (a file's mmap: read on first use).
    ValueError, EOFError or TypeError when `data` is not that."""
    view = memoryview(data)
    if bytes(view[:len(_MAGIC)]) != _MAGIC:
        raise ValueError("not a split generated module")
    start = len(_MAGIC) + 8
    end = start + int.from_bytes(view[len(_MAGIC):start], "little")
    module_code, index = marshal.loads(view[start:end])
    if not isinstance(module_code, CodeType) or not isinstance(index, dict):
        raise TypeError("not a split generated module")
    return module_code, index, view[end:]


def read(path: Path) -> Split:
    """`load` of the file `path`, mapped rather than read (most units are never used)."""
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            raise ValueError("an empty file")
        return load(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))


def define(module: ModuleType, parts: Split) -> None:
    """Run a `Split` in `module`: its statements now, its units on first use."""
    module_code, index, code = parts
    units = _Units(module, index, code)
    namespace = module.__dict__
    namespace["__getattr__"] = units.get
    namespace["__dir__"] = units.names
    exec(module_code, namespace)  # noqa: S102 - our own generated module


def _free_template(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    return __lazy_call__("<unit>", args, kwargs)  # noqa: F821 - the module's, see _Units


def _method_template(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
    return __lazy_call__("<unit>", (self, *args), kwargs)  # noqa: F821


_TEMPLATES = (_free_template.__code__, _method_template.__code__)


class _Units:
    """A module's units not yet defined: `get` is the module's `__getattr__`.

    A Python binding (`def add(*args, **kwargs)`, `def Tensor_add(self, *args, **kwargs)`)
    asked for from outside is first a stub: the function object, with its name and
    docstring, whose code calls `call`; its first call defines the real function and moves
    its code, defaults and attributes onto the stub, so the object that `pyaten.add` and
    `Tensor.add` hold stays the same."""

    __slots__ = ("_module", "_index", "_code", "_stubs")

    def __init__(self, module: ModuleType, index: dict, code: memoryview) -> None:
        self._module = module
        self._index = index
        self._code = code
        self._stubs: set[str] = set()
        module.__dict__["__lazy_call__"] = self.call

    def get(self, name: str) -> object:
        namespace = self._module.__dict__
        entry = self._index.get(name)
        if entry is None:
            raise AttributeError(f"module {self._module.__name__!r} has no attribute {name!r}")
        with _LOCK:
            if name not in namespace:
                if entry[3] is None:
                    self._define(name)
                else:
                    self._stub(name, entry)
        return namespace[name]

    def call(self, name: str, args: tuple, kwargs: dict) -> object:
        """A stub's first call (later calls run the real code the stub now has)."""
        with _LOCK:
            if name in self._stubs:
                stub = self._module.__dict__[name]
                self._define(name)
                real = self._module.__dict__[name]
                stub.__code__ = real.__code__
                stub.__defaults__ = real.__defaults__
                stub.__kwdefaults__ = real.__kwdefaults__
                stub.__dict__.update(real.__dict__)
                self._module.__dict__[name] = stub
                self._stubs.discard(name)
        return self._module.__dict__[name](*args, **kwargs)

    def _stub(self, name: str, entry: tuple) -> None:
        template = _TEMPLATES[entry[3]]
        code = template.replace(  # where the def is: inspect.getsource reads the real one
            co_name=name, co_qualname=name, co_firstlineno=entry[5],
            co_filename=self._module.__dict__.get("__file__") or template.co_filename,
            co_consts=tuple(name if c == "<unit>" else c for c in template.co_consts),
        )
        stub = FunctionType(code, self._module.__dict__, name)
        stub.__doc__ = entry[4]
        self._module.__dict__[name] = stub
        self._stubs.add(name)

    def _define(self, name: str) -> None:
        namespace = self._module.__dict__
        for unit in self._order(name):
            start, length = self._index[unit][:2]
            unit_code = marshal.loads(self._code[start:start + length])
            exec(unit_code, namespace)  # noqa: S102 - one def/class of the module

    def _order(self, name: str) -> list[str]:
        # The units `name` reaches that are not defined yet, each after those it names (a
        # class's bases and decorators run when it is defined; cycles are cut anywhere).
        namespace = self._module.__dict__
        order: list[str] = []
        seen = {name}  # `name` itself is defined last even when its stub is in the namespace
        stack = [(name, iter(self._index[name][2]))]
        while stack:
            unit, refers = stack[-1]
            for other in refers:
                if other not in seen and other not in namespace:
                    seen.add(other)
                    stack.append((other, iter(self._index[other][2])))
                    break
            else:
                stack.pop()
                order.append(unit)
        return order

    def names(self) -> list[str]:
        return sorted(set(self._module.__dict__) | set(self._index))
