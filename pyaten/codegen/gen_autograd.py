"""derivatives.yaml -> Python source of the autograd nodes and kernels.

`generate(entries, records)` is a pure function from the typed records to module text, as
`gen_native.generate` is. For each derivatives entry it writes one node class (named as
PyTorch names it: `AddBackward0`, `AddBackward1` for the next `add` entry) whose `apply`
evaluates the entry's formulas, and for each operator of the entry's group (functional,
in-place, out) one kernel for the `Autograd` key:

- functional: when grad mode is on and a differentiable input requires grad, build the
  node, save what the formulas read, run the operator below autograd, and make the
  differentiable outputs the node's outputs;
- in-place: the same, after PyTorch's leaf checks, with the history rebased onto the
  written tensor (a view's base learns of it through `CopySlices`); a formula that reads
  `self` gets a copy of `self` taken before the write;
- out=: refuse when an input requires grad, as PyTorch does.

A non-composite operator without an entry gets a kernel that records a node whose backward
raises "the derivative for 'aten::x' is not implemented", never a silent zero.

Formulas are Python expressions over pyaten (`grad * other.conj()`), evaluated with the
operator's arguments, `grad`/`grads`, `result` (or the named returns) and `grad_input_mask`
in scope, plus the helpers of `pyaten.autograd.formulas`. A tensor the formulas only ask the
shape, dtype or size of is kept as its geometry, not saved; one they only ask the dtype of, as
a shared per-dtype object (`DTYPE_ONLY`), so recording `add` builds nothing for it. A tensor
is saved only when a gradient whose formula reads it is wanted when the call is recorded
(PyTorch's `should_compute_output`): `a * w` with only `w` requiring grad keeps `a`, not `w`,
and an in-place `y.mul_(2)` copies nothing. Where some formulas read a saved tensor only for
its geometry (`mul`'s `self.dtype`), that geometry is kept beside it (`gs_<name>`).
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pyaten.declarations.model import DerivativeEntry, NativeFunction
from pyaten.schema.model import Argument, FunctionSchema, SchemaKind

__all__ = ["GeneratedAutograd", "generate", "node_names"]

# Attributes that only read a tensor's geometry: a tensor used only through them is not saved.
_GEOMETRY = frozenset(
    {"shape", "dtype", "device", "size", "stride", "dim", "ndim", "numel", "is_complex",
     "is_floating_point", "storage_offset"}
)
# Those that read only its dtype: such a tensor is kept as a shared per-dtype object.
_DTYPE = frozenset({"dtype", "is_complex", "is_floating_point"})


# Operators whose kernel sets the autograd metadata itself (PyTorch's MANUAL_AUTOGRAD): no
# generated kernel, the Autograd key's fallback passes them on.
MANUAL_AUTOGRAD = frozenset({"detach_"})


@dataclass(frozen=True)
class GeneratedAutograd:
    source: str
    registrations: tuple[tuple[str, str, str], ...]  # (qualified operator, kernel, site)


def _camel(name: str) -> str:
    # str.title capitalises after digits too: log1p -> Log1P, as PyTorch's node names.
    return "".join(part.title() for part in name.split("_") if part)


def node_names(entries: Sequence[DerivativeEntry]) -> dict[int, str]:
    """PyTorch's node class names: CamelCase base name + Backward + its count so far."""
    counts: dict[str, int] = {}
    names = {}
    for entry in entries:
        camel = _camel(entry.schema.name.name)
        n = counts.get(camel, 0)
        counts[camel] = n + 1
        names[id(entry)] = f"{camel}Backward{n}".replace("ForwardBackward", "Backward")
    return names


