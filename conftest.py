"""Repository-wide pytest policy: what a skip means in CI.

``--forbid-skips`` (the ``all`` nox session passes it, with every distribution installed)
turns every skip into a failure except those of tests marked ``gpu`` (they need a device
this machine may not have).  A test that cannot run there is then a bug to fix, not a line
in a summary nobody reads.  Whatever the option, the end of the run prints how many tests
were skipped and why, grouped by reason.
"""

from __future__ import annotations

from collections import Counter

import pytest

GPU_MARKER = "gpu"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--forbid-skips", action="store_true", default=False,
        help="fail every skipped test that is not marked 'gpu' (CI with everything installed)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{GPU_MARKER}: needs a GPU device; the only tests allowed to skip in CI")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # noqa: ARG001
    outcome = yield
    report = outcome.get_result()
    if not item.config.getoption("--forbid-skips") or not report.skipped:
        return
    if hasattr(report, "wasxfail") or item.get_closest_marker(GPU_MARKER) is not None:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (f"skipped in a run that forbids skips (only tests marked "
                       f"'{GPU_MARKER}' may skip): {reason}")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    skipped = terminalreporter.stats.get("skipped", [])
    gpu = sum(1 for r in skipped if GPU_MARKER in getattr(r, "keywords", {}))
    terminalreporter.write_line(
        f"skipped: {len(skipped)} (GPU-marked: {gpu}, other: {len(skipped) - gpu})")
    reasons = Counter()
    for r in skipped:
        text = r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
        reasons[text.removeprefix("Skipped: ")[:160]] += 1
    for text, n in reasons.most_common(15):
        terminalreporter.write_line(f"  {n:5d}  {text}")
