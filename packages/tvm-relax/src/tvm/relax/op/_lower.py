"""Helpers for operator legalizations (``FLegalize``): Relax call -> ``call_tir``.

A legalization is ``fn(bb, call) -> Expr``; most build a te computation from
:mod:`tvm.relax.topi` with :func:`te_call`, some emit a hand-written TIR PrimFunc with
:func:`prim_func_call`.  The PrimFunc is named after the operator (``relax.nn.conv2d`` ->
``conv2d``) unless a name is given.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from tvm.ir.op import Op
from tvm.tir.function import PrimFunc

from ..expr import Call, Expr, PrimValue
from ..struct_info import PrimStructInfo, StructInfo

__all__ = [
    "primfunc_name", "te_call", "prim_func_call", "scalar_values", "unary_legalizer",
    "binary_legalizer",
]


def primfunc_name(call: Call) -> str:
    op = call.op
    return op.name.rsplit(".", 1)[-1] if isinstance(op, Op) else "func"


def te_call(bb: Any, call: Call, te_func: Callable[..., Any], *args: Any, **kwargs: Any) -> Call:
    """``bb.call_te(te_func, *args, **kwargs)`` with the PrimFunc named after ``call``'s op."""
    kwargs.setdefault("primfunc_name_hint", primfunc_name(call))
    return bb.call_te(te_func, *args, **kwargs)


def prim_func_call(
    bb: Any,
    call: Call,
    func: PrimFunc,
    args: Sequence[Expr],
    out_sinfo: StructInfo | Sequence[StructInfo],
    name: Optional[str] = None,
) -> Call:
    """``call_tir`` of a hand-written PrimFunc (its parameters: ``args`` then the outputs).

    The PrimFunc's input buffers must use the symbolic variables of ``args``' StructInfo so
    that the outputs' shapes are defined by the inputs.
    """
    from .call import call_tir

    gv = bb.add_func(func, name or primfunc_name(call))
    return call_tir(gv, list(args), out_sinfo)


def scalar_values(call: Call) -> Optional[list]:
    """The PrimExprs of ``call``'s arguments if all are scalars with known values."""
    out = []
    for a in call.args:
        sinfo = getattr(a, "struct_info_", None)
        if not isinstance(sinfo, PrimStructInfo):
            return None
        value = a.value if isinstance(a, PrimValue) else sinfo.value
        if value is None:
            return None
        out.append(value)
    return out


def unary_legalizer(name: str) -> Callable[[Any, Call], Expr]:
    """Legalization of the elementwise op ``name`` (see ``topi.elemwise.UNARY_FUNCS``)."""

    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi import elemwise

        values = scalar_values(call)
        if values is not None:
            return PrimValue(elemwise.UNARY_FUNCS[name](*values))
        return te_call(bb, call, elemwise.unary, call.args[0], name)

    legalize.__name__ = f"legalize_{name}"
    return legalize


def binary_legalizer(name: str) -> Callable[[Any, Call], Expr]:
    """Legalization of the broadcasting op ``name`` (see ``topi.elemwise.BINARY_FUNCS``)."""

    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi import elemwise

        values = scalar_values(call)
        if values is not None:
            return PrimValue(elemwise.BINARY_FUNCS[name](*values))
        return te_call(bb, call, elemwise.binary, call.args[0], call.args[1], name)

    legalize.__name__ = f"legalize_{name}"
    return legalize
