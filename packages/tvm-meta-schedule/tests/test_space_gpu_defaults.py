"""PostOrderApply with a GPU target's defaults: the default GPU schedule first, then the
GPU rules' sampled spaces; sampled candidates pass VerifyGPUCode and build to CUDA source."""

from __future__ import annotations

import pytest

pytest.importorskip("tvm.target.cuda")

from tvm import te, tir  # noqa: E402
from tvm.ir.module import IRModule  # noqa: E402
from tvm.ir.target import Target  # noqa: E402
from tvm.meta_schedule import TuneContext  # noqa: E402
from tvm.meta_schedule.mutator import MutateThreadBinding, MutateTileSize  # noqa: E402
from tvm.meta_schedule.postproc import VerifyGPUCode, apply_postprocs  # noqa: E402
from tvm.meta_schedule.schedule_rule import MultiLevelTilingGPU  # noqa: E402
from tvm.meta_schedule.space_generator import PostOrderApply  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _plugins(tmp_path_factory):
    from tvm.target.cuda.plugin import ensure_registered

    ensure_registered()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TVM_CACHE_DIR", str(tmp_path_factory.mktemp("tvm-cache")))
        yield


def _matmul_relu(n=128):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((n, n), lambda i, j: te.max(C[i, j], 0.0), name="D")
    return IRModule({"main": te.create_prim_func([A, B, D])})


def test_gpu_defaults_generate_sampled_spaces_that_build():
    mod = _matmul_relu()
    space = PostOrderApply()
    ctx = TuneContext(mod, Target("cuda"), space_generator=space, seed=0)
    spaces = ctx.generate_design_space()
    assert any(isinstance(r, MultiLevelTilingGPU) for r in space.sch_rules)
    assert any(isinstance(p, VerifyGPUCode) for p in space.postprocs)
    kinds = {type(m) for m in space.mutator_probs}
    assert MutateTileSize in kinds and MutateThreadBinding in kinds
    # space 0 is the default schedule (no sampling); the rest sample tiles
    assert not any(i.kind.has_decision for i in spaces[0].trace.insts)
    sampled = [s for s in spaces[1:] if any(i.kind.name == "SamplePerfectTile"
                                            for i in s.trace.insts)]
    assert sampled
    accepted = 0
    for seed in range(6):
        sch = tir.Schedule(mod, seed=seed)
        sampled[0].trace.apply_to_schedule(sch, decision_provider=lambda *a: None)
        if not apply_postprocs(sch, space.postprocs):
            continue
        accepted += 1
        lib = tir.build(sch.mod["main"].with_attr("tir.is_scheduled", True), target="cuda")
        source = lib.get_source("cu")
        assert "__global__" in source and "threadIdx.x" in source and "__shared__" in source
    assert accepted >= 1
