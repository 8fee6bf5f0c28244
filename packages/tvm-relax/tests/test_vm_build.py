"""VM lowering + code generation run on the VM with numpy kernels (no compiler needed), and
relax.build with the llvm target when it is installed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm import relax, tir
from tvm.relax import TensorStructInfo
from tvm.relax.errors import RelaxError
from vm_testing import (
    NUMPY,
    compile_with_numpy,
    requires_llvm,
    te_add,
    te_add_bias,
    te_matmul,
    te_mul,
    te_neg,
    te_sub,
)

import tvm.runtime
from tvm.runtime.vm import VirtualMachine, VMError

n = tir.Var("n", "int64")


def f32(*shape):
    return TensorStructInfo(list(shape), "float32")


def walkthrough(m=128, k=256, cols=512):
    x, w, b = relax.Var("x", f32(m, k)), relax.Var("w", f32(k, cols)), relax.Var("b", f32(cols))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            lv = bb.emit_te(te_matmul, x, w, primfunc_name_hint="matmul")
            gv = bb.emit_output(bb.call_te(te_add_bias, lv, b, primfunc_name_hint="add"))
        bb.emit_func_output(gv)
    return bb.get()


def test_walkthrough_bytecode_and_numerics():
    ex, _ = compile_with_numpy(walkthrough(4, 8, 16), {"matmul": np.matmul, "add": np.add})
    text = ex.as_text()
    words = ["check_tensor_info", "match_shape", "alloc_storage", "alloc_tensor", "call matmul",
             "alloc_storage", "alloc_tensor", "call add", "ret"]
    pos = 0
    for w in words:
        pos = text.index(w, pos) + 1
    x, w, b = np.random.rand(4, 8), np.random.rand(8, 16), np.random.rand(16)
    x, w, b = (a.astype("float32") for a in (x, w, b))
    out = VirtualMachine(ex)["main"](x, w, b)
    np.testing.assert_allclose(out.numpy(), x @ w + b, rtol=1e-5)


def test_wrong_inputs_name_parameter_expected_and_given():
    ex, _ = compile_with_numpy(walkthrough(4, 8, 16), {"matmul": np.matmul, "add": np.add})
    vm = VirtualMachine(ex)
    x, w, b = np.zeros((4, 8), "float32"), np.zeros((8, 16), "float32"), np.zeros(16, "float32")
    with pytest.raises(VMError, match=r"main: parameter w has shape\[1\] = 15, expected 16"):
        vm["main"](x, np.zeros((8, 15), "float32"), b)
    with pytest.raises(VMError, match="main: parameter b has dtype float64, expected float32"):
        vm["main"](x, w, np.zeros(16))
    with pytest.raises(VMError, match="main: parameter x has ndim 1"):
        vm["main"](np.zeros(4, "float32"), w, b)
    with pytest.raises(TypeError, match=r"takes 3 argument\(s\) \(x, w, b\), got 2"):
        vm["main"](x, w)


def symbolic_model():
    x, y = relax.Var("x", f32(n, 4)), relax.Var("y", f32(n, 4))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit_te(te_add, x, y, primfunc_name_hint="add")
            m = bb.emit_te(te_mul, a, a, primfunc_name_hint="mul")
            gv = bb.emit_output(bb.call_te(te_sub, m, x, primfunc_name_hint="sub"))
        bb.emit_func_output(gv)
    return bb.get()


def test_symbolic_shapes_one_executable_two_sizes():
    ex, _ = compile_with_numpy(symbolic_model())
    text = ex.as_text()
    assert "match_shape %0, [let n, 4]" in text
    assert "match_shape %1, [n, 4]" in text
    assert "size=(n * 16)" in text
    vm = VirtualMachine(ex)
    for rows in (2, 7):
        x, y = np.random.rand(rows, 4).astype("float32"), np.random.rand(rows, 4).astype("float32")
        np.testing.assert_allclose(vm["main"](x, y).numpy(), (x + y) ** 2 - x, rtol=1e-5)
    with pytest.raises(VMError, match=r"parameter y has shape\[0\] = 3, expected n = 2"):
        vm["main"](np.zeros((2, 4), "float32"), np.zeros((3, 4), "float32"))


def test_match_cast_binds_a_new_variable():
    m = tir.Var("m", "int64")
    x = relax.Var("x", TensorStructInfo(ndim=2, dtype="float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.match_cast(x, f32(m, 3))
            gv = bb.emit_output(bb.call_te(te_neg, y, primfunc_name_hint="neg"))
        bb.emit_func_output(gv)
    ex, _ = compile_with_numpy(bb.get())
    assert "match_shape %0, [let m, 3], \"main: match_cast to" in ex.as_text()
    vm = VirtualMachine(ex)
    np.testing.assert_array_equal(vm["main"](np.ones((5, 3), "float32")).numpy(),
                                  -np.ones((5, 3)))
    with pytest.raises(VMError, match=r"match_cast to .* has shape\[1\] = 4, expected 3"):
        vm["main"](np.ones((5, 4), "float32"))


def test_tuples_constants_and_calls_between_functions():
    x = relax.Var("x", f32(3))
    bb = relax.BlockBuilder()
    with bb.function("double", [x], private=True):
        with bb.dataflow():
            gv = bb.emit_output(bb.call_te(te_add, x, x, primfunc_name_hint="add"))
        bb.emit_func_output(gv)
    double = bb.get().get_global_var("double")
    y = relax.Var("y", f32(3))
    with bb.function("main", [y]):
        c = relax.const(np.array([1, 2, 3], "float32"))
        d = bb.emit(relax.Call(double, [y]))
        s = bb.emit_te(te_add, d, c, primfunc_name_hint="add")
        bb.emit_func_output(relax.Tuple([s, d]))
    ex, _ = compile_with_numpy(bb.get())
    assert "call %1 = double(%0)" in ex.as_text() and "c[0]" in ex.as_text()
    s, d = VirtualMachine(ex)["main"](np.array([1, 1, 1], "float32"))
    np.testing.assert_array_equal(d.numpy(), [2, 2, 2])
    np.testing.assert_array_equal(s.numpy(), [3, 4, 5])


def test_if_compiles_to_branches():
    cond = relax.Var("c", relax.PrimStructInfo("bool"))
    x = relax.Var("x", f32(2))
    bb = relax.BlockBuilder()
    with bb.function("main", [cond, x]):
        then = relax.SeqExpr([], x)
        other_bb = relax.BlockBuilder(bb.get())
        neg = bb.call_te(te_neg, x, primfunc_name_hint="neg")
        other = relax.SeqExpr([], neg)
        out = bb.emit(relax.If(cond, then, other))
        bb.emit_func_output(out)
    del other_bb
    ex, _ = compile_with_numpy(bb.get())
    text = ex.as_text()
    assert "if %0, else goto" in text and "goto +" in text
    vm = VirtualMachine(ex)
    data = np.array([1.0, -2.0], "float32")
    np.testing.assert_array_equal(vm["main"](True, data).numpy(), data)
    np.testing.assert_array_equal(vm["main"](False, data).numpy(), -data)


def test_unlegalized_operator_is_reported():
    x = relax.Var("x", f32(2))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.exp(x)))
    with pytest.raises(RelaxError, match=r"operator relax.exp has no VM lowering.*LegalizeOps"):
        compile_with_numpy(bb.get())


def test_export_needs_an_exportable_kernel_library(tmp_path):
    ex, _ = compile_with_numpy(symbolic_model())
    with pytest.raises(NotImplementedError, match="cannot be exported"):
        ex.export_library(tmp_path / "m.so")


# ---------------------------------------------------------------------------- property


@st.composite
def elementwise_dags(draw):
    """A random chain/DAG of add/mul/sub/neg over two (4, 4) inputs."""
    steps = draw(st.integers(1, 8))
    ops = []
    for i in range(steps):
        op = draw(st.sampled_from(["add", "mul", "sub", "neg"]))
        avail = i + 2
        args = [draw(st.integers(0, avail - 1)) for _ in range(1 if op == "neg" else 2)]
        ops.append((op, args))
    outputs = draw(st.lists(st.integers(0, steps + 1), min_size=1, max_size=2))
    return ops, outputs


def _build_dag(ops, outputs):
    te_of = {"add": te_add, "mul": te_mul, "sub": te_sub, "neg": te_neg}
    a, b = relax.Var("a", f32(4, 4)), relax.Var("b", f32(4, 4))
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b]):
        vals = [a, b]
        for op, args in ops:
            vals.append(bb.emit_te(te_of[op], *[vals[i] for i in args], primfunc_name_hint=op))
        outs = [vals[i] for i in outputs]
        bb.emit_func_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
    return bb.get()


def _eval_dag(ops, outputs, a, b):
    vals = [a, b]
    for op, args in ops:
        vals.append(NUMPY[op](*[vals[i] for i in args]))
    return [vals[i] for i in outputs]


def _assert_no_live_tensor_is_overwritten(func):
    """A storage is given to a new tensor only after the previous one's last use."""
    from tvm.relax.analysis import free_vars

    bindings = [b for block in func.body.blocks for b in block.bindings]
    last_use = {}
    for i, b in enumerate(bindings):
        for v in free_vars(b.value) if not isinstance(b.value, relax.Var) else [b.value]:
            last_use[v] = i
    for v in free_vars(func.body.body) if not isinstance(func.body.body, relax.Var) else \
            [func.body.body]:
        last_use[v] = len(bindings)
    owner = {}
    for i, b in enumerate(bindings):
        value = b.value
        if isinstance(value, relax.Call) and getattr(value.op, "name", "") == \
                "relax.memory.alloc_tensor":
            prev = owner.get(value.args[0])
            assert prev is None or last_use.get(prev, -1) < i, (prev, b.var)
            owner[value.args[0]] = b.var


