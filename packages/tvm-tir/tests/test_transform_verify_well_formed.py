"""VerifyWellFormed: scoping, single definition, declared buffers, dtypes, no leftover blocks."""

import pytest
from lowering_helpers import func_of, matmul_blocks, mod_of
from tvm.ir.transform import PassContext, PassVerificationError, Sequential, function_pass
from tvm.tir import (
    Add, AttrStmt, BufferStore, FloatImm, For, IfThenElse, IntImm, IterVar, IterVarType, Let,
    PrimFunc, Range, SeqStmt, Var, convert, decl_buffer,
)
from tvm.tir.analysis import VerifyWellFormed, WellFormedError, verify_well_formed
from tvm.tir.transform import (
    FlattenBuffer, LowerInitBlock, LowerOpaqueBlock, RemoveNoOp, Simplify, lower_opaque_block,
)


def _func(body_fn, dtype="float32", shape=(8,)):
    a = Var("a", "handle")
    A = decl_buffer(shape, dtype, "A")
    return func_of([a], body_fn(A), {a: A}, "f"), A


def _store(A, idx, v=1.0):
    return BufferStore(A, FloatImm(A.dtype, v), idx)


def test_well_formed_function_passes():
    i = Var("i")
    func, _ = _func(lambda A: For(i, 0, 8, body=_store(A, (i,))))
    assert verify_well_formed(func) is True


def test_undefined_variable_is_reported_with_function_and_node():
    ghost = Var("ghost")
    func, _ = _func(lambda A: _store(A, (ghost,)))
    with pytest.raises(WellFormedError) as info:
        verify_well_formed(func)
    text = str(info.value)
    assert "PrimFunc 'f'" in text and "'ghost'" in text and "never defined" in text
    assert "at: " in text and "in statement: " in text
    assert verify_well_formed(func, assert_mode=False) is False


def test_loop_variable_used_after_its_loop():
    i = Var("i")
    func, _ = _func(lambda A: SeqStmt((For(i, 0, 8, body=_store(A, (i,))), _store(A, (i,)))))
    with pytest.raises(WellFormedError, match="outside the scope of its loop 'i'"):
        verify_well_formed(func)


def test_variable_defined_twice():
    i = Var("i")
    func, _ = _func(lambda A: SeqStmt((For(i, 0, 8, body=_store(A, (i,))), For(i, 0, 8, body=_store(A, (i,))))))
    with pytest.raises(WellFormedError, match="defined twice"):
        verify_well_formed(func)


def test_let_expression_scopes_its_variable():
    x = Var("x")
    func, _ = _func(lambda A: _store(A, (Let(x, convert(1), x + 1),)))
    assert verify_well_formed(func)


def test_buffer_without_defined_data_is_reported():
    other = decl_buffer((8,), "float32", "Other")
    func, _ = _func(lambda A: _store(other, (0,)))
    with pytest.raises(WellFormedError, match="buffer 'Other' is used but neither declared"):
        verify_well_formed(func)


def test_index_count_must_match_dimensions():
    func, _ = _func(lambda A: _store(A, (0,)), shape=(2, 4))
    with pytest.raises(WellFormedError, match="2 dimensions but is accessed with 1 indices"):
        verify_well_formed(func)


def test_binary_operand_dtypes_must_agree():
    x = Var("x")
    bad = Add(x, 1).with_fields(b=IntImm("int64", 1))
    func, _ = _func(lambda A: BufferStore(A, bad, (0,)), dtype="int32")
    func = func.with_fields(params=(*func.params, x))
    with pytest.raises(WellFormedError, match="Add operands have dtypes int32 and int64"):
        verify_well_formed(func)


def test_stored_value_must_match_buffer_dtype():
    func, _ = _func(lambda A: BufferStore(A, convert(3), (0,)))
    with pytest.raises(WellFormedError, match=r"store to 'A' \(float32\) of a int32 value"):
        verify_well_formed(func)


def test_loop_bounds_must_match_loop_variable_dtype():
    i = Var("i", "int64")
    func, _ = _func(lambda A: For(i, 0, 8, body=_store(A, (i,))))
    with pytest.raises(WellFormedError, match="loop 'i' \\(int64\\) has min int32"):
        verify_well_formed(func)


