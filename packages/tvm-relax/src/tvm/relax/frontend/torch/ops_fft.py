"""Converters for torch's FFT primitives ``aten._fft_r2c``, ``_fft_c2r`` and ``_fft_c2c``,
to which every ``torch.fft.*`` function (fft, ifft, rfft, irfft, hfft, ihfft and their 2-d
and n-d forms, with ``n``/``s``/``dim``/``norm``) decomposes.

Each transform is a **dense DFT per transformed dimension**: the dimension is moved next to
the pair dimension of the complex pair form (see :mod:`.ops_complex`), flattened with it to
``2 n`` values, and multiplied by a ``(2 n, 2 m)`` real matrix of cosines and sines built at
compile time in float64 (normalization folded in) and stored in the computation dtype.  This
costs ``O(n^2)`` multiply-adds per transformed line instead of an FFT's ``O(n log n)`` and
a ``4 n m`` constant per dimension: fine for the short static lengths of typical models and
tests, a first implementation to be replaced by a real FFT kernel for long signals.
Lengths must be static.

* ``_fft_r2c(x, dim, normalization, onesided)``: a real-input DFT over ``dim[-1]`` (only the
  ``n // 2 + 1`` non-redundant outputs when ``onesided``), then forward c2c over the rest.
* ``_fft_c2r(x, dim, normalization, last_dim_size)``: inverse c2c over ``dim[:-1]``, then a
  Hermitian inverse over ``dim[-1]`` producing ``last_dim_size`` real values from its first
  ``last_dim_size // 2 + 1`` inputs (imaginary parts of the zero and Nyquist terms ignored,
  as pocketfft does).
* ``_fft_c2c(x, dim, normalization, forward)``.

``normalization``: 0 none, 1 ``1/sqrt(N)``, 2 ``1/N``, with ``N`` the product of the signal
lengths (the output lengths for c2r).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import op as _op
from ...op.complex import COMPLEX_PARTS
from .common import NodeContext, converter
from .ops_complex import complex_dtype, from_pair, pair

__all__ = ["dft_matrix", "c2r_matrix"]


def _scale(n: int, normalization: int) -> float:
    if normalization == 0:
        return 1.0
    if normalization == 1:
        return 1.0 / np.sqrt(n)
    if normalization == 2:
        return 1.0 / n
    raise ValueError(f"normalization must be 0, 1 or 2, got {normalization}")


def dft_matrix(n: int, m: int, forward: bool, scale: float, real_input: bool) -> np.ndarray:
    """The real matrix of a length-``n`` DFT keeping outputs ``0..m-1``, on the pair form:
    ``out[2 j + c] = sum_k in[2 k + d] M[2 k + d, 2 j + c]`` (``real_input``: the input has
    no pair dimension, ``M`` is ``(n, 2 m)``)."""
    k = np.arange(n)[:, None]
    j = np.arange(m)[None, :]
    theta = 2.0 * np.pi * ((k * j) % n) / n
    cos, sin = np.cos(theta) * scale, np.sin(theta) * scale
    s = 1.0 if forward else -1.0  # forward: exp(-i theta)
    if real_input:
        out = np.empty((n, m, 2))
        out[:, :, 0], out[:, :, 1] = cos, -s * sin
        return out.reshape(n, 2 * m)
    out = np.empty((n, 2, m, 2))
    out[:, 0, :, 0], out[:, 1, :, 0] = cos, s * sin
    out[:, 0, :, 1], out[:, 1, :, 1] = -s * sin, cos
    return out.reshape(2 * n, 2 * m)


def c2r_matrix(m: int, length: int, scale: float) -> np.ndarray:
    """The ``(2 m, length)`` matrix of the Hermitian inverse DFT: ``length`` real outputs from
    ``m`` complex inputs of which the first ``length // 2 + 1`` are used."""
    half = length // 2 + 1
    used = min(m, half)
    k = np.arange(used)[:, None]
    t = np.arange(length)[None, :]
    theta = 2.0 * np.pi * ((k * t) % length) / length
    weight = np.full((used, 1), 2.0)
    weight[0] = 1.0
    if length % 2 == 0 and used == half:
        weight[half - 1] = 1.0
    out = np.zeros((m, 2, length))
    out[:used, 0, :] = weight * np.cos(theta) * scale
    out[:used, 1, :] = -weight * np.sin(theta) * scale
    return out.reshape(2 * m, length)


def _length(ctx: NodeContext, shape: Sequence[Any], axis: int) -> int:
    n = shape[axis]
    if not isinstance(n, int):
        raise ctx.unsupported(f"an FFT over dimension {axis} of symbolic length {n}")
    return n


