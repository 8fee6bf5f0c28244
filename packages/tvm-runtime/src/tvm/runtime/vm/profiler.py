"""Per-kernel profiles and benchmark statistics of VM runs.

``VirtualMachine.profile(name, *inputs, repeat=1, warmup=1)`` returns a
:class:`ProfileReport`: one row per called kernel, builtin or packed function (calls per
run, total and mean time, share of the run, argument shapes, device, the model layers a
kernel computes) plus the VM's own overhead, so that the rows and the overhead add up to the
run's measured time.  ``VirtualMachine.time_evaluator(name, number, repeat)(*inputs)``
returns a :class:`BenchmarkResult` (mean, median, std, min, max over ``repeat``
measurements, each the mean of ``number`` runs).

How a profile stays honest (its total is within a few percent of ``time_evaluator``'s on
the same inputs): the instrumented bytecode is compiled once, before anything is timed;
``warmup`` untimed runs first fill the storage pool, wake the thread pool and record the
argument shapes, so the timed runs do none of that; only leaf calls are timed (a call into
another VM function is not a row, its kernels are), so rows never overlap and the overhead
is what remains; a timer is two clock reads and two additions per call, and the device is
synchronised after each call only where its API is asynchronous (not the CPU, whose kernels
return when done).
"""

from __future__ import annotations

import csv
import io
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProfileRow", "ProfileReport", "BenchmarkResult", "CallRecorder"]

#: distinct argument signatures kept per row (a kernel called with ever new shapes)
MAX_SIGNATURES = 8
_CSV_FIELDS = ("name", "kind", "calls", "total_us", "mean_us", "percent", "device",
               "shapes", "source_layers")


@dataclass(frozen=True)
class ProfileRow:
    """The time spent in one function per profiled run.

    ``count`` is the calls per run and ``total_s`` their time per run (averaged over the
    report's ``repeat`` runs); ``share`` is ``total_s`` over the report's total;
    ``shapes`` the distinct argument signatures seen (one entry per argument, such as
    ``"float32[128, 256]"``; the outputs of a kernel are arguments too); ``device`` where
    the call ran (a kernel: the VM's device; other calls: the device of their first tensor
    argument, else the host); ``source_layers`` the model layers a kernel computes.
    """

    name: str
    kind: str  # "kernel" | "builtin" | "packed"
    count: int
    total_s: float
    share: float = 0.0
    shapes: tuple[tuple[str, ...], ...] = ()
    device: str = ""
    source_layers: tuple[str, ...] = ()

    @property
    def mean_s(self) -> float:
        return self.total_s / self.count if self.count else 0.0

    @property
    def arg_shapes(self) -> tuple[str, ...]:
        """The argument signature of the first call (``()`` if none was recorded)."""
        return self.shapes[0] if self.shapes else ()

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "count": self.count,
                "total_s": self.total_s, "mean_s": self.mean_s, "share": self.share,
                "device": self.device, "shapes": [list(s) for s in self.shapes],
                "source_layers": list(self.source_layers)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileRow:
        try:
            return cls(str(d["name"]), str(d["kind"]), int(d["count"]), float(d["total_s"]),
                       float(d.get("share", 0.0)),
                       tuple(tuple(str(a) for a in s) for s in d.get("shapes", ())),
                       str(d.get("device", "")),
                       tuple(str(n) for n in d.get("source_layers", ())))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"not a profile row: {d!r} ({err})") from None


