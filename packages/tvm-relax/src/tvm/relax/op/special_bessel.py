"""Special functions: Bessel and Airy functions, classical orthogonal polynomials.

Every entry of :data:`SPECIAL_UNARY_OPS` declares ``relax.<name>(x)`` and every entry of
:data:`POLYNOMIAL_OPS` ``relax.<name>(x, n)`` (``n`` the degree, truncated toward zero like
torch's ``int64`` cast; negative, NaN or infinite degrees give 0; ``x`` and ``n`` broadcast
like numpy and share one float dtype).  Semantics follow ``torch.special``; the kernels and
the numpy semantics are the same algorithms (:mod:`tvm.relax.topi.special_bessel`).
"""

from __future__ import annotations

from typing import Any

from ..expr import Call, Expr
from ..struct_info import TensorStructInfo
from ._elementwise import declare_binary, declare_unary
from .base import OpSpec, op_error

SPECIAL_UNARY_OPS: dict[str, str] = {
    "i0": "modified Bessel function of the first kind, order 0",
    "i0e": "exponentially scaled I0: exp(-|x|) I0(x)",
    "i1": "modified Bessel function of the first kind, order 1",
    "i1e": "exponentially scaled I1: exp(-|x|) I1(x)",
    "bessel_j0": "Bessel function of the first kind, order 0",
    "bessel_j1": "Bessel function of the first kind, order 1",
    "bessel_y0": "Bessel function of the second kind, order 0 (NaN for x < 0)",
    "bessel_y1": "Bessel function of the second kind, order 1 (NaN for x < 0)",
    "modified_bessel_k0": "modified Bessel function of the second kind, order 0",
    "modified_bessel_k1": "modified Bessel function of the second kind, order 1",
    "scaled_modified_bessel_k0": "exponentially scaled K0: exp(x) K0(x)",
    "scaled_modified_bessel_k1": "exponentially scaled K1: exp(x) K1(x)",
    "spherical_bessel_j0": "spherical Bessel function of the first kind, order 0: sin(x) / x",
    "airy_ai": "Airy function Ai",
}

POLYNOMIAL_OPS: dict[str, str] = {
    **{f"chebyshev_polynomial_{k}": f"Chebyshev polynomial of the {i} kind"
       for k, i in zip("tuvw", ("first", "second", "third", "fourth"))},
    **{f"shifted_chebyshev_polynomial_{k}": f"shifted Chebyshev polynomial of the {i} kind"
       " (of 2x - 1)" for k, i in zip("tuvw", ("first", "second", "third", "fourth"))},
    "hermite_polynomial_h": "physicists' Hermite polynomial (NaN above degree 128 in float32, "
                            "512 in float64)",
    "hermite_polynomial_he": "probabilists' Hermite polynomial (same degree limits)",
    "laguerre_polynomial_l": "Laguerre polynomial",
    "legendre_polynomial_p": "Legendre polynomial",
}


def _legalize(name: str) -> Any:
    def legalize(bb: Any, call: Call) -> Expr:
        from ..topi.special_bessel import special_func
        from ._lower import prim_func_call

        shapes = []
        for a in call.args:
            sinfo = a.struct_info_
            if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None:
                raise op_error(call, "needs tensor arguments of known rank")
            shapes.append(sinfo.shape_values)
        out = call.struct_info
        func = special_func(name, shapes, out.shape_values, out.dtype)
        return prim_func_call(bb, call, func, list(call.args), out)

    legalize.__name__ = f"legalize_{name}"
    return legalize


def _evaluate(name: str) -> Any:
    def evaluate(call: Call, *xs: Any) -> Any:
        from ..topi.special_bessel import numpy_special

        return numpy_special(name, *xs)

    return evaluate


def _declare_unary(name: str, doc: str) -> OpSpec:
    spec = declare_unary(name, f"Elementwise {doc}.", "float", op_pattern="opaque")
    spec.legalize(_legalize(name))
    spec.evaluate(_evaluate(name))
    return spec


def _declare_polynomial(name: str, doc: str) -> OpSpec:
    spec = declare_binary(
        name, f"The {doc} of degree ``n`` at ``x``, elementwise with broadcasting.", "",
        "float", op_pattern="opaque", inputs=("x", "n"))
    spec.legalize(_legalize(name))
    spec.evaluate(_evaluate(name))
    return spec


for _name, _doc in SPECIAL_UNARY_OPS.items():
    globals()[_name] = _declare_unary(_name, _doc)
for _name, _doc in POLYNOMIAL_OPS.items():
    globals()[_name] = _declare_polynomial(_name, _doc)

__all__ = [*SPECIAL_UNARY_OPS, *POLYNOMIAL_OPS]
