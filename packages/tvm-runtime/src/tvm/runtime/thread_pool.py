"""The runtime thread pool behind ``__TVMBackendParallelLaunch``.

A kernel outlines the body of a parallel loop into a C lambda
``int32_t f(int32_t task_id, int32_t num_task, void* cdata)`` and calls
``__TVMBackendParallelLaunch(f, cdata, num_task)``.  The runtime runs task 0 on the calling
thread and the other tasks on a persistent pool of worker threads, each calling the lambda
through ctypes with the GIL released, so the tasks really run in parallel.  It returns 0, or
the first non-zero task result (later tasks are then skipped), and moves the failing
task's error message to the calling thread.

The thread count is ``TVM_NUM_THREADS`` (default: the number of CPUs) or
:func:`set_num_threads`, at most :data:`MAX_NUM_THREADS` (16 per CPU, at least 1024): a
larger :func:`set_num_threads` is refused, a larger ``TVM_NUM_THREADS`` is clamped with a
warning, so that a launch never asks the OS (or libgomp) for more threads than it can make.
A launch from inside a running task runs serially on that thread.

Kernels that launch natively (the llvm target's ``-threading=omp``, through libgomp) read
the same count at each launch from :data:`NUM_THREADS_CELL`, a C ``int32_t`` whose address
the runtime stores in a module's ``__TVMBackendNumThreads`` slot.  libgomp cannot run a
parallel region in a child created by ``fork`` after its parent ran one, so a forked child
pins the cell to 1 (native launches run serially there; this pool is unaffected).
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading
import warnings
from typing import Any

from tvm.ffi.knobs import NUM_THREADS

from .error import clear_last_error, get_last_error, set_last_error

__all__ = [
    "FTVMParallelLambda",
    "ParallelLaunchFunc",
    "TVMBackendParallelLaunch",
    "parallel_launch",
    "set_num_threads",
    "get_num_threads",
    "NUM_THREADS_ENV",
    "NUM_THREADS_CELL",
    "NUM_THREADS_POINTER",
    "MAX_NUM_THREADS",
]

NUM_THREADS_ENV = NUM_THREADS.name

FTVMParallelLambda = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p
)
ParallelLaunchFunc = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32
)

_num_threads: int | None = None
_tls = threading.local()
_forked = False


#: The most threads a launch uses: 16 per CPU, at least 1024.
MAX_NUM_THREADS = max(1024, 16 * (os.cpu_count() or 1))


def _default_num_threads() -> int:
    n = NUM_THREADS.get() or os.cpu_count() or 1
    if n > MAX_NUM_THREADS:
        warnings.warn(f"{NUM_THREADS_ENV}={n} exceeds the limit of {MAX_NUM_THREADS} threads "
                      f"(16 per CPU, at least 1024); using {MAX_NUM_THREADS}", RuntimeWarning,
                      stacklevel=3)
        n = MAX_NUM_THREADS
    return n


def get_num_threads() -> int:
    """The number of threads a parallel launch uses (the calling thread included)."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _default_num_threads()
        _sync_cell()
    return _num_threads


def set_num_threads(n: int | None) -> None:
    """Use ``n`` threads for parallel launches (``None``: back to ``TVM_NUM_THREADS``/CPUs)."""
    global _num_threads
    if n is None:
        _num_threads = None  # read again (and warned about) at the next get_num_threads
        _sync_cell()
        return
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads: n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    if n > MAX_NUM_THREADS:
        raise ValueError(f"set_num_threads: n = {n} exceeds the limit of {MAX_NUM_THREADS} "
                         f"threads (16 per CPU, at least 1024)")
    _num_threads = n
    _sync_cell()


def _quiet_default() -> int:
    with warnings.catch_warnings():  # a bad TVM_NUM_THREADS warns at get_num_threads
        warnings.simplefilter("ignore")
        return _default_num_threads()


#: The thread count as a C ``int32_t`` that natively launching kernels read (see above).
NUM_THREADS_CELL = ctypes.c_int32(_quiet_default())
#: Its address, the value of a module's ``__TVMBackendNumThreads`` slot.
NUM_THREADS_POINTER = ctypes.pointer(NUM_THREADS_CELL)


def _sync_cell() -> None:
    """Make the C cell follow the thread count (1 in a forked child)."""
    count = _num_threads if _num_threads is not None else _quiet_default()
    NUM_THREADS_CELL.value = 1 if _forked else count


