"""Operator pattern kinds for fusion, and the analysis that gives a PrimFunc its kind.

Every operator declares how it may fuse (op attribute ``"TOpPattern"``, an
:class:`OpPatternKind`, or the string attribute ``"op_pattern"``).  A PrimFunc called with
``call_tir`` gets its kind from its blocks (:func:`analyze_op_pattern`):

* a block ``C[i, j] = f(A[i, j], B[i, j])`` whose loads use exactly the store's indices is
  *elementwise*;
* loads whose indices are a sub-sequence of the store's (``B[j]``) make it *broadcast*;
* any other index expression (transposes, reshapes, ``A[i * 2]``) *injective*;
* a reduction block is *out_elemwise_fusable* when it multiply-accumulates two different
  inputs (matmul, conv: ``C[i, j] = C[i, j] + A[i, k] * B[k, j]``), else *comm_reduce*;
* a block whose body is not a single store, or a function without blocks, is *opaque*.

The function's kind is the largest kind of its blocks.  :func:`AnnotateTIROpPattern` records
it as the PrimFunc attribute ``"op_pattern"`` (an int).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import module_pass
from tvm.tir.expr import Add, BufferLoad, IntImm, IterVarType, Mul, Var as TirVar
from tvm.tir.function import PrimFunc
from tvm.tir.stmt import Block, BufferStore
from tvm.tir.stmt_functor import post_order_visit

__all__ = [
    "OpPatternKind",
    "as_pattern_kind",
    "op_pattern_of",
    "analyze_op_pattern",
    "prim_func_pattern",
    "AnnotateTIROpPattern",
]


class OpPatternKind(IntEnum):
    """How an operator may fuse (the order matters: larger kinds fuse less)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


_NAMES = {
    "elemwise": OpPatternKind.ELEMWISE,
    "elementwise": OpPatternKind.ELEMWISE,
    "broadcast": OpPatternKind.BROADCAST,
    "injective": OpPatternKind.INJECTIVE,
    "reduce": OpPatternKind.COMM_REDUCE,
    "comm_reduce": OpPatternKind.COMM_REDUCE,
    "out_elemwise_fusable": OpPatternKind.OUT_ELEMWISE_FUSABLE,
    "out_ewise_fusable": OpPatternKind.OUT_ELEMWISE_FUSABLE,
    "tuple": OpPatternKind.TUPLE,
    "opaque": OpPatternKind.OPAQUE,
}


def as_pattern_kind(value: Any, what: str = "op pattern") -> OpPatternKind:
    """An :class:`OpPatternKind` from a kind, an int or a name (``"broadcast"``)."""
    if isinstance(value, OpPatternKind):
        return value
    if isinstance(value, str):
        kind = _NAMES.get(value.lower())
        if kind is None:
            raise ValueError(f"{what}: unknown pattern {value!r}; expected one of {sorted(_NAMES)}")
        return kind
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return OpPatternKind(value)
        except ValueError:
            pass
    raise ValueError(f"{what}: {value!r} is not an op pattern kind")


def op_pattern_of(op: Op) -> OpPatternKind:
    """The declared pattern of a Relax operator (opaque when it declares none)."""
    for key in ("TOpPattern", "op_pattern"):
        value = op.get_attr(key)
        if value is not None:
            return as_pattern_kind(value, f"{op.name} {key}")
    return OpPatternKind.OPAQUE


# ---------------------------------------------------------------------------- TIR analysis


def _blocks(func: PrimFunc) -> list[Block]:
    found: list[Block] = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, Block) else None)
    return found


def _is_root(block: Block, func: PrimFunc) -> bool:
    return not block.iter_vars and block.name_hint == "root"


def _strip(stmt: Any) -> Any:
    from tvm.tir.stmt import DeclBuffer, LetStmt, SeqStmt

    while True:
        if isinstance(stmt, SeqStmt) and len(stmt.seq) == 1:
            stmt = stmt.seq[0]
        elif isinstance(stmt, (DeclBuffer, LetStmt)):
            stmt = stmt.body
        else:
            return stmt


