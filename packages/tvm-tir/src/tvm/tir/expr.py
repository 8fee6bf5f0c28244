"""TIR expressions: typed scalar (and vector) values of a loop program.

Every expression carries its ``dtype`` as a canonical dtype string (``"int32"``,
``"float32x8"``).  Python operators build expressions (``i * 4 + j``); comparisons build
comparison nodes; ``==``/``!=`` build :class:`EQ`/:class:`NE` whose truth value is identity,
so expressions still work as dictionary keys.  Using a symbolic expression as a Python bool
raises a clear error.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Optional, Union

from tvm.ffi import Object, def_field, ignore_field, register_json_value, register_object
from tvm.ffi.dtype import DTypeCode, is_float_code, parse_dtype
from tvm.ir.span import Span
from tvm.ir.op import Op

__all__ = [
    "PrimExpr", "Var", "SizeVar", "IntImm", "FloatImm", "StringImm", "Cast",
    "BinaryOp", "Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max",
    "CmpOp", "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not", "Select",
    "BufferLoad", "Ramp", "Broadcast", "Shuffle", "Let", "Call", "Range", "IterVar",
    "IterVarType", "CommReducer", "Reduce", "const", "convert",
]


def _dt(dtype: str) -> tuple[int, int, int]:
    return parse_dtype(dtype)


def is_float_dtype(dtype: str) -> bool:
    """Any float dtype: IEEE, bfloat16 or a low-precision format (``float8_e4m3fn`` ...)."""
    return is_float_code(_dt(dtype)[0])


def is_int_dtype(dtype: str) -> bool:
    return _dt(dtype)[0] in (DTypeCode.INT, DTypeCode.UINT)


def lanes_of(dtype: str) -> int:
    return _dt(dtype)[2]


def with_lanes(dtype: str, lanes: int) -> str:
    from tvm.ffi.dtype import format_dtype

    code, bits, _ = _dt(dtype)
    return format_dtype(code, bits, lanes)


def element_of(dtype: str) -> str:
    return with_lanes(dtype, 1)


@register_object()
class PrimExpr(Object):
    """Base of all TIR expressions."""

    dtype: str

    # -- arithmetic -------------------------------------------------------------------
    def __add__(self, other: Any) -> PrimExpr:
        return _binary(Add, self, other)

    def __radd__(self, other: Any) -> PrimExpr:
        return _binary(Add, other, self)

    def __sub__(self, other: Any) -> PrimExpr:
        return _binary(Sub, self, other)

    def __rsub__(self, other: Any) -> PrimExpr:
        return _binary(Sub, other, self)

    def __mul__(self, other: Any) -> PrimExpr:
        return _binary(Mul, self, other)

    def __rmul__(self, other: Any) -> PrimExpr:
        return _binary(Mul, other, self)

    def __truediv__(self, other: Any) -> PrimExpr:
        return _true_div(self, other)

    def __rtruediv__(self, other: Any) -> PrimExpr:
        return _true_div(other, self)

    def __floordiv__(self, other: Any) -> PrimExpr:
        return _binary(FloorDiv, self, other)

    def __rfloordiv__(self, other: Any) -> PrimExpr:
        return _binary(FloorDiv, other, self)

    def __mod__(self, other: Any) -> PrimExpr:
        return _binary(FloorMod, self, other)

    def __rmod__(self, other: Any) -> PrimExpr:
        return _binary(FloorMod, other, self)

    def __neg__(self) -> PrimExpr:
        return _binary(Sub, const(0, self.dtype), self)

    def __pos__(self) -> PrimExpr:
        return self

    def __lt__(self, other: Any) -> PrimExpr:
        return _compare(LT, self, other)

    def __le__(self, other: Any) -> PrimExpr:
        return _compare(LE, self, other)

    def __gt__(self, other: Any) -> PrimExpr:
        return _compare(GT, self, other)

    def __ge__(self, other: Any) -> PrimExpr:
        return _compare(GE, self, other)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        if not isinstance(other, (PrimExpr, int, float, bool)):
            return NotImplemented
        return _compare(EQ, self, other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        if not isinstance(other, (PrimExpr, int, float, bool)):
            return NotImplemented
        return _compare(NE, self, other)

    __hash__ = Object.__hash__

    def __and__(self, other: Any) -> PrimExpr:
        return And(convert(self), convert(other))

    def __or__(self, other: Any) -> PrimExpr:
        return Or(convert(self), convert(other))

    def __invert__(self) -> PrimExpr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"cannot use the symbolic expression {self!r} as a Python bool; "
            "use tir.all/tir.any/tir.Select or tvm.arith to decide it"
        )

    def astype(self, dtype: str) -> PrimExpr:
        return self if self.dtype == dtype else Cast(dtype, self)

    def equal(self, other: Any) -> PrimExpr:
        return _compare(EQ, self, other)


@register_object("tir.Var")
class Var(PrimExpr):
    """A scalar variable; identity matters, the name is only a printing hint."""

    name: str = ignore_field(default="v")
    span: Optional[Span] = ignore_field(default=None, kw_only=True)
    _is_var = True

    def __init__(self, name: str = "v", dtype: str = "int32", *, span: Optional[Span] = None):
        object.__setattr__(self, "dtype", _canonical_dtype(dtype))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "span", span)

    @property
    def name_hint(self) -> str:
        return self.name


@register_object("tir.SizeVar")
class SizeVar(Var):
    """A variable known to be non-negative (a symbolic shape dimension)."""

    _is_var = True


@register_object("tir.IntImm")
class IntImm(PrimExpr):
    value: int
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.value, int):
            raise TypeError(f"IntImm value must be int, got {type(self.value).__name__}")
        code, bits, _ = _dt(self.dtype)
        if code == DTypeCode.BOOL:
            object.__setattr__(self, "value", int(bool(self.value)))
        elif code == DTypeCode.INT and bits <= 64:
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            if not lo <= self.value <= hi:
                raise ValueError(f"IntImm {self.value} does not fit in {self.dtype}")
        elif code == DTypeCode.UINT and bits <= 64:
            if not 0 <= self.value < (1 << bits):
                raise ValueError(f"IntImm {self.value} does not fit in {self.dtype}")
        elif code not in (DTypeCode.INT, DTypeCode.UINT):
            raise TypeError(f"IntImm needs an integer or bool dtype, got {self.dtype}")

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __bool__(self) -> bool:
        return self.value != 0


@register_object("tir.FloatImm")
class FloatImm(PrimExpr):
    value: float
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", float(self.value))

    def __float__(self) -> float:
        return self.value


@register_object("tir.StringImm")
class StringImm(PrimExpr):
    value: str
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, value: str, *, span: Optional[Span] = None):
        object.__setattr__(self, "dtype", "handle")
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "span", span)


@register_object("tir.Cast")
class Cast(PrimExpr):
    value: PrimExpr
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object()
class BinaryOp(PrimExpr):
    """Base of two-operand arithmetic nodes; operands share the node's dtype."""

    a: PrimExpr
    b: PrimExpr
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, a: Any, b: Any, *, span: Optional[Span] = None):
        a, b = _match_types(a, b)
        object.__setattr__(self, "dtype", a.dtype)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "span", span)


