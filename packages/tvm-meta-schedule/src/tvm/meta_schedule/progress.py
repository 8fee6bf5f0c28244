"""What a person reads while and after tuning: progress lines, a summary table, log files,
and the FLOP count of a kernel (for GFLOP/s).

Progress goes to stdout: one line per batch, or one line rewritten in place (a carriage
return) when stdout is a terminal.  Logs go to ``work_dir/logs``: ``tune.log`` (logger
``tvm.meta_schedule`` and everything below it) and one ``task_<i>_<name>.log`` per task (the
task's logger, ``tvm.meta_schedule.task.<name>``).
"""

from __future__ import annotations

import logging
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, TextIO

__all__ = ["estimate_flops", "TaskProgress", "Progress", "format_summary", "setup_logs",
           "task_logger", "remove_logs"]

ROOT_LOGGER = "tvm.meta_schedule"


# -- FLOPs ----------------------------------------------------------------------------------
def _is_float(dtype: Any) -> bool:
    text = str(dtype)
    return text.startswith("float") or text.startswith("bfloat")


def _expr_flops(expr: Any) -> int:
    """Floating-point operations to evaluate ``expr`` once (index arithmetic is free)."""
    from tvm.tir.expr import BinaryOp, BufferLoad, Call, Cast, CmpOp, PrimExpr, Select

    if isinstance(expr, BufferLoad) or not isinstance(expr, PrimExpr):
        return 0
    if isinstance(expr, (BinaryOp, CmpOp)):
        own = 1 if _is_float(expr.a.dtype) else 0
        return own + _expr_flops(expr.a) + _expr_flops(expr.b)
    if isinstance(expr, Select):
        return (_expr_flops(expr.condition) + _expr_flops(expr.true_value)
                + _expr_flops(expr.false_value))
    if isinstance(expr, Cast):
        return _expr_flops(expr.value)
    if isinstance(expr, Call):
        own = 1 if _is_float(expr.dtype) else 0
        return own + sum(_expr_flops(a) for a in expr.args)
    return 0


def estimate_flops(func: Any) -> float:
    """Floating-point operations of one run of ``func`` (a PrimFunc or an IRModule's
    ``main``): the float operations of every store times the trip counts of the loops
    around it (a block's init is not counted: a matmul is ``2 * M * N * K``)."""
    from tvm.ir.module import IRModule
    from tvm.tir.expr import IntImm
    from tvm.tir.functor import StmtExprVisitor

    if isinstance(func, IRModule):
        func = func["main"]

    class _Count(StmtExprVisitor):
        def __init__(self) -> None:
            self.scale = 1
            self.total = 0

        def visit_for_(self, loop: Any) -> None:
            extent = loop.extent.value if isinstance(loop.extent, IntImm) else 1
            saved = self.scale
            self.scale *= max(extent, 0)
            self.visit(loop.body)
            self.scale = saved

        def visit_block_(self, block: Any) -> None:
            self.visit(block.body)

        def visit_buffer_store_(self, store: Any) -> None:
            self.total += self.scale * _expr_flops(store.value)

    counter = _Count()
    counter.visit(func.body)
    return float(counter.total)


# -- progress ---------------------------------------------------------------------------------
@dataclass
class TaskProgress:
    """What is known of one task: ``best_sec`` of the tuned candidates, ``default_sec`` of
    the default schedule (None: not measured), trials done (failed ones included)."""

    name: str
    weight: float
    flops: float
    max_trials: int
    trials: int = 0
    failed: int = 0
    best_sec: float = math.inf
    default_sec: Optional[float] = None

    @property
    def best_overall(self) -> float:
        """The best of the tuned and the default schedule (what a build with records uses)."""
        return min(self.best_sec, self.default_sec if self.default_sec is not None else math.inf)

    def gflops(self) -> Optional[float]:
        best = self.best_overall
        if not self.flops or not math.isfinite(best) or best <= 0:
            return None
        return self.flops / best / 1e9

    def speedup(self) -> Optional[float]:
        best = self.best_overall
        if self.default_sec is None or not math.isfinite(best) or best <= 0:
            return None
        return self.default_sec / best


def _us(sec: Optional[float]) -> str:
    return "-" if sec is None or not math.isfinite(sec) else f"{sec * 1e6:.1f}"


def _ms(sec: float) -> str:
    """Milliseconds with three decimals, or microseconds under 0.1 ms (a tiny model's
    latency would read 0.000 ms)."""
    if not math.isfinite(sec):
        return "-"
    return f"{sec * 1e3:.3f} ms" if sec >= 1e-4 else f"{sec * 1e6:.2f} us"


def _latency(secs: list[float], tasks: list[TaskProgress]) -> tuple[float, int]:
    """Sum of weight x time over the finite times, and how many tasks have none."""
    total = sum(t.weight * sec for t, sec in zip(tasks, secs) if math.isfinite(sec))
    return total, sum(1 for sec in secs if not math.isfinite(sec))


