"""The GPU design space: MultiLevelTilingGPU, CrossThreadReduction, AutoBind, the
VerifyGPUCode postprocessor, MutateThreadBinding and gpu_defaults.

Code generation runs without a GPU (CUDA source); kernels run on OpenCL (pocl on the CPU
here) and, marked ``gpu``, on a CUDA GPU."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

pytest.importorskip("tvm.target.cuda")
pytest.importorskip("tvm.target.opencl")

from tvm import te, tir  # noqa: E402
from tvm.ffi import structural_equal  # noqa: E402
from tvm.meta_schedule.mutator.mutate_thread_binding import (  # noqa: E402
    MutateThreadBinding, thread_binding_samples,
)
from tvm.meta_schedule.mutator.mutate_unroll_gpu import (  # noqa: E402
    MutateUnrollGPU, unroll_samples,
)
from tvm.meta_schedule.postproc.rewrite_unroll_gpu import (  # noqa: E402
    UNROLL_KEY, RewriteUnrollGPU, unroll_plan,
)
from tvm.meta_schedule.postproc.verify_gpu_code import VerifyGPUCode  # noqa: E402
from tvm.meta_schedule.schedule_rule.auto_bind import AutoBind  # noqa: E402
from tvm.meta_schedule.schedule_rule.cross_thread_reduction import (  # noqa: E402
    CrossThreadReduction,
)
from tvm.meta_schedule.schedule_rule.multi_level_tiling_gpu import (  # noqa: E402
    MultiLevelTilingGPU,
)
from tvm.meta_schedule.space_generator.gpu_defaults import (  # noqa: E402
    gpu_mutator_probs, gpu_postprocs, gpu_sch_rules,
)
from tvm.tir.schedule import Trace  # noqa: E402
from tvm.tir.schedule.rules import apply_rules  # noqa: E402
from tvm.tir.stmt import For  # noqa: E402
from tvm.tir.stmt_functor import post_order_visit  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _private_cache(tmp_path_factory):
    """Compiled kernels go to a cache of this module, not the user's ~/.cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TVM_CACHE_DIR", str(tmp_path_factory.mktemp("tvm-cache")))
        yield


@pytest.fixture(scope="module", autouse=True)
def _plugins():
    from tvm.target.cuda.plugin import ensure_registered as cuda
    from tvm.target.opencl.plugin import ensure_registered as opencl

    cuda()
    opencl()


def _has_opencl() -> bool:
    try:
        from tvm.target.opencl.runtime import opencl_available
    except ImportError:
        return False
    return opencl_available()


def _has_cuda() -> bool:
    try:
        from tvm.target.cuda.runtime import cuda_available
    except ImportError:
        return False
    return cuda_available()


requires_opencl = pytest.mark.skipif(not _has_opencl(), reason="no OpenCL platform "
                                     "(pip install pyopencl; apt-get install pocl-opencl-icd)")
RNG = np.random.default_rng(0)


# --------------------------------------------------------------------------- kernels
def matmul(n: int, relu: bool = False):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    if not relu:
        return te.create_prim_func([A, B, C])
    D = te.compute((n, n), lambda i, j: te.max(C[i, j], 0.0), name="D")
    return te.create_prim_func([A, B, D])


def row_reduce(rows: int, cols: int, kind: str = "sum"):
    X = te.placeholder((rows, cols), name="X")
    k = te.reduce_axis((0, cols), name="k")
    red = te.sum if kind == "sum" else te.max
    Y = te.compute((rows,), lambda i: red(X[i, k], axis=k), name="Y")
    return te.create_prim_func([X, Y])


