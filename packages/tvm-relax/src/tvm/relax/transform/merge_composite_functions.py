"""MergeCompositeFunctions: calls of one backend's composite functions, grouped.

Input: the output of ``FuseOpsByPattern(..., annotate_codegen=False)``, whose functions call
private functions with attribute ``Composite`` (``"cblas.matmul"``: backend ``cblas``).
Walking each dataflow block in order, a composite call joins a group of the same backend
whose results it reads, unless it also reads something computed outside the group from the
group's results (joining would create a cycle); otherwise it starts a group.  Each group
becomes one function with ``Codegen`` (the backend) and ``global_symbol``, binding its
composite functions locally and returning the results used outside (a tuple for several);
the block is re-ordered topologically with one call per group.  Composite functions no
longer called are removed.
"""

from __future__ import annotations

import heapq
from typing import Any

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.transform import PassContext, module_pass

from ..block_builder import BlockBuilder
from ..expr import (BindingBlock, Call, DataflowBlock, DataflowVar, Function, SeqExpr, Tuple,
                    TupleGetItem, Var, VarBinding)
from ..struct_info import TupleStructInfo
from ._graph_utils import UniqueNames, count_uses, relax_functions
from .fuse_ops_by_pattern import seq_expr
from ._lowering_utils import substitute_vars, value_inputs

__all__ = ["MergeCompositeFunctions"]


def _composite_of(mod: IRModule, value: Any) -> Any:
    if isinstance(value, Call) and isinstance(value.op, GlobalVar) and value.op in mod:
        func = mod[value.op]
        if isinstance(func, Function) and func.attrs.get("Composite") and not func.attrs.get(
                "Codegen"):
            return func
    return None


class _Group:
    def __init__(self, backend: str):
        self.backend = backend
        self.members: list[int] = []
        self.vars: set[int] = set()
        self.taint: set[int] = set()


