"""Traces: Python text, JSON, replay, sampling decisions."""

from __future__ import annotations

import json

import pytest
from schedule_util import elementwise, matmul
from tvm import tir
from tvm.ffi import structural_equal
from tvm.tir import ScheduleError
from tvm.tir.schedule import Trace, get_instruction_kind, list_instruction_kinds


def tiled(seed=0, func=None):
    sch = tir.Schedule(func or matmul(64, 64, 64, with_epilogue=True), seed=seed,
                       debug_mask="all")
    b0 = sch.get_block("C")
    l1, l2, l3 = sch.get_loops(b0)
    l4, l5 = sch.split(l1, factors=[None, 32])
    v = sch.sample_perfect_tile(l2, n=2, max_innermost_factor=8)
    l6, l7 = sch.split(l2, factors=v)
    sch.reorder(l4, l6, l3, l5, l7)
    sch.parallel(l4)
    sch.vectorize(l7)
    sch.annotate(b0, "pragma", "x")
    return sch


def test_trace_prints_python():
    sch = tir.Schedule(matmul(64, 64, 64))
    b0 = sch.get_block("C")
    l1, l2, l3 = sch.get_loops(b0)
    sch.split(l1, factors=[None, 32])
    sch.fuse(l2, l3)
    assert str(sch.trace).splitlines() == [
        'b0 = sch.get_block("C")',
        "l1, l2, l3 = sch.get_loops(b0)",
        "l4, l5 = sch.split(l1, factors=[None, 32])",
        "l6 = sch.fuse(l2, l3)",
    ]


def test_trace_text_shows_decisions_and_attrs():
    lines = tiled().trace.as_python()
    assert lines[3].startswith("v6, v7 = sch.sample_perfect_tile(l2, n=2, "
                               "max_innermost_factor=8, decision=[")
    assert lines[-1] == 'sch.annotate(b0, ann_key="pragma", ann_val="x")'


def test_printed_trace_replays_by_exec():
    sch = tiled(seed=7)
    fresh = tir.Schedule(matmul(64, 64, 64, with_epilogue=True))
    exec(str(sch.trace), {"sch": fresh})  # noqa: S102 - the trace is Python by design
    assert structural_equal(fresh.mod, sch.mod)


def test_json_roundtrip_and_replay():
    sch = tiled(seed=11)
    text = sch.trace.as_json()
    data = json.loads(text)
    assert data["version"] == 1 and data["insts"][0][0] == "GetBlock"
    loaded = Trace.from_json(text)
    assert loaded.as_json() == text
    assert str(loaded) == str(sch.trace)
    fresh = tir.Schedule(matmul(64, 64, 64, with_epilogue=True))
    loaded.apply_to_schedule(fresh)
    assert structural_equal(fresh.mod, sch.mod)
    assert str(fresh.trace) == str(sch.trace)


def test_same_seed_same_decisions():
    a, b = tiled(seed=3), tiled(seed=3)
    assert str(a.trace) == str(b.trace)
    decisions = {str(tiled(seed=s).trace) for s in range(12)}
    assert len(decisions) > 1


def test_with_decision_mutates_a_sample():
    sch = tiled(seed=1)
    inst = next(i for i in sch.trace.insts if i.kind.name == "SamplePerfectTile")
    mutated = sch.trace.with_decision(inst, [32, 2])
    fresh = tir.Schedule(matmul(64, 64, 64, with_epilogue=True))
    mutated.apply_to_schedule(fresh)
    loops = fresh.get_loops(fresh.get_block("C"))
    assert [fresh.get(lp).extent.value for lp in loops] == [2, 32, 64, 32, 2]
    bad = sch.trace.with_decision(inst, [3, 5])
    with pytest.raises(ScheduleError, match="not 2 positive factors of 64"):
        bad.apply_to_schedule(tir.Schedule(matmul(64, 64, 64, with_epilogue=True)))
    with pytest.raises(ValueError, match="not a sampling instruction"):
        sch.trace.with_decision(sch.trace.insts[0], 1)


