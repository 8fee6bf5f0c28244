"""Reference evaluation of Relax operator calls with numpy (FoldConstant's fallback).

``evaluate_with_numpy(call, args)`` computes one operator call on numpy values: tensors as
arrays, shapes as tuples of ints, scalars as Python numbers, tuples as tuples.  The result
is cast to the dtype the call's StructInfo says and must have its static shape.  Operator
families register an evaluator with::

    @register_numpy_evaluator("relax.nn.relu")
    def _relu(call, x):
        return np.maximum(x, 0)

Shape-only operators (reshape, squeeze, expand_dims, flatten) just take the output shape
from the call's StructInfo, so they do not depend on how the attributes spell the axes.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from tvm.ffi.dtype import to_numpy_dtype

from ..analysis.struct_info_analysis import get_static_shape
from ..expr import Call, Constant, DataTypeImm, PrimValue, ShapeExpr, StringImm, Tuple
from ..struct_info import TensorStructInfo, TupleStructInfo

__all__ = [
    "register_numpy_evaluator",
    "get_numpy_evaluator",
    "evaluate_with_numpy",
    "NumpyEvalError",
    "constant_value",
    "run_function_with_numpy",
]

Evaluator = Callable[..., Any]
_TABLE: dict[str, Evaluator] = {}


class NumpyEvalError(RuntimeError):
    """An evaluator produced a value that disagrees with the call's StructInfo."""


def register_numpy_evaluator(*names: str, override: bool = False) -> Callable[[Evaluator], Evaluator]:
    """Decorator: ``fn(call, *args)`` evaluates the operators ``names`` on numpy values."""

    def wrap(fn: Evaluator) -> Evaluator:
        for name in names:
            if name in _TABLE and not override:
                raise ValueError(f"{name} already has a numpy evaluator; pass override=True")
            _TABLE[name] = fn
        return fn

    return wrap


def get_numpy_evaluator(name: str) -> Optional[Evaluator]:
    return _TABLE.get(name)


def constant_value(expr: Any) -> Any:
    """The value of a constant leaf as evaluators take it: a tensor ``Constant`` as its
    array, a ``ShapeExpr`` of immediates as a tuple of ints, a ``PrimValue`` as a number, a
    dtype or string immediate as its string, a ``Tuple`` of these as a tuple."""
    if isinstance(expr, Constant):
        return expr.data
    if isinstance(expr, ShapeExpr) and all(hasattr(v, "value") for v in expr.values):
        return tuple(int(v.value) for v in expr.values)
    if isinstance(expr, PrimValue) and hasattr(expr.value, "value"):
        return expr.value.value
    if isinstance(expr, (DataTypeImm, StringImm)):
        return expr.value
    if isinstance(expr, Tuple):
        return tuple(constant_value(f) for f in expr.fields)
    raise NumpyEvalError(f"cannot evaluate {type(expr).__name__} with numpy")


def _conform(value: Any, sinfo: Any, name: str) -> Any:
    if isinstance(sinfo, TupleStructInfo):
        if not isinstance(value, (tuple, list)) or len(value) != len(sinfo.fields):
            raise NumpyEvalError(f"{name}: evaluator returned {type(value).__name__}, "
                                 f"expected a tuple of {len(sinfo.fields)}")
        return tuple(_conform(v, s, name) for v, s in zip(value, sinfo.fields))
    if not isinstance(sinfo, TensorStructInfo):
        raise NumpyEvalError(f"{name}: only tensor results are evaluated")
    shape = get_static_shape(sinfo)
    array = np.asarray(value).astype(to_numpy_dtype(sinfo.dtype), copy=False)
    if shape is None or array.shape != shape:
        raise NumpyEvalError(f"{name}: evaluator returned shape {array.shape}, the call has {shape}")
    return np.asarray(array, order="C")


