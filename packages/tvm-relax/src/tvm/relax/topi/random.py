"""Counter-based random numbers: Philox-4x32-10 in integer TIR, and the distributions built
on it (``uniform``, ``normal``, ``randint``).

Element ``i`` (row-major index of the output) is a pure function of ``(seed, i)``: the
Philox block cipher (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011)
encrypts the counter ``(lo32(i), hi32(i), 0, 0)`` under the key ``(lo32(seed),
hi32(seed))``.  Every element is computed independently, so the kernel parallelises and
vectorises like any elementwise op and lowers for every target.  The 32-bit words are held
in ``uint64`` so that one multiplication gives the full 64-bit product.
:func:`philox4x32_numpy` is the same function on numpy arrays (the ops' reference).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from tvm import te, tir
from tvm.tir import op as tir_op
from tvm.tir.expr import IntImm, PrimExpr, const

from ._util import cast

__all__ = ["philox4x32", "philox4x32_numpy", "uniform", "normal", "randint", "FLOAT_BITS"]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57  # Philox multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # Weyl key increments
_ROUNDS = 10
_MASK32 = 0xFFFFFFFF

#: mantissa bits of a uniform sample per float dtype (so that it is exact and below 1)
FLOAT_BITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}


def _u64(value: Any) -> PrimExpr:
    return const(int(value), "uint64")


_and, _xor, _or = tir_op.bitwise_and, tir_op.bitwise_xor, tir_op.bitwise_or


def _shr(a: PrimExpr, n: int) -> PrimExpr:
    return tir_op.shift_right(a, _u64(n))


def _shl(a: PrimExpr, n: int) -> PrimExpr:
    return tir_op.shift_left(a, _u64(n))


class _Lets:
    """Binds intermediate words to TIR ``Let`` variables so the 10 rounds stay linear in
    size instead of doubling the expression tree each round."""

    def __init__(self) -> None:
        self.bindings: list[tuple[tir.Var, PrimExpr]] = []

    def bind(self, value: PrimExpr, name: str) -> PrimExpr:
        var = tir.Var(f"{name}{len(self.bindings)}", value.dtype)
        self.bindings.append((var, value))
        return var

    def wrap(self, body: PrimExpr) -> PrimExpr:
        for var, value in reversed(self.bindings):
            body = tir.Let(var, value, body)
        return body


def philox4x32(lets: _Lets, counter: Sequence[PrimExpr], key: Sequence[PrimExpr]) -> list:
    """The four 32-bit output words (``uint64`` expressions below 2**32) of Philox-4x32-10
    for a counter of four and a key of two 32-bit words (``uint64`` expressions)."""
    mask = _u64(_MASK32)
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(_ROUNDS):
        if r:
            k0 = lets.bind(_and(k0 + _u64(_W0), mask), "k")
            k1 = lets.bind(_and(k1 + _u64(_W1), mask), "k")
        p0 = lets.bind(c0 * _u64(_M0), "p")
        p1 = lets.bind(c2 * _u64(_M1), "p")
        c0, c1, c2, c3 = (
            lets.bind(_xor(_xor(_shr(p1, 32), c1), k0), "c"),
            lets.bind(_and(p1, mask), "c"),
            lets.bind(_xor(_xor(_shr(p0, 32), c3), k1), "c"),
            lets.bind(_and(p0, mask), "c"),
        )
    return [c0, c1, c2, c3]


def philox4x32_numpy(index: np.ndarray, seed: int) -> np.ndarray:
    """Philox-4x32-10 of the counters ``(lo32(i), hi32(i), 0, 0)`` for the int array
    ``index`` under ``seed``: a ``uint64`` array of shape ``index.shape + (4,)``."""
    with np.errstate(over="ignore"):
        i = np.asarray(index).astype(np.uint64)
        s = int(seed) & 0xFFFFFFFFFFFFFFFF
        mask = np.uint64(_MASK32)
        c0, c1 = i & mask, i >> np.uint64(32)
        c2 = np.zeros_like(i)
        c3 = np.zeros_like(i)
        k0, k1 = np.uint64(s & _MASK32), np.uint64(s >> 32)
        for r in range(_ROUNDS):
            if r:
                k0 = (k0 + np.uint64(_W0)) & mask
                k1 = (k1 + np.uint64(_W1)) & mask
            p0 = c0 * np.uint64(_M0)
            p1 = c2 * np.uint64(_M1)
            c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & mask,
                              (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & mask)
        return np.stack([c0, c1, c2, c3], axis=-1)


def _flat_index(shape: Sequence[PrimExpr], idx: Sequence[PrimExpr]) -> PrimExpr:
    flat: PrimExpr = IntImm("int64", 0)
    for dim, i in zip(shape, idx):
        flat = flat * cast(dim, "int64") + cast(i, "int64")
    return flat


def _words(lets: _Lets, seed: PrimExpr, shape: Sequence[PrimExpr], idx: Sequence[PrimExpr]) -> list:
    mask = _u64(_MASK32)
    flat = cast(_flat_index(shape, idx), "uint64")
    s = cast(seed, "uint64")
    zero = _u64(0)
    return philox4x32(lets, [_and(flat, mask), _shr(flat, 32), zero, zero],
                      [_and(s, mask), _shr(s, 32)])


def _compute_dtype(dtype: str) -> str:
    if dtype not in FLOAT_BITS:
        raise ValueError(f"random floats of dtype {dtype} are not supported (float16, "
                         "bfloat16, float32, float64)")
    return "float64" if dtype == "float64" else "float32"


def _unit(hi: PrimExpr, lo: PrimExpr, dtype: str) -> PrimExpr:
    """A uniform sample of [0, 1) in the compute dtype of ``dtype`` from 32-bit words
    (``lo`` is used only for float64), exactly representable in ``dtype``."""
    bits = FLOAT_BITS[dtype]
    comp = _compute_dtype(dtype)
    if bits > 32:
        word = _or(_shl(hi, bits - 32), _shr(lo, 64 - bits))
    else:
        word = _shr(hi, 32 - bits)
    return cast(word, comp) * const(2.0 ** -bits, comp)


def uniform(seed: PrimExpr, shape: Sequence[PrimExpr], dtype: str, low: float,
            high: float) -> te.Tensor:
    """Uniform samples of ``[low, high)`` of ``shape`` and float ``dtype``."""
    comp = _compute_dtype(dtype)

    def f(*idx: Any) -> PrimExpr:
        lets = _Lets()
        w = _words(lets, seed, shape, idx)
        u = _unit(w[0], w[1], dtype)
        value = const(low, comp) + const(high - low, comp) * u
        return lets.wrap(cast(value, dtype))

    return te.compute(tuple(shape), f, name="T_uniform")


def normal(seed: PrimExpr, shape: Sequence[PrimExpr], dtype: str, mean: float,
           std: float) -> te.Tensor:
    """Normal samples (Box–Muller on two uniforms) of ``shape`` and float ``dtype``."""
    comp = _compute_dtype(dtype)
    wide = dtype if dtype == "float64" else "float32"  # bits of the compute dtype

    def f(*idx: Any) -> PrimExpr:
        lets = _Lets()
        w = _words(lets, seed, shape, idx)
        one = const(1.0, comp)
        u1 = one - _unit(w[0], w[1], wide)  # (0, 1]: log is finite
        u2 = _unit(w[2], w[3], wide)
        radius = tir.sqrt(const(-2.0, comp) * tir.log(u1))
        z = radius * tir.cos(const(2.0 * math.pi, comp) * u2)
        return lets.wrap(cast(const(mean, comp) + const(std, comp) * z, dtype))

    return te.compute(tuple(shape), f, name="T_normal")


def randint(seed: PrimExpr, shape: Sequence[PrimExpr], dtype: str, low: int,
            high: int) -> te.Tensor:
    """Integers uniform on ``[low, high)`` (from 64 random bits modulo the range; the bias
    is below 2**-32 for ranges below 2**32) of ``shape``, cast to ``dtype``."""
    span = int(high) - int(low)
    if span <= 0:
        raise ValueError(f"randint: empty range [{low}, {high})")

    def f(*idx: Any) -> PrimExpr:
        lets = _Lets()
        w = _words(lets, seed, shape, idx)
        bits = _or(_shl(w[0], 32), w[1])
        value = cast(bits % _u64(span), "int64") + IntImm("int64", int(low))
        return lets.wrap(cast(value, dtype))

    return te.compute(tuple(shape), f, name="T_randint")
