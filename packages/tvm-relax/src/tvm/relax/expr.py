"""Relax IR nodes: the graph-level program.

Every expression carries its StructInfo in ``struct_info_`` (read it through the
``struct_info`` property).  For a :class:`Var` the StructInfo is part of the variable's
definition (a tree field: symbolic shape variables in a parameter's StructInfo are bound
there).  For every other node it is derived information, filled in at construction when it
follows from the children alone and otherwise by :meth:`BlockBuilder.normalize` (calls need
the operator's inference), and ignored by structural equality.

Program structure (A-normal form after normalisation)::

    Function(params, body=SeqExpr(blocks=[BindingBlock | DataflowBlock], body=leaf))
    VarBinding(var, value) | MatchCast(var, value, struct_info)

Leaf expressions (what call arguments, tuple fields and SeqExpr bodies hold after
normalisation): Var/DataflowVar, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm,
ExternFunc, GlobalVar, Op and Tuples of leaves.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from tvm.ffi import Object, def_field, ignore_field, register_object, tree_field
from tvm.ffi.dtype import from_numpy_dtype, to_numpy_dtype
from tvm.ir.base import BaseFunc, GlobalVar
from tvm.ir.op import Op
from tvm.ir.span import Span
from tvm.tir.expr import PrimExpr, const as tir_const

from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    canonical_dtype,
    to_shape_value,
)

__all__ = [
    "Expr", "Var", "DataflowVar", "Constant", "Call", "Tuple", "TupleGetItem", "ShapeExpr",
    "PrimValue", "StringImm", "DataTypeImm", "If", "SeqExpr", "Binding", "VarBinding",
    "MatchCast", "BindingBlock", "DataflowBlock", "Function", "ExternFunc", "const",
    "is_leaf", "GlobalVar", "Op",
]


def _set(obj: Object, **fields: Any) -> None:
    for name, value in fields.items():
        if isinstance(value, list):
            value = tuple(value)
        object.__setattr__(obj, name, value)


def _check_sinfo(sinfo: Any, owner: str) -> Optional[StructInfo]:
    if sinfo is not None and not isinstance(sinfo, StructInfo):
        raise TypeError(f"{owner}: struct_info must be a StructInfo, got {type(sinfo).__name__}")
    return sinfo


def _sinfo_or_none(expr: Any) -> Optional[StructInfo]:
    return getattr(expr, "struct_info_", None)


class Expr(Object):
    """Base of Relax expressions (fields are declared by each node class).

    Arithmetic operators build Relax calls (``a + b`` is ``relax.add``), ``x[i]`` on a tuple
    value builds a :class:`TupleGetItem`.
    """

    __slots__ = ()

    @property
    def struct_info(self) -> StructInfo:
        """The StructInfo; raises if the expression was not normalised yet."""
        sinfo = getattr(self, "struct_info_", None)
        if sinfo is None:
            raise ValueError(
                f"{self._type_key} has no StructInfo yet; normalise it first "
                "(BlockBuilder.normalize / emit) to infer it"
            )
        return sinfo

    @property
    def checked_type(self) -> StructInfo:  # name kept for readers coming from TVM
        return self.struct_info

    def _op(self, name: str, *args: Any) -> Expr:
        from . import op as _op_pkg

        return getattr(_op_pkg, name)(*args)

    def __add__(self, other: Any) -> Expr:
        return self._op("add", self, other)

    def __radd__(self, other: Any) -> Expr:
        return self._op("add", other, self)

    def __sub__(self, other: Any) -> Expr:
        return self._op("subtract", self, other)

    def __rsub__(self, other: Any) -> Expr:
        return self._op("subtract", other, self)

    def __mul__(self, other: Any) -> Expr:
        return self._op("multiply", self, other)

    def __rmul__(self, other: Any) -> Expr:
        return self._op("multiply", other, self)

    def __truediv__(self, other: Any) -> Expr:
        return self._op("divide", self, other)

    def __rtruediv__(self, other: Any) -> Expr:
        return self._op("divide", other, self)

    def __neg__(self) -> Expr:
        return self._op("negative", self)

    def __matmul__(self, other: Any) -> Expr:
        return self._op("matmul", self, other)

    def astype(self, dtype: str) -> Expr:
        return self._op("astype", self, dtype)

    def __getitem__(self, index: int) -> TupleGetItem:
        return TupleGetItem(self, index)

    __hash__ = Object.__hash__


    def with_fields(self, **changes: Any) -> Any:
        """A changed copy; derived StructInfo is recomputed (or cleared until normalised)."""
        new = Object.with_fields(self, **changes)
        if new is not self and "struct_info_" not in changes and set(changes) - {"span"}:
            object.__setattr__(new, "struct_info_", new._derived_struct_info())
        return new

    def _derived_struct_info(self) -> Optional[StructInfo]:
        """The StructInfo that follows from the fields alone (None: needs normalisation)."""
        return None


@register_object()
class ExprNode(Expr):
    """Common fields of every Relax expression except Function (which is also a BaseFunc)."""

    struct_info_: Optional[StructInfo] = ignore_field(default=None, kw_only=True)
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("relax.expr.Var")
class Var(ExprNode):
    """A variable: ``Var("x", TensorStructInfo([n, 4], "float32"))``.

    Identity matters; ``name_hint`` only guides printing.  The StructInfo is part of the
    definition (shorthand: a list of dimensions is a float32 tensor shape).
    """

    name_hint: str = ignore_field(default="v")
    struct_info_: Optional[StructInfo] = tree_field(default=None, kw_only=True)
    _is_var = True

    def __init__(
        self,
        name_hint: str = "v",
        struct_info: Any = None,
        *,
        span: Optional[Span] = None,
    ):
        if not isinstance(name_hint, str):
            raise TypeError(f"{type(self).__name__}: name_hint must be a str, got {name_hint!r}")
        if isinstance(struct_info, (list, tuple)):
            struct_info = TensorStructInfo(struct_info, "float32")
        sinfo = _check_sinfo(struct_info, type(self).__name__) or ObjectStructInfo()
        _set(self, name_hint=name_hint, struct_info_=sinfo, span=span)

    def __str__(self) -> str:
        return f"%{self.name_hint}"

    def _derived_struct_info(self) -> Optional[StructInfo]:
        return self.struct_info_


@register_object("relax.expr.DataflowVar")
class DataflowVar(Var):
    """A variable bound inside a dataflow block and only visible there."""

    _is_var = True


@register_object("relax.expr.Constant")
class Constant(ExprNode):
    """A constant tensor; ``data`` is held as a numpy array (runtime Tensors are copied)."""

    data: Any = None

    def __init__(
        self,
        data: Any,
        struct_info: Optional[StructInfo] = None,
        *,
        span: Optional[Span] = None,
    ):
        array = _to_numpy(data)
        sinfo = _check_sinfo(struct_info, "Constant") or TensorStructInfo(
            list(array.shape), from_numpy_dtype(array.dtype)
        )
        _set(self, data=array, struct_info_=sinfo, span=span)

    @property
    def dtype(self) -> str:
        return from_numpy_dtype(self.data.dtype)

    def _derived_struct_info(self) -> StructInfo:
        return TensorStructInfo(list(self.data.shape), from_numpy_dtype(self.data.dtype))


def _to_numpy(data: Any) -> np.ndarray:
    if isinstance(data, np.ndarray):
        return data
    if hasattr(data, "numpy") and callable(data.numpy):  # tvm.runtime.Tensor, torch
        return np.asarray(data.numpy())
    if isinstance(data, (bool, int, float, np.generic, list, tuple)):
        return np.asarray(data)
    raise TypeError(
        f"Constant: data must be a numpy array, a runtime Tensor or a Python scalar/list, got "
        f"{type(data).__name__}"
    )


def const(value: Any, dtype: Optional[str] = None) -> Constant:
    """A Constant: ``const(1.0, "float16")``, ``const(np.zeros((2, 3)))``.

    Python floats default to float32 and ints to int64 unless ``dtype`` is given.
    """
    array = _to_numpy(value)
    if dtype is not None:
        array = array.astype(to_numpy_dtype(canonical_dtype(dtype)))
    elif array.dtype == np.float64 and not isinstance(value, np.ndarray):
        array = array.astype(np.float32)
    return Constant(array)


@register_object("relax.expr.Call")
class Call(ExprNode):
    """``Call(op, args, attrs=None, sinfo_args=())``.

    ``op`` is a :class:`tvm.ir.Op`, a :class:`GlobalVar`, an :class:`ExternFunc` or an
    expression of FuncStructInfo.  ``attrs`` is an Attrs object (or a dict); ``sinfo_args``
    carries StructInfo the operator needs (e.g. ``call_tir``'s output StructInfo).
    """

    op: Any = None
    args: tuple = ()
    attrs: Any = None
    sinfo_args: tuple = ()

    def __init__(
        self,
        op: Any,
        args: Sequence[Any] = (),
        attrs: Any = None,
        sinfo_args: Sequence[StructInfo] = (),
        *,
        struct_info: Optional[StructInfo] = None,
        span: Optional[Span] = None,
    ):
        if not isinstance(op, (Op, GlobalVar, Expr)):
            raise TypeError(
                f"Call: op must be an Op, GlobalVar, ExternFunc or function-valued expression, "
                f"got {type(op).__name__}"
            )
        args = tuple(args)
        for i, arg in enumerate(args):
            if not isinstance(arg, (Expr, GlobalVar, Op)):
                name = op.name if isinstance(op, Op) else op
                raise TypeError(
                    f"Call to {name}: argument {i} must be a Relax expression, got "
                    f"{type(arg).__name__} {arg!r}"
                )
        sinfo_args = tuple(sinfo_args or ())
        for i, s in enumerate(sinfo_args):
            _check_sinfo(s, f"Call.sinfo_args[{i}]")
        if isinstance(attrs, dict):
            from tvm.ir.base import FrozenDict

            attrs = FrozenDict(attrs)
        _set(
            self, op=op, args=args, attrs=attrs, sinfo_args=sinfo_args,
            struct_info_=_check_sinfo(struct_info, "Call"), span=span,
        )


@register_object("relax.expr.Tuple")
class Tuple(ExprNode):
    """A tuple of expressions (its StructInfo is known once every field's is)."""

    fields: tuple = ()

    def __init__(self, fields: Sequence[Any], *, span: Optional[Span] = None):
        fields = tuple(as_expr(f, "Tuple field") for f in fields)
        sinfos = [_sinfo_or_none(f) for f in fields]
        sinfo = None if any(s is None for s in sinfos) else TupleStructInfo(sinfos)
        _set(self, fields=fields, struct_info_=sinfo, span=span)

    def __len__(self) -> int:
        return len(self.fields)

    def _derived_struct_info(self) -> Optional[StructInfo]:
        sinfos = [_sinfo_or_none(f) for f in self.fields]
        return None if any(s is None for s in sinfos) else TupleStructInfo(sinfos)

    def __getitem__(self, index: int) -> Any:  # type: ignore[override]
        return self.fields[index]


@register_object("relax.expr.TupleGetItem")
class TupleGetItem(ExprNode):
    """``tuple_value[index]``."""

    tuple_value: Any = None
    index: int = 0

    def __init__(self, tuple_value: Expr, index: int, *, span: Optional[Span] = None):
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"TupleGetItem: index must be an int, got {index!r}")
        tuple_value = as_expr(tuple_value, "TupleGetItem")
        sinfo = None
        tsinfo = _sinfo_or_none(tuple_value)
        if isinstance(tsinfo, TupleStructInfo):
            if not 0 <= index < len(tsinfo.fields):
                from .errors import StructInfoError

                raise StructInfoError(
                    f"TupleGetItem: index {index} is out of range for a tuple of "
                    f"{len(tsinfo.fields)} field(s)",
                    span=span,
                )
            sinfo = tsinfo.fields[index]
        _set(self, tuple_value=tuple_value, index=index, struct_info_=sinfo, span=span)

    def _derived_struct_info(self) -> Optional[StructInfo]:
        tsinfo = _sinfo_or_none(self.tuple_value)
        if isinstance(tsinfo, TupleStructInfo) and 0 <= self.index < len(tsinfo.fields):
            return tsinfo.fields[self.index]
        return None


@register_object("relax.expr.ShapeExpr")
class ShapeExpr(ExprNode):
    """A shape value ``(n, 4)``; dimensions are int64 PrimExprs."""

    values: tuple = ()

    def __init__(self, values: Sequence[Any], *, span: Optional[Span] = None):
        if isinstance(values, ShapeExpr):
            values = values.values
        values = tuple(to_shape_value(v, "ShapeExpr") for v in values)
        _set(self, values=values, struct_info_=ShapeStructInfo(values), span=span)

    def __len__(self) -> int:
        return len(self.values)

    def _derived_struct_info(self) -> StructInfo:
        return ShapeStructInfo(self.values)

    def __getitem__(self, index: int) -> PrimExpr:  # type: ignore[override]
        return self.values[index]


@register_object("relax.expr.PrimValue")
class PrimValue(ExprNode):
    """A scalar value (a PrimExpr, possibly symbolic) used as a Relax expression."""

    value: Any = None

    def __init__(self, value: Any, *, span: Optional[Span] = None):
        if not isinstance(value, PrimExpr):
            if isinstance(value, bool):
                value = tir_const(value, "bool")
            elif isinstance(value, int):
                value = tir_const(value, "int64")
            elif isinstance(value, float):
                value = tir_const(value, "float32")
            else:
                raise TypeError(f"PrimValue: expected a PrimExpr or Python scalar, got {value!r}")
        _set(self, value=value, struct_info_=PrimStructInfo(value=value), span=span)

    def _derived_struct_info(self) -> StructInfo:
        return PrimStructInfo(value=self.value)


@register_object("relax.expr.StringImm")
class StringImm(ExprNode):
    """A string constant (attribute-like arguments, packed-function names)."""

    value: str = ""

    def __init__(self, value: str, *, span: Optional[Span] = None):
        if not isinstance(value, str):
            raise TypeError(f"StringImm: expected a str, got {type(value).__name__}")
        _set(self, value=value, struct_info_=ObjectStructInfo(), span=span)

    def _derived_struct_info(self) -> StructInfo:
        return ObjectStructInfo()


@register_object("relax.expr.DataTypeImm")
class DataTypeImm(ExprNode):
    """A dtype constant (e.g. the dtype argument of ``builtin.alloc_tensor``)."""

    value: str = ""

    def __init__(self, value: str, *, span: Optional[Span] = None):
        _set(self, value=canonical_dtype(value, "DataTypeImm"), struct_info_=ObjectStructInfo(),
             span=span)

    def _derived_struct_info(self) -> StructInfo:
        return ObjectStructInfo()


@register_object("relax.expr.If")
class If(ExprNode):
    """``if cond: true_branch else: false_branch``; branches are SeqExprs after normalisation."""

    cond: Any = None
    true_branch: Any = None
    false_branch: Any = None

    def __init__(
        self, cond: Expr, true_branch: Expr, false_branch: Expr, *, span: Optional[Span] = None
    ):
        _set(
            self, cond=as_expr(cond, "If.cond"), true_branch=as_expr(true_branch, "If"),
            false_branch=as_expr(false_branch, "If"), struct_info_=None, span=span,
        )


@register_object()
class Binding(Object):
    """Base of bindings; ``var`` is defined by the binding."""

    var: Var = def_field(default=None)
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("relax.expr.VarBinding")
class VarBinding(Binding):
    """``var = value``."""

    value: Any = None

    def __init__(self, var: Var, value: Expr, *, span: Optional[Span] = None):
        if not isinstance(var, Var):
            raise TypeError(f"VarBinding: var must be a relax Var, got {type(var).__name__}")
        _set(self, var=var, value=as_expr(value, "VarBinding"), span=span)


@register_object("relax.expr.MatchCast")
class MatchCast(Binding):
    """``var = match_cast(value, struct_info)``: a runtime-checked cast that may define
    new symbolic variables (those first met in ``struct_info``)."""

    value: Any = None
    struct_info: StructInfo = def_field(default=None)

    def __init__(
        self, var: Var, value: Expr, struct_info: StructInfo, *, span: Optional[Span] = None
    ):
        if not isinstance(var, Var):
            raise TypeError(f"MatchCast: var must be a relax Var, got {type(var).__name__}")
        if not isinstance(struct_info, StructInfo):
            raise TypeError(
                f"MatchCast: struct_info must be a StructInfo, got {type(struct_info).__name__}"
            )
        _set(self, var=var, value=as_expr(value, "MatchCast"), struct_info=struct_info, span=span)


@register_object("relax.expr.BindingBlock")
class BindingBlock(Object):
    """A sequence of bindings evaluated in order."""

    bindings: tuple = ()
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, bindings: Sequence[Binding], *, span: Optional[Span] = None):
        bindings = tuple(bindings)
        for i, b in enumerate(bindings):
            if not isinstance(b, Binding):
                raise TypeError(
                    f"{type(self).__name__}: binding {i} must be a VarBinding or MatchCast, got "
                    f"{type(b).__name__}"
                )
        _set(self, bindings=bindings, span=span)


