"""FuseOps: group bindings of dataflow blocks into primitive functions that compile to one kernel.

::

    mod = relax.transform.FuseOps()(mod)       # then FuseTIR merges each group's PrimFuncs

Each binding of a dataflow block is a node with an :class:`OpPatternKind` (from the operator's
``TOpPattern``/``op_pattern`` attribute, or for ``call_tir`` from the PrimFunc's blocks, see
:mod:`.annotate_tir_op_pattern`).  An edge producer -> consumer carries the consumer's kind,
except that a broadcast consumer whose input already has the output's shape is an
elementwise edge (``matmul -> add(bias)``).  Nodes merge into their *post-dominator* (the
nearest node every path from them passes through) in three phases, as in TVM:

0. an out_elemwise_fusable node (matmul, conv) absorbs its consumers when every path to the
   post-dominator is elementwise/broadcast (the epilogue: ``matmul + bias -> relu``);
1. elementwise and broadcast nodes merge into their post-dominator when the paths are
   injective (at any phase); injective ones in phase 1, once anchors are done;
2. injective nodes merge into a tuple that already fused into injective consumers.

A value used after the dataflow block (a non-dataflow Var) ends a group's reach.  Every group
of two or more bindings becomes a private Relax function with attribute ``Primitive=1``,
named ``fused_<callee names>`` (``fused_matmul_add``); the block calls it instead.  Inputs
(variables and constants from outside the group) become its parameters; values used
outside the group are its results (a tuple when several).  The bindings keep their spans,
and when some name a model layer (a frontend's node, see :class:`tvm.ir.span.Span`) the
function gets attribute ``source_layers``: those names, in program order.
"""

from __future__ import annotations

import heapq
from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import PassContext, module_pass
from tvm.tir.function import PrimFunc

from ..analysis.struct_info_analysis import definable_tir_vars_in_struct_info, tir_vars_in_struct_info
from ..block_builder import BlockBuilder
from ..expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..struct_info import TensorStructInfo
from ._graph_utils import relax_functions
from ._lowering_utils import (
    SOURCE_LAYERS,
    is_primitive,
    is_scalar_constant,
    layer_names,
    substitute_vars,
    value_inputs,
)
from .annotate_tir_op_pattern import OpPatternKind, op_pattern_of, prim_func_pattern

__all__ = ["FuseOps", "partition_block", "binding_pattern"]

K = OpPatternKind
_CALL_TIR = "relax.call_tir"
_MAX_NAME = 80


# ---------------------------------------------------------------------------- the graph


class _Node:
    __slots__ = ("index", "binding", "pattern", "outputs", "extern_ref", "inputs")

    def __init__(self, index: int, binding: Binding, pattern: K, extern_ref: bool):
        self.index = index
        self.binding = binding
        self.pattern = pattern
        self.extern_ref = extern_ref
        self.outputs: list[tuple[_Node, K]] = []  # (consumer, edge pattern)
        self.inputs: list[int] = []  # producer indices in this block


def binding_pattern(binding: Binding, mod: IRModule) -> OpPatternKind:
    """The fusion pattern of one binding."""
    if isinstance(binding, MatchCast):
        return K.OPAQUE
    value = binding.value
    if isinstance(value, Tuple):
        return K.TUPLE
    if isinstance(value, TupleGetItem):
        return K.INJECTIVE
    if not isinstance(value, Call) or not isinstance(value.op, Op):
        return K.OPAQUE
    if value.op.name == _CALL_TIR:
        gv = value.args[0]
        func = mod[gv] if isinstance(gv, GlobalVar) and gv in mod else None
        return prim_func_pattern(func) if isinstance(func, PrimFunc) else K.OPAQUE
    if value.op.name.startswith(("relax.call_", "relax.builtin.", "relax.memory.", "relax.vm.")):
        return K.OPAQUE
    return op_pattern_of(value.op)


def _same_shape(a: Any, b: Any) -> bool:
    sa = getattr(a, "struct_info_", None)
    sb = getattr(b, "struct_info_", None)
    if not isinstance(sa, TensorStructInfo) or not isinstance(sb, TensorStructInfo):
        return False
    va, vb = sa.shape_values, sb.shape_values
    return va is not None and vb is not None and len(va) == len(vb) and all(
        structural_equal(x, y) for x, y in zip(va, vb)
    )


