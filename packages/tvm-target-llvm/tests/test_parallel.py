"""Parallel loops: outlining, closures, chunking, errors from tasks, and a real speedup."""

from __future__ import annotations

import re
import subprocess
import textwrap
import time

import numpy as np
import pytest
from llvm_test_utils import prim_func
from tvm import tir
from tvm.runtime import KernelError, get_num_threads, set_num_threads
from tvm.target.llvm import build
from tvm.tir import AssertStmt, For, ForKind, LetStmt, SizeVar, Var, decl_buffer
from tvm.tir.stmt import BufferStore


@pytest.fixture
def threads():
    before = get_num_threads()
    yield set_num_threads
    set_num_threads(before)


def _parallel_add(extra_kind=ForKind.SERIAL):
    n = SizeVar("n", "int32")
    m = SizeVar("m", "int32")
    A = decl_buffer((n, m), "float32", "A")
    B = decl_buffer((n, m), "float32", "B")
    alpha = Var("alpha", "float32")
    i, j = Var("i", "int32"), Var("j", "int32")
    inner = For(j, 0, m, extra_kind, BufferStore(B, A[i, j] * alpha + tir.Cast("float32", i),
                                                 (i, j)))
    body = For(i, 0, n, ForKind.PARALLEL, inner)
    return prim_func("padd", [A, B, alpha], body)


@pytest.mark.parametrize("threading", ["omp", "pool"])
@pytest.mark.parametrize("nthreads", [1, 2, 3])
@pytest.mark.parametrize("rows", [0, 1, 5, 64])
def test_parallel_loop_correct_for_any_split(threads, nthreads, rows, threading):
    threads(nthreads)
    mod = build(_parallel_add(), f"llvm -threading={threading}")
    a = np.random.default_rng(0).standard_normal((rows, 7)).astype("float32")
    b = np.full((rows, 7), -1.0, "float32")
    mod["padd"](a, b, 0.5)
    np.testing.assert_allclose(b, a * 0.5 + np.arange(rows, dtype="float32")[:, None],
                               rtol=1e-6)


def test_parallel_ir_outlines_a_lambda_through_the_runtime_slot():
    raw = build(_parallel_add(), "llvm -threading=pool").get_source("ll-raw")
    assert "call i32 %" in raw  # through the __TVMBackendParallelLaunch slot
    assert "padd_parallel_lambda" in raw and "padd_parallel_body" in raw
    assert "noalias" in raw
    assert "GOMP_parallel" not in raw and "__TVMBackendNumThreads" not in raw


def test_omp_threading_launches_through_gomp_parallel():
    mod = build(_parallel_add(), "llvm -threading=omp")
    raw = mod.get_source("ll-raw")
    assert re.search(r'call void @"?GOMP_parallel"?\(.*@"?padd_parallel_lambda_omp"?', raw)
    assert re.search(r'call i32 @"?omp_get_num_threads"?\(\)', raw)
    assert "atomicrmw add" in raw  # tasks are handed out through a shared counter
    assert re.search(r'call i32 @"?omp_get_level"?\(\)', raw)
    assert re.search(r'load ptr, ptr @"?__TVMBackendNumThreads"?', raw)
    assert "cmpxchg" in raw  # the first failing task's status
    assert "__TVMBackendNumThreads" in mod.slots


def test_threading_defaults_to_omp_when_libgomp_loads():
    from tvm.target.llvm.llvm_target import LLVMTargetOptions, load_libgomp

    expected = "omp" if load_libgomp() else "pool"
    assert LLVMTargetOptions.from_target("llvm").threading == expected
    assert LLVMTargetOptions.from_target("llvm -threading=pool").threading == "pool"
    with pytest.raises(ValueError, match="-threading must be one of omp, pool, got 'tbb'"):
        LLVMTargetOptions.from_target("llvm -threading=tbb")


def test_threading_falls_back_to_pool_without_libgomp(monkeypatch):
    from tvm.target.llvm import llvm_target

    monkeypatch.setattr(llvm_target, "load_libgomp", lambda: None)
    assert llvm_target.LLVMTargetOptions.from_target("llvm").threading == "pool"
    with pytest.warns(RuntimeWarning, match="libgomp cannot be loaded"):
        opts = llvm_target.LLVMTargetOptions.from_target("llvm -threading=omp")
    assert opts.threading == "pool"


def _team_probe(threading: str):
    """B[i] = 100 * omp_get_num_threads() + omp_get_thread_num() for a parallel loop."""
    n = SizeVar("n", "int32")
    B = decl_buffer((n,), "int32", "B")
    i = Var("i", "int32")
    value = (tir.call_extern("int32", "omp_get_num_threads") * 100
             + tir.call_extern("int32", "omp_get_thread_num"))
    body = For(i, 0, n, ForKind.PARALLEL, BufferStore(B, value, (i,)))
    return build(prim_func("probe", [B], body), f"llvm -threading={threading}")


