"""ONNX control flow, unrolled at import time: If, Loop and Scan.

``If`` with a constant condition inlines one branch; with a runtime condition it becomes a
Relax ``If`` whose branches are the two subgraphs, so only the branch taken runs (the
importer then cuts the dataflow block at it, see :mod:`..dataflow_split`).  Branches whose
outputs are sequences or optionals are computed both and selected with ``where``.  ``Loop``
needs a constant trip count and a condition that folds at import time; ``Scan`` a static
scan length.  Subgraphs see the outer scope's values.

Sequences and optionals (see ``ops_sequence``) flow through: a Loop may carry a sequence (its
length known at each unrolled iteration) or an optional; an ``If`` with a runtime condition
selects sequences of the same length element by element, while branches that differ in
sequence length or in the presence of an optional need a constant condition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...expr import If, SeqExpr, Tuple, TupleGetItem
from .common import R, converter
from .ops_sequence import EmptyOptional, SeqValue, describe, is_structured

MAX_UNROLL = 4096


@converter("If")
def _if(ctx: Any) -> Any:
    then_g, else_g = ctx.attr("then_branch"), ctx.attr("else_branch")
    cond = ctx.const(0)
    imp = ctx.importer
    if cond is not None:
        branch = then_g if bool(np.asarray(cond).reshape(-1)[0]) else else_g
        return imp.convert_subgraph(branch, [])
    c = ctx.emit(R.reshape(ctx.input(0), []))
    then_seq, then_out = _branch(ctx, then_g)
    else_seq, else_out = _branch(ctx, else_g)
    if then_seq is None or else_seq is None:
        then_out = imp.convert_subgraph(then_g, [])
        else_out = imp.convert_subgraph(else_g, [])
        return [_select(ctx, c, a, b, str(i))
                for i, (a, b) in enumerate(zip(then_out, else_out))]
    if len(then_out) != len(else_out):
        raise ctx.error(f"the branches have {len(then_out)} and {len(else_out)} outputs")
    out = ctx.emit(If(c, then_seq, else_seq))
    if len(then_out) == 1:
        return [out]
    return [ctx.emit(TupleGetItem(out, i)) for i in range(len(then_out))]


def _branch(ctx: Any, graph: Any) -> tuple[Any, list[Any]]:
    """Subgraph ``graph`` as the SeqExpr of an If branch (its outputs a Tuple when there
    are several), or (None, []) when an output is a sequence or optional."""
    imp, bb = ctx.importer, ctx.bb
    bb.begin_scope()
    bb.begin_dataflow_block()
    try:
        outs = imp.convert_subgraph(graph, [])
        if any(is_structured(o) for o in outs):
            return None, []
        results = [bb.emit_output(imp.to_expr(o)) for o in outs]
    finally:
        block = bb.end_block()
        bb.end_scope()
    body = results[0] if len(results) == 1 else Tuple(results)
    return SeqExpr([block] if block.bindings else [], body), results


def _select(ctx: Any, c: Any, a: Any, b: Any, what: str) -> Any:
    """``a if c else b`` for branch outputs: tensors, sequences, empty optionals."""
    imp = ctx.importer
    if isinstance(a, EmptyOptional) and isinstance(b, EmptyOptional):
        return a
    if is_structured(a) or is_structured(b):
        if not (isinstance(a, SeqValue) and isinstance(b, SeqValue) and len(a) == len(b)):
            raise ctx.unsupported(
                f"output {what}: the branches give {describe(a)} and {describe(b)}; with a "
                "runtime condition they must have the same structure (the condition must be "
                "a constant)")
        return SeqValue(tuple(ctx.emit(_select(ctx, c, x, y, f"{what}[{k}]"))
                              for k, (x, y) in enumerate(zip(a.elems, b.elems))),
                        a.dtype or b.dtype)
    sa, sb = imp.shape_of(a), imp.shape_of(b)
    if sa is None or sb is None or len(sa) != len(sb) or any(
            not (x is y or (isinstance(x, int) and x == y)) for x, y in zip(sa, sb)):
        raise ctx.unsupported(f"output {what}: branches of different shapes {sa} and {sb} "
                              "with a runtime condition")
    return R.where(c, imp.to_expr(a), imp.to_expr(b))


def _stack(ctx: Any, values: list[Any], axis: int) -> Any:
    return R.concat([R.expand_dims(ctx.importer.to_expr(v), [axis]) for v in values], axis=axis)


@converter("Loop")
def _loop(ctx: Any) -> Any:
    body = ctx.attr("body")
    imp = ctx.importer
    trip = ctx.const(0)
    if ctx.has(0) and trip is None:
        raise ctx.unsupported("a runtime trip count M (the loop is unrolled at import time)")
    limit = int(np.asarray(trip).reshape(-1)[0]) if trip is not None else MAX_UNROLL
    if limit > MAX_UNROLL:
        raise ctx.unsupported(f"trip count {limit} exceeds the unroll limit {MAX_UNROLL}")
    cond = ctx.const(1) if ctx.has(1) else np.array(True)
    if cond is None:
        raise ctx.unsupported("a runtime loop condition")
    carried = [EmptyOptional("an omitted loop-carried input") if v is None else v
               for v in ctx.raw_inputs[2:]]
    n_carried = len(carried)
    scans: list[list[Any]] = []
    i = 0
    while i < limit and bool(np.asarray(cond).reshape(-1)[0]):
        it = np.array(i, dtype=np.int64)
        outs = imp.convert_subgraph(body, [imp._store(it, "iter"),
                                           imp._store(np.asarray(cond, dtype=bool), "cond")]
                                    + carried)
        cond = imp.const_value(outs[0])
        if cond is None:
            raise ctx.unsupported("the loop condition does not fold at import time")
        carried = outs[1:1 + n_carried]
        if not scans:
            scans = [[] for _ in outs[1 + n_carried:]]
        for k, v in enumerate(outs[1 + n_carried:]):
            if is_structured(v):
                raise ctx.unsupported(f"scan output {k} is {describe(v)} (scan outputs must be "
                                      "tensors)")
            scans[k].append(v)
        i += 1
        if trip is None and i >= MAX_UNROLL:
            raise ctx.unsupported("the loop does not terminate within the unroll limit")
    if i == 0 and len(body.output) > 1 + n_carried:
        raise ctx.unsupported("a loop with zero iterations and scan outputs")
    return list(carried) + [_stack(ctx, s, 0) for s in scans]


@converter("Scan", min_opset=9)
def _scan(ctx: Any) -> Any:
    body = ctx.attr("body")
    imp = ctx.importer
    n_scan = ctx.attr("num_scan_inputs")
    n_state = ctx.num_inputs - n_scan
    states = [ctx.raw_inputs[i] for i in range(n_state)]
    xs = [ctx.input(i) for i in range(n_state, ctx.num_inputs)]
    in_axes = ctx.attr("scan_input_axes", [0] * n_scan)
    in_dirs = ctx.attr("scan_input_directions", [0] * n_scan)
    lengths = set()
    for k, x in enumerate(xs):
        shape = imp.shape_of(x)
        axis = in_axes[k] % len(shape)
        in_axes[k] = axis
        lengths.add(shape[axis])
    if len(lengths) != 1 or not isinstance(next(iter(lengths)), int):
        raise ctx.unsupported("scan inputs need one static length")
    length = lengths.pop()
    n_out = len(body.output) - n_state
    out_axes = ctx.attr("scan_output_axes", [0] * n_out)
    out_dirs = ctx.attr("scan_output_directions", [0] * n_out)
    scans: list[list[Any]] = [[] for _ in range(n_out)]
    for t in range(length):
        slices = []
        for k, x in enumerate(xs):
            idx = length - 1 - t if in_dirs[k] else t
            sl = R.squeeze(R.strided_slice(x, [in_axes[k]], [idx], [idx + 1]), [in_axes[k]])
            slices.append(ctx.emit(sl))
        outs = imp.convert_subgraph(body, states + slices)
        states = outs[:n_state]
        for k, v in enumerate(outs[n_state:]):
            scans[k].append(v)
    results = list(states)
    for k, s in enumerate(scans):
        if out_dirs[k]:
            s = s[::-1]
        rank = len(imp.shape_of(s[0]) or []) + 1
        results.append(_stack(ctx, s, out_axes[k] % rank))
    return results
