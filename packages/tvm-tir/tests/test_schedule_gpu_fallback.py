"""The fallback of the default GPU schedule (tvm.tir.schedule.gpu_rules.fallback): functions
no rule schedules still come out with every buffer access inside a kernel — independent
loops spread over threads, anything unprovable on one thread — and compute the same numbers
on the GPU simulator."""

import numpy as np
import pytest
from gpu_helpers import gpu_target, kernels, lower_gpu
from gpu_sim import run_gpu_module
from lowering_helpers import find_all
from tvm import tir
from tvm.script import tir as T
from tvm.tir import For, ForKind, IfThenElse
from tvm.tir.schedule.gpu_rules import GPUParams, schedule_gpu_func
from tvm.tir.schedule.gpu_rules.fallback import _independent, _MustWrite

PARAMS = GPUParams(max_threads=64, warp_size=32, max_shared_memory=49152)


def _schedule(func, name="main"):
    return schedule_gpu_func(func.with_attr("global_symbol", name), gpu_target(), PARAMS)


def _launches(func):
    """``[(tag, extent)]`` of the thread-bound loops, outermost first."""
    return [(f.thread_binding.thread_tag, f.extent.value if hasattr(f.extent, "value")
             else f.extent) for f in find_all(func, For) if f.kind == ForKind.THREAD_BINDING]


def _run(func, *arrays):
    mod = lower_gpu(func)
    run_gpu_module(mod, "main", list(arrays))
    return mod


# --------------------------------------------------------------------------- loop-level code


@T.prim_func
def scan_rows(x: T.Buffer((4, 8), "float32"), out: T.Buffer((4, 8), "float32")):
    acc = T.alloc_buffer((1,), "float32", scope="local")
    for i in range(4):
        acc[0] = T.float32(0)
        for j in range(8):
            acc[0] = acc[0] + x[i, j]
            out[i, j] = acc[0]


def test_independent_rows_of_a_scan_get_a_thread_each():
    func = _schedule(scan_rows)
    assert func.attrs["tir.is_scheduled"]
    assert _launches(func) == [("blockIdx.x", 1), ("threadIdx.x", 4)]
    x = np.random.rand(4, 8).astype("float32")
    out = np.zeros((4, 8), "float32")
    mod = _run(func, x, out)
    np.testing.assert_allclose(out, np.cumsum(x, 1), rtol=1e-6)
    (kernel,) = kernels(mod).values()
    assert [a.scope for a in find_all(kernel, tir.Allocate)] == ["local"]  # moved inside


@T.prim_func
def scan_all(x: T.Buffer((32,), "float32"), out: T.Buffer((32,), "float32")):
    acc = T.alloc_buffer((1,), "float32", scope="local")
    acc[0] = T.float32(0)
    for j in range(32):
        acc[0] = acc[0] + x[j]
        out[j] = acc[0]


@T.prim_func
def scan_rows_branchy(x: T.Buffer((4, 8), "float32"), out: T.Buffer((4, 8), "float32")):
    acc = T.alloc_buffer((1,), "float32", scope="local")
    for i in range(4):
        for j in range(8):
            if j == 0:
                acc[0] = x[i, 0]
            else:
                acc[0] = acc[0] + x[i, j]
            out[i, j] = acc[0]


@T.prim_func
def scatter_add(out: T.Buffer((6,), "float32"), idx: T.Buffer((16,), "int32"),
                upd: T.Buffer((16,), "float32")):
    for p in range(16):
        out[idx[p]] = out[idx[p]] + upd[p]


@pytest.mark.parametrize("func, reason", [
    (scan_all, "a scratch value carried from statement to statement"),
    (scan_rows_branchy, "a scratch read the analysis cannot prove written first"),
    (scatter_add, "data-dependent store indices"),
])
def test_what_cannot_be_proven_independent_runs_on_one_thread(func, reason):
    scheduled = _schedule(func)
    assert _launches(scheduled) == [("blockIdx.x", 1), ("threadIdx.x", 1)], reason


def test_one_thread_kernels_compute_the_sequential_result():
    x = np.random.rand(32).astype("float32")
    out = np.zeros(32, "float32")
    _run(_schedule(scan_all), x, out)
    np.testing.assert_allclose(out, np.cumsum(x), rtol=1e-5)
    x = np.random.rand(4, 8).astype("float32")
    out = np.zeros((4, 8), "float32")
    _run(_schedule(scan_rows_branchy), x, out)
    np.testing.assert_allclose(out, np.cumsum(x, 1), rtol=1e-6)
    idx = np.array([0, 1, 1, 5, 5, 5, 2, 0, 3, 3, 4, 4, 4, 4, 1, 0], "int32")
    upd = np.random.rand(16).astype("float32")
    out = np.ones(6, "float32")
    _run(_schedule(scatter_add), out, idx, upd)
    np.testing.assert_allclose(out, 1 + np.bincount(idx, upd, 6), rtol=1e-6)


