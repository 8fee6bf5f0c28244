"""JSON serialisation: round trips, sharing, payloads, and clear errors for bad documents."""

from __future__ import annotations

import enum
import json
import math
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import tvm.ffi
from hypothesis import HealthCheck, given, settings
from toy_ir import (
    Add,
    Call,
    Const,
    Expr,
    Func,
    Let,
    Seq,
    Span,
    Tensor,
    Var,
    build,
    free_pool,
    func_recipes,
    uses_free,
)
from tvm.ffi import (
    Object,
    SerializationError,
    TVMError,
    from_json,
    register_json_value,
    register_object,
    structural_equal,
    structural_hash,
    to_json,
)

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def roundtrip(value):
    return from_json(to_json(value))


def sample_program():
    x, y = Var("x"), Var("y")
    return Func(
        [x],
        Seq([Const(1), Let(y, Add(x, Const(2), span=Span("m.py", 4)), Call("max", [x, y], {"axis": 1}))]),
        name="main",
    )


def walk_vars(a, b, pairs):
    """Collect (original var, loaded var) pairs by walking both graphs in step."""
    if isinstance(a, Object):
        if a._is_var:
            pairs.append((a, b))
        for info, value in a.iter_fields():
            walk_vars(value, getattr(b, info.name), pairs)
    elif isinstance(a, (list, tuple)):
        for x, y in zip(a, b):
            walk_vars(x, y, pairs)
    elif isinstance(a, dict):
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            walk_vars(ka, kb, pairs)
            walk_vars(va, vb, pairs)
    return pairs


def assert_sharing_kept(original, loaded):
    """Each original variable maps to exactly one loaded variable, and back."""
    pairs = walk_vars(original, loaded, [])
    forward, backward = {}, {}
    for a, b in pairs:
        assert forward.setdefault(id(a), b) is b
        assert backward.setdefault(id(b), a) is a


# ---------------------------------------------------------------------------------------
# Round trips


def test_program_round_trips():
    prog = sample_program()
    text = to_json(prog)
    loaded = from_json(text)
    assert loaded is not prog and type(loaded) is Func
    assert structural_equal(loaded, prog)
    assert structural_hash(loaded) == structural_hash(prog)
    # ignored fields are still saved
    assert loaded.name == "main" and loaded.params[0].name == "x"
    let = loaded.body.seq[1]
    assert let.value.span.file == "m.py" and let.value.span.line == 4
    assert to_json(loaded) == text  # stable: loading and saving again gives the same text


def test_document_shape():
    doc = json.loads(to_json(Add(Const(1), Const(2))))
    assert doc["format"] == "tvm-json" and doc["version"] == 1
    assert [n["type"] for n in doc["nodes"]] == ["ffitest.Const", "ffitest.Const", "ffitest.Add"]
    assert doc["root"] == {"$ref": 2}
    assert "\n" in to_json(Const(1), indent=2)


def test_sharing_is_kept():
    x = Var("x")
    shared = Add(x, Const(1))
    prog = Func([x], Seq([shared, shared, Let(Var("y"), shared, shared)]))
    text = to_json(prog)
    assert sum(n["type"] == "ffitest.Add" for n in json.loads(text)["nodes"]) == 1
    loaded = from_json(text)
    items = loaded.body.seq
    assert items[0] is items[1] is items[2].value is items[2].body
    assert loaded.params[0] is items[0].a
    assert_sharing_kept(prog, loaded)


def test_free_variables_need_map_free_vars():
    g = Var("g")
    prog = Add(g, g)
    loaded = roundtrip(prog)
    assert loaded.a is loaded.b and loaded.a is not g
    assert not structural_equal(loaded, prog)
    assert structural_equal(loaded, prog, map_free_vars=True)
    assert structural_hash(loaded, map_free_vars=True) == structural_hash(prog, map_free_vars=True)


NUMPY_DTYPES = [
    "float32",
    "float64",
    "float16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    ">f4",
    ml_dtypes.bfloat16,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e5m2fnuz,
    ml_dtypes.float8_e8m0fnu,
    ml_dtypes.float4_e2m1fn,
    ml_dtypes.int4,
    ml_dtypes.uint2,
]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4), (5,)], ids=str)
def test_numpy_payloads_round_trip(dtype, shape):
    rng = np.random.default_rng(0)
    data = np.asarray(rng.standard_normal(shape) * 10).astype(dtype)
    loaded = roundtrip(Tensor(data)).data
    assert type(loaded) is np.ndarray
    assert loaded.dtype == data.dtype and loaded.shape == data.shape
    assert loaded.tobytes() == data.tobytes()
    assert loaded.flags.writeable  # an owned copy, not a view of the decoded bytes


