"""The README's debug-knob tables list exactly the declared knobs (``tvm.ffi.knobs``) and the
registered PassContext config options, with their declared type, default and doc, so they
cannot go stale; and no package reads ``os.environ`` around the knob home."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _default(value: Any) -> str:
    if value is None or value == frozenset():
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"`{value}`"


def knob_rows() -> list[str]:
    from tvm.ffi.knobs import list_knobs

    return [f"| `{k.name}` | {k.kind} | {_default(k.default)} | {k.package} | {k.doc} |"
            for k in list_knobs().values()]


def option_rows() -> list[str]:
    # the config options are registered by the packages that read them: import them all
    for module in ("tvm.ir", "tvm.tir", "tvm.tir.transform", "tvm.relax", "tvm.relax.transform"):
        try:
            importlib.import_module(module)
        except ImportError:
            pytest.skip(f"{module} is not installed")
    from tvm.ir.transform import list_config_options

    return [f"| `{o.key}` | {o.type.__name__} | {_default(o.default)} | {o.doc} |"
            for o in list_config_options().values()]


def _table_after(text: str, heading: str) -> list[str]:
    """The rows (header and rule excluded) of the first table after ``heading``."""
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return rows[2:]


def _section() -> str:
    text = README.read_text()
    match = re.search(r"^## Debug knobs\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, "README.md has no '## Debug knobs' section"
    return match.group(1)


def test_readme_lists_every_environment_variable() -> None:
    rows = _table_after(_section(), "Environment variables")
    expected = knob_rows()
    assert rows == expected, "README environment-variable table is stale; it should be:\n" + \
        "\n".join(expected)


def test_readme_lists_every_pass_context_option() -> None:
    rows = _table_after(_section(), "PassContext options")
    expected = option_rows()
    assert rows == expected, "README PassContext-option table is stale; it should be:\n" + \
        "\n".join(expected)


# reads: os.environ.get(...), os.getenv(...), "X" in os.environ, os.environ["X"] (not assigned)
_READ = re.compile(r"os\.environ\.get\(|os\.getenv\(|\bin os\.environ\b(?!\.)|os\.environ\[[^\]]*\](?!\s*=)")


def test_environment_is_read_only_through_the_knob_home() -> None:
    offenders = []
    for path in sorted((ROOT / "packages").glob("*/src/**/*.py")):
        rel = path.relative_to(ROOT / "packages").as_posix()
        if rel == "tvm-ffi/src/tvm/ffi/knobs.py":
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if _READ.search(code):
                offenders.append(f"{rel}:{no}: {line.strip()}")
    assert not offenders, "read these through tvm.ffi.knobs:\n" + "\n".join(offenders)
