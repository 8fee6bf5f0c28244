"""Smoke test of benchmarks/tune.py with a few trials (no timing is checked): it tunes,
builds with the records, checks the results and writes the JSON and markdown it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "tune.py"


def _defaults_available() -> bool:
    import tvm.meta_schedule as ms

    try:
        ms.builder.LocalBuilder, ms.runner.LocalRunner, ms.space_generator.PostOrderApply
    except AttributeError:
        return False
    return True


def test_tune_benchmark_smoke(tmp_path):
    pytest.importorskip("tvm.target.llvm")
    if not _defaults_available():
        pytest.skip("needs the default builder, runner and space generator of tvm-meta-schedule")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--tasks", "K2", "--trials", "4", "--per-iter", "2",
         "--threads", "1", "--repeats", "2", "--no-torch", "--strategy", "replay-trace",
         "--cost-model", "none", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (tmp_path / "tune-latest.md").read_text()
    assert "| K2 | 1 |" in md and "| ok |" in md and "Ours: llvm" in md
    res = json.loads((tmp_path / "tune-latest.json").read_text())
    k2 = res["kernels"]["K2"]
    assert k2["trials"] == 4 and all(k2["check"].values())
    assert k2["tasks"][0]["default_us"] is not None
    # the records stay in the work dir (a later run continues from them)
    assert (tmp_path / "tune-work" / "K2" / "database_tuning_record.json").exists()