def _build_graph(block: DataflowBlock, mod: IRModule) -> list[_Node]:
    nodes: list[_Node] = []
    index_of: dict[int, int] = {}
    for i, b in enumerate(block.bindings):
        node = _Node(i, b, binding_pattern(b, mod), not isinstance(b.var, DataflowVar))
        for v in value_inputs(b.value):
            j = index_of.get(id(v))
            if j is None:
                continue
            edge = node.pattern
            if edge == K.BROADCAST and _same_shape(v, b.var):
                edge = K.ELEMWISE
            nodes[j].outputs.append((node, edge))
            node.inputs.append(j)
        nodes.append(node)
        index_of[id(b.var)] = i
    return nodes


# ---------------------------------------------------------------------------- post-dominators


class _DomNode:
    __slots__ = ("node", "parent", "depth", "pattern")

    def __init__(self, node: _Node, parent: Optional[_DomNode], pattern: K):
        self.node = node
        self.parent = parent
        self.depth = 1 if parent is None else parent.depth + 1
        self.pattern = pattern


def _lca(lhs: Optional[_DomNode], rhs: Optional[_DomNode], pattern: K
         ) -> tuple[Optional[_DomNode], K]:
    while lhs is not rhs:
        if lhs is None or rhs is None:
            return None, pattern
        if lhs.depth < rhs.depth:
            pattern = max(pattern, rhs.pattern)
            rhs = rhs.parent
        elif rhs.depth < lhs.depth:
            pattern = max(pattern, lhs.pattern)
            lhs = lhs.parent
        else:
            pattern = max(pattern, lhs.pattern, rhs.pattern)
            lhs, rhs = lhs.parent, rhs.parent
    return lhs, pattern


def _post_dominator_tree(nodes: list[_Node]) -> list[_DomNode]:
    tree: list[Optional[_DomNode]] = [None] * len(nodes)
    for node in reversed(nodes):
        if node.extern_ref or not node.outputs:
            tree[node.index] = _DomNode(node, None, K.OPAQUE)
            continue
        pattern = K.ELEMWISE
        first, edge = node.outputs[0]
        parent: Optional[_DomNode] = tree[first.index]
        pattern = max(pattern, edge)
        for out, edge in node.outputs[1:]:
            parent, pattern = _lca(parent, tree[out.index], pattern)
            pattern = max(pattern, edge)
        tree[node.index] = _DomNode(node, parent, pattern)
    return tree  # type: ignore[return-value]


# ---------------------------------------------------------------------------- partitioning


class _Group:
    __slots__ = ("parent", "pattern", "num_nodes", "anchored")

    def __init__(self, pattern: K):
        self.parent: Optional[_Group] = None
        self.pattern = pattern
        self.num_nodes = 1
        self.anchored = pattern == K.OUT_ELEMWISE_FUSABLE

    def root(self) -> _Group:
        g = self
        while g.parent is not None:
            g = g.parent
        node = self
        while node.parent is not None and node.parent is not g:  # path compression
            node.parent, node = g, node.parent
        return g


