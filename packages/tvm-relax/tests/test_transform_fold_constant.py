"""FoldConstant: numpy evaluators everywhere, the compiled route where a host JIT target is
installed (tvm.ir.target.host_target)."""

import numpy as np
import pytest
from graph_pass_testing import (
    assert_same,
    bindings,
    fresh,
    make_mod,
    op_names,
    requires_host_jit,
    run,
    tensor,
)

from tvm import relax, te
from tvm.relax import op
from tvm.relax.transform import FoldConstant
from tvm.relax.op.base import get_op_spec
from tvm.relax.transform.numpy_eval import evaluate_with_numpy

rng = np.random.default_rng(7)
A = rng.standard_normal((2, 3)).astype("float32")
B = rng.standard_normal((3,)).astype("float32")


def _chain(bb, x):
    a = bb.emit(op.add(relax.const(A), relax.const(B)))
    b = bb.emit(op.exp(a))
    c = bb.emit(op.permute_dims(b, [1, 0]))
    d = bb.emit(op.reshape(c, [2, 3]))
    return bb.emit(op.multiply(x, d))


def _expected_chain_value():
    return np.exp(A + B).T.reshape(2, 3)


@pytest.mark.parametrize("evaluator", ["numpy", pytest.param("compile", marks=requires_host_jit)])
def test_chain_folds_into_one_constant(evaluator):
    x, = fresh(tensor([2, 3]))
    out = FoldConstant(evaluator=evaluator)(make_mod([x], _chain))
    assert op_names(out) == ["relax.multiply", "DataflowVar"]
    folded = bindings(out)[0].value.args[1]
    assert isinstance(folded, relax.Constant) and folded.data.dtype == np.float32
    np.testing.assert_allclose(folded.data, _expected_chain_value(), rtol=1e-5)

    def after(bb, x):
        return bb.emit(op.multiply(x, relax.const(folded.data)))

    assert_same(out, make_mod(fresh(tensor([2, 3])), after))


def test_auto_evaluator_gives_the_same_values():
    x, = fresh(tensor([2, 3]))
    mod = make_mod([x], _chain)
    data = rng.standard_normal((2, 3)).astype("float32")
    np.testing.assert_allclose(run(FoldConstant()(mod), data), run(mod, data), rtol=1e-5)


def test_non_constant_calls_are_not_folded():
    x, = fresh(tensor([3]))

    def body(bb, x):
        a = bb.emit(op.add(x, relax.const(B)))
        return bb.emit(op.exp(a))

    mod = make_mod([x], body)
    assert FoldConstant(evaluator="numpy")(mod) is mod


def test_size_limit_and_creation_ops():
    x, = fresh(tensor([2, 3]))

    def body(bb, x):
        big = bb.emit(op.exp(relax.const(A)))          # 6 elements
        zeros = bb.emit(op.zeros(relax.ShapeExpr([2, 3]), "float32"))  # no tensor input
        return bb.emit(op.add(op.add(x, big), zeros))

    mod = make_mod([x], body)
    small = FoldConstant(evaluator="numpy", max_elements=5)(mod)
    assert small is mod
    folded = FoldConstant(evaluator="numpy", max_elements=6)(mod)
    assert "relax.exp" not in op_names(folded)
    assert "relax.zeros" in op_names(folded)


def test_tuple_arguments_fold():
    x, = fresh(tensor([4, 3]))

    def body(bb, x):
        both = bb.emit(op.concat([relax.const(A), relax.const(A)], axis=0))
        return bb.emit(op.add(x, both))

    out = FoldConstant(evaluator="numpy")(make_mod([x], body))
    const = bindings(out)[0].value.args[1]
    np.testing.assert_array_equal(const.data, np.concatenate([A, A]))


def test_split_folds_to_a_tuple_of_constants():
    x, = fresh(tensor([2, 1]))

    def body(bb, x):
        parts = bb.emit(op.split(relax.const(A), 3, axis=1))
        second = bb.emit(relax.TupleGetItem(parts, 1))
        return bb.emit(op.add(x, second))

    mod = make_mod([x], body)
    out = FoldConstant(evaluator="numpy")(mod)
    data = rng.standard_normal((2, 1)).astype("float32")
    np.testing.assert_allclose(run(out, data), data + A[:, 1:2])
    assert "relax.split" not in op_names(out)


def test_integer_and_comparison_ops_keep_their_dtypes():
    x, = fresh(tensor([3], "bool"))
    ints = relax.const(np.array([7, -7, 5], "int32"))
    twos = relax.const(np.array([2, 2, -2], "int32"))

    def body(bb, x):
        q = bb.emit(op.divide(ints, twos))               # truncating division
        m = bb.emit(op.mod(ints, twos))
        cmp = bb.emit(op.greater(q, m))
        return bb.emit(op.logical_and(x, cmp))

    out = FoldConstant(evaluator="numpy")(make_mod([x], body))
    const = bindings(out)[0].value.args[1]
    assert const.data.dtype == np.bool_
    np.testing.assert_array_equal(const.data, np.array([3, -3, -2]) > np.array([1, -1, 1]))


def test_unknown_op_evaluator_leaves_the_call():
    x, = fresh(tensor([2, 3]))
    mod = make_mod([x], lambda bb, x: bb.emit(op.add(x, op.cumsum(relax.const(A), axis=1))))
    out = FoldConstant(evaluator="numpy")(mod)
    assert "relax.cumsum" in op_names(out)

    spec = get_op_spec("relax.cumsum")
    assert spec.op.get_attr("FNumpyEval") is None

    @spec.evaluate
    def _cumsum(call, data):
        return np.cumsum(data, axis=call.attrs.axis)

    try:
        out = FoldConstant(evaluator="numpy")(mod)
        assert "relax.cumsum" not in op_names(out)
    finally:
        spec.op.set_attr("FNumpyEval", None)