@register_object("tir.Add")
class Add(BinaryOp):
    pass


@register_object("tir.Sub")
class Sub(BinaryOp):
    pass


@register_object("tir.Mul")
class Mul(BinaryOp):
    pass


@register_object("tir.Div")
class Div(BinaryOp):
    """Division; truncating for integers (C semantics)."""


@register_object("tir.Mod")
class Mod(BinaryOp):
    """Truncating remainder (C semantics)."""


@register_object("tir.FloorDiv")
class FloorDiv(BinaryOp):
    pass


@register_object("tir.FloorMod")
class FloorMod(BinaryOp):
    pass


@register_object("tir.Min")
class Min(BinaryOp):
    pass


@register_object("tir.Max")
class Max(BinaryOp):
    pass


@register_object()
class CmpOp(PrimExpr):
    """Base of comparisons; the result is ``bool`` (with the operands' lanes)."""

    a: PrimExpr
    b: PrimExpr
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, a: Any, b: Any, *, span: Optional[Span] = None):
        a, b = _match_types(a, b)
        object.__setattr__(self, "dtype", with_lanes("bool", lanes_of(a.dtype)))
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "span", span)


@register_object("tir.EQ")
class EQ(CmpOp):
    def __bool__(self) -> bool:
        # Lets expressions live in lists and dicts: `x == y` is true when x is y.
        return self.a.same_as(self.b)