class _Partitioner:
    def __init__(self, nodes: list[_Node], max_depth: int):
        self.nodes = nodes
        self.max_depth = max_depth
        self.groups = [_Group(n.pattern) for n in nodes]

    def _merge(self, child: _Group, parent: _Group) -> None:
        child, parent = child.root(), parent.root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchored:
            parent.anchored = True
            parent.pattern = max(child.pattern, parent.pattern)

    def _check_path(self, src: _Node, sink: _Node, fcond: Any) -> bool:
        visited: set[int] = set()

        def walk(node: _Node) -> bool:
            if node.index in visited:
                return True
            visited.add(node.index)
            if not fcond(self.groups[node.index].root().pattern, node is sink):
                return False
            if node is sink:
                return True
            return all(walk(out) for out, _ in node.outputs)

        return all(walk(out) for out, _ in src.outputs)

    def _count_with(self, src: _Node, sink: _Node) -> int:
        """Bindings in the group that fusing ``src`` (and its paths) into ``sink`` makes."""
        roots = {id(self.groups[sink.index].root()): self.groups[sink.index].root()}
        visited: set[int] = set()
        stack = [src]
        while stack:
            node = stack.pop()
            if node is sink or node.index in visited:
                continue
            visited.add(node.index)
            root = self.groups[node.index].root()
            roots[id(root)] = root
            stack.extend(out for out, _ in node.outputs)
        return sum(r.num_nodes for r in roots.values())

    def _commit(self, src: _Node, sink: _Node) -> None:
        target = self.groups[sink.index]
        visited: set[int] = set()

        def walk(node: _Node) -> None:
            if node is sink or node.index in visited:
                return
            visited.add(node.index)
            self._merge(self.groups[node.index], target)
            for out, _ in node.outputs:
                walk(out)

        walk(src)

    def run(self) -> list[_Group]:
        tree = _post_dominator_tree(self.nodes)
        for phase in range(3):
            for node in self.nodes:
                self._step(node, tree[node.index], phase)
        return [g.root() for g in self.groups]

    def _step(self, node: _Node, dom: _DomNode, phase: int) -> None:
        group = self.groups[node.index]
        if group.pattern == K.OPAQUE or dom.parent is None:
            return
        sink = dom.parent.node
        parent_group = self.groups[sink.index]
        if self._count_with(node, sink) > self.max_depth:
            return
        if phase == 2:
            if group.pattern > K.INJECTIVE:
                return
            root = parent_group.root()
            if root.pattern == K.TUPLE:
                return
            if parent_group.pattern == K.TUPLE and root.pattern <= K.INJECTIVE:
                if self._check_path(node, sink, lambda k, is_sink: k <= K.INJECTIVE):
                    self._commit(node, sink)
            return
        if group.root() is parent_group.root() or parent_group.pattern == K.TUPLE:
            return
        if group.pattern == K.OUT_ELEMWISE_FUSABLE:
            if phase == 0 and dom.pattern == K.ELEMWISE and self._check_path(
                node, sink, lambda k, is_sink: k <= K.BROADCAST
            ):
                self._commit(node, sink)
        elif group.pattern <= K.BROADCAST:
            if dom.pattern <= K.INJECTIVE or dom.pattern == K.COMM_REDUCE:
                def fcond(k: K, is_sink: bool) -> bool:
                    if not is_sink:
                        return k <= K.INJECTIVE
                    return k <= K.INJECTIVE or k in (K.COMM_REDUCE, K.OUT_ELEMWISE_FUSABLE)

                if self._check_path(node, sink, fcond):
                    self._commit(node, sink)
        elif group.pattern in (K.INJECTIVE, K.TUPLE):
            if phase == 1 and self._check_path(node, sink, lambda k, is_sink: k <= K.INJECTIVE):
                self._commit(node, sink)


def partition_block(block: DataflowBlock, mod: IRModule, max_depth: int = 256) -> list[list[int]]:
    """The groups (lists of binding indices, in order) FuseOps forms in ``block``."""
    nodes = _build_graph(block, mod)
    roots = _Partitioner(nodes, max_depth).run()
    members: dict[int, list[int]] = {}
    for i, root in enumerate(roots):
        members.setdefault(id(root), []).append(i)
    return sorted(members.values(), key=lambda m: m[0])


# ---------------------------------------------------------------------------- rewriting


def _callee_name(value: Any) -> Optional[str]:
    if not isinstance(value, Call) or not isinstance(value.op, Op):
        return None
    if value.op.name == _CALL_TIR and isinstance(value.args[0], GlobalVar):
        return value.args[0].name_hint
    return value.op.name.rsplit(".", 1)[-1]


def _symbolic_vars_used(value: Any) -> list[Any]:
    from tvm.tir.stmt_functor import free_vars as tir_free_vars

    found: list[Any] = []

    def walk(e: Any) -> None:
        if isinstance(e, (ShapeExpr, PrimValue)):
            vals = e.values if isinstance(e, ShapeExpr) else (e.value,)
            for v in vals:
                found.extend(tir_free_vars(v))
        elif isinstance(e, Tuple):
            for f in e.fields:
                walk(f)
        elif isinstance(e, Call):
            for a in e.args:
                walk(a)
            for s in e.sinfo_args:
                found.extend(tir_vars_in_struct_info(s))

    walk(value)
    return found


