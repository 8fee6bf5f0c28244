"""GPU lowering: thread binding to launch attributes, launch checks, host/device split,
shared/local buffer compaction, and the whole GPU pipeline run on the GPU simulator."""

import numpy as np
import pytest
from gpu_helpers import gpu_target, kernels, lower_gpu
from gpu_sim import run_gpu_module
from lowering_helpers import find_all
from tvm import tir
from tvm.ir import IRModule
from tvm.script import tir as T
from tvm.tir import (
    Allocate, AttrStmt, BufferStore, Call, DeclBuffer, For, ForKind, IfThenElse, IterVar,
    IterVarType, Var, decl_buffer,
)
from tvm.tir.transform import (
    GPUCodeError, LowerOpaqueBlock, lower_thread_binding, split_host_device, verify_gpu_code,
)
from tvm.tir.transform._gpu import GPULimits


@T.prim_func
def add_one(A: T.Buffer((1000,), "float32"), B: T.Buffer((1000,), "float32")):
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            with T.block("B"):
                vi = T.axis.spatial(1000, bx * 128 + tx)
                T.where(bx * 128 + tx < 1000)
                B[vi] = A[vi] + T.float32(1)


@T.prim_func
def two_stages(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    S = T.alloc_buffer((64,), scope="shared")
    for _bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("S"):
                v = T.axis.spatial(64, tx)
                S[v] = A[v] * T.float32(2)
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("B"):
                v = T.axis.spatial(32, tx)
                B[v] = S[v] + S[63 - v]


@T.prim_func
def unbound(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i in range(16):
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, tx])
                B[vi, vj] = A[vi, vj]


