"""The default graph pipeline: contents per opt_level and an end-to-end run."""

import numpy as np
import pytest
from graph_pass_testing import fresh, make_mod, op_names, run, tensor

from tvm import relax
from tvm.ir.transform import PassContext
from tvm.relax import op
from tvm.relax.transform import GRAPH_PASS_OPT_LEVELS, get_default_graph_pipeline

rng = np.random.default_rng(11)


def _names(seq):
    return [p.name for p in seq.passes]


def test_passes_per_level():
    assert _names(get_default_graph_pipeline(0)) == []
    assert _names(get_default_graph_pipeline(1)) == [
        "CanonicalizeBindings", "FoldConstant", "DeadCodeElimination"]
    o2 = _names(get_default_graph_pipeline(2))
    assert o2[0] == "CanonicalizeBindings" and o2[-1] == "DeadCodeElimination"
    assert {"FoldBatchnormToConv2D", "SimplifyExpr", "EliminateCommonSubexpr"} <= set(o2)
    assert "ConvertLayout" not in o2
    assert _names(get_default_graph_pipeline(3)) == o2
    with_layout = _names(get_default_graph_pipeline(2, {"relax.nn.conv2d": ["NHWC", "OHWI"]}))
    assert with_layout.index("ConvertLayout") > with_layout.index("FoldBatchnormToConv2D")
    assert _names(get_default_graph_pipeline(0, {"relax.nn.conv2d": ["NHWC"]})) == [
        "ConvertLayout"]
    for p in get_default_graph_pipeline(2).passes:
        assert p.info.opt_level == GRAPH_PASS_OPT_LEVELS[p.name]
    with pytest.raises(ValueError, match="opt_level"):
        get_default_graph_pipeline(-1)


def _model():
    x, = fresh(tensor([1, 3, 8, 8]))
    w = relax.const(rng.standard_normal((4, 3, 3, 3)).astype("float32"))
    gamma, beta, mean = (relax.const(rng.standard_normal(4).astype("float32")) for _ in range(3))
    var = relax.const((rng.random(4) + 0.5).astype("float32"))
    scale = relax.const(np.full((4, 1, 1), 2.0, "float32"))

    def body(bb, x):
        c = bb.emit(op.nn.conv2d(x, w, padding=1))
        bn = bb.emit(op.nn.batch_norm(c, gamma, beta, mean, var))
        r = bb.emit(op.nn.relu(bb.emit(relax.TupleGetItem(bn, 0))))
        s = bb.emit(op.multiply(scale, relax.const(np.ones((4, 1, 1), "float32"))))  # constant
        a = bb.emit(op.multiply(r, s))
        b = bb.emit(op.multiply(r, s))                                             # duplicate
        flat = bb.emit(op.reshape(bb.emit(op.reshape(bb.emit(op.add(a, b)), [4, 64])), [256]))
        return bb.emit(op.multiply(flat, relax.const(np.ones((), "float32"))))

    return make_mod([x], body)


@pytest.mark.parametrize("layouts", [None, {"relax.nn.conv2d": ["NHWC", "OHWI"]}])
def test_o2_pipeline_end_to_end(layouts):
    mod = _model()
    out = get_default_graph_pipeline(2, layouts)(mod)
    names = op_names(out)
    assert "relax.nn.batch_norm" not in names
    assert names.count("relax.multiply") == 1       # CSE merged, x * 1 dropped, scale folded
    assert names.count("relax.reshape") == 1
    assert relax.analysis.well_formed(out)
    data = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    np.testing.assert_allclose(run(out, data), run(mod, data), rtol=1e-4, atol=1e-4)


def test_pass_context_level_limits_the_pipeline():
    mod = _model()
    with PassContext(opt_level=1):
        out = get_default_graph_pipeline(2)(mod)
    assert "relax.nn.batch_norm" in op_names(out)      # a level-2 pass: skipped
    assert op_names(out).count("relax.multiply") == 3  # no CSE / simplification either


def test_passes_are_registered_by_name():
    from tvm.ir.transform import get_pass

    assert get_pass("relax.FoldConstant").name == "FoldConstant"
    pipeline = get_pass("relax.graph_pipeline")
    assert pipeline.name == "relax.graph_pipeline"
    assert [p.name for p in pipeline.passes] == [p.name for p in get_default_graph_pipeline(2).passes]
