"""Converters for complex tensors: ``x.to(complex64)``, ``complex``, ``polar``,
``view_as_complex``/``view_as_real``, ``real``/``imag``/``conj``/``angle``/``abs``/``add``/
``sub``/``mul`` and the complex cases of layout ops (``slice``, ``constant_pad_nd``,
``clone`` directly; ``view``/``transpose``/``cat``/``index``/``split`` ... by running the
original converter on the real and the imaginary part, see :func:`_movement`).

Design.  Relax StructInfo, the runtime and the VM carry ``complex64``/``complex128`` tensors,
but TIR and its code generators compute on real dtypes only.  Rather than teach every TIR
pass and codegen complex arithmetic, a complex value of shape ``S`` is *computed on* as its
**pair form**: a real tensor (float32 for complex64, float64 for complex128) of shape
``S + (2,)`` holding (real, imaginary) in the last dimension, which is exactly how complex
numbers lie in memory.  Every node that torch records as complex is bound, as the importer
expects, to a Relax tensor of the complex dtype; the converters here take the pair form of
their operands with ``relax.view_as_real`` and wrap their pair-form results with
``relax.view_as_complex``.  Both operators are zero-copy reinterpretations (they lower to
the VM builtins ``vm.builtin.view_as_real``/``view_as_complex``, views of the same
storage), and :func:`pair` reuses the pair a complex value was made from, so a chain of
complex ops inside a function never converts back and forth; only the function's complex
inputs and outputs meet the complex dtype, and the compiled function takes and returns
complex tensors like eager torch.

A converter registered elsewhere for an op that also takes complex operands (``_to_copy``,
``slice``, ``constant_pad_nd``, ``clone``, the movement ops) is extended with :func:`complex_case`: the
complex case is handled here and every other call goes to the original converter.  Complex
operands reaching any other converter are rejected at import by the Relax op's StructInfo
inference (``relax.exp: requires a floating-point input, got dtype complex64``); elementwise
complex support covers ``add``/``sub``/``mul``/``abs``/``angle``/``conj``/``real``/``imag``
only.  ``complex32`` (``chalf``) is not supported (neither numpy nor the runtime has it).

The FFT converters (``aten._fft_r2c``/``_fft_c2r``/``_fft_c2c``) are in :mod:`.ops_fft`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ... import op as _op
from ...op.complex import COMPLEX_PARTS
from . import ops_math, ops_tensor  # noqa: F401 - the converters complex_case extends first
from .common import CONVERTERS, Converter, NodeContext, converter, packet_name
from .ops_tensor import _check_layout, _pad, int_arg, slice_axis

__all__ = ["pair", "from_pair", "complex_case", "is_complex_meta", "real_dtype",
           "complex_dtype"]

_COMPLEX_OF = {v: k for k, v in COMPLEX_PARTS.items()}


# -- the pair form -----------------------------------------------------------------------------
def real_dtype(dtype: str) -> str:
    """The dtype of a complex dtype's parts (a real dtype unchanged)."""
    return COMPLEX_PARTS.get(dtype, dtype)


def complex_dtype(ctx: NodeContext, real: str) -> str:
    """The complex dtype whose parts are ``real`` (float32 -> complex64)."""
    out = _COMPLEX_OF.get(real)
    if out is None:
        raise ctx.unsupported(f"complex numbers with {real} parts (only complex64 and "
                              "complex128 are supported)")
    return out


def is_complex_meta(meta: Any) -> bool:
    """Whether a fake value torch recorded is a complex tensor."""
    dtype = getattr(meta, "dtype", None)
    return bool(getattr(dtype, "is_complex", False))


def _pairs(ctx: NodeContext) -> dict[int, tuple[Any, Any]]:
    table = getattr(ctx.importer, "_complex_pairs", None)
    if table is None:
        table = {}
        ctx.importer._complex_pairs = table
    return table


def pair(ctx: NodeContext, x: Any, part: str = "") -> Any:
    """The pair form (real tensor, last dimension (re, im)) of a complex tensor, or of a real
    tensor or Python number taken as complex with a zero imaginary part (in dtype ``part``,
    default: the tensor's own dtype)."""
    if not hasattr(x, "struct_info"):
        if isinstance(x, complex):
            return ctx.const([x.real, x.imag], part or "float32")
        x = ctx.importer.to_expr(x, part or "float32")
    dtype = ctx.dtype(x)
    if dtype in COMPLEX_PARTS:
        known = _pairs(ctx).get(id(x))
        if known is not None and known[0] is x:
            p = known[1]
        else:
            p = ctx.emit(_op.view_as_real(x))
        return ctx.astype(p, part) if part else p
    if part:
        x = ctx.astype(x, part)
    re = ctx.emit(_op.expand_dims(x, [-1]))
    return ctx.emit(_op.concat([re, _op.zeros_like(re)], -1))


