"""Elementwise ONNX operators: unary math, binary arithmetic and comparison, activations,
Cast, Clip, Where, variadic Sum/Mean/Max/Min, MatMul, Gemm and Einsum."""

from __future__ import annotations

from typing import Any



from . import low_precision as lowp
from .common import R, converter, onnx_dtype_to_str

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def scalar(ctx: Any, value: float, dtype: str) -> Any:
    """A 0-d constant of ``dtype``."""
    return ctx.const_expr(value, dtype)


def _relax_unary(name: str) -> Any:
    def impl(ctx: Any) -> Any:
        return getattr(R, name)(ctx.input(0))

    return impl


# -- unary math ------------------------------------------------------------------------------
_UNARY = {
    "Abs": "abs", "Neg": "negative", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Sin": "sin",
    "Cos": "cos", "Tan": "tan", "Tanh": "tanh", "Sigmoid": "sigmoid", "Erf": "erf",
    "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign", "Not": "logical_not",
    "BitwiseNot": "bitwise_not", "IsNaN": "isnan",
}
for _onnx, _relax in _UNARY.items():
    converter(_onnx)(_relax_unary(_relax))


for _onnx, _relax in [("Sinh", "sinh"), ("Cosh", "cosh"), ("Asinh", "asinh"), ("Acosh", "acosh"),
                      ("Atanh", "atanh"), ("Asin", "asin"), ("Acos", "acos"), ("Atan", "atan")]:
    converter(_onnx)(_relax_unary(_relax))


@converter("Reciprocal")
def _reciprocal(ctx: Any) -> Any:
    return R.divide(scalar(ctx, 1.0, ctx.dtype(0)), ctx.input(0))


@converter("Identity")
def _identity(ctx: Any) -> Any:
    return ctx.input(0)


@converter("IsInf")
def _isinf(ctx: Any) -> Any:
    x = ctx.input(0)
    pos, neg = ctx.attr("detect_positive", 1), ctx.attr("detect_negative", 1)
    inf = R.isinf(x)
    if pos and neg:
        return inf
    zero = scalar(ctx, 0.0, ctx.dtype(0))
    if pos:
        return R.logical_and(inf, R.greater(x, zero))
    if neg:
        return R.logical_and(inf, R.less(x, zero))
    return R.logical_and(inf, R.logical_not(inf))


# -- binary ----------------------------------------------------------------------------------
def broadcast_inputs(ctx: Any, count: int) -> list[Any]:
    """The first ``count`` inputs, each whose symbolic dimension meets a constant one other
    than 1 (aligned from the right) cast to it (``match_cast``, checked at run time): ONNX
    broadcasting allows only that value there (or 1, refused then), and Relax cannot prove
    it, so the result would lose its shape (e.g. after a Pad with run-time pads)."""
    xs = [ctx.input(i) for i in range(count)]
    shapes = [ctx.importer.shape_of(ctx.raw_inputs[i]) for i in range(count)]
    if any(s is None for s in shapes) or all(isinstance(d, int) for s in shapes for d in s):
        return xs
    width = max(len(s) for s in shapes)
    fixed: dict[int, int] = {}
    for k in range(1, width + 1):
        sizes = {s[-k] for s in shapes if len(s) >= k and isinstance(s[-k], int) and s[-k] != 1}
        if len(sizes) == 1:
            fixed[k] = sizes.pop()
    for i, shape in enumerate(shapes):
        cast = [j for j, d in enumerate(shape) if not isinstance(d, int) and len(shape) - j in fixed]
        if cast:
            new = [fixed[len(shape) - j] if j in cast else d for j, d in enumerate(shape)]
            from ...struct_info import TensorStructInfo

            xs[i] = ctx.bb.match_cast(ctx.emit(xs[i]), TensorStructInfo(new, ctx.dtype(i)))
    return xs


def _binary(name: str) -> Any:
    def impl(ctx: Any) -> Any:
        return getattr(R, name)(*broadcast_inputs(ctx, 2))

    return impl


_BINARY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Equal": "equal",
    "Greater": "greater", "Less": "less", "GreaterOrEqual": "greater_equal",
    "LessOrEqual": "less_equal", "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
    "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
}
for _onnx, _relax in _BINARY.items():
    converter(_onnx)(_binary(_relax))


