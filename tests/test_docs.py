"""Every tutorial's Python blocks run, in order, in one namespace per page."""

import linecache
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "tutorials"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
#: reference pages whose python blocks form a runnable example too
REFERENCE = ["schedule_rules.md"]
PAGES = sorted(DOCS.glob("*.md")) + [DOCS.parent / name for name in REFERENCE]


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_tutorial_runs(page, capsys):
    pytest.importorskip("tvm.target.llvm")
    namespace: dict = {"__name__": f"tutorial_{page.stem}"}
    blocks = BLOCK.findall(page.read_text())
    assert blocks, f"{page.name} has no python blocks"
    for i, code in enumerate(blocks):
        filename = f"<{page.relative_to(DOCS.parent.parent)} block {i}>"
        # Let inspect.getsource (used by @T.prim_func / @R.function) see the block's text.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            exec(compile(code, filename, "exec"), namespace)
        except Exception as err:  # pragma: no cover - the message is the point
            raise AssertionError(f"{page.name} block {i} failed: {err!r}\n{code}") from err