def from_pair(ctx: NodeContext, p: Any) -> Any:
    """A pair-form tensor as the complex tensor it holds (no copy)."""
    p = ctx.bb.normalize(p)
    if not hasattr(p, "name_hint"):
        p = ctx.emit(p)
    value = ctx.emit(_op.view_as_complex(p))
    _pairs(ctx)[id(value)] = (value, p)
    return value


def make_pair(ctx: NodeContext, re: Any, im: Any) -> Any:
    """The pair form of ``re + i * im``: two real tensors broadcast to the node's output
    shape (which may be symbolic)."""
    shape = ctx.out_shape()
    if shape is None:
        raise ctx.error("torch recorded no output shape")
    re = ctx.emit(_op.broadcast_to(re, shape))
    im = ctx.emit(_op.broadcast_to(im, shape))
    re = ctx.emit(_op.expand_dims(re, [-1]))
    im = ctx.emit(_op.expand_dims(im, [-1]))
    return ctx.emit(_op.concat([re, im], -1))


def part_of(ctx: NodeContext, p: Any, index: int) -> Any:
    """The real (0) or imaginary (1) part of a pair-form tensor."""
    ndim = ctx.ndim(p)
    return ctx.emit(_op.squeeze(_op.strided_slice(p, [ndim - 1], [index], [index + 1]),
                                [ndim - 1]))


def _conj_pair(ctx: NodeContext, p: Any) -> Any:
    sign = ctx.const([1.0, -1.0], ctx.dtype(p))
    return ctx.emit(_op.multiply(p, sign))


