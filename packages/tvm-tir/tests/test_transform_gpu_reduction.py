"""Cross-thread reductions (LowerCrossThreadReduction, LowerThreadAllreduce) and barrier
insertion (InjectStorageSync), checked for structure and, on the GPU simulator, numbers."""

import numpy as np
import pytest
from gpu_helpers import gpu_target, kernels, lower_gpu
from gpu_sim import run_gpu_module
from hypothesis import given, settings
from hypothesis import strategies as st
from lowering_helpers import find_all
from tvm import tir
from tvm.script import tir as T
from tvm.tir import Allocate, BlockRealize, BufferStore, Call, Evaluate, IfThenElse
from tvm.tir.transform import inject_storage_sync, lower_cross_thread_reduction
from tvm.tir.transform.lower_cross_thread_reduction import CrossThreadReductionError

N_ROWS = 4


def _reduce_func(n: int, kind: str = "sum", groups: int = 1):
    """Rows of ``n`` reduced by ``n`` threads (threadIdx.x), ``groups`` rows per block
    (threadIdx.y), ``N_ROWS * groups`` rows."""
    rows = N_ROWS * groups
    A = tir.decl_buffer((rows, n), "float32", "A")
    B = tir.decl_buffer((rows,), "float32", "B")
    a, b = tir.Var("a", "handle"), tir.Var("b", "handle")
    bx, ty, tx = tir.Var("bx"), tir.Var("ty"), tir.Var("tx")
    vi, vk = tir.Var("vi"), tir.Var("vk")
    init = {"sum": 0.0, "max": -3.0e38, "min": 3.0e38, "prod": 1.0}[kind]
    acc = B[vi]
    x = A[vi, vk]
    update = {"sum": acc + x, "max": tir.Max(acc, x), "min": tir.Min(acc, x),
              "prod": acc * x}[kind]
    block = tir.Block(
        (tir.IterVar(tir.Range(0, rows), vi, tir.IterVarType.DATA_PAR),
         tir.IterVar(tir.Range(0, n), vk, tir.IterVarType.COMM_REDUCE)),
        (), (), "B", BufferStore(B, update, (vi,)),
        BufferStore(B, tir.const(init, "float32"), (vi,)))
    realize = BlockRealize((bx * groups + ty, tx), tir.const(True), block)

    def bind(var, ext, body, tag):
        iv = tir.IterVar(None, tir.Var(tag), tir.IterVarType.THREAD_INDEX, tag)
        return tir.For(var, 0, ext, tir.ForKind.THREAD_BINDING, body, thread_binding=iv)

    loops = bind(bx, N_ROWS, bind(ty, groups, bind(tx, n, realize, "threadIdx.x"),
                                  "threadIdx.y"), "blockIdx.x")
    root = BlockRealize((), tir.const(True), tir.Block((), (), (), "root", loops))
    return tir.PrimFunc([a, b], root, buffer_map={a: A, b: B},
                        attrs={"global_symbol": "main"})


_NUMPY = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


def _check(n, kind="sum", groups=1, warp=32):
    mod = lower_gpu(_reduce_func(n, kind, groups), gpu_target(thread_warp_size=warp))
    rng = np.random.default_rng(n * 7 + groups)
    a = rng.uniform(0.5, 1.5, (N_ROWS * groups, n)).astype("float32")
    b = np.zeros(N_ROWS * groups, "float32")
    run_gpu_module(mod, "main", [a, b], warp_size=32)
    np.testing.assert_allclose(b, _NUMPY[kind](a, axis=1), rtol=1e-4)
    return mod


def _calls(mod, name):
    return [c for k in kernels(mod).values() for c in find_all(k, Call)
            if c.op.name == f"tir.{name}"]


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("n", [1, 6, 16, 32, 48, 96, 128])
@pytest.mark.parametrize("warp", [32, 1])
def test_sum_across_threads(n, warp):
    _check(n, "sum", warp=warp)


