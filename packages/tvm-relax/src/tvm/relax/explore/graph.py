"""A Relax function as a plain dataflow graph, and which fused kernel each binding ended in.

::

    g = graph_of(mod)                    # one node per binding of main, plus inputs/constants
    g = graph_of(mod, kernels=fused)     # ... each node tagged with the kernel it ended in

The graph holds strings only (names, shapes, attributes), never tensor data, so that it can be
laid out, written as JSON or drawn without the IR.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Union

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.tir.expr import IntImm
from tvm.tir.function import PrimFunc

from ..expr import (
    Binding,
    Call,
    Constant,
    ExternFunc,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from ..struct_info import ShapeStructInfo, TensorStructInfo, TupleStructInfo
from ..transform._lowering_utils import is_primitive, value_inputs

__all__ = ["Node", "Graph", "graph_of", "kernel_assignment", "layers_of"]

#: function attribute listing the source-model layers a fused kernel was made from
SOURCE_LAYERS_ATTR = "source_layers"


@dataclass
class Node:
    """One value of the function: an input, a constant, a binding or the output.

    ``kind`` is ``"input"``, ``"constant"``, ``"op"`` (a Relax operator), ``"kernel"`` (a call
    of a PrimFunc, a fused primitive function or an external kernel), ``"call"`` (another
    Relax function), ``"tuple"``, ``"get_item"``, ``"other"`` or ``"output"``.  ``kernel`` is
    the name of the compiled kernel the value is computed in (the profile's row name), when
    known, and ``call`` the binding calling it (identical kernels are shared by several
    calls); ``layers`` the source-model layers (ONNX node names) it comes from.
    """

    id: str
    name: str
    kind: str
    op: str
    shape: str = ""
    dtype: str = ""
    kernel: Optional[str] = None
    call: Optional[str] = None
    layers: tuple[str, ...] = ()
    attrs: dict[str, str] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)


@dataclass
class Graph:
    """Nodes in definition order (a topological order); edges are ``node.inputs``."""

    name: str
    nodes: list[Node]

    def __post_init__(self) -> None:
        self._by_id = {n.id: n for n in self.nodes}

    @property
    def edges(self) -> list[tuple[str, str]]:
        """``(producer id, consumer id)`` pairs, one per operand."""
        return [(src, n.id) for n in self.nodes for src in n.inputs]

    @property
    def inputs(self) -> list[str]:
        return [n.id for n in self.nodes if n.kind == "input"]

    @property
    def outputs(self) -> list[str]:
        return [n.id for n in self.nodes if n.kind == "output"]

    @property
    def kernels(self) -> list[str]:
        """Names of the kernels the nodes are tagged with, in order of first use."""
        return list(dict.fromkeys(n.kernel for n in self.nodes if n.kernel))

    def node(self, node_id: str) -> Node:
        return self._by_id[node_id]

    def find(self, name: str) -> Node:
        """The (first) node called ``name``; KeyError naming the known ones if none."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node {name!r} in graph {self.name!r}; it has: "
                       f"{', '.join(n.name for n in self.nodes)}")


# ---------------------------------------------------------------------------- values


def _dims(shape: Any) -> Optional[str]:
    values = getattr(shape, "values", None)
    if values is None:
        return None
    return "x".join(str(v.value) if isinstance(v, IntImm) else str(v) for v in values) if values \
        else "scalar"


def _type_of(sinfo: Any) -> tuple[str, str]:
    """(shape, dtype) text of a StructInfo."""
    if isinstance(sinfo, TensorStructInfo):
        shape = _dims(sinfo.shape)
        if shape is None:
            shape = f"ndim={sinfo.ndim}" if sinfo.ndim >= 0 else "?"
        return shape, str(sinfo.dtype or "")
    if isinstance(sinfo, TupleStructInfo):
        parts = [_type_of(f) for f in sinfo.fields]
        return "(" + ", ".join(f"{s} {d}".strip() for s, d in parts) + ")", ""
    if isinstance(sinfo, ShapeStructInfo):
        return "shape", ""
    return (type(sinfo).__name__.replace("StructInfo", "").lower() if sinfo is not None else ""), ""


def layers_of(obj: Any) -> tuple[str, ...]:
    """Source-layer names recorded on a binding or expression (its span's source name) or on
    a function (its ``source_layers`` attribute)."""
    attrs = getattr(obj, "attrs", None)
    if isinstance(obj, (Function, PrimFunc)) and attrs:
        found = attrs.get(SOURCE_LAYERS_ATTR)
        if found:
            return tuple(str(x) for x in found)
        return ()
    span = getattr(obj, "span", None)
    source = getattr(getattr(span, "source", None), "name", None)
    return (str(source),) if source else ()


