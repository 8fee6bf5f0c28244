"""The OpInfo entries we claim (those ``results/opinfo.json`` records as passed) still pass.

``python tests/torch/opinfo.py`` (``nox -s torch_opinfo``) runs every op_db entry and writes
the results file; this test re-runs the claimed entries -- all of them while their recorded
time fits the budget below, else an evenly spread selection that does -- through the same
export -> import -> build -> run -> compare path, in worker processes, so a converter that
regresses fails CI.  It also checks that the results file is consistent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("expecttest")  # torch.testing._internal imports it

from opinfo import entry_status, float32_entries, run_suite  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "opinfo.json"
#: seconds of recorded entry time (summed, before dividing over workers) to re-run
BUDGET_S = 240.0
JOBS = max(1, min(2, os.cpu_count() or 1))

pytestmark = pytest.mark.xdist_group("torch_opinfo")


def _recorded() -> dict:
    return json.loads(RESULTS.read_text())


def claimed(budget: float = BUDGET_S) -> list[str]:
    """The passed entries to re-run: every one if their recorded seconds fit ``budget``,
    else every k-th (in name order) for the smallest k that fits."""
    passed = sorted((e for e in _recorded()["entries"] if e["status"] == "passed"),
                    key=lambda e: e["name"])
    for step in range(1, len(passed) + 1):
        chosen = passed[::step]
        if sum(e.get("seconds", 0.0) for e in chosen) <= budget:
            return [e["name"] for e in chosen]
    return [e["name"] for e in passed[:1]]


def test_results_file_is_consistent():
    data = _recorded()
    summary, entries = data["summary"], data["entries"]
    assert summary["entries"] == len(entries)
    for status in ("passed", "failed", "unsupported", "not_exportable"):
        assert summary[status] == sum(e["status"] == status for e in entries), status
    for e in entries:
        if e["samples"]:
            assert entry_status(e["samples"])["status"] == e["status"], e["name"]
    assert summary["passed"] > 0


def test_claimed_entries_still_pass():
    names = claimed()
    assert names, "the results file claims no passing entry"
    entries = float32_entries()
    missing = [n for n in names if n not in entries]
    assert not missing, f"claimed entries no longer in op_db: {missing}"
    results = run_suite(names, entries, jobs=JOBS, timeout=180.0)
    bad = {r["name"]: f"{r['status']}: {r.get('reason', '')}" for r in results
           if r["status"] != "passed"}
    assert not bad, f"{len(bad)} of {len(names)} claimed OpInfo entries regressed: {bad}"
