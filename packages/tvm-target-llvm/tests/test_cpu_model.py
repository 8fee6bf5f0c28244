"""The CPU model the rules schedule for (schedule_rules.cpu) and what the contraction rule
makes of it: register tiles sized to the target's register file, panel packing of the
vector-side operand, the reduction blocked for L1, parallel strips outside the blocked
reduction.  Structural checks on the scheduled TIR, and numbers against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import schedule_workloads as W
from tvm import tir
from tvm.ffi import structural_equal
from tvm.target.llvm.schedule_rules import (
    STRICT_ENV, analyze_block, cpu_info, explain_default_schedule, schedule_prim_func,
)
from tvm.target.llvm.schedule_rules.contraction import choose_tile, tile_rate
from tvm.target.llvm.schedule_rules.cpu import CPUInfo
from tvm.target.llvm.schedule_rules.rules import _contraction
from tvm.tir.stmt import Allocate, For, ForKind
from tvm.tir.stmt_functor import post_order_visit

HASWELL = "llvm -mcpu=haswell -num-cores=2"
SKX = "llvm -mcpu=skylake-avx512 -num-cores=2"
NEON = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76 -num-cores=4"
RVV = "llvm -mtriple=riscv64-linux-gnu -mattr=+m,+a,+f,+d,+c,+v -num-cores=4"


@pytest.fixture(autouse=True)
def strict_rules(monkeypatch):
    monkeypatch.setenv(STRICT_ENV, "1")


# -- the model --------------------------------------------------------------------------------
@pytest.mark.parametrize("target, vbytes, regs, l1, l2, isa, fma", [
    (HASWELL, 32, 16, 32, 256, "AVX2+FMA", True),
    ("llvm -mcpu=znver3", 32, 16, 32, 512, "AVX2+FMA", True),
    (SKX, 64, 32, 32, 1024, "AVX-512", True),
    ("llvm -mcpu=haswell -mattr=-avx2,-avx,-fma", 16, 16, 32, 256, "SSE", False),
    (NEON, 16, 32, 64, 512, "NEON", True),
    (RVV, 16, 32, 32, 512, "RVV (VLEN>=128)", True),
    ("llvm -mtriple=riscv64-linux-gnu -mattr=+v,+zvl256b", 32, 32, 32, 512, "RVV (VLEN>=256)",
     True),
])
def test_cpu_info_comes_from_the_target_not_the_host(target, vbytes, regs, l1, l2, isa, fma):
    cpu = cpu_info(target)
    assert (cpu.vector_bytes, cpu.vector_registers) == (vbytes, regs)
    assert (cpu.l1_bytes, cpu.l2_bytes) == (l1 * 1024, l2 * 1024)
    assert cpu.isa == isa
    assert cpu.fma is fma


def test_host_cpu_info_reads_the_machine():
    cpu = cpu_info("llvm")
    assert cpu.num_cores >= 1
    assert cpu.l1_bytes >= 16 * 1024 and cpu.l2_bytes >= cpu.l1_bytes


def test_cross_target_cores_are_its_own():
    assert cpu_info(NEON).num_cores == 4
    assert cpu_info("llvm -mtriple=aarch64-linux-gnu").num_cores == 0  # unknown, not ours


def test_tile_rate_is_bounded_by_fma_units_loads_and_latency():
    cpu = CPUInfo(vector_bytes=32, vector_registers=16, fma=True, fma_units=2, fma_latency=5)
    assert tile_rate(6, 2, cpu) == pytest.approx(2.0)      # 12 FMAs in 6 cycles: peak
    assert tile_rate(2, 1, cpu) == pytest.approx(2 / 5)    # latency-bound
    assert tile_rate(14, 1, cpu) == pytest.approx(14 / 7.5)  # load-bound
    assert cpu.min_accumulators == 10


# -- register tiles ---------------------------------------------------------------------------
def _tile(func, block: str, target: str) -> tuple[int, int]:
    cpu = cpu_info(target)
    sch = tir.Schedule(func)
    blk = sch.get_block(block)
    return choose_tile(analyze_block(sch, blk), _contraction(sch, blk, cpu), cpu)


@pytest.mark.parametrize("target, tile", [
    (HASWELL, (6, 16)),   # 12 accumulators + 2 loads + 1 broadcast = 15 of 16 ymm
    (SKX, (6, 64)),       # 24 of 32 zmm, 2.4 FMAs per load
    (NEON, (6, 16)),
    (RVV, (6, 16)),
])
def test_matmul_tile_fits_the_register_file(target, tile):
    mr, nr = _tile(W.matmul(1024, 1024, 1024), "C", target)
    assert (mr, nr) == tile
    cpu = cpu_info(target)
    nv = nr // cpu.lanes("float32")
    assert mr * nv + nv + 1 <= cpu.vector_registers


def test_nested_reduction_prefers_a_dividing_row_tile():
    # conv: rc, ry, rx; a partial row tile would guard every step of the nest
    mr, _ = _tile(W.conv2d_nchw(1, 64, 56, 56, 64), "conv2d_nchw", HASWELL)
    cpu = cpu_info(HASWELL)
    sch = tir.Schedule(W.conv2d_nchw(1, 64, 56, 56, 64))
    blk = sch.get_block("conv2d_nchw")
    con = _contraction(sch, blk, cpu)
    rows = analyze_block(sch, blk).extents[con.row]
    assert rows % mr == 0


# -- blocking and packing ---------------------------------------------------------------------
def _allocs(func) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}

    def visit(n):
        if isinstance(n, Allocate):
            out[n.buffer_var.name] = tuple(_int(e) for e in n.extents)

    post_order_visit(func.body, visit)
    for blk_buf in _alloc_buffers(func):
        out[blk_buf.name] = tuple(_int(e) for e in blk_buf.shape)
    return out


def _int(e):
    from tvm.arith import Analyzer

    e = Analyzer().simplify(e)
    return int(e) if hasattr(e, "value") else e


def _alloc_buffers(func):
    from tvm.tir.stmt import Block

    found = []
    post_order_visit(func.body, lambda n: found.extend(n.alloc_buffers)
                     if isinstance(n, Block) else None)
    return found


def _loops(func) -> list[For]:
    return _loops_in(func.body)


def test_large_matmul_packs_panels_and_blocks_the_reduction():
    func = schedule_prim_func(W.matmul(1024, 1024, 1024), HASWELL)
    bufs = _allocs(func)
    # B[k, j] copied into K x 16 panels: P[j // 16, k, j % 16]
    assert (64, 1024, 16) in bufs.values(), bufs
    extents = [int(lp.extent) for lp in _loops(func) if lp.kind == ForKind.SERIAL]
    # K = 1024 walked in steps of KC = 256 (6 x 256 floats take a quarter of a 32 KiB L1)
    assert 4 in extents and 256 in extents
    # the kernel's parallel loop (only data-parallel loops fused) encloses the blocked
    # reduction: the steps of K run inside each task
    par = [lp for lp in _loops(func) if lp.kind == ForKind.PARALLEL]
    kernel = [lp for lp in par if 256 in [int(x.extent) for x in _loops_in(lp.body)]]
    assert len(kernel) == 1
    assert 4 in [int(x.extent) for x in _loops_in(kernel[0].body)]


def _loops_in(stmt) -> list[For]:
    loops: list[For] = []
    post_order_visit(stmt, lambda n: loops.append(n) if isinstance(n, For) else None)
    return loops


def test_small_or_thin_matmul_is_not_packed():
    thin = schedule_prim_func(W.matmul(4, 1024, 1024), HASWELL)   # 4 rows: copy never pays
    short = schedule_prim_func(W.matmul(256, 256, 64), HASWELL)   # K = 64: rows close enough
    assert not any(len(s) == 3 for s in _allocs(thin).values())
    assert not any(len(s) == 3 for s in _allocs(short).values())


@pytest.mark.parametrize("m, n, k", [(1024, 256, 1024), (97, 128, 768), (130, 48, 2048)])
def test_blocked_matmul_numbers(m, n, k):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    mod = tir.build(W.matmul(m, n, k), target="llvm")
    out = np.zeros((m, n), "float32")
    mod["main"](a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)


def test_blocked_matmul_with_epilogue_numbers():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((256, 1024)).astype("float32")
    b = rng.standard_normal((1024, 128)).astype("float32")
    bias = rng.standard_normal(128).astype("float32")
    func = W.matmul(256, 128, 1024, bias=True, relu=True)
    mod = tir.build(func, target="llvm")
    out = np.zeros((256, 128), "float32")
    mod["main"](a, b, bias, out)
    np.testing.assert_allclose(out, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-3)


def test_tiles_span_one_two_or_four_registers():
    # 96 output channels divide into 2 x 48 on AVX-512, but a 3-register row compiles to
    # stack shuffles: the tile takes 2 registers (32) instead
    for target in (SKX, HASWELL):
        lanes = cpu_info(target).lanes("float32")
        _, nr = _tile(W.matmul(196, 96, 576), "C", target)
        assert nr // lanes in (1, 2, 4)


def test_fused_1x1_convolution_reads_its_image_contiguously():
    # rows x width of a 1x1 convolution fused into one vector variable and split across
    # the parallel loop: the flattened index must come back affine in the lanes
    import tvm.tir.transform as T
    from tvm.ir.module import IRModule
    from tvm.tir.expr import FloorDiv, FloorMod

    from tvm import te

    X = te.placeholder((1, 192, 56, 56), name="X")
    Wt = te.placeholder((32, 192, 1, 1), name="W")
    P = te.compute((1, 192, 56, 56), lambda n, c, h, w: te.if_then_else(
        te.all(h >= 0, h < 56, w >= 0, w < 56), X[n, c, h, w], 0.0), name="pad_temp")
    rc = te.reduce_axis((0, 192), name="rc")
    ry = te.reduce_axis((0, 1), name="ry")
    rx = te.reduce_axis((0, 1), name="rx")
    Y = te.compute((1, 32, 56, 56), lambda n, o, h, w: te.sum(
        P[n, rc, h + ry, w + rx] * Wt[o, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    func = schedule_prim_func(te.create_prim_func([X, Wt, Y]), SKX)
    mod = IRModule({"main": func})
    for p in (T.LowerInitBlock(), T.LowerOpaqueBlock(), T.FlattenBuffer(), T.Simplify()):
        mod = p(mod)
    vector_vars = []
    post_order_visit(mod["main"].body, lambda n: vector_vars.append(n.loop_var)
                     if isinstance(n, For) and n.kind == ForKind.VECTORIZED else None)
    bad = []

    def visit(n):
        if isinstance(n, (FloorDiv, FloorMod)):
            from tvm.tir.stmt_functor import uses_var

            if uses_var(n, lambda v: any(v is w for w in vector_vars)):
                bad.append(n)

    post_order_visit(mod["main"].body, visit)
    assert vector_vars and not bad, bad[:3]


def _conv1x1(c: int, k: int, hw: int):
    from tvm import te

    X = te.placeholder((1, c, hw, hw), name="X")
    Wt = te.placeholder((k, c, 1, 1), name="W")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 1), name="ry")
    rx = te.reduce_axis((0, 1), name="rx")
    Y = te.compute((1, k, hw, hw), lambda n, o, h, w: te.sum(
        X[n, rc, h + ry, w + rx] * Wt[o, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    return te.create_prim_func([X, Wt, Y])


def test_1x1_convolution_image_is_copied_into_panels():
    # channels x (rows * width) is a matmul's K x N: the image rows 12.5 KiB apart become
    # contiguous 192 x 32 panels (rows and width fused into the vector variable)
    func = schedule_prim_func(_conv1x1(192, 32, 56), SKX)
    assert (1, 98, 192, 32) in _allocs(func).values(), _allocs(func)


def test_3x3_convolution_image_is_not_copied():
    # windows over several reduction loops have no panel layout
    func = schedule_prim_func(W.conv2d_nchw(1, 64, 56, 56, 64), SKX)
    copies = {name for name in _allocs(func) if name.endswith("_global")}
    assert copies and all(name.startswith(("W", "conv")) for name in copies), copies


@pytest.mark.parametrize("c, k, hw", [(192, 32, 56), (160, 24, 14)])
def test_1x1_convolution_numbers(c, k, hw):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, c, hw, hw)).astype("float32")
    w = rng.standard_normal((k, c, 1, 1)).astype("float32")
    out = np.zeros((1, k, hw, hw), "float32")
    tir.build(_conv1x1(c, k, hw), target="llvm")["main"](x, w, out)
    np.testing.assert_allclose(out, np.einsum("oc,nchw->nohw", w[:, :, 0, 0], x),
                               rtol=1e-4, atol=1e-3)


def _dense_symbolic_rows(k: int, n: int):
    from tvm import te

    seq = te.var("seq", "int64")
    A = te.placeholder((1, seq, k), name="A")
    B = te.placeholder((k, n), name="B")
    bias = te.placeholder((n,), name="bias")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((1, seq, n), lambda b, i, j: te.sum(A[b, i, r] * B[r, j], axis=r), name="C")
    D = te.compute((1, seq, n), lambda b, i, j: C[b, i, j] + bias[j], name="T_add")
    return te.create_prim_func([A, B, bias, D]).with_attr("layout_free_buffers", [1])


@pytest.mark.parametrize("cores", [1, 2])
def test_blocked_reduction_over_symbolic_rows_stays_a_contraction(cores):
    # BERT's FFN-down (K = 2048 is blocked): the micro-kernel must apply (not fall back to
    # the generic reduction rule), with no loop outside the blocked reduction on one core,
    # and with panel blocks that give each of two cores work
    target = f"llvm -mcpu=skylake-avx512 -num-cores={cores}"
    func = _dense_symbolic_rows(2048, 512)
    rules = explain_default_schedule(func, target)
    assert rules["C"] == "contraction", rules
    if cores == 2:
        assert rules["T_add"] == "epilogue of C", rules
        scheduled = schedule_prim_func(func, target)
        par = [lp for lp in _loops(scheduled) if lp.kind == ForKind.PARALLEL]
        kernel_par = [int(lp.extent) for lp in par if hasattr(lp.extent, "value")]
        assert 4 in kernel_par, [lp.extent for lp in par]  # 8 panels of 64 in 4 blocks
    rng = np.random.default_rng(3)
    a = rng.standard_normal((1, 50, 2048)).astype("float32")
    b = rng.standard_normal((2048, 512)).astype("float32")
    bias = rng.standard_normal(512).astype("float32")
    out = np.zeros((1, 50, 512), "float32")
    tir.build(func, target="llvm")["main"](a, b, bias, out)
    np.testing.assert_allclose(out, a @ b + bias, rtol=1e-4, atol=1e-2)


def test_cpu_info_hook_gives_the_cpu_model_of_the_target():
    from tvm.ffi.plugin import get_plugin_manager
    from tvm.ir.target import Target

    hook = get_plugin_manager().hook.tvm_tir_cpu_info
    info = hook(target=Target("llvm -mcpu=haswell -num-cores=3"))
    assert info == cpu_info("llvm -mcpu=haswell -num-cores=3")
    assert info.vector_bytes == 32 and info.num_cores == 3 and info.lanes("float32") == 8


def test_contraction_rule_offers_a_tuner_its_alternatives():
    """``candidates``: the default micro-kernel first, then the next tiles of the model and
    the chosen tile blocked for caches half and twice the modelled size; all distinct and
    computing the same (the default schedule asks for ``apply`` only)."""
    from tvm.ffi import structural_hash
    from tvm.target.llvm.schedule_rules.contraction import tile_choices
    from tvm.target.llvm.schedule_rules.rules import ContractionRule

    func = W.matmul(192, 256, 512)
    cpu = cpu_info(HASWELL)
    sch = tir.Schedule(func)
    blk = sch.get_block("C")
    tiles = tile_choices(analyze_block(sch, blk), _contraction(sch, blk, cpu), cpu)
    assert tiles[0] == _tile(func, "C", HASWELL) and len(set(tiles)) == len(tiles) > 2
    rule = ContractionRule(cpu)
    default = tir.Schedule(func)
    rule.apply(default, default.get_block("C"))
    cands = rule.candidates(sch, blk)
    assert structural_equal(cands[0].mod, default.mod)
    assert len(cands) >= 3
    assert len({structural_hash(c.mod) for c in cands}) == len(cands)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((192, 512)).astype("float32")
    b = rng.standard_normal((512, 256)).astype("float32")
    for cand in cands:
        lib = tir.build(cand.mod["main"].with_attr("tir.is_scheduled", True), target=HASWELL)
        out = np.zeros((192, 256), "float32")
        lib["main"](a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)
