"""Gamma-family special functions: ``relax.lgamma``, ``digamma``, ``polygamma`` (attribute
``n``), ``erfcx``, ``ndtri`` (unary) and ``zeta``, ``igamma``, ``igammac``, ``nextafter``
(broadcasting binary).  Float inputs only; the output has the input's dtype.

The algorithms live in :mod:`tvm.relax.topi.special`, written once for both the TIR kernel
and the numpy semantics; float16/bfloat16 compute in float32.  ``nextafter`` lowers to the
``tir.nextafter`` intrinsic.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as _np
from tvm.ffi import register_object

from ..expr import Call, Expr, PrimValue
from ..struct_info import StructInfo
from ._elementwise import declare_binary, declare_unary, infer_unary
from ._lower import scalar_values, te_call
from .base import Attrs, OpSpec, make_call, op_error, register_op

SPECIAL_UNARY: dict[str, str] = {
    "lgamma": "log of the absolute value of the gamma function",
    "digamma": "logarithmic derivative of the gamma function",
    "erfcx": "scaled complementary error function exp(x^2) erfc(x)",
    "ndtri": "inverse of the standard normal CDF",
}
SPECIAL_BINARY: dict[str, str] = {
    "zeta": "Hurwitz zeta function zeta(x1, x2) = sum_k (x2 + k)^-x1",
    "igamma": "regularized lower incomplete gamma P(x1, x2)",
    "igammac": "regularized upper incomplete gamma Q(x1, x2)",
    "nextafter": "next float after x1 toward x2",
}

__all__ = [*SPECIAL_UNARY, *SPECIAL_BINARY, "polygamma", "PolygammaAttrs"]

_COMPUTE_DTYPES = ("float32", "float64")


def _compute_dtype(dtype: str) -> str:
    return dtype if dtype in _COMPUTE_DTYPES else "float32"


def _tir_fn(name: str, n: int = 0) -> Callable[..., Any]:
    """``PrimExpr... -> PrimExpr`` of special function ``name`` in the operands' dtype."""
    from tvm import tir

    from ..topi import special

    def fn(*xs: Any) -> Any:
        dtype = xs[0].dtype
        if name == "nextafter":
            return tir.op.nextafter(*xs)
        cdt = _compute_dtype(dtype)
        args = [x if x.dtype == cdt else tir.Cast(cdt, x) for x in xs]
        m = special.TirMath(cdt)
        args = [m.bind(x) for x in args]
        out = m.finish(special.polygamma(m, n, *args) if name == "polygamma" else getattr(
            special, name)(m, *args))
        return out if cdt == dtype else tir.Cast(dtype, out)

    return fn


def _np_fn(name: str, n: int = 0) -> Callable[..., Any]:
    from ..topi import special

    def fn(*xs: Any) -> Any:
        xs = [_np.asarray(x) for x in xs]
        dtype = _np.result_type(*xs)
        if name == "nextafter":
            return _np.nextafter(*xs).astype(dtype)
        cdt = _np.dtype(_compute_dtype(str(dtype)))
        with _np.errstate(all="ignore"):
            m = special.NumpyMath(cdt)
            args = [x.astype(cdt) for x in xs]
            out = special.polygamma(m, n, *args) if name == "polygamma" else getattr(
                special, name)(m, *args)
        return _np.asarray(out).astype(dtype)

    return fn


def _legalizer(name: str, n_of: Callable[[Call], int] = lambda call: 0) -> Callable[..., Any]:
    def legalize(bb: Any, call: Call) -> Expr:
        from tvm import te

        from ..topi.elemwise import _operand, _out_shape

        fn = _tir_fn(name, n_of(call))
        values = scalar_values(call)
        if values is not None:
            return PrimValue(fn(*values))

        def compute(*tensors: Any) -> Any:
            ops = [_operand(t) for t in tensors]
            shape = _out_shape(*(s for s, _ in ops))
            return te.compute(shape, lambda *i: fn(*(f(i) for _, f in ops)), name=f"T_{name}")

        return te_call(bb, call, compute, *call.args)

    legalize.__name__ = f"legalize_{name}"
    return legalize


def _declare_unary(name: str, doc: str) -> OpSpec:
    spec = declare_unary(name, f"Elementwise {doc}.", "float")
    spec.legalize(_legalizer(name))
    fn = _np_fn(name)
    spec.evaluate(lambda call, x: fn(x))
    return spec


def _declare_binary(name: str, doc: str) -> OpSpec:
    spec = declare_binary(name, f"{doc}, elementwise with numpy broadcasting.", "", "float")
    spec.legalize(_legalizer(name))
    fn = _np_fn(name)
    spec.evaluate(lambda call, x1, x2: fn(x1, x2))
    return spec


for _name, _doc in SPECIAL_UNARY.items():
    globals()[_name] = _declare_unary(_name, _doc)
for _name, _doc in SPECIAL_BINARY.items():
    globals()[_name] = _declare_binary(_name, _doc)


@register_object("relax.attrs.PolygammaAttrs")
class PolygammaAttrs(Attrs):
    n: int = 0


@register_op("relax.polygamma", inputs=("x",), attrs=PolygammaAttrs, op_pattern="elemwise")
def polygamma(x: Expr, n: int) -> Call:
    """The ``n``-th derivative of digamma (``n >= 0``) elementwise."""
    return make_call("relax.polygamma", [x], PolygammaAttrs(n=int(n)))


@polygamma.infer
def _infer_polygamma(call: Call, ctx: Any) -> StructInfo:
    if int(call.attrs.n) < 0:
        raise op_error(call, f"needs n >= 0, got n={call.attrs.n}")
    return infer_unary(call, ctx, "float")


polygamma.legalize(_legalizer("polygamma", lambda call: int(call.attrs.n)))


@polygamma.evaluate
def _eval_polygamma(call: Call, x: Any) -> Any:
    return _np_fn("polygamma", int(call.attrs.n))(x)
