"""Smoke tests of the benchmark scripts' ISA selection (no timing is checked).

``benchmarks/kernels.py --mcpu=haswell`` builds ours for AVX2 and holds the peers to AVX2;
the table and JSON must name the ISA of every column.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

import target_isa  # noqa: E402


def test_peer_env_sets_the_switches_of_a_level_and_clears_them_for_the_host():
    env = {"OPENBLAS_CORETYPE": "Prescott", "OPENBLAS_L2_SIZE": "1", "PATH": "/bin"}
    avx2 = target_isa.peer_env(env, "avx2")
    assert avx2["OPENBLAS_CORETYPE"] == "Haswell"
    assert avx2["ATEN_CPU_CAPABILITY"] == "avx2"
    assert avx2["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert avx2["MKL_ENABLE_INSTRUCTIONS"] == "AVX2"
    assert "OPENBLAS_L2_SIZE" not in avx2 and avx2["PATH"] == "/bin"
    assert target_isa.peer_env(env, "avx512")["OPENBLAS_CORETYPE"] == "SkylakeX"
    host = target_isa.peer_env(env, None)
    assert not set(target_isa.PEER_VARS) & set(host)
    assert env["OPENBLAS_CORETYPE"] == "Prescott"  # the caller's mapping is left alone


def test_ours_target_and_isa_level():
    pytest.importorskip("tvm.target.llvm")
    assert target_isa.ours_target("haswell", None, 2) == "llvm -mcpu=haswell -num-cores=2"
    assert target_isa.ours_target("znver3", "-fma", 4) == \
        "llvm -mcpu=znver3 -mattr=-fma -num-cores=4"
    assert target_isa.ours_target(None, None, 2).startswith("llvm -mcpu=")
    if platform.machine() in ("x86_64", "AMD64"):
        assert target_isa.isa_level("llvm -mcpu=haswell") == "avx2"
        assert target_isa.isa_level("llvm -mcpu=skylake-avx512") == "avx512"
        assert target_isa.isa_level("llvm -mcpu=haswell -mattr=-fma") == "avx"
        assert target_isa.isa_label("haswell", None) == "AVX2+FMA (haswell)"
        assert target_isa.isa_label(None, None).endswith(")")
        assert "host:" in target_isa.isa_label(None, None)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="an x86 CPU name")
def test_kernels_cli_measures_the_chosen_isa(tmp_path):
    llvm = pytest.importorskip("tvm.target.llvm.host_cpu")
    if not llvm.host_has_feature("avx2") or not llvm.host_has_feature("fma"):
        pytest.skip("the host cannot run AVX2 code")
    proc = subprocess.run(
        [sys.executable, str(BENCH / "kernels.py"), "--kernels", "K5", "--threads", "1",
         "--repeats", "1", "--mcpu=haswell", "--no-torch", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = (tmp_path / "latest.md").read_text()
    assert "Ours: llvm -mcpu=haswell" in text
    assert "ours AVX2+FMA (haswell)" in text
    assert "OPENBLAS_CORETYPE=Haswell" in text
    assert "| K5 | 1 |" in text and "| ok |" in text
    meta = json.loads((tmp_path / "latest.json").read_text())["meta"]
    assert meta["mcpu"] == "haswell"
    assert meta["isa"]["ours"] == "AVX2+FMA (haswell)"
    assert "Haswell" in meta["isa"]["numpy"]


def test_kernels_cli_times_ours_through_a_runner(tmp_path):
    pytest.importorskip("tvm.target.llvm")
    proc = subprocess.run(
        [sys.executable, str(BENCH / "kernels.py"), "--kernels", "K5", "--threads", "1",
         "--repeats", "1", "--runner", "process", "--no-torch", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    meta = json.loads((tmp_path / "latest.json").read_text())
    assert meta["meta"]["runner"] == "process"
    assert "| K5 | 1 |" in (tmp_path / "latest.md").read_text()
    assert "| ok |" in (tmp_path / "latest.md").read_text()


def test_profile_model_counts_multiply_adds_of_contractions_only():
    pytest.importorskip("tvm.relax")
    import profile_model
    from tvm import te, tir

    n = tir.Var("seq", "int64")
    A = te.placeholder((n, 8), name="A")
    B = te.placeholder((8, 4), name="B")
    k = te.reduce_axis((0, 8), name="k")
    C = te.compute((n, 4), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    r = te.reduce_axis((0, 4), name="r")
    M = te.compute((n,), lambda i: te.max(C[i, r], axis=r), name="M")
    func = te.create_prim_func([A, B, M])
    assert profile_model.flops(func) == 2 * profile_model.SYMBOLS["seq"] * 4 * 8
    assert profile_model.signature(func) == "seqx8 8x4 seq"