@T.prim_func
def host_loop(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i in range(16):
        B[i, 0] = A[i, 0]


@T.prim_func
def too_many_threads(A: T.Buffer((2048,), "float32")):
    for tx in T.thread_binding(2048, thread="threadIdx.x"):
        with T.block("A"):
            v = T.axis.spatial(2048, tx)
            A[v] = T.float32(0)


@T.prim_func
def big_shared(A: T.Buffer((16384,), "float32")):
    S = T.alloc_buffer((16384,), scope="shared")
    for _bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            for k in range(128):
                with T.block("S"):
                    v = T.axis.spatial(16384, k * 128 + tx)
                    S[v] = T.float32(1)
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            for k in range(128):
                with T.block("A"):
                    v = T.axis.spatial(16384, k * 128 + tx)
                    A[v] = S[16383 - v]


def _lowered(func):
    mod = IRModule({"main": func.with_attr("global_symbol", "main")})
    return tir.lower(mod)["main"]


def _attrs(stmt):
    return [a for a in find_all(stmt, AttrStmt) if a.attr_key == "thread_extent"]


# --------------------------------------------------------------------------- thread binding


def test_bound_loops_become_launch_attributes_in_axis_order():
    func = lower_thread_binding(_lowered(add_one))
    attrs = _attrs(func.body)
    assert [(a.node.thread_tag, a.value.value) for a in attrs] == [("blockIdx.x", 8),
                                                                   ("threadIdx.x", 128)]
    assert attrs[0].body is attrs[1]
    assert not [f for f in find_all(func, For) if f.kind == ForKind.THREAD_BINDING]
    (store,) = find_all(func, BufferStore)
    used = {v.name for v in tir.free_vars(store.indices[0])}
    assert used == {"blockIdx.x", "threadIdx.x"}


def test_sibling_loops_share_an_axis_and_a_shorter_one_is_guarded():
    func = lower_thread_binding(_lowered(two_stages))
    _, attr = _attrs(func.body)
    assert attr.node.thread_tag == "threadIdx.x" and attr.value.value == 64
    guards = [s for s in find_all(func, IfThenElse)
              if "threadIdx.x" in {v.name for v in tir.free_vars(s.condition)}]
    assert len(guards) == 1 and guards[0].condition.b.value == 32


def _bound_nest(outer_ext, inner_ext, tag="threadIdx.x"):
    A = decl_buffer((64,), "float32", "A")
    a = Var("a", "handle")
    i, j = Var("i"), Var("j")
    iv = IterVar(None, Var(tag), IterVarType.THREAD_INDEX, tag)
    iv2 = IterVar(None, Var(tag), IterVarType.THREAD_INDEX, tag)
    inner = For(j, 0, inner_ext, ForKind.THREAD_BINDING, BufferStore(A, 1.0, (j,)),
                thread_binding=iv2)
    outer = For(i, 0, outer_ext, ForKind.THREAD_BINDING, inner, thread_binding=iv)
    return tir.PrimFunc([a], outer, buffer_map={a: A}, attrs={"global_symbol": "nest"})


def test_nested_loops_on_one_axis_share_its_threads():
    func = lower_thread_binding(_bound_nest(32, 32))
    assert len(_attrs(func.body)) == 1
    (store,) = find_all(func, BufferStore)
    assert store.indices[0].name == "threadIdx.x"


def test_nested_loop_larger_than_its_enclosing_axis_is_rejected():
    with pytest.raises(ValueError, match=r"loop 'j' .* threadIdx.x with extent 64 inside loop "
                                         r"'i'.*extent 32"):
        lower_thread_binding(_bound_nest(32, 64))


def test_unknown_thread_tag_is_rejected():
    with pytest.raises(ValueError, match=r"loop 'i' in nest is bound to 'warp.x'"):
        lower_thread_binding(_bound_nest(32, 32, tag="warp.x"))


def test_vthread_becomes_a_serial_loop():
    A = decl_buffer((2, 4, 32), "float32", "A")
    a = Var("a", "handle")
    b, v, t = Var("b"), Var("v"), Var("t")

    def bound(var, ext, body, tag):
        iv = IterVar(None, Var(tag), IterVarType.THREAD_INDEX, tag)
        return For(var, 0, ext, ForKind.THREAD_BINDING, body, thread_binding=iv)

    body = bound(b, 2, bound(v, 4, bound(t, 32, BufferStore(A, 1.0, (b, v, t)),
                                         "threadIdx.x"), "vthread"), "blockIdx.x")
    func = lower_thread_binding(tir.PrimFunc([a], body, buffer_map={a: A}))
    attrs = _attrs(func.body)
    assert [x.node.thread_tag for x in attrs] == ["blockIdx.x", "threadIdx.x"]
    (loop,) = find_all(func, For)
    assert loop.kind == ForKind.SERIAL and loop.extent.value == 4
    assert attrs[1].body is loop
    outside = lower_thread_binding(tir.PrimFunc([a], body.body, buffer_map={a: A}))
    assert isinstance(outside.body, For) and outside.body.kind == ForKind.SERIAL
    assert _attrs(outside.body.body)


# --------------------------------------------------------------------------- launch checks


def test_unbound_loop_is_rejected_naming_the_loop_and_buffer():
    func = lower_thread_binding(_lowered(host_loop))
    with pytest.raises(GPUCodeError, match=r"main: loop 'i' is not bound to a GPU thread axis, "
                                           r"but its body writes buffer 'B'"):
        verify_gpu_code(func, GPULimits())


def test_loop_outside_a_kernel_is_fine_when_it_only_launches():
    func = lower_thread_binding(_lowered(unbound))
    verify_gpu_code(func, GPULimits())  # the host loop i launches the kernel 16 times
    mod = lower_gpu(unbound)
    a = np.random.rand(16, 16).astype("float32")
    b = np.zeros((16, 16), "float32")
    run_gpu_module(mod, "main", [a, b])
    np.testing.assert_array_equal(a, b)


def test_too_many_threads_names_the_limit():
    func = lower_thread_binding(_lowered(too_many_threads))
    with pytest.raises(GPUCodeError, match=r"threadIdx.x = 2048 exceeds the target's limit of "
                                           r"1024"):
        verify_gpu_code(func, GPULimits())
    with pytest.raises(GPUCodeError, match=r"2048 threads per block.*max_num_threads = 256"):
        verify_gpu_code(func, GPULimits(max_num_threads=256, max_thread_dims=(4096, 1, 1)))


def test_pipeline_uses_the_target_limits():
    with pytest.raises(GPUCodeError, match=r"128 threads per block \(threadIdx.x=128\), more "
                                           r"than the target's max_num_threads = 64"):
        lower_gpu(add_one, gpu_target(max_num_threads=64))
    with pytest.raises(GPUCodeError, match="threadIdx.x = 128 exceeds the target's limit of 100"):
        lower_gpu(add_one, gpu_target(max_thread_dims="100,100,64"))


def test_shared_memory_over_the_limit_is_rejected():
    with pytest.raises(GPUCodeError, match=r"65536 bytes of shared memory, more than the "
                                           r"target's max_shared_memory_per_block = 49152"):
        lower_gpu(big_shared)


def test_symbolic_thread_extent_and_global_allocation_in_a_kernel_are_rejected():
    n = Var("n")
    A = decl_buffer((n,), "float32", "A")
    a = Var("a", "handle")
    tx = IterVar(None, Var("threadIdx.x"), IterVarType.THREAD_INDEX, "threadIdx.x")
    body = AttrStmt(tx, "thread_extent", n, BufferStore(A, 1.0, (tx.var,)))
    func = tir.PrimFunc([a], body, buffer_map={a: A}, attrs={"global_symbol": "f"})
    with pytest.raises(GPUCodeError, match=r"f: threadIdx.x has the extent n, which is not a "
                                           r"constant"):
        verify_gpu_code(func, GPULimits())
    W = decl_buffer((4,), "float32", "W")
    inner = Allocate(W.data, "float32", (4,), tir.const(True),
                     DeclBuffer(W, BufferStore(W, 1.0, (0,))))
    func = func.with_body(AttrStmt(tx, "thread_extent", 32, inner))
    with pytest.raises(GPUCodeError, match=r"buffer 'W' is allocated inside a kernel in the "
                                           r"'global' scope"):
        verify_gpu_code(func, GPULimits())


# --------------------------------------------------------------------------- split


@T.prim_func
def two(a: T.handle, b: T.handle, alpha: T.float32):
    m = T.int32()
    A = T.match_buffer(a, (m,), "float32")
    B = T.match_buffer(b, (m,), "float32")
    for bx in T.thread_binding((m + 63) // 64, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("B"):
                v = T.axis.spatial(m, bx * 64 + tx)
                T.where(bx * 64 + tx < m)
                B[v] = A[v] * alpha
    for bx in T.thread_binding((m + 63) // 64, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("A"):
                v = T.axis.spatial(m, bx * 64 + tx)
                T.where(bx * 64 + tx < m)
                A[v] = B[v] + T.float32(1)


def test_split_outlines_kernels_with_their_launch_and_params():
    mod = lower_gpu(add_one)
    host = mod["main"]
    (kernel,) = kernels(mod).values()
    assert kernel.attrs["global_symbol"] == "main_kernel"
    assert kernel.attrs["calling_conv"] == "device_kernel_launch"
    assert kernel.attrs["tir.kernel_launch_params"] == ["blockIdx.x", "threadIdx.x"]
    assert kernel.attrs["thread_extent"] == [["blockIdx.x", 8], ["threadIdx.x", 128]]
    assert [p.name for p in kernel.params] == ["A", "B"]
    assert host.attrs["tir.device_kernels"] == ["main_kernel"]
    (call,) = find_all(host.body, Call)
    assert call.op.name == "tir.tvm_call_packed"
    assert call.args[0].value == "main_kernel"
    assert [getattr(a, "value", None) for a in call.args[3:]] == [8, 128]
    assert call.args[1] is host.buffer_map[host.params[0]].data


def test_split_names_several_kernels_and_passes_scalars():
    mod = lower_gpu(two, name="two")
    ks = kernels(mod)
    assert sorted(ks) == ["two_kernel", "two_kernel_1"]
    params = ks["two_kernel"].params
    assert [p.dtype for p in params] == ["handle", "handle", "int32", "float32"]
    assert params[2].name == "m" and params[3].name == "alpha"
    a = np.random.rand(100).astype("float32")
    b = np.zeros(100, "float32")
    a0 = a.copy()
    run_gpu_module(mod, "two", [a, b, 3.0])
    np.testing.assert_allclose(b, a0 * 3, rtol=1e-6)
    np.testing.assert_allclose(a, a0 * 3 + 1, rtol=1e-6)


def test_shared_allocations_are_hoisted_to_the_kernel_top():
    mod = lower_gpu(two_stages)
    (kernel,) = kernels(mod).values()
    _, attr = _attrs(kernel.body)
    assert isinstance(attr.body, Allocate) and attr.body.scope == "shared"
    a = np.random.rand(64).astype("float32")
    b = np.zeros(64, "float32")
    run_gpu_module(mod, "main", [a, b])
    np.testing.assert_allclose(b[:32], 2 * a[:32] + 2 * a[::-1][:32], rtol=1e-6)


def test_split_leaves_a_module_without_kernels_alone():
    mod = IRModule({"main": _lowered(host_loop)})
    assert split_host_device(mod) is mod


# --------------------------------------------------------------------------- compaction


@T.prim_func
def tiled_copy(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    S = T.alloc_buffer((64, 64), scope="shared")
    L = T.alloc_buffer((64, 64), scope="local")
    for by in T.thread_binding(4, thread="blockIdx.y"):
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            for i in range(16):
                with T.block("S"):
                    vi, vj = T.axis.remap("SS", [i, tx])
                    S[by * 16 + vi, vj * 4] = A[by * 16 + vi, vj * 4]
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            for i in range(16):
                with T.block("L"):
                    vi, vj = T.axis.remap("SS", [i, tx])
                    L[by * 16 + vi, vj] = S[by * 16 + 15 - vi, vj * 4]
            for i in range(16):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, tx])
                    B[by * 16 + vi, vj] = L[by * 16 + vi, vj]


def test_shared_and_local_buffers_shrink_to_their_use():
    mod = lower_gpu(tiled_copy)
    (kernel,) = kernels(mod).values()
    allocs = {a.scope: a for a in find_all(kernel, Allocate)}
    # shared: the block's 16 rows x (every thread's column 0..60) -> 16 x 61
    assert [e.value for e in allocs["shared"].extents] == [16 * 61]
    # local: one thread's 16 rows of its own column
    assert [e.value for e in allocs["local"].extents] == [16]
    a = np.random.rand(64, 64).astype("float32")
    b = np.zeros((64, 64), "float32")
    run_gpu_module(mod, "main", [a, b])
    expected = np.zeros((64, 64), "float32")
    for by in range(4):
        for i in range(16):
            expected[by * 16 + i, :16] = a[by * 16 + 15 - i, 0:64:4]
    np.testing.assert_array_equal(b, expected)


def test_lowering_without_blocks_lowered_first_keeps_loops():
    func = LowerOpaqueBlock()(IRModule({"main": add_one}))["main"]
    assert [f.kind for f in find_all(func, For)] == [ForKind.THREAD_BINDING] * 2


@T.prim_func
def unused_scratch(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    acc = T.alloc_buffer((1,), scope="local")
    spare = T.alloc_buffer((1,), scope="local")  # noqa: F841 - never read or written
    for _bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(8, thread="threadIdx.x"):
            with T.block("B"):
                v = T.axis.spatial(8, tx)
                acc[0] = A[v] * T.float32(2)
                B[v] = acc[0]


def test_an_unused_local_buffer_is_dropped_not_left_on_the_host():
    mod = lower_gpu(unused_scratch)
    (kernel,) = kernels(mod).values()
    assert [a.buffer_var.name for a in find_all(kernel, Allocate)] == ["acc"]
    host = mod["main"]
    assert find_all(host, Allocate) == []  # the host cannot allocate local memory
    a = np.random.rand(8).astype("float32")
    b = np.zeros(8, "float32")
    run_gpu_module(mod, "main", [a, b])
    np.testing.assert_array_equal(b, a * 2)
