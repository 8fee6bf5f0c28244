"""TIR intrinsics and expression helpers (``tir.exp``, ``tir.if_then_else``, ``max_value``...).

Each intrinsic is an interned :class:`~tvm.ir.Op` named ``tir.<name>``; code generators map
ops to instructions or library calls.  Op attributes recorded here:

* ``"TCallEffectKind"`` — ``"pure"``, ``"read"`` or ``"side_effect"`` (dead-code and CSE passes
  keep calls that are not pure);
* ``"TVectorizable"`` — the op applies lane-wise to vectors.
"""

from __future__ import annotations

from typing import Any

from tvm.ffi.dtype import DTypeCode, float_format, parse_dtype
from tvm.ir.op import Op

from .expr import (
    FloorDiv, FloorMod, Call, Cast, Div, Max, Min, Mod, PrimExpr, Select, StringImm, And, Or,
    const, convert, is_float_dtype, _match_types, _canonical_dtype,
)

# Lane-wise math on floats: name -> number of arguments.
FLOAT_MATH = {
    "exp": 1, "exp2": 1, "exp10": 1, "expm1": 1, "log": 1, "log2": 1, "log10": 1, "log1p": 1,
    "sqrt": 1, "rsqrt": 1, "sin": 1, "cos": 1, "tan": 1, "sinh": 1, "cosh": 1, "tanh": 1,
    "asin": 1, "acos": 1, "atan": 1, "asinh": 1, "acosh": 1, "atanh": 1, "erf": 1,
    "sigmoid": 1, "floor": 1, "ceil": 1, "trunc": 1, "round": 1, "nearbyint": 1, "fabs": 1,
    "pow": 2, "fmod": 2, "atan2": 2, "copysign": 2, "hypot": 2, "nextafter": 2,
}
# Predicates on floats returning bool.
FLOAT_PREDICATES = ("isnan", "isinf", "isfinite")
# Other intrinsics: name -> effect kind.
OTHER_INTRINSICS = {
    "if_then_else": "pure", "likely": "pure", "reinterpret": "pure", "bitwise_and": "pure",
    "bitwise_or": "pure", "bitwise_xor": "pure", "bitwise_not": "pure", "shift_left": "pure",
    "shift_right": "pure", "popcount": "pure", "clz": "pure", "ldexp": "pure",
    "call_extern": "side_effect", "call_pure_extern": "pure", "address_of": "pure",
    "tvm_storage_sync": "side_effect", "tvm_thread_allreduce": "side_effect",
    "tvm_warp_shuffle": "side_effect", "tvm_warp_shuffle_down": "side_effect",
    "assume": "pure", "ret": "side_effect", "tvm_access_ptr": "pure",
    "call_llvm_intrin": "pure", "call_llvm_pure_intrin": "pure", "undef": "pure",
    "vectorhigh": "pure", "vectorlow": "pure", "vectorcombine": "pure",
    "isnullptr": "pure", "tvm_fill_fragment": "side_effect", "tvm_mma_sync": "side_effect",
    "check": "pure",
}

for _name in FLOAT_MATH:
    Op.register(f"tir.{_name}", TCallEffectKind="pure", TVectorizable=True)
for _name in FLOAT_PREDICATES:
    Op.register(f"tir.{_name}", TCallEffectKind="pure", TVectorizable=True)
for _name, _effect in OTHER_INTRINSICS.items():
    Op.register(f"tir.{_name}", TCallEffectKind=_effect)
for _name in ("if_then_else", "likely", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
              "shift_left", "shift_right", "popcount", "reinterpret"):
    Op.get(f"tir.{_name}").set_attr("TVectorizable", True)


def call_intrin(dtype: str, name: str, *args: Any) -> Call:
    """``Call(dtype, Op("tir.<name>"), args)``."""
    op = Op.get(name if "." in name else f"tir.{name}")
    return Call(_canonical_dtype(dtype), op, tuple(convert(a) for a in args))


def call_extern(dtype: str, func_name: str, *args: Any) -> Call:
    """Call the C function ``func_name`` (resolved by the target's linker)."""
    return call_intrin(dtype, "tir.call_extern", StringImm(func_name), *args)


def call_pure_extern(dtype: str, func_name: str, *args: Any) -> Call:
    return call_intrin(dtype, "tir.call_pure_extern", StringImm(func_name), *args)


def _float_math(name: str, nargs: int):
    def fn(*args: Any) -> PrimExpr:
        if len(args) != nargs:
            raise TypeError(f"T.{name} takes {nargs} argument(s), got {len(args)}")
        xs = [convert(a) for a in args]
        if nargs == 2:
            xs = list(_match_types(xs[0], xs[1]))
        if not is_float_dtype(xs[0].dtype):
            xs = [Cast("float32", x) for x in xs]
        return Call(xs[0].dtype, Op.get(f"tir.{name}"), tuple(xs))

    fn.__name__ = name
    fn.__doc__ = f"Lane-wise ``{name}`` of float expressions (ints are cast to float32)."
    return fn