def _loads(expr: Any) -> list[BufferLoad]:
    out: list[BufferLoad] = []
    post_order_visit(expr, lambda n: out.append(n) if isinstance(n, BufferLoad) else None)
    return out


def _same_indices(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b))


def _is_subsequence(load: tuple, store: tuple) -> bool:
    """Every load index is a constant 0 (a broadcast size-1 dimension) or a plain variable
    found, in order, among the store's indices."""
    pos = 0
    for idx in load:
        if isinstance(idx, IntImm) and idx.value == 0:
            continue
        if not isinstance(idx, TirVar):
            return False
        while pos < len(store) and store[pos] is not idx:
            pos += 1
        if pos == len(store):
            return False
        pos += 1
    return True


def _is_fma(store: BufferStore) -> bool:
    value = store.value
    if not isinstance(value, Add):
        return False
    for acc, prod in ((value.a, value.b), (value.b, value.a)):
        if (isinstance(acc, BufferLoad) and acc.buffer is store.buffer
                and _same_indices(acc.indices, store.indices) and isinstance(prod, Mul)):
            loads = _loads(prod)
            return len({id(ld.buffer) for ld in loads}) >= 2
    return False


def _block_pattern(block: Block) -> OpPatternKind:
    body = _strip(block.body)
    if not isinstance(body, BufferStore):
        return OpPatternKind.OPAQUE
    if block.init is not None or any(iv.iter_type == IterVarType.COMM_REDUCE for iv in block.iter_vars):
        return OpPatternKind.OUT_ELEMWISE_FUSABLE if _is_fma(body) else OpPatternKind.COMM_REDUCE
    store_idx = tuple(body.indices)
    if not all(isinstance(i, TirVar) for i in store_idx):
        return OpPatternKind.INJECTIVE
    kind = OpPatternKind.ELEMWISE
    for load in _loads(body.value):
        if load.buffer is body.buffer:
            continue
        if _same_indices(load.indices, store_idx):
            continue
        if _is_subsequence(tuple(load.indices), store_idx):
            kind = max(kind, OpPatternKind.BROADCAST)
        else:
            return OpPatternKind.INJECTIVE
    return kind


def analyze_op_pattern(func: PrimFunc) -> OpPatternKind:
    """The fusion pattern of ``func`` from its blocks (see the module docstring)."""
    blocks = [b for b in _blocks(func) if not _is_root(b, func)]
    if not blocks:
        return OpPatternKind.OPAQUE
    kind = OpPatternKind.ELEMWISE
    for b in blocks:
        kind = max(kind, _block_pattern(b))
        if kind == OpPatternKind.OPAQUE:
            break
    return kind


def prim_func_pattern(func: Any) -> OpPatternKind:
    """``func``'s ``op_pattern`` attribute, else the analysed kind (opaque for non-PrimFuncs)."""
    if not isinstance(func, PrimFunc):
        return OpPatternKind.OPAQUE
    declared: Optional[Any] = func.attrs.get("op_pattern") if func.attrs else None
    if declared is not None:
        return as_pattern_kind(declared, "PrimFunc op_pattern attribute")
    return analyze_op_pattern(func)


def AnnotateTIROpPattern() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass setting the ``op_pattern`` attribute of every PrimFunc that has none."""

    @module_pass(opt_level=0, name="AnnotateTIROpPattern")
    def annotate(mod: IRModule, ctx: Any) -> IRModule:
        updates = {}
        for gv, func in mod.items():
            if isinstance(func, PrimFunc) and (not func.attrs or "op_pattern" not in func.attrs):
                updates[gv] = func.with_attr("op_pattern", int(analyze_op_pattern(func)))
        return mod.with_functions(updates) if updates else mod

    return annotate
