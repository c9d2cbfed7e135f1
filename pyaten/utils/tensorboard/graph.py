"""The model's graph for TensorBoard's Graphs tab, captured from one forward through the
dispatcher's trace: each operator call the model's code makes (the top of dispatch, as the
profiler's events) becomes a node named by the module it ran in (`Sequential/Linear[0]/3`),
its inputs the nodes that produced its tensor arguments, parameters (`prim::GetAttr`) or the
model's inputs (`IO Node`), as PyTorch's traced graph lays them out."""

from __future__ import annotations

from typing import Any

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from pyaten.autograd.grad_mode import no_grad
from pyaten.core.tensor import Tensor
from pyaten.dispatch import trace
from pyaten.profiler._recorder import _event_name


def _shape_attr(tensors: list[Tensor]) -> AttrValue:
    shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in t.shape])
              for t in tensors]
    return AttrValue(list=AttrValue.ListValue(shape=shapes))


class _Capture:
    def __init__(self, model: Any) -> None:
        self.nodes: list[NodeDef] = []
        self.producer: dict[int, str] = {}
        self.keep: list[Tensor] = []  # ids stay valid while the capture runs
        self.scope: list[str] = [type(model).__name__]
        self.depth = 0
        self.count = 0
        self.params = {}
        for module_name, module in model.named_modules():
            for name, param in module.named_parameters(recurse=False):
                self.params[id(param)] = (module_name, name, param)

    def scope_of(self, model: Any, module_name: str) -> str:
        path = [type(model).__name__]
        module = model
        for part in module_name.split(".") if module_name else []:
            module = module._modules[part]
            path.append(f"{type(module).__name__}[{part}]")
        return "/".join(path)

    def source(self, model: Any, t: Tensor) -> str | None:
        found = self.producer.get(id(t))
        if found is not None:
            return found
        if id(t) in self.params:
            module_name, name, param = self.params[id(t)]
            node_name = f"{self.scope_of(model, module_name)}/{name}/{name}"
            self.nodes.append(NodeDef(name=node_name, op="prim::GetAttr",
                                      attr={"_output_shapes": _shape_attr([param])}))
            self.producer[id(t)] = node_name
            return node_name
        return None

    def on_call(self, model: Any, node: trace.Node, args: tuple) -> Any:
        if node.redispatch:
            return None
        self.depth += 1
        if self.depth > 1:
            def leave_nested(result: Any) -> None:
                self.depth -= 1

            return leave_nested
        inputs = []
        for arg in args:
            for item in arg if isinstance(arg, (list, tuple)) else (arg,):
                if isinstance(item, Tensor):
                    name = self.source(model, item)
                    if name is not None:
                        inputs.append(name)
        scope = "/".join(self.scope)

        def leave(result: Any) -> None:
            self.depth -= 1
            outputs = [r for r in (result if isinstance(result, (tuple, list)) else (result,))
                       if isinstance(r, Tensor)]
            self.count += 1
            name = f"{scope}/{self.count}"
            self.nodes.append(NodeDef(name=name, op=_event_name(node.operator), input=inputs,
                                      attr={"_output_shapes": _shape_attr(outputs)}))
            for out in outputs:
                self.producer[id(out)] = name
                self.keep.append(out)

        return leave


def graph(model: Any, args: tuple) -> GraphDef:
    """Run `model(*args)` once without grad and return its GraphDef."""
    capture = _Capture(model)
    for i, arg in enumerate(args):
        if isinstance(arg, Tensor):
            name = f"input/input.{i + 1}"
            capture.nodes.append(NodeDef(name=name, op="IO Node",
                                         attr={"_output_shapes": _shape_attr([arg])}))
            capture.producer[id(arg)] = name
    handles = []
    for module_name, module in model.named_modules():
        if module is model:
            continue
        scope = capture.scope_of(model, module_name).split("/")

        def enter(mod: Any, inputs: Any, scope: list[str] = scope) -> None:
            capture.scope = scope

        def leave(mod: Any, inputs: Any, output: Any, scope: list[str] = scope) -> None:
            capture.scope = scope[:-1]

        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave))
    recorder = trace.Trace()
    previous = trace.set_call_hook(lambda node, a: capture.on_call(model, node, a))
    try:
        with recorder, no_grad():
            result = model(*args)
    finally:
        trace.set_call_hook(previous)
        for handle in handles:
            handle.remove()
    outputs = [r for r in (result if isinstance(result, (tuple, list)) else (result,))
               if isinstance(r, Tensor)]
    for i, out in enumerate(outputs):
        capture.nodes.append(NodeDef(
            name=f"output/output.{i + 1}", op="IO Node",
            input=[capture.producer.get(id(out), "")],
            attr={"_output_shapes": _shape_attr([out])},
        ))
    return GraphDef(node=capture.nodes, versions=VersionDef(producer=22))
