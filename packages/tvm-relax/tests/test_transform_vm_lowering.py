"""The VM lowering passes, before/after in TVMScript: ToNonDataflow, CallTIRRewrite,
StaticPlanBlockMemory, VMBuiltinLower, VMShapeLower."""

from __future__ import annotations

import pytest
from tvm import relax, tir
from tvm.ir import IRModule
from tvm.ffi import assert_structural_equal
from tvm.relax import transform as TR
from tvm.relax.errors import RelaxError
from tvm.relax.transform import memory_plan_report
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Chain:
    @T.prim_func(private=True)
    def exp(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            b[i] = T.exp(a[i])

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Chain
        with R.dataflow():
            a = R.call_tir(cls.exp, (x,), out_sinfo=R.Tensor((4,), "float32"))
            b = R.call_tir(cls.exp, (a,), out_sinfo=R.Tensor((4,), "float32"))
            c = R.call_tir(cls.exp, (b,), out_sinfo=R.Tensor((4,), "float32"))
            gv = R.call_tir(cls.exp, (c,), out_sinfo=R.Tensor((4,), "float32"))
            R.output(gv)
        return gv


@I.ir_module
class ChainNoDataflow:
    @T.prim_func(private=True)
    def exp(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            b[i] = T.exp(a[i])

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = ChainNoDataflow
        a = R.call_tir(cls.exp, (x,), out_sinfo=R.Tensor((4,), "float32"))
        b = R.call_tir(cls.exp, (a,), out_sinfo=R.Tensor((4,), "float32"))
        c = R.call_tir(cls.exp, (b,), out_sinfo=R.Tensor((4,), "float32"))
        gv = R.call_tir(cls.exp, (c,), out_sinfo=R.Tensor((4,), "float32"))
        return gv


@I.ir_module
class ChainRewritten:
    @T.prim_func(private=True)
    def exp(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            b[i] = T.exp(a[i])

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = ChainRewritten
        a = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.exp(x, a)
        b = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.exp(a, b)
        c = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.exp(b, c)
        gv = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.exp(c, gv)
        return gv


@I.ir_module
class ChainPlanned:
    @T.prim_func(private=True)
    def exp(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            b[i] = T.exp(a[i])

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        R.func_attr({"relax.memory_plan": {"planned_bytes": 32, "naive_bytes": 48, "num_storages": 2,
                                           "num_planned": 3, "num_unplanned": 1}})
        cls = ChainPlanned
        s0 = R.memory.alloc_storage(R.shape([16]), R.prim_value(0), R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(s0, R.prim_value(0), R.shape([4]), R.dtype("float32"))
        _ = cls.exp(x, a)
        s1 = R.memory.alloc_storage(R.shape([16]), R.prim_value(0), R.str("global"), R.dtype("uint8"))
        b = R.memory.alloc_tensor(s1, R.prim_value(0), R.shape([4]), R.dtype("float32"))
        _ = cls.exp(a, b)
        c = R.memory.alloc_tensor(s0, R.prim_value(0), R.shape([4]), R.dtype("float32"))
        _ = cls.exp(b, c)
        gv = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.exp(c, gv)
        return gv


def test_to_non_dataflow():
    assert_structural_equal(TR.ToNonDataflow()(Chain), ChainNoDataflow)


def test_call_tir_rewrite_allocates_outputs_and_calls_in_dps():
    assert_structural_equal(TR.CallTIRRewrite()(ChainNoDataflow), ChainRewritten)


def test_static_plan_reuses_storage_of_dead_intermediates():
    planned = TR.StaticPlanBlockMemory()(ChainRewritten)
    assert_structural_equal(planned, ChainPlanned)
    assert memory_plan_report(planned)["main"]["planned_bytes"] == 32


@I.ir_module
class Overlap:
    @T.prim_func(private=True)
    def add(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(4),), "float32"),
            c: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            c[i] = a[i] + b[i]

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = Overlap
        a = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.add(x, x, a)
        b = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.add(a, x, b)
        c = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.add(a, b, c)
        alias = c
        d = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.add(alias, alias, d)
        return (d, b)


def test_live_tensors_never_share_storage():
    planned = TR.StaticPlanBlockMemory()(Overlap)
    report = memory_plan_report(planned)["main"]
    # b and d are returned; a and c overlap (a is read by the call writing c)
    assert report == {"planned_bytes": 32, "naive_bytes": 32, "num_storages": 2,
                      "num_planned": 2, "num_unplanned": 2}
    storage_of = {}
    for binding in planned["main"].body.blocks[0].bindings:
        value = binding.value
        if isinstance(value, relax.Call) and getattr(value.op, "name", "") == \
                "relax.memory.alloc_tensor":
            storage_of[binding.var.name_hint] = value.args[0]
    assert set(storage_of) == {"a", "c"} and storage_of["a"] is not storage_of["c"]


@I.ir_module
class Symbolic:
    @T.prim_func(private=True)
    def neg(var_a: T.handle, var_b: T.handle):
        n = T.int64()
        a = T.match_buffer(var_a, (n,), "float32")
        b = T.match_buffer(var_b, (n,), "float32")
        for i in range(n):
            b[i] = T.float32(0) - a[i]

    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        n = T.int64()
        cls = Symbolic
        a = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.neg(x, a)
        b = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.neg(a, b)
        c = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.neg(b, c)
        return c


def test_symbolic_sizes_are_planned_only_with_an_upper_bound():
    report = memory_plan_report(TR.StaticPlanBlockMemory()(Symbolic))["main"]
    assert report["num_planned"] == 0 and report["num_unplanned"] == 3
    bounded = Symbolic.with_function(
        "main", Symbolic["main"].with_attr("tir_var_upper_bound", {"n": 100}))
    report = memory_plan_report(TR.StaticPlanBlockMemory()(bounded))["main"]
    assert report == {"planned_bytes": 800, "naive_bytes": 800, "num_storages": 2,
                      "num_planned": 2, "num_unplanned": 1}


def test_builtin_lower_sizes_symbolic_allocations():
    lowered = TR.VMBuiltinLower()(Symbolic)
    bindings = lowered["main"].body.blocks[0].bindings
    ops = [b.value.op.name if isinstance(b.value.op, relax.Op) else b.value.op.name_hint
           for b in bindings]
    assert ops == ["relax.memory.alloc_storage", "relax.memory.alloc_tensor", "neg"] * 3
    size = bindings[0].value.args[0].values[0]
    n = Symbolic["main"].params[0].struct_info.shape_values[0]
    assert tir.analysis is not None and str(size) == str(n * 4)


@I.ir_module
class ShapeOf:
    @R.function
    def main(x: R.Tensor(("n", 2), "float32")):
        s = R.shape_of(x)
        return s


def test_builtin_lower_shape_of_and_unknown_ops():
    lowered = TR.VMBuiltinLower()(ShapeOf)
    call = lowered["main"].body.blocks[0].bindings[0].value
    assert isinstance(call.op, relax.ExternFunc) and call.op.global_symbol == "vm.builtin.shape_of"
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.nn.relu(x)))
    with pytest.raises(RelaxError, match=r"\(@main\): operator relax.nn.relu has no VM lowering"):
        TR.VMBuiltinLower()(bb.get())


@I.ir_module
class Params:
    @R.function
    def main(z: R.Tensor(("n * 2",), "float32"), x: R.Tensor(("n", 3), "float32"),
             t: R.Tuple(R.Tensor((2,), "int32"), R.Shape(["n"]))):
        return x


@I.ir_module
class ParamsChecked:
    @R.function
    def main(z: R.Tensor(("n * 2",), "float32"), x: R.Tensor(("n", 3), "float32"),
             t: R.Tuple(R.Tensor((2,), "int32"), R.Shape(["n"]))):
        n = T.int64()
        R.func_attr({"relax.force_pure": True})
        _ = R.call_packed("vm.builtin.check_tensor_info", z, R.prim_value(1), R.str("float32"),
                          R.str("main: parameter z"), sinfo_args=R.Object)
        _ = R.call_packed("vm.builtin.check_tensor_info", x, R.prim_value(2), R.str("float32"),
                          R.str("main: parameter x"), sinfo_args=R.Object)
        _ = R.call_packed("vm.builtin.match_shape", x, R.shape([n, 3]), R.str("SI"),
                          R.str("main: parameter x"), sinfo_args=R.Object)
        _ = R.call_packed("vm.builtin.check_tuple_info", t, R.prim_value(2),
                          R.str("main: parameter t"), sinfo_args=R.Object)
        t_0: R.Tensor((2,), "int32") = t[0]
        _ = R.call_packed("vm.builtin.check_tensor_info", t_0, R.prim_value(1), R.str("int32"),
                          R.str("main: parameter t[0]"), sinfo_args=R.Object)
        _ = R.call_packed("vm.builtin.match_shape", t_0, R.shape([2]), R.str("I"),
                          R.str("main: parameter t[0]"), sinfo_args=R.Object)
        t_1: R.Shape([n]) = t[1]
        _ = R.call_packed("vm.builtin.check_shape_info", t_1, R.prim_value(1),
                          R.str("main: parameter t[1]"), sinfo_args=R.Object)
        _ = R.call_packed("vm.builtin.match_shape", t_1, R.shape([n]), R.str("A"),
                          R.str("main: parameter t[1]"), sinfo_args=R.Object)
        _ = R.call_packed("vm.builtin.match_shape", z, R.shape([n * 2]), R.str("A"),
                          R.str("main: parameter z"), sinfo_args=R.Object)
        return x


def test_shape_lower_checks_parameters_and_defers_expressions():
    assert_structural_equal(TR.VMShapeLower()(Params), ParamsChecked)


def test_shape_lower_rejects_undefinable_variables():
    m = tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo([m + 1], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(x)
    with pytest.raises(RelaxError, match=r"main: parameter x has dimension m \+ T.int64\(1\) whose symbolic "
                                         r"variable\(s\) m no parameter defines"):
        TR.VMShapeLower()(bb.get())


def test_remove_purity_checking_marks_functions():
    out = TR.RemovePurityChecking()(Chain)
    assert out["main"].attrs["relax.force_pure"] is True


@pytest.mark.parametrize("make", [TR.ToNonDataflow, TR.RemovePurityChecking, TR.CallTIRRewrite,
                                  TR.StaticPlanBlockMemory, TR.VMBuiltinLower, TR.VMShapeLower])
def test_lowering_passes_leave_external_functions_and_unchanged_modules(make):
    """The per-function skeleton the lowering passes share: functions for an external code
    generator are not touched, and a pass with nothing to do returns its input module."""
    external = Chain["main"].with_attr("Codegen", "ext")  # VMBuiltinLower would reject it
    mod = ChainRewritten.with_function("ext_fn", external)
    out = make()(mod)
    assert out["ext_fn"] is external
    lonely = IRModule({"exp": Chain["exp"]})
    assert make()(lonely) is lonely
