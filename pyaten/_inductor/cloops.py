"""Fused loops compiled by the C compiler into one shared library per graph, cached on disk.

Note: why C beside Numba
    A Numba loop costs a new process Numba's import and the loading of its cached machine
    code on the first call: about a second, however small the graph. Where a C compiler is
    on the PATH (`CC`, else `cc`), the fused groups of a graph are written as C functions
    instead: each member's scalar expression (lowering.py, Python syntax) is translated to C
    through Python's `ast`, the graph's loops go into one source file named by the hash of
    its text (and of the compiler, its flags and the CPU's features, since the code is built
    for this CPU), compiled once into `<cache dir>/cloops/g_<hash>.so`, and loaded by ctypes
    in well under a millisecond by any later process. The loop is the Numba loop's: the
    arrays seen as 2-d (rows, last dim), inputs read through their strides (a broadcast
    input has a zero stride), outputs contiguous, float32 arithmetic kept in float32 (C
    does not widen float operands), a trailing sum or mean accumulated in double. No
    fast-math: the compiler keeps IEEE results; only `errno` and floating-point traps are
    given up, without which `sqrt` and the selects of `relu`/`maximum` block vectorizing
    (a 10-operator chain runs 20x slower). `PYATEN_NO_CC=1` (or no compiler) leaves the
    loops to Numba.

Note: arrays passed as objects
    Asking NumPy for an array's address (`array.ctypes.data`) costs microseconds, more than
    a small loop itself. So each C function has a twin, `<name>_py`, that takes the NumPy
    arrays themselves (ctypes `py_object`, a pointer) and reads each one's data pointer from
    the array object, whose C layout NumPy keeps stable for compiled extensions
    (`PyArrayObject_fields`: the object header, then `char *data`). The offset of that field
    is measured once in this process on a probe array (`_data_offset`) and written into the
    source; where it cannot be found, no C loop is used (Numba takes the loops).
"""

from __future__ import annotations

import ast
import ctypes
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import numpy as np

from pyaten.fx.node import Node

from .lowering import expression
from .scheduler import FusedGroup

__all__ = ["available", "c_expression", "group_c_source", "load_library", "load_loops",
           "pool_sources"]

_FLAGS = ("-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fPIC", "-shared",
          "-std=c99")
_STATE: dict[str, Any] = {}
_HEADER = "#include <math.h>\n#include <stdint.h>\n"
# an array object's data pointer (Note: arrays passed as objects); {offset} in bytes
_DATA = "#define DATA(o) ((void *)*(char *const *)((const char *)(o) + {offset}))\n"
_LIBRARIES: dict[str, Any] = {}  # loaded libraries of this process, by hash

