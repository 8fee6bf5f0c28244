"""QuantizeReport: what :func:`tvm.relax.quantize.quantize` chose and how close it stayed."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

__all__ = ["LayerReport", "QuantizeReport"]


@dataclasses.dataclass
class LayerReport:
    """One conv2d / matmul: its calibrated input / output ranges and parameters
    (``(scale, zero_point)``), the range of its per-channel weight scales, and the error of
    its (epilogue's) output, quantized vs float, over the calibration data."""

    index: int
    name: str
    op: str
    quantized: bool
    reason: str = ""
    input_range: Optional[tuple] = None
    input_params: Optional[tuple] = None
    output_range: Optional[tuple] = None
    output_params: Optional[tuple] = None
    weight_scales: Optional[tuple] = None
    cosine: Optional[float] = None
    max_abs_error: Optional[float] = None


@dataclasses.dataclass
class QuantizeReport:
    """Per-layer rows, the calibration used and the final output's error (quantized vs
    float on the calibration data); ``qdq`` is the :class:`QDQReport` of the integer
    rewrite.  ``str(report)`` is a table."""

    layers: list
    method: str
    activation_dtype: str
    batches: int
    max_abs_error: float
    relative_error: float
    cosine: float
    qdq: Any = None

    @property
    def quantized(self) -> list:
        return [la for la in self.layers if la.quantized]

    @property
    def skipped(self) -> list:
        return [la for la in self.layers if not la.quantized]

    def __str__(self) -> str:
        def rng(r: Optional[tuple]) -> str:
            return "" if r is None else f"[{r[0]:.4g}, {r[1]:.4g}]"

        def par(p: Optional[tuple]) -> str:
            return "" if p is None else f"{p[0]:.4g}/{p[1]}"

        head = (f"relax.quantize: {len(self.quantized)} of {len(self.layers)} layer(s) "
                f"quantized ({self.method} calibration, {self.activation_dtype} activations, "
                f"int8 per-channel weights, {self.batches} batch(es))")
        cols = ("#", "layer", "op", "input range", "in scale/zp", "output range",
                "out scale/zp", "weight scales", "cosine", "max abs err")
        rows = []
        for la in self.layers:
            if not la.quantized:
                rows.append((str(la.index), la.name, la.op, f"float ({la.reason})", "", "", "",
                             "", "", ""))
                continue
            ws = la.weight_scales
            rows.append((str(la.index), la.name, la.op, rng(la.input_range),
                         par(la.input_params), rng(la.output_range), par(la.output_params),
                         f"{ws[0]:.3g}..{ws[1]:.3g}", f"{la.cosine:.5f}",
                         f"{la.max_abs_error:.4g}"))
        widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c)
                  for i, c in enumerate(cols)]
        lines = [head, "  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
        lines.append(f"output: cosine {self.cosine:.5f}, max abs error {self.max_abs_error:.4g}"
                     f" (relative {self.relative_error:.3%})")
        if self.qdq is not None and self.qdq.float:
            lines.append(str(self.qdq))
        return "\n".join(lines)
