"""The graph autograd records: nodes, their edges, saved tensors, and leaf accumulation.

A node is the backward of one recorded operator call. `next_functions` holds one edge per
differentiable input: `(node, input_nr)` of the node that produced the input, the input's
`AccumulateGrad` when it is a leaf that requires grad, or `(None, 0)`. A tensor produced by a
recorded call points at its node with `grad_fn` and says which of the node's inputs it is with
`output_nr`. `input_meta` keeps the shape and dtype of each of those outputs so the engine
can sum a broadcast gradient back to its shape and cast it to the tensor's dtype.

Note: saved outputs and reference cycles
    A node that saves its own output (`result` in a formula) would hold that tensor while the
    tensor holds the node as `grad_fn`: a cycle that only the garbage collector frees.
    `SavedTensor` therefore keeps an output as a bare alias (same storage and version
    counter, no `grad_fn`) and rebuilds the graph-connected tensor when unpacked, by
    pointing the alias at the node that unpacks it. Inputs are kept as they are: they do not
    point at the node that saved them.
"""

from __future__ import annotations

import itertools
import re
import weakref
from collections.abc import Callable
from typing import Any

from pyaten.core.accel import ACCEL as _ACCEL
from pyaten.core.size import Size
from pyaten.core.tensor import Tensor
from pyaten.dispatch.python_key import PYTHON_KEYS
from pyaten.dispatch.tls import STATE as _TLS
from pyaten.native.ops_handles import LazyEntry

_DETACH = LazyEntry("detach")

__all__ = [
    "Node",
    "AccumulateGrad",
    "SavedTensor",
    "gradient_edge",
    "collect_next_edges",
    "set_history",
    "grad_accumulator",
]

NO_EDGE = _NO_EDGE = (None, 0)
_weakref = weakref.ref
_SEQUENCE = itertools.count()
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


class Node:
    """The backward of one recorded call. Subclasses define `apply(grads) -> grads`."""

    __slots__ = (
        "next_functions",
        "input_meta",
        "_sequence_nr",
        "_pre_hooks",
        "_hooks",
        "_tensor_pre_hooks",
        "_retains_grad",
        "_metadata",
        "_released",
        "_counts",
        "__weakref__",
    )

    def __init__(self) -> None:
        self.next_functions: tuple[tuple[Node | None, int], ...] = ()
        self.input_meta: list[tuple[tuple[int, ...], Any, Any] | None] = []
        self._sequence_nr = next(_SEQUENCE)
        # hooks, retain_grad, metadata: rarely set, so one chained store
        self._pre_hooks = self._hooks = self._tensor_pre_hooks = None
        self._retains_grad = self._metadata = self._counts = None
        self._released = False

    def input_mask(self) -> tuple[bool, ...]:
        """Per differentiable input of the call, whether its gradient is wanted."""
        edges = self.next_functions
        counts = self._counts
        if counts is None:
            return tuple([edge[0] is not None for edge in edges])
        mask = []
        i = 0
        for n in counts:
            mask.append(any(edge[0] is not None for edge in edges[i : i + n]))
            i += n
        return tuple(mask)

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def _sequence_number(self) -> int:
        return self._sequence_nr

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def apply(self, grads: tuple) -> tuple:
        raise NotImplementedError(f"{self.name()} has no backward")

    def __call__(self, *grads: Any) -> Any:
        result = self.apply(grads)
        return result[0] if len(result) == 1 else result

    def release_variables(self) -> None:
        """Drop saved tensors (after a backward without `retain_graph`); see Note: a second
        backward."""
        self._released = True

    # -- hooks --------------------------------------------------------------------------
    def register_hook(self, fn: Callable) -> RemovableHandle:
        """`fn(grad_inputs, grad_outputs)` after the node ran; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """`fn(grad_outputs)` before the node runs; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return RemovableHandle(self._pre_hooks, fn)

    def _add_tensor_pre_hook(self, output_nr: int, fn: Callable) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        hooks = self._tensor_pre_hooks.setdefault(output_nr, [])
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    def _raise_released(self) -> None:
        raise RuntimeError(SECOND_BACKWARD)


# Note: a second backward
#     A backward without `retain_graph` releases every node it ran: their saved tensors are
#     dropped (`SavedTensor.release`) and `_released` is set. Running such a graph again is
#     allowed, as in PyTorch: a node raises SECOND_BACKWARD only when it reads a freed value
#     (`SavedTensor.unpack`, a custom Function's `ctx.saved_tensors`); a node that saved
#     nothing (add, views, sum, neg) computes its gradient again.
SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