def test_if_condition_must_be_bool():
    func, _ = _func(lambda A: IfThenElse(convert(1), _store(A, (0,))))
    with pytest.raises(WellFormedError, match="if condition has dtype int32"):
        verify_well_formed(func)


def test_thread_extent_attribute_binds_its_thread_variable():
    tx = Var("threadIdx.x")
    iv = IterVar(Range(0, 8), tx, IterVarType.THREAD_INDEX, "threadIdx.x")
    func, _ = _func(lambda A: SeqStmt((
        AttrStmt(iv, "thread_extent", convert(8), _store(A, (tx,))),
        AttrStmt(iv, "thread_extent", convert(8), _store(A, (tx,), 2.0)),
    )))
    assert verify_well_formed(func)


def test_blocks_are_rejected_once_lowered():
    func = matmul_blocks(2, 2, 2)
    assert verify_well_formed(func)
    marked = func.with_attr("tir.blocks_lowered", True)
    with pytest.raises(WellFormedError, match="present after blocks were lowered"):
        verify_well_formed(marked)
    assert verify_well_formed(marked, allow_blocks=True)
    with pytest.raises(WellFormedError):
        verify_well_formed(func, allow_blocks=False)
    assert verify_well_formed(lower_opaque_block(func))


def test_block_iter_vars_are_scoped_to_their_block():
    func = matmul_blocks(2, 2, 2)
    realize = func.body.block.body.body.body.body
    vi = realize.block.iter_vars[0].var
    escaped = SeqStmt((func.body.block.body, BufferStore(func.buffer_map[func.params[2]], FloatImm("float32", 0.0), (vi, vi))))
    bad = func.with_body(escaped)
    with pytest.raises(WellFormedError, match="'vi' is used outside"):
        verify_well_formed(bad)


def test_module_and_pass_forms():
    func, _ = _func(lambda A: _store(A, (0,)))
    mod = mod_of(func)
    assert VerifyWellFormed()(mod) is mod
    ghost = Var("ghost")
    bad, _ = _func(lambda A: _store(A, (ghost,)))
    with pytest.raises(WellFormedError, match="PrimFunc 'main'"):
        verify_well_formed(mod_of(bad))
    with pytest.raises(WellFormedError):
        VerifyWellFormed()(mod_of(bad))


def test_verify_after_each_pass_names_the_pass_that_broke_the_ir():
    ghost = Var("ghost")

    @function_pass(opt_level=0, name="BreakIt", func_type=PrimFunc)
    def break_it(func, mod, ctx):
        A = func.buffer_map[func.params[0]]
        return func.with_body(_store(A, (ghost,)))

    func, _ = _func(lambda A: _store(A, (0,)))
    pipeline = Sequential([Simplify(), break_it, RemoveNoOp()])
    pipeline(mod_of(func))  # without the option nothing is checked
    with PassContext(config={"ir.verify_after_each_pass": True}):
        with pytest.raises(PassVerificationError, match="after pass 'BreakIt'") as info:
            pipeline(mod_of(func))
    assert "ghost" in str(info.value)


def test_lowering_passes_keep_matmul_well_formed_at_every_step():
    pipeline = Sequential([LowerInitBlock(), LowerOpaqueBlock(), FlattenBuffer(), Simplify(), RemoveNoOp()])
    with PassContext(config={"ir.verify_after_each_pass": True}):
        out = pipeline(mod_of(matmul_blocks(4, 4, 4)))
    assert verify_well_formed(out)


def test_rejects_non_ir_input():
    with pytest.raises(TypeError, match="PrimFunc or IRModule"):
        verify_well_formed("not ir")


def test_alloc_buffer_shape_must_use_defined_variables():
    from tvm.tir import Block, BlockRealize

    m = Var("m")
    T = decl_buffer((m,), "float32", "T")
    func, _ = _func(lambda A: BlockRealize((), IntImm("bool", 1), Block((), (), (), "root", _store(T, (0,)), alloc_buffers=(T,))))
    with pytest.raises(WellFormedError, match="'m' \\(int32\\) is used but never defined"):
        verify_well_formed(func)
    ok, _ = _func(lambda A: BlockRealize((), IntImm("bool", 1), Block((), (), (), "root", _store(T, (0,)), alloc_buffers=(T,))))
    assert verify_well_formed(ok.with_fields(params=(*ok.params, m)))