def test_evaluator_results_are_checked_against_struct_info():
    x, = fresh(tensor([2, 3]))
    mod = make_mod([x], lambda bb, x: bb.emit(op.exp(relax.const(A))))
    call = bindings(mod)[0].value
    assert evaluate_with_numpy(call, [A]).dtype == np.float32
    from tvm.relax.transform.numpy_eval import NumpyEvalError

    with pytest.raises(NumpyEvalError, match="shape"):
        evaluate_with_numpy(call, [A[:1]])


def test_bad_arguments():
    with pytest.raises(ValueError, match="evaluator"):
        FoldConstant(evaluator="gpu")
    with pytest.raises(ValueError, match="max_elements"):
        FoldConstant(max_elements=-1)


@requires_host_jit
def test_call_tir_with_constant_inputs_folds_compiled():
    x, = fresh(tensor([2, 3]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            doubled = bb.emit_te(lambda a: te.compute(a.shape, lambda i, j: a[i, j] * 2),
                                 relax.const(A), primfunc_name_hint="double")
            gv = bb.emit_output(op.add(x, doubled))
        bb.emit_func_output(gv)
    mod = bb.get()
    out = FoldConstant()(mod)
    assert op_names(out) == ["relax.add"]
    np.testing.assert_allclose(bindings(out)[0].value.args[1].data, A * 2)
    assert FoldConstant(evaluator="numpy")(mod) is mod  # call_tir needs the compiled route


@requires_host_jit
def test_compiled_route_matches_numpy_on_conv2d():
    x, = fresh(tensor([1, 4, 3, 3]))
    data = rng.standard_normal((1, 2, 5, 5)).astype("float32")
    weight = rng.standard_normal((4, 2, 3, 3)).astype("float32")

    def body(bb, x):
        return bb.emit(op.add(x, op.nn.conv2d(relax.const(data), relax.const(weight))))

    mod = make_mod([x], body)
    a = bindings(FoldConstant(evaluator="compile")(mod))[0].value.args[1].data
    b = bindings(FoldConstant(evaluator="numpy")(mod))[0].value.args[1].data
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("evaluator", ["numpy", pytest.param("compile", marks=requires_host_jit)])
def test_zero_dimensional_constants_keep_their_shape(evaluator):
    x, = fresh(tensor([4]))

    def body(bb, x):
        s = bb.emit(op.add(relax.const(1.5, "float32"), relax.const(0.5, "float32")))
        return bb.emit(op.multiply(x, s))

    out = FoldConstant(evaluator=evaluator)(make_mod([x], body))
    folded = bindings(out)[0].value.args[1]
    assert folded.data.shape == () and float(folded.data) == 2.0


# -- the host target comes from the plugin registry -----------------------------------------
@pytest.fixture
def no_installed_plugins():
    """The registry with every entry-point plugin blocked (restored afterwards)."""
    from tvm.ffi.plugin import blocked_plugins

    with blocked_plugins():
        yield


def _call_tir_module():
    x, = fresh(tensor([2, 3]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            doubled = bb.emit_te(lambda a: te.compute(a.shape, lambda i, j: a[i, j] * 2),
                                 relax.const(A), primfunc_name_hint="double")
            gv = bb.emit_output(op.add(x, doubled))
        bb.emit_func_output(gv)
    return bb.get()


def test_without_a_host_jit_auto_folds_with_numpy(no_installed_plugins):
    from tvm.ir.target import host_target

    assert host_target(allow_none=True) is None
    x, = fresh(tensor([2, 3]))
    out = FoldConstant()(make_mod([x], _chain))
    np.testing.assert_allclose(bindings(out)[0].value.args[1].data, _expected_chain_value(),
                               rtol=1e-5)
    mod = _call_tir_module()
    assert FoldConstant()(mod) is mod  # call_tir needs a compiler
    with pytest.raises(ValueError, match="host target.*pip install"):
        FoldConstant(evaluator="compile")


@requires_host_jit
def test_the_compiled_route_uses_the_registrys_host_target():
    """An in-process host JIT kind comes first: FoldConstant compiles for it (its codegen
    here records the target and hands the module to the installed host JIT)."""
    from tvm.ffi.plugin import hookimpl, register_plugin, unregister_plugin
    from tvm.ir.target import (
        HOST_JIT, Target, TargetKind, host_target, register_target_kind, unregister_target_kind,
    )
    from tvm.tir.hooks import get_codegen

    real = host_target()
    seen = []

    class RecordingJit:
        @hookimpl
        def tvm_tir_codegen(self, target):
            if target.kind_name != "relaxtestjit":
                return None

            def build(mod, tgt):
                seen.append(tgt)
                return get_codegen(real)(mod, real)

            return build

    register_target_kind(TargetKind("relaxtestjit", 1, {"opt-level": (int, 3)},
                                    capabilities=(HOST_JIT,)))
    register_plugin(RecordingJit(), "relaxtestjit")
    try:
        out = FoldConstant(evaluator="compile")(_call_tir_module())
        np.testing.assert_allclose(bindings(out)[0].value.args[1].data, A * 2)
        assert seen and all(isinstance(t, Target) and t.kind_name == "relaxtestjit" for t in seen)
        # weight packing compiles without optimisation where the kind has an opt-level
        from tvm.relax.transform.fold_constant import _packing_target

        assert _packing_target(Target("relaxtestjit")).attrs["opt-level"] == 0
    finally:
        unregister_plugin("relaxtestjit")
        unregister_target_kind("relaxtestjit")