@settings(max_examples=30, deadline=None)
@given(elementwise_dags())
def test_planned_memory_keeps_results(dag):
    ops, outputs = dag
    ex, lowered = compile_with_numpy(_build_dag(ops, outputs))
    plan = ex.stats.get("memory_plan", {}).get("main")
    if plan:
        assert plan["planned_bytes"] <= plan["naive_bytes"]
    _assert_no_live_tensor_is_overwritten(lowered["main"])
    a = np.random.rand(4, 4).astype("float32")
    b = np.random.rand(4, 4).astype("float32")
    vm = VirtualMachine(ex)
    got = vm["main"](a, b)
    got = list(got) if isinstance(got, tuple) else [got]
    for g, want in zip(got, _eval_dag(ops, outputs, a, b)):
        np.testing.assert_allclose(g.numpy() if hasattr(g, "numpy") else g, want, rtol=1e-5)


# ---------------------------------------------------------------------------- llvm


@requires_llvm
def test_relax_build_llvm_fuses_and_runs():
    ex = relax.build(walkthrough(8, 16, 32), "llvm")
    text = ex.as_text()
    assert "call fused_matmul_add(%0, %1, %2, %4)" in text
    x, w, b = (np.random.rand(*s).astype("float32") for s in ((8, 16), (16, 32), (32,)))
    out = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](x, w, b)
    np.testing.assert_allclose(out.numpy(), x @ w + b, rtol=1e-5)


def test_build_rejects_other_exec_modes():
    with pytest.raises(ValueError, match="exec_mode 'compiled' is not supported"):
        relax.build(walkthrough(2, 2, 2), "llvm", exec_mode="compiled")
