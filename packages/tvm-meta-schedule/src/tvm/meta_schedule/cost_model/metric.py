"""Ranking metrics for cost models: how well predicted scores order measured candidates."""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["spearman", "top_k_recall"]


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1, ties sharing their average rank."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(len(x), dtype=np.float64)
    uniq, inverse = np.unique(x, return_inverse=True)
    if len(uniq) < len(x):
        sums = np.bincount(inverse, weights=ranks)
        counts = np.bincount(inverse)
        ranks = (sums / counts)[inverse]
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation of ``a`` and ``b`` (0.0 when either is constant)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"spearman: need two 1-d sequences of one length, got {x.shape} and "
                         f"{y.shape}")
    rx, ry = _ranks(x) - (len(x) - 1) / 2, _ranks(y) - (len(y) - 1) / 2
    denom = float(np.sqrt((rx * rx).sum() * (ry * ry).sum()))
    return float((rx * ry).sum() / denom) if denom > 0 else 0.0


def top_k_recall(pred: Sequence[float], truth: Sequence[float], k: int) -> float:
    """Fraction of the ``k`` truly best (highest ``truth``) among the ``k`` best predicted."""
    p, t = np.asarray(pred), np.asarray(truth)
    k = min(k, len(t))
    if k <= 0:
        return 0.0
    best_pred = set(np.argsort(-p, kind="mergesort")[:k].tolist())
    best_true = set(np.argsort(-t, kind="mergesort")[:k].tolist())
    return len(best_pred & best_true) / k
