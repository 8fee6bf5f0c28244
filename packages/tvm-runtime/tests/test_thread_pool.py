"""The parallel launch behind __TVMBackendParallelLaunch."""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np
import pytest

import tvm.runtime as rt
from tvm.runtime.error import clear_last_error, get_last_error
from tvm.runtime.thread_pool import FTVMParallelLambda, parallel_launch


@pytest.fixture
def threads():
    yield rt.set_num_threads
    rt.set_num_threads(None)


def _spin(module, num_task, iters, fail_task=-1, n=8):
    out = np.zeros(n)
    module["parallel_spin"](out, iters, num_task, fail_task)
    return out


def test_all_tasks_run_once(kernel_module, threads):
    threads(2)
    out = _spin(kernel_module, 5, 1000)
    assert out.tolist() == [6.0] * 5 + [0.0] * 3  # each task t wrote 1 + num_task


def test_num_task_zero_uses_thread_count(kernel_module, threads):
    threads(3)
    out = _spin(kernel_module, 0, 10)
    assert out.tolist() == [4.0] * 3 + [0.0] * 5
    assert rt.get_num_threads() == 3


def test_failure_in_a_worker_task_reaches_python(kernel_module, threads):
    threads(2)
    with pytest.raises(rt.KernelError, match="parallel_spin: task 1 of 2 failed on purpose"):
        _spin(kernel_module, 2, 10, fail_task=1)
    with pytest.raises(rt.KernelError, match="task 0 of 4 failed on purpose"):
        _spin(kernel_module, 4, 10, fail_task=0)
    assert _spin(kernel_module, 2, 10).tolist()[:2] == [3.0, 3.0]  # the pool still works


def test_nested_launch_runs_serially(kernel_module, threads):
    threads(2)
    out = np.zeros(6)
    kernel_module["nested_parallel"](out)
    assert out.tolist() == [1.0] * 6


def test_env_var_and_setter(monkeypatch):
    monkeypatch.setenv("TVM_NUM_THREADS", "3")
    rt.set_num_threads(None)
    assert rt.get_num_threads() == 3
    monkeypatch.setenv("TVM_NUM_THREADS", "lots")
    rt.set_num_threads(None)
    with pytest.warns(RuntimeWarning, match="TVM_NUM_THREADS='lots'"):
        assert rt.get_num_threads() == (os.cpu_count() or 1)
    rt.set_num_threads(None)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        rt.set_num_threads(0)
    with pytest.raises(TypeError, match="must be an int"):
        rt.set_num_threads(2.0)


def test_thread_count_is_bounded(threads, monkeypatch):
    from tvm.runtime.thread_pool import MAX_NUM_THREADS, NUM_THREADS_CELL

    assert MAX_NUM_THREADS >= 1024
    with pytest.raises(ValueError, match=rf"n = 1000000 exceeds the limit of {MAX_NUM_THREADS}"):
        threads(10**6)
    threads(MAX_NUM_THREADS)
    assert rt.get_num_threads() == MAX_NUM_THREADS
    monkeypatch.setenv("TVM_NUM_THREADS", str(10**9))
    threads(None)
    with pytest.warns(RuntimeWarning, match=r"TVM_NUM_THREADS=1000000000 exceeds the limit"):
        assert rt.get_num_threads() == MAX_NUM_THREADS
    assert NUM_THREADS_CELL.value == MAX_NUM_THREADS


def test_bad_launch_arguments_return_errors():
    clear_last_error()
    assert parallel_launch(0, None, 2) == -1
    assert "lambda is NULL" in get_last_error()
    noop = FTVMParallelLambda(lambda t, n, c: 0)
    assert parallel_launch(noop, None, -1) == -1
    assert "num_task must be >= 0" in get_last_error()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_python_lambda_and_exceptions_do_not_escape(threads):
    threads(2)
    seen = []

    def task(task_id, num_task, cdata):
        seen.append((task_id, num_task))
        if task_id == 2:
            raise RuntimeError("boom")  # ctypes reports it and returns 0; nothing crashes
        return 0

    f = FTVMParallelLambda(task)
    assert parallel_launch(f, None, 3) == 0
    assert sorted(seen) == [(0, 3), (1, 3), (2, 3)]
    assert parallel_launch(FTVMParallelLambda(lambda t, n, c: 7 if t == 1 else 0), None, 3) == 7


def test_tasks_run_concurrently_on_distinct_threads(threads):
    # Load-independent: two tasks must be in flight at the same time to pass the barrier.
    threads(2)
    barrier = threading.Barrier(2, timeout=10)
    idents = {}

    def task(task_id, num_task, cdata):
        idents[task_id] = threading.get_ident()
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return 1
        return 0

    assert parallel_launch(FTVMParallelLambda(task), None, 2) == 0
    assert idents[0] == threading.get_ident() and idents[1] != idents[0]


def test_two_threads_really_run_in_parallel(kernel_module, threads):
    # Each task waits until both have started: a launch that ran its tasks one after the
    # other would leave the first waiting out its 20 s timeout.  Deterministic on a loaded
    # machine too (the OS schedules both threads well within the timeout), unlike timing.
    threads(2)
    out = np.zeros(2)
    kernel_module["parallel_meet"](out, 2, 20.0)
    assert out.tolist() == [1.0, 1.0], "the two tasks of a 2-thread launch did not overlap"


def test_one_thread_runs_tasks_one_after_the_other(kernel_module, threads):
    threads(1)
    out = np.zeros(2)
    kernel_module["parallel_meet"](out, 2, 0.2)
    assert out.tolist() == [0.0, 1.0]  # the first waited alone; the second found both


def test_native_thread_count_cell_follows_the_setting(threads, monkeypatch):
    from tvm.runtime.packed_func import RUNTIME_SLOTS
    from tvm.runtime.thread_pool import NUM_THREADS_CELL, NUM_THREADS_POINTER

    addr = ctypes.cast(RUNTIME_SLOTS["__TVMBackendNumThreads"], ctypes.c_void_p).value
    assert addr == ctypes.addressof(NUM_THREADS_CELL)
    assert NUM_THREADS_POINTER.contents.value == NUM_THREADS_CELL.value
    threads(3)
    assert NUM_THREADS_CELL.value == 3
    threads(1)
    assert ctypes.c_int32.from_address(addr).value == 1
    monkeypatch.setenv("TVM_NUM_THREADS", "5")
    threads(None)
    assert NUM_THREADS_CELL.value == 5 and rt.get_num_threads() == 5


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_launches_natively_on_one_thread(threads):
    from tvm.runtime.thread_pool import NUM_THREADS_CELL

    threads(2)
    pid = os.fork()
    if pid == 0:  # the child: libgomp cannot run a team here, native launches go serial
        ok = NUM_THREADS_CELL.value == 1
        rt.set_num_threads(2)
        ok = ok and NUM_THREADS_CELL.value == 1 and rt.get_num_threads() == 2
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert NUM_THREADS_CELL.value == 2
