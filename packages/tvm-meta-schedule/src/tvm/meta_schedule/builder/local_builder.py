"""LocalBuilder: build candidates into shared libraries in a pool of worker processes.

Each input travels to a worker as tvm.ffi JSON (the IRModule and the Target), where
``f_build(mod, target)`` compiles it and ``f_export(module)`` writes the library.  The pool
is a few ``spawn``-ed :mod:`multiprocessing` processes, one input at a time each, so that
a worker that crashes (a segfault in code generation) or overruns ``timeout_sec`` is
known exactly: that input fails with a readable message, the worker is replaced, and the
other inputs are not disturbed (a ``concurrent.futures`` pool would break as a whole and
not say which input killed it).  Workers are pinned to the cores that do not measure
(:func:`tvm.meta_schedule.runner.utils.build_cores`) and ignore SIGINT: a Ctrl-C reaches
this process, which stops every worker and re-raises.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import tempfile
import time
import traceback
import weakref
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Optional, Sequence

from .builder import Builder, BuilderInput, BuilderResult

__all__ = ["LocalBuilder", "default_build", "default_export", "serialize_input",
           "build_one"]


# ---------------------------------------------------------------------------- in the worker


def default_build(mod: Any, target: Any) -> Any:
    """``tvm.tir.build`` of ``mod`` as scheduled: its PrimFuncs are marked
    ``tir.is_scheduled`` so that the target's default rules do not reschedule them."""
    from tvm.tir import PrimFunc
    from tvm.tir.build import build
    from tvm.tir.schedule.rules.rule import SCHEDULED_ATTR

    marked = {gv: f.with_attr(SCHEDULED_ATTR, True) for gv, f in mod.items()
              if isinstance(f, PrimFunc) and not f.attrs.get(SCHEDULED_ATTR)}
    if marked:
        mod = mod.with_functions(marked)
    return build(mod, target)


def default_export(module: Any) -> str:
    """Export ``module`` as ``kernel.so`` in a new temporary directory; its path."""
    folder = tempfile.mkdtemp(prefix="tvm-ms-artifact-")
    path = os.path.join(folder, "kernel.so")
    module.export_library(path)
    return path


def serialize_input(inp: BuilderInput) -> tuple[str, str]:
    """``(mod, target)`` of ``inp`` as tvm.ffi JSON text (a target string is parsed
    first, so a bad one fails here with its own message)."""
    from tvm.ffi.serialization import to_json
    from tvm.ir.module import IRModule
    from tvm.ir.target import Target

    if not isinstance(inp, BuilderInput):
        raise TypeError(f"expected a BuilderInput, got {type(inp).__name__}")
    if not isinstance(inp.mod, IRModule):
        raise TypeError(f"BuilderInput.mod must be an IRModule, got {type(inp.mod).__name__}")
    target = inp.target if isinstance(inp.target, Target) else Target(inp.target)
    return to_json(inp.mod), to_json(target)


def build_one(mod_json: str, target_json: str, f_build: Callable[[Any, Any], Any],
              f_export: Callable[[Any], str]) -> str:
    """Deserialize, build and export one input; the artifact's path."""
    from tvm.ffi.serialization import from_json

    mod, target = from_json(mod_json), from_json(target_json)
    path = f_export(f_build(mod, target))
    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        raise RuntimeError(f"f_export returned {path!r}, which is not a file")
    return os.fspath(path)


def describe_error(err: BaseException, limit: int = 12) -> str:
    """``Type: message`` and the innermost frames of the traceback."""
    frames = traceback.format_exception(type(err), err, err.__traceback__)
    tail = "".join(frames[-limit:]).rstrip()
    return f"{type(err).__name__}: {err}\n{tail}"


