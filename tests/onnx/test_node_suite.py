"""Every case of the official ONNX node suite, one pytest case each.

The selected cases are run once, in worker processes over the available cores (each case is
imported, built for llvm and run on the VM in a fresh forked process, see ``node_suite.py``);
each pytest case then reports its own result.  Out-of-scope cases (training, strings, image
decoding: ``node_suite.out_of_scope_reason``) are not collected.  Every other case must pass,
except the known ones listed in ``known_failures.json`` (name -> reason, written by
``node_suite.py --write-known-failures``: failures and unsupported cases alike), which are
strict expected failures: a known case that starts passing fails too, so the list stays
true.  A case the importer does not support (OpNotImplemented) fails unless it is listed.
The whole module runs on one xdist worker (group ``onnx_node_suite``), which spreads the
cases over its own processes.  The full summary comes from ``nox -s onnx_node_suite``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("onnx")

from node_suite import collect_cases, out_of_scope_reason, run_suite  # noqa: E402

HERE = Path(__file__).parent
KNOWN = json.loads((HERE / "known_failures.json").read_text()) \
    if (HERE / "known_failures.json").exists() else {}
CASES = {c.name: c for c in collect_cases() if out_of_scope_reason(c) is None}
TIMEOUT_S = 300.0


@pytest.fixture(scope="session")
def suite_results(request):
    """Run every selected node case once (in parallel) and return {name: record}."""
    names = [item.callspec.params["case"] for item in request.session.items
             if getattr(item, "callspec", None) is not None
             and item.callspec.params.get("case") in CASES
             and Path(str(item.fspath)).resolve() == Path(__file__).resolve()]
    jobs = max(1, min(2, os.cpu_count() or 1))
    return {r["name"]: r for r in run_suite(names, CASES, jobs, TIMEOUT_S)}


def _param(name):
    marks = []
    if name in KNOWN:
        marks.append(pytest.mark.xfail(reason=KNOWN[name], strict=True))
    return pytest.param(name, id=name, marks=marks)


pytestmark = pytest.mark.xdist_group("onnx_node_suite")


@pytest.mark.parametrize("case", [_param(n) for n in CASES])
def test_node_case(case, suite_results):
    rec = suite_results[case]
    if rec["status"] == "unsupported":
        pytest.fail(f"unsupported (not in known_failures.json): {rec.get('reason', '')}",
                    pytrace=False)
    if rec["status"] != "passed":
        pytest.fail(f"{rec.get('stage', '')}: {rec.get('reason', '')}", pytrace=False)