@T.prim_func
def copy_then_scatter(data: T.Buffer((3, 40), "float32"), idx: T.Buffer((40,), "int32"),
                      out: T.Buffer((3, 40), "float32")):
    T.func_attr({"tir.noalias": True})
    with T.block("root"):
        T.reads()
        T.writes()
        for i, j in T.grid(3, 40):
            out[i, j] = data[i, j]
        for p in range(40):
            out[idx[p], p] = out[idx[p], p] + T.float32(1)
        for q in range(40):
            out[idx[q], 0] = out[idx[q], 0] + T.float32(1)


def test_each_top_level_statement_becomes_its_own_kernel():
    func = _schedule(copy_then_scatter)
    # the copy: both loops independent, fused (120 = 2 blocks of 64); the column scatter:
    # each p owns column p; the last scatter may hit one element twice: one thread
    assert _launches(func) == [("blockIdx.x", 2), ("threadIdx.x", 64),
                               ("blockIdx.x", 1), ("threadIdx.x", 40),
                               ("blockIdx.x", 1), ("threadIdx.x", 1)]
    guards = find_all(func, IfThenElse)
    assert len(guards) == 1  # 120 is not a multiple of 64
    data = np.random.rand(3, 40).astype("float32")
    idx = np.random.randint(0, 3, 40).astype("int32")
    out = np.zeros((3, 40), "float32")
    mod = _run(func, data, idx, out)
    assert len(kernels(mod)) == 3
    ref = data.copy()
    ref[idx, np.arange(40)] += 1
    np.add.at(ref[:, 0], idx, 1)
    np.testing.assert_allclose(out, ref, rtol=1e-6)


@T.prim_func
def flat_parallel(x: T.Buffer((32,), "float32"), out: T.Buffer((32,), "float32")):
    for i in T.parallel(4):
        for j in range(8):
            out[i * 8 + j] = x[i * 8 + 7 - j]


def test_a_parallel_loop_is_trusted_to_be_independent():
    func = _schedule(flat_parallel)
    assert _launches(func) == [("blockIdx.x", 1), ("threadIdx.x", 4)]
    x = np.arange(32, dtype="float32")
    out = np.zeros(32, "float32")
    _run(func, x, out)
    np.testing.assert_array_equal(out, x.reshape(4, 8)[:, ::-1].reshape(-1))


@T.prim_func
def symbolic_rows(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (n, 4), "float32")
    B = T.match_buffer(b, (n, 4), "float32")
    acc = T.alloc_buffer((1,), "float32", scope="local")
    for i in range(n):
        acc[0] = T.float32(1)
        for j in range(4):
            acc[0] = acc[0] * A[i, j]
        B[i, 0] = acc[0]
        for j in range(1, 4):
            B[i, j] = A[i, j]


def test_symbolic_trip_counts_are_guarded():
    func = _schedule(symbolic_rows)
    tags = [t for t, _ in _launches(func)]
    assert tags == ["blockIdx.x", "threadIdx.x"]
    for rows in (1, 70):
        a = np.random.rand(rows, 4).astype("float32")
        b = np.zeros((rows, 4), "float32")
        _run(func, a, b, np.int32(rows))
        np.testing.assert_allclose(b[:, 0], a.prod(1), rtol=1e-5)
        np.testing.assert_array_equal(b[:, 1:], a[:, 1:])


# --------------------------------------------------------------------------- block functions


@T.prim_func
def mean_all(x: T.Buffer((2, 3, 4), "float32"), out: T.Buffer((), "float32")):
    total = T.alloc_buffer((), "float32")
    for k0, k1, k2 in T.grid(2, 3, 4):
        with T.block("total"):
            v0, v1, v2 = T.axis.remap("RRR", [k0, k1, k2])
            with T.init():
                total[()] = T.float32(0)
            total[()] = total[()] + x[v0, v1, v2]
    with T.block("mean"):
        vi = T.axis.spatial(1, 0)  # noqa: F841  (a block iterating over nothing)
        out[()] = total[()] / T.float32(24)


def test_a_block_without_loops_does_not_stop_the_others_from_being_scheduled():
    func = _schedule(mean_all)
    launches = _launches(func)
    assert launches[-2:] == [("blockIdx.x", 1), ("threadIdx.x", 1)]  # the loop-less block
    assert ("threadIdx.x", 32) in launches  # the sum: a cross-thread reduction
    x = np.random.rand(2, 3, 4).astype("float32")
    out = np.zeros((), "float32")
    _run(func, x, out)
    np.testing.assert_allclose(out, x.mean(), rtol=1e-5)