def _worker_main(conn: Connection, cores: Sequence[int], tmpdir: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    if cores:
        try:
            os.sched_setaffinity(0, set(cores))
        except (AttributeError, OSError):
            pass
    os.environ["TMPDIR"] = tmpdir
    tempfile.tempdir = tmpdir
    try:  # import before saying ready, so that no build's time pays for it
        import tvm.ffi.serialization  # noqa: F401
        import tvm.tir.build  # noqa: F401
    except Exception as err:  # noqa: BLE001
        conn.send(("error", describe_error(err)))
        return
    conn.send(("ready", None))
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        mod_json, target_json, f_build, f_export = job
        try:
            conn.send((build_one(mod_json, target_json, f_build, f_export), None))
        except Exception as err:  # noqa: BLE001 - reported to the parent
            conn.send((None, f"build failed: {describe_error(err)}"))


# ---------------------------------------------------------------------------- the pool


class _StartError(Exception):
    """A build worker could not start."""


class _Worker:
    #: seconds a new worker may take to import the compiler
    START_TIMEOUT = 120.0

    def __init__(self, ctx: Any, cores: Sequence[int], tmpdir: str) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, list(cores), tmpdir),
                                daemon=True, name="tvm-ms-builder")
        self.proc.start()
        child.close()
        self.ready = False
        self.job: Optional[int] = None
        self.started = 0.0

    def wait_ready(self) -> None:
        """Wait for the worker's first message; raise :class:`_StartError` if it fails."""
        if self.ready:
            return
        ok = wait([self.conn, self.proc.sentinel], timeout=self.START_TIMEOUT)
        try:
            if self.conn not in ok or not self.conn.poll():
                raise EOFError
            kind, text = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(timeout=1)
            reason = "did not start in time" if self.proc.exitcode is None else \
                _exit_reason(self.proc.exitcode)
            self.kill()
            raise _StartError(
                f"a build worker could not start: it {reason} (workers are spawned and "
                "import the main script again: guard a script's code with "
                "`if __name__ == '__main__':`)") from None
        if kind != "ready":
            self.kill()
            raise _StartError(f"a build worker could not start: {text}")
        self.ready = True

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(timeout=2)
        self.kill()


def _exit_reason(code: Optional[int]) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def _stop_all(workers: list[_Worker]) -> None:
    for w in workers:
        w.kill()
    workers.clear()


