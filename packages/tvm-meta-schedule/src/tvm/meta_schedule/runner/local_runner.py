"""LocalRunner: time built kernels on this machine, each in the isolated runner server.

Every candidate runs in a :class:`tvm.runtime.runner.ProcessSession` (the C runner server
in a child process): a kernel that segfaults or hangs kills only that child, which is
restarted for the next candidate.  The child is pinned to the measuring cores (see
:mod:`.utils` for the core policy) and runs parallel loops on as many threads as the
kernel's target has ``-num-cores`` (or ``num_threads``).  Timing is TVM's
``time_evaluator`` done inside the child by the timer library (:mod:`.utils`).
"""

from __future__ import annotations

import os
import re
from typing import Any, Optional

import numpy as np

from ..arg_info import TensorInfo, random_inputs
from .runner import CorrectnessCheck, Runner, RunnerFuture, RunnerInput, RunnerResult
from .utils import (TIMER_SYMBOL, available_cores, compare_results, measure_cores,
                    set_thread_affinity, timer_library)

__all__ = ["LocalRunner"]

#: the child's own watchdog ends it this long after the parent's timeout (for when the
#: parent is gone, e.g. a Ray worker killed while a kernel hangs)
_WATCHDOG_GRACE_SEC = 5.0
_NUM_CORES = re.compile(r"(?:^|\s)-num-cores=(\d+)")


def _positive(name: str, value: Any, low: float = 0.0, integer: bool = False) -> None:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < low:
        what = "an int" if integer else "a number"
        raise ValueError(f"LocalRunner: {name} must be {what} >= {low:g}, got {value!r}")


