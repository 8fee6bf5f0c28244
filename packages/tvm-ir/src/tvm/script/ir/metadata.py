"""The metadata section of printed TVMScript: values too large to print inline.

The printer refers to such a value as ``metadata["relax.expr.Constant"][3]`` and appends
the values, as :func:`tvm.ffi.to_json` text, in a comment block after the definition::

    # <metadata: values referenced as metadata[key][i] (tvm.ffi JSON)>
    # {"relax.expr.Constant":[...]}
    # </metadata>

Being a comment, the block leaves the script valid Python; the parsers (``@I.ir_module``,
``@R.function``, ``from_source``) read it back into the name ``metadata`` when the script
uses that name without defining it.

Printing for people (``mod.show()``, ``str(mod)``) leaves the block out by default: it holds
every weight of an imported model. In its place a one-line comment says what was left out
(``OMITTED``); ``show_meta=True`` prints it. A script printed that way does not parse back, and
the parsers say so.
"""

from __future__ import annotations

import json
import linecache
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from tvm.ffi import Object, from_json, to_json

__all__ = ["MetadataTable", "format_metadata", "extract_metadata", "env_with_metadata"]

BEGIN = "# <metadata: values referenced as metadata[key][i] (tvm.ffi JSON)>"
END = "# </metadata>"
OMITTED = "# <metadata omitted:"
_WIDTH = 96


class MetadataTable:
    """Values collected while printing, by kind (type key), each kept once."""

    def __init__(self) -> None:
        self.values: dict[str, list[Any]] = {}
        self._index: dict[int, tuple[str, int]] = {}

    def ref(self, value: Object) -> str:
        """``metadata["<type key>"][i]`` for ``value`` (added on first use)."""
        entry = self._index.get(id(value))
        if entry is None:
            key = value._type_key
            items = self.values.setdefault(key, [])
            items.append(value)
            entry = (key, len(items) - 1)
            self._index[id(value)] = entry
        return f'metadata["{entry[0]}"][{entry[1]}]'

    def __bool__(self) -> bool:
        return bool(self.values)

    def text(self, show_meta: bool = True) -> str:
        """The metadata block, or with ``show_meta=False`` the one-line note replacing it."""
        if not self.values:
            return ""
        if show_meta:
            return format_metadata(self.values)
        kinds = ", ".join(f"{len(v)} {k}" for k, v in self.values.items())
        return f"{OMITTED} {kinds}; print with show_meta=True to include it>\n"


def _chunks(text: str) -> list[str]:
    """Pieces of at most ``_WIDTH`` characters that neither start nor end with a space
    where avoidable (editors strip trailing spaces)."""
    out = []
    pos = 0
    while pos < len(text):
        end = min(pos + _WIDTH, len(text))
        while end < len(text) and end > pos + 1 and (text[end - 1] == " " or text[end] == " "):
            end -= 1
        out.append(text[pos:end])
        pos = end
    return out


def format_metadata(values: Mapping[str, Sequence[Any]]) -> str:
    """The comment block holding ``values`` (see the module docstring)."""
    compact = json.dumps(json.loads(to_json(dict(values))), separators=(",", ":"))
    lines = [BEGIN, *("# " + c for c in _chunks(compact)), END]
    return "\n".join(lines) + "\n"


def extract_metadata(text: str) -> Optional[dict[str, list[Any]]]:
    """The metadata values of a script text, or None if it has no metadata block."""
    start = text.find(BEGIN)
    if start < 0:
        return None
    body = []
    for line in text[start + len(BEGIN):].splitlines():
        line = line.strip()
        if not line:
            continue
        if line == END:
            break
        if not line.startswith("#"):
            raise ValueError("the metadata block is not terminated by '# </metadata>'")
        body.append(line[2:] if line.startswith("# ") else line[1:])
    values = from_json("".join(body))
    if not isinstance(values, dict):
        raise ValueError("the metadata block does not hold a mapping")
    return {k: list(v) for k, v in values.items()}


def env_with_metadata(source: Any, env: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``env`` with ``metadata`` from the script's metadata block (if the script has one and
    ``env`` does not define the name)."""
    env = list(env)
    if any("metadata" in m for m in env):
        return env
    text = source.text
    if BEGIN not in text and source.name and not source.name.startswith("<"):
        text = "".join(linecache.getlines(source.name))
    if BEGIN not in text:
        if OMITTED in text:
            raise source.error(
                "the script was printed without its metadata block (show_meta=False); print "
                "it with show_meta=True (mod.script() does) to parse it back"
            )
        return env
    try:
        values = extract_metadata(text)
    except Exception as err:  # noqa: BLE001 - reported as a script error
        raise source.error(f"cannot read the metadata block: {err}") from None
    return [{"metadata": values}, *env] if values is not None else env
