"""Schedule core: lookups, handles across rewrites, rollback, copy, state.replace."""

from __future__ import annotations

import pytest
from schedule_util import assert_func_equal, matmul, script_module
from tvm import tir
from tvm.ffi import structural_equal
from tvm.ir.module import IRModule
from tvm.tir import BlockRV, LoopRV, ScheduleError
from tvm.tir.schedule import InvalidHandleError, analysis

T = script_module()


@T.prim_func
def three_stage(A: T.Buffer((16, 16), "float32"), D: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    C = T.alloc_buffer((16, 16))
    for i in range(16):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1.0)
        for j in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] * T.float32(2.0)
    for i, j in T.grid(16, 16):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = C[vi, vj] + B[vi, vj]


@T.prim_func
def three_stage_no_c(A: T.Buffer((16, 16), "float32"), D: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    C = T.alloc_buffer((16, 16))
    for i in range(16):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1.0)
    for i, j in T.grid(16, 16):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = C[vi, vj] + B[vi, vj]


def names(sch, rvs):
    return [sch.get(rv).name_hint if isinstance(rv, BlockRV) else sch.get(rv).loop_var.name
            for rv in rvs]


# -- lookups ----------------------------------------------------------------------------------
def test_lookups():
    sch = tir.Schedule(three_stage, debug_mask="all")
    b, c, d = (sch.get_block(n) for n in "BCD")
    assert names(sch, sch.get_loops(c)) == ["i", "j"]
    root = sch.get_block("root")
    assert names(sch, sch.get_child_blocks(root)) == ["B", "C", "D"]
    outer_i = sch.get_loops(b)[0]
    assert names(sch, sch.get_child_blocks(outer_i)) == ["B", "C"]
    assert names(sch, sch.get_producers(d)) == ["B", "C"]
    assert names(sch, sch.get_consumers(b)) == ["C", "D"]
    assert names(sch, sch.get_producers(b)) == []
    assert names(sch, sch.get_output_blocks(root)) == ["D"]
    assert isinstance(sch.get_loops(b)[0], LoopRV)


def test_get_block_errors():
    sch = tir.Schedule(three_stage)
    with pytest.raises(ScheduleError, match="no block named 'CC'.*did you mean 'C'"):
        sch.get_block("CC")
    with pytest.raises(ScheduleError, match="no function named 'nope'"):
        sch.get_block("B", func_name="nope")
    with pytest.raises(TypeError, match="name must be a str"):
        sch.get_block(3)


def test_duplicate_block_names_are_ambiguous():
    B = tir.decl_buffer((4,), "float32", "B")

    def block(name):
        store = tir.BufferStore(B, tir.const(1.0, "float32"), (0,))
        return tir.BlockRealize((), True, tir.Block((), (), (), name, store))

    func = tir.PrimFunc([tir.Var("b", "handle")], tir.stmt_seq(block("X"), block("X")))
    func = func.with_fields(buffer_map={func.params[0]: B})
    sch = tir.Schedule(func)
    with pytest.raises(ScheduleError, match="2 blocks are named 'X'"):
        sch.get_block("X")
    # the body had no root block: the schedule gave it one
    assert sch.mod["main"].body.block.name_hint == "root"


def test_wrong_handle_kinds():
    sch = tir.Schedule(three_stage)
    b = sch.get_block("B")
    i, _ = sch.get_loops(b)
    with pytest.raises(TypeError, match="expected a BlockRV"):
        sch.get_loops(i)
    with pytest.raises(TypeError, match="expected a LoopRV"):
        sch.split(b, [2, 8])
    with pytest.raises(InvalidHandleError, match="not a handle of this schedule"):
        sch.get_loops(BlockRV())


