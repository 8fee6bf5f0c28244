"""The fuzzing harness (fuzz/, ``python -m fuzz``): every case of the corpus of found
failures replays as a regression test, and a short run of every target finds nothing new.

The corpus replays in one worker subprocess (as the fuzzer runs cases), so a case that
crashes or hangs fails its own test and the worker is restarted for the rest.  A corpus
entry whose ``status`` is ``known-failure`` is expected to fail still (strict xfail, with
its ``reason``); ``fixed`` and ``open`` entries must pass."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tvm.target.llvm")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "fuzz" / "corpus").glob("*/*.json"))
TARGETS = ["relax_graphs", "onnx_models", "tvmscript", "json_docs", "executables"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> dict[str, object]:
    results = tmp_path_factory.mktemp("fuzz") / "replay.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fuzz", "--replay", *map(str, CORPUS), "--results",
         str(results)], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert results.exists(), proc.stdout + proc.stderr
    return json.loads(results.read_text())


def test_the_corpus_is_not_empty():
    assert CORPUS, "fuzz/corpus holds the cases found so far"


@pytest.mark.parametrize("path", CORPUS, ids=[f"{p.parent.name}/{p.stem}" for p in CORPUS])
def test_corpus_case_replays(path: Path, replayed, request) -> None:
    entry = json.loads(path.read_text())
    assert entry["target"] == path.parent.name and entry["target"] in TARGETS
    if entry.get("status") == "known-failure":
        request.applymarker(pytest.mark.xfail(strict=True, reason=entry["reason"]))
    failure = replayed[str(path)]
    assert failure is None, f"{entry['target']} case {path.name}: {failure}"


def test_a_short_run_of_every_target_finds_nothing_new(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    proc = subprocess.run(
        [sys.executable, "-m", "fuzz", "--budget", "20", "--seed", "1", "--target", "all",
         "--corpus", str(corpus)], cwd=ROOT, env=_env(), capture_output=True, text=True,
        timeout=300)
    out = proc.stdout + proc.stderr
    assert "fuzz: seed 1," in out
    found = {m.group(1): int(m.group(2)) for m in re.finditer(r"fuzz: (\w+): (\d+) cases", out)}
    assert set(found) == set(TARGETS), out
    assert all(n > 0 for n in found.values()), out
    assert proc.returncode == 0, out
    assert not list(corpus.glob("*/*.json")), out


def _selftest_failures(tmp_path: Path, case: dict, case_timeout: float) -> list:
    """The failures a worker reports for one case of the self-test target."""
    sys.path.insert(0, str(ROOT))
    try:
        from fuzz.runner import Worker
    finally:
        sys.path.remove(str(ROOT))
    worker = Worker(tmp_path, case_timeout=case_timeout)
    try:
        reply = worker.request({"cmd": "check", "target": "_crash_for_test", "case": case},
                               deadline=1e18)
    finally:
        worker.stop()
    return reply["failures"]


def test_a_crashing_case_is_caught_and_recorded(tmp_path: Path) -> None:
    """The worker dies of a signal in the middle of a case: the runner names that case."""
    (failure,) = _selftest_failures(tmp_path, {"signal": "SIGSEGV"}, case_timeout=30)
    assert failure["kind"] == "crash" and "SIGSEGV" in failure["detail"]
    assert failure["case"] == {"signal": "SIGSEGV"}


def test_a_hanging_case_is_caught_and_recorded(tmp_path: Path) -> None:
    (failure,) = _selftest_failures(tmp_path, {"sleep": 60}, case_timeout=1.5)
    assert failure["kind"] == "hang" and failure["case"] == {"sleep": 60}