def softmax(rows: int, cols: int):
    X = te.placeholder((rows, cols), name="X")
    k = te.reduce_axis((0, cols), name="k")
    M = te.compute((rows,), lambda i: te.max(X[i, k], axis=k), name="M")
    E = te.compute((rows, cols), lambda i, j: te.exp(X[i, j] - M[i]), name="E")
    k2 = te.reduce_axis((0, cols), name="k2")
    S = te.compute((rows,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    Y = te.compute((rows, cols), lambda i, j: E[i, j] / S[i], name="Y")
    return te.create_prim_func([X, Y])


def elementwise(rows: int, cols: int):
    A = te.placeholder((rows, cols), name="A")
    B = te.compute((rows, cols), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    return te.create_prim_func([A, B])


# --------------------------------------------------------------------------- helpers
def _space(func, rule, seed=0, block="C"):
    sch = tir.Schedule(func, seed=seed)
    out = rule.apply(sch, sch.get_block(block))
    assert len(out) == 1
    return out[0]


def _replay(trace, func, seed, provider=None):
    """A candidate: the trace replayed on a fresh schedule, every decision sampled anew
    (or given by ``provider(inst) -> decision | None``)."""
    sch = tir.Schedule(func, seed=seed)

    def decide(inst, inputs, attrs, decision):
        return provider(inst) if provider is not None else None

    trace.apply_to_schedule(sch, decision_provider=decide)
    return sch


def _candidate(trace, func, seed, target, provider=None):
    """A candidate as the search makes it: replayed, then the target's postprocessors;
    ``(schedule, accepted)``."""
    sch = _replay(trace, func, seed, provider)
    return sch, all(p.apply(sch) for p in gpu_postprocs(target))


def no_unroll(inst):
    """Candidates without unrolling (RewriteUnrollGPU has its own tests; an unrolled tile
    makes InjectStorageSync slow): the unroll step 0, every other decision drawn anew."""
    if inst.kind.name == "SampleCategorical" and list(_attrs(inst)["candidates"]) == [0, 16]:
        return 0
    return None


def _decisions(sch, kind):
    return [sch.trace.decisions[i] for i in sch.trace.insts if i.kind.name == kind]


def _attrs(inst):
    return dict(zip(inst.kind.attrs, inst.attrs))


def _thread_loops(func):
    found = []

    def visit(n):
        if isinstance(n, For) and n.thread_binding is not None:
            found.append((n.thread_binding.thread_tag, int(n.extent.value)))

    post_order_visit(func.body, visit)
    return found


def _scopes(func):
    return {b.name: b.scope for b in func.body.block.alloc_buffers}


def _build(func, target):
    return tir.build(func.with_attr("tir.is_scheduled", True), target=target)


def _predicted_fit(sch, max_threads, max_shared):
    """Threads and shared bytes of a 2-D matmul candidate from its decisions alone."""
    (fi, fj), (fk,) = [d for d in _decisions(sch, "SamplePerfectTile") if len(d) == 5], \
        [d for d in _decisions(sch, "SamplePerfectTile") if len(d) == 3]
    threads = fi[2] * fj[2]
    tile_i = fi[1] * fi[2] * fi[3] * fi[4]
    tile_j = fj[1] * fj[2] * fj[3] * fj[4]
    shared = (tile_i + tile_j) * fk[1] * fk[2] * 4
    return threads, shared, threads <= max_threads and shared <= max_shared


def _run_opencl(func, inputs, out_shape):
    import tvm.runtime as rt

    dev = rt.opencl(0)
    mod = _build(func, "opencl")
    out = rt.empty(out_shape, "float32", dev)
    mod["main"](*[rt.tensor(a, device=dev) for a in inputs], out)
    return out.numpy(), mod


# --------------------------------------------------------------------------- MLT GPU
def test_multi_level_tiling_samples_tiles_binds_threads_and_stages_shared_memory():
    func = matmul(256)
    rule = MultiLevelTilingGPU.from_target("cuda")
    assert rule.max_threads_per_block == 1024
    sch = tir.Schedule(func, seed=0)
    assert rule.applies(sch, sch.get_block("C"))
    sch = _space(func, rule)
    tiles = [i for i in sch.trace.insts if i.kind.name == "SamplePerfectTile"]
    assert sorted(_attrs(i)["n"] for i in tiles) == [3, 5, 5]
    binds = [_attrs(i)["thread_axis"] for i in sch.trace.insts if i.kind.name == "Bind"]
    assert binds.count("blockIdx.x") == 1 and binds.count("threadIdx.x") == 4
    f = sch.mod["main"]
    assert _scopes(f) == {"C_local": "local", "A_shared": "shared", "B_shared": "shared"}
    # the accumulator's init is its own block before the reduction loops
    assert sch.get(sch.get_block("C")).init is None
    init_loops = [sch.get(lp) for lp in sch.get_loops(sch.get_block("C_init"))]
    assert not any(lp.loop_var.name.startswith("k") for lp in init_loops)
    threads = [(tag, e) for tag, e in _thread_loops(f) if tag == "threadIdx.x"]
    fi, fj = [d for d in _decisions(sch, "SamplePerfectTile") if len(d) == 5]
    # compute, write-back and both fetches use the same threads: the product of S2 factors
    assert {e for _, e in threads} == {fi[2] * fj[2]}
    bx = [e for tag, e in _thread_loops(f) if tag == "blockIdx.x"]
    assert bx == [fi[0] * fj[0]]
    # the cooperative fetch vector lengths are sampled too, and the kernel's unroll limit
    cats = [list(_attrs(i)["candidates"]) for i in sch.trace.insts
            if i.kind.name == "SampleCategorical"]
    assert cats == [[1, 2, 4], [1, 2, 4], [0, 16]]
    (ann,) = [i for i in sch.trace.insts if i.kind.name == "Annotate"]
    assert _attrs(ann)["ann_key"] == UNROLL_KEY


def test_rule_does_not_apply_to_elementwise_or_bound_blocks():
    rule = MultiLevelTilingGPU.from_target("cuda")
    sch = tir.Schedule(elementwise(16, 16))
    assert not rule.applies(sch, sch.get_block("B"))
    sch = _space(matmul(64), rule)
    assert not rule.applies(sch, sch.get_block("C"))  # already inside a kernel
    with pytest.raises(ValueError, match="SSSRRSRS"):
        MultiLevelTilingGPU(structure="SSRSRS")


def test_replays_with_other_seeds_take_other_decisions():
    func = matmul(256)
    space = _space(func, MultiLevelTilingGPU.from_target("cuda"))
    seen = set()
    for seed in range(6):
        cand = _replay(space.trace, func, seed)
        seen.add(tuple(_decisions(cand, "SamplePerfectTile")))
        for d in _decisions(cand, "SamplePerfectTile"):
            assert int(np.prod(d)) == 256
    assert len(seen) >= 4
    # the same seed gives the same candidate
    a, b = _replay(space.trace, func, 3), _replay(space.trace, func, 3)
    assert structural_equal(a.mod["main"], b.mod["main"])


def test_accepted_candidates_build_to_cuda_and_verify_matches_the_limits():
    func = matmul(256)
    space = _space(func, MultiLevelTilingGPU.from_target("cuda"))
    accepted = rejected = 0
    for seed in range(12):
        cand, ok = _candidate(space.trace, func, seed, "cuda", no_unroll)
        threads, shared, fits = _predicted_fit(cand, 1024, 49152)
        assert ok is fits, (seed, threads, shared)
        if not fits:
            rejected += 1
            continue
        accepted += 1
        src = _build(cand.mod["main"], "cuda").get_source()
        assert f"__launch_bounds__({threads})" in src
        assert re.search(r"__shared__ float A_shared\[\d+\];", src)
        assert re.search(r"__shared__ float B_shared\[\d+\];", src)
        assert "__syncthreads();" in src and "blockIdx.x" in src and "threadIdx.x" in src
    assert accepted >= 3 and rejected >= 1


def _forced(thread_i, thread_j):
    """A provider forcing S2 (thread) factors of a 256^3 matmul's spatial tiles."""
    spatial = iter([[1, 1, thread_i, 256 // thread_i, 1], [1, 1, thread_j, 256 // thread_j, 1]])

    def provide(inst):
        if inst.kind.name == "SamplePerfectTile" and _attrs(inst)["n"] == 5:
            return next(spatial)
        if inst.kind.name == "SamplePerfectTile":
            return [32, 8, 1]
        return 0

    return provide


def test_too_many_threads_are_rejected_by_verify_gpu_code():
    func = matmul(256)
    space = _space(func, MultiLevelTilingGPU.from_target("cuda"))
    verify = VerifyGPUCode("cuda")
    big = _replay(space.trace, func, 0, _forced(32, 64))  # 2048 threads
    assert not verify.apply(big)
    assert "threadIdx.x = 2048" in verify.last_error and "1024" in verify.last_error
    ok = _replay(space.trace, func, 0, _forced(16, 16))   # 256 threads
    assert verify.apply(ok), verify.last_error
    assert verify.last_error is None
    # opencl allows 256 threads: the same candidate passes there, 512 does not
    assert VerifyGPUCode("opencl").apply(ok)
    assert not VerifyGPUCode("opencl").apply(_replay(space.trace, func, 0, _forced(16, 32)))


def test_the_design_space_itself_fits_the_thread_limit():
    func = matmul(256)
    rule = MultiLevelTilingGPU.from_target("opencl")   # 256 threads per block
    assert rule.max_threads_per_block == 256
    for seed in range(8):
        sch = _space(func, rule, seed=seed)
        fi, fj = [d for d in _decisions(sch, "SamplePerfectTile") if len(d) == 5]
        assert fi[2] * fj[2] <= 256
    tiny = MultiLevelTilingGPU(max_threads_per_block=1)
    sch = _space(func, tiny, seed=0)
    fi, fj = [d for d in _decisions(sch, "SamplePerfectTile") if len(d) == 5]
    assert fi[2] == fj[2] == 1


def _loops(func):
    out = []
    post_order_visit(func.body, lambda n: out.append(n) if isinstance(n, For) else None)
    return out


def test_unroll_plan_counts_the_statements_of_a_nest():
    sch = tir.Schedule(matmul(4))
    i, j, k = sch.get_loops(sch.get_block("C"))
    by_id = {id(sch.get(lp)): name for lp, name in ((j, "j"), (k, "k"))}
    assert {by_id[x] for x in unroll_plan(sch.get(i), 16)} == {"j", "k"}   # 4 x 4, 4
    assert {by_id[x] for x in unroll_plan(sch.get(i), 15)} == {"k"}
    assert unroll_plan(sch.get(i), 0) == set()
    sch.bind(k, "threadIdx.x")
    assert unroll_plan(sch.get(i), 64) == set()   # a thread-bound loop is not unrolled


def test_rewrite_unroll_applies_the_sampled_step_and_removes_the_annotation():
    func = matmul(64)
    rule = MultiLevelTilingGPU.from_target("cuda", unroll_max_steps=(0, 16, 64))
    space = _space(func, rule)
    unrolled = {}
    for index, step in enumerate((0, 16, 64)):
        def provide(inst, index=index):
            if inst.kind.name == "SampleCategorical" and \
                    list(_attrs(inst)["candidates"]) == [0, 16, 64]:
                return index
            if inst.kind.name == "SamplePerfectTile":   # per thread: 4 x 4 outputs
                return [4, 1, 4, 2, 2] if _attrs(inst)["n"] == 5 else [16, 2, 2]
            return 0

        cand = _replay(space.trace, func, 0, provide)
        assert RewriteUnrollGPU().apply(cand)
        loops = _loops(cand.mod["main"])
        assert not any(UNROLL_KEY in lp.annotations for lp in loops)
        unrolled[step] = [lp for lp in loops if lp.kind.name == "UNROLLED"]
        assert len([i for i in cand.trace.insts if i.kind.name == "Unroll"]) == \
            len(unrolled[step])
        for lp in unrolled[step]:
            inner = _loops(lp)
            assert all(x.kind.name in ("UNROLLED", "SERIAL") for x in inner)
            assert np.prod([int(x.extent.value) for x in inner]) <= step
        out = _build(cand.mod["main"], "cuda").get_source()
        assert "__launch_bounds__(16)" in out
    assert unrolled[0] == []
    assert unrolled[16] and len(unrolled[64]) > len(unrolled[16])


def test_trace_json_round_trips_and_replays_to_the_same_function():
    func = matmul(256)
    sch = _space(func, MultiLevelTilingGPU.from_target("cuda"), seed=5)
    text = sch.trace.as_json()
    again = Trace.from_json(text)
    # (ExprRVs inside expressions take their trace names on the first reading: the text
    # is a fixed point from then on)
    assert Trace.from_json(again.as_json()).as_json() == again.as_json()
    assert [i.kind.name for i in again.insts] == [i.kind.name for i in sch.trace.insts]
    assert list(again.decisions.values()) == list(sch.trace.decisions.values())
    fresh = tir.Schedule(func)
    again.apply_to_schedule(fresh)
    assert structural_equal(fresh.mod["main"], sch.mod["main"])


@requires_opencl
def test_opencl_candidates_compute_the_matmul():
    func = matmul(64)
    space = _space(func, MultiLevelTilingGPU.from_target("opencl", max_innermost_factor=8))
    a = RNG.random((64, 64), dtype=np.float32)
    b = RNG.random((64, 64), dtype=np.float32)
    ran = 0
    for seed in range(8):
        cand, ok = _candidate(space.trace, func, seed, "opencl")
        if not ok:
            continue
        out, _ = _run_opencl(cand.mod["main"], [a, b], (64, 64))
        np.testing.assert_allclose(out, a @ b, rtol=1e-4, err_msg=f"seed {seed}")
        ran += 1
        if ran == 4:
            break
    assert ran >= 3


@requires_opencl
def test_opencl_256_matmul_candidate_with_relu_epilogue_is_one_kernel():
    func = matmul(256, relu=True)
    result = apply_rules(tir.Schedule(func, seed=1), gpu_sch_rules("opencl"))
    assert result.explain["D"] == "multi_level_tiling_gpu (epilogue)"
    assert _scopes(result.func)["C"] == "local"
    space = result.schedule
    for seed in range(20):
        cand, ok = _candidate(space.trace, func, seed, "opencl")
        if ok:
            break
    else:
        pytest.fail("no candidate of 20 fits opencl's limits")
    a = RNG.standard_normal((256, 256)).astype("float32")
    b = RNG.standard_normal((256, 256)).astype("float32")
    out, mod = _run_opencl(cand.mod["main"], [a, b], (256, 256))
    assert len(mod.kernels) == 1
    np.testing.assert_allclose(out, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def conv2d():
    X = te.placeholder((1, 8, 14, 14), name="X")
    W = te.placeholder((16, 8, 3, 3), name="W")
    P = te.compute((1, 8, 16, 16), lambda n, c, y, x: te.if_then_else(
        te.all(y >= 1, y < 15, x >= 1, x < 15), X[n, c, y - 1, x - 1], 0.0), name="P")
    rc = te.reduce_axis((0, 8), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    Y = te.compute((1, 16, 14, 14), lambda n, f, y, x: te.sum(
        P[n, rc, y + ry, x + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]), name="Y")
    return te.create_prim_func([X, W, Y])


def _conv_ref(x, w):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, 16, 14, 14), "float32")
    for ry in range(3):
        for rx in range(3):
            out += np.einsum("nchw,fc->nfhw", xp[:, :, ry:ry + 14, rx:rx + 14], w[:, :, ry, rx])
    return out


def batch_matmul():
    A = te.placeholder((4, 32, 16), name="A")
    B = te.placeholder((4, 16, 48), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((4, 32, 48), lambda b, i, j: te.sum(A[b, i, k] * B[b, k, j], axis=k),
                   name="C")
    return te.create_prim_func([A, B, C])


@requires_opencl
@pytest.mark.parametrize("case", ["conv2d", "batch_matmul"])
def test_opencl_contractions_other_than_matmul(case):
    func, shapes, out_shape, ref, anchor = {
        "conv2d": (conv2d(), [(1, 8, 14, 14), (16, 8, 3, 3)], (1, 16, 14, 14), _conv_ref, "Y"),
        "batch_matmul": (batch_matmul(), [(4, 32, 16), (4, 16, 48)], (4, 32, 48),
                         lambda a, b: a @ b, "C"),
    }[case]
    result = apply_rules(tir.Schedule(func, seed=0), gpu_sch_rules("opencl"))
    assert result.explain[anchor] == "multi_level_tiling_gpu"
    n_spatial = len(out_shape)
    tiles = [d for d in _decisions(result.schedule, "SamplePerfectTile") if len(d) == 5]
    assert len(tiles) == n_spatial
    inputs = [RNG.random(s, dtype=np.float32) for s in shapes]
    ran = 0
    for seed in range(6):
        cand, ok = _candidate(result.schedule.trace, func, seed, "opencl", no_unroll)
        if not ok:
            continue
        out, _ = _run_opencl(cand.mod["main"], inputs, out_shape)
        np.testing.assert_allclose(out, ref(*inputs), rtol=1e-4, atol=1e-4)
        ran += 1
        if ran == 2:
            break
    assert ran == 2


# --------------------------------------------------------------------------- reductions
def test_cross_thread_reduction_samples_warp_multiples_and_binds_the_reduction():
    func = row_reduce(16, 1000)
    rule = CrossThreadReduction.from_target("cuda")
    sch = tir.Schedule(func)
    assert rule.applies(sch, sch.get_block("Y"))
    short = tir.Schedule(row_reduce(16, 8))
    assert not rule.applies(short, short.get_block("Y"))  # shorter than a warp
    sch = _space(func, rule, block="Y")
    (cat,) = [i for i in sch.trace.insts if i.kind.name == "SampleCategorical"]
    assert list(_attrs(cat)["candidates"]) == [32, 64, 128, 256, 512, 1024]
    threads = _attrs(cat)["candidates"][sch.trace.decisions[cat]]
    loops = dict(_thread_loops(sch.mod["main"]))
    assert loops == {"threadIdx.x": threads, "blockIdx.x": 16}
    src = _build(sch.mod["main"], "cuda").get_source()
    assert "__shfl_down_sync" in src and f"__launch_bounds__({threads})" in src
    assert thread_binding_samples(sch.trace) == [cat]


def test_mutate_thread_binding_changes_the_block_size():
    func = row_reduce(16, 1000)
    sch = _space(func, CrossThreadReduction.from_target("cuda"), block="Y")
    (cat,) = thread_binding_samples(sch.trace)
    assert len(thread_binding_samples(Trace.from_json(sch.trace.as_json()))) == 1
    mutated = MutateThreadBinding().apply(sch.trace, random.Random(0))
    assert mutated is not None and mutated.decisions[cat] != sch.trace.decisions[cat]
    again = tir.Schedule(func)
    mutated.apply_to_schedule(again)
    cands = _attrs(cat)["candidates"]
    assert dict(_thread_loops(again.mod["main"]))["threadIdx.x"] == cands[mutated.decisions[cat]]
    # the cooperative-fetch vector lengths of MLT are not thread counts
    mlt = _space(matmul(64), MultiLevelTilingGPU.from_target("cuda"))
    assert thread_binding_samples(mlt.trace) == []
    assert MutateThreadBinding().apply(mlt.trace, random.Random(0)) is None


def test_mutate_unroll_changes_only_the_kernel_unroll_limit():
    func = matmul(64)
    sch = _space(func, MultiLevelTilingGPU.from_target("cuda", unroll_max_steps=(0, 16, 64)))
    (step,) = unroll_samples(sch.trace)
    assert list(_attrs(step)["candidates"]) == [0, 16, 64]
    for seed in range(5):
        mutated = MutateUnrollGPU().apply(sch.trace, random.Random(seed))
        changed = [i for i in sch.trace.insts
                   if i in sch.trace.decisions and mutated.decisions[i] != sch.trace.decisions[i]]
        assert changed == [step]
    assert MutateUnrollGPU().apply(_space(row_reduce(4, 64), CrossThreadReduction(),
                                          block="Y").trace, random.Random(0)) is None


@requires_opencl
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_opencl_cross_thread_reductions_compute_the_rows(kind):
    func = row_reduce(5, 1000, kind)
    space = _space(func, CrossThreadReduction.from_target("opencl"), block="Y")
    (cat,) = thread_binding_samples(space.trace)
    assert list(_attrs(cat)["candidates"]) == [16, 32, 64, 128, 256]
    x = RNG.standard_normal((5, 1000)).astype("float32")
    ref = x.sum(1) if kind == "sum" else x.max(1)
    for decision in (0, 4):
        cand = _replay(space.trace, func, 0, lambda inst, d=decision: d)
        assert VerifyGPUCode("opencl").apply(cand)
        out, _ = _run_opencl(cand.mod["main"], [x], (5,))
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@requires_opencl
def test_opencl_softmax_through_the_default_gpu_rules():
    func = softmax(8, 300)
    result = apply_rules(tir.Schedule(func, seed=0), gpu_sch_rules("opencl"))
    assert result.explain == {"E": "inlined", "M": "cross_thread_reduction",
                              "S": "cross_thread_reduction", "Y": "auto_bind"}
    x = RNG.standard_normal((8, 300)).astype("float32")
    e = np.exp(x - x.max(1, keepdims=True))
    for seed in (1, 2):
        cand, ok = _candidate(result.schedule.trace, func, seed, "opencl")
        assert ok
        out, mod = _run_opencl(cand.mod["main"], [x], (8, 300))
        assert len(mod.kernels) == 3
        np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- AutoBind
def test_auto_bind_samples_the_block_size_within_the_target():
    func = elementwise(100, 30)
    rule = AutoBind.from_target("opencl")
    sch = _space(func, rule, block="B")
    (cat,) = [i for i in sch.trace.insts if i.kind.name == "SampleCategorical"]
    assert list(_attrs(cat)["candidates"]) == [32, 64, 128, 256]   # opencl: 256 threads
    assert not rule.applies(sch, sch.get_block("B"))
    small = _space(elementwise(2, 10), AutoBind.from_target("cuda"), block="B")
    (cat,) = [i for i in small.trace.insts if i.kind.name == "SampleCategorical"]
    assert list(_attrs(cat)["candidates"]) == [32]   # 20 outputs: one warp is enough
    with pytest.raises(ValueError, match="positive"):
        AutoBind(thread_extents=[0])


@requires_opencl
def test_opencl_auto_bind_candidates_compute_with_a_partial_last_block():
    func = elementwise(100, 30)   # 3000 outputs: no block size divides them
    space = _space(func, AutoBind.from_target("opencl"), block="B")
    a = RNG.random((100, 30), dtype=np.float32)
    for decision in (0, 3):
        cand = _replay(space.trace, func, 0, lambda inst, d=decision: d)
        out, _ = _run_opencl(cand.mod["main"], [a], (100, 30))
        np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)


# --------------------------------------------------------------------------- defaults
def test_gpu_defaults_are_for_gpu_targets_only():
    rules = gpu_sch_rules("cuda")
    assert [r.name for r in rules] == ["auto_inline", "multi_level_tiling_gpu",
                                       "cross_thread_reduction", "auto_bind"]
    assert [type(p).__name__ for p in gpu_postprocs("opencl")] == ["RewriteUnrollGPU",
                                                                    "VerifyGPUCode"]
    probs = gpu_mutator_probs("cuda")
    assert [type(m).__name__ for m in probs] == ["MutateThreadBinding", "MutateUnrollGPU"]
    assert all(0 < p <= 1 for p in probs.values())
    for fn in (gpu_sch_rules, gpu_postprocs, gpu_mutator_probs):
        with pytest.raises(ValueError, match="not a GPU target"):
            fn("c")


def test_verify_gpu_code_rejects_code_outside_kernels_and_needs_a_gpu_target():
    sch = tir.Schedule(elementwise(8, 8))
    verify = VerifyGPUCode("cuda")
    assert not verify.apply(sch)
    assert "not bound to a GPU thread axis" in verify.last_error
    with pytest.raises(ValueError, match="no target"):
        VerifyGPUCode().apply(sch)
    with pytest.raises(ValueError, match="not a GPU target"):
        VerifyGPUCode("c").apply(sch)

    n = te.var("n")
    A = te.placeholder((n,), name="A")
    sym = tir.Schedule(te.create_prim_func([A, te.compute((n,), lambda i: A[i] + 1.0,
                                                          name="B")]))
    sym.bind(sym.get_loops(sym.get_block("B"))[0], "threadIdx.x")
    assert not verify.apply(sym) and "not a constant" in verify.last_error

    class Ctx:
        target = __import__("tvm.ir.target", fromlist=["as_target"]).as_target("opencl")

    late = VerifyGPUCode()
    late.initialize_with_tune_context(Ctx())
    assert late.apply(_space(elementwise(8, 8), AutoBind.from_target("opencl"), block="B"))


# --------------------------------------------------------------------------- a real GPU
@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="no CUDA GPU (or pycuda is not installed)")
def test_cuda_candidates_compute_the_matmul():
    import tvm.runtime as rt

    func = matmul(256)
    space = _space(func, MultiLevelTilingGPU.from_target("cuda"))
    verify = VerifyGPUCode("cuda")
    dev = rt.cuda(0)
    a = RNG.random((256, 256), dtype=np.float32)
    b = RNG.random((256, 256), dtype=np.float32)
    ran = 0
    for seed in range(10):
        cand = _replay(space.trace, func, seed)
        if not verify.apply(cand):
            continue
        mod = _build(cand.mod["main"], "cuda")
        out = rt.empty((256, 256), "float32", dev)
        mod["main"](rt.tensor(a, device=dev), rt.tensor(b, device=dev), out)
        np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4)
        ran += 1
    assert ran >= 3


# --------------------------------------------------------------------------- metal
def test_metal_design_space_uses_its_limits_and_builds_to_msl():
    pytest.importorskip("tvm.target.metal")
    from tvm.target.metal.plugin import ensure_registered

    ensure_registered()
    func = matmul(256)
    rule = MultiLevelTilingGPU.from_target("metal")
    assert rule.max_threads_per_block == 256
    space = _space(func, rule)
    built = 0
    for seed in range(8):
        cand, ok = _candidate(space.trace, func, seed, "metal", no_unroll)
        assert ok is _predicted_fit(cand, 256, 32768)[2]   # metal: 32 KiB threadgroup memory
        if ok and built < 2:
            src = _build(cand.mod["main"], "metal").get_source()
            assert re.search(r"threadgroup float A_shared\[\d+\];", src)
            assert "threadgroup_barrier(mem_flags::mem_threadgroup);" in src
            built += 1
    assert built == 2
    result = apply_rules(tir.Schedule(softmax(4, 128), seed=0), gpu_sch_rules("metal"))
    src = _build(result.func, "metal").get_source()
    assert src.count("kernel void") == 3