exp = _float_math("exp", 1)
exp2 = _float_math("exp2", 1)
exp10 = _float_math("exp10", 1)
expm1 = _float_math("expm1", 1)
log = _float_math("log", 1)
log2 = _float_math("log2", 1)
log10 = _float_math("log10", 1)
log1p = _float_math("log1p", 1)
sqrt = _float_math("sqrt", 1)
rsqrt = _float_math("rsqrt", 1)
sin = _float_math("sin", 1)
cos = _float_math("cos", 1)
tan = _float_math("tan", 1)
sinh = _float_math("sinh", 1)
cosh = _float_math("cosh", 1)
tanh = _float_math("tanh", 1)
asin = _float_math("asin", 1)
acos = _float_math("acos", 1)
atan = _float_math("atan", 1)
asinh = _float_math("asinh", 1)
acosh = _float_math("acosh", 1)
atanh = _float_math("atanh", 1)
erf = _float_math("erf", 1)
sigmoid = _float_math("sigmoid", 1)
floor = _float_math("floor", 1)
ceil = _float_math("ceil", 1)
trunc = _float_math("trunc", 1)
round = _float_math("round", 1)  # noqa: A001
nearbyint = _float_math("nearbyint", 1)
fabs = _float_math("fabs", 1)
power = _float_math("pow", 2)
pow = power  # noqa: A001
fmod = _float_math("fmod", 2)
atan2 = _float_math("atan2", 2)
copysign = _float_math("copysign", 2)
hypot = _float_math("hypot", 2)
nextafter = _float_math("nextafter", 2)


def _float_pred(name: str):
    def fn(x: Any) -> PrimExpr:
        x = convert(x)
        if not is_float_dtype(x.dtype):
            return const(name == "isfinite", "bool")
        lanes = parse_dtype(x.dtype)[2]
        return Call("bool" if lanes == 1 else f"boolx{lanes}", Op.get(f"tir.{name}"), (x,))

    fn.__name__ = name
    return fn


isnan = _float_pred("isnan")
isinf = _float_pred("isinf")
isfinite = _float_pred("isfinite")


def abs(x: Any) -> PrimExpr:  # noqa: A001
    """Absolute value: ``fabs`` for floats, a select for signed ints, identity for unsigned."""
    x = convert(x)
    if is_float_dtype(x.dtype):
        return fabs(x)
    if parse_dtype(x.dtype)[0] == DTypeCode.UINT:
        return x
    return Select(x >= 0, x, -x)


def max(a: Any, b: Any = None, *rest: Any) -> PrimExpr:  # noqa: A001
    """``Max`` of two or more expressions."""
    if b is None:
        raise TypeError("T.max needs at least two arguments")
    out = Max(a, b)
    for r in rest:
        out = Max(out, r)
    return out


def min(a: Any, b: Any = None, *rest: Any) -> PrimExpr:  # noqa: A001
    """``Min`` of two or more expressions."""
    if b is None:
        raise TypeError("T.min needs at least two arguments")
    out = Min(a, b)
    for r in rest:
        out = Min(out, r)
    return out


def if_then_else(cond: Any, t: Any, f: Any) -> PrimExpr:
    """Like Select, but only the taken branch is evaluated (guards out-of-bounds loads)."""
    t, f = _match_types(t, f)
    cond = convert(cond)
    return Call(t.dtype, Op.get("tir.if_then_else"), (cond, t, f))


def checked(value: Any, cond: Any, message: str, *args: Any) -> PrimExpr:
    """``value``, provided ``cond`` holds; otherwise the kernel fails with ``message``.

    ``message`` may hold printf-style ``%lld`` placeholders filled with ``args`` (int64
    expressions), e.g. ``"gather: index %lld is out of range"``.  The TIR pass LowerChecks
    turns each such call into an ``AssertStmt`` before the statement that computes it (hoisted
    out of loops it does not depend on), so every target that reports errors raises it; the
    check is pure, so a value nobody uses is not checked."""
    value, cond = convert(value), convert(cond)
    margs = tuple(Cast("int64", a) if a.dtype != "int64" else a for a in map(convert, args))
    return Call(value.dtype, Op.get("tir.check"), (value, cond, StringImm(message)) + margs)


def likely(cond: Any) -> PrimExpr:
    cond = convert(cond)
    return Call(cond.dtype, Op.get("tir.likely"), (cond,))


def reinterpret(dtype: str, value: Any) -> PrimExpr:
    return call_intrin(dtype, "tir.reinterpret", value)


def truncdiv(a: Any, b: Any) -> PrimExpr:
    return Div(a, b)


def truncmod(a: Any, b: Any) -> PrimExpr:
    return Mod(a, b)


