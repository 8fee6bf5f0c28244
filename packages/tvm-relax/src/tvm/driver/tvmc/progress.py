"""What ``tvmc`` shows while it works: one status line per stage on stderr.

On a terminal the line is redrawn in place ten times a second with a spinner, the seconds
elapsed and what the stage is doing now (for a compilation: the pass that runs and how many
have run, from :class:`PassProgress`); elsewhere (a pipe, a CI log) each stage prints one
line when it ends. ``quiet`` prints nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Optional, TextIO

from tvm.ir.instrument import PassInstrument

__all__ = ["Progress", "PassProgress"]

_SPINNER = "|/-\\"


class Progress:
    """Stage lines on ``stream`` (default stderr)."""

    def __init__(self, stream: Optional[TextIO] = None, quiet: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.live = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self._detail = ""
        self._lock = threading.Lock()

    def update(self, detail: str) -> None:
        """What the current stage is doing (shown on a terminal)."""
        with self._lock:
            self._detail = detail

    @contextmanager
    def stage(self, title: str) -> Iterator[Progress]:
        """``with progress.stage("compiling for llvm"):`` — one status line for the block."""
        if self.quiet:
            yield self
            return
        start = time.perf_counter()
        self._detail = ""
        stop = threading.Event()
        painter = None
        if self.live:
            painter = threading.Thread(target=self._paint, args=(title, start, stop), daemon=True)
            painter.start()
        ok = False
        try:
            yield self
            ok = True
        finally:
            stop.set()
            if painter is not None:
                painter.join()
            elapsed = time.perf_counter() - start
            status = "done" if ok else "failed"
            end = "\r\033[K" if self.live else ""
            self.stream.write(f"{end}{title} ... {status} ({elapsed:.2f} s)\n")
            self.stream.flush()

    def _paint(self, title: str, start: float, stop: threading.Event) -> None:
        tick = 0
        while not stop.wait(0.1):
            with self._lock:
                detail = self._detail
            elapsed = time.perf_counter() - start
            line = f"{_SPINNER[tick % 4]} {title} ({elapsed:.1f} s)"
            if detail:
                line += f": {detail}"
            self.stream.write("\r\033[K" + line[:160])
            self.stream.flush()
            tick += 1


class PassProgress(PassInstrument):
    """Reports the pass that runs (and how many have run) to a :class:`Progress`."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.count = 0
        self.seen: dict[str, None] = {}  # the names of the passes that ran, in order

    def run_before_pass(self, mod, info) -> None:  # noqa: ANN001 - PassInstrument hook
        self.count += 1
        self.seen.setdefault(info.name)
        self.progress.update(f"pass {self.count}: {info.name}")
