"""The schedule-rule framework (tvm.tir.schedule.rules): the driver's order, claims and
explain, declined and failing rules, strict mode, priorities, the block helpers, and the
trace of a default GPU schedule replayed from JSON."""

from __future__ import annotations

import logging

import pytest
from schedule_util import assert_func_equal, elementwise, matmul
from tvm import te, tir
from tvm.ffi import structural_equal
from tvm.tir.schedule import Trace
from tvm.tir.schedule.rules import (
    SCHEDULED_ATTR, STRICT_ENV, AutoInline, FirstOf, RuleNotApplicable, ScheduleRule,
    apply_rules, block_kind, claim, explain, loop_extent, loop_roles, root_blocks,
    schedule_func, sort_rules,
)


class Parallel(ScheduleRule):
    name = "parallel"

    def applies(self, sch, block):
        return block_kind(sch, block) == "spatial"

    def transform(self, sch, block):
        sch.parallel(sch.get_loops(block)[0])


class Decline(ScheduleRule):
    name = "decline"

    def __init__(self):
        self.seen = []

    def transform(self, sch, block):
        self.seen.append(sch.get(block).name_hint)
        sch.parallel(sch.get_loops(block)[0])  # undone: the attempt is dropped
        raise RuleNotApplicable("not my kind of block")


class Buggy(ScheduleRule):
    name = "buggy"

    def transform(self, sch, block):
        raise KeyError("a bug in the rule")


class Split(ScheduleRule):
    """Samples its factors: the first candidate is the default decision, a tuner may ask
    for all of them."""

    name = "split"

    def applies(self, sch, block):
        return block_kind(sch, block) == "spatial"

    def apply(self, sch, block):
        loop = sch.get_loops(block)[-1]
        factors = sch.sample_perfect_tile(loop, 2, decision=[16, 8])
        sch.split(loop, factors)
        return [sch]


def test_rules_schedule_blocks_in_order_and_explain_says_which():
    func = matmul(with_epilogue=True)
    class AnyBlock(Parallel):
        name = "any"

        def applies(self, sch, block):
            return True

    result = apply_rules(func, [Parallel(), FirstOf("other", [Decline(), AnyBlock()])])
    assert result.explain == {"D": "parallel", "C": "any"}
    loops = {lp.kind.name for lp in _loops(result.func)}
    assert "PARALLEL" in loops
    assert explain(func, [Parallel()]) == {"D": "parallel"}


def test_declined_attempts_leave_no_trace_and_are_logged(caplog):
    rule = Decline()
    with caplog.at_level(logging.INFO, logger="tvm.tir.schedule.rules"):
        result = apply_rules(elementwise(), [rule, Parallel()])
    assert rule.seen == ["B", "C"]  # each block offered once: nothing else changed
    assert "not my kind of block" in caplog.text
    assert result.explain == {"B": "parallel", "C": "parallel"}
    assert [i.kind.name for i in result.trace.insts].count("Parallel") == 2


def test_auto_inline_and_created_blocks_are_claimed():
    result = apply_rules(matmul(with_epilogue=True), [AutoInline(), Parallel()])
    assert result.explain == {"D": "parallel"}  # C is a reduction: not inlined, not spatial
    result = apply_rules(elementwise(), [AutoInline(), Parallel()])
    assert result.explain == {"B": "inlined", "C": "parallel"}

    class Cache(ScheduleRule):
        name = "cache"

        def transform(self, sch, block):
            sch.cache_read(block, 0, "global")

    result = apply_rules(elementwise(), [Cache()])
    assert result.explain["B"] == "cache"
    assert result.explain["A_global"] == "cache (created)"


def test_a_preparing_rule_runs_once_per_block_and_claims_nothing():
    class Annotate(ScheduleRule):
        name = "annotate"
        claims_block = False

        def transform(self, sch, block):
            sch.annotate(block, "seen", 1)

    result = apply_rules(elementwise(), [Annotate(), Parallel()])
    assert result.explain == {"B": "parallel", "C": "parallel"}
    assert [i.kind.name for i in result.trace.insts].count("Annotate") == 2


