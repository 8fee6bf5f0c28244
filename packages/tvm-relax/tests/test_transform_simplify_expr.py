"""SimplifyExpr: each rule, its negative cases, and a value-preservation property."""

import numpy as np
import pytest
from graph_pass_testing import assert_same, bindings, fresh, make_mod, op_names, run, tensor
from hypothesis import given, settings
from hypothesis import strategies as st

from tvm import relax, tir
from tvm.relax import op
from tvm.relax.transform import AlgebraicSimplify, SimplifyExpr
from tvm.relax.transform.simplify_expr import simplify_rules


def _simplified(params, before):
    return SimplifyExpr()(make_mod(params, before))


def test_reshape_chain_becomes_one_reshape():
    x, = fresh(tensor([2, 3, 4]))

    def before(bb, x):
        a = bb.emit(op.reshape(x, [6, 4]))
        b = bb.emit(op.expand_dims(a, [0]))
        return bb.emit(op.reshape(b, [4, 6]))

    def after(bb, x):
        return bb.emit(op.reshape(x, [4, 6]))

    assert_same(_simplified([x], before), make_mod(fresh(tensor([2, 3, 4])), after))


def test_reshape_chain_back_to_the_input_shape_disappears():
    x, = fresh(tensor([2, 3, 4]))

    def before(bb, x):
        a = bb.emit(op.reshape(x, [24]))
        b = bb.emit(op.reshape(a, [2, 12]))
        return bb.emit(op.reshape(b, [2, 3, 4]))

    out = _simplified([x], before)
    assert op_names(out) == ["Var"]
    assert out["main"].body.blocks[0].bindings[0].value is out["main"].params[0]


def test_expand_dims_then_squeeze_is_identity():
    x, = fresh(tensor([3, 4]))

    def before(bb, x):
        a = bb.emit(op.expand_dims(x, [1]))
        b = bb.emit(op.squeeze(a, [1]))
        return bb.emit(op.exp(b))

    def after(bb, x):
        return bb.emit(op.exp(x))

    assert_same(_simplified([x], before), make_mod(fresh(tensor([3, 4])), after))


def test_symbolic_reshape_to_same_shape():
    n = tir.Var("n", "int64")
    x = relax.Var("x", tensor([n, 4]))

    def before(bb, x):
        return bb.emit(op.exp(op.reshape(x, relax.ShapeExpr([n, 4]))))

    out = _simplified([x], before)
    assert op_names(out) == ["relax.exp", "DataflowVar"]


def test_transpose_pairs_compose():
    x, = fresh(tensor([2, 3, 4]))

    def before(bb, x):
        a = bb.emit(op.permute_dims(x, [1, 0, 2]))
        b = bb.emit(op.permute_dims(a, [2, 0, 1]))
        return bb.emit(op.exp(b))

    def after(bb, x):
        # b[i, j, k] = a[k?]: composed axes a[b[i]] = [2, 1, 0]
        return bb.emit(op.exp(op.permute_dims(x, [2, 1, 0])))

    assert_same(_simplified([x], before), make_mod(fresh(tensor([2, 3, 4])), after))


def test_inverse_transposes_cancel_and_identity_transpose_goes():
    x, = fresh(tensor([2, 3, 4, 5]))

    def before(bb, x):
        a = bb.emit(op.permute_dims(x, [0, 2, 3, 1]))
        b = bb.emit(op.permute_dims(a, [0, 3, 1, 2]))
        c = bb.emit(op.permute_dims(b, [0, 1, 2, 3]))
        return bb.emit(op.exp(c))

    def after(bb, x):
        return bb.emit(op.exp(x))

    assert_same(_simplified([x], before), make_mod(fresh(tensor([2, 3, 4, 5])), after))


def test_default_axes_transpose_pair():
    x, = fresh(tensor([2, 3]))

    def before(bb, x):
        a = bb.emit(op.permute_dims(x))
        return bb.emit(op.exp(op.permute_dims(a)))

    assert op_names(_simplified([x], before)) == ["relax.exp", "DataflowVar"]


def test_square_transpose_is_not_an_identity():
    x, = fresh(tensor([3, 3]))
    mod = make_mod([x], lambda bb, x: bb.emit(op.exp(op.permute_dims(x, [1, 0]))))
    assert SimplifyExpr()(mod) is mod


@pytest.mark.parametrize("make", [
    lambda x, c: op.add(x, c), lambda x, c: op.add(c, x), lambda x, c: op.subtract(x, c),
])
def test_add_zero(make):
    x, = fresh(tensor([2, 3]))
    zero = relax.const(np.zeros((3,), "float32"))
    out = _simplified([x], lambda bb, x: bb.emit(op.exp(make(x, zero))))
    assert op_names(out) == ["relax.exp", "DataflowVar"]


