"""StructuralMap: a mapping whose keys are found by structural equality."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toy_ir import Add, Const, Func, Var, build, free_pool, func_recipes
from tvm.ffi import StructuralMap

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def func(name="x"):
    x = Var(name)
    return Func((x,), Add(x, Const(1)))


def test_structurally_equal_keys_find_one_entry():
    table = StructuralMap()
    table[func("x")] = "first"
    assert table.get(func("renamed")) == "first"  # bound variable names do not matter
    assert func("y") in table and len(table) == 1
    table[func("z")] = "second"  # replaces the value, keeps one entry
    assert table[func("x")] == "second" and len(table) == 1
    other = Func((Var("x"),), Const(2))
    assert table.get(other) is None and table.get(other, 7) == 7
    with pytest.raises(KeyError, match="no structurally equal key for Func"):
        table[other]


def test_free_variables_by_identity_unless_mapped():
    a, b = Var("a"), Var("b")
    strict, mapped = StructuralMap(), StructuralMap(map_free_vars=True)
    strict[Add(a, Const(1))] = mapped[Add(a, Const(1))] = 1
    assert Add(a, Const(1)) in strict and Add(b, Const(1)) not in strict
    assert Add(b, Const(1)) in mapped


def test_get_or_add_makes_a_value_once():
    table, made = StructuralMap(), []
    for name in ("p", "q", "r"):
        value = table.get_or_add(func(name), lambda: made.append(1) or len(made))
        assert value == 1
    assert made == [1]


def test_max_size_drops_the_oldest_entries():
    table = StructuralMap(max_size=2)
    keys = [Const(i) for i in range(3)]
    for i, k in enumerate(keys):
        table[k] = i
    assert len(table) == 2 and Const(0) not in table
    assert table[Const(1)] == 1 and table[Const(2)] == 2
    table.clear()
    assert len(table) == 0 and Const(2) not in table
    with pytest.raises(ValueError, match="max_size must be positive"):
        StructuralMap(max_size=0)


@PROPERTY
@given(st.lists(func_recipes(), min_size=1, max_size=6))
def test_lookup_agrees_with_the_recipes(recipes):
    """A program built again (fresh bound variables) finds the value of its recipe."""
    pool = free_pool()
    table: StructuralMap[int] = StructuralMap()
    expected: dict = {}
    for i, recipe in enumerate(recipes):
        table[build(recipe, pool, f"a{i}_")] = i
        expected[recipe] = i
    assert len(table) == len(expected)
    for recipe, value in expected.items():
        assert table[build(recipe, pool, "again_")] == value