# -- extending converters registered elsewhere -------------------------------------------------
def complex_case(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Extend the converters of ``names`` with ``fn(ctx, fallback)``: ``fn`` handles complex
    operands or results and calls ``fallback(ctx)`` (the original converter) otherwise."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            previous = CONVERTERS.get(name) or CONVERTERS.get(packet_name(name))
            fallback = previous.impl if previous is not None else None

            def impl(ctx: NodeContext, _fallback: Any = fallback, _name: str = name) -> Any:
                return fn(ctx, _fallback)

            CONVERTERS[name] = Converter(name, impl)
        return fn

    return wrap


def _involves_complex(ctx: NodeContext) -> bool:
    if is_complex_meta(ctx.out_meta()):
        return True
    return any(is_complex_meta(ctx.arg_meta(i)) for i in range(len(ctx.node.args)))


def _needs(fallback: Any, ctx: NodeContext) -> Any:
    if fallback is None:
        raise ctx.unsupported("real operands (only the complex case is converted)")
    return fallback(ctx)


# -- casts and layout ops ----------------------------------------------------------------------
@complex_case("aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout",
              "aten.type_as.default", "aten._to_dim_order_copy.default")
def _to_copy(ctx: NodeContext, fallback: Any) -> Any:
    if not _involves_complex(ctx):
        return _needs(fallback, ctx)
    out = ctx.out_meta()
    if getattr(out, "dtype", None) is not None and str(out.dtype) == "torch.complex32":
        raise ctx.unsupported("dtype complex32 (chalf) is not supported")
    _check_layout(ctx)
    x = ctx.arg(0)
    want = ctx.out_dtype()
    if want in COMPLEX_PARTS:
        return from_pair(ctx, pair(ctx, x, COMPLEX_PARTS[want]))
    # complex -> real keeps the real part (torch warns that the imaginary part is dropped)
    return ctx.astype(part_of(ctx, pair(ctx, x), 0), want)


@complex_case("aten.clone.default", "aten.contiguous.default", "aten.alias.default",
              "aten.detach.default", "aten.lift_fresh_copy.default")
def _identity(ctx: NodeContext, fallback: Any) -> Any:
    if not _involves_complex(ctx):
        return _needs(fallback, ctx)
    return ctx.arg(0)  # memory_format only changes strides, never values


@complex_case("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(ctx: NodeContext, fallback: Any) -> Any:
    if not _involves_complex(ctx):
        return _needs(fallback, ctx)
    x = ctx.arg(0)
    axis = ctx.axis(ctx.arg(1, "dim", 0), ctx.ndim(x))
    step = int_arg(ctx, ctx.arg(4, "step", 1), "step")
    p = pair(ctx, x)
    out = slice_axis(ctx, p, axis, ctx.arg(2, "start"), ctx.arg(3, "end"), step)
    return x if out is p else from_pair(ctx, out)


@complex_case("aten.constant_pad_nd.default")
def _constant_pad(ctx: NodeContext, fallback: Any) -> Any:
    if not _involves_complex(ctx):
        return _needs(fallback, ctx)
    x = ctx.arg(0)
    value = complex(ctx.arg(2, "value", 0) or 0)
    pads = list(ctx.arg(1, "pad"))
    p = pair(ctx, x)
    # the pair dimension is the last one: torch's pad list starts there
    re = _pad(ctx, part_of(ctx, p, 0), pads, "constant", value.real)
    im = _pad(ctx, part_of(ctx, p, 1), pads, "constant", value.imag)
    return from_pair(ctx, make_pair(ctx, ctx.emit(re), ctx.emit(im)))


# -- construction ------------------------------------------------------------------------------
@converter("aten.complex.default")
def _complex(ctx: NodeContext) -> Any:
    """``torch.complex(real, imag)``: both parts of one float dtype, broadcast together."""
    want = ctx.out_dtype()
    part = real_dtype(want)
    re, im = ctx.astype(ctx.tensor(0), part), ctx.astype(ctx.tensor(1), part)
    return from_pair(ctx, make_pair(ctx, re, im))


@converter("aten.polar.default")
def _polar(ctx: NodeContext) -> Any:
    """``torch.polar(abs, angle)`` = ``abs * (cos(angle) + i sin(angle))``."""
    part = real_dtype(ctx.out_dtype())
    r, theta = ctx.astype(ctx.tensor(0), part), ctx.astype(ctx.tensor(1), part)
    re = ctx.emit(_op.multiply(r, _op.cos(theta)))
    im = ctx.emit(_op.multiply(r, _op.sin(theta)))
    return from_pair(ctx, make_pair(ctx, re, im))


@converter("aten.view_as_complex.default")
def _view_as_complex(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    if ctx.dtype(x) not in _COMPLEX_OF:
        raise ctx.unsupported(f"view_as_complex of a {ctx.dtype(x)} tensor (float32 and "
                              "float64 are supported)")
    return from_pair(ctx, x)


@converter("aten.view_as_real.default")
def _view_as_real(ctx: NodeContext) -> Any:
    return pair(ctx, ctx.tensor(0))


# -- parts and elementwise ops -----------------------------------------------------------------
@converter("aten.real.default")
def _real(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    return part_of(ctx, pair(ctx, x), 0) if ctx.dtype(x) in COMPLEX_PARTS else x


@converter("aten.imag.default")
def _imag(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    if ctx.dtype(x) not in COMPLEX_PARTS:
        raise ctx.error("imag is not implemented for real tensors")
    return part_of(ctx, pair(ctx, x), 1)


@converter("aten._conj.default", "aten.conj.default", "aten._conj_physical.default",
           "aten.conj_physical.default", "aten._conj_copy.default", "aten.resolve_conj.default",
           "aten.resolve_neg.default")
def _conj(ctx: NodeContext) -> Any:
    """The complex conjugate (the identity on real tensors).  ``resolve_conj``/``resolve_neg``
    materialize lazy bits torch keeps; values here are always materialized."""
    x = ctx.tensor(0)
    if ctx.dtype(x) not in COMPLEX_PARTS or ctx.op.startswith("aten.resolve_"):
        return x
    return from_pair(ctx, _conj_pair(ctx, pair(ctx, x)))


@converter("aten.angle.default")
def _angle(ctx: NodeContext) -> Any:
    """The argument ``atan2(im, re)``; for a real tensor ``pi`` where it is negative, else 0
    (NaN stays NaN)."""
    x = ctx.tensor(0)
    want = ctx.out_dtype()
    if ctx.dtype(x) in COMPLEX_PARTS:
        p = pair(ctx, x)
        return _op.atan2(part_of(ctx, p, 1), part_of(ctx, p, 0))
    x = ctx.astype(x, want)
    zero = ctx.const(0.0, want)
    out = _op.where(_op.less(x, zero), ctx.const(math.pi, want), zero)
    return _op.where(_op.isnan(x), x, ctx.emit(out))


@complex_case("aten.abs.default")
def _abs(ctx: NodeContext, fallback: Any) -> Any:
    if not _involves_complex(ctx):
        return _needs(fallback, ctx)
    p = pair(ctx, ctx.arg(0))
    return _op.hypot(part_of(ctx, p, 0), part_of(ctx, p, 1))


def _binary_pairs(ctx: NodeContext) -> tuple[Any, Any, str]:
    want = ctx.out_dtype()
    part = real_dtype(want)
    a, b = pair(ctx, ctx.arg(0), part), pair(ctx, ctx.arg(1), part)
    return a, b, part


@complex_case("aten.add.Tensor", "aten.sub.Tensor", "aten.add.Scalar", "aten.sub.Scalar")
def _add_sub(ctx: NodeContext, fallback: Any) -> Any:
    if not _involves_complex(ctx):
        return _needs(fallback, ctx)
    a, b, _ = _binary_pairs(ctx)
    alpha = ctx.kwargs.get("alpha", ctx.arg(2))
    if alpha is not None and alpha != 1:
        if isinstance(alpha, complex) and alpha.imag:
            raise ctx.unsupported(f"a complex alpha {alpha}")
        b = ctx.emit(_op.multiply(b, ctx.const(float(getattr(alpha, "real", alpha)),
                                              ctx.dtype(b))))
    fn = _op.add if ctx.op.startswith("aten.add") else _op.subtract
    return from_pair(ctx, ctx.emit(fn(a, b)))


@complex_case("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(ctx: NodeContext, fallback: Any) -> Any:
    if not _involves_complex(ctx):
        return _needs(fallback, ctx)
    a, b, _ = _binary_pairs(ctx)
    ar, ai, br, bi = (part_of(ctx, a, 0), part_of(ctx, a, 1), part_of(ctx, b, 0),
                      part_of(ctx, b, 1))
    re = ctx.emit(_op.subtract(_op.multiply(ar, br), _op.multiply(ai, bi)))
    im = ctx.emit(_op.add(_op.multiply(ar, bi), _op.multiply(ai, br)))
    return from_pair(ctx, make_pair(ctx, re, im))


# -- movement ops: the original converter on each part -----------------------------------------
class _PartContext(NodeContext):
    """The node seen with one part (real or imaginary) of its complex operands: the original
    converter of a movement op computes that part of the result."""

    def out_dtype(self, index: int = 0, default: Any = None) -> Any:
        return real_dtype(super().out_dtype(index, default))


def _split_args(ctx: NodeContext, value: Any, index: int) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)(_split_args(ctx, v, index) for v in value)
    if hasattr(value, "struct_info") and ctx.dtype(value) in COMPLEX_PARTS:
        return part_of(ctx, pair(ctx, value), index)
    if hasattr(value, "struct_info") and ctx.dtype(value).startswith(("float", "bfloat")):
        raise ctx.unsupported("a real floating-point tensor beside complex ones")
    return value


def _join(ctx: NodeContext, re: Any, im: Any) -> Any:
    if isinstance(re, (list, tuple)):
        return [_join(ctx, a, b) for a, b in zip(re, im)]
    re, im = ctx.emit(re), ctx.emit(im)
    re = ctx.emit(_op.expand_dims(re, [-1]))
    im = ctx.emit(_op.expand_dims(im, [-1]))
    return from_pair(ctx, ctx.emit(_op.concat([re, im], -1)))


@complex_case("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default",
              "aten.transpose.int", "aten.permute.default", "aten.squeeze.dim",
              "aten.squeeze.dims", "aten.squeeze.default", "aten.unsqueeze.default",
              "aten.expand.default", "aten.select.int", "aten.flip.default",
              "aten.roll.default", "aten.cat.default", "aten.stack.default",
              "aten.repeat.default", "aten.index_select.default", "aten.index.Tensor",
              "aten.unfold.default", "aten.t.default", "aten.narrow.default",
              "aten.split.Tensor", "aten.split_with_sizes.default", "aten.unbind.int")
def _movement(ctx: NodeContext, fallback: Any) -> Any:
    """Ops that only move elements: the original converter applied to the real and the
    imaginary parts, joined into one complex result."""
    if not _involves_complex(ctx) or fallback is None:
        return _needs(fallback, ctx)
    parts = []
    for index in (0, 1):
        args = _split_args(ctx, ctx.args, index)
        kwargs = {k: _split_args(ctx, v, index) for k, v in ctx.kwargs.items()}
        parts.append(fallback(_PartContext(ctx.importer, ctx.node, ctx.op, args, kwargs)))
    return _join(ctx, *parts)