@register_object("tir.NE")
class NE(CmpOp):
    def __bool__(self) -> bool:
        return not self.a.same_as(self.b)


@register_object("tir.LT")
class LT(CmpOp):
    pass


@register_object("tir.LE")
class LE(CmpOp):
    pass


@register_object("tir.GT")
class GT(CmpOp):
    pass


@register_object("tir.GE")
class GE(CmpOp):
    pass


@register_object("tir.And")
class And(PrimExpr):
    a: PrimExpr
    b: PrimExpr
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, a: Any, b: Any, *, span: Optional[Span] = None):
        a, b = _as_bool(a, "And"), _as_bool(b, "And")
        object.__setattr__(self, "dtype", a.dtype)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "span", span)


@register_object("tir.Or")
class Or(PrimExpr):
    a: PrimExpr
    b: PrimExpr
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, a: Any, b: Any, *, span: Optional[Span] = None):
        a, b = _as_bool(a, "Or"), _as_bool(b, "Or")
        object.__setattr__(self, "dtype", a.dtype)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "span", span)


@register_object("tir.Not")
class Not(PrimExpr):
    a: PrimExpr
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, a: Any, *, span: Optional[Span] = None):
        a = _as_bool(a, "Not")
        object.__setattr__(self, "dtype", a.dtype)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "span", span)