def floordiv(a: Any, b: Any) -> PrimExpr:
    return FloorDiv(a, b)


def floormod(a: Any, b: Any) -> PrimExpr:
    return FloorMod(a, b)


def div(a: Any, b: Any) -> PrimExpr:
    """True division for floats, truncating division for ints."""
    return Div(a, b)


def all(*conds: Any) -> PrimExpr:  # noqa: A001
    """Conjunction of conditions (``True`` when empty)."""
    if not conds:
        return const(True)
    out = convert(conds[0])
    for c in conds[1:]:
        out = And(out, c)
    return out


def any(*conds: Any) -> PrimExpr:  # noqa: A001
    """Disjunction of conditions (``False`` when empty)."""
    if not conds:
        return const(False)
    out = convert(conds[0])
    for c in conds[1:]:
        out = Or(out, c)
    return out


def bitwise_and(a: Any, b: Any) -> PrimExpr:
    a, b = _match_types(a, b)
    return call_intrin(a.dtype, "tir.bitwise_and", a, b)


def bitwise_or(a: Any, b: Any) -> PrimExpr:
    a, b = _match_types(a, b)
    return call_intrin(a.dtype, "tir.bitwise_or", a, b)


def bitwise_xor(a: Any, b: Any) -> PrimExpr:
    a, b = _match_types(a, b)
    return call_intrin(a.dtype, "tir.bitwise_xor", a, b)


def bitwise_not(a: Any) -> PrimExpr:
    a = convert(a)
    return call_intrin(a.dtype, "tir.bitwise_not", a)


def shift_left(a: Any, b: Any) -> PrimExpr:
    a, b = _match_types(a, b)
    return call_intrin(a.dtype, "tir.shift_left", a, b)


def shift_right(a: Any, b: Any) -> PrimExpr:
    a, b = _match_types(a, b)
    return call_intrin(a.dtype, "tir.shift_right", a, b)


def max_value(dtype: str) -> PrimExpr:
    """The largest finite value of ``dtype``."""
    code, bits, _ = parse_dtype(dtype)
    if code == DTypeCode.INT:
        return const((1 << (bits - 1)) - 1, dtype)
    if code == DTypeCode.UINT:
        return const((1 << bits) - 1, dtype)
    if code == DTypeCode.BOOL:
        return const(True, "bool")
    if code == DTypeCode.FLOAT:
        return const({16: 65504.0, 32: 3.4028234663852886e38, 64: 1.7976931348623157e308}[bits], dtype)
    if code == DTypeCode.BFLOAT:
        return const(3.3895313892515355e38, dtype)
    if float_format(code) is not None:
        return const(_low_precision_finfo(dtype).max, dtype)
    raise TypeError(f"max_value: unsupported dtype {dtype}")


def _low_precision_finfo(dtype: str) -> Any:
    import ml_dtypes
    from tvm.ffi.dtype import to_numpy_dtype

    code, bits, _ = parse_dtype(dtype)
    return ml_dtypes.finfo(to_numpy_dtype(float_format(code).name))


def min_value(dtype: str) -> PrimExpr:
    """The smallest finite value of ``dtype``."""
    code, bits, _ = parse_dtype(dtype)
    if code == DTypeCode.INT:
        return const(-(1 << (bits - 1)), dtype)
    if code == DTypeCode.UINT:
        return const(0, dtype)
    if code == DTypeCode.BOOL:
        return const(False, "bool")
    if code in (DTypeCode.FLOAT, DTypeCode.BFLOAT):
        return const(-max_value(dtype).value, dtype)  # type: ignore[attr-defined]
    if float_format(code) is not None:
        return const(float(_low_precision_finfo(dtype).min), dtype)
    raise TypeError(f"min_value: unsupported dtype {dtype}")


def _has_infinity(dtype: str) -> bool:
    fmt = float_format(parse_dtype(dtype)[0])
    return fmt is None or fmt.kind == "ieee"


def infinity(dtype: str) -> PrimExpr:
    """+inf of a float dtype; for a low-precision format without infinity
    (``float8_e4m3fn``, the ``fnuz`` and ``float4`` formats) its largest finite value."""
    if not is_float_dtype(dtype):
        raise TypeError(f"infinity needs a float dtype, got {dtype}")
    if not _has_infinity(dtype):
        return max_value(dtype)
    return const(float("inf"), dtype)


def neg_infinity(dtype: str) -> PrimExpr:
    """-inf of a float dtype (the smallest finite value when the format has no infinity)."""
    if is_float_dtype(dtype) and not _has_infinity(dtype):
        return min_value(dtype)
    return const(float("-inf"), infinity(dtype).dtype)


def effect_kind(call: Call) -> str:
    """``pure``, ``read`` or ``side_effect`` for a call (unknown ops are side-effecting)."""
    op = call.op
    if isinstance(op, Op):
        return op.get_attr("TCallEffectKind", "side_effect")
    return "side_effect"
