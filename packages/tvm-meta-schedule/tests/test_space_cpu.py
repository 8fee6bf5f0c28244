"""CPU design spaces: the default schedule first, then sampled spaces of the tuner's rules
whose fresh decisions give different, valid kernels that replay from JSON."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

import space_cpu_workloads as W  # noqa: E402
from tvm import meta_schedule as ms  # noqa: E402
from tvm import tir  # noqa: E402
from tvm.ffi import structural_equal  # noqa: E402
from tvm.meta_schedule.postproc import apply_postprocs  # noqa: E402
from tvm.meta_schedule.schedule_rule import (  # noqa: E402
    AddRFactor, AutoInline, MultiLevelTiling, ParallelizeVectorizeUnroll, RandomComputeLocation,
)
from tvm.meta_schedule.space_generator import (  # noqa: E402
    PostOrderApply, ScheduleFn, default_mutator_probs, default_postprocs, default_sch_rules,
)
from tvm.target.llvm.schedule_rules import schedule_prim_func  # noqa: E402
from tvm.tir.schedule import Trace  # noqa: E402
from tvm.tir.schedule.rules import SCHEDULED_ATTR  # noqa: E402

SAMPLING = {"SamplePerfectTile", "SampleCategorical", "SampleComputeLocation"}


@pytest.fixture(autouse=True)
def _strict_rules(monkeypatch):
    # a rule failing for another reason than not fitting is a bug: raise it
    monkeypatch.setenv("TVM_SCHEDULE_RULES_STRICT", "1")


def _context(func, seed=0, **kw):
    return ms.TuneContext(func, W.TARGET, space_generator=PostOrderApply(**kw), seed=seed)


def _kinds(sch):
    return [i.kind.name for i in sch.trace.insts]


@pytest.fixture(scope="module", params=["matmul_relu", "conv2d"])
def spaces(request):
    func = W.WORKLOADS[request.param]()
    ctx = _context(func)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TVM_SCHEDULE_RULES_STRICT", "1")
        out = ctx.generate_design_space()
    # the default schedule, then the sampled spaces (the default rules' fixed alternatives
    # in between are tested below)
    return request.param, func, ctx, [out[0]] + [s for s in out if SAMPLING & set(_kinds(s))]


def test_the_default_rules_alternatives_follow_the_default_schedule():
    """Spaces 1.. (before the sampled ones) are the default rules with the other decisions
    their machine model is unsure of: fixed (no sampling), distinct, valid kernels."""
    from tvm.ffi import structural_hash

    func = W.WORKLOADS["matmul_relu"]()
    ctx = _context(func)
    out = ctx.generate_design_space()
    fixed = [s for s in out[1:] if not SAMPLING & set(_kinds(s))]
    assert len(fixed) >= 2
    assert out[1:1 + len(fixed)] == fixed  # they come right after the default schedule
    hashes = {structural_hash(s.mod) for s in [out[0], *fixed]}
    assert len(hashes) == 1 + len(fixed)
    for space in fixed:
        got, want = W.run("matmul_relu", W.replay(space, ctx.mod, seed=1).mod)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    none = _context(func, max_variants=0).generate_design_space()
    assert not any(not SAMPLING & set(_kinds(s)) for s in none[1:])


def test_space_zero_is_the_default_schedule(spaces):
    name, func, ctx, out = spaces
    first = out[0]
    assert not SAMPLING & set(_kinds(first))
    expected = schedule_prim_func(func, W.TARGET)
    assert structural_equal(first.mod["main"].with_attr(SCHEDULED_ATTR, True), expected)
    # the postprocessors leave the untuned code as it is
    cand = W.replay(first, ctx.mod, seed=3)
    assert apply_postprocs(cand, ctx.space_generator.postprocs)
    assert structural_equal(cand.mod["main"].with_attr(SCHEDULED_ATTR, True), expected)


def test_sampled_spaces_tile_with_samples(spaces):
    name, func, ctx, out = spaces
    assert len(out) >= 4
    for space in out[1:]:
        kinds = _kinds(space)
        assert "SamplePerfectTile" in kinds and kinds.count("Split") >= 3
        assert "SampleCategorical" in kinds  # parallel extent and unroll limit
        root = space.get(space.get_block("root"))
        assert "meta_schedule.parallel" in root.annotations
    # the variants: plain, consumer (or write cache) per tile of level 1 and 2 (and packed)
    fused = [s for s in out[1:] if {"ReverseComputeAt"} & set(_kinds(s))]
    assert len(fused) >= 2
    if name == "matmul_relu":
        packed = [s for s in out if "CacheRead" in _kinds(s) and "TransformLayout" in _kinds(s)]
        assert len(packed) >= 3
        widths = set()
        for space in packed:  # the innermost tile of j is one panel: contiguous lanes
            nr = int(space.get(space.get_block("B_global")).writes[0].buffer.shape[-1])
            widths.add(nr)
            assert int(space.get(space.get_loops(space.get_block("C"))[-1]).extent) == nr
        assert len(widths) >= 2
    if name == "conv2d":  # the padding stage is inlined into the convolution
        assert all("ComputeInline" in _kinds(s) for s in out[1:])


def test_fresh_decisions_give_different_valid_kernels(spaces):
    name, func, ctx, out = spaces
    post = ctx.space_generator.postprocs
    picks = [out[1], out[-1]]
    for space in picks:
        cands = [W.replay(space, ctx.mod, seed) for seed in (11, 12, 13)]
        decided = [W.decisions(c.trace) for c in cands]
        assert any(d != decided[0] for d in decided[1:])
        assert len({c.mod["main"].script() for c in cands}) > 1
        for cand in cands[:2]:
            assert apply_postprocs(cand, post)
            got, want = W.run(name, cand.mod)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_traces_round_trip_through_json(spaces):
    name, func, ctx, out = spaces
    for space in (out[0], out[1], out[-1]):
        cand = W.replay(space, ctx.mod, seed=5)
        assert apply_postprocs(cand, ctx.space_generator.postprocs)
        for sch in (space, cand):
            back = Trace.from_json(sch.trace.as_json())
            fresh = tir.Schedule(ctx.mod)
            back.apply_to_schedule(fresh)
            assert structural_equal(fresh.mod["main"], sch.mod["main"])


def test_same_seed_same_spaces():
    a = _context(W.matmul_relu(), seed=7).generate_design_space()
    b = _context(W.matmul_relu(), seed=7).generate_design_space()
    c = _context(W.matmul_relu(), seed=8).generate_design_space()
    assert [W.decisions(s.trace) for s in a] == [W.decisions(s.trace) for s in b]
    assert [W.decisions(s.trace) for s in a] != [W.decisions(s.trace) for s in c]


def test_write_cache_without_an_elementwise_consumer():
    from tvm import te

    A = te.placeholder((32, 32), name="A")
    B = te.placeholder((32, 32), name="B")
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((32, 32), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = te.create_prim_func([A, B, C])
    rules = [MultiLevelTiling(reuse_write="must", write_levels=(2,), pack_operands="no")]
    ctx = ms.TuneContext(func, W.TARGET, seed=0,
                         space_generator=PostOrderApply(sch_rules=rules, include_default=False))
    (space,) = ctx.generate_design_space()
    assert "CacheWrite" in _kinds(space)
    args = W.inputs(func)
    out = np.zeros_like(args[-1])
    tir.build(space.mod["main"].with_attr(SCHEDULED_ATTR, True), target=W.TARGET)["main"](
        args[0], args[1], out)
    np.testing.assert_allclose(out, args[0] @ args[1], rtol=1e-4, atol=1e-4)


def test_rfactor_for_a_reduction_over_few_rows():
    func = W.row_sum()
    ctx = _context(func)
    out = ctx.generate_design_space()
    factored = [s for s in out if "RFactor" in _kinds(s)]
    assert factored and any("RFactor" not in _kinds(s) for s in out[1:])
    cand = W.replay(factored[0], ctx.mod, seed=4)
    assert apply_postprocs(cand, ctx.space_generator.postprocs)
    got, want = W.run("row_sum", cand.mod)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_random_compute_location_samples_a_location():
    func = W.centered()
    ctx = _context(func)
    out = ctx.generate_design_space()
    located = [s for s in out[1:] if "SampleComputeLocation" in _kinds(s)]
    assert located
    for seed in (1, 2, 3):
        cand = W.replay(located[0], ctx.mod, seed)
        assert apply_postprocs(cand, ctx.space_generator.postprocs)
        got, want = W.run("centered", cand.mod)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_max_spaces_bounds_the_branching():
    out = _context(W.matmul_relu(), max_spaces=2, max_variants=0).generate_design_space()
    assert len(out) == 3  # the default schedule and two sampled spaces


def test_schedule_fn():
    def one(sch):
        loops = sch.get_loops(sch.get_block("C"))
        sch.split(loops[0], sch.sample_perfect_tile(loops[0], n=2))

    def two(sch):
        other = sch.copy()
        one(other)
        return [sch, other]

    func = W.matmul_relu()
    ctx = ms.TuneContext(func, W.TARGET, space_generator=ScheduleFn(one), seed=0)
    (space,) = ctx.generate_design_space()
    assert "SamplePerfectTile" in _kinds(space)
    assert ctx.space_generator.postprocs  # the target's defaults filled in
    ctx = ms.TuneContext(func, W.TARGET, seed=0,
                         space_generator=ScheduleFn(two, include_default=True))
    out = ctx.generate_design_space()
    assert len(out) == 3 and not SAMPLING & set(_kinds(out[0]))
    with pytest.raises(TypeError, match="returned int"):
        ms.TuneContext(func, W.TARGET, space_generator=ScheduleFn(lambda s: 3),
                       seed=0).generate_design_space()
    with pytest.raises(TypeError):
        ScheduleFn(3)


def test_cpu_defaults_and_the_gpu_extension_point():
    names = [type(r).__name__ for r in default_sch_rules(W.TARGET)]
    assert names == ["AutoInline", "AddRFactor", "MultiLevelTiling",
                     "ParallelizeVectorizeUnroll", "RandomComputeLocation"]
    assert [p.name for p in default_postprocs(W.TARGET)][:2] == [
        "rewrite_reduction_block", "rewrite_parallel_vectorize_unroll"]
    probs = default_mutator_probs(W.TARGET)
    assert abs(sum(probs.values()) - 1.0) < 1e-9 and len(probs) == 4
    mlt = default_sch_rules(W.TARGET)[2]
    assert mlt.cpu.lanes("float32") >= 4  # the machine, from hook tvm_tir_cpu_info
    from tvm.ir.target import Target

    gpu = Target("cuda") if _has_target("cuda") else None
    if gpu is not None and "gpu" in tuple(gpu.keys):
        assert "MultiLevelTilingGPU" in [type(r).__name__ for r in default_sch_rules(gpu)]


def _has_target(name):
    from tvm.ir.target import Target

    try:
        Target(name)
    except Exception:  # noqa: BLE001
        return False
    return True


def test_bad_rule_arguments():
    with pytest.raises(ValueError, match="structure"):
        MultiLevelTiling("SXR")
    with pytest.raises(ValueError, match="write_levels"):
        MultiLevelTiling("SSRSRS", write_levels=(5,))
    with pytest.raises(ValueError):
        ParallelizeVectorizeUnroll(jobs_per_core=(0,))
    with pytest.raises(ValueError):
        AddRFactor(min_reduction_extent=1)
    with pytest.raises(ValueError, match="max_spaces"):
        PostOrderApply(max_spaces=0)
    with pytest.raises(ValueError, match="initialize"):
        PostOrderApply().generate_design_space(W.matmul_relu())
    assert AutoInline().name == "auto_inline" and RandomComputeLocation().name


def test_packing_a_layout_free_constant_is_marked_for_compile_time():
    func = W.matmul_relu(64).with_attr("layout_free_buffers", [1])
    rules = [MultiLevelTiling(reuse_write="no", pack_operands="must", pack_registers=(1,))]
    ctx = ms.TuneContext(func, W.TARGET, seed=0,
                         space_generator=PostOrderApply(sch_rules=rules, include_default=False))
    (space,) = ctx.generate_design_space()
    cache = space.get(space.get_block("B_global"))
    assert cache.annotations.get("layout_rewrite_preproc")
    packed = cache.writes[0].buffer
    lanes = rules[0].cpu.lanes("float32")
    assert [int(s) for s in packed.shape] == [64 // lanes, 64, lanes]
    # without the attribute the operand is still packed, in the kernel
    (inner,) = ms.TuneContext(W.matmul_relu(64), W.TARGET, seed=0, space_generator=PostOrderApply(
        sch_rules=[MultiLevelTiling(reuse_write="no", pack_operands="must", pack_registers=(1,))],
        include_default=False)).generate_design_space()
    assert "layout_rewrite_preproc" not in inner.get(inner.get_block("B_global")).annotations
    got, want = W.run("matmul_relu", inner.mod)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["dense", "batch_matmul"])
def test_packed_operand_in_other_layouts(name):
    func = W.WORKLOADS[name]()
    ctx = _context(func)
    out = ctx.generate_design_space()
    packed = [s for s in out if "TransformLayout" in _kinds(s)]
    assert packed
    space = packed[-1]
    cache = next(b for b in space.get_child_blocks(space.get_block("root"))
                 if space.get(b).name_hint.endswith("_global"))
    shape = [int(e) for e in space.get(cache).writes[0].buffer.shape]
    assert shape[-2] == 64 and shape[-1] * shape[-3] == 64  # [.., j // NR, k, j % NR]
    for seed in (1, 2):
        cand = W.replay(space, ctx.mod, seed)
        assert apply_postprocs(cand, ctx.space_generator.postprocs)
        got, want = W.run(name, cand.mod)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_hand_scheduled_kernel_is_its_own_default():
    func = W.matmul_relu(32)
    sch = tir.Schedule(func)
    sch.split(sch.get_loops(sch.get_block("C"))[0], [None, 4])
    ctx = _context(sch.mod["main"])
    first = ctx.generate_design_space()[0]
    assert not first.trace.insts
    assert structural_equal(first.mod["main"], sch.mod["main"])


def test_postprocs_append_to_the_replayed_space(spaces):
    """A candidate's trace is the space's instructions with its decisions, then what the
    postprocessors did: the search mutates the first part."""
    name, func, ctx, out = spaces
    space = out[1]
    cand = W.replay(space, ctx.mod, seed=9)
    before = cand.mod["main"]
    n = len(cand.trace)
    assert [i.kind.name for i in cand.trace.insts] == [i.kind.name for i in space.trace.insts]
    assert apply_postprocs(cand, ctx.space_generator.postprocs)
    assert len(cand.trace) > n
    design = Trace(cand.trace.insts[:n], cand.trace.decisions)
    fresh = tir.Schedule(ctx.mod)
    Trace.from_json(design.as_json()).apply_to_schedule(fresh)
    assert structural_equal(fresh.mod["main"], before)


def _int8_dense(m=16, n=128, k=256):
    from tvm import te

    x = te.placeholder((m, k), "uint8", name="x")
    w = te.placeholder((n, k), "int8", name="w")
    r = te.reduce_axis((0, k), name="k")
    acc = te.compute((m, n), lambda i, j: te.sum(x[i, r].astype("int32") *
                                                 w[j, r].astype("int32"), axis=r), name="acc")
    return te.create_prim_func([x, w, acc])


def test_the_int8_kernels_are_in_the_design_space():
    """Space 0 and the default rules' alternatives of an int8 contraction are tensorized
    with the target's dot product (other register tiles); the sampled spaces follow."""
    from tvm.ffi import structural_hash

    target = "llvm -mcpu=cascadelake"
    ctx = ms.TuneContext(_int8_dense(), target, space_generator=PostOrderApply(), seed=0)
    out = ctx.generate_design_space()
    fixed = [out[0]] + [s for s in out[1:] if not SAMPLING & set(_kinds(s))]
    tensorized = [s for s in fixed if "Tensorize" in _kinds(s)]
    assert tensorized and tensorized[0] is out[0] and len(tensorized) >= 3
    assert len({structural_hash(s.mod) for s in tensorized}) == len(tensorized)
    intrins = {i.attrs[0] for s in tensorized for i in s.trace.insts
               if i.kind.name == "Tensorize"}
    assert intrins == {"dot_16x4_u8s8_avx512vnni"}
