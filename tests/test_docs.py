"""Every tutorial's Python blocks run, in order, in one namespace per page.

A page that needs external tools says so in a comment, ``<!-- requires: tool tool -->``; it
skips where one is missing (CI installs them all and allows no skip, see ``.ci/run``)."""

import linecache
import re
import shutil
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "tutorials"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
REQUIRES = re.compile(r"<!--\s*requires:([^>]*)-->")
#: reference pages whose python blocks form a runnable example too
REFERENCE = ["schedule_rules.md", "explore.md", "guarantees.md", "quantization.md"]
PAGES = sorted(DOCS.glob("*.md")) + [DOCS.parent / name for name in REFERENCE]


@pytest.fixture
def own_plugins():
    """Plugins a page registers in-process are removed after it, so pages (which may pick
    the same example name, e.g. ``acme``) do not depend on the order they run in."""
    from tvm.ffi.plugin import list_plugins, unregister_plugin

    before = {info.name for info in list_plugins()}
    yield
    for info in list_plugins():
        if info.name not in before:
            unregister_plugin(info.name)


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_tutorial_runs(page, capsys, own_plugins):
    pytest.importorskip("tvm.target.llvm")
    text = page.read_text()
    for found in REQUIRES.finditer(text):
        missing = [tool for tool in found.group(1).split() if shutil.which(tool) is None]
        if missing:
            pytest.skip(f"{page.name} needs {', '.join(missing)} (not on PATH)")
    namespace: dict = {"__name__": f"tutorial_{page.stem}"}
    blocks = BLOCK.findall(text)
    assert blocks, f"{page.name} has no python blocks"
    for i, code in enumerate(blocks):
        filename = f"<{page.relative_to(DOCS.parent.parent)} block {i}>"
        # Let inspect.getsource (used by @T.prim_func / @R.function) see the block's text.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            exec(compile(code, filename, "exec"), namespace)
        except Exception as err:  # pragma: no cover - the message is the point
            raise AssertionError(f"{page.name} block {i} failed: {err!r}\n{code}") from err
