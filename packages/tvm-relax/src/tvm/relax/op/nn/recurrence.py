"""``relax.nn.recurrence``: the recurrent loop of an RNN, GRU or LSTM over a sequence whose
length may be symbolic (one direction; the input projection is computed before it).

Returns ``(y, y_h, y_c)``: every step's hidden state (S, B, H), the final hidden and cell
states (B, H).  Lowered to one serial TIR kernel (:mod:`tvm.relax.topi.recurrence`).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from tvm.ffi import register_object

from ...expr import Call, Expr
from ...struct_info import StructInfo, TupleStructInfo
from .._lower import prim_func_call
from .._utils import check_float, out_tensor
from ..base import Attrs, arg_tensor, make_call, op_error, register_op

__all__ = ["recurrence", "RecurrenceAttrs"]

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_NUM_ACTS = {"RNN": 1, "GRU": 2, "LSTM": 3}


@register_object("relax.attrs.RecurrenceAttrs")
class RecurrenceAttrs(Attrs):
    """``kind`` RNN/GRU/LSTM; ``activations`` with their ``activation_alpha``/``beta``
    (NaN: the default); ``clip`` (0: none); ``reverse``; GRU ``linear_before_reset``;
    LSTM ``input_forget``."""

    kind: str = "LSTM"
    activations: tuple = ()
    activation_alpha: tuple = ()
    activation_beta: tuple = ()
    clip: float = 0.0
    reverse: bool = False
    linear_before_reset: bool = False
    input_forget: bool = False


@register_op("relax.nn.recurrence",
             inputs=("xw", "rt", "init_h", "init_c", "peephole", "recurrent_bias", "seq_lens"),
             attrs=RecurrenceAttrs, op_pattern="opaque")
def recurrence(xw: Expr, rt: Expr, init_h: Expr, init_c: Expr, peephole: Expr,
               recurrent_bias: Expr, seq_lens: Expr, kind: str = "LSTM",
               activations: Sequence[str] = (), activation_alpha: Sequence[float] = (),
               activation_beta: Sequence[float] = (), clip: Optional[float] = None,
               reverse: bool = False, linear_before_reset: bool = False,
               input_forget: bool = False) -> Call:
    """One direction of a recurrence (see the module docstring).

    ``xw`` (S, B, G*H): the input projection with the biases (for a GRU with
    ``linear_before_reset``, without the candidate gate's recurrent bias, which is
    ``recurrent_bias`` (H,)); ``rt`` (H, G*H) the recurrent weights transposed; ``init_h``,
    ``init_c`` (B, H); ``peephole`` (3H,) LSTM i, o, f; ``seq_lens`` (B,) integer.
    """
    from ...topi.recurrence import ACTIVATIONS

    if kind not in _GATES:
        raise ValueError(f"recurrence: kind must be RNN, GRU or LSTM, got {kind!r}")
    acts = tuple(str(a).lower() for a in activations) or {
        "RNN": ("tanh",), "GRU": ("sigmoid", "tanh"), "LSTM": ("sigmoid", "tanh", "tanh")}[kind]
    if len(acts) != _NUM_ACTS[kind] or any(a not in ACTIVATIONS for a in acts):
        raise ValueError(f"recurrence: {kind} takes {_NUM_ACTS[kind]} activations of "
                         f"{', '.join(ACTIVATIONS)}, got {list(activations)}")

    def params(values: Sequence[float]) -> tuple:
        out = [float(v) for v in values][:len(acts)]
        return tuple(out + [math.nan] * (len(acts) - len(out)))

    return make_call("relax.nn.recurrence",
                     [xw, rt, init_h, init_c, peephole, recurrent_bias, seq_lens],
                     RecurrenceAttrs(kind=kind, activations=acts,
                                     activation_alpha=params(activation_alpha),
                                     activation_beta=params(activation_beta),
                                     clip=float(clip or 0.0), reverse=bool(reverse),
                                     linear_before_reset=bool(linear_before_reset),
                                     input_forget=bool(input_forget)))


@recurrence.infer
def _infer_recurrence(call: Call, ctx: Any) -> StructInfo:
    xw = arg_tensor(call, 0)
    check_float(call, xw, "xw")
    gates = _GATES[call.attrs.kind]
    if xw.ndim not in (-1, 3):
        raise op_error(call, f"xw must be (steps, batch, {gates} * hidden), got rank {xw.ndim}")
    for i, name in enumerate(("rt", "init_h", "init_c", "peephole", "recurrent_bias"), 1):
        if arg_tensor(call, i).dtype not in ("void", xw.dtype):
            raise op_error(call, f"{name} must be {xw.dtype} like xw")
    lens = arg_tensor(call, 6)
    if lens.dtype != "void" and not lens.dtype.startswith(("int", "uint")):
        raise op_error(call, f"seq_lens must be an integer tensor, got {lens.dtype}")
    values = xw.shape_values
    if values is None:
        unknown = out_tensor(xw, None, ndim=2)
        return TupleStructInfo([out_tensor(xw, None, ndim=3), unknown, unknown])
    steps, batch, width = values
    hidden = width // gates
    return TupleStructInfo([out_tensor(xw, [steps, batch, hidden], ctx=ctx),
                            out_tensor(xw, [batch, hidden], ctx=ctx),
                            out_tensor(xw, [batch, hidden], ctx=ctx)])


@recurrence.legalize
def _legalize_recurrence(bb: Any, call: Call) -> Expr:
    from ...topi.recurrence import activation, recurrence_func

    a = call.attrs
    xw = call.args[0].struct_info
    acts = [activation(n, al, be, "float32" if xw.dtype in ("float16", "bfloat16") else xw.dtype)
            for n, al, be in zip(a.activations, a.activation_alpha, a.activation_beta)]
    func = recurrence_func(a.kind, xw.shape_values, xw.dtype, call.args[6].struct_info.dtype,
                           acts, a.reverse, a.clip, a.linear_before_reset, a.input_forget)
    return prim_func_call(bb, call, func, list(call.args), list(call.struct_info.fields),
                          name=f"{a.kind.lower()}_recurrence")