@pytest.mark.parametrize("make", [
    lambda x, c: op.multiply(x, c), lambda x, c: op.multiply(c, x), lambda x, c: op.divide(x, c),
])
def test_multiply_one(make):
    x, = fresh(tensor([2, 3], "int32"))
    one = relax.const(np.ones((), "int32"))
    out = _simplified([x], lambda bb, x: bb.emit(op.negative(make(x, one))))
    assert op_names(out) == ["relax.negative", "DataflowVar"]
    assert bindings(out)[0].value.args[0] is out["main"].params[0]


def test_identities_that_would_broadcast_are_kept():
    x, = fresh(tensor([3]))
    zeros = relax.const(np.zeros((2, 3), "float32"))
    mod = make_mod([x], lambda bb, x: bb.emit(op.add(x, zeros)))
    assert SimplifyExpr()(mod) is mod          # the result is (2, 3), not x's (3,)
    unknown = relax.Var("u", relax.TensorStructInfo(ndim=-1, dtype="float32"))
    mod = make_mod([unknown], lambda bb, u: bb.emit(op.add(u, zeros)))
    assert SimplifyExpr()(mod) is mod          # x's shape unknown: cannot tell


def test_non_identity_constants_are_kept():
    x, = fresh(tensor([3]))
    two = relax.const(np.full((3,), 2, "float32"))
    mixed = relax.const(np.array([1, 1, 2], "float32"))

    def body(bb, x):
        a = bb.emit(op.multiply(x, two))
        b = bb.emit(op.multiply(a, mixed))
        return bb.emit(op.subtract(relax.const(np.zeros(3, "float32")), b))  # 0 - x is not x

    mod = make_mod([x], body)
    assert SimplifyExpr()(mod) is mod


def test_astype_and_double_negation():
    x, = fresh(tensor([4], "float16"))

    def before(bb, x):
        a = bb.emit(op.astype(x, "float16"))
        b = bb.emit(op.negative(op.negative(a)))
        return bb.emit(op.astype(b, "float32"))   # a real conversion: kept

    def after(bb, x):
        return bb.emit(op.astype(x, "float32"))

    assert_same(_simplified([x], before), make_mod(fresh(tensor([4], "float16")), after))


def test_alias_and_rule_table():
    assert AlgebraicSimplify is SimplifyExpr
    names = [r.name for r in simplify_rules()]
    assert {"reshape-chain", "permute-compose", "add-zero", "astype-identity"} <= set(names)


# -- property: random chains of shape ops and identities keep their values ---------------------
_SHAPE = (2, 3, 4)


@st.composite
def _programs(draw):
    steps = draw(st.lists(st.sampled_from(["reshape", "permute", "mul1", "add0", "expand",
                                           "neg2", "astype"]), min_size=1, max_size=6))
    perms = [tuple(draw(st.permutations(range(3)))) for _ in steps]
    shapes = [draw(st.sampled_from([(24,), (6, 4), (2, 12), (4, 3, 2), (2, 3, 4)]))
              for _ in steps]
    return list(zip(steps, perms, shapes))


def _emit_program(bb, x, program):
    cur = x
    ndim = 3
    for step, perm, shape in program:
        if step == "reshape":
            cur = bb.emit(op.reshape(cur, list(shape)))
            ndim = len(shape)
        elif step == "permute":
            axes = list(perm) if ndim == 3 else list(reversed(range(ndim)))
            cur = bb.emit(op.permute_dims(cur, axes))
        elif step == "mul1":
            cur = bb.emit(op.multiply(cur, relax.const(np.ones((), "float32"))))
        elif step == "add0":
            cur = bb.emit(op.add(relax.const(np.zeros((1,), "float32")), cur))
        elif step == "expand":
            cur = bb.emit(op.squeeze(bb.emit(op.expand_dims(cur, [0])), [0]))
        elif step == "neg2":
            cur = bb.emit(op.negative(bb.emit(op.negative(cur))))
        else:
            cur = bb.emit(op.astype(cur, "float32"))
    return bb.emit(op.exp(cur))


@settings(max_examples=25, deadline=None)
@given(_programs())
def test_simplify_keeps_values(program):
    x, = fresh(tensor(_SHAPE))
    mod = make_mod([x], lambda bb, x: _emit_program(bb, x, program))
    out = SimplifyExpr()(mod)
    data = np.random.default_rng(len(program)).standard_normal(_SHAPE).astype("float32")
    np.testing.assert_allclose(run(out, data), run(mod, data), rtol=1e-6)
    assert len(bindings(out)) <= len(bindings(mod))
    assert relax.analysis.well_formed(out)
