"""Reading a checkpoint's pickle: the `weights_only` unpickler and its allow-list, and the full
unpickler behind an explicit `weights_only=False`.

Note: why pyaten interprets the pickle itself
    A pickle is a program: `GLOBAL` imports any name, `REDUCE` calls it, `BUILD` sets any
    attribute. Restricting `find_class` of Python's unpickler is not enough, because `BUILD`
    still sets the fields of the objects it is given (a tensor's sizes, say). So, as PyTorch
    does, the `weights_only` path interprets the opcodes itself: a global is looked up in the
    allow-list (PyTorch's names, mapped to pyaten's objects, plus what `add_safe_globals`
    added) and refused otherwise, naming it; only allowed callables are called; `BUILD` only
    touches allowed types; persistent ids name storages and nothing else. The loop never
    allocates more than the bytes it has read account for: lengths are checked against what
    is left of the pickle before reading, and the containers it builds grow one opcode at a
    time, so a crafted file is refused or loaded in memory proportional to its size.
"""

from __future__ import annotations

import io
import pickle
import struct
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from typing import IO, Any

from pyaten.serialization import torch_names

__all__ = [
    "FullUnpickler", "WeightsUnpickler", "add_safe_globals", "clear_safe_globals",
    "get_safe_globals", "safe_globals",
]

UnpicklingError = pickle.UnpicklingError

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_lock = threading.Lock()
_user_globals: set = set()


def add_safe_globals(safe_globals: Iterable[object]) -> None:
    """Allow the given globals (classes, functions, or `(obj, "module.name")` pairs) in
    `weights_only` loading, as `torch.serialization.add_safe_globals`."""
    items = list(safe_globals)
    for item in items:
        _check_entry(item)
    with _lock:
        _user_globals.update(items)


def get_safe_globals() -> list:
    """The globals `add_safe_globals` allowed."""
    with _lock:
        return list(_user_globals)


def clear_safe_globals() -> None:
    """Forget every global `add_safe_globals` allowed."""
    with _lock:
        _user_globals.clear()


class safe_globals:  # noqa: N801 - named as torch.serialization.safe_globals
    """Allow globals for `weights_only` loading inside a `with` block."""

    def __init__(self, safe_globals: Iterable[object]) -> None:
        self.safe_globals = list(safe_globals)
        for item in self.safe_globals:
            _check_entry(item)

    def __enter__(self) -> None:
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _user_globals.difference_update(self.safe_globals)


def _check_entry(item: object) -> None:
    if isinstance(item, tuple):
        if len(item) != 2:
            raise ValueError(
                "Expected tuple of length 2 (global, str of callable full path), but got tuple "
                f"of length: {len(item)}"
            )
        if type(item[1]) is not str:
            raise TypeError(
                "Expected second item in tuple to be str of callable full path, but got: "
                f"{type(item[1])}"
            )


def _user_allowed() -> dict[str, object]:
    allowed: dict[str, object] = {}
    with _lock:
        entries = list(_user_globals)
    for entry in entries:
        if isinstance(entry, tuple):
            allowed[entry[1]] = entry[0]
            continue
        module = getattr(entry, "__module__", None)
        name = getattr(entry, "__qualname__", None) or getattr(entry, "__name__", None)
        if module and name:
            allowed[f"{module}.{name}"] = entry
            written = torch_names.global_name(entry)
            if written is not None:  # a pyaten class also answers to its PyTorch name
                allowed[f"{written[0]}.{written[1]}"] = entry
    return allowed


def _display(full_path: str) -> str:
    if full_path.startswith("builtins."):
        return full_path[len("builtins."):]
    return full_path


def refused_global(full_path: str) -> UnpicklingError:
    module = full_path.rpartition(".")[0]
    if module.split(".")[0] in _BLOCKED_MODULES:
        return UnpicklingError(
            f"Trying to load unsupported GLOBAL {full_path} whose module {module} is blocked."
        )
    shown = _display(full_path)
    return UnpicklingError(
        f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
        f"`pyaten.serialization.add_safe_globals([{shown}])` or the "
        f"`pyaten.serialization.safe_globals([{shown}])` context manager to allowlist this "
        "global if you trust this class/function."
    )


