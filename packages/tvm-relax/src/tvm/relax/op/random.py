"""Random tensors: ``relax.random.uniform``, ``normal``, ``randint``, and :func:`fresh_seed`.

Each op is a pure function of its ``seed`` (an int64 scalar) and ``shape``: element ``i`` is
computed from ``(seed, i)`` by the counter-based Philox-4x32-10 generator
(:mod:`tvm.relax.topi.random`), so the kernels are elementwise integer TIR that lower and
parallelise on every target.  Fresh numbers on every run of a compiled function come from the
seed: :func:`fresh_seed` emits a call of the run-time builtin ``vm.builtin.random_seed``, which
returns a new seed each time it is called (:func:`tvm.runtime.vm.manual_seed` makes the
sequence reproducible).  Frontends build the other distributions (exponential, Bernoulli,
dropout masks ...) from these with elementwise ops.
"""

from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np

from tvm.ffi import register_object
from tvm.ffi.dtype import to_numpy_dtype
from tvm.tir.expr import Var as TirVar

from ..expr import Call, Expr, PrimValue, ShapeExpr
from ..struct_info import (
    PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo, canonical_dtype,
)
from ._lower import te_call
from ._numpy import out_shape
from .base import Attrs, arg_sinfo, make_call, op_error, register_op

__all__ = ["uniform", "normal", "randint", "fresh_seed", "RandomAttrs", "SEED_BUILTIN"]

#: the VM builtin returning a new int64 seed on every call (tvm.runtime.vm.random)
SEED_BUILTIN = "vm.builtin.random_seed"

_FLOATS = ("float16", "bfloat16", "float32", "float64")


@register_object("relax.attrs.RandomAttrs")
class RandomAttrs(Attrs):
    """``dtype`` of the samples and the distribution's two parameters: ``(low, high)`` for
    uniform and randint, ``(mean, std)`` for normal."""

    dtype: str = "float32"
    a: float = 0.0
    b: float = 1.0


def _seed_arg(seed: Any) -> Expr:
    if isinstance(seed, Expr):
        return seed
    if isinstance(seed, (int, np.integer)):
        value = int(seed) & 0xFFFFFFFFFFFFFFFF
        return PrimValue(value - (1 << 64) if value >= 1 << 63 else value)
    raise TypeError(f"seed must be an int64 scalar expression or an int, got {seed!r}")


def _shape_arg(shape: Union[Expr, Sequence[Any]]) -> Expr:
    return ShapeExpr(list(shape)) if isinstance(shape, (list, tuple)) else shape


def _infer(call: Call, ctx: Any) -> StructInfo:
    seed = arg_sinfo(call, 0)
    if not isinstance(seed, PrimStructInfo) or seed.dtype != "int64":
        raise op_error(call, f"argument 'seed' must be an int64 scalar, got {seed}")
    shape = arg_sinfo(call, 1)
    if not isinstance(shape, ShapeStructInfo):
        raise op_error(call, f"argument 'shape' must be a shape, got {type(shape).__name__}")
    dtype = call.attrs.dtype
    if call.op.name != "relax.random.randint" and dtype not in _FLOATS:
        raise op_error(call, f"dtype must be one of {', '.join(_FLOATS)}, got {dtype}")
    values = shape.values
    return TensorStructInfo(ShapeExpr(values) if values is not None else None, dtype,
                            shape.ndim)


def _legalizer(name: str) -> Any:
    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi import random as topi_random

        sinfo = call.struct_info
        attrs = call.attrs
        a, b = (attrs.a, attrs.b) if name != "randint" else (int(attrs.a), int(attrs.b))
        return te_call(bb, call, getattr(topi_random, name), call.args[0],
                       sinfo.shape_values, sinfo.dtype, a, b)

    legalize.__name__ = f"legalize_{name}"
    return legalize


def _numpy_words(call: Call, seed: Any) -> tuple[tuple, np.ndarray]:
    from ..topi.random import philox4x32_numpy

    shape = out_shape(call)
    index = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    return shape, philox4x32_numpy(index, int(seed))