# math functions: the double name; float32 adds the `f` suffix
_FUNCTIONS = {"exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p", "sqrt": "sqrt",
              "erf": "erf", "abs": "fabs", "_tanh": "tanh", "tanh": "tanh", "sin": "sin",
              "cos": "cos"}
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_COMPARE = {ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!="}


def _compiler() -> str | None:
    if os.environ.get("PYATEN_NO_CC"):
        return None
    name = os.environ.get("CC", "cc")
    if name not in _STATE:
        _STATE[name] = shutil.which(name)
    return _STATE[name]


def available() -> bool:
    """Whether fused loops can be built by a C compiler (Note: why C beside Numba)."""
    return _compiler() is not None and _data_offset() is not None


def _data_offset() -> int | None:
    """Where an ndarray object holds its data pointer (Note: arrays passed as objects)."""
    if "offset" not in _STATE:
        probe = np.empty(3)
        found = None
        for offset in range(8, 8 * 8, 8):
            if ctypes.c_void_p.from_address(id(probe) + offset).value == probe.ctypes.data:
                found = offset
                break
        _STATE["offset"] = found
    return _STATE["offset"]


def header() -> str:
    """The includes and the `DATA(array)` macro every library source starts with."""
    return _HEADER + _DATA.format(offset=_data_offset())


def object_twin(prototype: str) -> str:
    """The `<name>_py` twin of a C function (Note: arrays passed as objects): the same
    parameters with every pointer an array object, calling the function on their data."""
    head, params = prototype.split("(", 1)
    name = head.split()[-1]
    typed, passed = [], []
    for param in params.rstrip(") {").split(","):
        words = param.replace("*", " * ").split()
        if "*" in words:
            typed.append(f"const void *{words[-1]}")
            passed.append(f"DATA({words[-1]})")
        else:
            typed.append(" ".join(words))
            passed.append(words[-1])
    return (f"void {name}_py({', '.join(typed)}) {{\n"
            f"    {name}({', '.join(passed)});\n}}\n")


def _machine_key() -> str:
    """The compiler and the CPU's feature flags: `-march=native` code runs only there."""
    if "machine" not in _STATE:
        flags = ""
        try:
            with open("/proc/cpuinfo") as cpuinfo:
                flags = next((line for line in cpuinfo if line.startswith("flags")), "")
        except OSError:
            pass
        _STATE["machine"] = f"{_compiler()} {' '.join(_FLAGS)} {flags}"
    return _STATE["machine"]


def c_expression(text: str, f32: bool) -> str:
    """A Python scalar expression from lowering.py written in C (float32 literals and
    functions when `f32`)."""
    return _emit(ast.parse(text, mode="eval").body, f32)


def _emit(node: ast.AST, f32: bool) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
            not isinstance(node.value, bool):
        text = repr(float(node.value))
        return f"{text}f" if f32 else text
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "math" and node.attr in ("inf", "nan"):
        value = "INFINITY" if node.attr == "inf" else "NAN"
        return value if f32 else f"((double){value})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"(-{_emit(node.operand, f32)})"
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return f"({_emit(node.left, f32)} {_BINARY[type(node.op)]} {_emit(node.right, f32)})"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return f"pow{'f' if f32 else ''}({_emit(node.left, f32)}, {_emit(node.right, f32)})"
    if isinstance(node, ast.IfExp):
        return (f"({_emit(node.test, f32)} ? {_emit(node.body, f32)} : "
                f"{_emit(node.orelse, f32)})")
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        return (f"({_emit(node.left, f32)} {_COMPARE[type(node.ops[0])]} "
                f"{_emit(node.comparators[0], f32)})")
    if isinstance(node, ast.BoolOp):
        # `|` and `&`, not `||` and `&&`: no branch, so the loop vectorizes
        joint = " | " if isinstance(node.op, ast.Or) else " & "
        return "(" + joint.join(_emit(v, f32) for v in node.values) + ")"
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "f32":
            return f"((float){_emit(node.args[0], f32)})"
        if name in _FUNCTIONS:
            return f"{_FUNCTIONS[name]}{'f' if f32 else ''}({_emit(node.args[0], f32)})"
    raise NotImplementedError(f"pyaten._inductor: no C for {ast.dump(node)}")


def group_c_source(group: FusedGroup, name: str) -> str:
    """One C function for the group's loop: `name(n0, n1, in0, in0_s0, in0_s1, ..., out0,
    ..., red0)`, the strides of the inputs in elements."""
    f32 = group.dtype.name == "float32"
    scalar = "float" if f32 else "double"
    names: dict[Node, str] = {}
    params = ["int64_t n0", "int64_t n1"]
    body = []
    for i, node in enumerate(group.inputs):
        names[node] = f"in{i}_v"
        params += [f"const {scalar} *restrict in{i}", f"int64_t in{i}_s0", f"int64_t in{i}_s1"]
        body.append(f"{scalar} in{i}_v = in{i}[i * in{i}_s0 + j * in{i}_s1];")
    for i, node in enumerate(group.members):
        args = [names[a] if isinstance(a, Node) else a for a in node.args]
        text = expression(node.target, args, dict(node.kwargs))
        assert text is not None
        body.append(f"{scalar} t{i} = ({scalar}){c_expression(text, f32)};  /* {node.name} */")
        names[node] = f"t{i}"
    for i, node in enumerate(group.outputs):
        params.append(f"{scalar} *restrict out{i}")
        body.append(f"out{i}[i * n1 + j] = {names[node]};")
    reduce = group.reduction is not None
    if reduce:
        params.append(f"{scalar} *restrict red0")
        reduced = names[group.reduced]
        body.append(f"red0[j] = i ? red0[j] + {reduced} : {reduced};" if group.reduce_rows
                    else f"acc += (double){reduced};")
    lines = [f"/* {', '.join(n.name for n in group.members)}"
             f"{', ' + group.reduction.name if reduce else ''} */",
             f"void {name}({', '.join(params)}) {{"]
    if reduce and group.reduce_all:
        lines.append("    double acc = 0.0;")
    rows = reduce and not group.reduce_all and not group.reduce_rows  # one result per row
    lines.append("    for (int64_t i = 0; i < n0; i++) {")
    if rows:
        lines.append("        double acc = 0.0;")
    lines.append("        for (int64_t j = 0; j < n1; j++) {")
    lines += [f"            {line}" for line in body]
    lines.append("        }")
    if rows:
        lines.append(f"        red0[i] = ({scalar})(acc{' / n1' if group.mean else ''});")
    lines.append("    }")
    if reduce and group.reduce_all:
        lines.append(f"    red0[0] = ({scalar})(acc{' / (n0 * n1)' if group.mean else ''});")
    lines.append("}")
    return "\n".join(lines) + "\n" + object_twin(lines[1])


def load_loops(groups: list[FusedGroup], folder: Any, pools: list[tuple] = (),
               extra: list[str] = ()) -> tuple[list[Callable[..., Any]], str, Any]:
    """Each group's loop as a callable `kernel(n0, n1, *arrays)` (the Numba loop's
    signature), from the graph's one shared library, built or found in `folder`, which also
    holds the max-pool kernels `pools` names (functions `p<i>`, see `pool_sources`) and the
    `extra` functions' source; the library's source; the library."""
    bodies = [group_c_source(g, f"k{i}") for i, g in enumerate(groups)]
    source = "\n".join([header(), *bodies, *_pool_bodies(pools), *extra])
    library = load_library(source, folder)
    kernels = []
    for i, group in enumerate(groups):
        fn = getattr(library, f"k{i}_py")
        n_in = len(group.inputs)
        n_ptr = len(group.outputs) + (group.reduction is not None)
        fn.argtypes = [ctypes.c_int64] * 2 + [ctypes.py_object, ctypes.c_int64,
                                              ctypes.c_int64] * n_in + [ctypes.py_object] * n_ptr
        fn.restype = None
        kernels.append(_caller(fn, n_in))
    return kernels, source, library


def _build(source: str, folder: Any, key: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"g_{key}.{os.getpid()}"
    c_file = stem.with_suffix(".c")
    c_file.write_text(source)
    so_file = stem.with_suffix(".so")
    try:
        done = subprocess.run([_compiler(), *_FLAGS, "-o", str(so_file), str(c_file), "-lm"],
                              capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired as error:
        raise RuntimeError("pyaten._inductor: the C compiler timed out") from error
    if done.returncode != 0:
        raise RuntimeError(f"pyaten._inductor: the C compiler failed: {done.stderr[-2000:]}")
    os.replace(c_file, folder / f"g_{key}.c")  # kept beside the library, for reading
    os.replace(so_file, folder / f"g_{key}.so")


def _caller(fn: Any, n_in: int) -> Callable[..., Any]:
    def kernel(n0: int, n1: int, *arrays: Any) -> None:
        args: list[Any] = [n0, n1]
        for array in arrays[:n_in]:
            step = array.itemsize
            stride0, stride1 = array.strides
            args += [array, stride0 // step, stride1 // step]
        fn(*args, *arrays[n_in:])

    return kernel


# -- kernels written for one operator's fixed arguments -------------------------------------------
#
# A 2-d max pool with its indices (dilation 1, no ceil_mode) over contiguous NCHW planes, and
# its backward (each output's gradient added at its index): PyTorch's rule per window, rows
# then columns, a value replaces the maximum when greater or NaN, the start index when nothing
# does. The window's geometry is baked in as constants.

_POOL = """\
void {name}(int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW,
            const {t} *restrict in, {t} *restrict out, int64_t *restrict index) {{
    for (int64_t p = 0; p < planes; p++) {{
        const {t} *plane = in + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++) {{
            int64_t h0 = oh * {sh} - {ph}, h1 = h0 + {kh} < H ? h0 + {kh} : H;
            h0 = h0 < 0 ? 0 : h0;
            for (int64_t ow = 0; ow < OW; ow++) {{
                int64_t w0 = ow * {sw} - {pw}, w1 = w0 + {kw} < W ? w0 + {kw} : W;
                w0 = w0 < 0 ? 0 : w0;{unpadded}
                int64_t best = h0 * W + w0;
                {t} top = -INFINITY;
                for (int64_t h = h0; h < h1; h++) {{
                    for (int64_t w = w0; w < w1; w++) {{
                        {t} v = plane[h * W + w];
                        int take = (v > top) | (v != v);  /* no branch: random data */
                        top = take ? v : top;
                        best = take ? h * W + w : best;
                    }}
                }}
                out[(p * OH + oh) * OW + ow] = top;
                index[(p * OH + oh) * OW + ow] = best;
            }}
        }}
    }}
}}
"""

_POOL_BACKWARD = """\
void {name}(int64_t planes, int64_t HW, int64_t OHW, const {t} *restrict grad,
            const int64_t *restrict index, {t} *restrict out) {{
    for (int64_t i = 0; i < planes * HW; i++) out[i] = 0;
    for (int64_t p = 0; p < planes; p++) {{
        for (int64_t o = 0; o < OHW; o++) out[p * HW + index[p * OHW + o]] += grad[p * OHW + o];
    }}
}}
"""


def pool_sources(specs: list[tuple]) -> str:
    """The library source of the pools `specs` name: (kind, dtype name, kernel, stride,
    padding), kind "pool" or "pool_backward"; function `p<i>` for the i-th."""
    return "\n".join([header(), *_pool_bodies(specs)])


def _pool_bodies(specs: list[tuple]) -> list[str]:
    parts = []
    for i, (kind, dtype, kernel, stride, padding) in enumerate(specs):
        scalar = "float" if dtype == "float32" else "double"
        template = _POOL if kind == "pool" else _POOL_BACKWARD
        # unpadded (and floor mode), every window lies inside the plane: constant bounds,
        # so the compiler unrolls the window
        unpadded = f"\n                h1 = h0 + {kernel[0]}; w1 = w0 + {kernel[1]};" \
            if tuple(padding) == (0, 0) else ""
        body = template.format(name=f"p{i}", t=scalar, kh=kernel[0], kw=kernel[1],
                               sh=stride[0], sw=stride[1], ph=padding[0], pw=padding[1],
                               unpadded=unpadded)
        prototype = body[:body.index("{")].replace("\n", " ")
        parts.append(body + object_twin(prototype))
    return parts


def load_library(source: str, folder: Any) -> Any:
    """The shared library of `source`, built once into `folder` (Note: why C beside Numba)."""
    key = hashlib.sha1((_machine_key() + source).encode()).hexdigest()[:20]
    library = _LIBRARIES.get(key)
    if library is None:
        path = folder / f"g_{key}.so"
        if not path.exists():
            _build(source, folder, key)
        library = ctypes.CDLL(str(path))
        _LIBRARIES[key] = library
    return library
