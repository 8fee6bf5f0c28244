"""The offload report: which partitions went to which backend, and why other ops did not.

``relax.build(mod, offload=["cblas"])`` attaches one to the executable
(``ex.offload_report``); ``print(report)`` gives::

    offload report
      partition fused_relax_matmul_cblas (cblas) in main: cblas.matmul [lv = relax.matmul]
      stayed on the host: main/lv1 = relax.matmul: cblas.matmul: dtype float16, needs float32
"""

from __future__ import annotations

import dataclasses

__all__ = ["OffloadReport", "Partition", "Rejection"]


@dataclasses.dataclass(frozen=True)
class Partition:
    """A function offloaded to ``backend``: its symbol, the patterns and bindings it holds."""

    function: str  # the Relax function it was cut from
    symbol: str
    backend: str
    patterns: tuple[str, ...]
    bindings: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Rejection:
    """A binding a pattern matched that stayed on the host, and why."""

    function: str
    binding: str
    op: str
    pattern: str
    reason: str


@dataclasses.dataclass
class OffloadReport:
    """What partitioning did (filled by FuseOpsByPattern, MergeCompositeFunctions and
    RunCodegen)."""

    partitions: list[Partition] = dataclasses.field(default_factory=list)
    rejections: list[Rejection] = dataclasses.field(default_factory=list)

    def add_partition(self, function: str, symbol: str, backend: str, patterns: list[str],
                      bindings: list[str]) -> None:
        self.partitions.append(Partition(function, symbol, backend, tuple(patterns),
                                         tuple(bindings)))

    def add_rejection(self, function: str, binding: str, op: str, pattern: str,
                      reason: str) -> None:
        self.rejections.append(Rejection(function, binding, op, pattern, reason))

    def merge(self, symbol: str, parts: list[str]) -> None:
        """Partitions ``parts`` now live in the merged function ``symbol``."""
        old = [p for p in self.partitions if p.symbol in parts]
        if not old:
            return
        self.partitions = [p for p in self.partitions if p.symbol not in parts]
        self.partitions.append(Partition(
            old[0].function, symbol, old[0].backend,
            tuple(n for p in old for n in p.patterns), tuple(b for p in old for b in p.bindings)))

    def prune_taken(self) -> None:
        """Drop the rejections of bindings that a partition (of another pattern or backend)
        holds after all."""
        taken = {(p.function, b.split(" = ", 1)[0]) for p in self.partitions for b in p.bindings}
        self.rejections = [r for r in self.rejections if (r.function, r.binding) not in taken]

    def by_backend(self, backend: str) -> list[Partition]:
        return [p for p in self.partitions if p.backend == backend]

    def __str__(self) -> str:
        lines = ["offload report"]
        for p in self.partitions:
            lines.append(f"  partition {p.symbol} ({p.backend}) in {p.function}: "
                         f"{', '.join(p.patterns)} [{'; '.join(p.bindings)}]")
        for r in self.rejections:
            lines.append(f"  stayed on the host: {r.function}/{r.binding} = {r.op}: "
                         f"{r.pattern}: {r.reason}")
        if len(lines) == 1:
            lines.append("  nothing was offloaded and no pattern matched")
        return "\n".join(lines)
