"""Per-kernel profiles and benchmark statistics of VM runs.

``VirtualMachine.profile(name, *inputs)`` returns a :class:`ProfileReport` (one row per called
function: calls, total, mean, share of the run); ``VirtualMachine.time_evaluator(name,
number, repeat)(*inputs)`` returns a :class:`BenchmarkResult` (mean, median, std, min, max
over ``repeat`` measurements, each the mean of ``number`` runs).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProfileRow", "ProfileReport", "BenchmarkResult"]


@dataclass(frozen=True)
class ProfileRow:
    """The time spent in one function over one profiled run."""

    name: str
    kind: str  # "kernel" | "builtin" | "vm" | "packed"
    count: int
    total_s: float

    @property
    def mean_s(self) -> float:
        return self.total_s / self.count if self.count else 0.0


@dataclass
class ProfileReport:
    """Rows sorted by total time, the run's wall time and the VM's own share of it."""

    function: str
    rows: list[ProfileRow]
    total_s: float
    calls_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def overhead_s(self) -> float:
        """Wall time not spent inside the functions the top-level bytecode called."""
        return max(self.total_s - self.calls_s, 0.0)

    def row(self, name: str) -> ProfileRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no function {name!r} in the profile; it has: "
                       f"{', '.join(r.name for r in self.rows)}")

    def table(self) -> str:
        """The report as an aligned text table (times in microseconds)."""
        head = ("Name", "Kind", "Calls", "Total(us)", "Mean(us)", "Percent")
        body = []
        for r in self.rows:
            pct = 100.0 * r.total_s / self.total_s if self.total_s else 0.0
            body.append((r.name, r.kind, str(r.count), f"{r.total_s * 1e6:.2f}",
                         f"{r.mean_s * 1e6:.2f}", f"{pct:.2f}"))
        body.append(("(vm overhead)", "", "", f"{self.overhead_s * 1e6:.2f}", "",
                     f"{100.0 * self.overhead_s / self.total_s if self.total_s else 0.0:.2f}"))
        body.append(("(total)", "", "", f"{self.total_s * 1e6:.2f}", "", "100.00"))
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
        fmt = lambda row: "  ".join(  # noqa: E731
            c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
        )
        lines = [f"Profile of @{self.function}", fmt(head), fmt(tuple("-" * w for w in widths))]
        lines += [fmt(row) for row in body]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def as_dict(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "total_s": self.total_s,
            "overhead_s": self.overhead_s,
            "rows": [
                {"name": r.name, "kind": r.kind, "count": r.count, "total_s": r.total_s,
                 "mean_s": r.mean_s}
                for r in self.rows
            ],
        }

    def json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)


@dataclass(frozen=True)
class BenchmarkResult:
    """Seconds per run: one entry per repeat, each averaged over ``number`` runs."""

    results: tuple[float, ...]
    number: int

    def __post_init__(self) -> None:
        if not self.results:
            raise ValueError("BenchmarkResult needs at least one measurement")

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    def __str__(self) -> str:
        ms = 1e3
        return (
            f"Execution time summary ({len(self.results)} repeats x {self.number} runs):\n"
            f" mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)\n"
            f" {self.mean * ms:<11.4f} {self.median * ms:<13.4f} {self.max * ms:<12.4f} "
            f"{self.min * ms:<12.4f} {self.std * ms:.4f}"
        )