def test_rules_claim_the_blocks_they_schedule_together():
    class Both(ScheduleRule):
        name = "both"

        def transform(self, sch, block):
            for b in root_blocks(sch):
                sch.parallel(sch.get_loops(b)[0])
                claim(sch, b, "both")

    assert apply_rules(elementwise(), [Both(), Parallel()]).explain == {"B": "both", "C": "both"}


def test_a_failing_rule_is_logged_or_raised_in_strict_mode(monkeypatch, caplog):
    func = elementwise()
    monkeypatch.delenv(STRICT_ENV, raising=False)
    with caplog.at_level(logging.WARNING, logger="tvm.tir.schedule.rules"):
        out = schedule_func(func, [Buggy()])
    assert "a bug in the rule" in caplog.text
    assert out.attrs[SCHEDULED_ATTR] and structural_equal(out.body, func.body)
    monkeypatch.setenv(STRICT_ENV, "1")
    with pytest.raises(KeyError, match="a bug in the rule"):
        schedule_func(func, [Buggy()])
    marked = func.with_attr(SCHEDULED_ATTR, True)
    assert schedule_func(marked, [Parallel()]) is marked


def test_priorities_sort_stably():
    class High(Parallel):
        name = "high"
        priority = 5

    class Low(Parallel):
        name = "low"
        priority = -1

    rules = [Parallel(), Low(), High(), Decline()]
    assert [r.name for r in sort_rules(rules)] == ["high", "parallel", "decline", "low"]
    assert apply_rules(elementwise(), rules).explain == {"B": "high", "C": "high"}


def test_sampling_rules_record_their_decisions():
    result = apply_rules(elementwise((4, 128)), [Split()])
    trace = result.trace
    assert any(i.kind.name == "SamplePerfectTile" for i in trace.insts)
    assert [int(lp.extent) for lp in _loops(result.func)][-2:] == [16, 8]
    replayed = tir.Schedule(elementwise((4, 128)))
    Trace.from_json(trace.as_json()).apply_to_schedule(replayed)
    assert structural_equal(replayed.mod["main"], result.func)


def test_block_helpers():
    sch = tir.Schedule(matmul(32, 16, 8, with_epilogue=True))
    c, d = root_blocks(sch)
    assert (block_kind(sch, c), block_kind(sch, d)) == ("reduction", "spatial")
    assert [r for _, r in loop_roles(sch, c)] == ["S", "S", "R"]
    assert [loop_extent(sch, lp) for lp in sch.get_loops(c)] == [32, 16, 8]
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s2 = tir.Schedule(te.create_prim_func([A, B]))
    assert loop_extent(s2, s2.get_loops(s2.get_block("B"))[0]) is None


def _loops(func):
    from lowering_helpers import find_all

    return find_all(func, tir.For)


# -- the GPU rules on the framework ----------------------------------------------------------
def _gpu_cases():
    from test_schedule_gpu_fallback import argmax_all, argmax_rows, mean_all
    from test_schedule_gpu_rules import _elementwise, _layer_norm, _matmul, _row_sum, _softmax

    return {"elementwise": _elementwise((64, 1024)), "row_sum": _row_sum(16, 256),
            "matmul": _matmul(64, 64, 64), "softmax": _softmax(16, 128),
            "layer_norm": _layer_norm(16, 128), "small_matmul": _matmul(8, 8, 64),
            "mean_all": mean_all, "argmax_all": argmax_all, "argmax_rows": argmax_rows}


@pytest.mark.parametrize("case", sorted(_gpu_cases()))
def test_gpu_schedule_trace_replays_from_json(case):
    from tvm.tir.schedule.gpu_rules import GPUParams, gpu_rules, schedule_gpu_func

    params = GPUParams(max_threads=64, warp_size=32, max_shared_memory=49152)
    func = _gpu_cases()[case].with_attr("global_symbol", "main")
    result = apply_rules(func, gpu_rules(params))
    replayed = tir.Schedule(func)
    Trace.from_json(result.trace.as_json()).apply_to_schedule(replayed)
    assert structural_equal(replayed.mod["main"], result.func)
    # the default schedule is that result (bind_unbound has nothing left to bind) marked
    assert_func_equal(schedule_gpu_func(func, None, params),
                      result.func.with_attr(SCHEDULED_ATTR, True))