def _latency_text(secs: list[float], tasks: list[TaskProgress]) -> str:
    total, missing = _latency(secs, tasks)
    if missing == len(tasks):
        return "-"
    text = _ms(total)
    return text + (f" (+{missing} task{'s' if missing > 1 else ''} without a time)"
                   if missing else "")


class Progress:
    """Prints a line after each batch: the task (trials, best time, GFLOP/s) and the estimated
    whole-model latency (sum of weight * best time over the tasks)."""

    def __init__(self, tasks: list[TaskProgress], max_trials_global: int,
                 stream: Optional[TextIO] = None, enabled: bool = True) -> None:
        self.tasks = tasks
        self.max_trials_global = max_trials_global
        self.stream = stream if stream is not None else sys.stdout
        self.enabled = enabled
        self.start = time.perf_counter()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._open_line = False

    def model_latency(self) -> float:
        """Sum of weight x best time over the tasks that have a time."""
        return _latency([t.best_overall for t in self.tasks], self.tasks)[0]

    def line(self, task_id: int) -> str:
        t = self.tasks[task_id]
        gf = t.gflops()
        total = sum(x.trials for x in self.tasks)
        text = (f"[{task_id + 1}/{len(self.tasks)}] {t.name}: {t.trials}/{t.max_trials} trials"
                f", best {_us(t.best_overall)} us")
        if gf is not None:
            text += f" ({gf:.1f} GFLOP/s)"
        if t.failed:
            text += f", {t.failed} failed"
        text += (f" | model {_latency_text([x.best_overall for x in self.tasks], self.tasks)}"
                 f", {total}/{self.max_trials_global} trials, "
                 f"{time.perf_counter() - self.start:.0f} s")
        return text

    def update(self, task_id: int) -> None:
        text = self.line(task_id)
        logging.getLogger(ROOT_LOGGER).info("%s", text)
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\x1b[2K" + text)
            self._open_line = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self, title: str = "Tuning summary") -> str:
        """Print (and log) the summary table; return it."""
        table = format_summary(self.tasks, title, time.perf_counter() - self.start)
        logging.getLogger(ROOT_LOGGER).info("\n%s", table)
        if self.enabled:
            if self._open_line:
                self.stream.write("\n")
                self._open_line = False
            self.stream.write(table + "\n")
            self.stream.flush()
        return table


def format_summary(tasks: list[TaskProgress], title: str = "Tuning summary",
                   elapsed: Optional[float] = None) -> str:
    """A markdown table: task, weight, trials, failed, best and default time, GFLOP/s,
    speedup over the default schedule; then the estimated model latency."""
    rows = ["| # | task | weight | trials | failed | best us | default us | GFLOP/s | speedup |",
            "|---|---|---|---|---|---|---|---|---|"]
    for i, t in enumerate(tasks):
        gf, sp = t.gflops(), t.speedup()
        rows.append(f"| {i} | {t.name} | {t.weight:g} | {t.trials} | {t.failed} | "
                    f"{_us(t.best_overall)} | {_us(t.default_sec)} | "
                    f"{'-' if gf is None else f'{gf:.1f}'} | "
                    f"{'-' if sp is None else f'{sp:.2f}x'} |")
    tuned = _latency_text([t.best_overall for t in tasks], tasks)
    default = _latency_text([t.default_sec if t.default_sec is not None else math.inf
                             for t in tasks], tasks)
    foot = f"estimated model latency: tuned {tuned}, default {default}"
    if elapsed is not None:
        foot += f"; {sum(t.trials for t in tasks)} trials in {elapsed:.1f} s"
    return f"{title}\n" + "\n".join(rows) + "\n" + foot


# -- logs -------------------------------------------------------------------------------------
def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80] or "task"


def task_logger(name: str) -> logging.Logger:
    """The logger of task ``name`` (below ``tvm.meta_schedule``, so tune.log gets it too)."""
    return logging.getLogger(f"{ROOT_LOGGER}.task.{_safe(name)}")


def setup_logs(work_dir: Any, tasks: list[tuple[str, logging.Logger]]
               ) -> list[tuple[logging.Logger, logging.Handler]]:
    """File handlers for ``work_dir/logs/tune.log`` and one file per task (``(name,
    logger)``; appended to, so a resumed tuning continues them); returns them for
    :func:`remove_logs`."""
    logs = Path(work_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    out = []
    root = logging.getLogger(ROOT_LOGGER)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)
    handler = logging.FileHandler(logs / "tune.log", encoding="utf-8")
    handler.setFormatter(fmt)
    root.addHandler(handler)
    out.append((root, handler))
    for i, (name, log) in enumerate(tasks):
        handler = logging.FileHandler(logs / f"task_{i:02d}_{_safe(name)}.log", encoding="utf-8")
        handler.setFormatter(fmt)
        log.addHandler(handler)
        out.append((log, handler))
    return out


def remove_logs(handlers: list[tuple[logging.Logger, logging.Handler]]) -> None:
    for log, handler in handlers:
        log.removeHandler(handler)
        handler.close()