class _BlockFuser:
    def __init__(self, mod: IRModule, max_depth: int):
        self.mod = mod
        self.max_depth = max_depth
        self.next_suffix: dict[str, int] = {}  # name -> first suffix not tried yet

    def fuse_seq(self, seq: SeqExpr) -> SeqExpr:
        blocks, changed = [], False
        for block in seq.blocks:
            if isinstance(block, DataflowBlock):
                new = self.fuse_block(block)
            else:
                new = self._recurse_bindings(block)
            changed = changed or new is not block
            blocks.append(new)
        if not changed:
            return seq
        out = SeqExpr(blocks, seq.body, span=seq.span)
        object.__setattr__(out, "struct_info_", seq.struct_info_)
        return out

    def _recurse_bindings(self, block: BindingBlock) -> BindingBlock:
        bindings, changed = [], False
        for b in block.bindings:
            if isinstance(b, VarBinding) and isinstance(b.value, If):
                v = b.value
                then, other = self.fuse_seq(v.true_branch), self.fuse_seq(v.false_branch)
                if then is not v.true_branch or other is not v.false_branch:
                    new_if = If(v.cond, then, other, span=v.span)
                    object.__setattr__(new_if, "struct_info_", v.struct_info_)
                    b = VarBinding(b.var, new_if, span=b.span)
                    changed = True
            bindings.append(b)
        return type(block)(bindings, span=block.span) if changed else block

    def fuse_block(self, block: DataflowBlock) -> DataflowBlock:
        nodes = _build_graph(block, self.mod)
        roots = _Partitioner(nodes, self.max_depth).run()
        unit_of: dict[int, int] = {}
        units: list[list[int]] = []
        by_root: dict[int, int] = {}
        for i, root in enumerate(roots):
            u = by_root.setdefault(id(root), len(units))
            if u == len(units):
                units.append([])
            units[u].append(i)
            unit_of[i] = u
        # a group of one binding, or without any call, stays as it is
        final: list[list[int]] = []
        for members in units:
            calls = [i for i in members if _callee_name(nodes[i].binding.value) is not None]
            if len(members) > 1 and calls and self._closed(nodes, members):
                final.append(members)
            else:
                final.extend([i] for i in members)
        if all(len(m) == 1 for m in final):
            return block
        unit_of = {i: u for u, members in enumerate(final) for i in members}
        order = _topological_units(final, nodes, unit_of)
        bindings: list[Binding] = []
        for u in order:
            members = final[u]
            if len(members) == 1:
                bindings.append(nodes[members[0]].binding)
            else:
                bindings.extend(self._make_group(nodes, members, unit_of, u))
        return DataflowBlock(bindings, span=block.span)

    @staticmethod
    def _closed(nodes: list[_Node], members: list[int]) -> bool:
        """Whether the group's symbolic variables are all defined by its inputs."""
        inside = {id(nodes[i].binding.var) for i in members}
        defined: set[int] = set()
        for i in members:
            for v in value_inputs(nodes[i].binding.value):
                if id(v) not in inside:
                    sinfo = getattr(v, "struct_info_", None)
                    if sinfo is not None:
                        defined.update(id(t) for t in definable_tir_vars_in_struct_info(sinfo))
        return all(
            id(t) in defined for i in members
            for t in _symbolic_vars_used(nodes[i].binding.value)
        )

    def _make_group(self, nodes: list[_Node], members: list[int], unit_of: dict[int, int],
                    unit: int) -> list[Binding]:
        group = [nodes[i].binding for i in members]
        inside = {id(b.var) for b in group}
        inputs: list[Any] = []
        seen: set[int] = set()
        for b in group:
            for v in value_inputs(b.value):
                if id(v) not in inside and id(v) not in seen and not is_scalar_constant(v):
                    seen.add(id(v))
                    inputs.append(v)
        outputs = [
            nodes[i].binding.var for i in members
            if nodes[i].extern_ref or any(unit_of[c.index] != unit for c, _ in nodes[i].outputs)
        ]
        names = [n for n in (_callee_name(b.value) for b in group) if n]
        name = ("fused_" + "_".join(names))[:_MAX_NAME]
        gv = self._make_function(name, inputs, group, outputs)
        fbb = BlockBuilder(self.mod)
        call = fbb.normalize(Call(gv, inputs))
        if len(outputs) == 1:
            return [VarBinding(outputs[0], call)]
        tup = DataflowVar(f"{name}_out", call.struct_info)
        out: list[Binding] = [VarBinding(tup, call)]
        for k, var in enumerate(outputs):
            out.append(VarBinding(var, fbb.normalize(TupleGetItem(tup, k))))
        return out

    def _make_function(self, name: str, inputs: list[Any], group: list[Binding],
                       outputs: list[Var]) -> GlobalVar:
        params, remap = [], {}
        for k, v in enumerate(inputs):
            hint = v.name_hint if isinstance(v, Var) else f"const{k}"
            p = Var(hint, v.struct_info)
            params.append(p)
            remap[v] = p
        unique, k = name, self.next_suffix.get(name, 0)
        if k:
            unique = f"{name}{k}"
        while unique in self.mod:
            k += 1
            unique = f"{name}{k}"
        self.next_suffix[name] = k + 1
        name = unique
        fbb = BlockBuilder(self.mod)
        out_ids = {id(v) for v in outputs}
        attrs: dict[str, Any] = {"Primitive": 1}
        layers = layer_names(group)
        if layers:
            attrs[SOURCE_LAYERS] = tuple(layers)
        with fbb.function(name, params, attrs=attrs, private=True):
            with fbb.dataflow():
                for b in group:
                    value = substitute_vars(b.value, remap, self.mod)
                    with fbb.spanned(b.span):
                        if id(b.var) in out_ids:
                            remap[b.var] = fbb.emit_output(value, b.var.name_hint)
                        else:
                            remap[b.var] = fbb.emit(value, b.var.name_hint)
            result = remap[outputs[0]] if len(outputs) == 1 else Tuple(
                [remap[v] for v in outputs]
            )
            fbb.emit_func_output(result)
        func = fbb.get()[name]
        gv = GlobalVar(name)
        self.mod = self.mod.with_function(gv, func)
        return gv