def _attrs_text(attrs: Any) -> dict[str, str]:
    if attrs is None:
        return {}
    fields = getattr(attrs, "__dataclass_fields__", None)
    if fields:
        return {k: _short(getattr(attrs, k)) for k in fields}
    if isinstance(attrs, dict):
        return {str(k): _short(v) for k, v in attrs.items()}
    return {"attrs": _short(attrs)}


def _short(value: Any, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _callee(call: Call, mod: Optional[IRModule]) -> tuple[str, str, Optional[str]]:
    """(kind, op label, kernel name) of a call."""
    op = call.op
    if isinstance(op, Op):
        name = op.name
        if name in ("relax.call_tir", "relax.call_tir_inplace", "relax.call_dps_packed") and call.args:
            target = call.args[0]
            if isinstance(target, GlobalVar):
                return "kernel", target.name_hint, target.name_hint
            if isinstance(target, ExternFunc):
                return "kernel", target.global_symbol, target.global_symbol
        return "op", name[len("relax."):] if name.startswith("relax.") else name, None
    if isinstance(op, GlobalVar):
        func = mod[op] if mod is not None and op in mod else None
        if is_primitive(func) or isinstance(func, PrimFunc):
            return "kernel", op.name_hint, op.name_hint
        return "call", op.name_hint, None
    if isinstance(op, ExternFunc):
        return "kernel", op.global_symbol, op.global_symbol
    return "call", _short(op, 60), None


def _bindings(seq: Any) -> Iterator[Binding]:
    if isinstance(seq, SeqExpr):
        for block in seq.blocks:
            yield from block.bindings


def _function(mod_or_func: Union[IRModule, Function], name: str) -> tuple[Function, Optional[IRModule]]:
    if isinstance(mod_or_func, Function):
        return mod_or_func, None
    if not isinstance(mod_or_func, IRModule):
        raise TypeError(f"graph_of: expected an IRModule or a relax.Function, got "
                        f"{type(mod_or_func).__name__}")
    if name not in mod_or_func:
        raise KeyError(f"graph_of: the module has no function {name!r}; it has: "
                       f"{', '.join(gv.name_hint for gv in mod_or_func.functions)}")
    func = mod_or_func[name]
    if not isinstance(func, Function):
        raise TypeError(f"graph_of: {name!r} is a {type(func).__name__}, not a Relax function")
    return func, mod_or_func


# ---------------------------------------------------------------------------- graph


def graph_of(mod_or_func: Union[IRModule, Function], name: str = "main",
             kernels: Optional[IRModule] = None) -> Graph:
    """The dataflow graph of Relax function ``name`` (or of the function given).

    Nodes: the parameters, every constant operand (shape and dtype only), one node per
    binding (bindings of nested ``If`` branches are not expanded) and one output node.
    A binding that calls a kernel is tagged with it; ``kernels``, a later stage of the same
    module (after FuseOps or FuseTIR), tags every binding with the kernel it was fused into
    (see :func:`kernel_assignment`).
    """
    func, mod = _function(mod_or_func, name)
    nodes: list[Node] = []
    id_of: dict[int, str] = {}

    def new(node_name: str, kind: str, op: str, sinfo: Any, **extra: Any) -> Node:
        shape, dtype = _type_of(sinfo)
        node = Node(f"n{len(nodes)}", node_name, kind, op, shape, dtype, **extra)
        nodes.append(node)
        return node

    constants = 0

    def operand(e: Any) -> Optional[str]:
        nonlocal constants
        found = id_of.get(id(e))
        if found is None and isinstance(e, Constant):
            found = id_of[id(e)] = new(f"const{constants}", "constant", "constant",
                                       e.struct_info_).id
            constants += 1
        return found

    for p in func.params:
        id_of[id(p)] = new(p.name_hint, "input", "input", p.struct_info_).id
    assignment = kernel_assignment(func, kernels, name) if kernels is not None else {}
    for b in _bindings(func.body):
        value = b.value
        kind, op, kernel, attrs = "other", type(value).__name__.lower(), None, {}
        operands = list(value_inputs(value))
        if isinstance(b, MatchCast):
            kind, op = "other", "match_cast"
        elif isinstance(value, Call):
            kind, op, kernel = _callee(value, mod)
            attrs = _attrs_text(value.attrs)
        elif isinstance(value, Tuple):
            kind, op = "tuple", "tuple"
        elif isinstance(value, TupleGetItem):
            kind, op = "get_item", f"get_item[{value.index}]"
        elif isinstance(value, Var):
            op = "alias"
        elif isinstance(value, Constant):
            op = "constant"
            operands = []
        elif isinstance(value, If):
            op = "if"
            operands = [value.cond]
        inputs = [i for i in (operand(e) for e in operands) if i is not None]
        call = b.var.name_hint if kernel else None
        kernel, call = assignment.get(id(b.var), (kernel, call))
        layers = layers_of(b) or layers_of(value)
        if not layers and kind == "kernel" and mod is not None and op in mod:
            layers = layers_of(mod[op])  # a fused kernel lists the layers it was made from
        node = new(b.var.name_hint, kind, op, b.var.struct_info_, kernel=kernel, call=call,
                   layers=layers, attrs=attrs, inputs=inputs)
        id_of[id(b.var)] = node.id
    result = func.body.body if isinstance(func.body, SeqExpr) else func.body
    outs = result.fields if isinstance(result, Tuple) else (result,)
    out_inputs = [i for i in (operand(e) for e in outs) if i is not None]
    new("output", "output", "output", getattr(result, "struct_info_", None), inputs=out_inputs)
    return Graph(name if mod is not None else "function", nodes)


# ---------------------------------------------------------------------------- kernels


def _kernel_calls(func: Function, mod: IRModule) -> list[tuple[str, Call, list[Var]]]:
    """(kernel name, call, result variables) of every kernel call of ``func``, in order.  A
    multi-result call's variables are those bound to its ``TupleGetItem``s."""
    pending: dict[int, tuple[str, Call, list[Var]]] = {}
    order: list[tuple[str, Call, list[Var]]] = []
    for b in _bindings(func.body):
        value = b.value
        if isinstance(value, Call):
            kind, _, kernel = _callee(value, mod)
            if kind == "kernel" and kernel:
                entry = (kernel, value, [b.var])
                pending[id(b.var)] = entry
                order.append(entry)
        elif isinstance(value, TupleGetItem) and id(value.tuple_value) in pending:
            pending[id(value.tuple_value)][2].append(b.var)
    return order


def kernel_assignment(before: Function, after: IRModule, name: str = "main"
                      ) -> dict[int, tuple[str, str]]:
    """``{id(binding var of before): (kernel name, calling binding's name)}``: the kernel call
    of ``after`` (FuseOps or FuseTIR output of the same module) each binding of ``before`` is
    computed in.

    A kernel call's arguments and results are matched to ``before``'s variables (the same
    variable, as the passes keep them, else the same unique name); the bindings of ``before``
    the results depend on, short of the arguments, are the kernel's.  Calls are visited in
    order and a binding keeps its first kernel, so a producer's kernel is settled before its
    consumers'.  Bindings left over are matched by source layer against the kernels'
    ``source_layers`` attribute when the functions carry it.
    """
    if not isinstance(after, IRModule):
        raise TypeError(f"kernels must be an IRModule, got {type(after).__name__}")
    if name not in after:
        raise KeyError(f"the kernels module has no function {name!r}")
    producers: dict[int, Binding] = {}
    by_name: dict[str, Optional[Var]] = {}
    for v in before.params:
        by_name[v.name_hint] = None if v.name_hint in by_name else v
    for b in _bindings(before.body):
        producers[id(b.var)] = b
        by_name[b.var.name_hint] = None if b.var.name_hint in by_name else b.var
    known = {id(v) for v in before.params} | set(producers)

    def match(v: Any) -> Optional[int]:
        if not isinstance(v, Var):
            return None
        if id(v) in known:
            return id(v)
        same = by_name.get(v.name_hint)
        return id(same) if same is not None else None

    assigned: dict[int, tuple[str, str]] = {}
    calls = _kernel_calls(after[name], after)
    for kernel, call, results in calls:
        tag = (kernel, results[0].name_hint)
        stop = {m for m in (match(a) for a in value_inputs(call)) if m is not None}
        stack = [m for m in (match(r) for r in results) if m is not None]
        while stack:
            vid = stack.pop()
            if vid in assigned or vid not in producers:
                continue
            assigned[vid] = tag
            for operand in value_inputs(producers[vid].value):
                if id(operand) not in stop:
                    stack.append(id(operand))
    first_call: dict[str, str] = {}
    for kernel, _, results in calls:
        first_call.setdefault(kernel, results[0].name_hint)
    _assign_by_layers(producers, assigned, after, first_call)
    return assigned


def _assign_by_layers(producers: dict[int, Binding], assigned: dict[int, tuple[str, str]],
                      after: IRModule, calls: dict[str, str]) -> None:
    owner: dict[str, tuple[str, str]] = {}
    for gv, func in after.functions.items():
        for layer in layers_of(func) if isinstance(func, (Function, PrimFunc)) else ():
            owner.setdefault(layer, (gv.name_hint, calls.get(gv.name_hint, gv.name_hint)))
    if not owner:
        return
    for vid, b in producers.items():
        if vid not in assigned:
            for layer in layers_of(b) or layers_of(b.value):
                if layer in owner:
                    assigned[vid] = owner[layer]
                    break