class LocalRunner(Runner):
    """Measures candidates one at a time in an isolated, pinned child process.

    ``timeout_sec``: seconds one candidate may take beyond its planned timing (a warm-up
    call and ``repeat + 1`` rounds of at least ``min_repeat_ms``, the cooldowns); past it
    the child is stopped and the candidate fails.  ``number``: calls per timed round, grown
    until a round lasts ``min_repeat_ms``.  ``repeat``: timed rounds (``run_secs`` has one
    entry per round: seconds per call).  ``cooldown_sec``: pause between rounds.
    ``enable_cpu_cache_flush``: flush the arguments from the CPU caches before every call
    (measures cold-cache time, as a kernel inside a model sees it).  ``num_threads``: the
    threads of the kernel's parallel loops (default: its target's ``-num-cores``, else 1).
    ``core``: the last core measurements run on (default: the highest one this process may
    use); a measurement with n threads uses n consecutive cores ending there.  ``cc``: the
    C compiler for the runner server and the timer.

    :meth:`run` measures before it returns (so a build never runs during a measurement);
    a KeyboardInterrupt stops the child and propagates.  Use as a context manager, or
    :meth:`close` it, to stop the child process at the end.
    """

    #: restart the child after this many loaded libraries (the server holds at most 64)
    MAX_MODULES_PER_SESSION = 30

    def __init__(self, *, timeout_sec: float = 10.0, number: int = 3, repeat: int = 1,
                 min_repeat_ms: float = 100.0, cooldown_sec: float = 0.0,
                 enable_cpu_cache_flush: bool = False, num_threads: Optional[int] = None,
                 core: Optional[int] = None, cc: Optional[str] = None) -> None:
        _positive("timeout_sec", timeout_sec, 0.001)
        _positive("number", number, 1, integer=True)
        _positive("repeat", repeat, 1, integer=True)
        _positive("min_repeat_ms", min_repeat_ms)
        _positive("cooldown_sec", cooldown_sec)
        if num_threads is not None:
            _positive("num_threads", num_threads, 1, integer=True)
            measure_cores(num_threads, core)  # fits on this machine, or a clear error now
        elif core is not None:
            measure_cores(1, core)
        self.timeout_sec = float(timeout_sec)
        self.number = number
        self.repeat = repeat
        self.min_repeat_ms = float(min_repeat_ms)
        self.cooldown_sec = float(cooldown_sec)
        self.enable_cpu_cache_flush = bool(enable_cpu_cache_flush)
        self.num_threads = num_threads
        self.core = core
        self.cc = cc
        self._session: Any = None
        self._session_threads = 0
        self._timer: Any = None
        self._loaded: set[str] = set()

    def describe(self) -> str:
        return (f"LocalRunner(number={self.number}, repeat={self.repeat}, "
                f"min_repeat_ms={self.min_repeat_ms:g}, cores={self.cores()})")

    def cores(self, num_threads: Optional[int] = None) -> list[int]:
        """The cores a measurement with ``num_threads`` threads (default: this runner's,
        else 1) runs on; give them to the builder's ``avoid_cores``."""
        return measure_cores(num_threads or self.num_threads or 1, self.core)

    # ------------------------------------------------------------------ API

    def run(self, inputs: list[RunnerInput]) -> list[RunnerFuture]:
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"LocalRunner.run takes a list of RunnerInput, got "
                            f"{type(inputs).__name__}")
        return [Runner.ready(self.measure(inp)) for inp in inputs]

    def measure(self, inp: RunnerInput) -> RunnerResult:
        """Measure one built kernel now; failures are results, KeyboardInterrupt propagates
        (after the child process is stopped)."""
        if not isinstance(inp, RunnerInput):
            raise TypeError(f"LocalRunner: expected a RunnerInput, got {type(inp).__name__}")
        if inp.device != "cpu":
            return RunnerResult(error_msg=(
                f"LocalRunner measures on the CPU only; device {inp.device!r} needs a runner "
                "with that device's runtime in the measuring process (not implemented yet)"))
        path = os.path.abspath(os.fspath(inp.artifact_path))
        if not os.path.isfile(path):
            return RunnerResult(error_msg=f"no built artifact at {path!r}")
        try:
            return self._measure(inp, path)
        except BaseException:
            self._stop()
            raise

    def make_check(self, artifact_path: str, args_info: list[TensorInfo], *,
                   func_name: str = "main", seed: int = 0, rtol: float = 1e-3,
                   atol: float = 1e-3) -> CorrectnessCheck:
        """A check against a reference kernel (the untuned one): random inputs and every
        argument after one isolated call of ``func_name`` of ``artifact_path``.  Raises
        RuntimeError when the reference itself cannot run."""
        path = os.path.abspath(os.fspath(artifact_path))
        inputs = random_inputs(args_info, seed)
        try:
            session, module = self._load(path)
            symbol = module.get_function(func_name).symbol
            outputs, _ = self._call(session, path, symbol, inputs, repeat=0)
        except (KeyboardInterrupt, SystemExit):
            self._stop()
            raise
        except Exception as err:
            self.close()
            raise RuntimeError(f"LocalRunner.make_check: the reference kernel {func_name!r} "
                               f"of {path!r} did not run: {err}") from err
        expected = [outputs[i] for i in range(len(inputs))]
        return CorrectnessCheck(inputs, expected, rtol, atol)

    def kill(self) -> None:
        """Kill the child process at once (safe from another thread: a measurement under
        way there then ends with an error result)."""
        session = self._session
        if session is not None:
            session.kill()

    def close(self) -> None:
        """Stop the child process (the next measurement starts a new one)."""
        session, self._session = self._session, None
        self._timer = None
        self._loaded.clear()
        if session is not None:
            session.close()

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._stop()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    # ------------------------------------------------------------------ internals

    def _stop(self) -> None:
        self.kill()
        self.close()

    def _session_for(self, threads: int) -> Any:
        from tvm.runtime.runner import ProcessRunner

        if (self._session is not None and self._session.alive and self._session_threads ==
                threads and len(self._loaded) < self.MAX_MODULES_PER_SESSION):
            return self._session
        self.close()
        timing = ((self.repeat + 1) * self.min_repeat_ms / 1000.0
                  + (self.repeat - 1) * self.cooldown_sec)
        runner = ProcessRunner(cc=self.cc, num_threads=threads,
                               timeout=self.timeout_sec + timing)
        old = set_thread_affinity(measure_cores(threads, self.core))
        try:
            session = runner.session()
        finally:
            if old is not None:
                os.sched_setaffinity(0, old)
        try:
            timer = session.load_module(timer_library(self.cc))
        except BaseException:
            session.close()
            raise
        self._session, self._session_threads, self._timer = session, threads, timer
        return session

    def _load(self, path: str) -> tuple[Any, Any]:
        threads = self.num_threads or self._session_threads or 1
        if path in self._loaded:  # the server would keep the old code of a rewritten file
            self.close()
        session = self._session_for(threads)
        module = session.load_module(path)
        self._loaded.add(path)
        if self.num_threads is None:
            found = _NUM_CORES.search(str(getattr(module, "target", "")))
            want = int(found.group(1)) if found and int(found.group(1)) > 0 else 1
            want = min(want, _max_threads(self.core))
            if want != threads:
                self.close()
                session = self._session_for(want)
                module = session.load_module(path)
                self._loaded.add(path)
        return session, module

    def _call(self, session: Any, path: str, symbol: str, args: list[np.ndarray],
              repeat: int) -> tuple[dict[int, np.ndarray], list[float]]:
        """One timer request: ``repeat`` 0 calls the kernel once and returns every argument
        after it; else the seconds per call of each round."""
        secs = np.zeros(max(repeat, 1), dtype="float64")
        head = [_u8(path), _u8(symbol), self.number, repeat, float(self.min_repeat_ms),
                float(self.cooldown_sec), int(self.enable_cpu_cache_flush),
                session.runner.timeout + _WATCHDOG_GRACE_SEC, secs]
        wanted = [len(head) + i for i in range(len(args))] if repeat == 0 else [len(head) - 1]
        res = session.run(self._timer, TIMER_SYMBOL, head + list(args), outputs=wanted)
        if repeat == 0:
            return {i - len(head): v for i, v in res.outputs.items()}, []
        return {}, [float(t) for t in res.outputs[len(head) - 1][:repeat]]

    def _measure(self, inp: RunnerInput, path: str) -> RunnerResult:
        from tvm.runtime.error import KernelError, ModuleLoadError
        from tvm.runtime.runner import RunnerError, RunnerTimeoutError, RunnerUnavailableError

        stage = "loading the artifact"
        try:
            session, module = self._load(path)
            if inp.func_name not in module.function_names:
                return RunnerResult(error_msg=(
                    f"the artifact has no function {inp.func_name!r} (it has "
                    f"{module.function_names})"))
            fn = module.get_function(inp.func_name)
            args = _arguments(inp)
            if inp.check is not None:
                stage = "the checked call"
                outputs, _ = self._call(session, path, fn.symbol, args, repeat=0)
                names = [p.name for p in fn.params] if fn.params else []
                wrong = compare_results(outputs, inp.check.expected, inp.check.rtol,
                                        inp.check.atol, names)
                if wrong:
                    return RunnerResult(error_msg=wrong)
            stage = "timing"
            _, run_secs = self._call(session, path, fn.symbol, args, repeat=self.repeat)
            return RunnerResult(run_secs=run_secs)
        except RunnerTimeoutError:
            self.close()
            return RunnerResult(error_msg=(
                f"timeout during {stage}: no result within {self.timeout_sec:g} s beyond the "
                "planned timing (the measuring process was stopped)"))
        except (KernelError, ModuleLoadError) as err:
            what = "cannot load the artifact" if isinstance(err, ModuleLoadError) else \
                "the kernel failed"
            return RunnerResult(error_msg=f"{what} during {stage}: {err}")
        except RunnerUnavailableError as err:
            self.close()
            return RunnerResult(error_msg=f"cannot measure here: {err}")
        except RunnerError as err:
            self.close()
            return RunnerResult(error_msg=f"the kernel crashed during {stage}: {err}")
        except Exception as err:  # noqa: BLE001 - one candidate must not stop the tuning
            self.close()
            return RunnerResult(error_msg=f"measuring failed during {stage}: "
                                          f"{type(err).__name__}: {err}")


def _max_threads(last_core: Optional[int]) -> int:
    """How many measuring threads fit in the cores up to ``last_core``."""
    cores = available_cores()
    return cores.index(last_core) + 1 if last_core in cores else len(cores)


def _u8(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def _arguments(inp: RunnerInput) -> list[np.ndarray]:
    """The kernel's arguments: the check's inputs, else reproducible random ones."""
    if inp.check is not None:
        args = [np.ascontiguousarray(a) for a in inp.check.inputs]
        if len(args) != len(inp.args_info):
            raise ValueError(f"the check gives {len(args)} inputs for a kernel of "
                             f"{len(inp.args_info)} arguments")
        return args
    return random_inputs(inp.args_info)