def _numpy_unit(hi: np.ndarray, lo: np.ndarray, dtype: str) -> np.ndarray:
    from ..topi.random import FLOAT_BITS

    bits = FLOAT_BITS[dtype]
    comp = np.float64 if dtype == "float64" else np.float32
    if bits > 32:
        word = (hi << np.uint64(bits - 32)) | (lo >> np.uint64(64 - bits))
    else:
        word = hi >> np.uint64(32 - bits)
    return word.astype(comp) * comp(2.0 ** -bits)


def _np_dtype(dtype: str) -> Any:
    return to_numpy_dtype(dtype)


def _eval_uniform(call: Call, seed: Any, shape: Any) -> np.ndarray:
    _, w = _numpy_words(call, seed)
    dtype = call.attrs.dtype
    u = _numpy_unit(w[..., 0], w[..., 1], dtype)
    comp = u.dtype.type
    return (comp(call.attrs.a) + comp(call.attrs.b - call.attrs.a) * u).astype(_np_dtype(dtype))


def _eval_normal(call: Call, seed: Any, shape: Any) -> np.ndarray:
    _, w = _numpy_words(call, seed)
    dtype = call.attrs.dtype
    wide = "float64" if dtype == "float64" else "float32"
    u1 = 1 - _numpy_unit(w[..., 0], w[..., 1], wide)
    u2 = _numpy_unit(w[..., 2], w[..., 3], wide)
    comp = u1.dtype.type
    z = np.sqrt(comp(-2.0) * np.log(u1)) * np.cos(comp(2 * np.pi) * u2)
    return (comp(call.attrs.a) + comp(call.attrs.b) * z).astype(_np_dtype(dtype))


def _eval_randint(call: Call, seed: Any, shape: Any) -> np.ndarray:
    _, w = _numpy_words(call, seed)
    low, high = int(call.attrs.a), int(call.attrs.b)
    bits = (w[..., 0] << np.uint64(32)) | w[..., 1]
    value = (bits % np.uint64(high - low)).astype(np.int64) + np.int64(low)
    return value.astype(_np_dtype(call.attrs.dtype))


def _register(name: str, doc: str, evaluate: Any) -> Any:
    op_name = f"relax.random.{name}"

    def builder(seed: Any, shape: Union[Expr, Sequence[Any]], dtype: str = "float32",
                a: float = 0.0, b: float = 1.0) -> Call:
        dtype = canonical_dtype(dtype, f"{op_name}: dtype")
        if name == "randint":
            if int(b) <= int(a):
                raise ValueError(f"{op_name}: empty range [{a}, {b})")
            a, b = int(a), int(b)
        return make_call(op_name, [_seed_arg(seed), _shape_arg(shape)],
                         RandomAttrs(dtype=dtype, a=a, b=b))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    return register_op(op_name, inputs=("seed", "shape"), attrs=RandomAttrs, infer=_infer,
                       legalize=_legalizer(name), evaluate=evaluate,
                       op_pattern="injective")(builder)


uniform = _register(
    "uniform",
    "Samples of U[a, b) (``a``=low, ``b``=high) of ``shape`` and float ``dtype`` from "
    "``seed``.", _eval_uniform)
normal = _register(
    "normal",
    "Samples of N(a, b**2) (``a``=mean, ``b``=std) of ``shape`` and float ``dtype`` from "
    "``seed`` (Box–Muller).", _eval_normal)
randint = _register(
    "randint",
    "Integers uniform on [a, b) of ``shape``, cast to ``dtype`` (any numeric dtype), from "
    "``seed``.", _eval_randint)


def fresh_seed(bb: Any, stream: int = 0) -> Expr:
    """Emit, in ``bb``'s current block, a new run-time seed: the int64 scalar (with a symbolic
    value the random ops' kernels take as a parameter) that ``vm.builtin.random_seed``
    returns, different on every call.  ``stream`` tells apart the call sites of one function
    (so that no pass merges two of them)."""
    from .call import call_pure_packed

    raw = bb.emit(call_pure_packed(SEED_BUILTIN, PrimValue(int(stream)),
                                   sinfo_args=PrimStructInfo("int64")), "seed")
    return bb.match_cast(raw, PrimStructInfo(value=TirVar(f"seed{int(stream)}", "int64")),
                         "seed")
