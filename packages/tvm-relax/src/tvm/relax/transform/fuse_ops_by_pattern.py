"""FuseOpsByPattern: the bindings a backend's pattern matches become a composite function.

``FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False)`` walks the
dataflow blocks of every Relax function.  Patterns are tried in the order given (put the
larger ones, ``matmul + bias``, before ``matmul``); each is matched at every binding not
taken yet, seeing through the block's earlier bindings.  A match covers the bindings its
call patterns matched; it is taken when its check accepts it and its intermediate results
are used only inside it.  It becomes a private function with attributes
``Composite`` (the pattern name) and ``Primitive``, called where the match's last binding
was.  With ``annotate_codegen`` the composite function is a local function of an outer
one that carries ``Codegen`` (the backend) and ``global_symbol``, as
:func:`MergeCompositeFunctions` makes; :func:`RunCodegen` compiles those.

Constants stay inside the composite function (``bind_constants=True``) or become its
parameters.  Matches a check rejected are recorded, with the reason, in ``report`` (an
:class:`~tvm.relax.backend.OffloadReport`) when one is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.transform import PassContext, module_pass

from ..backend.registry import FusionPattern, PatternCheckContext
from ..block_builder import BlockBuilder
from ..dpl.pattern import CallPattern, Pattern, TupleGetItemPattern, TuplePattern
from ..expr import (Call, Constant, DataflowBlock, Function, SeqExpr, Var,
                    VarBinding)
from ._graph_utils import UniqueNames, count_uses, relax_functions
from ._lowering_utils import substitute_vars, value_inputs

__all__ = ["FuseOpsByPattern", "as_fusion_patterns", "make_composite_function",
           "wrap_for_codegen", "seq_expr"]

_STRUCTURAL = (CallPattern, TuplePattern, TupleGetItemPattern)


def as_fusion_patterns(patterns: Sequence[Any]) -> list[FusionPattern]:
    """``FusionPattern``\\ s from FusionPatterns or ``(name, pattern[, annotations,
    check])`` tuples."""
    if isinstance(patterns, FusionPattern) or (
            isinstance(patterns, tuple) and patterns and isinstance(patterns[0], str)):
        patterns = [patterns]
    out = []
    for i, p in enumerate(patterns):
        if isinstance(p, FusionPattern):
            out.append(p)
        elif isinstance(p, tuple) and 2 <= len(p) <= 4 and isinstance(p[1], Pattern):
            out.append(FusionPattern(p[0], p[1], *(p[2:3] or [{}]), *p[3:4]))
        else:
            raise TypeError(f"FuseOpsByPattern: patterns[{i}] must be a FusionPattern or a "
                            f"(name, pattern[, annotations, check]) tuple, got {p!r}")
    return out


def _op_name(value: Any) -> str:
    op = getattr(value, "op", None)
    return getattr(op, "name", None) or getattr(op, "name_hint", None) or type(value).__name__


class _BlockPartitioner:
    def __init__(self, mod: IRModule, patterns: list[FusionPattern], bind_constants: bool,
                 annotate_codegen: bool, report: Any, func_name: str):
        self.mod = mod
        self.patterns = patterns
        self.bind_constants = bind_constants
        self.annotate = annotate_codegen
        self.report = report
        self.func_name = func_name
        self.names = UniqueNames()

    def partition(self, block: DataflowBlock, uses: dict[int, int]) -> DataflowBlock:
        bindings = list(block.bindings)
        values = {id(b.var): b.value for b in bindings if isinstance(b, VarBinding)}
        pos = {id(b.var): i for i, b in enumerate(bindings)}
        claimed: dict[int, int] = {}
        groups: list[tuple[FusionPattern, list[int]]] = []
        rejected: dict[int, list[tuple[str, str]]] = {}

        def lookup(var: Var) -> Optional[Any]:
            return None if id(var) in claimed else values.get(id(var))

        for fp in self.patterns:
            for i, b in enumerate(bindings):
                if not isinstance(b, VarBinding) or id(b.var) in claimed:
                    continue
                m = fp.pattern.match(b.value, lookup)
                if m is None:
                    continue
                members = sorted({i} | {
                    pos[id(e)] for p, e, _ in m.items()
                    if isinstance(p, _STRUCTURAL) and isinstance(e, Var) and id(e) in pos})
                inner = [bindings[k].var for k in members if k != i]
                if any(id(v) in claimed for v in inner):
                    continue
                used_inside: dict[int, int] = {}
                for k in members:
                    for a in value_inputs(bindings[k].value):
                        used_inside[id(a)] = used_inside.get(id(a), 0) + 1
                escaping = [v.name_hint for v in inner
                            if uses.get(id(v), 0) > used_inside.get(id(v), 0)]
                reason = None
                if escaping:
                    reason = f"intermediate result(s) {', '.join(escaping)} are used outside it"
                else:
                    annotated = {name: m.get(p) for name, p in fp.annotations.items()}
                    annotated = {n: (values.get(id(v), v) if isinstance(v, Var) else v)
                                 for n, v in annotated.items()}
                    reason = fp.run_check(PatternCheckContext(
                        m, b.value, annotated,
                        {bindings[k].var: bindings[k].value for k in members}, fp.name))
                if reason is not None:
                    rejected.setdefault(i, []).append((fp.name, reason))
                    continue
                for k in members:
                    claimed[id(bindings[k].var)] = len(groups)
                groups.append((fp, members))
        if self.report is not None:
            for i, reasons in rejected.items():
                if id(bindings[i].var) not in claimed:
                    for name, reason in reasons:
                        self.report.add_rejection(self.func_name, bindings[i].var.name_hint,
                                                  _op_name(bindings[i].value), name, reason)
        if not groups:
            return block
        root_of = {members[-1]: g for g, (_, members) in enumerate(groups)}
        out = []
        for i, b in enumerate(bindings):
            if i in root_of:
                fp, members = groups[root_of[i]]
                out.append(self._call_group(fp, [bindings[k] for k in members]))
            elif id(getattr(b, "var", None)) not in claimed:
                out.append(b)
        return DataflowBlock(out, span=block.span)

    def _unique(self, base: str) -> str:
        return self.names.fresh(self.mod, base)

    def _call_group(self, fp: FusionPattern, group: list[VarBinding]) -> VarBinding:
        inside = {id(b.var) for b in group}
        inputs: list[Any] = []
        for b in group:
            for v in value_inputs(b.value):
                if id(v) in inside or any(v is w for w in inputs):
                    continue
                if isinstance(v, Constant) and self.bind_constants:
                    continue
                inputs.append(v)
        base = "fused_" + "_".join(_op_name(b.value).replace("relax.", "relax_")
                                   .replace(".", "_") for b in group)
        composite = make_composite_function(fp.name, inputs, group, self.mod)
        if self.annotate:
            name = self._unique(f"{base}_{fp.backend}")
            func = wrap_for_codegen(fp.backend, name, composite, base)
        else:
            name = self._unique(base)
            func = composite
        gv = GlobalVar(name)
        self.mod = self.mod.with_function(gv, func)
        root = group[-1]
        call = BlockBuilder(self.mod).normalize(Call(gv, inputs))
        if self.report is not None:
            self.report.add_partition(self.func_name, name, fp.backend, [fp.name],
                                      [f"{b.var.name_hint} = {_op_name(b.value)}" for b in group])
        return VarBinding(root.var, call, span=root.span)


def make_composite_function(name: str, inputs: Sequence[Any], group: Sequence[VarBinding],
                            mod: Optional[IRModule] = None) -> Function:
    """A function of ``inputs`` computing ``group`` (its last binding is the result) with
    attributes ``Composite=name`` and ``Primitive``."""
    params, remap = [], {}
    for k, v in enumerate(inputs):
        p = Var(v.name_hint if isinstance(v, Var) else f"const{k}", v.struct_info)
        params.append(p)
        remap[v] = p
    fbb = BlockBuilder(mod)
    with fbb.function("__byoc_composite__", params,
                      attrs={"Composite": name, "Primitive": 1}, private=True):
        with fbb.dataflow():
            for k, b in enumerate(group):
                value = substitute_vars(b.value, remap, mod)
                emit = fbb.emit_output if k == len(group) - 1 else fbb.emit
                with fbb.spanned(b.span):
                    remap[b.var] = emit(value, b.var.name_hint)
        fbb.emit_func_output(remap[group[-1].var])
    return fbb.get()["__byoc_composite__"]


def wrap_for_codegen(backend: str, symbol: str, body_func: Any, local_name: str = "f"
                     ) -> Function:
    """An outer function with ``Codegen=backend`` and ``global_symbol=symbol`` that binds
    ``body_func`` (a composite function) locally and returns its call on its parameters."""
    params = [Var(p.name_hint, p.struct_info) for p in body_func.params]
    fvar = Var(local_name, body_func.struct_info)
    out = Var("gv", body_func.ret_struct_info)
    call = Call(fvar, params)
    object.__setattr__(call, "struct_info_", body_func.ret_struct_info)
    from ..expr import BindingBlock

    body = seq_expr([BindingBlock([VarBinding(fvar, body_func), VarBinding(out, call)])], out)
    return Function(params, body, body_func.ret_struct_info,
                    attrs={"Codegen": backend, "global_symbol": symbol})


def seq_expr(blocks: Sequence[Any], body: Any, span: Any = None) -> SeqExpr:
    """A SeqExpr carrying its body's StructInfo (as the normaliser would give it)."""
    seq = SeqExpr(list(blocks), body, span=span)
    object.__setattr__(seq, "struct_info_", body.struct_info_)
    return seq


def FuseOpsByPattern(  # noqa: N802 - TVM's pass name
    patterns: Sequence[Any],
    bind_constants: bool = True,
    annotate_codegen: bool = False,
    report: Any = None,
) -> Any:
    """The partitioning pass (see the module docstring)."""
    table = as_fusion_patterns(patterns)

    @module_pass(opt_level=0, name="FuseOpsByPattern")
    def fuse_ops_by_pattern(mod: IRModule, ctx: PassContext) -> IRModule:
        updates = {}
        out = mod
        for gv, func in relax_functions(mod):
            if not isinstance(func.body, SeqExpr):
                continue
            part = _BlockPartitioner(out, table, bind_constants, annotate_codegen, report,
                                     gv.name_hint)
            uses = count_uses(func)
            blocks = [part.partition(b, uses) if isinstance(b, DataflowBlock) else b
                      for b in func.body.blocks]
            out = part.mod
            if any(a is not b for a, b in zip(blocks, func.body.blocks)):
                body = seq_expr(blocks, func.body.body, span=func.body.span)
                updates[gv.name_hint] = func.with_fields(body=body)
        return out.with_functions(updates) if updates else mod

    return fuse_ops_by_pattern