def _along(ctx: NodeContext, x: Any, axis: int, matrix: np.ndarray, width: int,
           out_width: int) -> Any:
    """Apply ``matrix`` to the ``width`` trailing values (``axis`` of ``x``, and the pair
    dimension when ``width == 2``) of every line of ``x`` along ``axis``; the result has
    ``out_width`` trailing values (2: a pair dimension, 1: none)."""
    ndim = ctx.ndim(x)
    rank = ndim - (1 if width == 2 else 0)  # rank of the signal (without the pair dim)
    order = [d for d in range(rank) if d != axis] + [axis] + ([rank] if width == 2 else [])
    moved = x if order == list(range(ndim)) else ctx.emit(_op.permute_dims(x, order))
    lead = ctx.shape(moved)[:rank - 1]
    flat = ctx.emit(_op.reshape(moved, [*lead, matrix.shape[0]]))
    y = ctx.emit(_op.matmul(flat, ctx.const(matrix, ctx.dtype(x))))
    m = matrix.shape[1] // out_width
    y = ctx.emit(_op.reshape(y, [*lead, m] + ([2] if out_width == 2 else [])))
    out_rank = rank
    back = [0] * (out_rank + (1 if out_width == 2 else 0))
    for pos, d in enumerate(order[:rank]):
        back[d] = pos
    if out_width == 2:
        back[out_rank] = out_rank
    if back == list(range(len(back))):
        return y
    return ctx.emit(_op.permute_dims(y, back))


def _dims(ctx: NodeContext, rank: int) -> list[int]:
    dims = [ctx.axis(int(d), rank) for d in ctx.arg(1, "dim")]
    if len(set(dims)) != len(dims):
        raise ctx.error(f"dims {dims} repeat a dimension")
    return dims


def _c2c_pair(ctx: NodeContext, p: Any, dims: Sequence[int], normalization: int,
              forward: bool) -> Any:
    shape = ctx.shape(p)
    for axis in dims:
        n = _length(ctx, shape, axis)
        scale = _scale(n, normalization)
        p = _along(ctx, p, axis, dft_matrix(n, n, forward, scale, False), 2, 2)
    return p


def _normalization(ctx: NodeContext) -> int:
    value = int(ctx.arg(2, "normalization"))
    if value not in (0, 1, 2):
        raise ctx.unsupported(f"normalization {value} (0, 1 or 2)")
    return value


@converter("aten._fft_c2c.default")
def _fft_c2c(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    if ctx.dtype(x) not in COMPLEX_PARTS:
        raise ctx.error(f"expects a complex input, got {ctx.dtype(x)}")
    dims = _dims(ctx, ctx.ndim(x))
    forward = bool(ctx.arg(3, "forward"))
    p = _c2c_pair(ctx, pair(ctx, x), dims, _normalization(ctx), forward)
    return from_pair(ctx, p)


@converter("aten._fft_r2c.default")
def _fft_r2c(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    real = ctx.dtype(x)
    if real not in ("float32", "float64"):
        raise ctx.unsupported(f"an FFT of a {real} tensor (float32 and float64 are supported)")
    complex_dtype(ctx, real)
    dims = _dims(ctx, ctx.ndim(x))
    normalization = _normalization(ctx)
    onesided = bool(ctx.arg(3, "onesided"))
    if not dims:
        return from_pair(ctx, pair(ctx, x))
    shape = ctx.shape(x)
    last = dims[-1]
    n = _length(ctx, shape, last)
    m = n // 2 + 1 if onesided else n
    p = _along(ctx, x, last, dft_matrix(n, m, True, _scale(n, normalization), True), 1, 2)
    p = _c2c_pair(ctx, p, dims[:-1], normalization, True)
    return from_pair(ctx, p)


@converter("aten._fft_c2r.default")
def _fft_c2r(ctx: NodeContext) -> Any:
    x = ctx.tensor(0)
    if ctx.dtype(x) not in COMPLEX_PARTS:
        raise ctx.error(f"expects a complex input, got {ctx.dtype(x)}")
    dims = _dims(ctx, ctx.ndim(x))
    if not dims:
        raise ctx.error("needs at least one dimension")
    normalization = _normalization(ctx)
    length = ctx.arg(3, "last_dim_size")
    if not isinstance(length, int):
        raise ctx.unsupported(f"a symbolic last_dim_size {length}")
    if length < 1:
        raise ctx.error(f"last_dim_size must be positive, got {length}")
    p = _c2c_pair(ctx, pair(ctx, x), dims[:-1], normalization, False)
    last = dims[-1]
    m = _length(ctx, ctx.shape(p), last)
    return _along(ctx, p, last, c2r_matrix(m, length, _scale(length, normalization)), 2, 1)
