"""split_dataflow_at_if: a frontend's single dataflow block cut at its If bindings, the
DataflowVars used across a cut made plain Vars, well-formed afterwards."""

from __future__ import annotations

from tvm import relax
from tvm.relax import op
from tvm.relax.analysis import well_formed
from tvm.relax.frontend.dataflow_split import split_dataflow_at_if


def _if_in_dataflow():
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    c = relax.Var("c", relax.TensorStructInfo([], "bool"))
    bb = relax.BlockBuilder()
    with bb.function("main", [c, x]):
        with bb.dataflow():
            a = bb.emit(op.exp(x))
            unused = bb.emit(op.negative(x))
            r = bb.emit(relax.If(c, op.add(a, a), op.multiply(a, a)))
            out = bb.emit_output(op.add(r, a))
        bb.emit_func_output(out)
    return bb.get(), unused


def test_the_block_is_cut_at_the_if_and_crossing_vars_become_vars():
    mod, unused = _if_in_dataflow()
    assert not well_formed(mod)
    new = split_dataflow_at_if(mod)
    assert well_formed(new)
    blocks = new["main"].body.blocks
    kinds = [type(b).__name__ for b in blocks]
    assert kinds == ["DataflowBlock", "BindingBlock", "DataflowBlock"]
    assert isinstance(blocks[1].bindings[0].value, relax.If)
    first = {b.var.name_hint: b.var for b in blocks[0].bindings}
    assert not isinstance(first["lv"], relax.DataflowVar)  # used after the cut
    assert isinstance(first[unused.name_hint], relax.DataflowVar)  # used nowhere else


def test_a_module_without_if_is_returned_as_is():
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(op.exp(x))
        bb.emit_func_output(out)
    mod = bb.get()
    assert split_dataflow_at_if(mod) is mod