class _Merger:
    def __init__(self, mod: IRModule, report: Any):
        self.mod = mod
        self.report = report
        self.used: set[str] = set()
        self.names = UniqueNames()

    def merge_block(self, block: DataflowBlock, uses: dict[int, int], fname: str
                    ) -> DataflowBlock:
        bindings = list(block.bindings)
        groups: list[_Group] = []
        group_of: dict[int, int] = {}
        for i, b in enumerate(bindings):
            func = _composite_of(self.mod, b.value) if isinstance(b, VarBinding) else None
            args = {id(v) for v in value_inputs(b.value)}
            joined = None
            if func is not None:
                backend = str(func.attrs["Composite"]).split(".", 1)[0]
                for g, grp in enumerate(groups):
                    if grp.backend == backend and args & grp.vars and not args & grp.taint:
                        joined = g
                        break
                if joined is None:
                    groups.append(_Group(backend))
                    joined = len(groups) - 1
                groups[joined].members.append(i)
                groups[joined].vars.add(id(b.var))
                group_of[i] = joined
            for g, grp in enumerate(groups):
                if g != joined and args & (grp.vars | grp.taint):
                    grp.taint.add(id(b.var))
        if not groups:
            return block
        # units: one per group, one per other binding; topological order, original first
        units: list[list[int]] = [grp.members for grp in groups]
        unit_of = {i: g for i, g in group_of.items()}
        for i in range(len(bindings)):
            if i not in group_of:
                unit_of[i] = len(units)
                units.append([i])
        defined_in = {id(b.var): unit_of[i] for i, b in enumerate(bindings)}
        deps: list[set[int]] = [set() for _ in units]
        for u, members in enumerate(units):
            for i in members:
                for v in value_inputs(bindings[i].value):
                    d = defined_in.get(id(v))
                    if d is not None and d != u:
                        deps[u].add(d)
        users: list[set[int]] = [set() for _ in units]
        for u, ds in enumerate(deps):
            for d in ds:
                users[d].add(u)
        remaining = [len(d) for d in deps]
        ready = [(units[u][0], u) for u in range(len(units)) if not remaining[u]]
        heapq.heapify(ready)
        out: list[Any] = []
        while ready:
            _, u = heapq.heappop(ready)
            if u < len(groups):
                out.extend(self._emit_group(groups[u], bindings, uses, fname))
            else:
                out.append(bindings[units[u][0]])
            for w in users[u]:
                remaining[w] -= 1
                if not remaining[w]:
                    heapq.heappush(ready, (units[w][0], w))
        if len(out) < len(bindings) - sum(len(g.members) - 1 for g in groups):
            raise RuntimeError("MergeCompositeFunctions: the groups depend on each other "
                               "cyclically")  # pragma: no cover - the taint check prevents it
        return DataflowBlock(out, span=block.span)

    def _unique(self, base: str) -> str:
        return self.names.fresh(self.mod, base)

    def _emit_group(self, grp: _Group, bindings: list[Any], uses: dict[int, int],
                    fname: str) -> list[VarBinding]:
        group = [bindings[i] for i in grp.members]
        inside = {id(b.var) for b in group}
        inputs: list[Any] = []
        inner_uses: dict[int, int] = {}
        for b in group:
            for v in value_inputs(b.value):
                inner_uses[id(v)] = inner_uses.get(id(v), 0) + 1
                if id(v) not in inside and isinstance(v, Var) and not any(v is w for w in inputs):
                    inputs.append(v)
        outputs = [b.var for b in group if uses.get(id(b.var), 0) > inner_uses.get(id(b.var), 0)]
        params = [Var(v.name_hint, v.struct_info) for v in inputs]
        remap: dict[Any, Any] = dict(zip(inputs, params))
        inner: list[VarBinding] = []
        names = []
        for b in group:
            gv = b.value.op
            self.used.add(gv.name_hint)
            names.append(gv.name_hint)
            comp = self.mod[gv]
            fvar = Var(gv.name_hint, comp.struct_info)
            inner.append(VarBinding(fvar, comp))
            new_var = Var(b.var.name_hint, b.var.struct_info)
            call = Call(fvar, [substitute_vars(a, remap) for a in b.value.args])
            object.__setattr__(call, "struct_info_", comp.ret_struct_info)
            inner.append(VarBinding(new_var, call))
            remap[b.var] = new_var
        if len(outputs) == 1:
            result: Any = remap[outputs[0]]
            ret = result.struct_info
        else:
            result = Tuple([remap[v] for v in outputs])
            ret = TupleStructInfo([v.struct_info for v in outputs])
            object.__setattr__(result, "struct_info_", ret)
        base = "fused_" + "_".join(n.removeprefix("fused_") for n in names)[:80]
        symbol = self._unique(f"{base}_{grp.backend}")
        func = Function(params, seq_expr([BindingBlock(inner)], result), ret,
                        attrs={"Codegen": grp.backend, "global_symbol": symbol})
        gv = GlobalVar(symbol)
        self.mod = self.mod.with_function(gv, func)
        if self.report is not None:
            self.report.merge(symbol, names)
        bb = BlockBuilder(self.mod)
        call = bb.normalize(Call(gv, inputs))
        if len(outputs) == 1:
            return [VarBinding(outputs[0], call)]
        tup = DataflowVar(f"{symbol}_out", call.struct_info)
        return [VarBinding(tup, call)] + [
            VarBinding(v, bb.normalize(TupleGetItem(tup, k))) for k, v in enumerate(outputs)]


def MergeCompositeFunctions(report: Any = None) -> Any:  # noqa: N802 - TVM's pass name
    """The merging pass (see the module docstring)."""

    @module_pass(opt_level=0, name="MergeCompositeFunctions")
    def merge_composite_functions(mod: IRModule, ctx: PassContext) -> IRModule:
        merger = _Merger(mod, report)
        updates = {}
        for gv, func in relax_functions(mod):
            if not isinstance(func.body, SeqExpr):
                continue
            uses = count_uses(func)
            blocks = [merger.merge_block(b, uses, gv.name_hint)
                      if isinstance(b, DataflowBlock) else b for b in func.body.blocks]
            if any(a is not b for a, b in zip(blocks, func.body.blocks)):
                updates[gv.name_hint] = func.with_fields(
                    body=seq_expr(blocks, func.body.body, span=func.body.span))
        if not updates:
            return mod
        out = merger.mod.with_functions(updates)
        for name in sorted(merger.used):
            out = out.without_function(name)
        return out

    return merge_composite_functions
