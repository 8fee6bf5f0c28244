"""Elementwise ONNX operators: unary math, binary arithmetic and comparison, activations,
Cast, Clip, Where, variadic Sum/Mean/Max/Min, MatMul, Gemm and Einsum."""

from __future__ import annotations

from typing import Any

import numpy as np

from tvm import tir

from . import low_precision as lowp
from .common import OpNotImplemented, R, converter, onnx_dtype_to_str

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def scalar(ctx: Any, value: float, dtype: str) -> Any:
    """A 0-d constant of ``dtype``."""
    return ctx.const_expr(value, dtype)


def _relax_unary(name: str) -> Any:
    def impl(ctx: Any) -> Any:
        return getattr(R, name)(ctx.input(0))

    return impl


def _np_unary(fn: Any) -> Any:
    def fold(ctx: Any, x: Any) -> Any:
        return np.asarray(fn(x)).astype(x.dtype)

    return fold


# -- unary math ------------------------------------------------------------------------------
_UNARY = {
    "Abs": ("abs", np.abs), "Neg": ("negative", np.negative), "Exp": ("exp", np.exp),
    "Log": ("log", np.log), "Sqrt": ("sqrt", np.sqrt), "Sin": ("sin", np.sin),
    "Cos": ("cos", np.cos), "Tan": ("tan", np.tan), "Tanh": ("tanh", np.tanh),
    "Sigmoid": ("sigmoid", None), "Erf": ("erf", None), "Floor": ("floor", np.floor),
    "Ceil": ("ceil", np.ceil), "Round": ("round", np.round), "Sign": ("sign", np.sign),
    "Not": ("logical_not", np.logical_not), "BitwiseNot": ("bitwise_not", np.invert),
    "IsNaN": ("isnan", None),
}
for _onnx, (_relax, _np) in _UNARY.items():
    converter(_onnx, fold=_np_unary(_np) if _np is not None else None)(_relax_unary(_relax))


def _with_fallback(name: str, fallback: Any) -> Any:
    def impl(ctx: Any) -> Any:
        x = ctx.input(0)
        try:
            op = getattr(R, name)
        except OpNotImplemented:
            return fallback(ctx, x, ctx.dtype(0))
        return op(x)

    return impl


def _sinh(ctx: Any, x: Any, dt: str) -> Any:
    return (R.exp(x) - R.exp(R.negative(x))) * scalar(ctx, 0.5, dt)


def _cosh(ctx: Any, x: Any, dt: str) -> Any:
    return (R.exp(x) + R.exp(R.negative(x))) * scalar(ctx, 0.5, dt)


def _asinh(ctx: Any, x: Any, dt: str) -> Any:
    return R.log(x + R.sqrt(x * x + scalar(ctx, 1.0, dt)))


def _acosh(ctx: Any, x: Any, dt: str) -> Any:
    return R.log(x + R.sqrt(x * x - scalar(ctx, 1.0, dt)))


def _atanh(ctx: Any, x: Any, dt: str) -> Any:
    one = scalar(ctx, 1.0, dt)
    return R.log((one + x) / (one - x)) * scalar(ctx, 0.5, dt)


def _no_fallback(name: str) -> Any:
    """A libm call (``asinf``/``asin``) in a small kernel."""

    def fb(ctx: Any, x: Any, dt: str) -> Any:
        from tvm import te
        from tvm.tir.op import call_pure_extern

        if dt not in ("float32", "float64"):
            raise ctx.unsupported(f"needs relax.{name} for {dt} (not available)")
        fname = name + ("f" if dt == "float32" else "")

        def fn(t: Any) -> Any:
            return te.compute(t.shape, lambda *i: call_pure_extern(dt, fname, t[i]), name=name)

        return ctx.bb.emit_te(fn, x, primfunc_name_hint=name)

    return fb


for _onnx, _relax, _fb in [
    ("Sinh", "sinh", _sinh), ("Cosh", "cosh", _cosh), ("Asinh", "asinh", _asinh),
    ("Acosh", "acosh", _acosh), ("Atanh", "atanh", _atanh), ("Asin", "asin", _no_fallback("asin")),
    ("Acos", "acos", _no_fallback("acos")), ("Atan", "atan", _no_fallback("atan")),
]:
    converter(_onnx)(_with_fallback(_relax, _fb))


@converter("Reciprocal", fold=_np_unary(np.reciprocal))
def _reciprocal(ctx: Any) -> Any:
    return R.divide(scalar(ctx, 1.0, ctx.dtype(0)), ctx.input(0))


@converter("Identity", fold=lambda ctx, x: x, symbolic_fold=True)
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
def _trunc_div(a: Any, b: Any) -> Any:
    if a.dtype == object or b.dtype == object:
        def one(x: Any, y: Any) -> Any:
            if isinstance(x, int) and isinstance(y, int):
                q = abs(x) // abs(y)
                return q if (x >= 0) == (y >= 0) else -q
            return tir.floordiv(x, y)
        return np.frompyfunc(one, 2, 1)(a, b)
    if np.issubdtype(a.dtype, np.integer):
        with np.errstate(divide="ignore"):
            return (np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)).astype(a.dtype)
    return np.asarray(a / b).astype(a.dtype)


def _np_binary(fn: Any) -> Any:
    def fold(ctx: Any, a: Any, b: Any) -> Any:
        out = fn(a, b)
        if a.dtype != object and b.dtype != object and out.dtype != np.bool_:
            out = np.asarray(out).astype(a.dtype)
        return out

    return fold


def _binary(name: str) -> Any:
    def impl(ctx: Any) -> Any:
        return getattr(R, name)(ctx.input(0), ctx.input(1))

    return impl


