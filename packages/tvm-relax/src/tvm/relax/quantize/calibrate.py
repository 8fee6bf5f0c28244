"""Calibration statistics and the choice of quantization parameters.

A :class:`TensorStats` follows one activation tensor over the calibration batches: its
running min / max and a histogram of ``|x|`` over ``[0, edge)`` in ``num_bins`` bins.  The
histogram's range grows by doubling: when a batch exceeds ``edge``, neighbouring bins are
merged pairwise (the bin width doubles, counts are kept exactly) until it fits, so one pass
over the data suffices.

Exact zeros (ReLU outputs, padding) are counted apart: zero is always exact, and a spike in
the first bin would bias the entropy search towards small thresholds.

Thresholds of ``|x|``: :func:`minmax_threshold` (the largest value seen),
:func:`percentile_threshold` and :func:`entropy_threshold` (TensorRT-style: for each candidate
bin count ``i`` from ``levels`` to ``num_bins``, the reference distribution ``P`` is the first
``i`` bins with the mass beyond folded into the last one, ``Q`` is those ``i`` bins merged into
``levels`` quantization levels and spread back uniformly over each level's non-empty bins; the
threshold is the edge of the ``i`` minimising ``KL(P || Q)``).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

__all__ = ["TensorStats", "minmax_threshold", "percentile_threshold", "entropy_threshold",
           "activation_params", "weight_params"]


class TensorStats:
    """Running min / max and a doubling-range histogram of ``|x|``."""

    def __init__(self, num_bins: int = 2048, histogram: bool = True):
        if num_bins % 2:
            raise ValueError(f"TensorStats: num_bins must be even, got {num_bins}")
        self.num_bins = num_bins
        self.min = math.inf
        self.max = -math.inf
        self.count = 0
        self.zeros = 0  # exact zeros: kept out of the histogram (0 is always exact)
        self.edge = 0.0
        self.hist: Optional[np.ndarray] = np.zeros(num_bins, np.int64) if histogram else None

    @property
    def absmax(self) -> float:
        return max(abs(self.min), abs(self.max)) if self.count else 0.0

    @property
    def bin_width(self) -> float:
        return self.edge / self.num_bins

    def update(self, x: np.ndarray) -> None:
        """Add one batch of values."""
        x = np.asarray(x, np.float32).reshape(-1)
        if x.size == 0:
            return
        if not np.isfinite(x).all():
            raise ValueError("calibration: an activation holds NaN or infinite values")
        self.min = min(self.min, float(x.min()))
        self.max = max(self.max, float(x.max()))
        self.count += x.size
        if self.hist is None:
            return
        amax = self.absmax
        if self.edge == 0.0:
            self.edge = amax if amax > 0 else 1.0
        while amax > self.edge:  # double the range: merge bins pairwise
            half = self.hist.reshape(-1, 2).sum(axis=1)
            self.hist = np.concatenate([half, np.zeros_like(half)])
            self.edge *= 2.0
        ax = np.abs(x)
        nonzero = ax[ax > 0]
        self.zeros += ax.size - nonzero.size
        counts, _ = np.histogram(nonzero, bins=self.num_bins, range=(0.0, self.edge))
        self.hist += counts


def minmax_threshold(stats: TensorStats) -> float:
    """The largest ``|x|`` seen."""
    return stats.absmax


def percentile_threshold(stats: TensorStats, percentile: float) -> float:
    """The upper edge of the bin where the cumulative share of ``|x|`` reaches
    ``percentile`` %, at most the largest value seen."""
    if stats.hist is None or stats.count == 0:
        return stats.absmax
    hist = stats.hist.copy()
    hist[0] += stats.zeros
    cdf = np.cumsum(hist) / int(hist.sum())
    idx = int(np.searchsorted(cdf, percentile / 100.0 - 1e-12))
    return min((idx + 1) * stats.bin_width, stats.absmax)


def entropy_threshold(stats: TensorStats, levels: int = 128) -> float:
    """The threshold of ``|x|`` minimising KL(P || Q) over the histogram (module docstring);
    ``levels`` quantization levels cover ``[0, threshold]`` (128 for int8, 256 for uint8 of
    non-negative values)."""
    hist = stats.hist
    if hist is None or hist.sum() == 0:
        return stats.absmax
    hist = hist.astype(np.float64)
    last = int(np.nonzero(hist)[0][-1]) + 1  # bins past the last non-empty one change nothing
    if last <= levels:
        return min(last * stats.bin_width, stats.absmax)
    tail = np.concatenate([np.cumsum(hist[::-1])[::-1], [0.0]])  # tail[i] = sum(hist[i:])
    best_kl, best_i = math.inf, last
    for i in range(levels, last + 1):
        p = hist[:i].copy()
        p[-1] += tail[i]
        nonzero = hist[:i] > 0
        starts = (np.arange(levels) * i) // levels
        sums = np.add.reduceat(hist[:i], starts)
        filled = np.add.reduceat(nonzero.astype(np.float64), starts)
        widths = np.diff(np.append(starts, i))
        avg = np.divide(sums, filled, out=np.zeros_like(sums), where=filled > 0)
        q = np.where(nonzero, np.repeat(avg, widths), 0.0)
        mask = p > 0
        pn = p[mask] / p.sum()
        qm = q[mask]
        # smoothing: a P bin Q leaves empty (the folded outliers) gets a small mass
        qm = np.where(qm > 0, qm, 1e-4 * max(q.sum(), 1.0) / max(mask.sum(), 1))
        qn = qm / qm.sum()
        kl = float(np.sum(pn * np.log(pn / qn)))
        if kl < best_kl:
            best_kl, best_i = kl, i
    return min(best_i * stats.bin_width, stats.absmax)


def activation_params(lo: float, hi: float, dtype: str) -> tuple[float, int]:
    """``(scale, zero_point)`` for values in ``[lo, hi]``: uint8 asymmetric (the range
    widened to hold 0, which stays exact), int8 symmetric (zero point 0)."""
    if dtype == "int8":
        amax = max(abs(lo), abs(hi))
        scale = float(np.float32(amax / 127.0)) if amax > 0 else 1.0
        return scale, 0
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo <= 0:
        return 1.0, 0
    scale = float(np.float32((hi - lo) / 255.0))
    zp = int(np.clip(np.rint(-lo / scale), 0, 255))
    return scale, zp


def weight_params(w: np.ndarray, axis: int) -> tuple[np.ndarray, list[float]]:
    """Symmetric per-channel int8 weights along ``axis``: ``(w_int8, scales)`` with
    ``scale[c] = max|w[c]| / 127`` (1.0 for an all-zero channel), values in [-127, 127]."""
    w = np.asarray(w, np.float32)
    axis = axis % w.ndim
    others = tuple(a for a in range(w.ndim) if a != axis)
    amax = np.abs(w).max(axis=others) if others else np.abs(w)
    scales = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w / scales.reshape(shape)), -127, 127).astype(np.int8)
    return q, [float(s) for s in scales]