# -- handles across rewrites ------------------------------------------------------------------
def test_handles_follow_rewrites():
    sch = tir.Schedule(matmul(32, 32, 32), debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.reorder(k, j)
    sch.annotate(c, "x", 1)
    sch.parallel(i)
    assert sch.get(c).annotations == {"x": 1}
    assert sch.get(i).kind == tir.ForKind.PARALLEL
    assert names(sch, sch.get_loops(c)) == ["i", "k", "j"]
    jo, ji = sch.split(j, [4, 8])
    with pytest.raises(InvalidHandleError, match="loop of LoopRV.* was removed by split"):
        sch.unroll(j)
    assert names(sch, sch.get_loops(c)) == ["i", "k", "j_0", "j_1"]


def test_failed_primitive_rolls_back():
    sch = tir.Schedule(matmul(16, 16, 16), debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    mod, ntrace = sch.mod, len(sch.trace)
    with pytest.raises(ScheduleError):
        sch.split(i, factors=[3, 3])
    with pytest.raises(ScheduleError):
        sch.parallel(k)
    assert sch.mod is mod and len(sch.trace) == ntrace
    sch.state.verify()
    sch.split(i, factors=[4, 4])  # still usable


def test_copy_is_independent():
    sch = tir.Schedule(matmul(16, 16, 16), seed=5)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    other = sch.copy()
    other.split(i, [2, 8])
    assert sch.get(i).extent.value == 16  # the original is untouched
    with pytest.raises(InvalidHandleError):
        other.get(i)
    assert len(other.trace) == len(sch.trace) + 1
    # the same random state: the same samples
    assert sch.get(sch.sample_categorical([1, 2, 3], [1, 1, 1])) == \
        other.get(other.sample_categorical([1, 2, 3], [1, 1, 1]))
    assert sch.fork_seed() == other.fork_seed()


def test_work_on_and_multiple_functions():
    mod = IRModule({"main": matmul(8, 8, 8), "other": three_stage})
    sch = tir.Schedule(mod)
    assert sch.func_working_on == "main"
    with pytest.raises(ScheduleError, match="no block named 'B' in function 'main'"):
        sch.get_block("B")
    b = sch.get_block("B", func_name="other")
    sch.split(sch.get_loops(b)[1], [4, 4])
    sch.work_on("other")
    assert names(sch, sch.get_loops(sch.get_block("B"))) == ["i", "j_0", "j_1"]
    assert structural_equal(sch.mod["main"], mod["main"])


def test_get_and_get_sref():
    sch = tir.Schedule(three_stage)
    b = sch.get_block("B")
    sref = sch.get_sref(b)
    assert sref.block is sch.get(b) and sref.realize.block is sref.block
    assert sch.get_sref(sch.get(b)) is sref
    assert [s.loop.loop_var.name for s in analysis.get_loops(sref)] == ["i", "j"]
    assert sref.scope_block().block.name_hint == "root"
    v = sch.sample_categorical([7], [1.0])
    assert sch.get(v) == 7
    sch.remove_rv(v)
    with pytest.raises(InvalidHandleError):
        sch.get(v)


def test_show_prints_the_program(capsys):
    sch = tir.Schedule(three_stage)
    sch.show()
    out = capsys.readouterr().out
    assert 'T.block("C")' in out and "def main" in out
    assert repr(sch).startswith("Schedule(func='main'")


def test_constructor_errors():
    with pytest.raises(TypeError, match="PrimFunc or an IRModule"):
        tir.Schedule(42)
    with pytest.raises(ValueError, match="debug_mask"):
        tir.Schedule(three_stage, debug_mask="some")
    with pytest.raises(ValueError, match="no PrimFunc"):
        tir.Schedule(IRModule({}))


# -- the state directly -----------------------------------------------------------------------
def test_state_replace_removes_block_and_its_loops():
    sch = tir.Schedule(three_stage, debug_mask="all")
    c = sch.get_block("C")
    state = sch.state
    target = state.removal_target(sch.get_sref(c))
    assert target.is_loop and target.loop.loop_var.name == "j"
    state.replace({target: None})
    state.verify()
    assert_func_equal(sch, three_stage_no_c)
    with pytest.raises(InvalidHandleError, match="removed by replace"):
        sch.get(c)
    assert sch.get(sch.get_block("B")).name_hint == "B"


def test_state_replace_with_block_reuse():
    sch = tir.Schedule(three_stage)
    b = sch.get_block("B")
    old = sch.get(b)
    new = old.with_fields(name_hint="B2")
    sch.state.replace({old: new}, block_reuse={old: new})
    assert sch.get(b) is new
    sch.state.verify()


def test_state_rejects_duplicated_statements():
    sch = tir.Schedule(three_stage)
    b = sch.get_sref(sch.get_block("B"))
    loop = b.parent.loop
    with pytest.raises(ScheduleError, match="occurs twice"):
        sch.state.replace({loop: tir.stmt_seq(loop, loop)})


def test_state_replace_inserts_next_to_a_loop_nest():
    sch = tir.Schedule(three_stage, debug_mask="all")
    d = sch.get_block("D")
    d_sref = sch.get_sref(d)
    outer = analysis.get_loops(d_sref)[0]
    C = sch.get(sch.get_block("C")).writes[0].buffer
    store = tir.BufferStore(C, tir.const(0.0, "float32"), (0, 0))
    new_block = tir.BlockRealize((), True, tir.Block((), (), (), "E", store))
    sch.state.replace({outer: tir.stmt_seq(new_block, outer.stmt)})
    sch.state.verify()
    root = sch.get_block("root")
    assert names(sch, sch.get_child_blocks(root)) == ["B", "C", "E", "D"]
    assert sch.get_sref(d) is d_sref and names(sch, sch.get_loops(d)) == ["i", "j"]
