"""Converters for ``torch.special``'s Bessel and Airy functions and orthogonal polynomials.

Each becomes one Relax op of :mod:`tvm.relax.op.special_bessel` computing in the node's output
dtype (torch's: the default float for integer inputs).  ``modified_bessel_i0/i1`` are
``i0``/``i1`` (ATen evaluates the same Chebyshev series for both).  The polynomials take
the degree ``n`` as a tensor or a scalar (overloads ``x_scalar`` / ``n_scalar``).
"""

from __future__ import annotations

from typing import Any

from ... import op as _op
from .common import NodeContext, converter
from .ops_math import as_dtype, is_float

__all__: list[str] = []

# ATen name (after ``aten.``) -> Relax op name
_UNARY = {
    "i0": "i0", "special_i0": "i0", "special_i0e": "i0e", "special_i1": "i1",
    "special_i1e": "i1e", "special_modified_bessel_i0": "i0",
    "special_modified_bessel_i1": "i1",
    **{f"special_{n}": n for n in (
        "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
        "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
        "spherical_bessel_j0", "airy_ai")},
}

_POLYNOMIALS = [f"{s}chebyshev_polynomial_{k}" for s in ("", "shifted_") for k in "tuvw"] + [
    "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p"]


def _float_out(ctx: NodeContext) -> str:
    if ctx.kwargs.get("out") is not None:
        raise ctx.unsupported("the out= argument is not supported")
    dtype = ctx.out_dtype()
    if dtype is None or not is_float(dtype):
        raise ctx.unsupported(f"a result of dtype {dtype} (only floating-point results)")
    return dtype


def _unary(relax_name: str) -> Any:
    def convert(ctx: NodeContext) -> Any:
        dtype = _float_out(ctx)
        return getattr(_op, relax_name)(as_dtype(ctx, ctx.arg(0, "self"), dtype))

    convert.__name__ = f"_{relax_name}"
    convert.__doc__ = f"``{relax_name}`` of the input in the output dtype."
    return convert


def _polynomial(name: str) -> Any:
    def convert(ctx: NodeContext) -> Any:
        dtype = _float_out(ctx)
        x = as_dtype(ctx, ctx.arg(0, "x"), dtype)
        n = as_dtype(ctx, ctx.arg(1, "n"), dtype)
        return getattr(_op, name)(x, n)

    convert.__name__ = f"_{name}"
    convert.__doc__ = f"``{name}(x, n)``, both in the output dtype."
    return convert


for _aten, _relax in _UNARY.items():
    converter(f"aten.{_aten}.default")(_unary(_relax))
for _name in _POLYNOMIALS:
    converter(*(f"aten.special_{_name}.{o}" for o in ("default", "x_scalar", "n_scalar")))(
        _polynomial(_name))
