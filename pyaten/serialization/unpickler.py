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

import _compat_pickle
import gc
import io
import pickle
import struct
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from pyaten.serialization import torch_names

__all__ = [
    "FullUnpickler", "WeightsUnpickler", "add_safe_globals", "clear_safe_globals",
    "get_safe_globals", "safe_globals",
]

UnpicklingError = pickle.UnpicklingError

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
# PyTorch dtypes (and their storage classes) that pyaten does not have
_MISSING_DTYPES = {
    "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "qint8", "quint8", "qint32",
    "quint4x2", "quint2x4", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
    "QInt8Storage", "QUInt8Storage", "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage",
    *(f"uint{n}" for n in range(1, 8)), *(f"int{n}" for n in range(1, 8)),
}
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
    """Interprets a pickle's opcodes with PyTorch's `weights_only` rules, from `start` in
    `data` (a bytes-like object; `end_position` is where its STOP was); `persistent_load`
    receives each storage's persistent id."""

    def __init__(self, data: bytes | memoryview, persistent_load: Callable[[object], object],
                 encoding: str = "utf-8", start: int = 0) -> None:
        self.data = memoryview(data).cast("B")
        self.start = start
        self.end_position = start
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.user_allowed = _user_allowed()
        self.allowed_ids = {id(v) for v in self.user_allowed.values()}

    def _find(self, module: str, name: str) -> object:
        # protocol 2 writes Python 2's names (`__builtin__.set`); read them as Python 3's
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
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
        if found is None and module == "torch" and name in _MISSING_DTYPES:
            raise RuntimeError(
                f"pyaten.load: the checkpoint holds tensors of dtype torch.{name}, which pyaten "
                "does not have"
            )
        if found is None:
            raise refused_global(full_path)
        return found

    def _allowed(self, obj: object) -> bool:
        return torch_names.is_allowed(obj) or id(obj) in self.allowed_ids

    def load(self) -> Any:
        collecting = gc.isenabled()
        gc.disable()  # the cyclic collector would rescan the growing result on every pass
        try:
            fetched = _scan(self.data, self.start, self._find)
            return self._run(fetched)
        except UnpicklingError:
            raise
        except (IndexError, KeyError, struct.error, UnicodeDecodeError) as error:
            raise UnpicklingError(f"the pickle is malformed ({type(error).__name__}: {error})"
                                  ) from None
        except (TypeError, ValueError, OverflowError, RecursionError, MemoryError) as error:
            raise UnpicklingError(f"the pickle is malformed ({error})") from None
        finally:
            if collecting:
                gc.enable()

    def _run(self, fetched: set[int]) -> Any:  # noqa: C901 - one branch per opcode
        data = self.data
        pos = self.start
        stack: list = []
        metastack: list = []
        memo: dict[int, object] = {}
        memo_count = 0
        unpack_from = struct.unpack_from
        while True:
            op = data[pos]
            pos += 1
            # the opcodes of a tensor record first, the frequent before the rare
            if op == 0x71:  # BINPUT
                index = data[pos]
                pos += 1
                memo_count += 1
                if index in fetched:  # only what is fetched again is kept
                    memo[index] = stack[-1]
            elif op == 0x72:  # LONG_BINPUT
                index = unpack_from("<I", data, pos)[0]
                pos += 4
                memo_count += 1
                if index in fetched:
                    memo[index] = stack[-1]
            elif op == 0x68:  # BINGET
                stack.append(memo[data[pos]])
                pos += 1
            elif op == 0x6A:  # LONG_BINGET
                stack.append(memo[unpack_from("<I", data, pos)[0]])
                pos += 4
            elif op == 0x28:  # MARK
                metastack.append(stack)
                stack = []
            elif op == 0x4B:  # BININT1
                stack.append(data[pos])
                pos += 1
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
            elif op == 0x52:  # REDUCE
                args = stack.pop()
                func = stack[-1]
                if not self._allowed(func) or func is torch_names.Tensor:
                    raise UnpicklingError(f"Trying to call reduce for unrecognized function {func}")
                if type(args) is not tuple:
                    raise UnpicklingError("REDUCE's arguments are not a tuple")
                stack[-1] = func(*args)
            elif op == 0x29:  # EMPTY_TUPLE
                stack.append(())
            elif op == 0x89:  # NEWFALSE
                stack.append(False)
            elif op == 0x88:  # NEWTRUE
                stack.append(True)
            elif op == 0x4E:  # NONE
                stack.append(None)
            elif op == 0x51:  # BINPERSID
                pid = stack.pop()
                if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
                    raise UnpicklingError(
                        "Only persistent_load of storage is allowed, but got "
                        f"{type(pid[0] if type(pid) is tuple and pid else pid)}"
                    )
                stack.append(self.persistent_load(pid))
            elif op == 0x58:  # BINUNICODE
                n = unpack_from("<I", data, pos)[0]
                stack.append(str(_slice(data, pos + 4, n), "utf-8", "surrogatepass"))
                pos += 4 + n
            elif op == 0x8C:  # SHORT_BINUNICODE
                n = data[pos]
                stack.append(str(_slice(data, pos + 1, n), "utf-8", "surrogatepass"))
                pos += 1 + n
            elif op == 0x4A:  # BININT
                stack.append(unpack_from("<i", data, pos)[0])
                pos += 4
            elif op == 0x4D:  # BININT2
                stack.append(unpack_from("<H", data, pos)[0])
                pos += 2
            elif op == 0x47:  # BINFLOAT
                stack.append(unpack_from(">d", data, pos)[0])
                pos += 8
            elif op == 0x7D:  # EMPTY_DICT
                stack.append({})
            elif op == 0x5D:  # EMPTY_LIST
                stack.append([])
            elif op == 0x75:  # SETITEMS
                items = stack
                stack = metastack.pop()
                target = stack[-1]
                _check_mapping(target, "SETITEMS")
                if len(items) % 2:
                    raise UnpicklingError("SETITEMS has an odd number of items")
                for i in range(0, len(items), 2):
                    target[items[i]] = items[i + 1]
            elif op == 0x73:  # SETITEM
                value = stack.pop()
                key = stack.pop()
                _check_mapping(stack[-1], "SETITEM")
                stack[-1][key] = value
            elif op == 0x65:  # APPENDS
                items = stack
                stack = metastack.pop()
                _check_type(stack[-1], list, "extend")
                stack[-1].extend(items)
            elif op == 0x61:  # APPEND
                item = stack.pop()
                _check_type(stack[-1], list, "append to")
                stack[-1].append(item)
            elif op == 0x94:  # MEMOIZE
                if memo_count in fetched:
                    memo[memo_count] = stack[-1]
                memo_count += 1
            elif op == 0x63:  # GLOBAL
                module, pos = _line(data, pos)
                name, pos = _line(data, pos)
                stack.append(self._find(module, name))
            elif op == 0x93:  # STACK_GLOBAL
                name = stack.pop()
                module = stack.pop()
                if type(module) is not str or type(name) is not str:
                    raise UnpicklingError("STACK_GLOBAL needs a module and a name as str")
                stack.append(self._find(module, name))
            elif op == 0x81:  # NEWOBJ
                args = stack.pop()
                cls = stack.pop()
                stack.append(self._new(cls, args))
            elif op == 0x62:  # BUILD
                state = stack.pop()
                self._build(stack[-1], state)
            elif op == 0x8A:  # LONG1
                n = data[pos]
                stack.append(pickle.decode_long(bytes(_slice(data, pos + 1, n))))
                pos += 1 + n
            elif op == 0x8B:  # LONG4
                n = unpack_from("<i", data, pos)[0]
                if not 0 <= n <= 4096:
                    raise UnpicklingError(f"a LONG4 integer of {n} bytes is refused")
                stack.append(pickle.decode_long(bytes(_slice(data, pos + 4, n))))
                pos += 4 + n
            elif op == 0x8D:  # BINUNICODE8
                n = unpack_from("<Q", data, pos)[0]
                stack.append(str(_slice(data, pos + 8, n), "utf-8", "surrogatepass"))
                pos += 8 + n
            elif op in (0x55, 0x54):  # SHORT_BINSTRING, BINSTRING (Python 2 str)
                width = 1 if op == 0x55 else 4
                n = data[pos] if op == 0x55 else unpack_from("<i", data, pos)[0]
                raw = bytes(_slice(data, pos + width, n))
                stack.append(raw if self.encoding == "bytes" else raw.decode(self.encoding))
                pos += width + n
            elif op in (0x43, 0x42, 0x8E):  # SHORT_BINBYTES, BINBYTES, BINBYTES8
                width = {0x43: 1, 0x42: 4, 0x8E: 8}[op]
                n = int.from_bytes(data[pos : pos + width], "little")
                stack.append(bytes(_slice(data, pos + width, n)))
                pos += width + n
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
            elif op == 0x30:  # POP
                stack.pop()
            elif op == 0x31:  # POP_MARK
                stack = metastack.pop()
            elif op == 0x32:  # DUP
                stack.append(stack[-1])
            elif op == 0x80:  # PROTO
                pos += 1
            elif op == 0x95:  # FRAME
                pos += 8
            elif op == 0x2E:  # STOP
                if len(stack) != 1 or metastack:
                    raise UnpicklingError("the pickle ends with an unbalanced stack")
                self.end_position = pos
                return stack[0]
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
        elif id(kind) in self.allowed_ids or kind in torch_names.BUILDABLE:
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