def test_gpu_rules_explain_which_rule_made_each_kernel():
    from tvm.tir.schedule.gpu_rules import GPUParams, gpu_rules

    params = GPUParams(max_threads=64, warp_size=32, max_shared_memory=49152)
    cases = _gpu_cases()
    assert explain(cases["matmul"], gpu_rules(params))["C"] == "matmul"
    assert set(explain(cases["softmax"], gpu_rules(params)).values()) == {"inlined",
                                                                          "row_pipeline"}
    assert explain(cases["row_sum"], gpu_rules(params)) == {"B": "reduction"}
    assert explain(cases["elementwise"], gpu_rules(params)) == {"B": "inlined",
                                                                 "C": "elementwise"}
    assert explain(cases["argmax_rows"], gpu_rules(params)) == {"argmax": "reduction"}
    assert explain(cases["argmax_all"], gpu_rules(params)) == {"argmax": "single_thread"}
    assert explain(cases["mean_all"], gpu_rules(params)) == {"total": "reduction",
                                                              "mean": "single_thread"}


class ParallelOrVectorize(ScheduleRule):
    """``apply``: parallel; ``candidates`` adds a vectorized alternative (a tuner's)."""

    name = "par_or_vec"

    def applies(self, sch, block):
        return block_kind(sch, block) == "spatial"

    def transform(self, sch, block):
        sch.parallel(sch.get_loops(block)[0])

    def candidates(self, sch, block):
        from tvm.tir.schedule.rules import fork

        other = fork(sch)
        self.transform(sch, block)
        other.vectorize(other.get_loops(block)[-1])
        return [sch, other]


def test_candidates_are_asked_only_when_exploring():
    from tvm.tir.schedule.rules.driver import attempt
    from tvm.tir.stmt import ForKind

    func = elementwise((4, 8))
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    rule = ParallelOrVectorize()
    (only,) = attempt(rule, sch, block)
    assert only.get(only.get_loops(block)[0]).kind == ForKind.PARALLEL
    first, other = attempt(rule, sch, block, explore=True)
    assert first.get(first.get_loops(block)[0]).kind == ForKind.PARALLEL
    assert other.get(other.get_loops(block)[-1]).kind == ForKind.VECTORIZED
    # FirstOf explores its first applicable alternative's candidates
    both = FirstOf("anchor", [Decline(), rule])
    assert len(attempt(both, sch, block, explore=True)) == 2
    assert len(attempt(both, sch, block)) == 1
    # the default schedule keeps apply's choice
    from tvm.tir.stmt import For
    from tvm.tir.stmt_functor import post_order_visit

    kinds = []
    post_order_visit(apply_rules(func, [rule]).func.body,
                     lambda n: kinds.append(n.kind) if isinstance(n, For) else None)
    assert ForKind.PARALLEL in kinds and ForKind.VECTORIZED not in kinds


def test_a_single_primitive_rule_is_tried_in_place_and_a_failure_leaves_no_change():
    from tvm.tir.schedule import Schedule
    from tvm.tir.schedule.rules.driver import attempt

    sch = Schedule(elementwise())
    out = attempt(AutoInline(), sch, sch.get_block("B"))
    assert out == [sch]  # no copy of the schedule was made
    assert len(root_blocks(sch)) == 1

    class InlineOutput(AutoInline):
        def applies(self, sch, block):
            return True

    sch = Schedule(elementwise())
    reasons = []
    assert attempt(InlineOutput(), sch, sch.get_block("C"), reasons) is None
    assert "output buffer" in reasons[0]
    assert structural_equal(sch.mod, Schedule(elementwise()).mod)
    assert [i.kind.name for i in sch.trace.insts] == ["GetBlock"]