@pytest.mark.parametrize("kind", ["max", "min", "prod"])
def test_other_reducers(kind):
    _check(64, kind, warp=32)
    _check(12, kind, warp=1)


@pytest.mark.parametrize("n, groups", [(8, 4), (16, 2), (64, 2), (6, 3)])
@pytest.mark.parametrize("warp", [32, 1])
def test_independent_groups_in_one_block(n, groups, warp):
    _check(n, "sum", groups=groups, warp=warp)


@settings(max_examples=6, deadline=None)
@given(n=st.integers(2, 80), warp=st.sampled_from([1, 32]))
def test_any_thread_count_reduces_correctly(n, warp):
    _check(n, "sum", warp=warp)


# --------------------------------------------------------------------------- strategies


def test_warp_targets_use_shuffles_and_one_barrier_pair_per_stage():
    mod = _check(32, warp=32)
    assert len(_calls(mod, "tvm_warp_shuffle_down")) == 5  # log2(32)
    assert len(_calls(mod, "tvm_warp_shuffle")) == 1  # the broadcast
    assert not _calls(mod, "tvm_storage_sync")
    mod = _check(128, warp=32)  # 4 warps: shuffle, shared partials, shuffle again
    assert len(_calls(mod, "tvm_warp_shuffle_down")) == 5 + 2
    (alloc,) = [a for k in kernels(mod).values() for a in find_all(k, Allocate)
                if a.scope == "shared"]
    assert alloc.extents[0].value == 4


def test_targets_without_shuffles_use_a_shared_tree():
    mod = _check(48, warp=1)
    assert not _calls(mod, "tvm_warp_shuffle_down")
    (alloc,) = [a for k in kernels(mod).values() for a in find_all(k, Allocate)
                if a.scope == "shared"]
    assert alloc.extents[0].value == 48
    # fold 48 -> 32, then 16 8 4 2 1, a barrier after each step, the store and the read
    assert len(_calls(mod, "tvm_storage_sync")) == 1 + 1 + 5 + 1


def test_only_thread_zero_writes_a_global_result():
    out = lower_cross_thread_reduction(_reduce_func(32))
    (block,) = [r.block for r in find_all(out, BlockRealize) if r.block.name_hint != "root"]
    assert block.name_hint == "B_cross_thread"
    assert [b.scope for b in block.alloc_buffers] == ["local", "local"]
    (call,) = [c for c in find_all(out, Call) if c.op.name == "tir.tvm_thread_allreduce"]
    assert call.args[0].value == "sum"
    writes = [s for s in find_all(out, IfThenElse)
              if isinstance(s.then_case, BufferStore) and s.then_case.buffer.name == "B"]
    assert len(writes) == 1 and "tx" in str(writes[0].condition)


# --------------------------------------------------------------------------- errors


def test_reduction_that_threads_cannot_combine_is_rejected():
    func = _reduce_func(32)
    realize = [r for r in find_all(func, BlockRealize) if r.block.name_hint == "B"][0]
    block = realize.block
    B = block.body.buffer
    odd = block.with_fields(body=BufferStore(B, B[block.iter_vars[0].var] * 2.0 + 1.0,
                                             (block.iter_vars[0].var,)))
    from tvm.tir.stmt_functor import ir_transform

    bad = func.with_body(ir_transform(func.body, None, lambda s: s.with_fields(block=odd)
                                      if isinstance(s, BlockRealize) and s.block is block
                                      else None))
    with pytest.raises(CrossThreadReductionError, match=r"block 'B' is reduced across threads "
                                                        r"but its update B\[...\]"):
        lower_cross_thread_reduction(bad)


@T.prim_func
def reduce_by_blocks(A: T.Buffer((64,), "float32"), B: T.Buffer((1,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("B"):
                vk = T.axis.reduce(64, bx * 32 + tx)
                with T.init():
                    B[0] = T.float32(0)
                B[0] = B[0] + A[vk]


@T.prim_func
def not_a_perfect_nest(A: T.Buffer((4, 32), "float32"), B: T.Buffer((4,), "float32"),
                       C: T.Buffer((4, 32), "float32")):
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [bx, tx])
                C[vi, vj] = A[vi, vj]
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [bx, tx])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]