@pytest.mark.parametrize("nthreads", [1, 2, 3])
def test_set_num_threads_sizes_the_omp_team(threads, nthreads):
    mod = _team_probe("omp")
    threads(nthreads)
    b = np.full(12, -1, "int32")
    mod["probe"](b)
    assert set((b // 100).tolist()) == {nthreads}  # the team size
    chunks = b.reshape(nthreads, -1) % 100  # one contiguous chunk per task, one thread each
    assert (chunks == chunks[:, :1]).all() and chunks.max() < nthreads
    if nthreads == 1:  # one thread: no team at all, run on the caller
        np.testing.assert_array_equal(b, np.full(12, 100))


def test_omp_thread_count_is_the_runtime_s_not_omp_num_threads(threads, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    mod = _team_probe("omp")
    threads(2)
    b = np.zeros(8, "int32")
    mod["probe"](b)
    assert set((b // 100).tolist()) == {2}


@pytest.mark.parametrize("threading", ["omp", "pool"])
def test_nested_parallel_runs_serially_inside_tasks(threads, threading):
    threads(2)
    mod = build(_parallel_add(ForKind.PARALLEL), f"llvm -threading={threading}")
    a = np.ones((6, 9), "float32")
    b = np.zeros((6, 9), "float32")
    mod["padd"](a, b, 2.0)
    np.testing.assert_allclose(b, np.broadcast_to(2.0 + np.arange(6, dtype="float32")[:, None], (6, 9)))


def test_num_cores_target_attribute_sets_the_task_count(threads):
    raw = build(_parallel_add(), "llvm -num-cores=3 -threading=pool").get_source("ll-raw")
    assert "i32 3)" in raw  # __TVMBackendParallelLaunch(lambda, closure, 3)
    mod = build(_parallel_add(), "llvm -num-cores=3 -threading=omp")
    assert "store i32 3, ptr" in mod.get_source("ll-raw")  # shared.num_task = 3
    for nthreads in (1, 2, 4):  # 3 tasks on fewer or more threads
        threads(nthreads)
        a = np.ones((10, 3), "float32")
        b = np.zeros((10, 3), "float32")
        mod["padd"](a, b, 2.0)
        np.testing.assert_allclose(b, 2.0 + np.arange(10, dtype="float32")[:, None] + 0 * a)


@pytest.mark.parametrize("threading", ["omp", "pool"])
def test_error_inside_a_parallel_task_reaches_the_caller(threads, threading):
    threads(2)
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int32", "A")
    i = Var("i", "int32")
    body = For(i, 0, n, ForKind.PARALLEL,
               AssertStmt(A[i] >= 0, "pcheck: A[%lld] = %lld is negative",
                          BufferStore(A, A[i] * 2, (i,)), (tir.Cast("int64", i),
                                                          tir.Cast("int64", A[i]))))
    mod = build(prim_func("pcheck", [A], body), f"llvm -threading={threading}")
    a = np.arange(40, dtype="int32")
    a[33] = -5  # in the second task: another thread than the caller's
    with pytest.raises(KernelError, match=r"A\[33\] = -5 is negative"):
        mod["pcheck"](a)
    a[33], a[2] = 33, -7  # the caller's own task
    with pytest.raises(KernelError, match=r"A\[2\] = -7 is negative"):
        mod["pcheck"](a)
    ok = np.arange(40, dtype="int32")
    mod["pcheck"](ok)  # no stale error afterwards
    np.testing.assert_array_equal(ok, np.arange(40) * 2)
    threads(1)
    ok[5] = -1
    with pytest.raises(KernelError, match=r"A\[5\] = -1 is negative"):
        mod["pcheck"](ok)


def test_let_bound_values_are_captured(threads):
    threads(2)
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int64", "A")
    scale = Var("scale", "int64")
    k = Var("k", "int64")
    i = Var("i", "int32")
    body = LetStmt(k, scale * 3, For(i, 0, n, ForKind.PARALLEL,
                                     BufferStore(A, tir.Cast("int64", i) * k, (i,))))
    mod = build(prim_func("plet", [A, scale], body))
    a = np.zeros(11, "int64")
    mod["plet"](a, 5)
    np.testing.assert_array_equal(a, np.arange(11) * 15)


def _heavy_kernel():
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "float64", "A")
    steps = Var("steps", "int32")
    i, j = Var("i", "int32"), Var("j", "int32")
    # a serial dependency chain per row: cannot be vectorised away, parallel across rows
    inner = For(j, 0, steps, ForKind.SERIAL,
                BufferStore(A, A[i] * 0.999999 + 1e-3, (i,)))
    return build(prim_func("heavy", [A, steps], For(i, 0, n, ForKind.PARALLEL, inner)))


def test_two_threads_share_the_work(threads):
    # Whether the rows really ran on two threads, from CPU times rather than wall-clock
    # speedup (which a loaded machine hides): the calling thread's own CPU time is about
    # half of the process's when a worker thread did the other half, and all of it when
    # the loop ran serially.  Worker threads wait passively (OMP_WAIT_POLICY / the pool).
    mod = _heavy_kernel()
    steps = 400_000

    def thread_share(nthreads: int) -> float:
        threads(nthreads)
        mod["heavy"](np.ones(16, "float64"), 1000)  # start the workers outside the window
        a = np.ones(16, "float64")
        t_proc, t_self = time.process_time(), time.thread_time()
        mod["heavy"](a, steps)
        return (time.thread_time() - t_self) / max(time.process_time() - t_proc, 1e-9)

    assert thread_share(1) > 0.9
    # tasks go to whichever thread asks first: on a loaded machine the worker may wake after
    # the caller took every row, so a few launches are tried (one that shares is enough)
    shares = []
    for _ in range(5):
        shares.append(thread_share(2))
        if shares[-1] < 0.75:
            break
    assert min(shares) < 0.75, (
        f"the calling thread did {min(shares):.0%} of the CPU work on 2 threads (best of "
        f"{len(shares)} launches)")


RUNNER = textwrap.dedent("""
    import sys, numpy as np
    import tvm.runtime as rt
    mod = rt.load_module(sys.argv[1])
    for n in (2, 1):
        rt.set_num_threads(n)
        b = np.full(12, -1, "int32")
        mod["probe"](b)
        print("TEAM", n, sorted(set(b.tolist())))
    rt.set_num_threads(2)
    a = np.arange(40, dtype="int32")
    a[33] = -5
    try:
        mod["pcheck"](a)
    except rt.KernelError as err:
        print("ERR", err)
""")


def test_exported_omp_library_runs_in_a_runtime_only_process(tmp_path):
    from tvm.ir.module import IRModule
    from tvm.runtime.testing import runtime_only_python

    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int32", "A")
    i = Var("i", "int32")
    check = For(i, 0, n, ForKind.PARALLEL,
                AssertStmt(A[i] >= 0, "pcheck: A[%lld] is negative", BufferStore(A, A[i], (i,)),
                           (tir.Cast("int64", i),)))
    B = decl_buffer((n,), "int32", "B")
    value = (tir.call_extern("int32", "omp_get_num_threads") * 100
             + tir.call_extern("int32", "omp_get_thread_num"))
    funcs = {"probe": prim_func("probe", [B], For(i, 0, n, ForKind.PARALLEL,
                                                   BufferStore(B, value, (i,)))),
             "pcheck": prim_func("pcheck", [A], check)}
    mod = build(IRModule(funcs), "llvm -threading=omp")
    lib = tmp_path / "par.so"
    mod.export_library(lib)
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    argv, env = runtime_only_python(tmp_path)
    proc = subprocess.run([*argv, str(script), str(lib)], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"TEAM 2 \[(200|201|200, 201)\]", proc.stdout)  # a team of 2
    assert "TEAM 1 [100]" in proc.stdout
    assert "ERR pcheck: A[33] is negative" in proc.stdout


HUGE_COUNT = """
import sys, numpy as np
from tvm import te, tir
A = te.placeholder((4096,), "float32", name="A")
s = tir.Schedule(te.create_prim_func([A, te.compute((4096,), lambda i: A[i] * 2, name="B")]))
s.parallel(s.get_loops(s.get_block("B"))[0])
mod = tir.build(s.mod, target="llvm -threading=" + sys.argv[1])
a, b = np.ones(4096, "float32"), np.zeros(4096, "float32")
mod["main"](a, b)
assert (b == 2).all()
from tvm.runtime import get_num_threads
print("OK", get_num_threads())
"""


@pytest.mark.parametrize("threading", ["omp", "pool"])
def test_a_huge_thread_count_is_clamped_not_a_crash(threading, tmp_path):
    import os
    import sys

    script = tmp_path / "huge.py"
    script.write_text(HUGE_COUNT)
    env = dict(os.environ, TVM_NUM_THREADS="100000")
    proc = subprocess.run([sys.executable, "-W", "always", str(script), threading],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from tvm.runtime.thread_pool import MAX_NUM_THREADS

    assert f"OK {MAX_NUM_THREADS}" in proc.stdout
    assert "TVM_NUM_THREADS=100000 exceeds the limit" in proc.stderr
