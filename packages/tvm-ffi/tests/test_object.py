"""The object base: declared immutable fields, type keys, reflection, with_fields."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from toy_ir import Add, Call, Const, Expr, Func, Let, Seq, Span, Var
from tvm.ffi import (
    FieldInfo,
    Object,
    def_field,
    get_object_type,
    ignore_field,
    list_object_types,
    object_fields,
    register_object,
    register_repr,
)
from tvm.ffi.object import generic_repr


def test_fields_and_type_key():
    x = Var("x")
    add = Add(x, Const(1))
    assert add.a is x and add.b.value == 1
    assert add.type_key == "ffitest.Add" == Add._type_key
    assert x.dtype == "int32" and x.span is None
    assert get_object_type("ffitest.Add") is Add
    assert {"ffitest.Add", "ffitest.Var", "ffitest.Func"} <= set(list_object_types())
    assert list_object_types() == sorted(list_object_types())
    assert isinstance(add, Expr) and isinstance(add, Object)


def test_abstract_base_is_named_by_its_class_and_not_registered():
    assert Expr._type_key == "Expr"
    assert "Expr" not in list_object_types()
    with pytest.raises(KeyError, match="unknown object type key 'Expr'"):
        get_object_type("Expr")


def test_abstract_subclass_of_registered_class_does_not_inherit_its_key():
    @register_object()
    class AddLike(Add):
        pass

    assert AddLike._type_key == "AddLike"
    assert get_object_type("ffitest.Add") is Add


def test_unknown_type_key_suggests_close_matches():
    with pytest.raises(KeyError, match=r"did you mean ffitest\.Add"):
        get_object_type("ffitest.Ad")


@pytest.mark.parametrize("field", ["a", "b", "span"])
def test_assigning_a_field_raises(field):
    add = Add(Const(1), Const(2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(add, field, Const(3))
    assert add.a.value == 1


def test_deleting_or_adding_attributes_raises():
    add = Add(Const(1), Const(2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        del add.a
    with pytest.raises((AttributeError, TypeError)):
        add.extra = 1


def test_field_reflection():
    infos = object_fields(Let)
    assert infos == object_fields(Let(Var("x"), Const(1), Const(2)))
    assert [(i.name, i.kind) for i in infos] == [
        ("span", "ignore"),
        ("var", "def"),
        ("value", "tree"),
        ("body", "tree"),
    ]
    assert all(isinstance(i, FieldInfo) for i in infos)
    kinds = {i.name: i.kind for i in object_fields(Var)}
    assert kinds == {"span": "ignore", "name": "ignore", "dtype": "tree"}
    assert {i.name: i.kind for i in object_fields(Func)} == {
        "params": "def",
        "body": "tree",
        "name": "ignore",
    }
    assert object_fields(Add)[1].annotation == "Expr"


def test_iter_fields_in_declaration_order():
    x, one = Var("x"), Const(1)
    let = Let(x, one, x, span=Span("a.py", 3))
    got = [(info.name, value) for info, value in let.iter_fields()]
    assert got == [("span", let.span), ("var", x), ("value", one), ("body", x)]


def test_var_flag():
    assert Var._is_var and not Add._is_var and not Object._is_var


def test_lists_are_stored_as_tuples():
    a, b = Const(1), Const(2)
    call = Call("max", [a, b])
    assert call.args == (a, b) and type(call.args) is tuple
    seq = Seq([a, b])
    assert type(seq.seq) is tuple
    nested = Const([[1, 2], (3, [4])])
    assert nested.value == ((1, 2), (3, (4,)))
    assert type(nested.value[1][1]) is tuple


def test_tuple_without_lists_is_kept_as_is():
    args = (Const(1), Const(2))
    assert Call("max", args).args is args


def test_with_fields_returns_self_when_unchanged():
    x = Var("x")
    add = Add(x, Const(1))
    assert add.with_fields() is add
    assert add.with_fields(a=x) is add
    assert add.with_fields(a=x, b=add.b) is add


def test_with_fields_copies_when_changed():
    x, y = Var("x"), Var("y")
    add = Add(x, Const(1), span=Span("f.py", 1))
    new = add.with_fields(a=y)
    assert new is not add and type(new) is Add
    assert new.a is y and new.b is add.b and new.span is add.span
    assert add.a is x  # the original is untouched
    call = Call("max", (x,))
    changed = call.with_fields(args=[x, y])
    assert changed.args == (x, y) and type(changed.args) is tuple


def test_with_fields_on_an_equal_but_not_identical_value_copies():
    call = Call("max", (Const(1),))
    assert call.with_fields(args=list(call.args)) is not call


def test_with_fields_unknown_field_names_it():
    with pytest.raises(TypeError, match=r"ffitest.Add has no field\(s\) \['c'\]"):
        Add(Const(1), Const(2)).with_fields(c=Const(3))


def test_equality_and_hash_are_identity():
    a, b = Const(1), Const(1)
    assert a == a and a != b
    assert a.same_as(a) and not a.same_as(b)
    assert len({a, b, a}) == 2


def test_copy_and_deepcopy_return_the_object():
    add = Add(Const(1), Const(2))
    assert copy.copy(add) is add
    assert copy.deepcopy(add) is add
    assert copy.deepcopy([add, add])[0] is add


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_raises_type_error(protocol):
    with pytest.raises(TypeError, match="not picklable; use tvm.ffi.to_json"):
        pickle.dumps(Add(Const(1), Const(2)), protocol=protocol)


def test_pickle_of_a_container_holding_an_object_raises():
    with pytest.raises(TypeError, match="ffitest.Var objects are not picklable"):
        pickle.dumps({"x": [Var("x")]})


def test_declaring_slots_is_rejected():
    with pytest.raises(TypeError, match="declare fields as annotations"):

        @register_object("ffitest.BadSlots")
        class BadSlots(Object):
            __slots__ = ("a",)


def test_duplicate_type_key_from_another_class_is_rejected():
    with pytest.raises(ValueError, match=r"'ffitest.Add' .* already registered by toy_ir.Add"):

        @register_object("ffitest.Add")
        class Add(Object):  # same name, other module: still a clash
            a: int

    assert get_object_type("ffitest.Add").__module__ == "toy_ir"


def test_redefining_the_same_class_replaces_it():
    def define():
        @register_object("ffitest.Reloaded")
        class Reloaded(Object):
            a: int

        return Reloaded

    first, second = define(), define()
    assert first is not second
    assert get_object_type("ffitest.Reloaded") is second


def test_subclass_of_registered_node_inherits_fields():
    @register_object("ffitest.NamedAdd")
    class NamedAdd(Add):
        label: str = ignore_field(default="")

    node = NamedAdd(Const(1), Const(2), label="sum")
    assert [i.name for i in object_fields(node)] == ["span", "a", "b", "label"]
    assert isinstance(node, Add) and node.type_key == "ffitest.NamedAdd"


def test_field_helpers_pass_dataclass_options():
    @register_object("ffitest.Options")
    class Options(Object):
        params: tuple = def_field(default=())
        note: str = ignore_field(default="n")

    node = Options()
    assert node.params == () and node.note == "n"
    assert [i.kind for i in object_fields(Options)] == ["def", "ignore"]


def test_generic_repr_names_type_and_fields():
    text = repr(Add(Var("x"), Const(1)))
    assert text.startswith("ffitest.Add(")
    assert "a=ffitest.Var(name='x', dtype='int32')" in text
    assert "b=ffitest.Const(value=1, dtype='int32')" in text
    assert "span=" not in text  # an unset ignored field is left out


def test_generic_repr_is_shortened_below_depth():
    deep = Add(Add(Add(Const(1), Const(2)), Const(3)), Const(4))
    assert "(...)" in generic_repr(deep, depth=2)
    assert "(...)" not in generic_repr(deep, depth=10)


def test_register_repr_applies_to_subclasses():
    @register_object()
    class Printed(Object):
        v: int

    @register_object("ffitest.PrintedChild")
    class PrintedChild(Printed):
        pass

    register_repr(Printed, lambda node: f"<printed {node.v}>")
    assert repr(PrintedChild(7)) == "<printed 7>"