def test_reduction_over_blocks_is_rejected():
    with pytest.raises(CrossThreadReductionError, match=r"reduction loop 'bx' is bound to "
                                                        r"blockIdx.x; only threadIdx axes"):
        lower_cross_thread_reduction(reduce_by_blocks)


def test_reduction_nest_with_other_statements_is_rejected():
    with pytest.raises(CrossThreadReductionError, match=r"loop 'tx' must contain only the "
                                                        r"next loop"):
        lower_cross_thread_reduction(not_a_perfect_nest)


# --------------------------------------------------------------------------- barriers


@T.prim_func
def tiled_sum(A: T.Buffer((8, 64), "float32"), B: T.Buffer((64,), "float32")):
    S = T.alloc_buffer((64,), scope="shared")
    for _bx in T.thread_binding(1, thread="blockIdx.x"):
        for k in range(8):
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                with T.block("S"):
                    vk, vj = T.axis.remap("SS", [k, tx])
                    S[vj] = A[vk, vj]
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                with T.block("B"):
                    vj = T.axis.spatial(64, tx)
                    B[vj] = B[vj] + S[63 - vj]


def _syncs(stmt):
    return [e for e in find_all(stmt, Evaluate) if isinstance(e.value, Call)
            and e.value.op.name == "tir.tvm_storage_sync"]


def test_tile_loop_gets_a_barrier_before_the_load_and_before_the_use():
    mod = lower_gpu(tiled_sum)
    (kernel,) = kernels(mod).values()
    syncs = _syncs(kernel)
    assert [s.value.args[0].value for s in syncs] == ["shared", "shared"]
    (loop,) = find_all(kernel, tir.For)
    assert [bool(_syncs(x)) for x in loop.body.seq] == [True, False, True, False]
    a = np.random.rand(8, 64).astype("float32")
    b = np.zeros(64, "float32")
    run_gpu_module(mod, "main", [a, b])
    np.testing.assert_allclose(b, a.sum(0)[::-1], rtol=1e-5)


def test_each_thread_owning_its_element_needs_no_barrier():
    # B[tx] = B[tx] + ...: the same element, one per thread: no barrier for B
    mod = lower_gpu(tiled_sum)
    (kernel,) = kernels(mod).values()
    assert all(s.value.args[0].value == "shared" for s in _syncs(kernel))


@T.prim_func
def broadcast_through_global(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32"),
                             M: T.Buffer((1,), "float32")):
    for _bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("M"):
                v = T.axis.spatial(32, tx)
                T.where(tx == 0)
                M[0] = A[v] * T.float32(3)
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("B"):
                v = T.axis.spatial(32, tx)
                B[v] = A[v] + M[0]


def test_global_value_written_by_one_thread_and_read_by_all_gets_a_global_barrier():
    mod = lower_gpu(broadcast_through_global)
    (kernel,) = kernels(mod).values()
    assert [s.value.args[0].value for s in _syncs(kernel)] == ["global"]
    a = np.random.rand(32).astype("float32")
    b, m = np.zeros(32, "float32"), np.zeros(1, "float32")
    run_gpu_module(mod, "main", [a, b, m])
    np.testing.assert_allclose(b, a + 3 * a[0], rtol=1e-6)


def test_barriers_never_go_under_a_thread_dependent_condition():
    mod = lower_gpu(broadcast_through_global)
    (kernel,) = kernels(mod).values()
    for cond in find_all(kernel, IfThenElse):
        assert not _syncs(cond)
    # a kernel without thread attributes is left alone
    func = next(iter(tir.lower(tiled_sum).functions.values()))
    assert inject_storage_sync(func) is func
