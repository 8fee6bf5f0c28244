"""The README's main job runs end to end (it is also `nox -s demo`)."""

import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo.py"


def test_demo_runs_every_stage():
    pytest.importorskip("tvm.target.llvm")
    pytest.importorskip("tvm.target.c")
    pytest.importorskip("tvm.relax")
    proc = subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    for stage in ("A1. the Relax model", "A2. LegalizeOps", "relax.build(target='c')",
                  "relax.build(target='llvm')", "check_tensor_info",
                  "A4. the fused kernel fused_matmul_add", "innermost loop of its assembly",
                  "A5. per-kernel profile", "B1. te.compute",
                  "B2. schedule", "B3. lowered TIR", "build for target 'llvm'",
                  "build for target 'c'", "B5. export a shared library", "all stages ran"):
        assert stage in out
    assert "max |ours - numpy| = 0.00e+00" in out or "max |ours - numpy|" in out
    assert "a wrong-shaped argument is rejected: KernelError" in out
    # the listings show the kernels' loops, not the packed-call argument checks
    assert "assert.fail" not in out and "argument A" not in out.split("B4.")[1].split("run on")[0]