class LocalBuilder(Builder):
    """Builds inputs in parallel worker processes; every failure is a result.

    ``max_workers``: worker processes (default: the cores that builds may use, see
    ``avoid_cores``).  ``timeout_sec``: seconds one build may take; past it the worker is
    killed and the build fails.  ``f_build(mod, target) -> Module`` and
    ``f_export(module) -> path`` run in the workers, so they must be module-level functions
    (sent by reference).  ``avoid_cores``: the cores the runner measures on (default: the
    default LocalRunner's, i.e. the highest core); workers run on the others when any
    remain.  Artifacts are written under ``work_dir`` (default: a temporary directory of
    this builder, removed by :meth:`close` or when the builder is garbage-collected; a
    given one is kept).
    """

    def __init__(self, *, max_workers: Optional[int] = None, timeout_sec: float = 30.0,
                 f_build: Callable[[Any, Any], Any] = default_build,
                 f_export: Callable[[Any], str] = default_export,
                 avoid_cores: Optional[Sequence[int]] = None,
                 work_dir: Optional[str] = None) -> None:
        from ..runner.utils import build_cores, measure_cores

        if isinstance(timeout_sec, bool) or not isinstance(timeout_sec, (int, float)) \
                or timeout_sec <= 0:
            raise ValueError(f"LocalBuilder: timeout_sec must be a number > 0, got "
                             f"{timeout_sec!r}")
        if not callable(f_build) or not callable(f_export):
            raise TypeError("LocalBuilder: f_build and f_export must be callables")
        self.cores = build_cores(measure_cores() if avoid_cores is None else avoid_cores)
        if max_workers is None:
            max_workers = len(self.cores)
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValueError(f"LocalBuilder: max_workers must be an int >= 1, got "
                             f"{max_workers!r}")
        self.max_workers = max_workers
        self.timeout_sec = float(timeout_sec)
        self.f_build = f_build
        self.f_export = f_export
        if work_dir is None:
            self.work_dir, owned = tempfile.mkdtemp(prefix="tvm-ms-build-"), True
        else:
            os.makedirs(work_dir, exist_ok=True)
            self.work_dir, owned = os.path.abspath(work_dir), False
        self._ctx = multiprocessing.get_context("spawn")
        self._idle: list[_Worker] = []
        self._finalizer = weakref.finalize(self, LocalBuilder._cleanup, self._idle,
                                           self.work_dir if owned else None)

    @staticmethod
    def _cleanup(workers: list[_Worker], work_dir: Optional[str]) -> None:
        for w in workers:
            w.stop()
        workers.clear()
        if work_dir is not None:
            shutil.rmtree(work_dir, ignore_errors=True)

    def close(self) -> None:
        """Stop the workers and remove the artifacts."""
        self._finalizer()

    def __enter__(self) -> LocalBuilder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"LocalBuilder(max_workers={self.max_workers}, timeout_sec="
                f"{self.timeout_sec:g}, cores={self.cores})")

    def build(self, inputs: list[BuilderInput]) -> list[BuilderResult]:
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"LocalBuilder.build takes a list of BuilderInput, got "
                            f"{type(inputs).__name__}")
        sent: list[Any] = []
        for inp in inputs:
            try:
                sent.append(serialize_input(inp))
            except Exception as err:  # noqa: BLE001
                sent.append(BuilderResult(error_msg=f"invalid input: {err}"))
        return self.build_serialized(sent)

    def build_serialized(self, inputs: Sequence[Any]) -> list[BuilderResult]:
        """:meth:`build` of inputs already made by :func:`serialize_input` (an item that
        is a BuilderResult already is returned as it is)."""
        if not self._finalizer.alive:
            raise RuntimeError("LocalBuilder: build() after close()")
        results: list[Optional[BuilderResult]] = [None] * len(inputs)
        jobs: list[tuple[int, tuple]] = []
        for i, item in enumerate(inputs):
            if isinstance(item, BuilderResult):
                results[i] = item
            else:
                mod_json, target_json = item
                jobs.append((i, (mod_json, target_json, self.f_build, self.f_export)))
        busy: list[_Worker] = []
        try:
            self._run(jobs, busy, results)
        except BaseException:  # KeyboardInterrupt: no worker may outlive this call
            _stop_all(busy)
            _stop_all(self._idle)
            raise
        return [r if r is not None else BuilderResult(error_msg="build not run")
                for r in results]

    def _start_workers(self, count: int) -> None:
        """Have ``count`` idle workers (new ones start in parallel)."""
        new = [_Worker(self._ctx, self.cores, self.work_dir)
               for _ in range(count - len(self._idle))]
        self._idle.extend(new)
        for w in new:
            try:
                w.wait_ready()
            except _StartError:
                self._idle.remove(w)

    def _take_worker(self) -> _Worker:
        while self._idle:
            w = self._idle.pop()
            if w.proc.is_alive():
                return w
            w.kill()
        w = _Worker(self._ctx, self.cores, self.work_dir)
        w.wait_ready()
        return w

    def _run(self, jobs: list[tuple[int, tuple]], busy: list[_Worker],
             results: list[Optional[BuilderResult]]) -> None:
        pending = list(reversed(jobs))
        retried: set[int] = set()
        self._start_workers(min(self.max_workers, len(jobs)))
        while pending or busy:
            while pending and len(busy) < self.max_workers:
                index, job = pending.pop()
                try:
                    w = self._take_worker()
                except _StartError as err:
                    results[index] = BuilderResult(error_msg=str(err))
                    continue
                try:
                    w.conn.send(job)
                except Exception as err:  # noqa: BLE001 - e.g. f_build cannot be pickled
                    if not w.proc.is_alive() and index not in retried:  # died while idle
                        w.kill()
                        retried.add(index)
                        pending.append((index, job))
                        continue
                    results[index] = BuilderResult(error_msg=(
                        f"cannot send the input to a build worker: {type(err).__name__}: "
                        f"{err} (f_build and f_export must be module-level functions)"))
                    self._idle.append(w)
                    continue
                w.job, w.started = index, time.monotonic()
                busy.append(w)
            if not busy:
                continue
            now = time.monotonic()
            left = min(w.started + self.timeout_sec - now for w in busy)
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy],
                         timeout=max(left, 0.0))
            now = time.monotonic()
            for w in list(busy):
                if w.conn in ready or w.proc.sentinel in ready:
                    self._collect(w, busy, results)
                elif now >= w.started + self.timeout_sec:
                    busy.remove(w)
                    w.kill()
                    results[w.job] = BuilderResult(error_msg=(
                        f"build timed out after {self.timeout_sec:g} s (the build worker "
                        "was stopped)"))

    def _collect(self, w: _Worker, busy: list[_Worker],
                 results: list[Optional[BuilderResult]]) -> None:
        busy.remove(w)
        try:
            if not w.conn.poll():
                raise EOFError
            path, error = w.conn.recv()
        except (EOFError, OSError):
            w.proc.join(timeout=5)
            reason = _exit_reason(w.proc.exitcode)
            w.kill()
            results[w.job] = BuilderResult(error_msg=(
                f"the build worker died ({reason}) while building this input (a crash in "
                "code generation); the worker was replaced"))
            return
        results[w.job] = BuilderResult(artifact_path=path) if error is None else \
            BuilderResult(error_msg=error)
        w.job = None
        self._idle.append(w)
