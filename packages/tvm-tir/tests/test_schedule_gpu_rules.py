"""The default GPU schedule rules (tvm.tir.schedule.gpu_rules), shared by every GPU target:
which rule schedules what, and the numbers of the scheduled, lowered kernels on the GPU
simulator."""

import numpy as np
import pytest
from gpu_helpers import gpu_target, kernels, lower_gpu
from gpu_sim import run_gpu_module
from lowering_helpers import find_all
from tvm import te, tir
from tvm.ir import IRModule
from tvm.tir import Allocate, Call, For, ForKind
from tvm.tir.analysis import verify_well_formed
from tvm.tir.schedule.gpu_rules import (
    GPUParams, apply_default_gpu_schedule, schedule_gpu_func,
)

PARAMS = GPUParams(max_threads=64, warp_size=32, max_shared_memory=49152)


def _named(func, name="main"):
    return func.with_attr("global_symbol", name)


def _schedule(func, params=PARAMS):
    return schedule_gpu_func(_named(func), gpu_target(), params)


def _bound_tags(func):
    return sorted({f.thread_binding.thread_tag for f in find_all(func, For)
                   if f.kind == ForKind.THREAD_BINDING})


def _run(func, *arrays, warp=32):
    mod = lower_gpu(func, gpu_target(thread_warp_size=warp))
    run_gpu_module(mod, "main", list(arrays), warp_size=32)
    return mod


