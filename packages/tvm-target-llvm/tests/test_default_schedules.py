"""Default CPU schedules (tvm.target.llvm.schedule_rules) through ``tir.build``.

Numbers against numpy for every workload family with static and symbolic shapes, rule
dispatch by structure (not by names), user schedules left alone, and the vector FMA in the
generated assembly.
"""

from __future__ import annotations

import numpy as np
import pytest
import schedule_workloads as W
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm import te, tir
from tvm.target.llvm import host_has_feature
from tvm.target.llvm.schedule_rules import (
    SCHEDULED_ATTR, STRICT_ENV, cpu_info, explain_default_schedule, looks_scheduled,
    schedule_prim_func,
)
from tvm.tir.stmt import For, ForKind
from tvm.tir.stmt_functor import post_order_visit


@pytest.fixture(autouse=True)
def strict_rules(monkeypatch):
    """A rule that breaks raises instead of being skipped with a log message."""
    monkeypatch.setenv(STRICT_ENV, "1")


RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def run(func, inputs, out_shape, target="llvm"):
    mod = tir.build(func, target=target)
    out = np.zeros(out_shape, "float32")
    mod[func.attrs.get("global_symbol", "main")](*inputs, out)
    return out, mod


def loop_kinds(func) -> list[ForKind]:
    kinds = []
    post_order_visit(func.body, lambda n: kinds.append(n.kind) if isinstance(n, For) else None)
    return kinds


def sym(name: str = "n"):
    return te.var(name)


# -- numbers, static and symbolic --------------------------------------------------------------
@pytest.mark.parametrize("m", [37, 64, "sym"])
def test_matmul(m):
    a, b = rand(37 if m == "sym" else m, 48), rand(48, 96)
    f = W.matmul(sym() if m == "sym" else m, 96, 48)
    out, _ = run(f, [a, b], (a.shape[0], 96))
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_odd_sizes():
    a, b = rand(13, 29), rand(29, 70)
    out, _ = run(W.matmul(13, 70, 29), [a, b], (13, 70))
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m", [40, "sym"])
def test_matmul_bias_relu(m):
    a, b, bias = rand(40, 32), rand(32, 64), rand(64)
    f = W.matmul(sym() if m == "sym" else m, 64, 32, bias=True, relu=True)
    out, _ = run(f, [a, b, bias], (40, 64))
    np.testing.assert_allclose(out, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(24, 96, 40), (13, 70, 29)])
def test_dense(shape):
    m, n, k = shape
    x, w = rand(m, k), rand(n, k)
    out, _ = run(W.dense(m, n, k), [x, w], (m, n))
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("b", [3, "sym"])
def test_batch_matmul(b):
    x, y = rand(3, 17, 24), rand(3, 24, 32)
    f = W.batch_matmul(sym("b") if b == "sym" else b, 17, 32, 24)
    out, _ = run(f, [x, y], (3, 17, 32))
    np.testing.assert_allclose(out, x @ y, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, "sym"])
@pytest.mark.parametrize("groups", [1, 4, 16])
def test_conv2d_nchw(n, groups):
    k = 16 if groups == 16 else 32
    x, w = rand(2 if n == "sym" else 1, 16, 12, 16), rand(k, 16 // groups, 3, 3)
    f = W.conv2d_nchw(sym() if n == "sym" else n, 16, 12, 16, k, groups=groups)
    out, _ = run(f, [x, w], (x.shape[0], k, 12, 16))
    np.testing.assert_allclose(out, W.conv2d_nchw_ref(x, w, groups=groups), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("n", [1, "sym"])
def test_conv2d_nchw_narrow_image_vectorizes_output_channels(n):
    # a width of 12 holds no whole vector: the kernel vectorizes the 32 output channels,
    # packs the weights and accumulates channels-last, then writes NCHW back per tile
    x, w = rand(1, 8, 6, 12), rand(32, 8, 3, 3)
    f = W.conv2d_nchw(sym() if n == "sym" else n, 8, 6, 12, 32)
    plan = explain_default_schedule(f)
    assert plan["conv2d_nchw"] == "contraction"
    assert plan["W_global"] == plan["conv2d_nchw_global"] == "contraction (created)"
    out, _ = run(f, [x, w], (1, 32, 6, 12))
    np.testing.assert_allclose(out, W.conv2d_nchw_ref(x, w), rtol=1e-4, atol=1e-4)


def test_conv2d_nchw_strided():
    x, w = rand(1, 8, 16, 16), rand(32, 8, 3, 3)
    f = W.conv2d_nchw(1, 8, 16, 16, 32, stride=2)
    assert explain_default_schedule(f)["conv2d_nchw"] == "contraction"
    out, _ = run(f, [x, w], (1, 32, 8, 8))
    np.testing.assert_allclose(out, W.conv2d_nchw_ref(x, w, stride=2), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, "sym"])
def test_conv2d_nhwc(n):
    x, w = rand(1, 10, 16, 8), rand(3, 3, 8, 32)
    f = W.conv2d_nhwc(sym() if n == "sym" else n, 10, 16, 8, 32)
    out, _ = run(f, [x, w], (1, 10, 16, 32))
    np.testing.assert_allclose(out, W.conv2d_nhwc_ref(x, w), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 33, 64), (3, 7, 5)])
