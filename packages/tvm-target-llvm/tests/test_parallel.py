"""Parallel loops: outlining, closures, chunking, errors from tasks, and a real speedup."""

from __future__ import annotations

import os
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


@pytest.mark.parametrize("nthreads", [1, 2, 3])
@pytest.mark.parametrize("rows", [0, 1, 5, 64])
def test_parallel_loop_correct_for_any_split(threads, nthreads, rows):
    threads(nthreads)
    mod = build(_parallel_add())
    a = np.random.default_rng(0).standard_normal((rows, 7)).astype("float32")
    b = np.full((rows, 7), -1.0, "float32")
    mod["padd"](a, b, 0.5)
    np.testing.assert_allclose(b, a * 0.5 + np.arange(rows, dtype="float32")[:, None],
                               rtol=1e-6)


def test_parallel_ir_outlines_a_lambda_through_the_runtime_slot():
    raw = build(_parallel_add()).get_source("ll-raw")
    assert "__TVMBackendParallelLaunch" in raw
    assert "padd_parallel_lambda" in raw and "padd_parallel_body" in raw
    assert "noalias" in raw


def test_nested_parallel_runs_serially_inside_tasks(threads):
    threads(2)
    mod = build(_parallel_add(ForKind.PARALLEL))
    a = np.ones((6, 9), "float32")
    b = np.zeros((6, 9), "float32")
    mod["padd"](a, b, 2.0)
    np.testing.assert_allclose(b, np.broadcast_to(2.0 + np.arange(6, dtype="float32")[:, None], (6, 9)))


def test_num_cores_target_attribute_sets_the_task_count():
    raw = build(_parallel_add(), "llvm -num-cores=3").get_source("ll-raw")
    assert "i32 3)" in raw  # __TVMBackendParallelLaunch(lambda, closure, 3)


def test_error_inside_a_parallel_task_reaches_the_caller(threads):
    threads(2)
    n = SizeVar("n", "int32")
    A = decl_buffer((n,), "int32", "A")
    i = Var("i", "int32")
    body = For(i, 0, n, ForKind.PARALLEL,
               AssertStmt(A[i] >= 0, "pcheck: A[%lld] = %lld is negative",
                          BufferStore(A, A[i] * 2, (i,)), (tir.Cast("int64", i),
                                                          tir.Cast("int64", A[i]))))
    mod = build(prim_func("pcheck", [A], body))
    a = np.arange(40, dtype="int32")
    a[33] = -5
    with pytest.raises(KernelError, match=r"A\[33\] = -5 is negative"):
        mod["pcheck"](a)


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


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores")
def test_parallel_speedup_on_two_threads(threads):
    mod = _heavy_kernel()
    steps = 1_500_000

    def best_time(nthreads: int) -> float:
        threads(nthreads)
        times = []
        for _ in range(3):
            a = np.ones(16, "float64")
            t0 = time.perf_counter()
            mod["heavy"](a, steps)
            times.append(time.perf_counter() - t0)
        return min(times)

    # Other processes may share the two cores: retry a few rounds and keep the best ratio.
    ratios = []
    for _ in range(6):
        single = best_time(1)
        double = best_time(2)
        ratios.append(round(double / single, 3))
        if ratios[-1] < 0.8:
            return
        time.sleep(0.2)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 1.2:
        pytest.skip(f"machine busy (load {load:.1f}); 2/1-thread time ratios {ratios}")
    raise AssertionError(f"no speedup from 2 threads: 2/1-thread time ratios {ratios}")