@T.prim_func
def argmax_all(x: T.Buffer((12,), "float32"), idx: T.Buffer((), "int32"),
               val: T.Buffer((), "float32")):
    for k in range(12):
        with T.block("argmax"):
            vk = T.axis.reduce(12, k)
            with T.init():
                idx[()] = -1
                val[()] = T.float32(-3.0e38)
            keep: T.bool = val[()] >= x[vk]
            idx[()] = T.Select(keep, idx[()], vk)
            val[()] = T.Select(keep, val[()], x[vk])


@T.prim_func
def argmax_rows(x: T.Buffer((5, 12), "float32"), idx: T.Buffer((5,), "int32"),
                val: T.Buffer((5,), "float32")):
    for i, k in T.grid(5, 12):
        with T.block("argmax"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                idx[vi] = -1
                val[vi] = T.float32(-3.0e38)
            keep: T.bool = val[vi] >= x[vi, vk]
            idx[vi] = T.Select(keep, idx[vi], vk)
            val[vi] = T.Select(keep, val[vi], x[vi, vk])


def test_reducers_threads_cannot_combine_get_one_thread_per_output():
    rows = _schedule(argmax_rows)
    assert _launches(rows) == [("blockIdx.x", 1), ("threadIdx.x", 5)]
    assert _launches(_schedule(argmax_all)) == [("blockIdx.x", 1), ("threadIdx.x", 1)]
    x = np.random.rand(5, 12).astype("float32")
    idx, val = np.zeros(5, "int32"), np.zeros(5, "float32")
    _run(rows, x, idx, val)
    np.testing.assert_array_equal(idx, x.argmax(1))
    idx, val = np.zeros((), "int32"), np.zeros((), "float32")
    _run(_schedule(argmax_all), x[0], idx, val)
    assert idx == x[0].argmax() and val == x[0].max()


@T.prim_func
def half_range(a: T.handle, n: T.int64):
    out = T.match_buffer(a, ((n + T.int64(1)) // T.int64(2),), "int64")
    for i in range((n + T.int64(1)) // T.int64(2)):
        with T.block("out"):
            vi = T.axis.spatial((n + T.int64(1)) // T.int64(2), i)
            out[vi] = vi * T.int64(2)


def test_split_by_an_inferred_factor_of_a_symbolic_extent():
    func = _schedule(half_range)
    assert [t for t, _ in _launches(func)] == ["blockIdx.x", "threadIdx.x"]
    for n in (1, 9, 200):
        out = np.zeros((n + 1) // 2, "int64")
        _run(func, out, np.int64(n))
        np.testing.assert_array_equal(out, np.arange(0, n, 2))


def test_int64_thread_loops_are_not_guarded():
    @T.prim_func
    def row_sum(x: T.Buffer((T.int64(4), T.int64(24)), "float32"),
                out: T.Buffer((T.int64(4),), "float32")):
        for i, k in T.grid(T.int64(4), T.int64(24)):
            with T.block("s"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    out[vi] = T.float32(0)
                out[vi] = out[vi] + x[vi, vk]

    func = _schedule(row_sum)
    mod = lower_gpu(func)
    (kernel,) = kernels(mod).values()
    conds = [str(s.condition) for s in find_all(kernel, IfThenElse)]
    assert not [c for c in conds if "threadIdx" in c and "< 32" in c], conds
    x = np.random.rand(4, 24).astype("float32")
    out = np.zeros(4, "float32")
    run_gpu_module(mod, "main", [x, out])
    np.testing.assert_allclose(out, x.sum(1), rtol=1e-5)


# --------------------------------------------------------------------------- the analyses


def test_independence_needs_the_loop_variable_as_an_index():
    loop = scan_rows.body.block.body  # for i: ...
    assert _independent(loop.loop_var, loop.body)
    inner = scatter_add.body  # no root allocations: the loop is the body
    assert not _independent(inner.loop_var, inner.body)


def test_must_write_analysis():
    acc = scan_rows.body.block.alloc_buffers[0]
    check = _MustWrite({acc.data})
    check.stmt(scan_rows.body.block.body.body, frozenset())
    assert check.ok
    branchy = scan_rows_branchy.body.block
    check = _MustWrite({branchy.alloc_buffers[0].data})
    check.stmt(branchy.body.body, frozenset())  # one row: reads acc when j > 0
    assert not check.ok