class RemovableHandle:
    """What `register_hook` returns: `remove()` unregisters the hook."""

    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks: list, fn: Callable) -> None:
        self._hooks = hooks
        self._fn = fn

    def remove(self) -> None:
        for i, fn in enumerate(self._hooks):
            if fn is self._fn:
                del self._hooks[i]
                break

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: adds arriving gradients into `variable.grad`."""

    __slots__ = ("variable",)

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"  # PyTorch's C++ name, as its name() reports

    def __init__(self, variable: Tensor) -> None:
        # Node.__init__ spelled out: recording an op on a leaf builds one of these whenever
        # the previous one died with its graph.
        self.next_functions = ()
        self.input_meta = [(variable._sizes, variable._dtype, variable._device)]
        self._sequence_nr = next(_SEQUENCE)
        self._pre_hooks = self._hooks = self._tensor_pre_hooks = None
        self._retains_grad = self._metadata = self._counts = None
        self._released = False
        self.variable = variable

    def apply(self, grads: tuple) -> tuple:
        from pyaten.autograd.engine import accumulate_into

        accumulate_into(self.variable, grads[0])
        return ()


def _meta_of(t: Tensor) -> tuple:
    return (t._sizes, t._dtype, t._device)


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The one AccumulateGrad of leaf `t` (shared by every use, as long as one is alive)."""
    ref = t._grad_acc
    if ref is not None:
        node = ref()
        if node is not None:
            return node
    node = AccumulateGrad(t)
    t._grad_acc = _weakref(node)
    return node


grad_accumulator_reference = grad_accumulator
node_init_reference = Node.__init__
accumulate_grad_init_reference = AccumulateGrad.__init__

# Note: the accelerated recording path
#     Every recorded call builds a node and, for each leaf input, looks up (and, when the last
#     graph using it died, rebuilds) the leaf's AccumulateGrad. With the accelerator loaded,
#     `Node.__init__`, `AccumulateGrad.__init__` and `grad_accumulator` are its C versions
#     (method descriptors on these classes; the same stores, in the same slots, drawing the
#     same sequence numbers), and the reference functions above stay for anything that is
#     not a plain Tensor with its slots set. `SavedTensor.__init__` and
#     `TensorGeometry.__init__` (below) are compiled the same way; a saved output's alias is
#     made in C for an exact Tensor without Python dispatch. `call_below_autograd`
#     (dispatch/tls.py) is the other half of the recording path's cost;
#     tests/test_accel_graph.py compares each with its reference.
if _ACCEL is not None:
    Node.__init__, AccumulateGrad.__init__ = _ACCEL.setup_graph(  # type: ignore[method-assign]
        Node, AccumulateGrad, _SEQUENCE, accumulate_grad_init_reference,
        grad_accumulator_reference)
    grad_accumulator = _ACCEL.grad_accumulator  # noqa: F811