def _slice(data: memoryview, start: int, n: int) -> memoryview:
    """`n` bytes from `start`, refused when the pickle does not hold them."""
    if n < 0 or start + n > len(data):
        raise UnpicklingError("pickle data was truncated")
    return data[start : start + n]


def _line(data: memoryview, pos: int) -> tuple[str, int]:
    """A GLOBAL's newline-terminated name (at most 512 bytes) and the position after it."""
    chunk = bytes(data[pos : pos + 513])
    end = chunk.find(b"\n")
    if end < 0:
        raise UnpicklingError("a GLOBAL name is not terminated within 512 bytes")
    return chunk[:end].decode("utf-8", "strict"), pos + end + 1


# opcode -> bytes of its fixed argument (opcodes without one: 0)
_FIXED = {
    0x80: 1, 0x95: 8, 0x4A: 4, 0x4B: 1, 0x4D: 2, 0x47: 8, 0x71: 1, 0x72: 4,
    **{op: 0 for op in b"(tu\x85\x86\x87R)\x89\x88NQ}]sea\x94\x93\x81b\x8f\x90\x91012"},
}
# opcode -> width of the length that precedes its data
_SIZED = {0x58: 4, 0x8C: 1, 0x8D: 8, 0x55: 1, 0x54: 4, 0x43: 1, 0x42: 4, 0x8E: 8, 0x8A: 1,
          0x8B: 4}


