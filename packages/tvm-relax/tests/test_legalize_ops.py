"""LegalizeOps: operator calls become call_tir of te-generated PrimFuncs (structure only;
the numerics of every legalization are checked against numpy in tests/relax_ops)."""

import warnings

import numpy as np

import pytest

from tvm import relax, te, tir
from tvm.ffi import assert_structural_equal
from tvm.ir import Op
from tvm.relax import TensorStructInfo, op
from tvm.relax.op.base import _SPECS
from tvm.relax.transform import LegalizeOps, get_legalize, register_legalize

n = tir.Var("n", "int64")


def tensor(shape, dtype="float32", name="x"):
    return relax.Var(name, TensorStructInfo(shape, dtype))


def build(params, body_fn):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(body_fn(*params), name_hint="out")
        bb.emit_func_output(out)
    return bb.get()


def bindings(mod, name="main"):
    return [b for block in mod[name].body.blocks for b in block.bindings]


def calls(mod):
    return [(b.value.op.name, b.value.args[0].name_hint if b.value.op.name == "relax.call_tir"
             else None) for b in bindings(mod)]


def walkthrough():
    a, b, bias = tensor([128, 256], name="a"), tensor([256, 512], name="b"), tensor([512], name="bias")
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b, bias]):
        with bb.dataflow():
            lv = bb.emit(op.matmul(a, b))
            out = bb.emit_output(op.add(lv, bias), name_hint="out")
        bb.emit_func_output(out)
    return bb.get(), (a, b, bias)


def test_walkthrough_matmul_add():
    mod, (a, b, bias) = walkthrough()
    new = LegalizeOps()(mod)
    assert sorted(gv.name_hint for gv in new.functions) == ["add", "main", "matmul"]
    lv, out = bindings(new)
    assert lv.value.op is Op.get("relax.call_tir")
    assert lv.value.args[0].name_hint == "matmul"
    assert list(lv.value.args[1].fields) == [a, b]
    sinfo = lv.value.sinfo_args[0]
    assert [d.value for d in sinfo.shape_values] == [128, 512] and sinfo.dtype == "float32"
    assert out.value.args[0].name_hint == "add"
    assert list(out.value.args[1].fields) == [lv.var, bias]
    assert out.var.name_hint == "out"
    script = new.script()
    assert 'R.call_tir(cls.matmul, (a, b), out_sinfo=R.Tensor((128, 512), dtype="float32"))' in script
    assert 'R.call_tir(cls.add, (lv, bias), out_sinfo=R.Tensor((128, 512), dtype="float32"))' in script


def test_walkthrough_equals_hand_written_emit_te():
    from tvm.relax.topi import elemwise, linalg

    mod, _ = walkthrough()
    a, b, bias = tensor([128, 256], name="a"), tensor([256, 512], name="b"), tensor([512], name="bias")
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b, bias]):
        with bb.dataflow():
            lv = bb.emit_te(linalg.matmul, a, b, "void", primfunc_name_hint="matmul")
            out = bb.emit_output(bb.call_te(elemwise.binary, lv, bias, "add",
                                            primfunc_name_hint="add"))
        bb.emit_func_output(out)
    assert_structural_equal(LegalizeOps()(mod), bb.get())


def test_input_module_is_not_modified_and_rerun_is_a_no_op():
    mod, _ = walkthrough()
    before = mod.script()
    once = LegalizeOps()(mod)
    assert mod.script() == before
    assert LegalizeOps()(once) is once


def test_primfuncs_are_deduplicated_and_named_uniquely():
    x, y = tensor([4, 4]), tensor([4], name="y")
    mod = build([x, y], lambda x, y: op.multiply(op.add(x, y), op.add(op.add(x, y), x)))
    new = LegalizeOps()(mod)
    names = [c[1] for c in calls(new)]
    # the two (x + y) share a PrimFunc; (4, 4) + (4, 4) is another one
    assert names == ["add", "add", "add1", "multiply"]
    assert sorted(gv.name_hint for gv in new.functions) == ["add", "add1", "main", "multiply"]


def test_symbolic_shapes_flow_into_the_primfunc():
    x, w = tensor([n, 4]), tensor([4, 3], name="w")
    new = LegalizeOps()(build([x, w], lambda x, w: op.matmul(x, w)))
    (b,) = bindings(new)
    assert b.value.sinfo_args[0].shape_values[0] is n
    func = new["matmul"]
    x_buf = func.buffer_map[func.params[0]]
    assert isinstance(x_buf.shape[0], tir.Var) and x_buf.shape[0].name == "n"
    # output-only symbolic dims travel as tir_vars
    zeros = LegalizeOps()(build([x], lambda x: op.zeros(relax.ShapeExpr([n + 1, 2]), "float32")))
    (z,) = bindings(zeros)
    assert len(z.value.args) == 3 and z.value.args[2].values[0] is n