@register_object("relax.expr.DataflowBlock")
class DataflowBlock(BindingBlock):
    """A block of pure bindings; its DataflowVars are local to it."""


@register_object("relax.expr.SeqExpr")
class SeqExpr(ExprNode):
    """Binding blocks followed by a result expression."""

    blocks: tuple = ()
    body: Any = None

    def __init__(
        self, blocks: Sequence[BindingBlock], body: Expr, *, span: Optional[Span] = None
    ):
        blocks = tuple(blocks)
        for i, b in enumerate(blocks):
            if not isinstance(b, BindingBlock):
                raise TypeError(f"SeqExpr: block {i} must be a BindingBlock, got {type(b).__name__}")
        body = as_expr(body, "SeqExpr.body")
        sinfo = _sinfo_or_none(body) if not blocks else None
        _set(self, blocks=blocks, body=body, struct_info_=sinfo, span=span)

    def _derived_struct_info(self) -> Optional[StructInfo]:
        return _sinfo_or_none(self.body) if not self.blocks else None


@register_object("relax.expr.Function")
class Function(BaseFunc, Expr):
    """A Relax function: ``Function(params, body, ret_struct_info=None, is_pure=True, attrs)``.

    ``ret_struct_info`` defaults to the body's StructInfo.  Its StructInfo is a
    :class:`FuncStructInfo` built from the parameters' StructInfo and the return one.
    """

    params: tuple = def_field(default=())
    body: Any = None
    ret_struct_info: Optional[StructInfo] = None
    is_pure: bool = True
    struct_info_: Optional[StructInfo] = ignore_field(default=None, kw_only=True)
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(
        self,
        params: Sequence[Var],
        body: Expr,
        ret_struct_info: Optional[StructInfo] = None,
        is_pure: bool = True,
        attrs: Optional[dict[str, Any]] = None,
        *,
        span: Optional[Span] = None,
    ):
        from tvm.ir.base import _check_attrs

        params = tuple(params)
        for i, p in enumerate(params):
            if not isinstance(p, Var):
                raise TypeError(f"Function: parameter {i} must be a relax Var, got {type(p).__name__}")
            if isinstance(p, DataflowVar):
                raise TypeError(f"Function: parameter {p.name_hint!r} must not be a DataflowVar")
        body = as_expr(body, "Function.body")
        body_sinfo = _sinfo_or_none(body)
        if ret_struct_info is None and body_sinfo is not None:
            from .analysis.struct_info_analysis import erase_to_well_defined, params_var_map

            ret_struct_info = erase_to_well_defined(body_sinfo, params_var_map(params))
        _check_sinfo(ret_struct_info, "Function.ret_struct_info")
        sinfo = None
        if ret_struct_info is not None:
            sinfo = FuncStructInfo([p.struct_info_ for p in params], ret_struct_info, is_pure)
        _set(
            self, params=params, body=body, ret_struct_info=ret_struct_info,
            is_pure=bool(is_pure), attrs=_check_attrs("Function", attrs), struct_info_=sinfo,
            span=span,
        )

    @staticmethod
    def create_empty(
        params: Sequence[Var],
        ret_struct_info: StructInfo,
        is_pure: bool = True,
        attrs: Optional[dict[str, Any]] = None,
    ) -> Function:
        """A body-less function standing for a declared signature (parsers use it)."""
        from tvm.ir.base import _check_attrs

        func = object.__new__(Function)
        _set(
            func, params=tuple(params), body=None, ret_struct_info=ret_struct_info,
            is_pure=is_pure, attrs=_check_attrs("Function", attrs), span=None,
            struct_info_=FuncStructInfo([p.struct_info_ for p in params], ret_struct_info, is_pure),
        )
        return func

    def __call__(self, *args: Any) -> Call:
        return Call(self, [as_expr(a, "call argument") for a in args])

    def script(self, name: Optional[str] = None, show_meta: bool = True) -> str:
        """This function as TVMScript (``@R.function``); it parses back to an equal function.
        ``show_meta=False`` leaves out the metadata block (the values of large constants)."""
        from tvm.script.relax.printer import print_function

        return print_function(self, name, show_meta=show_meta)

    def show(self, name: Optional[str] = None, show_meta: bool = False) -> None:
        """Print :meth:`script`, without the metadata block unless ``show_meta``."""
        print(self.script(name, show_meta), end="")

    def _derived_struct_info(self) -> Optional[StructInfo]:
        if self.ret_struct_info is None:
            return None
        return FuncStructInfo([p.struct_info_ for p in self.params], self.ret_struct_info,
                              self.is_pure)


