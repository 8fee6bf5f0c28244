"""from_json checks every field value against the annotation its class declares: a wrongly
typed field is a SerializationError naming the node, its type, the field and the JSON path,
never a node that fails later (an AttributeError deep inside a printer)."""

from __future__ import annotations

import enum
import json
import typing
from typing import Any, Literal, Optional, Union

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toy_ir import build, free_pool, func_recipes
from tvm.ffi import Object, SerializationError, from_json, register_object, to_json
from tvm.ffi.field_types import field_checks
from tvm.ffi.serialization import register_json_value

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


register_json_value(Mode, "fttest.Mode", lambda m: m.value, Mode)


@register_object("fttest.Leaf")
class Leaf(Object):
    name: str


@register_object("fttest.Other")
class Other(Object):
    n: int


@register_object("fttest.Node")
class Node(Object):
    count: int
    scale: float
    flag: bool
    label: Optional[str]
    leaf: Leaf
    maybe_leaf: Optional[Leaf]
    either: Union[Leaf, int]
    mode: Mode
    kind: Literal["a", "b"]
    items: tuple[Leaf, ...]
    pair: tuple[int, str]
    names: list[str]
    table: dict[str, int]
    plain: tuple
    anything: Any
    newstyle: int | None = None


def _good() -> Node:
    return Node(count=3, scale=0.5, flag=True, label=None, leaf=Leaf("a"),
                maybe_leaf=Leaf("b"), either=4, mode=Mode.FAST, kind="a",
                items=(Leaf("c"), Leaf("d")), pair=(1, "x"), names=("p", "q"),
                table={"k": 1}, plain=(1, "two"), anything=object.__class__.__name__)


def _doc(value: Any) -> dict:
    return json.loads(to_json(value))


def _root_node(doc: dict) -> tuple[int, dict]:
    i = doc["root"]["$ref"]
    return i, doc["nodes"][i]




def _with_other_first(doc: dict) -> dict:
    """``doc`` with a fttest.Other node prepended (every $ref moved by one)."""

    def shift(x: Any) -> Any:
        if isinstance(x, dict):
            if set(x) == {"$ref"}:
                return {"$ref": x["$ref"] + 1}
            return {k: shift(v) for k, v in x.items()}
        if isinstance(x, list):
            return [shift(v) for v in x]
        return x

    nodes = [{"type": "fttest.Other", "fields": {"n": 1}}] + shift(doc["nodes"])
    return {**doc, "nodes": nodes, "root": shift(doc["root"])}


def test_the_good_document_loads():
    loaded = from_json(to_json(_good()))
    assert loaded.leaf.name == "a" and loaded.mode is Mode.FAST and loaded.pair == (1, "x")


OTHER = {"$ref": 0}  # the fttest.Other node of _with_other_first

BAD = [
    ("count", "3", "must be an int", "str '3'"),
    ("count", [3], "must be an int", "tuple (3,)"),
    ("count", None, "must be an int", "None"),
    ("scale", "0.5", "must be a number", "str '0.5'"),
    ("flag", "yes", "must be a bool", "str 'yes'"),
    ("label", 5, "must be a str or None", "int 5"),
    ("leaf", "a", "must be a fttest.Leaf node", "str 'a'"),
    ("leaf", OTHER, "must be a fttest.Leaf node", "a fttest.Other node"),
    ("leaf", None, "must be a fttest.Leaf node", "None"),
    ("maybe_leaf", OTHER, "must be a fttest.Leaf node or None", "a fttest.Other node"),
    ("either", "x", "must be a fttest.Leaf node or an int", "str 'x'"),
    ("mode", "fast", "must be a Mode", "str 'fast'"),
    ("kind", "c", "must be 'a' or 'b'", "str 'c'"),
    ("items", OTHER, "must be a sequence of a fttest.Leaf node", "a fttest.Other node"),
    ("plain", {"$dict": []}, "must be a sequence (JSON array)", "dict {}"),
    ("table", [], "must be a dict of a str to an int", "tuple ()"),
    ("newstyle", "1", "must be an int or None", "str '1'"),
]


