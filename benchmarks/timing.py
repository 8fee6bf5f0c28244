"""What the model benchmarks share: timing a call, summarising the times, writing results.

``time_calls(fn, repeats)`` times ``fn()`` after a warm-up; ``stats(times)`` is the min and median
in ms; ``write_results(out_dir, prefix, res, md)`` writes ``<prefix>-<stamp>.{json,md}`` and
``<prefix>-latest.{json,md}``.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["time_calls", "stats", "write_results"]


def time_calls(fn: Callable[[], Any], repeats: int, warmup: int = 2) -> list[float]:
    """Seconds per call of ``fn`` over ``repeats`` calls, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def stats(seconds: list[float]) -> dict[str, float]:
    return {"min_ms": 1e3 * min(seconds), "median_ms": 1e3 * float(np.median(seconds))}


def write_results(out_dir: Path, prefix: str, res: dict[str, Any], md: str) -> None:
    """The JSON and markdown of one run, stamped and as ``<prefix>-latest``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    for stem in (f"{prefix}-{stamp}", f"{prefix}-latest"):
        (out_dir / f"{stem}.json").write_text(json.dumps(res, indent=1))
        (out_dir / f"{stem}.md").write_text(md)