_BINARY = {
    "Add": ("add", np.add, True), "Sub": ("subtract", np.subtract, True),
    "Mul": ("multiply", np.multiply, True), "Div": ("divide", _trunc_div, True),
    "Equal": ("equal", np.equal, False), "Greater": ("greater", np.greater, False),
    "Less": ("less", np.less, False), "GreaterOrEqual": ("greater_equal", np.greater_equal, False),
    "LessOrEqual": ("less_equal", np.less_equal, False), "And": ("logical_and", np.logical_and, False),
    "Or": ("logical_or", np.logical_or, False), "Xor": ("logical_xor", np.logical_xor, False),
    "BitwiseAnd": ("bitwise_and", np.bitwise_and, False),
    "BitwiseOr": ("bitwise_or", np.bitwise_or, False),
    "BitwiseXor": ("bitwise_xor", np.bitwise_xor, False),
}
for _onnx, (_relax, _np, _sym) in _BINARY.items():
    converter(_onnx, fold=_np_binary(_np), symbolic_fold=_sym)(_binary(_relax))


@converter("Pow")
def _pow(ctx: Any) -> Any:
    x, y = ctx.input(0), ctx.input(1)
    dt = ctx.dtype(0)
    if ctx.dtype(1) != dt:
        y = R.astype(y, dt)
    return R.power(x, y)


@converter("Mod", fold=lambda ctx, a, b: (np.fmod if ctx.attr("fmod", 0) else np.mod)(a, b).astype(a.dtype))
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


@converter("Where", fold=lambda ctx, c, a, b: np.where(c.astype(bool), a, b), symbolic_fold=True)
def _where(ctx: Any) -> Any:
    return R.where(ctx.input(0), ctx.input(1), ctx.input(2))


# -- casts -----------------------------------------------------------------------------------
def _cast_fold(ctx: Any, x: Any, *_rest: Any) -> Any:
    dtype = _cast_target(ctx)
    mode = lowp.round_mode(ctx)
    if x.dtype == object:
        if dtype.startswith("int") or dtype.startswith("uint"):
            return x
        return None
    if dtype == "bool":
        return x.astype(np.bool_)
    if dtype == lowp.E8M0:
        return lowp.cast_e8m0_np(x, bool(ctx.attr("saturate", 1)), mode)
    if dtype in lowp.SATURATING and ctx.attr("saturate", 1):
        x = lowp.saturate_np(x, dtype)
    if x.dtype.kind == "f" and x.dtype.itemsize > 1 and dtype.startswith(("int", "uint")):
        x = np.trunc(x)
    from tvm.tir.transform.low_precision_codec import cast_array

    return cast_array(x, dtype)  # the conversions compiled code does


def _cast_target(ctx: Any) -> str:
    if ctx.op_type == "CastLike":
        return ctx.dtype(1)
    return onnx_dtype_to_str(ctx.attr("to"), f"{ctx.where()}: to: ")


@converter("Cast", "CastLike", fold=_cast_fold, symbolic_fold=True)
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
@converter("Relu", fold=lambda ctx, x: np.maximum(x, 0).astype(x.dtype))
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
    try:
        op = R.einsum
    except OpNotImplemented:
        op = None
    if op is not None:
        return op(xs, equation)
    return einsum_te(ctx, xs, equation)


def _parse_einsum(equation: str, ndims: list[int]) -> tuple[list[str], str]:
    """Operand and output subscripts with ``...`` expanded to fresh letters."""
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum {equation!r}: {len(terms)} terms for {len(ndims)} operands")
    pool = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in equation]
    ell_rank = max([n - len(t.replace("...", "")) for t, n in zip(terms, ndims) if "..." in t],
                   default=0)
    ell = "".join(pool[:ell_rank])
    out_terms = []
    for t, n in zip(terms, ndims):
        if "..." in t:
            k = n - len(t.replace("...", ""))
            t = t.replace("...", ell[ell_rank - k:] if k else "")
        if len(t) != n:
            raise ValueError(f"einsum {equation!r}: term {t!r} does not match rank {n}")
        out_terms.append(t)
    if "->" in equation:
        out = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    return out_terms, out


def einsum_te(ctx: Any, xs: list[Any], equation: str) -> Any:
    """Einsum as one te.compute: output letters index the result, the rest are summed."""
    from tvm import te

    shapes = [ctx.importer.shape_of(x) for x in xs]
    terms, out = _parse_einsum(equation, [len(s) for s in shapes])
    dims: dict[str, Any] = {}
    for t, shape in zip(terms, shapes):
        for c, d in zip(t, shape):
            if c not in dims or (isinstance(dims[c], int) and dims[c] == 1):
                dims[c] = d
    red = [c for c in dict.fromkeys("".join(terms)) if c not in out]

    def fn(*tensors: Any) -> Any:
        raxes = {c: te.reduce_axis((0, dims[c]), name=f"r{c}") for c in red}

        def body(*idx: Any) -> Any:
            env = dict(zip(out, idx))
            env.update({c: raxes[c] for c in red})
            prod = None
            for tensor, t, shape in zip(tensors, terms, shapes):
                index = [0 if (isinstance(d, int) and d == 1 and dims[c] != 1) else env[c]
                         for c, d in zip(t, shape)]
                v = tensor[tuple(index)] if index else tensor[()]
                prod = v if prod is None else prod * v
            return te.sum(prod, axis=[raxes[c] for c in red]) if red else prod

        return te.compute([dims[c] for c in out], body, name="einsum")

    return ctx.bb.emit_te(fn, *xs, primfunc_name_hint="einsum")


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