@register_object("tir.Select")
class Select(PrimExpr):
    """``condition ? true_value : false_value``, both branches evaluated."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, condition: Any, true_value: Any, false_value: Any, *, span: Optional[Span] = None):
        t, f = _match_types(true_value, false_value)
        object.__setattr__(self, "dtype", t.dtype)
        object.__setattr__(self, "condition", _as_bool(condition, "Select"))
        object.__setattr__(self, "true_value", t)
        object.__setattr__(self, "false_value", f)
        object.__setattr__(self, "span", span)


@register_object("tir.BufferLoad")
class BufferLoad(PrimExpr):
    """``buffer[indices]``; a vector load when an index is a Ramp."""

    buffer: Buffer  # noqa: F821 - declared in buffer.py, which names it here
    indices: tuple[PrimExpr, ...]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, buffer: Any, indices: Any, *, span: Optional[Span] = None):
        indices = tuple(convert(i) for i in indices)
        lanes = 1
        for i in indices:
            lanes = max(lanes, lanes_of(i.dtype))
        object.__setattr__(self, "dtype", with_lanes(buffer.dtype, lanes * lanes_of(buffer.dtype)))
        object.__setattr__(self, "buffer", buffer)
        object.__setattr__(self, "indices", indices)
        object.__setattr__(self, "span", span)


@register_object("tir.Ramp")
class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes-1)*stride]``."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, base: Any, stride: Any, lanes: int, *, span: Optional[Span] = None):
        base, stride = _match_types(base, stride)
        object.__setattr__(self, "dtype", with_lanes(base.dtype, int(lanes)))
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "stride", stride)
        object.__setattr__(self, "lanes", int(lanes))
        object.__setattr__(self, "span", span)


@register_object("tir.Broadcast")
class Broadcast(PrimExpr):
    """A scalar repeated over ``lanes`` lanes."""

    value: PrimExpr
    lanes: int
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, value: Any, lanes: int, *, span: Optional[Span] = None):
        value = convert(value)
        object.__setattr__(self, "dtype", with_lanes(value.dtype, int(lanes)))
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "lanes", int(lanes))
        object.__setattr__(self, "span", span)


@register_object("tir.Shuffle")
class Shuffle(PrimExpr):
    """Concatenate ``vectors`` and pick lanes by ``indices``."""

    vectors: tuple
    indices: tuple
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("tir.Let")
class Let(PrimExpr):
    var: Var = def_field()
    value: PrimExpr = None  # type: ignore[assignment]
    body: PrimExpr = None  # type: ignore[assignment]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, var: Var, value: Any, body: Any, *, span: Optional[Span] = None):
        body = convert(body)
        object.__setattr__(self, "dtype", body.dtype)
        object.__setattr__(self, "var", var)
        object.__setattr__(self, "value", convert(value))
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "span", span)


@register_object("tir.Call")
class Call(PrimExpr):
    """A call to an intrinsic :class:`~tvm.ir.Op` (``tir.exp``) or an extern symbol."""

    op: Any  # tvm.ir.Op or GlobalVar
    args: tuple
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.op, str):
            object.__setattr__(self, "op", Op.get(self.op))
        object.__setattr__(self, "args", tuple(convert(a) for a in self.args))
        object.__setattr__(self, "dtype", _canonical_dtype(self.dtype))


@register_object("ir.Range")
class Range(Object):
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(self, min: Any, extent: Any = None, *, span: Optional[Span] = None):  # noqa: A002
        if extent is None:
            min, extent = 0, min
        a, b = _match_types(min, extent)
        object.__setattr__(self, "min", a)
        object.__setattr__(self, "extent", b)
        object.__setattr__(self, "span", span)

    @staticmethod
    def from_min_extent(min_value: Any, extent: Any) -> Range:
        return Range(min_value, extent)


class IterVarType(IntEnum):
    DATA_PAR = 0
    THREAD_INDEX = 1
    COMM_REDUCE = 2
    ORDERED = 3
    OPAQUE = 4
    UNROLLED = 5
    VECTORIZED = 6
    PARALLELIZED = 7
    TENSORIZED = 8


register_json_value(IterVarType, "tir.IterVarType", int, IterVarType)


@register_object("tir.IterVar")
class IterVar(Object):
    """An iteration variable with its domain and kind (data-parallel, reduce, thread)."""

    dom: Optional[Range]
    var: Var = def_field()
    iter_type: IterVarType = IterVarType.DATA_PAR
    thread_tag: str = ""
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "iter_type", IterVarType(self.iter_type))

    def as_prim_expr(self) -> Var:
        """The iteration variable as an expression (``convert(iv)`` is ``iv.var``)."""
        return self.var


def _forward_to_var(name: str) -> Any:
    def method(self: IterVar, *args: Any) -> Any:
        return getattr(self.var, name)(*args)

    method.__name__ = name
    return method


# An IterVar stands for its variable in arithmetic, as in TVM (``h + k`` with a reduction axis
# ``k``).  ``==``/``!=`` stay identity so IterVars still work as dictionary keys.
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
              "__rmod__", "__neg__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(IterVar, _name, _forward_to_var(_name))


@register_object("tir.CommReducer")
class CommReducer(Object):
    """A commutative reducer: ``result = combiner(lhs, rhs)`` with an identity element."""

    lhs: tuple = def_field()
    rhs: tuple = def_field()
    result: tuple = ()
    identity_element: tuple = ()
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __call__(self, a: Any, b: Any) -> Any:
        from .stmt_functor import substitute

        a_list = a if isinstance(a, (list, tuple)) else [a]
        b_list = b if isinstance(b, (list, tuple)) else [b]
        vmap = {**dict(zip(self.lhs, a_list)), **dict(zip(self.rhs, b_list))}
        out = [substitute(r, vmap) for r in self.result]
        return out if len(out) > 1 else out[0]


@register_object("tir.Reduce")
class Reduce(PrimExpr):
    """A reduction of ``source`` over ``axis`` (only inside te.compute bodies)."""

    combiner: CommReducer
    source: tuple
    axis: tuple
    condition: PrimExpr
    value_index: int = 0
    init: tuple = ()
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


# ---------------------------------------------------------------------------------------
# construction helpers

def _canonical_dtype(dtype: Any) -> str:
    if isinstance(dtype, str):
        from tvm.ffi.dtype import format_dtype

        return format_dtype(*parse_dtype(dtype))
    text = str(dtype)
    return _canonical_dtype(text)


def const(value: Any, dtype: Optional[str] = None, span: Optional[Span] = None) -> PrimExpr:
    """An immediate: ``const(3)`` is int32, ``const(1.5)`` float32, ``const(True)`` bool."""
    if isinstance(value, PrimExpr):
        return value if dtype is None else value.astype(dtype)
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        elif isinstance(value, float):
            dtype = "float32"
        else:
            raise TypeError(f"cannot make a TIR constant from {value!r}")
    dtype = _canonical_dtype(dtype)
    code, _, lanes = parse_dtype(dtype)
    if lanes > 1:
        return Broadcast(const(value, element_of(dtype)), lanes)
    if is_float_code(code):
        return FloatImm(dtype, float(value), span=span)
    if code in (DTypeCode.INT, DTypeCode.UINT, DTypeCode.BOOL):
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"{value} is not an integer value for dtype {dtype}")
        return IntImm(dtype, int(value), span=span)
    raise TypeError(f"cannot make a constant of dtype {dtype}")


def convert(value: Any) -> PrimExpr:
    """Python scalars to immediates; expressions pass through."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, (bool, int, float)):
        return const(value)
    if hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        from tvm.ffi.dtype import from_numpy_dtype

        return const(value.item(), from_numpy_dtype(value.dtype))
    if hasattr(value, "as_prim_expr"):
        return value.as_prim_expr()
    raise TypeError(f"cannot convert {value!r} ({type(value).__name__}) to a TIR expression")


