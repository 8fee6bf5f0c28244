"""Calling lower-level functions from Relax: ``call_tir``, ``call_dps_packed``,
``call_pure_packed``, plus ``shape_of``, ``shape_to_tensor`` and ``null_value``.

``call_tir(gv, args, out_sinfo)`` is destination-passing: the TIR function ``gv`` takes the
inputs followed by the outputs (allocated by the caller, described by ``out_sinfo``) and,
when ``tir_vars`` is given, trailing scalar parameters.  The call's StructInfo is
``out_sinfo`` (a tuple for several outputs).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from tvm.ir.base import GlobalVar

from ..expr import Call, Expr, ExternFunc, ShapeExpr, Tuple, as_expr
from ..struct_info import (
    ObjectStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from .base import arg_sinfo, arg_tensor, make_call, op_error, register_op

__all__ = ["call_tir", "call_dps_packed", "call_pure_packed", "shape_of", "shape_to_tensor",
           "null_value"]

OutSInfo = Union[StructInfo, Sequence[StructInfo]]


def _out_sinfo(out_sinfo: OutSInfo, who: str) -> StructInfo:
    if isinstance(out_sinfo, (list, tuple)):
        items = list(out_sinfo)
        for i, s in enumerate(items):
            if not isinstance(s, TensorStructInfo):
                raise TypeError(f"{who}: out_sinfo[{i}] must be a TensorStructInfo, got {s!r}")
        return items[0] if len(items) == 1 else TupleStructInfo(items)
    if not isinstance(out_sinfo, (TensorStructInfo, TupleStructInfo)):
        raise TypeError(
            f"{who}: out_sinfo must be a TensorStructInfo or a list of them, got "
            f"{type(out_sinfo).__name__}"
        )
    return out_sinfo


def _args_tuple(args: Any) -> Tuple:
    if isinstance(args, Tuple):
        return args
    if isinstance(args, (list, tuple)):
        return Tuple([as_expr(a, "call argument") for a in args])
    arg = as_expr(args, "call argument")
    sinfo = getattr(arg, "struct_info_", None)
    return arg if isinstance(sinfo, TupleStructInfo) else Tuple([arg])


def _num_outputs(sinfo: StructInfo) -> int:
    return len(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else 1


@register_op("relax.call_tir", inputs=None)
def call_tir(
    gvar: GlobalVar,
    args: Any,
    out_sinfo: OutSInfo,
    tir_vars: Optional[Union[ShapeExpr, Sequence[Any]]] = None,
) -> Call:
    """Call the PrimFunc ``gvar`` in destination-passing style; returns its output(s)."""
    if not isinstance(gvar, GlobalVar):
        raise TypeError(f"call_tir: the callee must be a GlobalVar, got {type(gvar).__name__}")
    call_args: list[Any] = [gvar, _args_tuple(args)]
    if tir_vars is not None:
        call_args.append(tir_vars if isinstance(tir_vars, Expr) else ShapeExpr(tir_vars))
    return make_call("relax.call_tir", call_args, None, [_out_sinfo(out_sinfo, "call_tir")])


@call_tir.infer
def _infer_call_tir(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) not in (2, 3):
        raise op_error(call, f"expects (callee, args tuple[, tir_vars]), got {len(call.args)} argument(s)")
    if len(call.sinfo_args) != 1:
        raise op_error(call, "needs exactly one output StructInfo in sinfo_args (out_sinfo)")
    callee = call.args[0]
    if not isinstance(callee, GlobalVar):
        raise op_error(call, f"the callee must be a GlobalVar, got {type(callee).__name__}")
    args_sinfo = arg_sinfo(call, 1)
    if not isinstance(args_sinfo, TupleStructInfo):
        raise op_error(call, "the arguments must be a tuple")
    n_scalars = 0
    if len(call.args) == 3:
        scalars = arg_sinfo(call, 2)
        if not isinstance(scalars, ShapeStructInfo):
            raise op_error(call, "tir_vars must be a shape expression of int64 values")
        n_scalars = scalars.ndim
    out = call.sinfo_args[0]
    func = _lookup_function(ctx, callee)
    params = getattr(func, "buffer_map", None)
    if func is not None and params is not None and n_scalars >= 0:
        expected = len(args_sinfo.fields) + _num_outputs(out) + n_scalars
        if len(func.params) != expected:
            raise op_error(
                call,
                f"the PrimFunc @{callee.name_hint} takes {len(func.params)} parameter(s), but the "
                f"call passes {len(args_sinfo.fields)} input(s), {_num_outputs(out)} output(s) "
                f"and {n_scalars} scalar(s)",
            )
    return out


def _lookup_function(ctx: Any, gvar: GlobalVar) -> Any:
    lookup = getattr(ctx, "lookup_function", None)
    return lookup(gvar) if lookup is not None else None


@register_op("relax.call_dps_packed", inputs=None)
def call_dps_packed(func: Union[str, ExternFunc, Expr], args: Any, out_sinfo: OutSInfo) -> Call:
    """Call a packed function in destination-passing style (outputs allocated by the caller)."""
    if isinstance(func, str):
        func = ExternFunc(func)
    return make_call(
        "relax.call_dps_packed", [func, _args_tuple(args)], None,
        [_out_sinfo(out_sinfo, "call_dps_packed")],
    )


@call_dps_packed.infer
def _infer_call_dps_packed(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) != 2 or len(call.sinfo_args) != 1:
        raise op_error(call, "expects (callee, args tuple) and one output StructInfo")
    if not isinstance(arg_sinfo(call, 1), TupleStructInfo):
        raise op_error(call, "the arguments must be a tuple")
    return call.sinfo_args[0]


@register_op("relax.call_pure_packed", inputs=None)
def call_pure_packed(
    func: Union[str, ExternFunc, Expr], *args: Any, sinfo_args: OutSInfo = ()
) -> Call:
    """Call a packed function that is known to be pure; ``sinfo_args`` gives its result."""
    if isinstance(func, str):
        func = ExternFunc(func)
    if isinstance(sinfo_args, StructInfo):
        sinfo_args = [sinfo_args]
    return make_call("relax.call_pure_packed", [func, *args], None, list(sinfo_args))


@call_pure_packed.infer
def _infer_call_pure_packed(call: Call, ctx: Any) -> StructInfo:
    if not call.args:
        raise op_error(call, "expects the callee as first argument")
    if len(call.sinfo_args) > 1:
        return TupleStructInfo(call.sinfo_args)
    return call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()


@register_op("relax.shape_of", inputs=("x",))
def shape_of(x: Expr) -> Call:
    """The shape of tensor ``x`` as a shape value."""
    return make_call("relax.shape_of", [x])


@shape_of.infer
def _infer_shape_of(call: Call, ctx: Any) -> StructInfo:
    x = arg_tensor(call, 0)
    values = x.shape_values
    return ShapeStructInfo(values) if values is not None else ShapeStructInfo(ndim=x.ndim)


@register_op("relax.shape_to_tensor", inputs=("shape",), op_pattern="injective")
def shape_to_tensor(shape: Union[Expr, Sequence[Any]]) -> Call:
    """The values of ``shape`` (a shape value, or a list of dimensions that may be symbolic)
    as a 1-d int64 tensor: the inverse of ``vm.builtin.tensor_to_shape``, for computing on
    shapes (ONNX ``Shape`` of a tensor with symbolic dimensions)."""
    if isinstance(shape, (list, tuple)):
        shape = ShapeExpr(shape)
    return make_call("relax.shape_to_tensor", [shape])


@shape_to_tensor.infer
def _infer_shape_to_tensor(call: Call, ctx: Any) -> StructInfo:
    shape = arg_sinfo(call, 0)
    if not isinstance(shape, ShapeStructInfo):
        raise op_error(call, "argument 'shape' must be a shape value")
    return TensorStructInfo(None if shape.ndim < 0 else [shape.ndim], "int64", 1)


@shape_to_tensor.legalize
def _legalize_shape_to_tensor(bb: Any, call: Call) -> Expr:
    from ..topi import transform
    from ._lower import te_call

    if call.args[0].struct_info.values is None:
        return call
    return te_call(bb, call, transform.shape_values, call.args[0])


@register_op("relax.null_value", inputs=())
def null_value() -> Call:
    """A null object (e.g. an absent optional value)."""
    return make_call("relax.null_value", [])


@null_value.infer
def _infer_null_value(call: Call, ctx: Any) -> StructInfo:
    return ObjectStructInfo()
