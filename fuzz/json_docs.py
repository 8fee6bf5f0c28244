"""Mutated tvm-json documents against ``tvm.ffi.from_json``.

A case is the JSON text of a real module (those of :mod:`fuzz.tvmscript`, serialized with
``to_json``) with fields retyped or set to odd values, keys deleted, node types renamed,
references pointed elsewhere (forward, backward, out of range), nodes dropped or
duplicated, the header changed, or the text truncated or a byte flipped.  Oracle:
``from_json`` raises ``SerializationError``, or returns an object that prints (a module's
``script()``) and round-trips: ``from_json(to_json(obj))`` is structurally equal to it.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from hypothesis import strategies as st

from fuzz.common import Failure, describe

#: values a mutation may put in a field
VALUES: list[Any] = [None, 0, -1, 1, 2 ** 63, -(2 ** 64), 1.5, float("nan"), True, "", "x",
                     "float32", "int64", "bogus", [], [1], [{"$ref": 0}], {}, {"$ref": 0},
                     {"$ref": -1}, {"$ref": 10 ** 9}, {"$ref": "0"}, {"$ref": None},
                     {"type": "tir.IntImm", "fields": {}}, {"$ref": 0, "x": 1}]


@functools.lru_cache(maxsize=None)
def base_docs() -> dict[str, str]:
    """tvm-json texts of the base modules."""
    from tvm.ffi import to_json
    from tvm.script import ir as I

    from fuzz.tvmscript import base_scripts

    return {name: to_json(I.parse(text)) for name, text in base_scripts().items()}


def _fields(doc: dict[str, Any]) -> list[tuple[int, str]]:
    return [(i, f) for i, n in enumerate(doc.get("nodes", []))
            if isinstance(n, dict) and isinstance(n.get("fields"), dict) for f in n["fields"]]


def _mutate(doc: dict[str, Any], m: list[Any]) -> None:
    kind = m[0]
    nodes = doc.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return
    fields = _fields(doc)
    if kind in ("set", "drop_field", "ref") and fields:
        i, f = fields[m[1] % len(fields)]
        if kind == "set":
            nodes[i]["fields"][f] = copy.deepcopy(VALUES[m[2] % len(VALUES)])
        elif kind == "drop_field":
            del nodes[i]["fields"][f]
        else:
            nodes[i]["fields"][f] = {"$ref": m[2] % (len(nodes) + 2) - 1}
    elif kind == "tweak" and fields:  # a value of the same JSON type: passes the type checks
        i, f = fields[m[1] % len(fields)]
        value = nodes[i]["fields"][f]
        if isinstance(value, bool):
            nodes[i]["fields"][f] = not value
        elif isinstance(value, int):
            nodes[i]["fields"][f] = [-1, 0, 1, 3, 2 ** 31, -(2 ** 63), 2 ** 64][m[2] % 7]
        elif isinstance(value, str):
            nodes[i]["fields"][f] = ["", "x", "float16", "int8", "bool", "handle", "int64x4",
                                     "bogus", "main", "\u0000"][m[2] % 10]
        elif isinstance(value, list) and value:
            k = m[2] % len(value)
            if m[2] % 2:
                del value[k]
            else:
                value.insert(k, copy.deepcopy(value[k]))
    elif kind == "retype":
        types = sorted({n.get("type") for n in nodes if isinstance(n, dict)}, key=str)
        nodes[m[1] % len(nodes)]["type"] = (types + ["no.such.Type", ""])[m[2] % (len(types) + 2)]
    elif kind == "drop_node":
        del nodes[m[1] % len(nodes)]
    elif kind == "dup_node":
        k = m[1] % len(nodes)
        nodes.insert(m[2] % (len(nodes) + 1), copy.deepcopy(nodes[k]))
    elif kind == "root":
        doc["root"] = VALUES[m[1] % len(VALUES)] if m[2] % 2 else m[1] % (len(nodes) + 2) - 1
    elif kind == "header":
        key = ["format", "version", "nodes", "root"][m[1] % 4]
        doc[key] = copy.deepcopy(VALUES[m[2] % len(VALUES)])


def _mutation() -> st.SearchStrategy[list[Any]]:
    n = st.integers(0, 10 ** 6)
    return st.tuples(st.sampled_from(["set", "tweak", "tweak", "drop_field", "ref", "retype",
                                      "drop_node", "dup_node", "root", "header"]),
                     n, n).map(list)


def _build(parts: tuple[str, list[list[Any]], list[int]]) -> dict[str, Any]:
    base, mutations, raw = parts
    doc = json.loads(base_docs()[base])
    for m in mutations:
        _mutate(doc, m)
    text = json.dumps(doc)
    if raw:
        data = bytearray(text.encode())
        at = raw[0] % max(len(data), 1)
        if raw[1] % 2:
            del data[at:]
        elif data:
            data[at] ^= 1 << (raw[2] % 8)
        text = data.decode("utf-8", "replace")
    return {"base": base, "doc": text}


def cases() -> st.SearchStrategy[dict[str, Any]]:
    """Mutated documents; the case holds the whole text."""
    raw = st.one_of(st.just([]), st.lists(st.integers(0, 10 ** 6), min_size=3, max_size=3))
    return st.tuples(st.sampled_from(sorted(base_docs())),
                     st.lists(_mutation(), min_size=1, max_size=3), raw).map(_build)


def check(case: dict[str, Any]) -> str:
    """Load the document; SerializationError or a module that prints and round-trips."""
    from tvm.ffi import SerializationError, assert_structural_equal, from_json, to_json

    try:
        obj = from_json(case["doc"])
    except SerializationError:
        return "refused (SerializationError)"
    except Exception as err:  # noqa: BLE001 - classified
        raise Failure("unexpected-exception", f"from_json raised {describe(err)}") from err
    try:
        if hasattr(obj, "script"):
            obj.script()
        again = from_json(to_json(obj))
        assert_structural_equal(again, obj, map_free_vars=True)  # a free var has no identity in a file
    except Exception as err:  # noqa: BLE001 - a loaded object must print and round-trip
        raise Failure("round-trip", f"loaded a {type(obj).__name__}, but print / to_json -> "
                      f"from_json -> equal failed: {describe(err)}") from err
    return f"loaded a {type(obj).__name__}"
