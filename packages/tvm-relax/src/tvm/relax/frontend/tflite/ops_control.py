"""TFLite control flow: IF.

With a constant condition IF inlines the chosen subgraph; with a run-time one it becomes a
Relax ``If`` whose branches are the two subgraphs converted inline (only the branch taken
runs).  The importer then cuts the dataflow block at it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import op as _op
from ...expr import If, SeqExpr, Tuple, TupleGetItem
from .common import OpContext, converter


def _branch(ctx: OpContext, index: int, args: list[Any]) -> tuple[SeqExpr, int]:
    """Subgraph ``index`` as the body of an If branch, and its number of outputs."""
    bb = ctx.bb
    bb.begin_scope()
    bb.begin_dataflow_block()
    try:
        outs = ctx.importer.run_subgraph(index, args, ctx.where())
        results = [bb.emit_output(o) for o in outs]
    finally:
        block = bb.end_block()
        bb.end_scope()
    body = results[0] if len(results) == 1 else Tuple(results)
    return SeqExpr([block] if block.bindings else [], body), len(results)


@converter("IF", max_version=1, options="IfOptions")
def _if(ctx: OpContext) -> Any:
    o = ctx.options
    then_i, else_i = int(o.ThenSubgraphIndex()), int(o.ElseSubgraphIndex())
    args = [ctx.input(i) for i in range(1, ctx.num_inputs)]
    cond = ctx.const(0)
    if cond is not None:
        chosen = then_i if bool(np.asarray(cond).reshape(-1)[0]) else else_i
        return ctx.importer.run_subgraph(chosen, args, ctx.where())
    c = ctx.emit(_op.reshape(ctx.input(0), []))
    then_seq, n_then = _branch(ctx, then_i, args)
    else_seq, n_else = _branch(ctx, else_i, args)
    if n_then != n_else:
        raise ctx.error(f"the branches have {n_then} and {n_else} outputs")
    out = ctx.emit(If(c, then_seq, else_seq))
    if n_then == 1:
        return [out]
    return [ctx.emit(TupleGetItem(out, i)) for i in range(n_then)]
