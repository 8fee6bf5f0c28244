"""The ONNX test-data folders besides the node suite (``pytorch-converted``,
``pytorch-operator``, ``simple``: models exported from PyTorch modules and operators, small
hand-made models), run like the node suite — every graph input a runtime input — through
``node_suite.run_suite``.  A case onnxruntime runs correctly must pass here without binding
any input as a constant; a case it cannot run (an opset it dropped) must pass or be refused
as unsupported, never give wrong values.  Out-of-scope cases (strings, training) are not
collected.  ``python tests/onnx/node_suite.py --suite data`` gives the summary."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from node_suite import (  # noqa: E402
    collect_data_cases, onnxruntime_result, out_of_scope_reason, run_suite,
)

CASES = {c.name: c for c in collect_data_cases() if out_of_scope_reason(c) is None}
TIMEOUT_S = 300.0

pytestmark = pytest.mark.xdist_group("onnx_data_folders")


@pytest.fixture(scope="session")
def folder_results():
    jobs = max(1, min(2, os.cpu_count() or 1))
    return {r["name"]: r for r in run_suite(list(CASES), CASES, jobs, TIMEOUT_S)}


def test_the_folders_are_found():
    folders = {name.split("/")[0] for name in CASES}
    assert folders == {"pytorch-converted", "pytorch-operator", "simple"}
    assert len(CASES) > 100


@pytest.mark.parametrize("case", sorted(CASES))
def test_data_case(case, folder_results):
    rec = folder_results[case]
    reference = onnxruntime_result(CASES[case])
    if reference is None:
        assert rec["status"] == "passed" and not rec.get("bound_inputs"), \
            f"onnxruntime passes it; we: {rec}"
    else:
        assert rec["status"] in ("passed", "unsupported"), f"{rec} (onnxruntime: {reference})"
