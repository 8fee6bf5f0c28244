"""Structural equality, hashing and mismatch paths, by example and by hypothesis properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from toy_ir import (
    Add,
    Call,
    Const,
    Func,
    Let,
    Seq,
    Span,
    Tensor,
    Var,
    build,
    free_pool,
    func_recipes,
    mutations,
    uses_free,
)
from tvm.ffi import (
    StructuralMismatch,
    assert_structural_equal,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
)

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mismatch(a, b, **kw):
    return get_first_structural_mismatch(a, b, **kw)


def same(a, b, **kw):
    """Equal, and hashed alike."""
    return structural_equal(a, b, **kw) and structural_hash(a, **kw) == structural_hash(b, **kw)


def program(x, y, c):
    """fn(x) { 1; 2; let y = x + c in y }"""
    return Func([x], Seq([Const(1), Const(2), Let(y, Add(x, c), y)]))


# ---------------------------------------------------------------------------------------
# Paths


def test_mismatch_path_reaches_the_difference():
    lhs = program(Var("x"), Var("y"), Const(3))
    rhs = Func([Var("p")], Seq([Const(1), Const(2), Let(Var("q"), Add(Const(4), Const(3)), Var("q"))]))
    assert mismatch(lhs, rhs) == ".body.seq[2].value.a"
    assert not structural_equal(lhs, rhs)


@pytest.mark.parametrize(
    "rhs, path",
    [
        (Func([Var("x"), Var("z")], Seq([])), ".params"),  # lengths differ
        (Func([Var("x", "float32")], Seq([])), ".params[0].dtype"),
        (Func([Var("x")], Const(1)), ".body"),  # types differ
        (Func([Var("x")], Seq([Const(1), Const(5)])), ".body.seq[1].value"),
        (Func([Var("x")], Seq([Const(1), Const(2), Const(3)])), ".body.seq"),
        (Add(Const(1), Const(2)), "<root>"),
    ],
)
def test_mismatch_paths(rhs, path):
    lhs = Func([Var("x")], Seq([Const(1), Const(2)]))
    assert mismatch(lhs, rhs) == path


def test_call_paths():
    x = Var("x")
    base = Call("max", [x, Const(1)], {"axis": 0, "mode": "a"})
    assert mismatch(base, base.with_fields(op="min")) == ".op"
    assert mismatch(base, base.with_fields(args=(x, Const(2)))) == ".args[1].value"
    assert mismatch(base, base.with_fields(attrs={"axis": 1, "mode": "a"})) == ".attrs['axis']"
    assert mismatch(base, base.with_fields(attrs={"axis": 0, "mode": "b"})) == ".attrs['mode']"
    assert mismatch(base, base.with_fields(attrs={"axis": 0, "kind": "a"})) == ".attrs"
    assert mismatch(base, base.with_fields(attrs={"axis": 0})) == ".attrs"


def test_equal_objects_have_no_mismatch():
    x = Var("x")
    assert mismatch(program(x, Var("y"), Const(3)), program(x, Var("y"), Const(3))) is None


def test_root_mismatch_path_is_truthy():
    assert mismatch(Const(1), Const(2)) == ".value"
    assert mismatch(Const(1), Add(Const(1), Const(1))) == "<root>"
    assert mismatch(1, 2) == "<root>"


def test_assert_structural_equal_message():
    lhs = program(Var("x"), Var("y"), Const(3))
    rhs = program(Var("x"), Var("y"), Const(3)).with_fields()
    assert_structural_equal(lhs, rhs)  # no error
    rhs = Func([Var("p")], Seq([Const(1), Const(2), Let(Var("q"), Add(Const(4), Const(3)), Var("q"))]))
    with pytest.raises(StructuralMismatch) as info:
        assert_structural_equal(lhs, rhs)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.path == ".body.seq[2].value.a"
    text = str(err)
    assert text.startswith("structural mismatch at .body.seq[2].value.a:")
    assert "lhs: ffitest.Var(name='x', dtype='int32')" in text
    assert "rhs: ffitest.Const(value=4, dtype='int32')" in text


def test_assert_structural_equal_at_root_and_long_values():
    with pytest.raises(StructuralMismatch, match="mismatch at <root>") as info:
        assert_structural_equal(Const(1), Add(Const(1), Const(2)))
    assert info.value.path == "<root>"
    big = Const(tuple(range(1000)))
    with pytest.raises(StructuralMismatch) as info:
        assert_structural_equal(big, Const(tuple(range(1, 1001))))
    assert info.value.path == ".value[0]"
    with pytest.raises(StructuralMismatch) as info:
        assert_structural_equal(big, Const(()))
    assert str(info.value).count(" ...") == 1  # the long lhs is cut


# ---------------------------------------------------------------------------------------
# Variables


def test_bound_variable_names_do_not_matter():
    lhs = program(Var("x"), Var("y"), Const(3))
    rhs = program(Var("a"), Var("b"), Const(3))
    assert same(lhs, rhs)
    assert mismatch(lhs, rhs) is None


def test_ignored_fields_do_not_matter():
    x = Var("x")
    lhs = Func([x], Add(x, Const(1), span=Span("a.py", 1)), name="f")
    y = Var("y", span=Span("b.py", 9))
    rhs = Func([y], Add(y, Const(1), span=Span("b.py", 2)), name="g")
    assert same(lhs, rhs)


def test_free_variables_compare_by_identity():
    x, y = Var("x"), Var("x")
    assert structural_equal(Add(x, Const(1)), Add(x, Const(1)))
    assert mismatch(Add(x, Const(1)), Add(y, Const(1))) == ".a"
    assert structural_hash(Add(x, Const(1))) != structural_hash(Add(y, Const(1)))


def test_free_variables_map_when_asked():
    x, y = Var("x"), Var("y")
    assert same(Add(x, Const(1)), Add(y, Const(1)), map_free_vars=True)
    # the mapping is a bijection, found in traversal order
    a, b = Var("a"), Var("b")
    assert same(Add(x, y), Add(b, a), map_free_vars=True)
    assert mismatch(Add(x, x), Add(a, b), map_free_vars=True) == ".b"
    assert mismatch(Add(x, y), Add(a, a), map_free_vars=True) == ".b"


def test_free_variable_type_still_matters_when_mapping():
    assert mismatch(Var("x"), Var("x", "float32"), map_free_vars=True) == ".dtype"


def test_inconsistent_mapping_is_a_mismatch():
    x, y, z = Var("x"), Var("y"), Var("z")
    # x -> y at the binding, then x -> z at a use
    assert mismatch(Func([x], Add(x, x)), Func([y], Add(y, z))) == ".body.b"
    # two lhs variables onto one rhs variable
    x1, x2 = Var("x1"), Var("x2")
    assert mismatch(Func([x1, x2], Add(x1, x2)), Func([y, z], Add(y, y))) == ".body.b"
    assert mismatch(Func([x1, x2], Const(0)), Func([y, y], Const(0))) == ".params[1]"


def test_bound_variable_is_not_equal_to_a_free_one():
    x, g = Var("x"), Var("g")
    assert mismatch(Func([x], x), Func([Var("y")], g)) == ".body"
    # ...even when the free one is the very variable bound on the other side
    assert mismatch(Func([x], x), Func([Var("y")], x)) == ".body"


def test_let_binds_its_variable():
    v = Const(2)
    x, y = Var("x"), Var("y")
    assert same(Let(x, v, Add(x, x)), Let(y, v, Add(y, y)))
    assert mismatch(Let(x, v, Add(x, x)), Let(y, v, Add(y, Var("w")))) == ".body.b"


def test_sharing_versus_copies():
    x = Var("x")
    shared = Add(x, Const(1))
    lhs = Func([x], Add(shared, shared))
    y = Var("y")
    rhs = Func([y], Add(Add(y, Const(1)), Add(y, Const(1))))
    assert same(lhs, rhs)


# ---------------------------------------------------------------------------------------
# Values


def test_leaf_values_are_type_strict():
    assert mismatch(Const(1), Const(1.0)) == ".value"
    assert mismatch(Const(1), Const(True)) == ".value"
    assert mismatch(Const("1"), Const(1)) == ".value"
    assert same(Const(0.0), Const(-0.0))  # as ==
    assert mismatch(Const(None), Const(0)) == ".value"


def test_nan_and_inf():
    assert same(Const(math.nan), Const(float("nan")))
    assert same(Const(math.inf), Const(float("inf")))
    assert mismatch(Const(math.inf), Const(-math.inf)) == ".value"
    assert mismatch(Const(math.nan), Const(1.0)) == ".value"


def test_lists_and_tuples_compare_alike():
    assert same([Const(1), (Const(2),)], (Const(1), [Const(2)]))
    assert mismatch([1, 2], [1, 3]) == "[1]"
    assert mismatch([1, 2], [1]) == "<root>"


def test_numpy_payloads():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    assert same(Tensor(a), Tensor(a.copy()))
    assert same(Tensor(np.full(3, np.nan)), Tensor(np.full(3, np.nan)))
    assert mismatch(Tensor(a), Tensor(a.astype("float64"))) == ".data"
    assert mismatch(Tensor(a), Tensor(a.reshape(3, 2))) == ".data"
    b = a.copy()
    b[1, 2] = 100
    assert mismatch(Tensor(a), Tensor(b)) == ".data"
    assert same(Tensor(a.T), Tensor(np.ascontiguousarray(a.T)))
    assert same(Const(np.float32(1.5)), Const(np.float32(1.5)))
    assert mismatch(Const(np.float32(1.5)), Const(np.float64(1.5))) == ".value"


def test_string_keyed_dicts_ignore_order():
    lhs = Call("f", [], {"a": 1, "b": Const(2)})
    rhs = Call("f", [], {"b": Const(2), "a": 1})
    assert same(lhs, rhs)


def test_value_keyed_dicts_ignore_order_but_key_types_matter():
    assert same({1: "a", 2: "b"}, {2: "b", 1: "a"})
    assert mismatch({1: "a"}, {True: "a"}) == "<root>"
    assert mismatch({1: "a"}, {1.0: "a"}) == "<root>"
    assert mismatch({1: "a", 2: "b"}, {2: "b", 1: "c"}) == "[1]"


def test_dict_values_binding_variables_hash_alike_in_any_order():
    x, y = Var("x"), Var("y")
    p, q = Var("p"), Var("q")
    lhs = {"f": Func([x], x), "g": Func([y], Const(1))}
    rhs = {"g": Func([q], Const(1)), "f": Func([p], p)}
    assert same(lhs, rhs)
    free_l = {"a": x, "b": y}
    free_r = {"b": q, "a": p}
    assert same(free_l, free_r, map_free_vars=True)


def test_object_keyed_dicts():
    x, y = Var("x"), Var("y")
    assert same({x: 1, y: 2}, {x: 1, y: 2})
    assert mismatch({x: 1}, {y: 1}) == f"[{x!r}]"
    assert same({x: 1}, {y: 1}, map_free_vars=True)
    assert mismatch({x: 1}, {x: 2}) == f"[{x!r}]"
    p, q = Var("p"), Var("q")
    # a bound variable used as a key compares by its binding
    assert same(Func([p], Call("f", [p], {"k": {p: 1}})), Func([q], Call("f", [q], {"k": {q: 1}})))


def test_deep_trees_do_not_overflow():
    lhs = rhs = Const(0)
    for i in range(3000):
        lhs = Add(lhs, Const(i))
        rhs = Add(rhs, Const(i))
    assert same(lhs, rhs)
    assert mismatch(lhs, rhs.with_fields(b=Const(-1))) == ".b.value"


# ---------------------------------------------------------------------------------------
# Properties over random toy programs


@st.composite
def recipe_pairs(draw):
    """(r1, r2): r2 is r1, a one-field change of r1, or an independent program."""
    r1 = draw(func_recipes())
    choice = draw(st.sampled_from(["same", "mutated", "other"]))
    if choice == "same":
        return r1, r1
    if choice == "mutated":
        muts = list(mutations(r1))
        if muts:
            return r1, draw(st.sampled_from(muts))[1]
    return r1, draw(func_recipes())


@PROPERTY
@given(recipe_pairs())
def test_equal_iff_same_recipe_and_equal_implies_equal_hash(pair):
    r1, r2 = pair
    pool = free_pool()
    lhs, rhs = build(r1, pool, "a"), build(r2, pool, "b")
    equal = structural_equal(lhs, rhs)
    assert equal == (r1 == r2)
    assert (mismatch(lhs, rhs) is None) == equal
    if equal:
        assert structural_hash(lhs) == structural_hash(rhs)
        assert structural_hash(lhs, map_free_vars=True) == structural_hash(rhs, map_free_vars=True)


@PROPERTY
@given(func_recipes())
def test_renaming_bound_variables_keeps_equality_and_hash(recipe):
    pool = free_pool()
    original = build(recipe, pool, "x")
    renamed = build(recipe, pool, "renamed_")
    assert same(original, renamed)
    assert structural_hash(original) == structural_hash(original)  # deterministic


@PROPERTY
@given(func_recipes())
def test_fresh_free_variables_need_map_free_vars(recipe):
    lhs = build(recipe, free_pool("g"), "x")
    rhs = build(recipe, free_pool("h"), "y")
    assert structural_equal(lhs, rhs) == (not uses_free(recipe))
    assert same(lhs, rhs, map_free_vars=True)


@PROPERTY
@given(func_recipes(), st.data())
def test_changing_one_field_breaks_equality_at_that_path(recipe, data):
    muts = list(mutations(recipe))
    assume(muts)
    path, changed = data.draw(st.sampled_from(muts))
    pool = free_pool()
    lhs, rhs = build(recipe, pool, "a"), build(changed, pool, "b")
    assert not structural_equal(lhs, rhs)
    assert mismatch(lhs, rhs) == path
    assert mismatch(rhs, lhs) == path
    assert structural_hash(lhs) != structural_hash(rhs)
    with pytest.raises(StructuralMismatch) as info:
        assert_structural_equal(lhs, rhs)
    assert info.value.path == path


_STABLE_SNIPPET = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np
from toy_ir import Add, Const, Func, Var
from tvm.ffi import structural_hash
x, y = Var("x"), Var("y")
func = Func((x, y), Add(Add(x, y), Const(2)))
print(structural_hash(func))
print(structural_hash({{"name": "matmul", "shape": (4, None), "w": np.arange(6.0)}}))
"""


def test_structural_hash_is_the_same_in_every_process():
    """Stored hashes (tuning records) must mean the same thing in the next process:
    strings, bytes and None are not hashed with Python's per-process salt."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = _STABLE_SNIPPET.format(tests=str(Path(__file__).parent))
    outs = set()
    for seed in ("1", "2", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.add(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True, env=env).stdout)
    assert len(outs) == 1 and len(next(iter(outs)).split()) == 2