@dataclass
class ProfileReport:
    """Rows sorted by total time, the run's measured time and the VM's own share of it.

    ``total_s`` is the mean of the ``repeat`` timed runs (``runs_s``, each measured around
    the whole run); ``calls_s`` the rows' sum; ``overhead_s`` the rest: checks, allocation,
    shape arithmetic and instruction dispatch in the VM.  ``rows`` + overhead = total.
    """

    function: str
    rows: list[ProfileRow]
    total_s: float
    calls_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    repeat: int = 1
    runs_s: tuple[float, ...] = ()
    device: str = ""

    @property
    def overhead_s(self) -> float:
        """Time not spent inside the calls of the rows (the VM's own work)."""
        return max(self.total_s - self.calls_s, 0.0)

    def row(self, name: str) -> ProfileRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no function {name!r} in the profile; it has: "
                       f"{', '.join(r.name for r in self.rows)}")

    def _share(self, seconds: float) -> float:
        return seconds / self.total_s if self.total_s else 0.0

    def table(self) -> str:
        """The report as an aligned text table (times in microseconds; long lists of
        shapes and layers shortened, see :meth:`csv` or :meth:`json` for all of them)."""
        head = ("Name", "Kind", "Calls", "Total(us)", "Mean(us)", "Percent", "Device",
                "Argument shapes", "Source layers")
        body = []
        for r in self.rows:
            shapes = ", ".join(r.arg_shapes)
            if len(r.shapes) > 1:
                shapes += f" (+{len(r.shapes) - 1} more)"
            layers = ", ".join(r.source_layers[:3])
            if len(r.source_layers) > 3:
                layers += f" (+{len(r.source_layers) - 3} more)"
            body.append((r.name, r.kind, str(r.count), f"{r.total_s * 1e6:.2f}",
                         f"{r.mean_s * 1e6:.2f}", f"{100.0 * self._share(r.total_s):.2f}",
                         r.device, shapes, layers))
        body.append(("(vm overhead)", "vm", "", f"{self.overhead_s * 1e6:.2f}", "",
                     f"{100.0 * self._share(self.overhead_s):.2f}", "", "", ""))
        body.append(("(total)", "", "", f"{self.total_s * 1e6:.2f}", "", "100.00", "", "", ""))
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
        right = {2, 3, 4, 5}

        def fmt(row: Sequence[str]) -> str:
            cells = [c.rjust(w) if i in right else c.ljust(w)
                     for i, (c, w) in enumerate(zip(row, widths))]
            return "  ".join(cells).rstrip()

        title = f"Profile of @{self.function}"
        if self.repeat > 1:
            title += f" (mean of {self.repeat} runs)"
        lines = [title, fmt(head), fmt(tuple("-" * w for w in widths))]
        lines += [fmt(row) for row in body]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def csv(self) -> str:
        """The rows and a last ``(vm overhead)`` row (kind ``vm``) as CSV with a header:
        ``name, kind, calls, total_us, mean_us, percent, device, shapes, source_layers``
        (distinct signatures in ``shapes`` and the layers are separated by ``;``); the
        ``total_us`` column sums to the run's total."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(_CSV_FIELDS)
        for r in self.rows:
            writer.writerow((r.name, r.kind, r.count, f"{r.total_s * 1e6:.3f}",
                             f"{r.mean_s * 1e6:.3f}", f"{100.0 * self._share(r.total_s):.3f}",
                             r.device, "; ".join(", ".join(s) for s in r.shapes),
                             "; ".join(r.source_layers)))
        writer.writerow(("(vm overhead)", "vm", "", f"{self.overhead_s * 1e6:.3f}", "",
                         f"{100.0 * self._share(self.overhead_s):.3f}", "", "", ""))
        return out.getvalue()

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (seconds); ``rows`` sum with ``overhead_s`` to ``total_s``."""
        return {
            "function": self.function,
            "total_s": self.total_s,
            "calls_s": self.calls_s,
            "overhead_s": self.overhead_s,
            "repeat": self.repeat,
            "runs_s": list(self.runs_s),
            "device": self.device,
            "rows": [r.as_dict() for r in self.rows],
        }

    def json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileReport:
        """The report :meth:`as_dict` (or :meth:`json`, parsed) describes."""
        if not isinstance(d, dict) or "rows" not in d or "total_s" not in d:
            raise ValueError("not a profile report: expected an object with 'rows' and "
                             "'total_s'")
        rows = [ProfileRow.from_dict(r) for r in d["rows"]]
        return cls(str(d.get("function", "")), rows, float(d["total_s"]),
                   float(d.get("calls_s", sum(r.total_s for r in rows))),
                   repeat=int(d.get("repeat", 1)),
                   runs_s=tuple(float(t) for t in d.get("runs_s", ())),
                   device=str(d.get("device", "")))


