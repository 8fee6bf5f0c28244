"""A tvm-json document of a real IRModule whose fields are retyped does not load: the error
names the node type, the field and the JSON path (before, the module loaded and failed later
in the printer with an AttributeError)."""

from __future__ import annotations

import json

import pytest

from tvm import relax, tir  # noqa: F401 - registers the node types
from tvm.ffi import SerializationError, from_json, to_json
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Mod:
    @T.prim_func
    def scale(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
        for i in range(8):
            b[i] = a[i] * T.float32(2) + T.float32(1)

    @R.function
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        cls = Mod
        y = R.call_tir(cls.scale, (x,), out_sinfo=R.Tensor((8,), "float32"))
        return y


def _doc() -> dict:
    return json.loads(to_json(Mod))


def _first(doc: dict, type_key: str) -> tuple[int, dict]:
    return next((i, n) for i, n in enumerate(doc["nodes"]) if n["type"] == type_key)


def test_the_module_round_trips():
    loaded = from_json(to_json(Mod))
    assert "call_tir" in loaded.script()


@pytest.mark.parametrize("type_key,field,value,expected", [
    ("tir.Add", "a", "a[i] * 2", "must be a PrimExpr node"),
    ("tir.Mul", "b", 2, "must be a PrimExpr node"),
    ("tir.FloatImm", "value", "two", "must be a number"),
    ("tir.For", "loop_var", None, "must be a tir.Var node"),
    ("tir.For", "kind", 0, "must be a ForKind"),
    ("tir.BufferStore", "indices", "i", "must be a sequence"),
    ("relax.expr.Call", "args", 3, "must be a sequence"),
    ("tir.BufferLoad", "buffer", None, "must be a tir.Buffer node"),  # found by the fuzzer
])
def test_retyped_field_names_node_field_and_path(type_key, field, value, expected):
    doc = _doc()
    i, node = _first(doc, type_key)
    node["fields"][field] = value
    with pytest.raises(SerializationError) as info:
        from_json(json.dumps(doc))
    msg = str(info.value)
    assert msg.startswith(f"node {i} ({type_key}): field {field!r} {expected}"), msg
    assert msg.endswith(f"at JSON path $.nodes[{i}].fields.{field}")


def test_a_node_of_the_wrong_class_is_refused():
    doc = _doc()
    i, add = _first(doc, "tir.Add")
    j, _ = _first(doc, "tir.Buffer")
    if j > i:  # a node may only refer to nodes before it
        pytest.skip("the buffer is written after the first Add")
    add["fields"]["a"] = {"$ref": j}
    with pytest.raises(SerializationError, match=r"field 'a' must be a PrimExpr node .*got a "
                       r"tir.Buffer node"):
        from_json(json.dumps(doc))


@T.prim_func
def _blocked(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("b"):
            v = T.axis.spatial(8, i)
            b[v] = a[v] + T.float32(1)


@pytest.mark.parametrize("type_key,field,value", [
    ("tir.Block", "iter_vars", [1]),  # found by the fuzzer: loaded, then the printer failed
    ("tir.Block", "reads", ["a"]),
    ("tir.BlockRealize", "iter_values", [None]),
    ("tir.BufferStore", "indices", ["i"]),
    ("tir.PrimFunc", "params", [2.5]),
])
def test_a_retyped_item_of_a_sequence_field_is_refused(type_key, field, value):
    doc = json.loads(to_json(_blocked.with_attr("global_symbol", "blocked")))
    i, node = _first(doc, type_key)
    node["fields"][field] = value
    with pytest.raises(SerializationError, match=rf"node {i} \({type_key}\): field {field!r}"):
        from_json(json.dumps(doc))