@converter("Pow")
def _pow(ctx: Any) -> Any:
    x, y = ctx.input(0), ctx.input(1)
    dt = ctx.dtype(0)
    if ctx.dtype(1) != dt:
        y = R.astype(y, dt)
    return R.power(x, y)


@converter("Mod")
def _mod(ctx: Any) -> Any:
    x, y = ctx.input(0), ctx.input(1)
    fmod = ctx.attr("fmod", 0)
    if fmod:
        return R.mod(x, y)
    dt = ctx.dtype(0)
    if dt not in _FLOATS:
        return R.floor_mod(x, y)
    # numpy/Python semantics from the truncated remainder: add y when the signs differ
    # (keeps e.g. -5 mod inf = inf and 5 mod inf = 5)
    r = ctx.emit(R.mod(x, y))
    zero = scalar(ctx, 0, dt)
    fix = R.logical_and(R.not_equal(r, zero), R.not_equal(R.less(r, zero), R.less(y, zero)))
    return R.where(fix, r + y, r)


@converter("BitShift")
def _bitshift(ctx: Any) -> Any:
    direction = ctx.attr("direction", "")
    x, s = ctx.input(0), ctx.input(1)
    dt = ctx.dtype(0)
    if direction == "LEFT":
        y = R.left_shift(x, s)
    elif direction == "RIGHT":
        y = R.right_shift(x, s)
    else:
        raise ctx.unsupported(f"direction {direction!r} (expected LEFT or RIGHT)")
    # shifts by a negative amount or by the bit width or more give 0 (undefined in LLVM)
    bits = int("".join(ch for ch in dt if ch.isdigit()))
    out_of_range = R.greater_equal(s, scalar(ctx, bits, dt))
    fill: Any = scalar(ctx, 0, dt)
    if not dt.startswith("uint"):
        out_of_range = R.logical_or(out_of_range, R.less(s, scalar(ctx, 0, dt)))
        if direction == "RIGHT":  # arithmetic shift: the sign fills the word
            fill = R.where(R.less(x, scalar(ctx, 0, dt)), scalar(ctx, -1, dt), fill)
    return R.where(out_of_range, fill, y)


def _variadic(name: str, final: Any = None) -> Any:
    def impl(ctx: Any) -> Any:
        xs = [x for x in ctx.inputs() if x is not None]
        out = xs[0]
        for x in xs[1:]:
            out = getattr(R, name)(out, x)
        if len(xs) == 1:
            out = R.add(out, scalar(ctx, 0, ctx.dtype(0))) if name == "add" else out
        if final is not None:
            out = final(ctx, out, len(xs))
        return out

    return impl


converter("Sum")(_variadic("add"))
converter("Max")(_variadic("maximum"))
converter("Min")(_variadic("minimum"))
converter("Mean")(_variadic("add", lambda ctx, out, n: out / scalar(ctx, float(n), ctx.dtype(0))))


@converter("Where")
def _where(ctx: Any) -> Any:
    return R.where(*broadcast_inputs(ctx, 3))


# -- casts -----------------------------------------------------------------------------------
def _cast_target(ctx: Any) -> str:
    if ctx.op_type == "CastLike":
        return ctx.dtype(1)
    return onnx_dtype_to_str(ctx.attr("to"), f"{ctx.where()}: to: ")


@converter("Cast", "CastLike")
def _cast(ctx: Any) -> Any:
    """Cast/CastLike; ``saturate`` clamps float8 targets to their finite range first,
    ``round_mode`` picks the rounding to ``float8_e8m0fnu`` (see ``low_precision``)."""
    dtype = _cast_target(ctx)
    mode = lowp.round_mode(ctx)
    src = ctx.dtype(0)
    if src == dtype:
        return ctx.input(0)
    x = ctx.input(0)
    if dtype == lowp.E8M0:
        return lowp.cast_e8m0(ctx, x, src, bool(ctx.attr("saturate", 1)), mode)
    if dtype in lowp.SATURATING and ctx.attr("saturate", 1):
        x = lowp.saturate(ctx, x, src, dtype)
    if dtype == "bool" and src != "bool":
        return R.not_equal(x, scalar(ctx, 0, src))
    if src == "float64" and dtype in ("float16", "bfloat16"):
        x = R.astype(x, "float32")  # LLVM has no direct double -> half conversion here
    return R.astype(x, dtype)