@register_object("relax.expr.ExternFunc")
class ExternFunc(ExprNode):
    """A packed function found by name at run time (``"vm.builtin.reshape"``)."""

    global_symbol: str = ""

    def __init__(
        self,
        global_symbol: str,
        struct_info: Optional[StructInfo] = None,
        *,
        span: Optional[Span] = None,
    ):
        if not isinstance(global_symbol, str) or not global_symbol:
            raise TypeError(f"ExternFunc: global_symbol must be a non-empty str, got {global_symbol!r}")
        sinfo = _check_sinfo(struct_info, "ExternFunc") or FuncStructInfo.opaque_func()
        _set(self, global_symbol=global_symbol, struct_info_=sinfo, span=span)

    def _derived_struct_info(self) -> Optional[StructInfo]:
        return self.struct_info_


_LEAF_TYPES = (Var, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc)


def is_leaf(expr: Any) -> bool:
    """Whether ``expr`` may appear as a call argument in normal form."""
    if isinstance(expr, (_LEAF_TYPES, GlobalVar, Op)):
        return True
    if isinstance(expr, Tuple):
        return all(is_leaf(f) for f in expr.fields)
    return False


def as_expr(value: Any, what: str = "value") -> Any:
    """Python values to Relax expressions.

    Expressions, GlobalVars and Ops pass through; numpy arrays and runtime Tensors become
    Constants; Python scalars and PrimExprs PrimValues; strings StringImms; lists/tuples
    Tuples (a list of ints stays a Tuple of PrimValues: use :class:`ShapeExpr` for shapes).
    """
    if isinstance(value, (Expr, GlobalVar, Op)):
        return value
    if isinstance(value, PrimExpr) or isinstance(value, (bool, int, float)):
        return PrimValue(value)
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, (list, tuple)):
        return Tuple([as_expr(v, what) for v in value])
    if isinstance(value, np.ndarray) or hasattr(value, "numpy"):
        return Constant(value)
    if value is None:
        raise TypeError(f"{what}: expected a Relax expression, got None")
    raise TypeError(f"{what}: cannot convert {type(value).__name__} {value!r} to a Relax expression")