def test_non_contiguous_arrays_round_trip():
    data = np.arange(12, dtype="int32").reshape(3, 4).T[::2]
    loaded = roundtrip(Tensor(data)).data
    assert np.array_equal(loaded, data) and loaded.shape == data.shape


def test_special_floats_in_arrays_round_trip():
    data = np.array([np.nan, np.inf, -np.inf, -0.0], dtype="float32")
    loaded = roundtrip(Tensor(data)).data
    assert loaded.tobytes() == data.tobytes()


def test_bfloat16_loads_in_a_fresh_process_without_importing_ml_dtypes():
    text = to_json(Tensor(np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)))
    src = Path(tvm.ffi.__file__).resolve().parents[2]  # the folder holding tvm/ffi
    script = (
        "import sys, json\n"
        "from tvm.ffi.serialization import _Reader\n"
        "doc = json.loads(sys.stdin.read())\n"
        "node = doc['nodes'][0]['fields']['data']\n"
        "arr = _Reader([]).value(node, 'test')\n"
        "print(arr.dtype, arr.astype('float32').tolist())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=text,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": ""},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["bfloat16", "[1.5,", "-2.0]"]


@pytest.mark.parametrize(
    "value", [np.float32(1.5), np.int64(-3), np.bool_(True), np.uint8(200), ml_dtypes.bfloat16(2.5)]
)
def test_numpy_scalars_round_trip(value):
    loaded = roundtrip(Const(value)).value
    assert type(loaded) is type(value) and loaded == value


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, -0.0, 1e-300, 0.1, 1.0, 2**80, -1, True, None, "s"]
)
def test_scalars_round_trip(value):
    loaded = roundtrip(Const(value)).value
    assert type(loaded) is type(value)
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(loaded)
    else:
        assert loaded == value
        if isinstance(value, float):
            assert math.copysign(1, loaded) == math.copysign(1, value)


def test_dict_fields_with_string_and_object_keys():
    x, y = Var("x"), Var("y")
    attrs = {"axis": 1, "pad": [0, 1], "nested": {"k": Const(2)}, x: Const(3), 7: "seven", None: y}
    prog = Func([x, y], Call("f", [x, y], attrs))
    loaded = roundtrip(prog)
    got = loaded.body.attrs
    assert list(got)[:3] == ["axis", "pad", "nested"]
    assert got["axis"] == 1 and got["pad"] == (0, 1) and got["nested"]["k"].value == 2
    lx, ly = loaded.params
    assert got[lx].value == 3 and got[7] == "seven" and got[None] is ly
    assert structural_equal(loaded, prog)


def test_nested_lists_come_back_as_tuples():
    value = [[1, [2, 3]], [], [Const(4), [Const(5)]]]
    loaded = roundtrip(value)
    assert loaded[0] == (1, (2, 3)) and loaded[1] == ()
    assert type(loaded[2][1]) is tuple and loaded[2][1][0].value == 5
    assert structural_equal(loaded, value)


@pytest.mark.parametrize("value", [None, 3, "text", [1, 2.5], {"a": [1]}, {}])
def test_plain_roots_round_trip(value):
    loaded = roundtrip(value)
    assert structural_equal(loaded, value)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


register_json_value(Color, "ffitest.Color", lambda c: c.value, Color)


def test_registered_value_types_round_trip():
    loaded = roundtrip(Const(Color.BLUE))
    assert loaded.value is Color.BLUE
    assert '{"$value": "ffitest.Color", "data": "blue"}' in to_json(Const(Color.BLUE))


@PROPERTY
@given(func_recipes())
def test_random_programs_round_trip(recipe):
    prog = build(recipe, free_pool())
    text = to_json(prog)
    loaded = from_json(text)
    has_free = uses_free(recipe)
    assert structural_equal(loaded, prog) == (not has_free)
    assert structural_equal(loaded, prog, map_free_vars=True)
    assert structural_hash(loaded, map_free_vars=True) == structural_hash(prog, map_free_vars=True)
    if not has_free:
        assert structural_hash(loaded) == structural_hash(prog)
    assert_sharing_kept(prog, loaded)
    assert to_json(loaded) == text