def _topological_units(units: list[list[int]], nodes: list[_Node],
                       unit_of: dict[int, int]) -> list[int]:
    deps: list[set[int]] = [set() for _ in units]
    users: list[set[int]] = [set() for _ in units]
    for u, members in enumerate(units):
        for i in members:
            for j in nodes[i].inputs:
                p = unit_of[j]
                if p != u:
                    deps[u].add(p)
                    users[p].add(u)
    remaining = [len(d) for d in deps]
    ready = [(units[u][0], u) for u in range(len(units)) if remaining[u] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(u)
        for w in users[u]:
            remaining[w] -= 1
            if remaining[w] == 0:
                heapq.heappush(ready, (units[w][0], w))
    if len(order) != len(units):  # pragma: no cover - fusing along post-dominators keeps a DAG
        raise RuntimeError("FuseOps: the fused groups depend on each other cyclically")
    return order


def _not_fusable(func: Function) -> bool:
    """Primitive functions (already a group) and bodies not in normal form are left alone."""
    return is_primitive(func) or not isinstance(func.body, SeqExpr)


def FuseOps(fuse_opt_level: int = -1, max_fuse_depth: int = 256) -> Any:  # noqa: N802
    """The fusion pass (see the module docstring).

    ``fuse_opt_level`` < 1 (or -1 with a PassContext opt_level < 1) disables fusion;
    ``max_fuse_depth`` bounds the bindings of one group.
    """
    if isinstance(max_fuse_depth, bool) or not isinstance(max_fuse_depth, int) or max_fuse_depth < 1:
        raise ValueError(f"FuseOps: max_fuse_depth must be a positive int, got {max_fuse_depth!r}")

    @module_pass(opt_level=0, name="FuseOps")
    def fuse_ops(mod: IRModule, ctx: PassContext) -> IRModule:
        level = ctx.opt_level if fuse_opt_level == -1 else fuse_opt_level
        if level < 1:
            return mod
        fuser = _BlockFuser(mod, max_fuse_depth)
        updates = {}
        for gv, func in relax_functions(mod, skip=_not_fusable):
            body = fuser.fuse_seq(func.body)
            if body is not func.body:
                updates[gv.name_hint] = func.with_fields(body=body)
        # the fuser's module holds the new primitive functions
        return fuser.mod.with_functions(updates) if updates else mod

    return fuse_ops