def test_elementwise_broadcast(shape):
    x, bb = rand(*shape), rand(shape[1], 1)
    out, _ = run(W.add_broadcast(shape, (shape[1], 1)), [x, bb], shape)
    np.testing.assert_allclose(out, np.maximum(x + bb, 0), rtol=1e-6)


def test_elementwise_symbolic():
    n = sym()
    A = te.placeholder((n, 48), name="A")
    B = te.compute((n, 48), lambda i, j: te.sigmoid(A[i, j]) * 2.0, name="B")
    x = rand(45, 48)
    out, _ = run(te.create_prim_func([A, B]), [x], (45, 48))
    np.testing.assert_allclose(out, 2 / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("static", [True, False])
def test_reduce_sum(axis, static):
    x = rand(40, 96)
    shape = (40, 96) if static else ((sym(), 96) if axis == 1 else (40, sym()))
    out, _ = run(W.reduce_sum(shape, axis), [x], x.sum(axis).shape)
    np.testing.assert_allclose(out, x.sum(axis), rtol=1e-4, atol=1e-4)


def test_reduce_max():
    x = rand(40, 96)
    out, _ = run(W.reduce_max_last(40, 96), [x], (40,))
    np.testing.assert_array_equal(out, x.max(1))


@pytest.mark.parametrize("m", [24, "sym"])
def test_softmax(m):
    x = rand(24, 80) * 4
    out, _ = run(W.softmax(sym() if m == "sym" else m, 80), [x], (24, 80))
    np.testing.assert_allclose(out, W.softmax_ref(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("m", [24, "sym"])
def test_softmax_keepdims_int64(m):
    x = rand(24, 80)
    f = W.softmax_keepdims(te.var("m", "int64") if m == "sym" else m, 80)
    assert explain_default_schedule(f)["T_softmax_exp"] == "row group"
    out, _ = run(f, [x], (24, 80))
    np.testing.assert_allclose(out, W.softmax_ref(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("n", [80, "sym"])
def test_row_group_intermediates_are_one_row_each(n):
    """The per-row stages of a softmax keep their intermediates (maximum, exponentials,
    sums, rfactor lanes) in ``local`` scope, so lowering allocates one row of each inside
    the parallel row loop instead of the whole tensor on the heap per call; a row of
    symbolic length keeps them global (no constant size for one row)."""
    from tvm.tir.stmt import Allocate

    f = W.softmax(256, sym() if n == "sym" else n)
    scheduled = schedule_prim_func(f, "llvm -num-cores=4")
    scopes = {b.name: b.scope for b in scheduled.body.block.alloc_buffers}
    assert "T_softmax_exp" in scopes
    want = "global" if n == "sym" else "local"
    assert all(s == want for s in scopes.values()), scopes
    if n == "sym":
        return
    lowered = tir.lower(scheduled)["main"]
    allocs = []
    post_order_visit(lowered.body, lambda s: allocs.append(s) if isinstance(s, Allocate) else None)
    sizes = sorted(int(np.prod([int(e) for e in a.extents])) for a in allocs)
    assert max(sizes) == 80 and all(a.annotations.get("storage") == "stack" for a in allocs)
    x = rand(256, 80) * 4
    out = np.zeros((256, 80), "float32")
    tir.build(scheduled, "llvm -num-cores=4")["main"](x, out)
    np.testing.assert_allclose(out, W.softmax_ref(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("m", [24, "sym"])
def test_layer_norm(m):
    x, g, b = rand(24, 64), rand(64), rand(64)
    out, _ = run(W.layer_norm(sym() if m == "sym" else m, 64), [x, g, b], (24, 64))
    np.testing.assert_allclose(out, W.layer_norm_ref(x, g, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("b", [2, "sym"])
def test_attention(b):
    q, k, v = rand(2, 32, 16), rand(2, 32, 16), rand(2, 32, 16)
    f = W.attention(sym("b") if b == "sym" else b, 32, 16)
    plan = explain_default_schedule(f)
    assert plan["scores"] == plan["out"] == "contraction"
    assert plan["mx"] == plan["probs"] == "row group"
    out, _ = run(f, [q, k, v], (2, 32, 16))
    scores = q @ k.transpose(0, 2, 1)
    np.testing.assert_allclose(out, W.softmax_ref(scores) @ v, rtol=1e-4, atol=1e-5)


def test_int64_indices_as_relax_legalizes():
    A = te.placeholder((40, 48), name="A")
    B = te.placeholder((48, 64), name="B")
    b = te.placeholder((64,), name="b")
    r = te.reduce_axis((0, 48), name="k")
    C = te.compute((40, 64), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="matmul")
    D = te.compute((40, 64), lambda i, j: te.max(C[i, j] + b[j], 0.0), name="compute")
    f = te.create_prim_func([A, B, b, D], index_dtype_override="int64")
    assert explain_default_schedule(f)["compute"] == "epilogue of matmul"
    a, bb, bias = rand(40, 48), rand(48, 64), rand(64)
    out, _ = run(f, [a, bb, bias], (40, 64))
    np.testing.assert_allclose(out, np.maximum(a @ bb + bias, 0), rtol=1e-4, atol=1e-4)


# -- dispatch by structure ---------------------------------------------------------------------
def _matmul_named(name: str):
    A = te.placeholder((64, 32), name="p0")
    B = te.placeholder((32, 64), name="p1")
    k = te.reduce_axis((0, 32), name="r")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name=name)
    return te.create_prim_func([A, B, C]).with_attr("global_symbol", name)


def test_rules_follow_structure_not_names():
    f = _matmul_named("foo")
    assert explain_default_schedule(f)["foo"] == "contraction"
    scheduled = schedule_prim_func(f)
    kinds = loop_kinds(scheduled)
    assert ForKind.VECTORIZED in kinds and ForKind.UNROLLED in kinds
    assert ForKind.PARALLEL in kinds
    a, b = rand(64, 32), rand(32, 64)
    out, _ = run(f, [a, b], (64, 64))
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_fused_matmul_gets_its_epilogue():
    f = W.matmul(64, 64, 32, bias=True, relu=True)
    plan = explain_default_schedule(f)
    assert plan["C"] == "contraction"
    assert plan["T_add"] == "inlined"
    assert plan["T_relu"] == "epilogue of C"
    text = schedule_prim_func(f).script()
    # the epilogue runs per output tile: inside the parallel loop, after the k loop
    par = text.index("T.parallel")
    assert text.index('T.block("T_relu")') > text.index('T.block("C")') > par


def test_symbolic_batch_fuses_constant_loops_into_the_parallel_loop():
    """With ``batch`` symbolic (often 1), the heads loop joins the parallel loop."""
    b = sym("b")
    A = te.placeholder((b, 8, 64, 32), name="A")
    B = te.placeholder((b, 8, 32, 64), name="B")
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((b, 8, 64, 64), lambda n, h, i, j: te.sum(A[n, h, i, k] * B[n, h, k, j],
                                                              axis=k), name="C")
    f = schedule_prim_func(te.create_prim_func([A, B, C]), "llvm -num-cores=2")
    extents = []
    post_order_visit(f.body, lambda n: extents.append(n.extent)
                     if isinstance(n, For) and n.kind == ForKind.PARALLEL else None)
    assert len(extents) == 1
    from tvm.arith import Analyzer

    assert Analyzer().can_prove(extents[0] == b * 8)  # was ``b`` alone: 1 task at batch 1
    a, bb = rand(1, 8, 64, 32), rand(1, 8, 32, 64)
    out, _ = run(te.create_prim_func([A, B, C]), [a, bb], (1, 8, 64, 64))
    np.testing.assert_allclose(out, a @ bb, rtol=1e-4, atol=1e-4)


def test_epilogue_reading_a_broadcast_batch_index_runs_per_tile():
    """A fused conv + scale/shift/relu whose epilogue reads ``conv[0, c, y, x]`` (batch 1
    broadcast, as FuseTIR writes it) gets the epilogue inside the tile loop, not as a
    separate parallel pass over the output."""
    X = te.placeholder((1, 8, 7, 7), name="X")
    Wt = te.placeholder((64, 8, 3, 3), name="W")
    s = te.placeholder((64, 1, 1), name="s")
    P = te.compute((1, 8, 9, 9), lambda n, c, y, x: te.if_then_else(
        te.all(y >= 1, y < 8, x >= 1, x < 8), X[n, c, y - 1, x - 1], 0.0), name="pad")
    rc, ry, rx = (te.reduce_axis((0, e), name=nm) for e, nm in ((8, "rc"), (3, "ry"), (3, "rx")))
    conv = te.compute((1, 64, 7, 7), lambda n, o, y, x: te.sum(
        P[n, rc, y + ry, x + rx] * Wt[o, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    out = te.compute((1, 64, 7, 7), lambda n, o, y, x: te.max(
        conv[0, o, y, x] * s[o, 0, 0], 0.0), name="T_relu")
    f = te.create_prim_func([X, Wt, s, out])
    plan = explain_default_schedule(f)
    assert plan["conv"] == "contraction" and plan["T_relu"] == "epilogue of conv"
    text = schedule_prim_func(f).script()
    assert text.count("T.parallel") == 1
    x, w, sc = rand(1, 8, 7, 7), rand(64, 8, 3, 3), rand(64, 1, 1)
    got, _ = run(f, [x, w, sc], (1, 64, 7, 7))
    ref = np.maximum(W.conv2d_nchw_ref(x, w) * sc[None], 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("builder, block, rule", [
    (lambda: W.conv2d_nchw(1, 8, 8, 8, 16), "conv2d_nchw", "contraction"),
    (lambda: W.conv2d_nhwc(1, 8, 8, 8, 16), "conv2d_nhwc", "contraction"),
    (lambda: W.conv2d_nchw(1, 16, 8, 8, 16, groups=16), "conv2d_nchw", "contraction"),
    (lambda: W.batch_matmul(2, 8, 16, 8), "T_batch_matmul", "contraction"),
    (lambda: W.dense(8, 32, 16), "T_dense", "contraction"),
    (lambda: W.reduce_sum((8, 64), 1), "T_sum", "reduction"),
    (lambda: W.softmax(8, 64), "T_softmax_exp", "row group"),
    (lambda: W.layer_norm(8, 64), "T_layer_norm", "row group"),
    (lambda: W.add_broadcast((4, 8, 32), (8, 1)), "T_add_relu", "elementwise"),
])
def test_dispatch(builder, block, rule):
    assert explain_default_schedule(builder())[block] == rule


def test_dense_weight_is_packed():
    plan = explain_default_schedule(W.dense(8, 32, 16))
    assert plan.get("W_global") == "contraction (created)"


def test_padding_stage_placement():
    # a convolution reads every padded channel for each output channel: one padding pass
    plan = explain_default_schedule(W.conv2d_nchw(1, 8, 8, 8, 16))
    assert plan["pad_temp"] == "elementwise"
    # a depthwise one reads one padded channel per channel: pad it right before its use
    plan = explain_default_schedule(W.conv2d_nchw(1, 16, 8, 8, 16, groups=16))
    assert plan["pad_temp"] == "prologue of conv2d_nchw"


# -- user schedules ------------------------------------------------------------------------------
def test_marked_function_is_left_alone():
    f = W.matmul(32, 32, 32).with_attr(SCHEDULED_ATTR, True)
    assert schedule_prim_func(f) is f
    assert explain_default_schedule(f) == {}
    lowered = tir.lower(f, target="llvm")["main"]
    assert set(loop_kinds(lowered)) == {ForKind.SERIAL}


def test_hand_scheduled_function_is_left_alone():
    f = W.matmul(32, 32, 32)
    sch = tir.Schedule(f)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.split(i, [None, 4])
    user = sch.mod["main"]
    assert looks_scheduled(user)
    result = schedule_prim_func(user)
    assert result.attrs[SCHEDULED_ATTR]
    from tvm.ffi import structural_equal

    assert structural_equal(result.body, user.body)
    a, b = rand(32, 32), rand(32, 32)
    out, _ = run(user, [a, b], (32, 32))
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_build_marks_scheduled_functions():
    from tvm.ir.module import IRModule
    from tvm.target.llvm.schedule_rules import apply_default_schedules

    mod = IRModule({"mm": W.matmul(16, 32, 16).with_attr("global_symbol", "mm")})
    out = apply_default_schedules(mod, "llvm")
    assert out["mm"].attrs[SCHEDULED_ATTR]
    assert apply_default_schedules(out, "llvm") is out


# -- the machine code ------------------------------------------------------------------------------
def _kernel_asm(target: str) -> str:
    f = W.matmul(64, 64, 64)
    _, mod = run(f, [rand(64, 64), rand(64, 64)], (64, 64), target=target)
    return mod.get_source("asm")


@pytest.mark.skipif(not host_has_feature("avx2") or not host_has_feature("fma"),
                    reason="needs an AVX2+FMA host to run the kernel")
def test_matmul_asm_has_ymm_fma_on_avx2():
    asm = _kernel_asm("llvm -mcpu=haswell")
    fma = [line for line in asm.splitlines() if "vfmadd" in line and "ps" in line]
    assert fma and all("ymm" in line for line in fma)
    assert len(fma) >= 8  # a register tile of several accumulators


@pytest.mark.skipif(not host_has_feature("fma"), reason="needs an FMA host")
def test_matmul_asm_has_vector_fma_on_host():
    asm = _kernel_asm("llvm")
    width = "zmm" if cpu_info().vector_bytes == 64 else "ymm"
    assert any("vfmadd" in line and width in line for line in asm.splitlines())


# -- properties ----------------------------------------------------------------------------------
@st.composite
def _workloads(draw):
    """A random elementwise, broadcast, reduction or matmul workload with its inputs."""
    kind = draw(st.sampled_from(["elementwise", "reduce", "matmul"]))
    dims = draw(st.lists(st.integers(1, 40), min_size=1, max_size=3))
    symbolic = draw(st.booleans())
    shape = tuple(dims)
    if kind == "matmul":
        m, n, k = draw(st.integers(1, 20)), draw(st.integers(1, 48)), draw(st.integers(1, 20))
        a, b = rand(m, k), rand(k, n)
        return W.matmul(sym() if symbolic else m, n, k), [a, b], a @ b
    te_shape = (sym(),) + shape[1:] if symbolic else shape
    x = rand(*shape)
    if kind == "elementwise":
        bshape = (shape[-1],)
        bb = rand(*bshape)
        A = te.placeholder(te_shape, name="A")
        B = te.placeholder(bshape, name="B")
        C = te.compute(te_shape, lambda *i: te.max(A[i] * 2.0 + B[i[-1]], 0.0), name="C")
        return te.create_prim_func([A, B, C]), [x, bb], np.maximum(x * 2 + bb, 0)
    axis = draw(st.integers(0, len(shape) - 1))
    return W.reduce_sum(te_shape, axis), [x], x.sum(axis)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(_workloads())
def test_default_schedules_keep_numbers(case):
    func, inputs, ref = case
    out, _ = run(func, inputs, ref.shape)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
