"""Patterns (tvm.relax.dpl) and the shared rewrite driver."""

import numpy as np
import pytest
from graph_pass_testing import fresh, make_mod, op_names, tensor

from tvm import relax
from tvm.relax import op
from tvm.relax.dpl import (
    PatternRewriter,
    RewriteRule,
    is_const,
    is_op,
    is_tuple,
    is_tuple_get_item,
    rewrite_bindings,
    rewrite_pass,
    wildcard,
)


def _lookup_of(mod):
    table = relax.analysis.get_var2val(mod["main"])
    return lambda var: table.get(var)


def _value(mod, index):
    return [b for blk in mod["main"].body.blocks for b in blk.bindings][index].value


def _chain_mod():
    x, = fresh(tensor([2, 3]))

    def body(bb, x):
        a = bb.emit(op.add(x, relax.const(np.zeros((2, 3), "float32"))))
        b = bb.emit(op.multiply(a, a))
        return bb.emit(op.exp(b))

    return make_mod([x], body)


def test_call_pattern_sees_through_bindings():
    mod = _chain_mod()
    x, c = wildcard(), is_const()
    add = is_op("relax.add")(x, c)
    pat = is_op("relax.exp")(is_op("relax.multiply")(add, add))
    m = pat.match(_value(mod, 2), _lookup_of(mod))
    assert m is not None
    assert m[x] is mod["main"].params[0]
    assert isinstance(m[add], relax.Var)              # the expression as it appears
    assert m.value(add).op.name == "relax.add"        # the value behind it
    assert np.all(m.value(c).data == 0)
    # without the lookup the argument is just a variable
    assert pat.match(_value(mod, 2)) is None


def test_repeated_pattern_must_match_the_same_expression():
    x, y = fresh(tensor([2]), tensor([2]))
    mod = make_mod([x, y], lambda bb, x, y: bb.emit(op.multiply(x, y)))
    w = wildcard()
    assert is_op("relax.multiply")(w, w).match(_value(mod, 0)) is None
    assert is_op("relax.multiply")(wildcard(), wildcard()).match(_value(mod, 0)) is not None


def test_constant_alternatives_and_constraints():
    x, = fresh(tensor([2, 3]))
    one = relax.const(np.ones((3,), "float32"))
    mod = make_mod([x], lambda bb, x: bb.emit(op.multiply(one, x)))
    call = _value(mod, 0)
    v = wildcard()
    times_one = is_op("relax.multiply")(v, is_const(1)) | is_op("relax.multiply")(is_const(1), v)
    m = times_one.match(call)
    assert m is not None and m[v] is x
    assert is_op("relax.multiply")(is_const(2), wildcard()).match(call) is None
    assert is_op("relax.multiply")(...).has_dtype("float32").match(call) is not None
    assert is_op("relax.multiply")(...).has_dtype("int32").match(call) is None
    assert is_op("relax.multiply")(...).has_shape([2, 3]).match(call) is not None
    assert is_op("relax.add", "relax.multiply")(wildcard(), ...).match(call) is not None
    assert is_op("relax.multiply")(wildcard()).match(call) is None  # arity differs


def test_attr_tuple_patterns():
    x, = fresh(tensor([2, 3, 4]))

    def body(bb, x):
        p = bb.emit(op.permute_dims(x, [1, 0, 2]))
        t = bb.emit(relax.Tuple([p, x]))
        return bb.emit(relax.TupleGetItem(t, 1))

    mod = make_mod([x], body)
    lookup = _lookup_of(mod)
    perm = is_op("relax.permute_dims")(wildcard()).has_attr(axes=(1, 0, 2))
    assert perm.match(_value(mod, 0)) is not None
    assert is_op("relax.permute_dims")(wildcard()).has_attr(axes=(0, 1, 2)).match(
        _value(mod, 0)) is None
    item = is_tuple_get_item(is_tuple([perm, wildcard()]), 1)
    assert item.match(_value(mod, 2), lookup) is not None
    assert is_tuple_get_item(is_tuple(), 0).match(_value(mod, 2), lookup) is None


def test_unknown_operator_in_pattern_is_reported():
    with pytest.raises(ValueError, match="relax.ad"):
        is_op("relax.ad")


def test_driver_rewrites_and_removes_dead_bindings():
    mod = _chain_mod()
    x, c = wildcard(), is_const(0)

    def drop_add(call, m):
        return m[x]

    rules = [RewriteRule(is_op("relax.add")(x, c), drop_add, "add-zero")]
    rewriter = PatternRewriter(rules, mod)
    new = rewriter.rewrite_function(mod["main"])
    assert rewriter.fired["add-zero"] == 1
    new_mod = mod.with_function("main", new)
    assert op_names(new_mod) == ["relax.multiply", "relax.exp", "DataflowVar"]
    assert _value(new_mod, 0).args[0] is new.params[0]


def test_driver_rejects_replacements_that_change_struct_info():
    x, = fresh(tensor([3]))
    mod = make_mod([x], lambda bb, x: bb.emit(op.add(x, relax.const(np.zeros((2, 3), "f4")))))
    w = wildcard()
    # a (wrong) rule dropping a broadcasting add: the shape would change, so it is refused
    rules = [RewriteRule(is_op("relax.add")(w, is_const()), lambda call, m: m[w], "bad")]
    new = rewrite_bindings(mod["main"], rules, mod)
    assert new is mod["main"]


def test_driver_validates_rules_and_results():
    with pytest.raises(TypeError, match="Pattern"):
        RewriteRule("relax.add", lambda c, m: None)
    with pytest.raises(TypeError, match="RewriteRule"):
        PatternRewriter([object()])
    mod = _chain_mod()
    bad = [RewriteRule(is_op("relax.exp")(wildcard()), lambda c, m: 42, "returns-int")]
    with pytest.raises(TypeError, match="returns-int"):
        rewrite_pass(bad, "Bad")(mod)


def test_rewrite_pass_leaves_unmatched_modules_alone():
    mod = _chain_mod()
    rules = [RewriteRule(is_op("relax.sqrt")(wildcard()), lambda c, m: None)]
    assert rewrite_pass(rules, "Nothing")(mod) is mod