# ---------------------------------------------------------------------------------------
# Errors while writing


def test_unserialisable_value_names_where_it_is():
    prog = Func([], Seq([Const(1), Const(object())]))
    with pytest.raises(SerializationError) as info:
        to_json(prog)
    text = str(info.value)
    assert "cannot serialise a value of type builtins.object" in text
    assert "register it with tvm.ffi.register_json_value" in text
    assert "(at ffitest.Func.body -> ffitest.Seq.seq -> ffitest.Const.value)" in text


def test_object_arrays_are_refused():
    with pytest.raises(SerializationError, match="numpy array of dtype object"):
        to_json(Tensor(np.array([1, "a"], dtype=object)))


def test_unregistered_classes_are_refused():
    @register_object()
    class Draft(Expr):
        a: int

    with pytest.raises(SerializationError, match=r"Draft is not registered under a type key"):
        to_json(Draft(1))


def test_instances_of_a_replaced_class_are_refused():
    def define():
        @register_object("ffitest.Redefined")
        class Redefined(Object):
            a: int

        return Redefined

    old = define()(1)
    new_cls = define()
    assert roundtrip(new_cls(2)).a == 2
    with pytest.raises(SerializationError, match="'ffitest.Redefined' now names"):
        to_json(old)


class Opaque:
    pass


register_json_value(Opaque, "ffitest.Opaque", lambda o: o, lambda d: Opaque())


def test_encoder_returning_non_json_data_is_reported():
    with pytest.raises(SerializationError, match="'ffitest.Opaque' encoder returned data JSON cannot hold"):
        to_json(Const(Opaque()))


def test_pickle_is_not_a_way_out():
    import pickle

    with pytest.raises(TypeError, match="use tvm.ffi.to_json"):
        pickle.dumps(sample_program())


# ---------------------------------------------------------------------------------------
# Errors while reading


def doc_of(value):
    return json.loads(to_json(value))


def load(doc):
    return from_json(json.dumps(doc))


def expect_error(doc_or_text, *fragments):
    text = doc_or_text if isinstance(doc_or_text, str) else json.dumps(doc_or_text)
    with pytest.raises(SerializationError) as info:
        from_json(text)
    err = info.value
    assert isinstance(err, TVMError) and isinstance(err, ValueError)
    for fragment in fragments:
        assert fragment in str(err), str(err)
    return err


@pytest.mark.parametrize("text", ["{", "", "not json", '{"format": "tvm-json",}'])
def test_malformed_json_text(text):
    expect_error(text, "not valid JSON")


def test_non_text_input():
    with pytest.raises(SerializationError, match="not valid JSON"):
        from_json(None)  # type: ignore[arg-type]


def test_wrong_format():
    doc = doc_of(Const(1))
    doc["format"] = "onnx"
    expect_error(doc, "not a tvm-json document", "'onnx'")
    del doc["format"]
    expect_error(doc, "not a tvm-json document", "None")
    expect_error("[1, 2]", "not a tvm-json document", "'list'")


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_wrong_version(version):
    doc = doc_of(Const(1))
    doc["version"] = version
    expect_error(doc, "unsupported tvm-json version", repr(version), "reads 1")


def test_missing_nodes_or_root():
    doc = doc_of(Const(1))
    del doc["root"]
    expect_error(doc, "lacks 'nodes' list or 'root'")
    doc = doc_of(Const(1))
    doc["nodes"] = {}
    expect_error(doc, "lacks 'nodes' list or 'root'")


def test_unknown_type_key_is_named():
    doc = doc_of(Add(Const(1), Const(2)))
    doc["nodes"][2]["type"] = "ffitest.Addd"
    err = expect_error(doc, "node 2", "unknown object type key 'ffitest.Addd'", "did you mean ffitest.Add")
    assert "is the package that defines it installed" in str(err)


@pytest.mark.parametrize("node", [[1], "x", {"fields": {}}, {"type": 3, "fields": {}}])
def test_malformed_node(node):
    doc = doc_of(Const(1))
    doc["nodes"][0] = node
    expect_error(doc, "node 0 is malformed")