def test_inferred_struct_info_is_kept():
    h = tir.Var("h", "int64")
    x, w = tensor([1, 3, h, 8]), tensor([2, 3, 3, 3], name="w")
    mod = build([x, w], lambda x, w: op.nn.conv2d(x, w))
    expected = bindings(mod)[0].var.struct_info
    (b,) = bindings(LegalizeOps()(mod))
    assert_structural_equal(b.value.sinfo_args[0], expected)
    assert_structural_equal(b.var.struct_info, expected)


def test_customize_legalize_map():
    seen = []

    def my_add(bb, call):
        seen.append(call)
        return bb.call_te(lambda a, b: te.compute(a.shape, lambda *i: a(*i) - b(*i), name="sub"),
                          call.args[0], call.args[1], primfunc_name_hint="my_add")

    x = tensor([4])
    mod = build([x], lambda x: op.exp(op.add(x, x)))
    new = LegalizeOps(customize_legalize_map={"relax.add": my_add})(mod)
    assert [c[1] for c in calls(new)] == ["my_add", "exp"]
    assert len(seen) == 1
    with pytest.raises(ValueError, match="did you mean"):
        LegalizeOps(customize_legalize_map={"relax.ad": my_add})


def test_register_legalize_needs_override():
    default = get_legalize("relax.subtract")

    def mine(bb, call):
        return bb.call_te(lambda a, b: te.compute(a.shape, lambda *i: a(*i) + b(*i)),
                          *call.args, primfunc_name_hint="custom_subtract")

    with pytest.raises(ValueError, match="relax.subtract already has a legalization"):
        register_legalize("relax.subtract", mine)
    try:
        register_legalize("relax.subtract", mine, override=True)
        x = tensor([4])
        new = LegalizeOps()(build([x], lambda x: op.subtract(x, x)))
        assert calls(new) == [("relax.call_tir", "custom_subtract")]
    finally:
        register_legalize("relax.subtract", default, override=True)
    assert get_legalize("relax.subtract") is default

    @register_legalize("relax.null_value")  # decorator form, op without a default
    def null(bb, call):
        return call

    try:
        assert get_legalize("relax.null_value") is null
    finally:
        Op.get("relax.null_value").set_attr("FLegalize", None)


def test_legalizations_may_return_operator_calls():
    def silu_as_ops(bb, call):
        x = call.args[0]
        return op.multiply(x, op.sigmoid(x))

    x = tensor([n, 2])
    new = LegalizeOps(customize_legalize_map={"relax.nn.silu": silu_as_ops})(
        build([x], lambda x: op.nn.silu(x)))
    assert [c[1] for c in calls(new)] == ["sigmoid", "multiply"]


def test_legalizations_may_emit_bindings_first():
    def twice_then_negate(bb, call):
        t = bb.emit_te(lambda a: te.compute(a.shape, lambda i: a[i] * 2, name="twice"),
                       call.args[0], primfunc_name_hint="twice")
        return op.negative(t)

    x = tensor([4])
    new = LegalizeOps(customize_legalize_map={"relax.add": twice_then_negate})(
        build([x], lambda x: op.exp(op.add(x, x))))
    assert [c[1] for c in calls(new)] == ["twice", "negative", "exp"]


