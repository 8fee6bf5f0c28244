"""The llvm kind's TIR passes (unswitch, promote) are named passes at the end of tir.build's
default pipeline: instruments see them, PassContext can disable them, codegen rewrites no
TIR of what tir.build hands it."""

from __future__ import annotations

import io

import numpy as np
from tvm import te, tir
from tvm.ir import IRModule
from tvm.ir.target import HOST_JIT, Target, host_target, list_target_kinds
from tvm.ir.transform import PassContext, PassTimingInstrument, PrintAfterEachPass, get_pass
from tvm.tir import Allocate
from tvm.tir.stmt_functor import post_order_visit

UNSWITCH = "tir.llvm.UnswitchInvariantGuards"
PROMOTE = "tir.llvm.PromoteLoopAccumulators"


def _matmul(m: int = 13):
    """A matmul whose row count does not divide the register tile: guarded rows."""
    A = te.placeholder((m, 64), name="A")
    B = te.placeholder((64, 96), name="B")
    r = te.reduce_axis((0, 64), name="k")
    C = te.compute((m, 96), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def _run(rt_mod, m: int = 13) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, 64)).astype("float32")
    b = rng.standard_normal((64, 96)).astype("float32")
    c = np.zeros((m, 96), "float32")
    rt_mod["main"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def _local_allocations(func) -> int:
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, Allocate)
                     and n.scope == "local" else None)
    return len(found)


def test_the_llvm_kind_declares_its_passes_and_is_a_host_jit():
    kind = Target("llvm").kind
    assert list(kind.lowering_passes) == [UNSWITCH, PROMOTE]
    assert HOST_JIT in kind.capabilities and "llvm" in list_target_kinds(HOST_JIT)
    assert host_target().kind_name in list_target_kinds(HOST_JIT)
    assert get_pass(PROMOTE).name == PROMOTE and get_pass(UNSWITCH).name == UNSWITCH
    names = [p.name for p in tir.get_default_pipeline("llvm").passes]
    assert names == ["tir.lowering_pipeline", "MakePackedAPI", UNSWITCH, PROMOTE]


def test_instruments_list_the_llvm_passes_of_a_build():
    timing = PassTimingInstrument()
    printed = io.StringIO()
    with PassContext(instruments=[timing, PrintAfterEachPass(stream=printed)]):
        rt_mod = tir.build(_matmul(), target="llvm")
    names = list(timing.timings)
    assert names.index("MakePackedAPI") < names.index(UNSWITCH) < names.index(PROMOTE)
    text = printed.getvalue()
    assert f"# IR after pass {UNSWITCH}" in text and f"# IR after pass {PROMOTE}" in text
    _run(rt_mod)


def test_the_passes_rewrite_what_codegen_receives():
    """Structurally: the packed kernel gets its local accumulators from the promote pass
    (visible in the pipeline's output), not inside code generation."""
    from tvm.target.llvm.schedule_rules import schedule_prim_func
    from tvm.tir.transform import MakePackedAPI

    mod = IRModule({"main": schedule_prim_func(_matmul())})
    with Target("llvm"):
        packed = MakePackedAPI()(tir.get_lowering_pipeline()(mod))
        unswitched = get_pass(UNSWITCH)(packed)
        promoted = get_pass(PROMOTE)(unswitched)
    assert unswitched is not packed  # full tiles got an unguarded copy
    before, after = _local_allocations(unswitched["main"]), _local_allocations(promoted["main"])
    assert after > before


def test_a_disabled_llvm_pass_does_not_run_and_the_build_still_works():
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing], disabled_pass=[PROMOTE, UNSWITCH]):
        rt_mod = tir.build(_matmul(), target="llvm")
    assert PROMOTE not in timing.timings and UNSWITCH not in timing.timings
    _run(rt_mod)
