"""Mutators change exactly one sampled decision of a CPU design space, keep it valid, and
are deterministic given the rng; None when there is nothing to change."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

import space_cpu_workloads as W  # noqa: E402
from tvm import meta_schedule as ms  # noqa: E402
from tvm.meta_schedule.mutator import (  # noqa: E402
    MutateComputeLocation, MutateParallel, MutateTileSize, MutateUnroll,
)
from tvm.meta_schedule.postproc import apply_postprocs  # noqa: E402
from tvm.meta_schedule.space_generator import PostOrderApply  # noqa: E402
from tvm.tir import Schedule  # noqa: E402
from tvm.tir.schedule.sampling import compute_location_candidates  # noqa: E402


@pytest.fixture(autouse=True)
def _strict_rules(monkeypatch):
    # a rule failing for another reason than not fitting is a bug: raise it
    monkeypatch.setenv("TVM_SCHEDULE_RULES_STRICT", "1")


def _ctx(func, target=W.TARGET):
    return ms.TuneContext(func, target, space_generator=PostOrderApply(), seed=0)


@pytest.fixture(scope="module")
def matmul():
    ctx = _ctx(W.matmul_relu())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TVM_SCHEDULE_RULES_STRICT", "1")
        spaces = ctx.generate_design_space()
    # the default schedule, then its fixed alternatives, then the sampled spaces
    return ctx, [spaces[0]] + [s for s in spaces if any(i.kind.has_decision
                                                       for i in s.trace.insts)]


def _changed(old, new):
    """The instructions whose decision differs (both traces share the instructions)."""
    assert new.insts == old.insts
    return [i for i in old.insts if old.decisions.get(i) != new.decisions.get(i)]


def _candidate(ctx, trace):
    sch = Schedule(ctx.mod)
    trace.apply_to_schedule(sch)
    assert apply_postprocs(sch, ctx.space_generator.postprocs)
    return sch


def test_mutate_tile_size(matmul):
    ctx, spaces = matmul
    trace = spaces[1].trace
    mutated = MutateTileSize().apply(trace, random.Random(1))
    (inst,) = _changed(trace, mutated)
    assert inst.kind.name == "SamplePerfectTile"
    old, new = trace.decisions[inst], mutated.decisions[inst]
    assert np.prod(old) == np.prod(new) and list(old) != list(new)
    limit = dict(zip(inst.kind.attrs, inst.attrs))["max_innermost_factor"]
    assert new[-1] <= limit
    # deterministic given the rng, and another rng mutates elsewhere at some point
    again = MutateTileSize().apply(trace, random.Random(1))
    assert again.decisions[inst] == new
    others = {tuple(map(tuple, (MutateTileSize().apply(trace, random.Random(s)).decisions[i]
                                for i in trace.insts if i in trace.decisions
                                and i.kind.name == "SamplePerfectTile")))
              for s in range(6)}
    assert len(others) > 1
    got, want = W.run("matmul_relu", _candidate(ctx, mutated).mod)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_tile_size_keeps_the_innermost_limit():
    from tvm.meta_schedule.mutator.mutate_tile_size import _moves

    factors = (1, 2, 4)
    moves = _moves(factors, 4)
    assert moves and all(factors[2] * d <= 4 for _, j, d in moves if j == 2)
    assert (1, 2, 2) not in moves and (2, 0, 4) in moves
    assert _moves((1, 1, 1), 8) == []


@pytest.mark.parametrize("mutator,key", [(MutateUnroll(), "meta_schedule.unroll_explicit"),
                                         (MutateParallel(), "meta_schedule.parallel")])
def test_mutate_annotated_categoricals(matmul, mutator, key):
    ctx, spaces = matmul
    trace = spaces[1].trace
    mutated = mutator.apply(trace, random.Random(3))
    (inst,) = _changed(trace, mutated)
    assert inst.kind.name == "SampleCategorical"
    users = [i for i in trace.insts if i.kind.name == "Annotate" and i.inputs[1] is
             inst.outputs[0]]
    assert [dict(zip(u.kind.attrs, u.attrs))["ann_key"] for u in users] == [key]
    assert mutated.decisions[inst] != trace.decisions[inst]
    assert mutator.apply(trace, random.Random(3)).decisions[inst] == mutated.decisions[inst]
    cand = _candidate(ctx, mutated)
    got, want = W.run("matmul_relu", cand.mod)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_nothing_to_mutate_in_the_default_schedule(matmul):
    ctx, spaces = matmul
    default = spaces[0].trace
    rng = random.Random(0)
    for mutator in (MutateTileSize(), MutateUnroll(), MutateParallel(),
                    MutateComputeLocation(ctx.mod)):
        assert mutator.apply(default, rng) is None


def test_no_parallel_decision_on_one_core():
    ctx = _ctx(W.matmul_relu(32), target="llvm -num-cores=1")
    space = next(s for s in ctx.generate_design_space()
                 if any(i.kind.has_decision for i in s.trace.insts))
    assert MutateParallel().apply(space.trace, random.Random(0)) is None
    assert MutateUnroll().apply(space.trace, random.Random(0)) is not None


def test_mutate_compute_location():
    ctx = _ctx(W.centered())
    space = next(s for s in ctx.generate_design_space()
                 if any(i.kind.name == "SampleComputeLocation" for i in s.trace.insts))
    mutator = MutateComputeLocation()
    mutator.initialize_with_tune_context(ctx)
    seen = set()
    for seed in range(4):
        mutated = mutator.apply(space.trace, random.Random(seed))
        (inst,) = _changed(space.trace, mutated)
        assert inst.kind.name == "SampleComputeLocation"
        new = mutated.decisions[inst]
        assert new != space.trace.decisions[inst]
        # a valid location where the instruction runs
        probe = Schedule(ctx.mod)
        can_inline, loops = compute_location_candidates(probe, probe.get_sref(
            probe.get_block("S")))
        assert new in ([-2] if can_inline else []) + [-1] + list(range(len(loops)))
        seen.add(new)
        got, want = W.run("centered", _candidate(ctx, mutated).mod)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    assert mutator.apply(space.trace, random.Random(2)).decisions == \
        mutator.apply(space.trace, random.Random(2)).decisions
    with pytest.raises(ValueError, match="no kernel"):
        MutateComputeLocation().apply(space.trace, random.Random(0))
