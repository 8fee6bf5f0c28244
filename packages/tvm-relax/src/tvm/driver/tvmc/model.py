"""Reading the models ``tvmc`` takes: which frontend a file needs, and the
``--input-shapes`` / ``--input-dtypes`` syntax.

A format is recognised by the file's suffix, and for a file without a known suffix by its
first bytes. The ONNX frontend (``tvm.relax.frontend.onnx``) is the one installed today; a
PyTorch ``.pt2`` or a ``.tflite`` file gets an error saying so rather than a parse failure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional, Union

from tvm.ir.module import IRModule

__all__ = ["ModelError", "OptionError", "FORMATS", "detect_format", "parse_input_shapes",
           "parse_input_dtypes", "load_model"]


class ModelError(ValueError):
    """A model file that does not exist or cannot be read."""


class OptionError(ValueError):
    """A command-line option whose value does not parse (``--input-shapes`` ...)."""


#: suffix -> (format name, frontend module or None when no frontend exists yet)
FORMATS: dict[str, tuple[str, Optional[str]]] = {
    ".onnx": ("onnx", "tvm.relax.frontend.onnx"),
    ".pt2": ("pytorch", None),
    ".tflite": ("tflite", None),
}

_DIM = re.compile(r"^(-?\d+|\?|[A-Za-z_][A-Za-z0-9_]*)$")
Shape = list[Union[int, str, None]]


def detect_format(path: Path) -> str:
    """``"onnx"``, ``"pytorch"`` or ``"tflite"`` for ``path`` (by suffix, else content)."""
    entry = FORMATS.get(path.suffix.lower())
    if entry is not None:
        return entry[0]
    with open(path, "rb") as f:
        head = f.read(8)
    if head[4:8] == b"TFL3":
        return "tflite"
    if head[:2] == b"PK":
        return "pytorch"  # torch.export writes a zip archive
    if head[:1] == b"\x08":  # protobuf field 1 (ir_version), varint: an ONNX ModelProto
        return "onnx"
    known = ", ".join(FORMATS)
    raise ModelError(f"{path}: cannot tell the model format (known suffixes: {known})")


def parse_input_shapes(text: Optional[str]) -> dict[str, Shape]:
    """``"x:[1,3,224,224] mask:[1,?]"`` -> ``{"x": [1, 3, 224, 224], "mask": [1, None]}``.

    Entries are separated by spaces (or ``;``); a dimension is an int, ``?`` (a dimension of
    its own) or a name (a symbolic dimension: equal names are the same variable).
    """
    shapes: dict[str, Shape] = {}
    if not text:
        return shapes
    for entry in re.split(r"[;\s]+(?![^\[]*\])", text.strip()):
        if not entry:
            continue
        name, sep, dims = entry.rpartition(":")
        dims = dims.strip()
        if not sep or not name or not (dims.startswith("[") and dims.endswith("]")):
            raise OptionError(
                f"--input-shapes: {entry!r} is not NAME:[d0,d1,...] (for example "
                "'input:[1,3,224,224]')"
            )
        shape: Shape = []
        for d in filter(None, (p.strip() for p in dims[1:-1].split(","))):
            if not _DIM.match(d):
                raise OptionError(f"--input-shapes: {name}: {d!r} is not an int, '?' or a name")
            if d == "?":
                shape.append(None)
            elif d.lstrip("-").isdigit():
                if int(d) < 0:
                    raise OptionError(f"--input-shapes: {name}: negative dimension {d}")
                shape.append(int(d))
            else:
                shape.append(d)
        if name in shapes:
            raise OptionError(f"--input-shapes: {name!r} is given twice")
        shapes[name] = shape
    return shapes


def parse_input_dtypes(text: Optional[str]) -> Union[None, str, dict[str, str]]:
    """``"float16"`` (every input) or ``"x:float16 ids:int64"`` (per input)."""
    if not text:
        return None
    if ":" not in text:
        return text.strip()
    dtypes: dict[str, str] = {}
    for entry in text.split():
        name, sep, dtype = entry.rpartition(":")
        if not sep or not name or not dtype:
            raise OptionError(f"--input-dtypes: {entry!r} is not NAME:DTYPE")
        dtypes[name] = dtype
    return dtypes


def load_model(path: Union[str, Path], input_shapes: Optional[dict[str, Shape]] = None,
               input_dtypes: Union[None, str, dict[str, str]] = None) -> IRModule:
    """Import the model file at ``path`` as a Relax IRModule (weights as constants)."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: no such model file")
    fmt = detect_format(path)
    if fmt != "onnx":
        raise ModelError(
            f"{path}: {fmt} models need the {fmt} frontend, which is not part of this "
            "release yet; export the model to ONNX (torch.onnx.export, tf2onnx) and pass that"
        )
    try:
        import onnx
    except ImportError:
        raise ModelError(
            f"{path}: reading ONNX models needs the onnx package: pip install 'tvm-relax[onnx]'"
        ) from None
    from tvm.relax.frontend.onnx import from_onnx

    try:
        model = onnx.load(str(path))
    except Exception as err:  # noqa: BLE001 - a corrupt file is the user's error, reported
        raise ModelError(f"{path}: not a readable ONNX model ({type(err).__name__}: {err})") \
            from err
    if input_shapes:
        known = {i.name for i in model.graph.input}
        unknown = sorted(set(input_shapes) - known)
        if unknown:
            raise OptionError(
                f"--input-shapes names {', '.join(unknown)}, which the model does not have; "
                f"its inputs are {', '.join(sorted(known)) or 'none'}"
            )
    return from_onnx(model, shape_dict=input_shapes or None, dtype_dict=input_dtypes)