def test_decision_provider():
    sch = tiled(seed=1)
    fresh = tir.Schedule(matmul(64, 64, 64, with_epilogue=True))

    def provider(inst, inputs, attrs, decision):
        return [8, 8]

    sch.trace.apply_to_schedule(fresh, decision_provider=provider)
    loops = fresh.get_loops(fresh.get_block("C"))
    assert [fresh.get(lp).extent.value for lp in loops][1:5:3] == [8, 8]


def test_sample_perfect_tile_properties():
    sch = tir.Schedule(matmul(96, 64, 64), seed=0)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    for _ in range(30):
        vs = sch.sample_perfect_tile(i, n=4, max_innermost_factor=6)
        fs = [sch.get(v) for v in vs]
        assert fs[0] * fs[1] * fs[2] * fs[3] == 96 and fs[3] <= 6 and min(fs) >= 1
    (v,) = sch.sample_perfect_tile(i, n=1)
    assert sch.get(v) == 96
    with pytest.raises(ScheduleError, match="n must be a positive int"):
        sch.sample_perfect_tile(i, n=0)


def test_sample_categorical():
    sch = tir.Schedule(matmul(8, 8, 8), seed=0)
    seen = {sch.get(sch.sample_categorical([1, 2, 3], [0.5, 0.5, 0.0])) for _ in range(40)}
    assert seen == {1, 2}
    with pytest.raises(ScheduleError, match="as many"):
        sch.sample_categorical([1, 2], [1.0])
    with pytest.raises(ScheduleError, match="positive sum"):
        sch.sample_categorical([1], [0.0])
    v = sch.sample_categorical([5, 6], [1, 1], decision=1)
    assert sch.get(v) == 6


def test_sample_compute_location():
    sch = tir.Schedule(matmul(16, 16, 16, with_epilogue=True), seed=0)
    c = sch.get_block("C")
    seen = set()
    for _ in range(40):
        loc = sch.sample_compute_location(c)
        sref = sch.get_sref(loc)
        seen.add(sref.mark or sref.loop.loop_var.name)
    assert seen == {"root", "i", "j"}  # C is a reduction: it cannot be inlined
    b = tir.Schedule(elementwise((8, 8)), seed=0)
    marks = {b.get_sref(b.sample_compute_location(b.get_block("B"), decision=d)).mark
             for d in (-2, -1)}
    assert marks == {"inline", "root"}
    with pytest.raises(ScheduleError, match="not one of the locations"):
        sch.sample_compute_location(c, decision=5)
    loc = sch.sample_compute_location(c, decision=-1)
    with pytest.raises(ScheduleError, match="special 'root' location"):
        sch.parallel(loc)


def test_simplified_and_pop():
    sch = tir.Schedule(matmul(16, 16, 16))
    b = sch.get_block("C")
    sch.get_loops(b)
    i, _, _ = sch.get_loops(b)
    sch.parallel(i)
    sch.get_block("C")
    simple = sch.trace.simplified()
    assert [inst.kind.name for inst in simple.insts] == ["GetBlock", "GetLoops", "Parallel"]
    n = len(sch.trace)
    assert sch.trace.pop().kind.name == "GetBlock" and len(sch.trace) == n - 1


def test_bad_json():
    with pytest.raises(ValueError, match="'insts' list"):
        Trace.from_json("{}")
    with pytest.raises(KeyError, match="unknown schedule instruction kind 'Nope'"):
        Trace.from_json('{"insts": [["Nope", [], [], []]]}')
    with pytest.raises(ValueError, match="before it is defined"):
        Trace.from_json('{"insts": [["GetLoops", [{"rv": "b0"}], [], []]]}')
    with pytest.raises(ValueError, match="expected 1 and 0"):
        Trace.from_json('{"insts": [["GetLoops", [], [], []]]}')


def test_instruction_kinds_registry():
    kinds = list_instruction_kinds()
    for name in ("GetBlock", "Split", "Fuse", "Reorder", "Parallel", "Vectorize", "Unroll",
                 "Bind", "Annotate", "Unannotate", "SamplePerfectTile", "SampleCategorical",
                 "SampleComputeLocation"):
        assert name in kinds
    split = get_instruction_kind("Split")
    assert split.inputs == ("loop", "factors") and split.attrs == ("preserve_unit_iters",)
    assert get_instruction_kind("GetBlock").pure and not split.pure
