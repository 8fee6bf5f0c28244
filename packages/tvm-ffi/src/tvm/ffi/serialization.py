"""JSON serialisation of object graphs (no pickle anywhere).

The format is one JSON document::

    {"format": "tvm-json", "version": 1,
     "nodes": [{"type": "tir.Var", "fields": {...}}, ...],
     "root": <value>}

Nodes are listed children first, so loading builds each immutable node after the ones it
refers to.  Each field value is checked against the annotation its class declares the
field with (:mod:`.field_types`): a wrongly typed field is a :class:`SerializationError`
naming the node, the field and its JSON path, not a failure later in a printer or a pass.  A node referenced twice is written once and comes back as one node.  Values are
JSON scalars, arrays (sequences), ``{"$ref": i}`` (node ``i``), ``{"$dict": [[k, v], ...]}``,
``{"$float": "nan"|"inf"|"-inf"}``, ``{"$ndarray": {dtype, shape, data(base64)}}``,
``{"$scalar": {dtype, data(base64)}}`` (a numpy scalar) and ``{"$value": key, "data": ...}``
for value types registered with :func:`register_json_value`.  Array dtypes that numpy only
knows through ml_dtypes (bfloat16, float8_*) load once ml_dtypes is importable.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable
from typing import Any

from .error import SerializationError
from .field_types import FieldCheck, describe_value, field_checks
from .object import _TYPE_REGISTRY, Object, get_object_type
from .structural import deep_recursion

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
        self.where: list[str] = []  # "type_key.field" of the nodes being written, outermost first

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
        if _np is not None and isinstance(x, (_np.ndarray, _np.generic)):
            if x.dtype.hasobject or x.dtype.names is not None:
                self.fail(f"cannot serialise a numpy array of dtype {x.dtype}")
            data = base64.b64encode(_np.asarray(x, order="C").tobytes()).decode("ascii")
            if isinstance(x, _np.generic):
                return {"$scalar": {"dtype": str(x.dtype), "data": data}}
            return {"$ndarray": {"dtype": str(x.dtype), "shape": list(x.shape), "data": data}}
        for cls in type(x).__mro__:
            codec = _VALUE_ENCODERS.get(cls)
            if codec is not None:
                data = codec[1](x)
                try:
                    json.dumps(data)
                except (TypeError, ValueError) as err:
                    self.fail(f"the {codec[0]!r} encoder returned data JSON cannot hold: {err}")
                return {"$value": codec[0], "data": data}
        self.fail(
            f"cannot serialise a value of type {type(x).__module__}.{type(x).__qualname__}; "
            "register it with tvm.ffi.register_json_value"
        )

    def fail(self, message: str) -> Any:
        where = f" (at {' -> '.join(self.where)})" if self.where else ""
        raise SerializationError(message + where)

    def node(self, obj: Object) -> int:
        found = self.index.get(id(obj))
        if found is not None:
            return found
        registered = _TYPE_REGISTRY.get(obj._type_key)
        if registered is not type(obj):
            hint = (
                "use @register_object('key')"
                if registered is None
                else f"{obj._type_key!r} now names {registered.__module__}.{registered.__qualname__}"
            )
            self.fail(
                f"{type(obj).__module__}.{type(obj).__qualname__} is not registered under a "
                f"type key ({hint}) and cannot be serialised"
            )
        fields = {}
        for info, value in obj.iter_fields():
            self.where.append(f"{obj._type_key}.{info.name}")
            fields[info.name] = self.value(value)
            self.where.pop()
        self.index[id(obj)] = len(self.nodes)
        self.keep.append(obj)
        self.nodes.append({"type": obj._type_key, "fields": fields})
        return len(self.nodes) - 1


def to_json(obj: Any, indent: int | None = None) -> str:
    """Serialise an object graph (or any value built of objects, sequences and dicts)."""
    writer = _Writer()
    with deep_recursion():
        root = writer.value(obj)
    return json.dumps(
        {"format": FORMAT, "version": VERSION, "nodes": writer.nodes, "root": root},
        indent=indent,
    )


class _Reader:
    def __init__(self, nodes: list[Any]):
        self.raw = nodes
        self.built: list[Any] = []
        self.checks: dict[type, Any] = {}

    def build_all(self) -> None:
        for i, node in enumerate(self.raw):
            if not isinstance(node, dict) or not isinstance(node.get("type"), str):
                raise SerializationError(
                    f"node {i} is malformed: expected {{\"type\": str, \"fields\": {{...}}}}, "
                    f"got {_brief(node)}"
                )
            try:
                cls = get_object_type(node["type"])
            except KeyError as err:
                raise SerializationError(f"node {i}: {err.args[0]}") from None
            fields = node.get("fields")
            expected = {info.name for info in cls._field_infos}
            if not isinstance(fields, dict):
                raise SerializationError(
                    f"node {i} ({node['type']}): 'fields' must be an object with the fields "
                    f"{sorted(expected)}, got {_brief(fields)}"
                )
            if set(fields) != expected:
                missing, extra = sorted(expected - set(fields)), sorted(set(fields) - expected)
                raise SerializationError(
                    f"node {i} ({node['type']}): fields do not match the declaration: "
                    f"missing {missing}, unexpected {extra}; declared fields are {sorted(expected)}"
                )
            values = {
                info.name: self.value(fields[info.name], f"node {i} ({node['type']}.{info.name})")
                for info in cls._field_infos
            }
            checks = self.checks.get(cls)
            if checks is None:
                checks = self.checks[cls] = field_checks(cls)
            for name, check in checks:
                value = values[name]
                classes = check.classes
                if not (isinstance(value, classes) if classes is not None else check.test(value)):
                    raise _field_type_error(i, node["type"], name, check, value)
            custom = getattr(cls, "__from_json__", None)
            if custom is not None:
                obj = custom(values)
            else:
                # Bypass __init__: the stored fields are the node's complete, validated state.
                obj = cls.__new__(cls)
                for name, value in values.items():
                    object.__setattr__(obj, name, value)
            self.built.append(obj)

    def value(self, x: Any, at: str) -> Any:
        """Decode one value; ``at`` names where it sits (for error messages)."""
        if x is None or isinstance(x, (bool, str, int, float)):
            return x
        if isinstance(x, list):
            return tuple(self.value(v, at) for v in x)
        if isinstance(x, dict) and len(x) >= 1:
            if "$ref" in x:
                ref = x["$ref"]
                if type(ref) is not int or not 0 <= ref < len(self.built):
                    raise SerializationError(
                        f"{at}: dangling $ref {ref!r} (only nodes 0..{len(self.built) - 1} are "
                        "built before it; nodes must come after the nodes they refer to)"
                    )
                return self.built[ref]
            if "$dict" in x:
                return self.dict_value(x["$dict"], at)
            if "$float" in x:
                special = x["$float"]
                if special not in ("nan", "inf", "-inf"):
                    raise SerializationError(
                        f"{at}: bad $float {special!r}; expected 'nan', 'inf' or '-inf'"
                    )
                return float(special)
            if "$ndarray" in x or "$scalar" in x:
                return self.array_value(x, at)
            if "$value" in x:
                key = x["$value"]
                decode = _VALUE_DECODERS.get(key) if isinstance(key, str) else None
                if decode is None:
                    known = ", ".join(sorted(_VALUE_DECODERS)) or "none"
                    raise SerializationError(
                        f"{at}: unknown $value type {key!r} (registered: {known}); is the "
                        "package that registers it imported?"
                    )
                try:
                    return decode(x.get("data"))
                except Exception as err:  # a decoder's own error, reported with its place
                    raise SerializationError(f"{at}: cannot decode $value {key!r}: {err}") from err
        raise SerializationError(
            f"{at}: malformed value {_brief(x)}; expected a JSON scalar, an array or an object "
            "with one of $ref, $dict, $float, $ndarray, $scalar, $value"
        )

    def dict_value(self, items: Any, at: str) -> dict:
        if not isinstance(items, list) or not all(
            isinstance(kv, list) and len(kv) == 2 for kv in items
        ):
            raise SerializationError(f"{at}: $dict must be a list of [key, value] pairs")
        out = {}
        for k, v in items:
            key = self.value(k, at)
            value = self.value(v, f"{at}[{key!r}]")
            try:
                out[key] = value
            except TypeError:
                raise SerializationError(f"{at}: unhashable $dict key {_brief(k)}") from None
        return out

    def array_value(self, x: dict, at: str) -> Any:
        if _np is None:
            raise SerializationError(f"{at}: numpy is needed to load array payloads")
        scalar = "$scalar" in x
        spec = x["$scalar"] if scalar else x["$ndarray"]
        need = ("dtype", "data") if scalar else ("dtype", "shape", "data")
        if not isinstance(spec, dict) or any(k not in spec for k in need):
            raise SerializationError(f"{at}: array payload needs keys {list(need)}, got {_brief(spec)}")
        dtype = _numpy_dtype(spec["dtype"], at)
        try:
            data = base64.b64decode(spec["data"], validate=True)
            array = _np.frombuffer(data, dtype=dtype)
            if scalar:
                if array.size != 1:
                    raise ValueError(f"{array.size} elements for a scalar")
                return array[0]
            return array.reshape(spec["shape"]).copy()
        except (ValueError, TypeError, binascii.Error) as err:
            raise SerializationError(
                f"{at}: bad array payload of dtype {spec['dtype']}: {err}"
            ) from None


def _field_type_error(i: int, type_key: str, name: str, check: FieldCheck,
                      value: Any) -> SerializationError:
    sub, expected, bad = check.explain(value)
    return SerializationError(
        f"node {i} ({type_key}): field {name!r}{sub} must be {expected} (as declared by "
        f"{type_key}), got {describe_value(bad)}; at JSON path $.nodes[{i}].fields.{name}{sub}"
    )


def _numpy_dtype(name: Any, at: str) -> Any:
    """numpy's dtype named ``name``; bfloat16 and float8_* come from ml_dtypes."""
    if not isinstance(name, str):
        raise SerializationError(f"{at}: array dtype must be a string, got {name!r}")
    try:
        return _np.dtype(name)
    except TypeError:
        pass
    try:
        import ml_dtypes

        return _np.dtype(getattr(ml_dtypes, name))
    except (ImportError, AttributeError, TypeError):
        raise SerializationError(
            f"{at}: unknown array dtype {name!r} (bfloat16 and float8 types need ml_dtypes)"
        ) from None


def _brief(x: Any, limit: int = 80) -> str:
    text = json.dumps(x) if isinstance(x, (dict, list, str, int, float, bool, type(None))) else repr(x)
    return text if len(text) <= limit else text[:limit] + "..."


def from_json(text: str) -> Any:
    """Load what :func:`to_json` wrote; malformed input raises :class:`SerializationError`."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, TypeError) as err:
        raise SerializationError(f"not valid JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise SerializationError(f"not a {FORMAT} document: 'format' is {got!r}, expected {FORMAT!r}")
    if doc.get("version") != VERSION:
        raise SerializationError(
            f"unsupported {FORMAT} version {doc.get('version')!r}; this build reads {VERSION}"
        )
    nodes = doc.get("nodes")
    if not isinstance(nodes, list) or "root" not in doc:
        raise SerializationError("document lacks 'nodes' list or 'root'")
    reader = _Reader(nodes)
    with deep_recursion():
        reader.build_all()
        return reader.value(doc["root"], "root")
