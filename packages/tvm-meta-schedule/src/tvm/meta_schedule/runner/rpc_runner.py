"""RPCRunner: measure built kernels on a remote device through ``tvm.runtime.rpc``.

Each candidate's library is uploaded to an RPC server (``python -m tvm.exec.rpc_server`` on
the board, or a server of ``device_key`` that a tracker assigns) and measured there in the
server's runner process: one checked call whose results are compared with the reference,
then ``repeat`` timed rounds of ``number`` calls, ``number`` grown until a round lasts
``min_repeat_ms`` (the timing of :class:`~tvm.runtime.runner.ProcessSession.run`, done on
the device).  One RPC session serves many candidates; it is opened again after a failure.

The kernel's own time limit is the server's (``rpc_server --timeout``); ``timeout_sec``
here bounds how long this side waits for an answer beyond the planned timing.
"""

from __future__ import annotations

import os
import time
from typing import Any, Optional

from .local_runner import _arguments, _positive
from .runner import Runner, RunnerFuture, RunnerInput, RunnerResult
from .utils import compare_results

__all__ = ["RPCRunner"]


class RPCRunner(Runner):
    """Measures candidates one at a time on an RPC server.

    ``host``/``port`` (and ``key``, the server's shared key) name the server; or
    ``tracker=(host, port)`` with ``device_key`` (``tracker_key``: the tracker's key) asks
    a tracker for one.  ``number``, ``repeat``, ``min_repeat_ms``, ``cooldown_sec``: as for
    :class:`~.local_runner.LocalRunner`.  Use as a context manager, or :meth:`close` it, to
    end the session (which frees the server for other clients of the tracker).
    """

    #: reconnect after this many loaded libraries (the server's runner holds at most 64)
    MAX_MODULES_PER_SESSION = 30

    def __init__(self, host: Optional[str] = None, port: Optional[int] = None, *,
                 key: Optional[str] = None, tracker: Optional[tuple[str, int]] = None,
                 device_key: Optional[str] = None, tracker_key: Optional[str] = None,
                 timeout_sec: float = 10.0, number: int = 3, repeat: int = 1,
                 min_repeat_ms: float = 100.0, cooldown_sec: float = 0.0,
                 request_timeout: float = 60.0) -> None:
        from tvm.runtime.rpc import RPCRunner as _Transport

        _positive("timeout_sec", timeout_sec, 0.001)
        _positive("number", number, 1, integer=True)
        _positive("repeat", repeat, 1, integer=True)
        _positive("min_repeat_ms", min_repeat_ms)
        _positive("cooldown_sec", cooldown_sec)
        self.timeout_sec = float(timeout_sec)
        self.number = number
        self.repeat = repeat
        self.min_repeat_ms = float(min_repeat_ms)
        self.cooldown_sec = float(cooldown_sec)
        timing = (repeat + 1) * min_repeat_ms / 1000.0 + repeat * cooldown_sec
        self.transport = _Transport(host or "", port or 0, key=key, tracker=tracker,
                                    device_key=device_key, tracker_key=tracker_key,
                                    request_timeout=request_timeout,
                                    timeout=self.timeout_sec + timing)
        self._session: Any = None
        self._loaded = 0

    def describe(self) -> str:
        return (f"RPCRunner({self.transport.describe()}, number={self.number}, "
                f"repeat={self.repeat}, min_repeat_ms={self.min_repeat_ms:g})")

    # ------------------------------------------------------------------ API

    def run(self, inputs: list[RunnerInput]) -> list[RunnerFuture]:
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"RPCRunner.run takes a list of RunnerInput, got "
                            f"{type(inputs).__name__}")
        return [Runner.ready(self.measure(inp)) for inp in inputs]

    def measure(self, inp: RunnerInput) -> RunnerResult:
        """Measure one built kernel now; failures are results."""
        if not isinstance(inp, RunnerInput):
            raise TypeError(f"RPCRunner: expected a RunnerInput, got {type(inp).__name__}")
        if inp.device != "cpu":
            return RunnerResult(error_msg=(
                f"RPCRunner measures on the server's CPU only; device {inp.device!r} is not "
                "served by the RPC server's runner"))
        path = os.path.abspath(os.fspath(inp.artifact_path))
        if not os.path.isfile(path):
            return RunnerResult(error_msg=f"no built artifact at {path!r}")
        try:
            return self._measure(inp, path)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the RPC session (the next measurement opens a new one)."""
        session, self._session = self._session, None
        self._loaded = 0
        if session is not None:
            session.close()

    def __enter__(self) -> RPCRunner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    # ------------------------------------------------------------------ internals

    def _session_for(self) -> Any:
        if (self._session is None or not self._session.alive
                or self._loaded >= self.MAX_MODULES_PER_SESSION):
            self.close()
            self._session = self.transport.session()
        return self._session

    def _time(self, session: Any, module: Any, func: str, args: list[Any]) -> list[float]:
        """Seconds per call of ``repeat`` rounds, ``number`` grown to ``min_repeat_ms``."""
        number = self.number
        want = self.min_repeat_ms / 1000.0
        while True:
            (per_call,) = session.run(module, func, args, outputs=[], number=number,
                                      repeat=1).times
            if per_call * number >= want or number >= 1 << 30:
                break
            grown = int(want / per_call * 1.1) + 1 if per_call > 0 else number * 10
            number = min(max(grown, number * 2), 1 << 30)
        if self.cooldown_sec <= 0:
            return list(session.run(module, func, args, outputs=[], number=number,
                                    repeat=self.repeat).times)
        secs = []
        for r in range(self.repeat):
            if r:
                time.sleep(self.cooldown_sec)
            secs += session.run(module, func, args, outputs=[], number=number,
                                repeat=1).times
        return secs

    def _measure(self, inp: RunnerInput, path: str) -> RunnerResult:
        from tvm.runtime.error import KernelError, ModuleLoadError
        from tvm.runtime.rpc import RPCError
        from tvm.runtime.runner import RunnerError, RunnerTimeoutError

        stage = "connecting"
        try:
            session = self._session_for()
            stage = "loading the artifact"
            module = session.load_module(path)
            self._loaded += 1
            if inp.func_name not in module.function_names:
                return RunnerResult(error_msg=(
                    f"the artifact has no function {inp.func_name!r} (it has "
                    f"{module.function_names})"))
            args = _arguments(inp)
            if inp.check is not None:
                stage = "the checked call"
                res = session.run(module, inp.func_name, args)
                fn = module.get_function(inp.func_name)
                names = [p.name for p in fn.params] if fn.params else []
                wrong = compare_results(res.outputs, inp.check.expected, inp.check.rtol,
                                        inp.check.atol, names)
                if wrong:
                    return RunnerResult(error_msg=wrong)
            stage = "timing"
            return RunnerResult(run_secs=self._time(session, module, inp.func_name, args))
        except RunnerTimeoutError as err:
            self.close()
            return RunnerResult(error_msg=f"timeout during {stage}: {err}")
        except (KernelError, ModuleLoadError) as err:
            what = "cannot load the artifact" if isinstance(err, ModuleLoadError) else \
                "the kernel failed"
            return RunnerResult(error_msg=f"{what} during {stage}: {err}")
        except (RPCError, TimeoutError) as err:
            self.close()
            return RunnerResult(error_msg=f"rpc failed during {stage}: {err}")
        except RunnerError as err:
            self.close()
            return RunnerResult(error_msg=f"the kernel crashed during {stage}: {err}")
        except Exception as err:  # noqa: BLE001 - one candidate must not stop the tuning
            self.close()
            return RunnerResult(error_msg=f"measuring failed during {stage}: "
                                          f"{type(err).__name__}: {err}")