# -- Clip ------------------------------------------------------------------------------------
@converter("Clip")
def _clip(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    if ctx.opset < 11:
        lo, hi = ctx.attr("min", None), ctx.attr("max", None)
        lo_e = None if lo is None else scalar(ctx, lo, dt)
        hi_e = None if hi is None else scalar(ctx, hi, dt)
    else:
        lo_e, hi_e = ctx.input(1), ctx.input(2)
    if lo_e is not None:
        x = R.maximum(x, lo_e)
    if hi_e is not None:
        x = R.minimum(x, hi_e)
    return x


# -- activations -----------------------------------------------------------------------------
@converter("Relu")
def _relu(ctx: Any) -> Any:
    if ctx.dtype(0) not in _FLOATS:
        return R.maximum(ctx.input(0), scalar(ctx, 0, ctx.dtype(0)))
    return R.nn.relu(ctx.input(0))


@converter("LeakyRelu")
def _leaky_relu(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    alpha = ctx.attr("alpha", 0.01)
    return R.where(R.greater_equal(x, scalar(ctx, 0, dt)), x, x * scalar(ctx, alpha, dt))


@converter("PRelu")
def _prelu(ctx: Any) -> Any:
    x, slope, dt = ctx.input(0), ctx.input(1), ctx.dtype(0)
    if ctx.opset < 7 and ctx.ndim(0) > 2 and ctx.ndim(1) == 1:
        # before opset 7 a 1-d slope of C values is per channel (axis 1), not numpy-broadcast
        # against the last axis
        channels, length = ctx.shape(0)[1], ctx.shape(1)[0]
        if isinstance(channels, int) and isinstance(length, int) and length not in (1, channels):
            raise ctx.error(f"slope has {length} values for {channels} channels")
        slope = R.reshape(slope, [length, *([1] * (ctx.ndim(0) - 2))])
    return R.where(R.less(x, scalar(ctx, 0, dt)), x * slope, x)


def _elu_core(ctx: Any, x: Any, alpha: float, dt: str) -> Any:
    zero = scalar(ctx, 0, dt)
    neg = scalar(ctx, alpha, dt) * (R.exp(R.minimum(x, zero)) - scalar(ctx, 1, dt))
    return R.where(R.greater(x, zero), x, neg)


@converter("Elu")
def _elu(ctx: Any) -> Any:
    return _elu_core(ctx, ctx.input(0), ctx.attr("alpha", 1.0), ctx.dtype(0))


@converter("Selu")
def _selu(ctx: Any) -> Any:
    alpha = ctx.attr("alpha", 1.67326319217681884765625)
    gamma = ctx.attr("gamma", 1.05070102214813232421875)
    dt = ctx.dtype(0)
    return _elu_core(ctx, ctx.input(0), alpha, dt) * scalar(ctx, gamma, dt)


@converter("Celu")
def _celu(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    alpha = ctx.attr("alpha", 1.0)
    zero = scalar(ctx, 0, dt)
    neg = scalar(ctx, alpha, dt) * (R.exp(R.minimum(x, zero) / scalar(ctx, alpha, dt))
                                    - scalar(ctx, 1, dt))
    return R.maximum(x, zero) + R.minimum(zero, neg)


@converter("HardSigmoid")
def _hard_sigmoid(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    alpha, beta = ctx.attr("alpha", 0.2), ctx.attr("beta", 0.5)
    y = x * scalar(ctx, alpha, dt) + scalar(ctx, beta, dt)
    return R.minimum(R.maximum(y, scalar(ctx, 0, dt)), scalar(ctx, 1, dt))


@converter("HardSwish")
def _hard_swish(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    y = x * scalar(ctx, 1.0 / 6.0, dt) + scalar(ctx, 0.5, dt)
    return x * R.minimum(R.maximum(y, scalar(ctx, 0, dt)), scalar(ctx, 1, dt))


def softplus(ctx: Any, x: Any, dt: str) -> Any:
    """log(1 + exp(x)) computed without overflow: max(x, 0) + log(1 + exp(-|x|))."""
    zero, one = scalar(ctx, 0, dt), scalar(ctx, 1, dt)
    return R.maximum(x, zero) + R.log(one + R.exp(R.negative(R.abs(x))))


@converter("Softplus")
def _softplus(ctx: Any) -> Any:
    return softplus(ctx, ctx.input(0), ctx.dtype(0))


@converter("Softsign")
def _softsign(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    return x / (scalar(ctx, 1, dt) + R.abs(x))


@converter("Mish")
def _mish(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    return x * R.tanh(softplus(ctx, x, dt))


@converter("ThresholdedRelu")
def _thresholded_relu(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    alpha = ctx.attr("alpha", 1.0)
    return R.where(R.greater(x, scalar(ctx, alpha, dt)), x, scalar(ctx, 0, dt))


@converter("Shrink")
def _shrink(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    lambd, bias = ctx.attr("lambd", 0.5), ctx.attr("bias", 0.0)
    lo = R.where(R.less(x, scalar(ctx, -lambd, dt)), x + scalar(ctx, bias, dt), scalar(ctx, 0, dt))
    return R.where(R.greater(x, scalar(ctx, lambd, dt)), x - scalar(ctx, bias, dt), lo)


@converter("Gelu")
def _gelu(ctx: Any) -> Any:
    approx = ctx.attr("approximate", "none")
    if approx == "none":
        return R.nn.gelu(ctx.input(0))
    if approx == "tanh":
        return R.nn.gelu_tanh(ctx.input(0))
    raise ctx.unsupported(f"approximate={approx!r} (expected 'none' or 'tanh')")


@converter("SwiGLU")
def _swiglu(ctx: Any) -> Any:
    a, b, dt = ctx.input(0), ctx.input(1), ctx.dtype(0)
    alpha = ctx.attr("alpha", 1.0)
    return a * R.sigmoid(a * scalar(ctx, alpha, dt)) * b


@converter("Swish")
def _swish(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    alpha = ctx.attr("alpha", 1.0)
    return x * R.sigmoid(x * scalar(ctx, alpha, dt))


# -- linear algebra --------------------------------------------------------------------------
@converter("MatMul")
def _matmul(ctx: Any) -> Any:
    return R.matmul(ctx.input(0), ctx.input(1))


@converter("Gemm")
def _gemm(ctx: Any) -> Any:
    a, b, c = ctx.input(0), ctx.input(1), ctx.input(2)
    dt = ctx.dtype(0)
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    if ctx.attr("transA", 0):
        a = R.permute_dims(a, [1, 0])
    if ctx.attr("transB", 0):
        bc = ctx.const(1)
        b = ctx.const_expr(bc.T, ctx.dtype(1)) if bc is not None else R.permute_dims(b, [1, 0])
    y = R.matmul(a, b)
    if alpha != 1.0:
        y = y * scalar(ctx, alpha, dt)
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = c * scalar(ctx, beta, dt)
        y = y + c
    return y


@converter("Einsum")
def _einsum(ctx: Any) -> Any:
    equation = ctx.attr("equation", "").replace(" ", "")
    xs = [x for x in ctx.inputs() if x is not None]
    return R.einsum(xs, equation)


# -- ai.onnx.ml --------------------------------------------------------------------------------
@converter("Binarizer", domain="ai.onnx.ml")
def _binarizer(ctx: Any) -> Any:
    x, dt = ctx.input(0), ctx.dtype(0)
    thr = ctx.attr("threshold", 0.0)
    return R.where(R.greater(x, scalar(ctx, thr, dt)), scalar(ctx, 1, dt), scalar(ctx, 0, dt))


@converter("ArrayFeatureExtractor", domain="ai.onnx.ml")
def _array_feature_extractor(ctx: Any) -> Any:
    idx = ctx.input(1)
    if ctx.ndim(1) != 1:
        idx = R.reshape(idx, [-1])
    return R.take(ctx.input(0), idx, axis=ctx.ndim(0) - 1)
