"""Pass instruments: hooks around every pass a :class:`~tvm.ir.transform.PassContext` runs.

::

    timing = PassTimingInstrument()
    with PassContext(instruments=[timing, PrintAfterEachPass(folder="ir_dump")]):
        mod = pipeline(mod)
    print(timing.render())

:class:`PassInstrument` is the base to subclass; :class:`PassTimingInstrument` keeps a timing
table, :class:`PrintAfterEachPass` / :class:`DumpIR` write the module's TVMScript after each
pass (to a stream or to numbered files, to diff the stages).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, TextIO

from .module import IRModule

if TYPE_CHECKING:
    from .transform import PassInfo

__all__ = ["PassInstrument", "PassTimingInstrument", "PrintAfterEachPass", "DumpIR"]


class PassInstrument:
    """Hooks around pass execution; subclass and override what you need.

    ``should_run`` returning False skips the pass (its input is kept).
    """

    @property
    def name(self) -> str:
        return type(self).__name__

    def enter_pass_ctx(self) -> None:
        """Called when a PassContext holding this instrument is entered."""

    def exit_pass_ctx(self) -> None:
        """Called when that PassContext is exited."""

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called just before a pass runs."""

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called with the pass's result just after it ran."""


class PassTimingInstrument(PassInstrument):
    """Times every pass; :meth:`render` prints a table (pass, calls, total ms, share)."""

    def __init__(self) -> None:
        self._starts: list[float] = []
        self.records: dict[str, list[float]] = {}  # name -> [calls, total seconds]
        self._outer_total = 0.0

    def enter_pass_ctx(self) -> None:
        self._starts.clear()

    def exit_pass_ctx(self) -> None:
        self._starts.clear()

    def reset(self) -> None:
        """Forget every timing."""
        self._starts.clear()
        self.records.clear()
        self._outer_total = 0.0

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        self._starts.append(time.perf_counter())

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        if not self._starts:
            return
        elapsed = time.perf_counter() - self._starts.pop()
        entry = self.records.setdefault(info.name, [0, 0.0])
        entry[0] += 1
        entry[1] += elapsed
        if not self._starts:  # an outermost pass: counts towards the total
            self._outer_total += elapsed

    @property
    def timings(self) -> dict[str, tuple[int, float]]:
        """``{pass name: (calls, total seconds)}``."""
        return {k: (int(v[0]), v[1]) for k, v in self.records.items()}

    def render(self) -> str:
        """A text table sorted by total time; share is of the outermost passes' time."""
        rows = sorted(self.records.items(), key=lambda kv: -kv[1][1])
        total = self._outer_total or sum(v[1] for v in self.records.values())
        width = max([len("Pass"), len("Total"), *(len(k) for k in self.records)])
        lines = [f"{'Pass':<{width}}  {'Calls':>6}  {'Total (ms)':>11}  {'Share':>6}"]
        for name, (calls, secs) in rows:
            share = 100.0 * secs / total if total > 0 else 0.0
            lines.append(f"{name:<{width}}  {int(calls):>6}  {secs * 1e3:>11.3f}  {share:>5.1f}%")
        calls = sum(int(v[0]) for v in self.records.values())
        lines.append(
            f"{'Total':<{width}}  {calls:>6}  {total * 1e3:>11.3f}  {100.0 if total else 0.0:>5.1f}%"
        )
        return "\n".join(lines)


def _safe_file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


class PrintAfterEachPass(PassInstrument):
    """Writes the module's TVMScript after every pass.

    With ``folder``: one file per pass, ``000_<PassName>.py``, ``001_<PassName>.py``, ... (the
    numbering restarts each time the PassContext is entered), so the stages can be diffed;
    the files hold the metadata block, so each parses back. Without: prints to ``stream``
    (default ``sys.stdout``) under a ``# After pass`` header, without the metadata block
    unless ``show_meta``. ``passes`` limits the output to the passes of those names.
    """

    def __init__(
        self,
        folder: str | Path | None = None,
        stream: TextIO | None = None,
        show_meta: bool | None = None,
        passes: Iterable[str] | None = None,
    ) -> None:
        self.folder = Path(folder) if folder is not None else None
        self.stream = stream
        self.show_meta = self.folder is not None if show_meta is None else show_meta
        self.passes = None if passes is None else set(passes)
        self.counter = 0
        self.written: list[Path] = []

    def enter_pass_ctx(self) -> None:
        self.counter = 0
        self.written = []
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        if self.passes is not None and info.name not in self.passes:
            return
        text = mod.script(show_meta=self.show_meta)
        header = f"# IR after pass {info.name} (#{self.counter}, opt_level={info.opt_level})\n"
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / f"{self.counter:03d}_{_safe_file_name(info.name)}.py"
            path.write_text(header + text, encoding="utf-8")
            self.written.append(path)
        else:
            stream = self.stream or sys.stdout
            stream.write(header + text)
        self.counter += 1


class DumpIR(PrintAfterEachPass):
    """``DumpIR(folder)``: :class:`PrintAfterEachPass` writing numbered files to ``folder``."""

    def __init__(self, folder: str | Path) -> None:
        super().__init__(folder=folder)
