"""CanonicalizeBindings: var-to-var bindings, trivial match_cast, known tuple lookups."""

from graph_pass_testing import assert_same, bindings, fresh, make_mod, op_names, tensor

from tvm import relax, tir
from tvm.relax import op
from tvm.relax.transform import CanonicalizeBindings


def test_alias_chain_in_dataflow_block():
    x, = fresh(tensor([4]))

    def before(bb, x):
        a = bb.emit(op.exp(x))
        b = bb.emit(a)
        c = bb.emit(b)
        return bb.emit(op.add(c, b))

    def after(bb, x):
        a = bb.emit(op.exp(x))
        return bb.emit(op.add(a, a))

    out = CanonicalizeBindings()(make_mod([x], before))
    # the block output `gv = lv` is folded into lv's binding
    bb = relax.BlockBuilder()
    y, = fresh(tensor([4]))
    with bb.function("main", [y]):
        with bb.dataflow():
            a = bb.emit(op.exp(y))
            gv = bb.emit_output(op.add(a, a))
        bb.emit_func_output(gv)
    assert_same(out, bb.get())
    del after


def test_output_alias_defines_the_output_directly():
    x, = fresh(tensor([4]))
    mod = make_mod([x], lambda bb, x: bb.emit(op.exp(x)))
    assert op_names(mod) == ["relax.exp", "DataflowVar"]
    out = CanonicalizeBindings()(mod)
    assert op_names(out) == ["relax.exp"]
    (b,) = bindings(out)
    assert type(b.var) is relax.Var and out["main"].body.body is b.var


def test_output_of_a_parameter_stays_a_binding_free_return():
    x, = fresh(tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(x)
        bb.emit_func_output(gv)
    out = CanonicalizeBindings()(bb.get())
    assert bindings(out) == [] and out["main"].body.body is out["main"].params[0]


def test_trivial_match_cast_is_removed_but_defining_one_is_kept():
    n = tir.Var("n", "int64")
    x = relax.Var("x", tensor([3, 4]))

    def body(bb, x):
        same = bb.match_cast(x, tensor([3, 4]))
        looser = bb.match_cast(same, relax.TensorStructInfo(ndim=2, dtype="float32"))
        return bb.emit(op.exp(looser))

    out = CanonicalizeBindings()(make_mod([x], body))
    assert op_names(out) == ["relax.exp"]
    assert bindings(out)[0].value.args[0] is out["main"].params[0]

    y = relax.Var("y", relax.TensorStructInfo(ndim=2, dtype="float32"))

    def defining(bb, y):
        z = bb.match_cast(y, tensor([n, 4]))
        return bb.emit(op.exp(z))

    mod = make_mod([y], defining)
    out = CanonicalizeBindings()(mod)
    assert op_names(out) == ["MatchCast", "relax.exp"]


def test_tuple_get_item_of_known_tuple():
    x, y = fresh(tensor([4]), tensor([2]))

    def before(bb, x, y):
        t = bb.emit(relax.Tuple([x, y]))
        a = bb.emit(relax.TupleGetItem(t, 1))
        return bb.emit(op.exp(a))

    def after(bb, x, y):
        bb.emit(relax.Tuple([x, y]))  # the tuple itself stays (DCE removes it)
        return bb.emit(op.exp(y))

    out = CanonicalizeBindings()(make_mod([x, y], before))
    expected = make_mod(fresh(tensor([4]), tensor([2])), after)
    assert_same(out, CanonicalizeBindings()(expected))


def test_var_is_not_replaced_by_a_dataflow_var_outside_its_block():
    x, = fresh(tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(op.exp(x))
            gv1 = bb.emit_output(lv)
            gv2 = bb.emit_output(lv)
        out = bb.emit(op.add(gv1, gv2))
        bb.emit_func_output(out)
    res = CanonicalizeBindings()(bb.get())
    # gv1 takes over lv's binding; gv2 becomes an alias of gv1, then disappears
    names = op_names(res)
    assert names == ["relax.exp", "relax.add"]
    add = bindings(res)[-1].value
    assert add.args[0] is add.args[1] and type(add.args[0]) is relax.Var


def test_unchanged_function_is_returned_as_is():
    x, = fresh(tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(op.exp(x)))
    mod = bb.get()
    assert CanonicalizeBindings()(mod) is mod
