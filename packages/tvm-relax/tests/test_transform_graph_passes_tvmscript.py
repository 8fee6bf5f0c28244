"""Graph passes as TVMScript before/after pairs (the way pass tests read in TVM)."""

import pytest

from tvm.ffi import assert_structural_equal
from tvm.relax import transform as T

I = pytest.importorskip("tvm.script.ir")  # noqa: E741
R = pytest.importorskip("tvm.script.relax")


def test_simplify_reshape_chain_and_multiply_one():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((6,), "float32"):
            with R.dataflow():
                a = R.reshape(x, R.shape([3, 2]))
                b = R.reshape(a, R.shape([6]))
                c = R.multiply(b, R.const(1.0, "float32"))
                R.output(c)
            return c

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((6,), "float32"):
            with R.dataflow():
                c = R.reshape(x, R.shape([6]))
                R.output(c)
            return c

    assert_structural_equal(T.CanonicalizeBindings()(T.SimplifyExpr()(Before)), Expected)


def test_cse_canonicalize_dce():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
            with R.dataflow():
                a = R.add(x, y)
                b = R.add(x, y)
                unused = R.exp(a)  # noqa: F841 - dead on purpose
                c = R.multiply(a, b)
                d = c
                R.output(d)
            return d

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
            with R.dataflow():
                a = R.add(x, y)
                d = R.multiply(a, a)
                R.output(d)
            return d

    seq = [T.EliminateCommonSubexpr(), T.CanonicalizeBindings(), T.DeadCodeElimination()]
    mod = Before
    for p in seq:
        mod = p(mod)
    assert_structural_equal(mod, Expected)


def test_fold_scalar_constants():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                two = R.add(R.const(1.5, "float32"), R.const(0.5, "float32"))
                y = R.multiply(x, two)
                R.output(y)
            return y

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                y = R.multiply(x, R.const(2.0, "float32"))
                R.output(y)
            return y

    assert_structural_equal(T.FoldConstant(evaluator="numpy")(Before), Expected)


def test_convert_layout_conv_relu_conv():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((1, 3, 8, 8), "float32"), w1: R.Tensor((4, 3, 3, 3), "float32"),
                 w2: R.Tensor((4, 4, 1, 1), "float32")):
            with R.dataflow():
                a = R.nn.conv2d(x, w1, padding=[1, 1])
                b = R.nn.relu(a)
                c = R.nn.conv2d(b, w2)
                R.output(c)
            return c

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((1, 3, 8, 8), "float32"), w1: R.Tensor((4, 3, 3, 3), "float32"),
                 w2: R.Tensor((4, 4, 1, 1), "float32")):
            with R.dataflow():
                xt = R.permute_dims(x, axes=[0, 2, 3, 1])
                w1t = R.permute_dims(w1, axes=[0, 2, 3, 1])
                a = R.nn.conv2d(xt, w1t, padding=[1, 1], data_layout="NHWC",
                                kernel_layout="OHWI", out_layout="NHWC")
                b = R.nn.relu(a)
                w2t = R.permute_dims(w2, axes=[0, 2, 3, 1])
                ct = R.nn.conv2d(b, w2t, data_layout="NHWC", kernel_layout="OHWI",
                                 out_layout="NHWC")
                c = R.permute_dims(ct, axes=[0, 3, 1, 2])
                R.output(c)
            return c

    out = T.ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]})(Before)
    assert_structural_equal(out, Expected)