@pytest.mark.parametrize("field,value,expected,got", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_wrongly_typed_field_is_named_with_its_json_path(field, value, expected, got):
    doc = _with_other_first(_doc(_good()))
    i, node = _root_node(doc)
    node["fields"][field] = value
    with pytest.raises(SerializationError) as info:
        from_json(json.dumps(doc))
    msg = str(info.value)
    assert msg.startswith(f"node {i} (fttest.Node): field {field!r} {expected} "
                          "(as declared by fttest.Node), got "), msg
    assert f"got {got};" in msg
    assert msg.endswith(f"at JSON path $.nodes[{i}].fields.{field}")


@pytest.mark.parametrize("field,value,sub,expected", [
    ("items", lambda ref: [ref(0), OTHER], "[1]", "a fttest.Leaf node"),
    ("pair", lambda ref: [1, 2], "[1]", "a str"),
    ("names", lambda ref: ["p", 3], "[1]", "a str"),
    ("table", lambda ref: {"$dict": [["k", "v"]]}, "['k']", "an int"),
    ("table", lambda ref: {"$dict": [[1, 2]]}, ".keys()[1]", "a str"),
])
def test_misfit_items_are_located_inside_the_field(field, value, sub, expected):
    doc = _with_other_first(_doc(_good()))
    i, node = _root_node(doc)
    node["fields"][field] = value(lambda k: {"$ref": k + 1})
    with pytest.raises(SerializationError) as info:
        from_json(json.dumps(doc))
    msg = str(info.value)
    assert f"field {field!r}{sub} must be {expected}" in msg
    assert msg.endswith(f"at JSON path $.nodes[{i}].fields.{field}{sub}")


def test_pair_of_wrong_length_is_reported_on_the_field():
    doc = _doc(_good())
    i, node = _root_node(doc)
    node["fields"]["pair"] = [1, "x", 2]
    with pytest.raises(SerializationError, match=r"field 'pair' must be a sequence of 2 "
                       r"\(an int, a str\)"):
        from_json(json.dumps(doc))


def test_any_and_bare_containers_accept_every_item():
    doc = _doc(_good())
    _, node = _root_node(doc)
    node["fields"]["anything"] = {"$dict": [[1, [2, 3]]]}
    node["fields"]["plain"] = [1, "x", None, [2.5]]
    loaded = from_json(json.dumps(doc))
    assert loaded.anything == {1: (2, 3)} and loaded.plain == (1, "x", None, (2.5,))


def test_numbers_follow_python_numeric_rules():
    doc = _doc(_good())
    _, node = _root_node(doc)
    node["fields"]["scale"] = 2  # an int is a fine float
    node["fields"]["count"] = {"$scalar": {"dtype": "int64", "data": "BQAAAAAAAAA="}}
    loaded = from_json(json.dumps(doc))
    assert loaded.scale == 2 and loaded.count == 5


def test_unresolvable_annotation_accepts_any_value():
    @register_object("fttest.Forward")
    class Forward(Object):
        ref: "NoSuchClassAnywhere"  # noqa: F821 - deliberately unresolvable
        size: int

    assert [name for name, _ in field_checks(Forward)] == ["size"]
    doc = _doc(Forward("whatever", 3))
    assert from_json(json.dumps(doc)).ref == "whatever"
    doc["nodes"][0]["fields"]["size"] = "3"
    with pytest.raises(SerializationError, match="field 'size' must be an int"):
        from_json(json.dumps(doc))


def test_checks_are_compiled_once_per_class():
    assert field_checks(Node) is field_checks(Node)
    assert "anything" not in dict(field_checks(Node))
    assert typing.get_type_hints(Node)["count"] is int


# ------------------------------------------------------------------ property: toy programs

# the JSON kind of each field of the toy IR, written out by hand (an oracle independent of
# the checker): "str", "int", "expr" (a $ref to an Expr), "exprs" (an array of them),
# "vars" (an array of Var refs), "var", "dict", "any"
TOY_FIELDS = {
    "ffitest.Span": {"file": "str", "line": "int"},
    "ffitest.Var": {"name": "str", "dtype": "str", "span": "span?"},
    "ffitest.Const": {"value": "any", "dtype": "str", "span": "span?"},
    "ffitest.Add": {"a": "expr", "b": "expr", "span": "span?"},
    "ffitest.Call": {"op": "str", "args": "exprs", "attrs": "dict", "span": "span?"},
    "ffitest.Let": {"var": "var", "value": "expr", "body": "expr", "span": "span?"},
    "ffitest.Seq": {"seq": "exprs", "span": "span?"},
    "ffitest.Func": {"params": "vars", "body": "expr", "name": "str?"},
}

# JSON values that the kind never admits
JUNK = {
    "str": [7, 2.5, [], ["x"], {"$dict": []}],
    "str?": [7, [], {"$dict": []}],
    "int": ["7", 2.5, [], None, {"$dict": []}],
    "expr": ["x", 3, [], None, {"$dict": []}, {"$float": "nan"}],
    "exprs": ["x", 3, None, ["x"], [3], {"$dict": []}],
    "vars": ["x", None, [1], ["v"]],
    "var": ["v", 1, None, []],
    "dict": [[], "x", 3, None],
    "span?": ["m.py", 4, [], {"$dict": []}],
}


@st.composite
def mutations(draw):
    prog = build(draw(func_recipes()), free_pool())
    doc = json.loads(to_json(prog))
    targets = [(i, name) for i, node in enumerate(doc["nodes"])
               for name, kind in TOY_FIELDS[node["type"]].items() if kind in JUNK]
    i, name = draw(st.sampled_from(targets))
    kind = TOY_FIELDS[doc["nodes"][i]["type"]][name]
    junk = draw(st.sampled_from(JUNK[kind]))
    return doc, i, name, junk


@PROPERTY
@given(mutations())
def test_any_wrongly_typed_field_of_a_program_is_named(case):
    doc, i, name, junk = case
    doc["nodes"][i]["fields"][name] = junk
    type_key = doc["nodes"][i]["type"]
    with pytest.raises(SerializationError) as info:  # never another exception type
        from_json(json.dumps(doc))
    msg = str(info.value)
    assert msg.startswith(f"node {i} ({type_key}): field {name!r}"), msg
    assert f"at JSON path $.nodes[{i}].fields.{name}" in msg
