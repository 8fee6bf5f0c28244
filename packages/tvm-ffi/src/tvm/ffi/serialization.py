"""JSON serialisation of object graphs (no pickle anywhere).

The format is one JSON document::

    {"format": "tvm-json", "version": 1,
     "nodes": [{"type": "tir.Var", "fields": {...}}, ...],
     "root": <value>}

Nodes are listed children first, so loading builds each immutable node after the ones it
refers to.  A node referenced twice is written once and comes back as one node.  Values are
JSON scalars, arrays (sequences), ``{"$ref": i}`` (node ``i``), ``{"$dict": [[k, v], ...]}``,
``{"$float": "nan"|"inf"|"-inf"}``, ``{"$ndarray": {dtype, shape, data(base64)}}`` and
``{"$value": key, "data": ...}`` for value types registered with :func:`register_json_value`.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any, Callable

from .error import SerializationError
from .object import Object, get_object_type

try:
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None

__all__ = ["to_json", "from_json", "register_json_value", "SerializationError"]

FORMAT = "tvm-json"
VERSION = 1

# value-type codecs: class -> (key, encode); key -> decode
_VALUE_ENCODERS: dict[type, tuple[str, Callable[[Any], Any]]] = {}
_VALUE_DECODERS: dict[str, Callable[[Any], Any]] = {}


def register_json_value(
    cls: type, key: str, encode: Callable[[Any], Any], decode: Callable[[Any], Any]
) -> None:
    """Teach the serialiser a non-Object value type (an enum, a dtype, ...).

    ``encode`` maps an instance to JSON-able data, ``decode`` maps it back.
    """
    _VALUE_ENCODERS[cls] = (key, encode)
    _VALUE_DECODERS[key] = decode


class _Writer:
    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.index: dict[int, int] = {}
        self.keep: list[Any] = []

    def value(self, x: Any) -> Any:
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int) and type(x) is int:
            return x
        if isinstance(x, float) and type(x) is float:
            if math.isnan(x):
                return {"$float": "nan"}
            if math.isinf(x):
                return {"$float": "inf" if x > 0 else "-inf"}
            return x
        if isinstance(x, Object):
            return {"$ref": self.node(x)}
        if isinstance(x, (list, tuple)):
            return [self.value(v) for v in x]
        if isinstance(x, dict):
            return {"$dict": [[self.value(k), self.value(v)] for k, v in x.items()]}
        if _np is not None and isinstance(x, _np.ndarray):
            return {
                "$ndarray": {
                    "dtype": str(x.dtype),
                    "shape": list(x.shape),
                    "data": base64.b64encode(_np.ascontiguousarray(x).tobytes()).decode("ascii"),
                }
            }
        for cls in type(x).__mro__:
            codec = _VALUE_ENCODERS.get(cls)
            if codec is not None:
                return {"$value": codec[0], "data": codec[1](x)}
        raise SerializationError(
            f"cannot serialise a value of type {type(x).__module__}.{type(x).__qualname__}; "
            "register it with tvm.ffi.register_json_value"
        )

    def node(self, obj: Object) -> int:
        found = self.index.get(id(obj))
        if found is not None:
            return found
        if obj._type_key not in _registered_keys():
            raise SerializationError(
                f"{type(obj).__qualname__} has no registered type key and cannot be serialised"
            )
        fields = {info.name: self.value(value) for info, value in obj.iter_fields()}
        self.index[id(obj)] = len(self.nodes)
        self.keep.append(obj)
        self.nodes.append({"type": obj._type_key, "fields": fields})
        return len(self.nodes) - 1


def _registered_keys() -> dict[str, type]:
    from .object import _TYPE_REGISTRY

    return _TYPE_REGISTRY


def to_json(obj: Any, indent: int | None = None) -> str:
    """Serialise an object graph (or any value built of objects, sequences and dicts)."""
    writer = _Writer()
    root = writer.value(obj)
    return json.dumps(
        {"format": FORMAT, "version": VERSION, "nodes": writer.nodes, "root": root},
        indent=indent,
    )


class _Reader:
    def __init__(self, nodes: list[Any]):
        self.raw = nodes
        self.built: list[Any] = []

    def build_all(self) -> None:
        for i, node in enumerate(self.raw):
            if not isinstance(node, dict) or "type" not in node or "fields" not in node:
                raise SerializationError(f"node {i} is malformed: expected {{type, fields}}")
            try:
                cls = get_object_type(node["type"])
            except KeyError as err:
                raise SerializationError(f"node {i}: {err.args[0]}") from None
            fields = node["fields"]
            expected = {info.name for info in cls._field_infos}
            if not isinstance(fields, dict) or set(fields) != expected:
                got = sorted(fields) if isinstance(fields, dict) else fields
                raise SerializationError(
                    f"node {i} ({node['type']}): fields {got} do not match the declared "
                    f"fields {sorted(expected)}"
                )
            values = {info.name: self.value(fields[info.name], i) for info in cls._field_infos}
            custom = getattr(cls, "__from_json__", None)
            if custom is not None:
                obj = custom(values)
            else:
                # Bypass __init__: the stored fields are the node's complete, validated state.
                obj = cls.__new__(cls)
                for name, value in values.items():
                    object.__setattr__(obj, name, value)
            self.built.append(obj)

    def value(self, x: Any, at: int | str) -> Any:
        if x is None or isinstance(x, (bool, str, int, float)):
            return x
        if isinstance(x, list):
            return tuple(self.value(v, at) for v in x)
        if isinstance(x, dict) and len(x) >= 1:
            if "$ref" in x:
                ref = x["$ref"]
                if not isinstance(ref, int) or not 0 <= ref < len(self.built):
                    raise SerializationError(f"node {at}: dangling reference {ref!r}")
                return self.built[ref]
            if "$dict" in x:
                return {self.value(k, at): self.value(v, at) for k, v in x["$dict"]}
            if "$float" in x:
                return float(x["$float"])
            if "$ndarray" in x:
                if _np is None:
                    raise SerializationError("numpy is needed to load array payloads")
                spec = x["$ndarray"]
                data = base64.b64decode(spec["data"])
                return _np.frombuffer(data, dtype=_np.dtype(spec["dtype"])).reshape(spec["shape"]).copy()
            if "$value" in x:
                decode = _VALUE_DECODERS.get(x["$value"])
                if decode is None:
                    raise SerializationError(f"node {at}: unknown value type {x['$value']!r}")
                return decode(x["data"])
        raise SerializationError(f"node {at}: malformed value {str(x)[:80]!r}")


def from_json(text: str) -> Any:
    """Load what :func:`to_json` wrote; malformed input raises :class:`SerializationError`."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, TypeError) as err:
        raise SerializationError(f"not valid JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SerializationError(f"not a {FORMAT} document (missing or wrong 'format' key)")
    if doc.get("version") != VERSION:
        raise SerializationError(
            f"unsupported {FORMAT} version {doc.get('version')!r}; this build reads {VERSION}"
        )
    nodes = doc.get("nodes")
    if not isinstance(nodes, list) or "root" not in doc:
        raise SerializationError("document lacks 'nodes' list or 'root'")
    reader = _Reader(nodes)
    reader.build_all()
    return reader.value(doc["root"], "root")