def gradient_edge(t: Tensor | None) -> tuple[Node | None, int]:
    """Where a gradient for `t` flows: its grad_fn's input, its accumulator, or nowhere."""
    if t is None:
        return _NO_EDGE
    fn = t.grad_fn
    if fn is not None:
        return (fn, t.output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return _NO_EDGE


def collect_next_edges(*tensors: Tensor | None) -> tuple[tuple[Node | None, int], ...]:
    return tuple(gradient_edge(t) for t in tensors)


def set_history(outputs: tuple | list, node: Node) -> None:
    """Make `outputs` the outputs of `node` (grad_fn, output_nr, requires_grad)."""
    meta = node.input_meta
    for nr, t in enumerate(outputs):
        if t is None:
            meta.append(None)
            continue
        t.grad_fn = node
        t.output_nr = nr
        t._requires_grad = True
        meta.append(_meta_of(t))


def _type_text(t: Tensor) -> str:
    return f"[pyaten.{t._dtype.scalar_name}Tensor [{', '.join(map(str, t._sizes))}]]"


def short_name(node: Node) -> str:
    return _BACKWARD_SUFFIX.sub("", node.name())


def _alias_without_history(t: Tensor, differentiable: bool = True) -> Tensor:
    """A new tensor object for `t`'s storage and geometry, with no autograd history; a
    subclass keeps its class and attributes (a wrapper subclass holds its data there). With
    Python dispatch on, it is `detach` through the dispatcher, as a mode sees in PyTorch."""
    if differentiable and (t._keyset | _TLS.included) & PYTHON_KEYS:
        alias = (_DETACH.entry or _DETACH.resolve()).call(t)
        alias._base = t._base
        return alias
    alias = Tensor._make(t._storage, t._sizes, t._strides, t._offset, t._dtype, t._device)
    alias._version_counter = t._version_counter
    alias._base = t._base
    alias._keyset = t._keyset
    cls = type(t)
    if cls is not Tensor:
        sub = object.__new__(cls)
        for name in Tensor.__slots__[:-2]:
            setattr(sub, name, getattr(alias, name))
        for name in _subclass_slots(cls):  # the subclass's own fields, where set
            value = getattr(t, name, _UNSET)
            if value is not _UNSET:
                setattr(sub, name, value)
        sub.__dict__.update(t.__dict__)
        alias = sub
    return alias


_UNSET = object()
_SUBCLASS_SLOTS: dict[type, tuple[str, ...]] = {}


def _subclass_slots(cls: type) -> tuple[str, ...]:
    """The slot names the classes between `cls` and Tensor declare (their instance fields
    outside `__dict__`), once per class."""
    names = _SUBCLASS_SLOTS.get(cls)
    if names is None:
        found: list[str] = []
        for klass in cls.__mro__:
            if klass is Tensor:
                break
            slots = klass.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if name not in ("__dict__", "__weakref__") and name not in found:
                    found.append(name)
        names = _SUBCLASS_SLOTS[cls] = tuple(found)
    return names


class SavedTensor:
    """A tensor a formula needs later, with the version it had (Note: saved outputs...)."""

    __slots__ = ("_data", "_version", "_is_output", "_output_nr", "_was_leaf_grad")

    def __init__(self, t: Tensor, is_output: bool = False) -> None:
        self._version = t._version_counter.value
        # an output the node does not differentiate (mean, rstd, indices) comes back without
        # history, as PyTorch's SavedVariable keeps no grad_fn for it
        self._is_output = is_output and t.grad_fn is not None
        self._output_nr = t.output_nr
        if is_output:
            self._data = _alias_without_history(t, self._is_output)
        else:
            self._data = t

    def unpack(self, owner: Node) -> Tensor:
        t = self._data
        if t is None:
            raise RuntimeError(SECOND_BACKWARD)
        if t._version_counter.value != self._version:
            if self._is_output:
                where = f", which is output {self._output_nr} of {short_name(owner)},"
            elif t.grad_fn is not None:
                where = f", which is output {t.output_nr} of {short_name(t.grad_fn)},"
            else:
                where = ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {_type_text(t)}{where} is at version "
                f"{t._version_counter.value}; expected version {self._version} instead. Hint: "
                "enable anomaly detection to find the operation that failed to compute its "
                "gradient, with pyaten.autograd.set_detect_anomaly(True, check_nan=False)."
            )
        if self._is_output:
            alias = _alias_without_history(t)
            alias.grad_fn = owner
            alias.output_nr = self._output_nr
            alias._requires_grad = True
            return alias
        return t

    def release(self) -> None:
        self._data = None


class DtypeOnly:
    """What a formula reads of a tensor it only asks the dtype of (`handle_r_to_c(self.dtype,
    grad)`): one shared, immutable object per dtype, so recording builds nothing."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point


class _DtypeOnlyTable(dict):
    def __missing__(self, dtype: Any) -> DtypeOnly:
        value = self[dtype] = DtypeOnly(dtype)
        return value


DTYPE_ONLY: dict[Any, DtypeOnly] = _DtypeOnlyTable()


class TensorGeometry:
    """What a formula reads of a tensor it only asks the shape or dtype of (nothing saved)."""

    __slots__ = ("_sizes", "dtype", "device", "_strides", "_offset")

    def __init__(self, t: Tensor) -> None:
        self._sizes = t._sizes
        self.dtype = t._dtype
        self.device = t._device
        self._strides = t._strides
        self._offset = t._offset

    @property
    def shape(self) -> Any:
        return Size(self._sizes)

    def storage_offset(self) -> int:
        return self._offset

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self._sizes[dim]

    def stride(self, dim: int | None = None) -> Any:
        return self._strides if dim is None else self._strides[dim]

    def dim(self) -> int:
        return len(self._sizes)

    @property
    def ndim(self) -> int:
        return len(self._sizes)

    def numel(self) -> int:
        n = 1
        for s in self._sizes:
            n *= s
        return n

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point


saved_tensor_init_reference = SavedTensor.__init__
tensor_geometry_init_reference = TensorGeometry.__init__
if _ACCEL is not None:  # Note: the accelerated recording path
    SavedTensor.__init__, TensorGeometry.__init__ = _ACCEL.setup_saved(  # type: ignore[method-assign]
        SavedTensor, TensorGeometry, PYTHON_KEYS, saved_tensor_init_reference,
        tensor_geometry_init_reference, _alias_without_history)