def test_unknown_shapes_are_left_with_a_warning():
    x = relax.Var("x", TensorStructInfo(None, "float32", 2))
    mod = build([x], lambda x: op.exp(x))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new = LegalizeOps(enable_warning=True)(mod)
    assert calls(new) == [("relax.exp", None)]
    assert any("relax.exp: an argument or the result has an unknown shape" in str(w.message)
               for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert LegalizeOps()(mod) is mod


def test_calls_without_legalization_and_codegen_functions_stay():
    x = tensor([4])
    mod = build([x], lambda x: op.shape_of(x))
    assert LegalizeOps()(mod) is mod
    mod, _ = walkthrough()
    mod = mod.with_function("main", mod["main"].with_fields(attrs={**mod["main"].attrs, "Codegen": "acme"}))
    assert LegalizeOps()(mod) is mod


def test_every_operator_is_legalizable():
    not_lowered = {"relax.call_tir", "relax.call_dps_packed", "relax.call_pure_packed",
                   "relax.shape_of", "relax.null_value"}
    missing = [
        name for name in _SPECS
        if name not in not_lowered and not name.startswith(("relax.builtin.", "relax.vm.",
                                                            "relax.memory."))
        and get_legalize(name) is None
    ]
    assert missing == []


@pytest.mark.parametrize("name", ["relax.add", "relax.exp", "relax.nn.conv2d", "relax.sort",
                                  "relax.cumsum", "relax.topk"])
def test_legalized_primfuncs_are_named_after_the_op(name):
    x = tensor([1, 2, 4, 4])
    make = {
        "relax.add": lambda x: op.add(x, x),
        "relax.exp": op.exp,
        "relax.nn.conv2d": lambda x: op.nn.conv2d(x, relax.const(
            __import__("numpy").zeros((3, 2, 1, 1), "float32"))),
        "relax.sort": op.sort,
        "relax.cumsum": lambda x: op.cumsum(x, 1),
        "relax.topk": lambda x: op.topk(x, 2),
    }[name]
    new = LegalizeOps()(build([x], make))
    gv_names = [c[1] for c in calls(new) if c[1]]
    assert gv_names == [name.rsplit(".", 1)[1]]


def test_reshape_keeps_shared_leading_and_trailing_dims_unchanged():
    """[b, s, 512] -> [b, s, 8, 64] reads x[i0, i1, i2 * 64 + i3]: no division by the
    symbolic s (a per-element 64-bit division in the kernel otherwise)."""
    from tvm.relax.topi.transform import reshape
    from tvm.tir.expr import FloorDiv, FloorMod
    from tvm.tir.stmt_functor import post_order_visit

    b, s = tir.Var("batch", "int64"), tir.Var("seq", "int64")

    def divisions(func):
        found = []
        post_order_visit(func.body, lambda e: found.append(e)
                         if isinstance(e, (FloorDiv, FloorMod)) else None)
        return found

    x = te.placeholder((b, s, 512), name="x")
    for shape in [(b, s, 8, 64), (b, 1, s, 512), (b, s, 512, 1)]:
        func = te.create_prim_func([x, reshape(x, shape)])
        assert not divisions(func), (shape, func.script())
    # the dims between are still linearized: [4, 6] -> [3, 8] divides by 6
    y = te.placeholder((4, 6), name="y")
    assert divisions(te.create_prim_func([y, reshape(y, (3, 8))]))


def _chain_of_adds(x, consts):
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = x
            for c in consts:
                y = bb.emit(op.add(y, relax.const(np.float32(c))))
            out = bb.emit_output(y, name_hint="out")
        bb.emit_func_output(out)
    return bb.get()


def test_identical_calls_are_lowered_once_and_rebound_to_their_own_arguments():
    seen = []

    def counting_add(bb, call):
        seen.append(call)
        return get_legalize("relax.add")(bb, call)

    x = tensor([n, 4])
    mod = _chain_of_adds(x, [1.0] * 5 + [2.0])
    new = LegalizeOps(customize_legalize_map={"relax.add": counting_add})(mod)
    assert len(seen) == 2  # once for the five adds of 1.0, once for the add of 2.0
    binds = bindings(new)
    assert [b.value.op.name for b in binds[:-1]] == ["relax.call_tir"] * 6
    # each call reads the previous binding, not the first call's argument
    args = [b.value.args[1].fields[0] for b in binds[:6]]
    assert args[0] is x and all(a is prev.var for a, prev in zip(args[1:], binds[:5]))
    consts = [float(b.value.args[1].fields[1].data) for b in binds[:6]]
    assert consts == [1.0] * 5 + [2.0]


def test_a_lowering_that_emits_bindings_is_not_reused():
    seen = []

    def emitting_add(bb, call):
        seen.append(call)
        lhs = bb.emit(op.multiply(call.args[0], relax.const(np.float32(1))))
        return op.add(lhs, call.args[1]) if len(seen) > 100 else bb.call_te(
            lambda a, b: te.compute(a.shape, lambda *i: a(*i) + b(), name="add"),
            lhs, call.args[1], primfunc_name_hint="add")

    mod = _chain_of_adds(tensor([4]), [1.0] * 3)
    LegalizeOps(customize_legalize_map={"relax.add": emitting_add})(mod)
    assert len(seen) == 3


def test_a_call_reading_one_value_twice_is_not_reused_for_two_values():
    x = tensor([8, 8])
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.matmul(x, x))
            out = bb.emit_output(op.matmul(a, x), name_hint="out")
        bb.emit_func_output(out)
    binds = bindings(LegalizeOps()(bb.get()))
    assert [list(b.value.args[1].fields) for b in binds[:2]] == [[x], [binds[0].var, x]]
