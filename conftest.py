"""Repository-wide pytest policy: what a skip means in CI.

``--forbid-skips`` (the ``all`` nox session passes it, with every distribution installed)
turns every skip into a failure except those of tests marked ``gpu`` (they need a device
this machine may not have).  A test that cannot run there is then a bug to fix, not a line
in a summary nobody reads.  Whatever the option, the end of the run prints how many tests
were skipped and why, grouped by reason.

Every test also starts its module's random generators afresh (:func:`_seed_module_generators`),
so the values a test draws do not depend on which tests an xdist worker ran before it.
"""

from __future__ import annotations

import zlib
from collections import Counter

import pytest

try:
    import numpy as np
except ImportError:  # a package session without numpy has no generators to seed
    np = None

GPU_MARKER = "gpu"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--forbid-skips", action="store_true", default=False,
        help="fail every skipped test that is not marked 'gpu' (CI with everything installed)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{GPU_MARKER}: needs a GPU device; the only tests allowed to skip in CI")


@pytest.fixture(autouse=True)
def _seed_module_generators(request: pytest.FixtureRequest):
    """Give each test module-level numpy generators seeded from the test's own id.

    Test modules keep one ``rng = np.random.default_rng(seed)`` for their helpers; drawing from
    it at test time made a test's inputs depend on the order tests ran in, which xdist changes
    from run to run and host to host (a tolerance failure seen only on a faster CI host).
    """
    module = getattr(request, "module", None)
    if np is None or module is None:
        yield
        return
    saved = {name: value for name, value in vars(module).items()
             if isinstance(value, np.random.Generator)}
    seed = zlib.crc32(request.node.nodeid.encode())
    for name in saved:
        setattr(module, name, np.random.default_rng(seed))
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


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