def test_wrong_field_set():
    doc = doc_of(Add(Const(1), Const(2)))
    fields = doc["nodes"][2]["fields"]
    fields["c"] = fields.pop("b")
    expect_error(
        doc,
        "node 2 (ffitest.Add): fields do not match",
        "missing ['b']",
        "unexpected ['c']",
        "declared fields are ['a', 'b', 'span']",
    )
    doc["nodes"][2]["fields"] = [1, 2]
    expect_error(doc, "node 2 (ffitest.Add): 'fields' must be an object")


@pytest.mark.parametrize("ref", [5, -1, 2, True, "0", None])
def test_dangling_ref(ref):
    doc = doc_of(Add(Const(1), Const(2)))
    doc["nodes"][2]["fields"]["a"] = {"$ref": ref}
    expect_error(doc, "node 2 (ffitest.Add.a): dangling $ref")


def test_forward_ref_explains_the_order():
    doc = doc_of(Add(Const(1), Const(2)))
    doc["nodes"][0]["fields"]["value"] = {"$ref": 1}
    expect_error(doc, "node 0 (ffitest.Const.value): dangling $ref 1", "must come after")


def test_dangling_ref_at_root():
    doc = doc_of(Const(1))
    doc["root"] = {"$ref": 1}
    expect_error(doc, "root: dangling $ref 1")


def test_unknown_value_type():
    doc = doc_of(Const(1))
    doc["nodes"][0]["fields"]["value"] = {"$value": "ffitest.Nope", "data": 1}
    expect_error(doc, "node 0 (ffitest.Const.value): unknown $value type 'ffitest.Nope'", "ffitest.Color")


def test_value_decoder_failure_is_wrapped():
    doc = doc_of(Const(Color.RED))
    doc["nodes"][0]["fields"]["value"]["data"] = "green"
    err = expect_error(doc, "cannot decode $value 'ffitest.Color'", "'green' is not a valid Color")
    assert isinstance(err.__cause__, ValueError)


@pytest.mark.parametrize(
    "value, fragment",
    [
        ({"$float": "nope"}, "bad $float 'nope'"),
        ({"$float": 1.5}, "bad $float 1.5"),
        ({"what": 1}, "malformed value"),
        ({}, "malformed value"),
        ({"$dict": {"a": 1}}, "$dict must be a list of [key, value] pairs"),
        ({"$dict": [[1, 2, 3]]}, "$dict must be a list of [key, value] pairs"),
        ({"$dict": [[{"$ndarray": {"dtype": "int8", "shape": [1], "data": "AQ=="}}, 1]]}, "unhashable $dict key"),
        ({"$ndarray": {"dtype": "int8", "data": "AQ=="}}, "array payload needs keys ['dtype', 'shape', 'data']"),
        ({"$ndarray": {"dtype": "int32", "shape": [2], "data": "AQ=="}}, "bad array payload of dtype int32"),
        ({"$ndarray": {"dtype": "int8", "shape": [1], "data": "!!"}}, "bad array payload of dtype int8"),
        ({"$ndarray": {"dtype": "float3", "shape": [1], "data": "AQ=="}}, "unknown array dtype 'float3'"),
        ({"$ndarray": {"dtype": 4, "shape": [1], "data": "AQ=="}}, "array dtype must be a string"),
        ({"$scalar": {"dtype": "int8", "data": "AQI="}}, "2 elements for a scalar"),
    ],
)
def test_malformed_values(value, fragment):
    doc = doc_of(Const(1))
    doc["nodes"][0]["fields"]["value"] = value
    expect_error(doc, "node 0 (ffitest.Const.value)", fragment)


def test_every_reader_error_is_a_serialization_error():
    """Fuzz a valid document by replacing one value at a time with junk."""
    base = doc_of(sample_program())
    junk = [None, 1, "x", [], {}, {"$ref": 99}, {"$dict": 1}, {"$ndarray": 1}, {"$float": None}]
    for i, node in enumerate(base["nodes"]):
        for name in node["fields"]:
            for value in junk:
                doc = json.loads(json.dumps(base))
                doc["nodes"][i]["fields"][name] = value
                try:
                    load(doc)
                except SerializationError:
                    pass
