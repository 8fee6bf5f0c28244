"""StaticPlanBlockMemory: share storage between intermediate tensors whose lifetimes do not
overlap.

Run after CallTIRRewrite (and ToNonDataflow).  Every ``relax.builtin.alloc_tensor`` in a
function body's top-level blocks is a *token* of ``prod(shape) * bytes(dtype)`` bytes.  A
token lives from its allocation to the last binding that uses it (through any variable
aliasing it: ``v = lv``, tuples, ``TupleGetItem``, ``match_cast``).  Tokens that can leave
the function (returned, passed to a Relax function, an external packed function or an
operator, used inside ``If``) are not planned and keep their own allocation.

Walking the bindings in order, a token takes the best-fitting free storage (the smallest
that is large enough, else the largest, which then grows) of the same device and scope,
and gives it back after its last use.  Each storage becomes one
``relax.memory.alloc_storage`` placed before its first tensor, and each planned token a
``relax.memory.alloc_tensor`` at offset 0 of it.

Sizes come from static shapes; a symbolic dimension uses the function attribute
``tir_var_upper_bound`` (``{"n": 1024}``) when given, otherwise the token is not planned.
The function attribute ``relax.memory_plan`` records ``planned_bytes`` (the storages),
``naive_bytes`` (one allocation per planned tensor), ``num_storages``, ``num_planned`` and
``num_unplanned``; :func:`memory_plan_report` collects them.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from tvm.ffi.dtype import storage_bytes
from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import PassContext, module_pass
from tvm.tir.expr import IntImm
from tvm.tir.expr_util import const_int
from tvm.tir.function import PrimFunc
from tvm.tir.stmt_functor import free_vars as tir_free_vars
from tvm.tir.stmt_functor import substitute

from ..expr import (
    Call,
    DataTypeImm,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..struct_info import ObjectStructInfo
from ..vm import memory_ops
from ._graph_utils import map_relax_functions

__all__ = ["StaticPlanBlockMemory", "memory_plan_report", "plan_function"]

_ALLOC = "relax.builtin.alloc_tensor"
PLAN_ATTR = "relax.memory_plan"


class _Token:
    __slots__ = ("index", "binding", "nbytes", "key", "escapes", "last_use", "storage")

    def __init__(self, index: int, binding: VarBinding, nbytes: Optional[int], key: tuple):
        self.index = index
        self.binding = binding
        self.nbytes = nbytes
        self.key = key
        self.escapes = nbytes is None
        self.last_use = index
        self.storage: Optional[_Storage] = None


class _Storage:
    __slots__ = ("key", "nbytes", "first", "var")

    def __init__(self, key: tuple, nbytes: int, first: _Token):
        self.key = key
        self.nbytes = nbytes
        self.first = first
        self.var: Optional[Var] = None


def _token_bytes(call: Call, bounds: dict[str, int]) -> Optional[int]:
    shape, dtype = call.args[0], call.args[1]
    if not isinstance(shape, ShapeExpr) or not isinstance(dtype, DataTypeImm):
        return None
    dims = []
    for d in shape.values:
        value = const_int(d)
        if value is None:
            vmap = {}
            for v in tir_free_vars(d):
                if v.name not in bounds:
                    return None
                vmap[v] = IntImm(v.dtype, bounds[v.name])
            from tvm.arith import Analyzer

            value = const_int(Analyzer().simplify(substitute(d, vmap)))
            if value is None:
                return None
        dims.append(value)
    return math.prod(dims) * storage_bytes(dtype.value)


def _alloc_key(call: Call) -> tuple:
    dev = call.args[2] if len(call.args) > 2 else None
    scope = call.args[3] if len(call.args) > 3 else None
    dev_index = const_int(dev.value) if isinstance(dev, PrimValue) else 0
    return (dev_index if dev_index is not None else -1,
            scope.value if isinstance(scope, StringImm) else "global")


def _vars_in(value: Any) -> list[Var]:
    out: list[Var] = []

    def walk(e: Any) -> None:
        if isinstance(e, Var):
            out.append(e)
        elif isinstance(e, Tuple):
            for f in e.fields:
                walk(f)
        elif isinstance(e, TupleGetItem):
            walk(e.tuple_value)
        elif isinstance(e, Call):
            walk(e.op)
            for a in e.args:
                walk(a)
        elif isinstance(e, If):
            walk(e.cond)
            from ..analysis.var_analysis import free_vars

            out.extend(free_vars(e.true_branch))
            out.extend(free_vars(e.false_branch))
        elif isinstance(e, SeqExpr):
            from ..analysis.var_analysis import free_vars

            out.extend(free_vars(e))

    walk(value)
    return out


def _is_kernel_call(call: Call, mod: IRModule) -> bool:
    op = call.op
    return isinstance(op, GlobalVar) and op in mod and isinstance(mod[op], PrimFunc)


def plan_function(func: Function, mod: IRModule) -> Function:
    """``func`` with its intermediate allocations planned (see the module docstring)."""
    body = func.body
    if not isinstance(body, SeqExpr):
        return func
    bounds_attr = (func.attrs or {}).get("tir_var_upper_bound") or {}
    bounds = {str(k): int(v) for k, v in dict(bounds_attr).items()}
    bindings = [(bi, b) for bi, block in enumerate(body.blocks) for b in block.bindings]
    tokens: list[_Token] = []
    refs: dict[int, set[int]] = {}  # var id -> token indices it may refer to
    for i, (_, b) in enumerate(bindings):
        value = b.value
        if isinstance(b, VarBinding) and isinstance(value, Call) and isinstance(value.op, Op) \
                and value.op.name == _ALLOC:
            t = _Token(len(tokens), b, _token_bytes(value, bounds), _alloc_key(value))
            tokens.append(t)
            refs[id(b.var)] = {t.index}
            continue
        used: set[int] = set()
        for v in _vars_in(value):
            used |= refs.get(id(v), set())
        for ti in used:
            tokens[ti].last_use = i
        if isinstance(value, (Var, Tuple, TupleGetItem)) or isinstance(b, MatchCast):
            if used:
                refs[id(b.var)] = used
        elif isinstance(value, Call) and _is_kernel_call(value, mod):
            pass  # a PrimFunc reads and writes its arguments but keeps none
        else:
            for ti in used:
                tokens[ti].escapes = True
    for v in _vars_in(body.body):
        for ti in refs.get(id(v), set()):
            tokens[ti].escapes = True

    planned = [t for t in tokens if not t.escapes]
    if not planned:
        return _with_report(func, [], [], tokens)
    # assign storages in program order; free them after the tokens' last uses
    pos_of = {id(b): i for i, (_, b) in enumerate(bindings)}
    alloc_at = {pos_of[id(t.binding)]: t for t in planned}
    ends: dict[int, list[_Token]] = {}
    for t in planned:
        ends.setdefault(t.last_use, []).append(t)
    free: list[_Storage] = []
    storages: list[_Storage] = []
    for i in range(len(bindings)):
        t = alloc_at.get(i)
        if t is not None:
            t.storage = _take(free, t, storages)
        for t in ends.get(i, []):
            free.append(t.storage)
    return _rewrite(func, bindings, planned, storages, tokens)


def _take(free: list[_Storage], t: _Token, storages: list[_Storage]) -> _Storage:
    same = [s for s in free if s.key == t.key]
    big = [s for s in same if s.nbytes >= t.nbytes]
    if big:
        best = min(big, key=lambda s: s.nbytes)
    elif same:
        best = max(same, key=lambda s: s.nbytes)
        best.nbytes = t.nbytes
    else:
        best = _Storage(t.key, t.nbytes, t)
        storages.append(best)
        return best
    free.remove(best)
    return best


def _rewrite(func: Function, bindings: list, planned: list[_Token], storages: list[_Storage],
             tokens: list[_Token]) -> Function:
    token_of = {id(t.binding): t for t in planned}
    blocks: list[list] = [[] for _ in func.body.blocks]
    for k, st in enumerate(storages):
        st.var = Var(f"storage{k}", ObjectStructInfo())
    for bi, b in bindings:
        t = token_of.get(id(b))
        if t is None:
            blocks[bi].append(b)
            continue
        st = t.storage
        if st.first is t:
            dev, scope = st.key
            call = memory_ops.alloc_storage(ShapeExpr([st.nbytes]), max(dev, 0), scope, "uint8")
            object.__setattr__(call, "struct_info_", ObjectStructInfo())
            blocks[bi].append(VarBinding(st.var, call))
        alloc = b.value
        call = memory_ops.alloc_tensor(st.var, 0, alloc.args[0], alloc.args[1].value)
        object.__setattr__(call, "struct_info_", b.var.struct_info)
        blocks[bi].append(VarBinding(b.var, call, span=b.span))
    new_blocks = [type(blk)(bs, span=blk.span) for blk, bs in zip(func.body.blocks, blocks)]
    seq = SeqExpr(new_blocks, func.body.body, span=func.body.span)
    object.__setattr__(seq, "struct_info_", func.body.struct_info_)
    return _with_report(func.with_fields(body=seq), planned, storages, tokens)


def _with_report(func: Function, planned: list[_Token], storages: list[_Storage],
                 tokens: list[_Token]) -> Function:
    report = {
        "planned_bytes": sum(s.nbytes for s in storages),
        "naive_bytes": sum(t.nbytes for t in planned),
        "num_storages": len(storages),
        "num_planned": len(planned),
        "num_unplanned": len(tokens) - len(planned),
    }
    if not tokens:
        return func
    return func.with_attr(PLAN_ATTR, report)


def memory_plan_report(mod: IRModule) -> dict[str, dict[str, int]]:
    """``function name -> relax.memory_plan`` for every planned function of ``mod``."""
    out = {}
    for gv, func in mod.items():
        if isinstance(func, Function) and func.attrs and PLAN_ATTR in func.attrs:
            out[gv.name_hint] = dict(func.attrs[PLAN_ATTR])
    return out


def StaticPlanBlockMemory() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass (see the module docstring)."""

    @module_pass(opt_level=0, name="StaticPlanBlockMemory")
    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        return map_relax_functions(mod, lambda func, gv: plan_function(func, mod))

    return run

