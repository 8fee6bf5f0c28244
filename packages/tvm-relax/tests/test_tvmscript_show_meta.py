"""Printing for people leaves the metadata block (large constants) out; ``script()`` keeps it
so that the text parses back, and text printed without it says why it cannot."""

from __future__ import annotations

import io

import numpy as np
import pytest
from tvm.ffi import structural_equal
from tvm.ir.instrument import PrintAfterEachPass
from tvm.ir.module import IRModule
from tvm.ir.transform import PassContext, PrintIR
from tvm.script import ir as I
from tvm.script import relax as R

from tvm import relax


def _module() -> IRModule:
    x = relax.Var("x", relax.TensorStructInfo((4, 64), "float32"))
    w = relax.Constant(np.arange(64 * 64, dtype="float32").reshape(64, 64))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, w))
        bb.emit_func_output(out)
    return bb.get()


def test_show_and_str_leave_the_weights_out(capsys):
    mod = _module()
    mod.show()
    shown = capsys.readouterr().out
    assert 'metadata["relax.expr.Constant"][0]' in shown
    assert "metadata omitted: 1 relax.expr.Constant" in shown and "tvm-json" not in shown
    assert str(mod) == shown == repr(mod)
    assert len(shown) < len(mod.script()) / 3
    mod["main"].show()
    assert "metadata omitted" in capsys.readouterr().out
    mod.show(show_meta=True)
    assert "tvm-json" in capsys.readouterr().out


def test_script_keeps_the_block_and_parses_back():
    mod = _module()
    assert structural_equal(I.parse(mod.script()), mod)
    assert structural_equal(R.parse(mod["main"].script()), mod["main"])


def test_text_without_the_block_says_how_to_get_it():
    with pytest.raises(Exception, match="printed without its metadata block.*show_meta=True"):
        I.parse(str(_module()))


def test_pass_printing_leaves_the_block_out_unless_asked(tmp_path):
    mod = _module()
    out = io.StringIO()
    PrintIR("after", stream=out)(mod)
    assert "metadata omitted" in out.getvalue()
    out = io.StringIO()
    PrintIR(stream=out, show_meta=True)(mod)
    assert "tvm-json" in out.getvalue()
    stream = io.StringIO()
    dump = PrintAfterEachPass(folder=tmp_path)  # files parse back: they keep the block
    only = PrintAfterEachPass(stream=stream, passes=["CanonicalizeBindings"])
    with PassContext(instruments=[dump, only]):
        relax.transform.DeadCodeElimination()(relax.transform.CanonicalizeBindings()(mod))
    assert stream.getvalue().count("# IR after pass") == 1
    assert "metadata omitted" in stream.getvalue()
    assert all("tvm-json" in p.read_text() for p in dump.written) and len(dump.written) == 2