def _local(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


def _kernel_name(schema: FunctionSchema) -> str:
    name = schema.name
    text = name.name + (f"_{name.overload}" if name.overload else "")
    return "ag_" + text.replace(".", "_")


def _qualified(schema: FunctionSchema) -> str:
    name = schema.name
    return f"aten::{name.name}" + (f".{name.overload}" if name.overload else "")


def _is_tensor(arg: Argument) -> bool:
    return arg.type.is_tensor_like() and not arg.type.is_list()


def _is_tensor_list(arg: Argument) -> bool:
    t = arg.type
    return t.is_tensor_like() and t.is_list()


def _names_and_parents(expr: str) -> list[tuple[ast.Name, ast.AST | None]]:
    """Each name an expression reads, with the node it appears in."""
    tree = ast.parse(expr.strip(), mode="eval")
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return [(node, parents.get(id(node))) for node in ast.walk(tree)
            if isinstance(node, ast.Name)]


def _dtype_only(expr: str) -> set[str]:
    """Names an expression reads only through dtype attributes (`self.dtype`)."""
    names: set[str] = set()
    other_use: set[str] = set()
    for node, parent in _names_and_parents(expr):
        names.add(node.id)
        if not (isinstance(parent, ast.Attribute) and parent.attr in _DTYPE):
            other_use.add(node.id)
    return names - other_use


def _uses(expr: str) -> tuple[set[str], set[str]]:
    """Names an expression reads, and those it reads only through geometry attributes."""
    names: set[str] = set()
    other_use: set[str] = set()
    for node, parent in _names_and_parents(expr):
        names.add(node.id)
        if isinstance(parent, ast.Attribute) and parent.attr in _GEOMETRY:
            continue
        if (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                and parent.func.id == "geometry"):
            continue  # `geometry(tensors)`: a helper reads only their shapes and dtypes
        other_use.add(node.id)
    return names, names - other_use


class _Entry:
    """What the generator derives from one derivatives entry."""

    def __init__(self, entry: DerivativeEntry, class_name: str) -> None:
        self.entry = entry
        self.class_name = class_name
        schema = entry.schema
        self.schema = schema
        self.args = {a.name: a for a in schema.arguments}
        formulas = [f for f in entry.formulas if not f.is_non_differentiable]
        self.formulas = formulas
        named = {n for f in formulas for n in f.names}
        # differentiable inputs, schema order
        self.inputs = [
            a for a in schema.arguments
            if a.name in named and (_is_tensor(a) or _is_tensor_list(a))
        ]
        self.result_names = self._result_names()
        used: set[str] = set()
        for f in formulas:
            used |= _uses(f.formula)[0]
        self.full_use: set[str] = set()
        self.geometry_use: set[str] = set()
        for f in formulas:
            names, geo = _uses(f.formula)
            self.full_use |= names - geo
            self.geometry_use |= geo
        self.geometry_use -= self.full_use
        # geometry read only for its dtype, in every formula that reads it at all
        self.dtype_use = set(self.geometry_use)
        for f in formulas:
            names = _uses(f.formula)[0]
            self.dtype_use -= names - _dtype_only(f.formula)
        self.used = used
        self.split = self._split_geometry()
        outs = entry.output_differentiability
        n = len(schema.returns)
        if outs is None or any(isinstance(v, str) for v in outs):
            self.out_diff = (True,) * n
        else:
            self.out_diff = tuple(bool(v) for v in outs) + (True,) * (n - len(outs))

    def _split_geometry(self) -> dict[str, str]:
        """Saved tensors some formulas read only for their geometry (`mul`'s `self.dtype` in
        self's formula, its tensor in other's): name -> 'dtype' or 'geometry', kept beside
        the tensor so the tensor is saved only when a formula that reads it is needed."""
        input_names = {a.name for a in self.inputs}
        split: dict[str, str] = {}
        for a in self.schema.arguments:
            if not _is_tensor(a) or a.name not in self.full_use:
                continue
            geometry_only = [
                f for f in self.formulas
                if input_names & set(f.names) and a.name in _uses(f.formula)[1]
            ]
            if geometry_only:
                dtype = all(a.name in _dtype_only(f.formula) for f in geometry_only)
                split[a.name] = "dtype" if dtype else "geometry"
        return split

    def geometry_only_in(self, name: str, formula: object) -> bool:
        """Whether `formula` reads the split tensor `name` only for its geometry."""
        return name in self.split and name in _uses(formula.formula)[1]

    def _result_names(self) -> list[str]:
        returns = self.schema.returns
        if len(returns) == 1:
            names = ["result"]
        else:
            names = [f"result{i}" for i in range(len(returns))]
        return names

    def saved_inputs(self) -> list[tuple[Argument, str]]:
        """(argument, how) for each argument a formula reads: 'tensor', 'geometry', 'dtype',
        'tensors', 'geometries' or 'value'."""
        saved = []
        for a in self.schema.arguments:
            name = a.name
            if name not in self.full_use and name not in self.geometry_use:
                continue
            if _is_tensor(a):
                how = "tensor" if name in self.full_use else "geometry"
                if how == "geometry" and name in self.dtype_use:
                    how = "dtype"
            elif _is_tensor_list(a):
                how = "tensors" if name in self.full_use else "geometries"
            else:
                how = "value"
            saved.append((a, how))
        return saved

    def saved_results(self) -> list[tuple[int, str]]:
        """(output index, local name) of each output a formula reads."""
        wanted = []
        named = [r.name for r in self.schema.returns]
        for i, local in enumerate(self.result_names):
            alias = named[i]
            if local in self.used or (alias and alias in self.used):
                wanted.append((i, local))
        return wanted


def _readers(e: _Entry) -> dict[str, set[int]]:
    """For each name the formulas read, the (differentiable input) indices of the formulas
    that read it: what is saved for them is needed only if one of those gradients is."""
    input_index = {a.name: i for i, a in enumerate(e.inputs)}
    readers: dict[str, set[int]] = {}
    for f in e.formulas:
        indices = {input_index[n] for n in f.names if n in input_index}
        for name in _uses(f.formula)[0] if indices else ():
            if not e.geometry_only_in(name, f):  # those read the geometry kept beside
                readers.setdefault(name, set()).update(indices)
    return readers


def _save_condition(e: _Entry, *names: str) -> str:
    """`if <needed> else None` for a value the formulas read under `names`, or "" when every
    recorded call needs it (PyTorch's `should_compute_output` before saving)."""
    readers = _readers(e)
    indices = set().union(*(readers.get(n, set()) for n in names if n))
    if not indices or len(indices) == len(e.inputs):
        return ""
    return " if " + " or ".join(f"needed_[{i}]" for i in sorted(indices)) + " else None"


def _record_mask_lines(e: _Entry) -> list[str]:
    """`needed_` at record time, when some saved value depends on it."""
    conditional = [a for a, how in e.saved_inputs() if how in ("tensor", "geometry")
                   and _save_condition(e, a.name)]
    named = [r.name for r in e.schema.returns]
    conditional += [i for i, local in e.saved_results() if _save_condition(e, local, named[i])]
    if not conditional:
        return []
    if any(_is_tensor_list(a) for a in e.inputs):
        return ["    needed_ = node.input_mask()"]
    flags = ", ".join(f"edges_[{i}][0] is not None" for i in range(len(e.inputs)))
    return ["    edges_ = node.next_functions",
            f"    needed_ = ({flags}{',' if len(e.inputs) == 1 else ''})"]


def _node_class(e: _Entry) -> list[str]:
    saved = e.saved_inputs()
    results = e.saved_results()
    slots = [f"s_{a.name}" for a, _ in saved] + [
        f"r_{local}" for _, local in results
    ] + [f"gs_{name}" for name in e.split]
    lines = [
        f"class {e.class_name}(Node):",
        f"    __slots__ = {tuple(slots)!r}",
        "",
        "    def apply(node, grads):",
        "        grad = grads[0]",
    ]
    # `needed_` rather than `mask`: an argument may be named mask (masked_fill).
    if any(_is_tensor_list(a) for a in e.inputs) or not e.inputs:
        lines.append("        needed_ = node.input_mask()")
    else:  # Node.input_mask, inlined: one edge per input
        lines.append("        edges_ = node.next_functions")
        flags = ", ".join(f"edges_[{i}][0] is not None" for i in range(len(e.inputs)))
        lines.append(f"        needed_ = ({flags}{',' if len(e.inputs) == 1 else ''})")
    lines.append("        grad_input_mask = needed_")
    input_index = {a.name: i for i, a in enumerate(e.inputs)}
    named_returns = [r.name for r in e.schema.returns]
    for f in e.formulas:
        indices = [input_index[n] for n in f.names if n in input_index]
        if not indices:
            continue
        cond = " or ".join(f"needed_[{i}]" for i in indices)
        lines.append(f"        if {cond}:")
        names, _ = _uses(f.formula)
        for a, how in saved:
            if a.name not in names:
                continue
            local = _local(a.name)
            if e.geometry_only_in(a.name, f):
                lines.append(f"            {local} = node.gs_{a.name}")
            elif how == "tensor" and a.type.is_optional():
                lines.append(
                    f"            {local} = None if node.s_{a.name} is None "
                    f"else node.s_{a.name}.unpack(node)"
                )
            elif how == "tensor":
                lines.append(f"            {local} = node.s_{a.name}.unpack(node)")
            elif how == "tensors":
                lines.append(
                    f"            {local} = [None if s is None else s.unpack(node) "
                    f"for s in node.s_{a.name}]"
                )
            else:
                lines.append(f"            {local} = node.s_{a.name}")
        for i, local in results:
            alias = named_returns[i]
            if local in names or (alias and alias in names):
                lines.append(f"            {local} = node.r_{local}.unpack(node)")
                if alias and alias != local:
                    lines.append(f"            {alias} = {local}")
        expr = " ".join(f.formula.split())
        targets = [f"g_{n}" for n in f.names if n in input_index]
        if len(f.names) == 1:
            lines.append(f"            {targets[0]} = {expr}")
        else:
            lines.append(f"            {', '.join(targets)} = {expr}")
        lines.append("        else:")
        lines.append(f"            {' = '.join(targets)} = None")
    # assemble, flattening list inputs
    lines.append("        out = []")
    for i, a in enumerate(e.inputs):
        if _is_tensor_list(a):
            lines.append(
                f"        out.extend(g_{a.name} if g_{a.name} is not None "
                f"else [None] * node._counts[{i}])"
            )
        else:
            lines.append(f"        out.append(g_{a.name})")
    lines.append("        return out")
    tensors = [f"s_{a.name}" for a, how in saved if how == "tensor"]
    lists = [f"s_{a.name}" for a, how in saved if how == "tensors"]
    outs = [f"r_{local}" for _, local in results]
    if tensors or lists or outs:
        lines += ["", "    def release_variables(node):", "        node._released = True"]
        for name in tensors + outs:
            lines.append(f"        if node.{name} is not None:")
            lines.append(f"            node.{name}.release()")
        for name in lists:
            lines.append(f"        for s in node.{name}:")
            lines.append("            if s is not None:")
            lines.append("                s.release()")
    return lines + ["", ""]


def _forward_fn(e: _Entry) -> list[str]:
    """`fw_<Node>(args..., outs)`: the outputs' tangents from the `result:` formulas."""
    params = _params(e.schema)
    name = f"fw_{e.class_name}"
    lines = [f"def {name}({', '.join(params + ['outs'])}):"]
    forward = [f for f in e.entry.result if not f.is_non_differentiable]
    if not forward:
        lines += [
            "    raise NotImplementedError(",
            f"        \"Trying to use forward AD with {e.schema.name.name} that does not support "
            "it because it has not been implemented yet.\")",
            "",
            "",
        ]
        return lines
    # The formulas run on primals: no tangents of tangents (one level, as PyTorch's default).
    lines += ["    level = FW[0]", "    FW[0] = -1", "    try:"]
    body_start = len(lines)
    for a in e.schema.arguments:
        if _is_tensor(a) or _is_tensor_list(a):
            lines.append(f"    {_local(a.name)}_p = {_local(a.name)}")  # PyTorch's primal name
    for a in e.inputs:
        local = _local(a.name)
        if _is_tensor_list(a):
            lines.append(f"    {local}_t = [tangent(t) for t in {local}]")
        else:
            lines.append(f"    {local}_t = tangent({local})")
    returns = [r.name for r in e.schema.returns]
    for i, local in enumerate(e.result_names):
        lines.append(f"    {local} = {'list(outs)' if _returns_list(e.schema) else f'outs[{i}]'}")
        if returns[i] and returns[i] != local:
            lines.append(f"    {returns[i]} = outs[{i}]")
    for f in forward:
        for out_name in f.names:
            if out_name in e.result_names:
                index = e.result_names.index(out_name)
            elif out_name in returns:
                index = returns.index(out_name)
            else:
                continue
            text = " ".join(f.formula.split())
            if text == "auto_element_wise":
                terms = [
                    f"element_wise(lambda grad: ({' '.join(g.formula.split())}), "
                    f"{_local(g.names[0])}_t)"
                    for g in e.formulas
                    if len(g.names) == 1 and any(a.name == g.names[0] for a in e.inputs)
                    and not _is_tensor_list(e.args[g.names[0]])
                ]
                expr = " + ".join(terms) if terms else "None"
            elif text == "auto_linear":
                handle = e.schema.name.overload or "default"
                call_args = [
                    (f"{a.name}=" if a.kwarg_only else "")
                    + (f"{_local(a.name)}_t" if any(a is d for d in e.inputs) else _local(a.name))
                    for a in e.schema.arguments
                ]
                expr = f"aten.{e.schema.name.name}.{handle}({', '.join(call_args)})"
                if len(e.result_names) > 1:
                    expr += f"[{index}]"
            else:
                expr = text
            if _returns_list(e.schema):
                lines.append(f"    for piece, piece_t in zip(outs, {expr}):")
                lines.append("        set_tangent(piece, piece_t)")
            else:
                lines.append(f"    set_tangent(outs[{index}], {expr})")
    lines[body_start:] = ["    " + line for line in lines[body_start:]]
    lines += ["    finally:", "        FW[0] = level"]
    return lines + ["", ""]


def _params(schema: FunctionSchema) -> list[str]:
    return [_local(a.name) for a in schema.arguments]


def _requires_expr(args: Sequence[Argument]) -> str:
    parts = []
    for a in args:
        local = _local(a.name)
        if _is_tensor_list(a):
            parts.append(f"any_requires_grad({local})")
        elif a.type.is_optional():
            parts.append(f"({local} is not None and {local}._requires_grad)")
        else:
            parts.append(f"{local}._requires_grad")
    return " or ".join(parts) if parts else "False"


def _tangent_expr(args: Sequence[Argument]) -> str:
    parts = []
    for a in args:
        local = _local(a.name)
        if _is_tensor_list(a):
            parts.append(f"any_tangent({local})")
        elif a.type.is_optional():
            parts.append(f"({local} is not None and {local}._fw_grad is not None)")
        else:
            parts.append(f"{local}._fw_grad is not None")
    return "(" + (" or ".join(parts) if parts else "False") + ")"


def _make_node_line(e: _Entry) -> str:
    """The node with one edge per differentiable input, in one call (`make_node`: Note: the
    compiled recording calls, pyaten/autograd/accel_graph.py)."""
    inputs = "".join(f", {_local(a.name)}" for a in e.inputs)
    return f"    node = make_node({e.class_name}{inputs})"


def _save_inputs_lines(e: _Entry, inplace: bool) -> list[str]:
    lines = _record_mask_lines(e)
    for a, how in e.saved_inputs():
        local = _local(a.name)
        when = _save_condition(e, a.name) if how in ("tensor", "geometry") else ""
        if how == "tensor":
            if inplace and a.name == "self":
                lines.append(f"    node.s_{a.name} = SavedTensor(original(self)){when}")
            elif a.type.is_optional():
                lines.append(
                    f"    node.s_{a.name} = (None if {local} is None else SavedTensor({local}))"
                    f"{when}"
                )
            else:
                lines.append(f"    node.s_{a.name} = SavedTensor({local}){when}")
        elif how == "dtype":  # one shared object per dtype: nothing built per call
            if a.type.is_optional():
                lines.append(
                    f"    node.s_{a.name} = None if {local} is None else DTYPE_ONLY[{local}._dtype]"
                )
            else:
                lines.append(f"    node.s_{a.name} = DTYPE_ONLY[{local}._dtype]")
        elif how == "geometry":
            if a.type.is_optional():
                lines.append(
                    f"    node.s_{a.name} = (None if {local} is None else "
                    f"TensorGeometry({local})){when}"
                )
            else:
                lines.append(f"    node.s_{a.name} = TensorGeometry({local}){when}")
        elif how == "tensors":
            lines.append(
                f"    node.s_{a.name} = [None if t is None else SavedTensor(t) for t in {local}]"
            )
        elif how == "geometries":
            lines.append(
                f"    node.s_{a.name} = [None if t is None else TensorGeometry(t) for t in {local}]"
            )
        else:
            lines.append(f"    node.s_{a.name} = {local}")
        kept = e.split.get(a.name)
        if kept is not None:  # read for its geometry by formulas that may run without it
            # taken before the call, so an in-place kernel keeps the geometry before the write
            keep = (f"DTYPE_ONLY[{local}._dtype]" if kept == "dtype"
                    else f"TensorGeometry({local})")
            if a.type.is_optional():
                keep = f"None if {local} is None else {keep}"
            lines.append(f"    node.gs_{a.name} = {keep}")
    return lines


def _returns_list(schema: FunctionSchema) -> bool:
    returns = schema.returns
    return len(returns) == 1 and returns[0].type.is_list()


def _functional_kernel(e: _Entry, f: NativeFunction) -> list[str]:
    schema = f.func
    name = _kernel_name(schema)
    params = _params(schema)
    call = ", ".join(params)
    tangents = _tangent_expr(e.inputs)
    list_return = _returns_list(schema)
    outs_expr = "(out,)" if len(schema.returns) == 1 and not list_return else "tuple(out)"
    lines = [
        f"def {name}(below, {call}):" if params else f"def {name}(below):",
        f"    if not (({_requires_expr(e.inputs)}) and GRAD.enabled):",
        f"        if FW[0] != -1 and {tangents}:",
        f"            out = run_below(below, {call})",
        f"            fw_{e.class_name}({call}, {outs_expr})",
        "            return out",
    ]
    if schema.is_view:  # a view of a tensor requiring grad made in no_grad mode is marked
        lines += [
            f"        out = below({call})",
            f"        if {_requires_expr(e.inputs)}:",
            "            mark_views(out, NO_GRAD_VIEW)",
            "        return out",
        ]
    else:
        lines.append(f"        return below({call})")
    lines += [_make_node_line(e), *_save_inputs_lines(e, inplace=False)]
    n = len(schema.returns)
    single = n == 1 and e.out_diff[0] and not list_return
    if single:  # the result made the node's output 0 in the same call (a view: remembered)
        run = "run_recorded_view" if schema.is_view else "run_recorded"
        lines.append(f"    out = {run}(node, below, {call})" if call
                     else f"    out = {run}(node, below)")
    else:
        lines.append(f"    out = run_below(below, {call})")
    for a, how in e.saved_inputs():  # written arguments: saved at their new version
        if how == "tensor" and a.is_write:
            when = _save_condition(e, a.name)
            lines.append(f"    node.s_{a.name} = SavedTensor({_local(a.name)}){when}")
    tensor_inputs = [_local(a.name) for a in schema.arguments if _is_tensor(a)]
    inputs_tuple = f"({', '.join(tensor_inputs)}{',' if len(tensor_inputs) == 1 else ''})"
    if single:
        outs = "(out,)"
    elif list_return:  # `Tensor[]`: each piece is an output of the node (split, unbind)
        outs = "outs"
        lines.append("    outs = tuple(out)")
        lines.append(f"    set_outputs(node, outs, (True,) * len(outs), {inputs_tuple})")
        if schema.is_view:  # several views of one call cannot be written in place
            shown = re.sub(r"Backward\d*$", "", e.class_name)
            lines.append(f"    mark_views(outs, ('multi_output', {shown!r}))")
    else:
        outs = "outs"
        lines.append("    outs = (out,)" if n == 1 else "    outs = tuple(out)")
        lines.append(f"    set_outputs(node, outs, {e.out_diff!r}, {inputs_tuple})")
    for i, local in e.saved_results():
        when = _save_condition(e, local, e.schema.returns[i].name)
        saved = "out" if single else f"outs[{i}]"
        lines.append(f"    node.r_{local} = SavedTensor({saved}, True){when}")
    lines.append(f"    if FW[0] != -1 and {tangents}:")
    lines.append(f"        fw_{e.class_name}({call}, {outs})" if call
                 else f"        fw_{e.class_name}({outs})")
    lines.append("    return out")
    lines.append(f"{name}.below_mask = AFTER_AUTOGRAD")
    return lines + ["", ""]


def _inplace_kernel(e: _Entry, f: NativeFunction) -> list[str]:
    schema = f.func
    name = _kernel_name(schema)
    params = _params(schema)
    call = ", ".join(params)
    tangents = _tangent_expr(e.inputs)
    fw_call = ", ".join(["before" if p == "self" else p for p in params])
    # A write into a tensor with history is recorded even when no input is differentiable
    # (`a.eq_(b)`): the old history must not keep receiving gradients.
    requires = _requires_expr(e.inputs)
    if not any(a.name == "self" for a in e.inputs):
        requires = f"self._requires_grad or {requires}"
    lines = [
        f"def {name}(below, {call}):",
        f"    if FW[0] != -1 and {tangents}:",
        "        before = original(self)",
        "        before._fw_grad = self._fw_grad",
        "    else:",
        "        before = None",
        f"    if not (({requires}) and GRAD.enabled):",
        "        if self._view_creation is not None and GRAD.enabled:",
        "            check_inplace(self)",
        f"        out = run_below(below, {call}) if before is not None else below({call})",
        "        if before is not None:",
        f"            fw_{e.class_name}({fw_call}, (self,))",
        "            if self._base is not None:",
        "                view_tangent_to_base(self)",
        "        return out",
        "    check_inplace(self)",
        _make_node_line(e),
        *_save_inputs_lines(e, inplace=True),
    ]
    if "inplace_view" in f.tags:  # transpose_ & co. change the view (Note: in-place on views)
        lines += [
            "    before_view = view_geometry(self)",
            f"    out = run_below(below, {call})",
            "    rebase_history(self, node, before_view)",
        ]
    else:
        lines += [
            f"    out = run_below(below, {call})",
            "    rebase_history(self, node)",
        ]
    for i, local in e.saved_results():
        when = _save_condition(e, local, e.schema.returns[i].name)
        lines.append(f"    node.r_{local} = SavedTensor(self, True){when}")
    lines.append("    if before is not None:")
    lines.append(f"        fw_{e.class_name}({fw_call}, (self,))")
    lines.append("        if self._base is not None:")
    lines.append("            view_tangent_to_base(self)")
    lines.append("    return out")
    lines.append(f"{name}.below_mask = AFTER_AUTOGRAD")
    return lines + ["", ""]


def _out_kernel(f: NativeFunction, inputs: Sequence[Argument]) -> list[str]:
    schema = f.func
    name = _kernel_name(schema)
    params = _params(schema)
    call = ", ".join(params)
    return [
        f"def {name}(below, {call}):",
        f"    if ({_requires_expr(inputs)}) and GRAD.enabled:",
        f"        raise_out_requires_grad({schema.name.name!r})",
        f"    return below({call})",
        f"{name}.below_mask = AFTER_AUTOGRAD",
        "",
        "",
    ]


def _not_implemented_kernel(f: NativeFunction) -> list[str]:
    schema = f.func
    name = _kernel_name(schema)
    params = _params(schema)
    call = ", ".join(params)
    tensors = [a for a in schema.arguments if a.type.is_tensor_like() and not a.is_out]
    flat = []
    for a in tensors:
        local = _local(a.name)
        flat.append(f"*{local}" if _is_tensor_list(a) else local)
    inplace = schema.kind is SchemaKind.inplace
    lines = [
        f"def {name}(below, {call}):",
        f"    if FW[0] != -1 and {_tangent_expr(tensors)}:",
        "        raise NotImplementedError(",
        f"            \"Trying to use forward AD with {schema.name.name} that does not support "
        "it because it has not been implemented yet.\")",
        f"    if not (({_requires_expr(tensors)}) and GRAD.enabled):",
        f"        return below({call})",
    ]
    if inplace:
        lines.append("    check_inplace(self)")
    lines += [
        f"    out = run_below(below, {call})",
        f"    return record_not_implemented('aten::{schema.name.name}', [{', '.join(flat)}], out, "
        f"{'self' if inplace else 'None'})",
        f"{name}.below_mask = AFTER_AUTOGRAD",
        "",
        "",
    ]
    return lines


_HEADER = '''"""Generated by pyaten.codegen.gen_autograd from {path}; do not edit."""
# ruff: noqa
from pyaten.autograd.graph import (
    DTYPE_ONLY, NO_EDGE, Node, SavedTensor, TensorGeometry, grad_accumulator, gradient_edge,
)
from pyaten.autograd.grad_mode import GRAD
from pyaten.autograd.forward_ad import FW, set_tangent
from pyaten.autograd.runtime import (
    AFTER_AUTOGRAD, any_requires_grad, any_tangent, check_inplace, element_wise, make_node,
    original, raise_out_requires_grad, rebase_history, record_not_implemented, run_below,
    run_recorded, run_recorded_view,
    view_geometry, mark_views, NO_GRAD_VIEW, view_tangent_to_base, track_view,
    set_outputs, tangent,
)
from pyaten.autograd.formulas import *


'''


def generate(
    entries: Sequence[DerivativeEntry],
    records: Sequence[NativeFunction],
    display_path: str = "derivatives.yaml",
    native_path: str = "native_functions.yaml",
) -> GeneratedAutograd:
    """The module text and the (operator, kernel) pairs to register at `Autograd`."""
    names = node_names(entries)
    by_signature: dict[str, list[NativeFunction]] = {}
    for f in records:
        by_signature.setdefault(str(f.func.functional_signature()), []).append(f)
    lines = [_HEADER.format(path=display_path)]
    registrations: list[tuple[str, str, str]] = []
    covered: set[str] = set()
    for entry in entries:
        e = _Entry(entry, names[id(entry)])
        lines += _node_class(e)
        lines += _forward_fn(e)
        group = by_signature.get(str(entry.schema.functional_signature()), [])
        if entry.function is not None and entry.function not in group:
            group = [entry.function, *group]
        for f in group:
            qualified = _qualified(f.func)
            if qualified in covered or f.has_composite_implicit_autograd_kernel:
                continue
            if str(f.func.name) in MANUAL_AUTOGRAD:
                continue
            kind = f.func.kind
            # a `mutable` schema (`rrelu_with_noise`'s `Tensor(b!) noise`) is recorded as a
            # functional one; the arguments it writes are saved after the call
            if kind is SchemaKind.functional or kind is SchemaKind.mutable:
                body = _functional_kernel(e, f)
            elif kind is SchemaKind.inplace:
                body = _inplace_kernel(e, f)
            elif kind is SchemaKind.out:
                body = _out_kernel(f, e.inputs)
            else:
                continue
            covered.add(qualified)
            lines += body
            registrations.append(
                (qualified, _kernel_name(f.func), f"{display_path}:{entry.loc.line}")
            )
    for f in records:
        qualified = _qualified(f.func)
        if qualified in covered or f.has_composite_implicit_autograd_kernel:
            continue
        if str(f.func.name) in MANUAL_AUTOGRAD:
            continue
        if not any(a.type.is_tensor_like() for a in f.func.arguments):
            continue
        covered.add(qualified)
        if f.func.kind is SchemaKind.out:
            tensors = [a for a in f.func.arguments if a.type.is_tensor_like() and not a.is_out]
            lines += _out_kernel(f, tensors)
        else:
            lines += _not_implemented_kernel(f)
        registrations.append(
            (qualified, _kernel_name(f.func), f"{native_path}:{f.loc.line} (no derivatives entry)")
        )
    lines.append(f"REGISTRATIONS = {tuple(registrations)!r}")
    return GeneratedAutograd("\n".join(lines) + "\n", tuple(registrations))