def evaluate_with_numpy(call: Call, args: list[Any]) -> Optional[Any]:
    """``call`` evaluated on ``args`` (None if its operator has no numpy evaluator)."""
    name = call.op.name
    fn = _TABLE.get(name)
    if fn is None:
        return None
    with np.errstate(all="ignore"):
        value = fn(call, *args)
    return _conform(value, call.struct_info, name)


def _out_shape(call: Call) -> tuple[int, ...]:
    shape = get_static_shape(call.struct_info)
    if shape is None:
        raise NumpyEvalError(f"{call.op.name}: the result shape is not static")
    return shape


# -- elementwise ------------------------------------------------------------------------------
_erf = np.vectorize(math.erf, otypes=[np.float64])

_UNARY: dict[str, Callable[[np.ndarray], Any]] = {
    "abs": np.abs, "negative": np.negative, "sign": np.sign, "square": np.square,
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": lambda x: _erf(x).astype(x.dtype),
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
    "bitwise_not": np.invert, "logical_not": np.logical_not, "isnan": np.isnan,
    "isinf": np.isinf, "isfinite": np.isfinite,
}


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(np.result_type(a, b), np.integer):
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) ^ (b < 0), -q, q)
    return np.true_divide(a, b)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _int_divide,
    "floor_divide": np.floor_divide, "mod": np.fmod, "floor_mod": np.mod, "power": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal,
    "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "left_shift": np.left_shift,
    "right_shift": np.right_shift,
}


def _unary(fn: Callable[[np.ndarray], Any]) -> Evaluator:
    return lambda call, x: fn(np.asarray(x))


def _binary(fn: Callable[[Any, Any], Any]) -> Evaluator:
    return lambda call, a, b: fn(np.asarray(a), np.asarray(b))


for _name, _fn in _UNARY.items():
    register_numpy_evaluator(f"relax.{_name}")(_unary(_fn))
for _name, _fn in _BINARY.items():
    register_numpy_evaluator(f"relax.{_name}")(_binary(_fn))


@register_numpy_evaluator("relax.astype")
def _astype(call: Call, x: np.ndarray) -> np.ndarray:
    from tvm.tir.transform.low_precision_codec import cast_array

    return cast_array(x, call.attrs.dtype)  # the conversions compiled code does


@register_numpy_evaluator("relax.clip")
def _clip(call: Call, x: np.ndarray) -> np.ndarray:
    lo, hi = call.attrs.min, call.attrs.max
    out = np.asarray(x)
    if lo is not None:
        out = np.maximum(out, lo).astype(out.dtype)
    if hi is not None:
        out = np.minimum(out, hi).astype(out.dtype)
    return out


@register_numpy_evaluator("relax.where")
def _where(call: Call, cond: Any, a: Any, b: Any) -> np.ndarray:
    return np.where(np.asarray(cond), a, b)


# -- activations ------------------------------------------------------------------------------
@register_numpy_evaluator("relax.nn.relu")
def _relu(call: Call, x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros((), x.dtype))


@register_numpy_evaluator("relax.nn.silu")
def _silu(call: Call, x: np.ndarray) -> np.ndarray:
    return x / (1 + np.exp(-x))


@register_numpy_evaluator("relax.nn.gelu")
def _gelu(call: Call, x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


@register_numpy_evaluator("relax.nn.gelu_tanh")
def _gelu_tanh(call: Call, x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


@register_numpy_evaluator("relax.nn.softmax")
def _softmax(call: Call, x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=call.attrs.axis, keepdims=True))
    return e / np.sum(e, axis=call.attrs.axis, keepdims=True)


@register_numpy_evaluator("relax.nn.log_softmax")
def _log_softmax(call: Call, x: np.ndarray) -> np.ndarray:
    shifted = x - np.max(x, axis=call.attrs.axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=call.attrs.axis, keepdims=True))