# --- the weights_only interpreter -----------------------------------------------------------

_MARK = object()


class WeightsUnpickler:
    """Interprets a pickle's opcodes with PyTorch's `weights_only` rules; `persistent_load`
    receives each storage's persistent id."""

    def __init__(self, source: bytes | memoryview | IO[bytes],
                 persistent_load: Callable[[object], object], encoding: str = "utf-8",
                 end: int | None = None) -> None:
        if isinstance(source, (bytes, bytearray, memoryview)):
            self.data: memoryview | None = memoryview(source)
            self.handle = None
            self.position, self.end = 0, len(self.data)
        else:  # a seekable file read up to `end` (its size), never past it
            self.data, self.handle = None, source
            self.position, self.end = source.tell(), end
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.user_allowed = _user_allowed()
        self.allowed_ids = {id(v) for v in self.user_allowed.values()}

    def _take(self, n: int) -> memoryview | bytes:
        start = self.position
        if n < 0 or start + n > self.end:
            raise UnpicklingError("pickle data was truncated")
        self.position = start + n
        if self.data is not None:
            return self.data[start : start + n]
        got = self.handle.read(n)
        if len(got) != n:
            raise UnpicklingError("pickle data was truncated")
        return got

    def _line(self) -> str:
        text = b""
        while not text.endswith(b"\n"):
            if len(text) > 512:
                raise UnpicklingError("a GLOBAL name is not terminated within 512 bytes")
            text += bytes(self._take(1))
        return text[:-1].decode("utf-8", "strict")

    def _find(self, module: str, name: str) -> object:
        full_path = f"{module}.{name}"
        if module.split(".")[0] in _BLOCKED_MODULES:
            raise refused_global(full_path)
        found = torch_names.ALLOWED_GLOBALS.get(full_path)
        if found is None:
            found = self.user_allowed.get(full_path)
        if found is None and module.startswith("torch"):
            # a pyaten object allowed under its own name answers to PyTorch's too
            resolved = torch_names.resolve_torch_global(module, name)
            if resolved is not None and id(resolved) in self.allowed_ids:
                found = resolved
        if found is None:
            raise refused_global(full_path)
        return found

    def _allowed(self, obj: object) -> bool:
        return torch_names.is_allowed(obj) or id(obj) in self.allowed_ids

    def load(self) -> Any:
        try:
            return self._run()
        except UnpicklingError:
            raise
        except (IndexError, KeyError, struct.error, UnicodeDecodeError) as error:
            raise UnpicklingError(f"the pickle is malformed ({type(error).__name__}: {error})"
                                  ) from None
        except (TypeError, ValueError, OverflowError, RecursionError) as error:
            raise UnpicklingError(f"the pickle is malformed ({error})") from None

    def _run(self) -> Any:  # noqa: C901 - one branch per opcode, as pickle's own loop
        stack: list = []
        metastack: list = []
        memo: dict[int, object] = {}
        take = self._take
        unpack = struct.unpack
        while True:
            op = take(1)[0]
            if op == 0x80:  # PROTO
                take(1)
            elif op == 0x95:  # FRAME
                take(8)
            elif op == 0x2E:  # STOP
                if len(stack) != 1 or metastack:
                    raise UnpicklingError("the pickle ends with an unbalanced stack")
                return stack[0]
            elif op == 0x28:  # MARK
                metastack.append(stack)
                stack = []
            elif op == 0x30:  # POP
                stack.pop()
            elif op == 0x31:  # POP_MARK
                stack = metastack.pop()
            elif op == 0x32:  # DUP
                stack.append(stack[-1])
            elif op == 0x4E:  # NONE
                stack.append(None)
            elif op == 0x88:  # NEWTRUE
                stack.append(True)
            elif op == 0x89:  # NEWFALSE
                stack.append(False)
            elif op == 0x4A:  # BININT
                stack.append(unpack("<i", take(4))[0])
            elif op == 0x4B:  # BININT1
                stack.append(take(1)[0])
            elif op == 0x4D:  # BININT2
                stack.append(unpack("<H", take(2))[0])
            elif op == 0x8A:  # LONG1
                stack.append(pickle.decode_long(bytes(take(take(1)[0]))))
            elif op == 0x8B:  # LONG4
                n = unpack("<i", take(4))[0]
                if n > 4096:
                    raise UnpicklingError(f"a LONG4 integer of {n} bytes is too long")
                stack.append(pickle.decode_long(bytes(take(n))))
            elif op == 0x47:  # BINFLOAT
                stack.append(unpack(">d", take(8))[0])
            elif op == 0x58:  # BINUNICODE
                stack.append(str(take(unpack("<I", take(4))[0]), "utf-8", "surrogatepass"))
            elif op == 0x8C:  # SHORT_BINUNICODE
                stack.append(str(take(take(1)[0]), "utf-8", "surrogatepass"))
            elif op == 0x8D:  # BINUNICODE8
                stack.append(str(take(unpack("<Q", take(8))[0]), "utf-8", "surrogatepass"))
            elif op in (0x55, 0x54):  # SHORT_BINSTRING, BINSTRING (Python 2 str)
                n = take(1)[0] if op == 0x55 else unpack("<i", take(4))[0]
                raw = bytes(take(n))
                stack.append(raw if self.encoding == "bytes" else raw.decode(self.encoding))
            elif op == 0x43:  # SHORT_BINBYTES
                stack.append(bytes(take(take(1)[0])))
            elif op == 0x42:  # BINBYTES
                stack.append(bytes(take(unpack("<I", take(4))[0])))
            elif op == 0x8E:  # BINBYTES8
                stack.append(bytes(take(unpack("<Q", take(8))[0])))
            elif op == 0x29:  # EMPTY_TUPLE
                stack.append(())
            elif op == 0x74:  # TUPLE
                items = stack
                stack = metastack.pop()
                stack.append(tuple(items))
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x86:  # TUPLE2
                stack[-2:] = [(stack[-2], stack[-1])]
            elif op == 0x87:  # TUPLE3
                stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
            elif op == 0x5D:  # EMPTY_LIST
                stack.append([])
            elif op == 0x61:  # APPEND
                item = stack.pop()
                _check_type(stack[-1], list, "append to")
                stack[-1].append(item)
            elif op == 0x65:  # APPENDS
                items = stack
                stack = metastack.pop()
                _check_type(stack[-1], list, "extend")
                stack[-1].extend(items)
            elif op == 0x7D:  # EMPTY_DICT
                stack.append({})
            elif op == 0x73:  # SETITEM
                value = stack.pop()
                key = stack.pop()
                _check_mapping(stack[-1], "SETITEM")
                stack[-1][key] = value
            elif op == 0x75:  # SETITEMS
                items = stack
                stack = metastack.pop()
                _check_mapping(stack[-1], "SETITEMS")
                if len(items) % 2:
                    raise UnpicklingError("SETITEMS has an odd number of items")
                target = stack[-1]
                for i in range(0, len(items), 2):
                    target[items[i]] = items[i + 1]
            elif op == 0x8F:  # EMPTY_SET
                stack.append(set())
            elif op == 0x90:  # ADDITEMS
                items = stack
                stack = metastack.pop()
                _check_type(stack[-1], set, "add to")
                stack[-1].update(items)
            elif op == 0x91:  # FROZENSET
                items = stack
                stack = metastack.pop()
                stack.append(frozenset(items))
            elif op == 0x63:  # GLOBAL
                module = self._line()
                name = self._line()
                stack.append(self._find(module, name))
            elif op == 0x93:  # STACK_GLOBAL
                name = stack.pop()
                module = stack.pop()
                if type(module) is not str or type(name) is not str:
                    raise UnpicklingError("STACK_GLOBAL needs a module and a name as str")
                stack.append(self._find(module, name))
            elif op == 0x52:  # REDUCE
                args = stack.pop()
                func = stack[-1]
                if not self._allowed(func) or func is torch_names.Tensor:
                    raise UnpicklingError(f"Trying to call reduce for unrecognized function {func}")
                if type(args) is not tuple:
                    raise UnpicklingError("REDUCE's arguments are not a tuple")
                stack[-1] = func(*args)
            elif op == 0x81:  # NEWOBJ
                args = stack.pop()
                cls = stack.pop()
                stack.append(self._new(cls, args))
            elif op == 0x62:  # BUILD
                state = stack.pop()
                self._build(stack[-1], state)
            elif op == 0x51:  # BINPERSID
                pid = stack.pop()
                if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
                    raise UnpicklingError(
                        "Only persistent_load of storage is allowed, but got "
                        f"{type(pid[0] if type(pid) is tuple and pid else pid)}"
                    )
                stack.append(self.persistent_load(pid))
            elif op == 0x68:  # BINGET
                stack.append(memo[take(1)[0]])
            elif op == 0x6A:  # LONG_BINGET
                stack.append(memo[unpack("<I", take(4))[0]])
            elif op == 0x71:  # BINPUT
                memo[take(1)[0]] = stack[-1]
            elif op == 0x72:  # LONG_BINPUT
                memo[unpack("<I", take(4))[0]] = stack[-1]
            elif op == 0x94:  # MEMOIZE
                memo[len(memo)] = stack[-1]
            else:
                raise UnpicklingError(f"Unsupported operand {op}")

    def _new(self, cls: object, args: object) -> object:
        from pyaten.nn.parameter import Parameter

        if type(args) is not tuple:
            raise UnpicklingError("NEWOBJ's arguments are not a tuple")
        if cls is Parameter:
            return Parameter(*args)
        if isinstance(cls, type) and self._allowed(cls) and not torch_names.is_tensor_type(cls):
            return cls.__new__(cls, *args)
        raise UnpicklingError(
            "Can only create new object for nn.Parameter or classes allowlisted via "
            f"`add_safe_globals` but got {cls}"
        )

    def _build(self, inst: object, state: object) -> None:
        kind = type(inst)
        if kind is OrderedDict:
            if not isinstance(state, dict):
                raise UnpicklingError("an OrderedDict's state is not a dict")
            inst.__dict__.update(state)
        elif torch_names.is_tensor_type(kind):
            raise UnpicklingError(f"Can only build Tensor through its rebuild functions, "
                                  f"but got state for {kind}")
        elif id(kind) in self.allowed_ids:
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None and not _is_default_setstate(kind):
                setstate(state)
                return
            slots = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slots = state
            if state:
                inst.__dict__.update(state)
            if slots:
                for key, value in slots.items():
                    setattr(inst, key, value)
        else:
            raise UnpicklingError(
                "Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                f"`add_safe_globals`, but got {kind}"
            )