def _elementwise(shape=(16, 64)):
    A = te.placeholder(shape, "float32", "A")
    B = te.compute(shape, lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute(shape, lambda i, j: B[i, j] + 1.0, name="C")
    return te.create_prim_func([A, C])


def _row_sum(rows, cols):
    A = te.placeholder((rows, cols), "float32", "A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B])


def _matmul(m, n, k):
    A = te.placeholder((m, k), "float32", "A")
    B = te.placeholder((k, n), "float32", "B")
    r = te.reduce_axis((0, k), "r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def _softmax(rows, cols):
    A = te.placeholder((rows, cols), "float32", "A")
    k = te.reduce_axis((0, cols), "k")
    mx = te.compute((rows,), lambda i: te.max(A[i, k], axis=k), name="T_max")
    e = te.compute((rows, cols), lambda i, j: te.exp(A[i, j] - mx[i]), name="T_exp")
    k2 = te.reduce_axis((0, cols), "k2")
    s = te.compute((rows,), lambda i: te.sum(e[i, k2], axis=k2), name="T_sum")
    out = te.compute((rows, cols), lambda i, j: e[i, j] / s[i], name="T_softmax")
    return te.create_prim_func([A, out])


def _layer_norm(rows, cols):
    A = te.placeholder((rows, cols), "float32", "A")
    k = te.reduce_axis((0, cols), "k")
    s = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="T_sum")
    mean = te.compute((rows,), lambda i: s[i] / float(cols), name="T_mean")
    k2 = te.reduce_axis((0, cols), "k2")
    var = te.compute((rows,), lambda i: te.sum((A[i, k2] - mean[i]) * (A[i, k2] - mean[i]),
                                               axis=k2), name="T_var")
    out = te.compute((rows, cols), lambda i, j: (A[i, j] - mean[i])
                     / te.sqrt(var[i] / float(cols) + 1e-5), name="T_norm")
    return te.create_prim_func([A, out])


# --------------------------------------------------------------------------- elementwise


def test_elementwise_blocks_are_inlined_fused_bound_and_vectorized():
    func = _schedule(_elementwise((16, 64)))
    assert func.attrs["tir.is_scheduled"]
    assert _bound_tags(func) == ["blockIdx.x", "threadIdx.x"]
    assert [f.kind for f in find_all(func, For)][-1] == ForKind.VECTORIZED
    a = np.random.rand(16, 64).astype("float32")
    c = np.zeros((16, 64), "float32")
    _run(_schedule(_elementwise((16, 64))), a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def test_elementwise_with_a_ragged_size_is_not_vectorized():
    func = _schedule(_elementwise((5, 7)))
    assert ForKind.VECTORIZED not in [f.kind for f in find_all(func, For)]
    a = np.random.rand(5, 7).astype("float32")
    c = np.zeros((5, 7), "float32")
    _run(func, a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


# --------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("warp", [32, 1])
def test_long_reduction_is_shared_by_the_threads_of_a_block(warp):
    func = _schedule(_row_sum(3, 70))
    reduce_loops = [f for f in find_all(func, For) if f.kind == ForKind.THREAD_BINDING
                    and f.thread_binding.thread_tag == "threadIdx.x"]
    assert [f.extent.value for f in reduce_loops] == [64]  # next power of two, capped
    a = np.random.rand(3, 70).astype("float32")
    b = np.zeros(3, "float32")
    mod = _run(func, a, b, warp=warp)
    np.testing.assert_allclose(b, a.sum(1), rtol=1e-5)
    calls = {c.op.name for k in kernels(mod).values() for c in find_all(k, Call)}
    assert ("tir.tvm_warp_shuffle_down" in calls) == (warp == 32)


def test_short_reduction_gives_one_thread_per_output():
    func = _schedule(_row_sum(40, 8))
    loops = find_all(func, For)
    serial = [f for f in loops if f.kind == ForKind.SERIAL]
    assert len(serial) == 1 and serial[0].extent.value == 8  # the reduction stays in-thread
    a = np.random.rand(40, 8).astype("float32")
    b = np.zeros(40, "float32")
    mod = _run(func, a, b)
    np.testing.assert_allclose(b, a.sum(1), rtol=1e-5)
    assert not [c for k in kernels(mod).values() for c in find_all(k, Call)
                if c.op.name == "tir.tvm_warp_shuffle_down"]


# --------------------------------------------------------------------------- matmul


def test_matmul_tiles_operands_in_shared_memory_and_results_in_registers():
    func = _schedule(_matmul(32, 32, 16), GPUParams(max_threads=256))
    names = sorted(r.block.name_hint for r in find_all(func, tir.BlockRealize))
    assert names == ["A_shared", "B_shared", "C", "C_init", "C_local", "root"]
    mod = lower_gpu(func)
    assert all(verify_well_formed(f) for _, f in mod.items())
    (kernel,) = kernels(mod).values()
    scopes = sorted(a.scope for a in find_all(kernel, Allocate))
    assert scopes == ["local", "shared", "shared"]
    shared = [a for a in find_all(kernel, Allocate) if a.scope == "shared"]
    assert all(a.extents[0].value == 32 * 8 for a in shared)  # 32 x kt=8 tiles
    syncs = [c for c in find_all(kernel, Call) if c.op.name == "tir.tvm_storage_sync"]
    assert len(syncs) == 2
    rng = np.random.default_rng(0)
    a = rng.random((32, 16), dtype=np.float32)
    b = rng.random((16, 32), dtype=np.float32)
    c = np.zeros((32, 32), "float32")
    run_gpu_module(mod, "main", [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_small_matmul_falls_back_to_a_cross_thread_reduction():
    func = _schedule(_matmul(4, 4, 64))
    assert not [r for r in find_all(func, tir.BlockRealize) if "shared" in r.block.name_hint]
    rng = np.random.default_rng(1)
    a, b = rng.random((4, 64), dtype=np.float32), rng.random((64, 4), dtype=np.float32)
    c = np.zeros((4, 4), "float32")
    _run(func, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


# --------------------------------------------------------------------------- row pipelines


def test_softmax_is_one_kernel_with_register_intermediates():
    func = _schedule(_softmax(3, 40))
    mod = lower_gpu(func)
    assert all(verify_well_formed(f) for _, f in mod.items())
    (kernel,) = kernels(mod).values()
    host = mod["main"]
    assert not find_all(host, Allocate)  # no global workspace
    x = np.random.randn(3, 40).astype("float32")
    out = np.zeros((3, 40), "float32")
    run_gpu_module(mod, "main", [x, out])
    ref = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, ref / ref.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_layer_norm_is_one_kernel():
    func = _schedule(_layer_norm(2, 48))
    mod = lower_gpu(func)
    assert len(kernels(mod)) == 1
    x = np.random.randn(2, 48).astype("float32")
    out = np.zeros((2, 48), "float32")
    run_gpu_module(mod, "main", [x, out])
    mean = x.mean(1, keepdims=True)
    ref = (x - mean) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- the driver


def test_scheduled_and_loop_level_functions_are_left_alone():
    func = _named(_elementwise()).with_attr("tir.is_scheduled", True)
    assert schedule_gpu_func(func, gpu_target()) is func
    loop_level = tir.lower(_named(_elementwise()))["main"]
    assert schedule_gpu_func(loop_level, gpu_target()) is loop_level


def test_apply_schedules_every_function_of_a_module():
    mod = IRModule({"ew": _named(_elementwise(), "ew"), "red": _named(_row_sum(2, 64), "red")})
    out = apply_default_gpu_schedule(mod, gpu_target())
    assert all(f.attrs["tir.is_scheduled"] for _, f in out.items())
    assert apply_default_gpu_schedule(out, gpu_target()) is out


def test_params_follow_the_target_limits():
    p = GPUParams.from_target(gpu_target(max_num_threads=128, thread_warp_size=1))
    assert (p.max_threads, p.warp_size) == (128, 1)
    assert GPUParams.from_target(gpu_target()).max_threads == 256


def test_gpu_targets_get_the_gpu_pipeline():
    from tvm.tir.build import get_default_pipeline, is_gpu_target

    assert is_gpu_target(gpu_target())
    assert get_default_pipeline(gpu_target()).info.name == "tir.gpu_pipeline"
