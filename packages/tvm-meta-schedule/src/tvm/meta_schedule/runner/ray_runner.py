"""RayRunner: measure on the nodes of a Ray cluster that carry a measuring resource.

Each candidate becomes a Ray task that carries the artifact's *bytes* (the measuring node
need not share a file system with the driver) and asks for one unit of a custom resource,
``tvm_measure`` by default.  A node offers it when started with, e.g.::

    ray start --address=HEAD:6379 --num-cpus=0 --resources='{"tvm_measure": 1}'

(``--num-cpus=0``: no build task ever lands on a measuring machine; ``1`` unit: one
measurement at a time there).  ``node_ip=`` instead pins every measurement to that node
(through its ``node:<ip>`` resource, which also has one unit).  On the node the task
measures exactly as :class:`~.local_runner.LocalRunner` does: in the isolated runner
server, pinned to that node's measuring cores; the runner stays alive in the Ray worker
process between tasks.

``ray`` is imported only when a RayRunner is made (the ``tvm-meta-schedule[ray]`` extra).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from typing import Any, Callable, Optional

from .runner import Runner, RunnerFuture, RunnerInput, RunnerResult

__all__ = ["RayRunner", "import_ray", "connect_ray"]


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError that names the extra to install."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            "the Ray builder and runner need ray: pip install 'tvm-meta-schedule[ray]' "
            f"({err})") from None
    return ray


def connect_ray(address: Optional[str], init_kwargs: Optional[dict[str, Any]]) -> Any:
    """``ray``, connected: the existing connection, else ``ray.init(address=address,
    **init_kwargs)`` (``address`` None: a local cluster, unless ``$RAY_ADDRESS`` says
    otherwise)."""
    ray = import_ray()
    if not ray.is_initialized():
        ray.init(address=address, **dict(init_kwargs or {}))
    return ray


_REMOTE: dict[Callable[..., Any], Any] = {}


def remote_task(ray: Any, fn: Callable[..., Any]) -> Any:
    """``fn`` as a Ray remote function (made once per function; never retried: a task that
    failed on its node is a failed candidate, not something to run again)."""
    task = _REMOTE.get(fn)
    if task is None:
        task = _REMOTE[fn] = ray.remote(max_retries=0)(fn)
    return task


def ray_error(ray: Any, what: str, err: BaseException) -> str:
    """A one-paragraph message for a Ray failure (a task's own traceback is cut short)."""
    if isinstance(err, ray.exceptions.TaskCancelledError):
        return f"{what} on Ray was cancelled"
    text = str(err).strip()
    lines = text.splitlines()
    if len(lines) > 12:
        text = "\n".join(lines[:3] + ["..."] + lines[-8:])
    return f"{what} on Ray failed: {type(err).__name__}: {text}"


# ---------------------------------------------------------------------------- on the node

_NODE_RUNNERS: dict[tuple, Any] = {}


def _allow_cancel() -> None:
    """Ray cancels a running task by simulating SIGINT in the worker's main thread, which
    does nothing while SIGINT is ignored (a node started in the background by a
    non-interactive shell inherits that): restore Python's handler there."""
    import signal

    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def measure_bytes(artifact: bytes, inp: RunnerInput, options: dict[str, Any]) -> RunnerResult:
    """Measure ``artifact`` (the library's bytes) on this machine with a LocalRunner made
    from ``options`` (kept for the next call with the same options)."""
    from .local_runner import LocalRunner

    _allow_cancel()
    key = tuple(sorted(options.items()))
    runner = _NODE_RUNNERS.get(key)
    if runner is None:
        runner = _NODE_RUNNERS[key] = LocalRunner(**options)
    folder = tempfile.mkdtemp(prefix="tvm-ms-ray-artifact-")
    try:
        path = os.path.join(folder, "kernel.so")
        with open(path, "wb") as f:
            f.write(artifact)
        local = RunnerInput(path, inp.device, inp.args_info, inp.check, inp.func_name)
        # Ray cancels a task by raising KeyboardInterrupt in its thread, which happens only
        # between bytecodes: wait here in short steps, so that a cancel stops the child
        # at once instead of after the timeout
        done: list[RunnerResult] = []
        worker = threading.Thread(target=lambda: done.append(runner.measure(local)),
                                  daemon=True, name="tvm-ms-measure")
        worker.start()
        try:
            while worker.is_alive():
                worker.join(0.05)
        except BaseException:
            runner.kill()
            worker.join(10)
            runner.close()
            raise
        if not done:
            return RunnerResult(error_msg="measuring failed on the node (see its log)")
        return done[0]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------- the driver


class _RayFuture(RunnerFuture):
    def __init__(self, ray: Any, ref: Any, batch: list[Any]) -> None:
        self._ray, self._ref, self._batch = ray, ref, batch
        self._value: Optional[RunnerResult] = None

    def done(self) -> bool:
        if self._value is not None:
            return True
        ready, _ = self._ray.wait([self._ref], timeout=0)
        return bool(ready)

    def result(self) -> RunnerResult:
        if self._value is None:
            try:
                value = self._ray.get(self._ref)
            except KeyboardInterrupt:  # stop the whole batch on the cluster
                for ref in self._batch:
                    self._ray.cancel(ref)
                raise
            except self._ray.exceptions.RayError as err:
                value = RunnerResult(error_msg=ray_error(self._ray, "measuring", err))
            self._value = value
        return self._value


class RayRunner(Runner):
    """Measures candidates in Ray tasks on the nodes that have ``resources``.

    ``address``: the cluster for ``ray.init`` (used only when this process is not
    connected yet; ``init_kwargs`` go with it).  ``resources``: what each measurement asks
    for (default ``{"tvm_measure": 1}``); ``node_ip``: measure on that node only.  The
    other options are :class:`~.local_runner.LocalRunner`'s and apply on the node.
    :meth:`run` returns futures at once; :meth:`RunnerFuture.result` waits (a Ctrl-C there
    cancels the measurement and propagates).
    """

    def __init__(self, *, address: Optional[str] = None,
                 init_kwargs: Optional[dict[str, Any]] = None,
                 resources: Optional[dict[str, float]] = None, node_ip: Optional[str] = None,
                 timeout_sec: float = 10.0, number: int = 3, repeat: int = 1,
                 min_repeat_ms: float = 100.0, cooldown_sec: float = 0.0,
                 enable_cpu_cache_flush: bool = False, num_threads: Optional[int] = None,
                 core: Optional[int] = None) -> None:
        from .local_runner import LocalRunner

        if resources is not None and node_ip is not None:
            raise ValueError("RayRunner: give resources= or node_ip=, not both")
        self.options = dict(timeout_sec=timeout_sec, number=number, repeat=repeat,
                            min_repeat_ms=min_repeat_ms, cooldown_sec=cooldown_sec,
                            enable_cpu_cache_flush=enable_cpu_cache_flush,
                            num_threads=num_threads)
        LocalRunner(**self.options)  # the options are checked here, not on a node
        self.options["core"] = core  # a core of the measuring node: checked there
        if node_ip is not None:
            resources = {f"node:{node_ip}": 1.0}
        self.resources = dict(resources if resources is not None else {"tvm_measure": 1.0})
        self._ray = connect_ray(address, init_kwargs)

    def describe(self) -> str:
        return f"RayRunner(resources={self.resources}, {self.options})"

    def run(self, inputs: list[RunnerInput]) -> list[RunnerFuture]:
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"RayRunner.run takes a list of RunnerInput, got "
                            f"{type(inputs).__name__}")
        missing = self._missing_resources()
        futures: list[RunnerFuture] = []
        batch: list[Any] = []
        task = remote_task(self._ray, measure_bytes).options(num_cpus=0, resources=self.resources)
        for inp in inputs:
            if not isinstance(inp, RunnerInput):
                raise TypeError(f"RayRunner: expected a RunnerInput, got {type(inp).__name__}")
            if missing:
                futures.append(Runner.ready(RunnerResult(error_msg=missing)))
                continue
            try:
                with open(inp.artifact_path, "rb") as f:
                    artifact = f.read()
            except OSError as err:
                futures.append(Runner.ready(RunnerResult(
                    error_msg=f"cannot read the built artifact: {err}")))
                continue
            batch.append(task.remote(artifact, inp, self.options))
            futures.append(_RayFuture(self._ray, batch[-1], batch))
        return futures

    def _missing_resources(self) -> Optional[str]:
        """Why no node can take a measurement, or None."""
        have = self._ray.cluster_resources()
        lacking = {k: v for k, v in self.resources.items() if have.get(k, 0) < v}
        if not lacking:
            return None
        return (f"no node of the Ray cluster offers {lacking} for measuring (the cluster has "
                f"{sorted(have)}); start a measuring node with ray start --resources="
                "'{\"tvm_measure\": 1}', or pass resources= / node_ip=")