# -- linear algebra, shapes, data movement ----------------------------------------------------
@register_numpy_evaluator("relax.matmul")
def _matmul(call: Call, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dtype = to_numpy_dtype(call.struct_info.dtype)
    return np.matmul(a.astype(dtype), b.astype(dtype))


@register_numpy_evaluator("relax.reshape", "relax.squeeze", "relax.expand_dims", "relax.flatten")
def _reshape(call: Call, x: np.ndarray, *rest: Any) -> np.ndarray:
    return np.reshape(x, _out_shape(call))


@register_numpy_evaluator("relax.broadcast_to")
def _broadcast_to(call: Call, x: np.ndarray, shape: Any) -> np.ndarray:
    return np.broadcast_to(x, _out_shape(call))


@register_numpy_evaluator("relax.permute_dims")
def _permute_dims(call: Call, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, call.attrs.axes)


@register_numpy_evaluator("relax.concat")
def _concat(call: Call, tensors: tuple) -> np.ndarray:
    axis = call.attrs.axis
    if axis is None:
        return np.concatenate([np.ravel(t) for t in tensors])
    return np.concatenate(tensors, axis=axis)


@register_numpy_evaluator("relax.split")
def _split(call: Call, x: np.ndarray) -> tuple:
    return tuple(np.split(x, _split_points(call.attrs.indices_or_sections), axis=call.attrs.axis))


def _split_points(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [int(getattr(v, "value", v)) for v in value]
    return int(getattr(value, "value", value))


@register_numpy_evaluator("relax.strided_slice")
def _strided_slice(call: Call, x: np.ndarray, *rest: Any) -> np.ndarray:
    a = call.attrs
    index = [slice(None)] * x.ndim
    strides = a.strides or [1] * len(a.axes)
    for axis, begin, end, stride in zip(a.axes, a.begin, a.end, strides):
        begin, end, stride = (int(getattr(v, "value", v)) for v in (begin, end, stride))
        index[int(axis)] = slice(begin, end, stride)
    return x[tuple(index)]


@register_numpy_evaluator("relax.take")
def _take(call: Call, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    axis, mode = call.attrs.axis, call.attrs.mode
    idx = np.asarray(indices).astype(np.int64)
    if axis is None:
        x, axis = np.ravel(x), 0
    if mode == "fast":  # negative indices count from the end
        idx = np.where(idx < 0, idx + x.shape[axis], idx)
    return np.take(x, idx, axis=axis, mode="wrap" if mode == "wrap" else "clip")


# -- reductions -------------------------------------------------------------------------------
def _reduce(fn: Callable[..., Any]) -> Evaluator:
    def evaluate(call: Call, x: np.ndarray) -> np.ndarray:
        axis = call.attrs.axis
        axis = None if axis is None else tuple(int(a) for a in axis)
        return fn(x, axis=axis, keepdims=bool(call.attrs.keepdims))

    return evaluate


for _name, _fn in {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min,
                   "prod": np.prod, "variance": np.var, "std": np.std}.items():
    register_numpy_evaluator(f"relax.{_name}")(_reduce(_fn))


# -- convolution ------------------------------------------------------------------------------
def _to_layout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    return np.transpose(x, [src.index(c) for c in dst])


@register_numpy_evaluator("relax.nn.conv2d")
def _conv2d(call: Call, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    a = call.attrs
    x = _to_layout(data, a.data_layout, "NCHW")
    w = _to_layout(weight, a.kernel_layout, "OIHW")
    out = conv2d_nchw(x, w, a.strides, a.padding, a.dilation, a.groups,
                      to_numpy_dtype(call.struct_info.dtype))
    return _to_layout(out, "NCHW", a.out_layout)


def conv2d_nchw(x: np.ndarray, w: np.ndarray, strides: Any, padding: Any, dilation: Any,
                groups: int, dtype: Any) -> np.ndarray:
    """Reference 2-d convolution (NCHW data, OIHW weight) computed in ``dtype``."""
    sh, sw = (list(strides) * 2)[:2]
    dh, dw = (list(dilation) * 2)[:2]
    pad = list(padding)
    pad = pad * 4 if len(pad) == 1 else pad + pad if len(pad) == 2 else pad
    top, left, bottom, right = (int(p) for p in pad)
    x = np.pad(x.astype(dtype), ((0, 0), (0, 0), (top, bottom), (left, right)))
    w = w.astype(dtype)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                           j * dw: j * dw + sw * (ow - 1) + 1: sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out


# -- normalisation and pooling ----------------------------------------------------------------
@register_numpy_evaluator("relax.nn.batch_norm")
def _batch_norm(call: Call, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                mean: np.ndarray, var: np.ndarray) -> tuple:
    a = call.attrs
    if a.training:
        raise NumpyEvalError("relax.nn.batch_norm: only inference mode is evaluated")
    shape = [1] * x.ndim
    shape[a.axis % x.ndim] = -1
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + a.epsilon)
    if a.scale:
        out = out * gamma.reshape(shape)
    if a.center:
        out = out + beta.reshape(shape)
    return out, mean, var


def _pool2d(kind: str) -> Evaluator:
    def evaluate(call: Call, data: np.ndarray) -> np.ndarray:
        a = call.attrs
        if a.ceil_mode:
            raise NumpyEvalError(f"{call.op.name}: ceil_mode is not evaluated with numpy")
        x = _to_layout(data, a.layout, "NCHW").astype(np.float64)
        top, left, bottom, right = (int(p) for p in a.padding)
        fill = -np.inf if kind == "max" else 0.0
        xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
        ones = np.pad(np.ones(x.shape[2:]), ((top, bottom), (left, right)))
        (kh, kw), (sh, sw), (dh, dw) = a.pool_size, a.strides, a.dilation
        oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
        ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
        windows = [xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                      j * dw: j * dw + sw * (ow - 1) + 1: sw] for i in range(kh) for j in range(kw)]
        if kind == "max":
            out = np.max(windows, axis=0)
        else:
            total = np.sum(windows, axis=0)
            if a.count_include_pad:
                out = total / (kh * kw)
            else:
                counts = sum(ones[i * dh: i * dh + sh * (oh - 1) + 1: sh,
                                  j * dw: j * dw + sw * (ow - 1) + 1: sw]
                             for i in range(kh) for j in range(kw))
                out = total / counts
        return _to_layout(out, "NCHW", a.out_layout)

    return evaluate


register_numpy_evaluator("relax.nn.max_pool2d")(_pool2d("max"))
register_numpy_evaluator("relax.nn.avg_pool2d")(_pool2d("avg"))


# -- whole functions (tests, debugging) -------------------------------------------------------
def run_function_with_numpy(func: Any, *inputs: Any) -> Any:
    """Evaluate a Relax function of operator calls on numpy inputs (reference semantics).

    Handles operator calls with a numpy evaluator, tuples, tuple lookups, constants, shapes
    and scalars, and ``match_cast`` (taken as the value); not calls of other functions.
    """
    from ..expr import SeqExpr, TupleGetItem, Var

    if len(inputs) != len(func.params):
        raise TypeError(f"the function takes {len(func.params)} input(s), got {len(inputs)}")
    env: dict[int, Any] = {id(p): np.asarray(v) for p, v in zip(func.params, inputs)}

    def ev(expr: Any) -> Any:
        if isinstance(expr, Var):
            return env[id(expr)]
        if isinstance(expr, Tuple):
            return tuple(ev(f) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            return ev(expr.tuple_value)[expr.index]
        if isinstance(expr, SeqExpr):
            for block in expr.blocks:
                for b in block.bindings:
                    env[id(b.var)] = ev(b.value)
            return ev(expr.body)
        if isinstance(expr, Call):
            value = evaluate_with_numpy(expr, [ev(a) for a in expr.args])
            if value is None:
                raise NumpyEvalError(f"no numpy evaluator for {getattr(expr.op, 'name', expr.op)}")
            return value
        return constant_value(expr)

    return ev(func.body)