def _as_bool(value: Any, where: str) -> PrimExpr:
    value = convert(value)
    if _dt(value.dtype)[0] != DTypeCode.BOOL:
        raise TypeError(f"{where} needs a bool condition, got {value.dtype} ({value!r})")
    return value


def _match_types(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """Bring two operands to one dtype: Python scalars take the other side's type;
    int meets float -> float; narrower ints widen; a scalar meets a vector -> broadcast."""
    if not isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        a, b = convert(a), convert(b)
    if not isinstance(a, PrimExpr):
        a = _scalar_like(a, b)
    if not isinstance(b, PrimExpr):
        b = _scalar_like(b, a)
    if a.dtype == b.dtype:
        return a, b
    la, lb = lanes_of(a.dtype), lanes_of(b.dtype)
    if la != lb:
        if la == 1:
            a = Broadcast(a, lb)
        elif lb == 1:
            b = Broadcast(b, la)
        else:
            raise TypeError(f"lane mismatch: {a.dtype} vs {b.dtype}")
        if a.dtype == b.dtype:
            return a, b
    ca, ba, _ = _dt(a.dtype)
    cb, bb, _ = _dt(b.dtype)
    fa, fb = is_float_dtype(a.dtype), is_float_dtype(b.dtype)
    if fa and not fb:
        return a, Cast(a.dtype, b)
    if fb and not fa:
        return Cast(b.dtype, a), b
    if fa and fb:
        return (a, Cast(a.dtype, b)) if ba >= bb else (Cast(b.dtype, a), b)
    if ca == DTypeCode.BOOL and cb != DTypeCode.BOOL:
        return Cast(b.dtype, a), b
    if cb == DTypeCode.BOOL and ca != DTypeCode.BOOL:
        return a, Cast(a.dtype, b)
    if ba != bb:
        return (a, Cast(a.dtype, b)) if ba > bb else (Cast(b.dtype, a), b)
    # same width, int vs uint: follow the signed side, as C does for equal rank after promotion.
    return (a, Cast(a.dtype, b)) if ca == DTypeCode.INT else (Cast(b.dtype, a), b)


def _scalar_like(value: Any, other: PrimExpr) -> PrimExpr:
    if isinstance(value, bool):
        return const(value, "bool") if _dt(other.dtype)[0] == DTypeCode.BOOL else const(int(value), element_of(other.dtype))
    if isinstance(value, int):
        if is_float_dtype(other.dtype) or is_int_dtype(other.dtype):
            return const(value, element_of(other.dtype))
        return const(value)
    if isinstance(value, float):
        if is_float_dtype(other.dtype):
            return const(value, element_of(other.dtype))
        return const(value, "float32")
    return convert(value)


def _binary(cls: type, a: Any, b: Any) -> PrimExpr:
    return cls(a, b)


def _compare(cls: type, a: Any, b: Any) -> PrimExpr:
    return cls(a, b)


def _true_div(a: Any, b: Any) -> PrimExpr:
    a2, b2 = _match_types(a, b)
    if is_int_dtype(a2.dtype):
        raise TypeError(
            "'/' on integer TIR expressions is ambiguous; use '//' (floordiv), "
            "tir.truncdiv, or cast to a float type"
        )
    return Div(a2, b2)


PrimExprLike = Union[PrimExpr, int, float, bool]