class _Job:
    """One parallel launch: tasks are handed out in order to whichever thread asks."""

    __slots__ = ("func", "cdata", "num_task", "next", "finished", "result", "error", "lock", "done")

    def __init__(self, func: Any, cdata: int | None, num_task: int) -> None:
        self.func = func
        self.cdata = cdata
        self.num_task = num_task
        self.next = 1  # task 0 is reserved for the launching thread
        self.finished = 0
        self.result = 0
        self.error: str | None = None
        self.lock = threading.Lock()
        self.done = threading.Event()

    def _take(self) -> int:
        with self.lock:
            if self.next >= self.num_task or self.result != 0:
                return -1
            task = self.next
            self.next += 1
            return task

    def run_task(self, task: int) -> None:
        clear_last_error()
        try:
            rc = int(self.func(task, self.num_task, self.cdata))
            msg = get_last_error() if rc != 0 else None
        except BaseException as err:  # a broken lambda must not kill the worker
            rc, msg = -1, f"parallel task {task} raised {type(err).__name__}: {err}"
        with self.lock:
            if rc != 0 and self.result == 0:
                self.result = rc
                self.error = msg
                # Tasks never handed out count as finished: they are skipped.
                self.finished += self.num_task - self.next
                self.next = self.num_task
            self.finished += 1
            if self.finished >= self.num_task:
                self.done.set()

    def work(self) -> None:
        task = self._take()
        while task >= 0:
            self.run_task(task)
            task = self._take()


class _Pool:
    """Persistent daemon worker threads fed from one queue of jobs."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def ensure(self, n: int) -> None:
        if len(self._threads) >= n:
            return
        with self._lock:
            while len(self._threads) < n:
                t = threading.Thread(
                    target=self._worker, name=f"tvm-worker-{len(self._threads)}", daemon=True
                )
                t.start()
                self._threads.append(t)

    def submit(self, job: _Job, copies: int) -> None:
        for _ in range(copies):
            self._queue.put(job)

    def _worker(self) -> None:
        _tls.in_task = True  # a launch from a worker (inside a task) runs serially
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                job.work()
            except BaseException:  # pragma: no cover - _Job.work already catches
                pass

    def reset_after_fork(self) -> None:
        self._queue = queue.SimpleQueue()
        self._threads = []
        self._lock = threading.Lock()


_pool = _Pool()


def _after_fork_in_child() -> None:
    global _forked
    _pool.reset_after_fork()
    _forked = True
    NUM_THREADS_CELL.value = 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def parallel_launch(flambda: Any, cdata: int | None, num_task: int) -> int:
    """Run ``flambda(task, num_task, cdata)`` for every task; 0 or the first non-zero result.

    ``flambda`` is the address of a C ``FTVMParallelLambda`` (or a ctypes function of that
    type); ``num_task == 0`` means :func:`get_num_threads`.  On failure the calling thread's
    last error holds the failing task's message.
    """
    if isinstance(flambda, int):
        if not flambda:
            set_last_error("TVMBackendParallelLaunch: the lambda is NULL")
            return -1
        func = FTVMParallelLambda(flambda)
    else:
        func = flambda
    if num_task < 0:
        set_last_error(f"TVMBackendParallelLaunch: num_task must be >= 0, got {num_task}")
        return -1
    if num_task == 0:
        num_task = get_num_threads()
    job = _Job(func, cdata, num_task)
    nested = getattr(_tls, "in_task", False)
    workers = 0 if nested else min(num_task, get_num_threads()) - 1
    if workers > 0:
        _pool.ensure(workers)
        _pool.submit(job, workers)
    _tls.in_task = True
    try:
        job.run_task(0)
        job.work()  # help with what the workers have not taken yet
    finally:
        _tls.in_task = nested
    job.done.wait()
    if job.result != 0:
        set_last_error(job.error or f"parallel task failed with code {job.result}")
    return job.result


def _launch_from_c(flambda: int | None, cdata: int | None, num_task: int) -> int:
    try:
        return parallel_launch(flambda or 0, cdata, num_task)
    except BaseException as err:  # never let an exception cross into C
        try:
            set_last_error(f"TVMBackendParallelLaunch failed: {type(err).__name__}: {err}")
        except BaseException:  # pragma: no cover
            pass
        return -1


#: The C callback the ``__TVMBackendParallelLaunch`` slot of every module points to.
TVMBackendParallelLaunch = ParallelLaunchFunc(_launch_from_c)