def _is_default_setstate(kind: type) -> bool:
    return getattr(kind, "__setstate__", None) is getattr(object, "__setstate__", None)


def _check_type(target: object, kind: type, what: str) -> None:
    if type(target) is not kind:
        raise UnpicklingError(f"Can only {what} {kind.__name__}s, but got {type(target)}")


def _check_mapping(target: object, opcode: str) -> None:
    if type(target) not in (dict, OrderedDict, Counter):
        raise UnpicklingError(
            f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, but got "
            f"{type(target)}"
        )


# --- the full unpickler (weights_only=False) ----------------------------------------------------

class FullUnpickler(pickle.Unpickler):
    """Python's unpickler, with PyTorch's names read as pyaten's objects: it runs whatever the
    file says, so it is used only when asked with `weights_only=False`."""

    def __init__(self, data: bytes | memoryview | io.IOBase,
                 persistent_load: Callable[[object], object], **kwargs: Any) -> None:
        stream = io.BytesIO(data) if isinstance(data, (bytes, memoryview)) else data
        super().__init__(stream, **kwargs)
        self._persistent = persistent_load

    def persistent_load(self, pid: object) -> object:
        return self._persistent(pid)

    def find_class(self, module: str, name: str) -> object:
        found = torch_names.resolve_torch_global(module, name)
        if found is not None:
            return found
        return super().find_class(module, name)