class _CallStats:
    __slots__ = ("count", "total", "shapes", "device")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.shapes: list[tuple[str, ...]] = []
        self.device = ""


class CallRecorder:
    """The timers of one VM's instrumented bytecode: :meth:`wrap` times a call site,
    :meth:`profile` runs a function and builds the :class:`ProfileReport`.

    ``sync`` waits for the device (None where calls finish before they return, the CPU);
    ``describe`` turns an argument into its signature entry and device name.
    """

    def __init__(self, device: str, sync: Callable[[], None] | None,
                 describe: Callable[[Any], tuple[str, str | None]],
                 layers: Callable[[str], tuple[str, ...]]) -> None:
        self.device = device
        self.sync = sync
        self.describe = describe
        self.layers = layers
        self.stats: dict[tuple[str, str], _CallStats] = {}
        self.capture = False
        self.busy = False  # inside a timed call: calls it makes back into the VM are its own

    def wrap(self, call: Callable[[list, list], Any], name: str, kind: str,
             getters: Sequence[Callable[[list, list], Any]]) -> Callable[[list, list], Any]:
        """``call`` (a call site of ``name``) timed into this recorder."""
        stats = self.stats.setdefault((name, kind), _CallStats())
        sync, clock, rec = self.sync, time.perf_counter, self

        def timed(regs: list, heap: list) -> Any:
            if rec.busy:
                return call(regs, heap)
            if rec.capture:
                rec._note(stats, kind, [g(regs, heap) for g in getters])
            rec.busy = True
            start = clock()
            try:
                result = call(regs, heap)
                if sync is not None:
                    sync()
                return result
            finally:
                stats.total += clock() - start
                stats.count += 1
                rec.busy = False

        return timed

    def _note(self, stats: _CallStats, kind: str, args: list[Any]) -> None:
        described = [self.describe(a) for a in args]
        sig = tuple(text for text, _ in described)
        if sig not in stats.shapes and len(stats.shapes) < MAX_SIGNATURES:
            stats.shapes.append(sig)
        if not stats.device:
            if kind == "kernel":
                stats.device = self.device
            else:
                stats.device = next((d for _, d in described if d), "host")

    def profile(self, function: str, run: Callable[[], Any], repeat: int, warmup: int
                ) -> ProfileReport:
        """Run ``run`` ``warmup`` times untimed, then ``repeat`` times timed."""
        for what, value, least in (("repeat", repeat, 1), ("warmup", warmup, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"profile: {what} must be an int >= {least}, got {value!r}")
        for s in self.stats.values():
            s.shapes, s.device = [], ""
        sync, clock = self.sync, time.perf_counter
        self.capture = True
        try:
            for _ in range(warmup):
                run()
                self.capture = False
            if sync is not None:
                sync()
            for s in self.stats.values():
                s.count, s.total = 0, 0.0
            runs = []
            for _ in range(repeat):
                start = clock()
                run()
                if sync is not None:
                    sync()
                runs.append(clock() - start)
                self.capture = False
        finally:
            self.capture = False
            self.busy = False
        total = sum(runs) / repeat
        rows = []
        for (name, kind), s in self.stats.items():
            if not s.count:
                continue
            seconds = s.total / repeat
            rows.append(ProfileRow(
                name, kind, max(round(s.count / repeat), 1), seconds,
                seconds / total if total else 0.0, tuple(s.shapes), s.device,
                self.layers(name) if kind == "kernel" else ()))
        rows.sort(key=lambda r: -r.total_s)
        return ProfileReport(function, rows, total, sum(r.total_s for r in rows),
                             repeat=repeat, runs_s=tuple(runs), device=self.device)


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