def _scan(data: memoryview, pos: int, find: Callable[[str, str], object]) -> set[int]:
    """The memo indices the pickle from `pos` fetches again (BINGET / LONG_BINGET): the only
    memo entries worth keeping while it is read. Its GLOBALs are checked by `find` on the
    way, so a refused global is reported before anything is built."""
    fetched: set[int] = set()
    size = len(data)
    fixed, sized = _FIXED, _SIZED
    while pos < size:
        op = data[pos]
        pos += 1
        width = fixed.get(op)
        if width is not None:
            pos += width
        elif op == 0x68:  # BINGET
            fetched.add(data[pos])
            pos += 1
        elif op == 0x6A:  # LONG_BINGET
            fetched.add(struct.unpack_from("<I", data, pos)[0])
            pos += 4
        elif op in sized:
            n = sized[op]
            length = int.from_bytes(data[pos : pos + n], "little", signed=op in (0x54, 0x8B))
            if length < 0:
                raise UnpicklingError(f"opcode {op} has a negative length")
            pos += n + length
        elif op == 0x63:  # GLOBAL
            module, pos = _line(data, pos)
            name, pos = _line(data, pos)
            find(module, name)
        elif op == 0x2E:  # STOP
            return fetched
        else:
            raise UnpicklingError(f"Unsupported operand {op}")
    raise UnpicklingError("pickle data was truncated")


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


def unsafe_globals(data: bytes | memoryview) -> list[str]:
    """The globals a pickle names that `weights_only` loading would refuse, in order."""
    checker = WeightsUnpickler(data, lambda pid: None)
    names: list[str] = []

    def collect(module: str, name: str) -> None:
        try:
            checker._find(module, name)
        except (UnpicklingError, RuntimeError):
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
            if f"{module}.{name}" not in names:
                names.append(f"{module}.{name}")

    _scan(checker.data, 0, collect)
    return names


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
        if module == "torch" or module.startswith("torch."):
            # never PyTorch's own object inside a pyaten result
            raise AttributeError(
                f"pyaten.load: the checkpoint names {module}.{name}, which pyaten does not "
                f"have (looked for pyaten{module[len('torch'):]}.{name})"
            )
        return super().find_class(module, name)
