"""The fuzz runner: drives worker subprocesses (:mod:`fuzz.worker`) target by target for a
time budget, records crashes (a signal), hangs (a case over its time limit) and oracle
failures, and writes each new failing case to ``fuzz/corpus/<target>/<hash>.json``.

    python -m fuzz --budget 300 --target all --seed 1234
    python -m fuzz --replay fuzz/corpus/onnx_models/0123abcd.json

The run exits with status 1 when it found a failure that is not in the corpus yet; the seed is
printed so that a CI failure can be rerun (batch ``i`` of target ``t`` uses a seed derived
from ``(seed, t, i)``, so the same cases come in the same order; the budget only decides how
many)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fuzz.common import TARGETS

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "corpus"
#: a case running longer than this (seconds) is a hang
CASE_TIMEOUT = 60.0
#: address-space limit of a worker (bytes), so a case that allocates without bound fails with
#: MemoryError instead of exhausting the machine
MEMORY_LIMIT = 8 << 30
#: examples per request to the worker (the runner checks the budget between requests)
BATCH = 25


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


class Worker:
    """One worker subprocess; :meth:`request` returns its reply, or a crash/hang record."""

    def __init__(self, workdir: Path, case_timeout: float) -> None:
        self.workdir = workdir
        self.case_timeout = case_timeout
        self.current = workdir / "current.json"
        self.log_path = workdir / "worker.log"
        self.proc: subprocess.Popen | None = None
        self.reply_fd = -1
        self.buffer = b""

    def start(self) -> None:
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env.setdefault("TVM_NUM_THREADS", "1")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fuzz.worker", "--current", str(self.current),
             "--reply-fd", str(write_fd)],
            stdin=subprocess.PIPE, stdout=self.log, stderr=self.log, pass_fds=(write_fd,),
            cwd=str(ROOT), env=env, preexec_fn=_limit_memory)
        os.close(write_fd)
        self.reply_fd = read_fd
        self.buffer = b""

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            os.close(self.reply_fd)
            self.log.close()
            self.proc = None

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_bytes()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def _current_case(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.current.read_text())
        except (OSError, ValueError):
            return None

    def request(self, req: dict[str, Any], deadline: float) -> dict[str, Any]:
        """Send ``req``; the reply, or ``{"ran": 0, "failures": [crash or hang]}``.

        ``deadline`` bounds the whole request (beyond it the worker is treated as hung)."""
        if self.proc is None:
            self.start()
        if self.current.exists():
            self.current.unlink()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            ready, _, _ = select.select([self.reply_fd], [], [], 0.2)
            if ready:
                chunk = os.read(self.reply_fd, 1 << 20)
                self.buffer += chunk
                if b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    return json.loads(line)
                if chunk:
                    continue
            rc = self.proc.poll()
            if rc is not None:
                return self._lost("crash", f"the worker died ({_exit_text(rc)})")
            cur = self._current_case()
            now = time.time()
            if cur is not None and now - cur["started"] > self.case_timeout:
                return self._lost("hang", f"the case ran over {self.case_timeout:.0f} s")
            if now > deadline:
                return self._lost("hang", "the worker did not answer before the deadline")

    def _lost(self, kind: str, detail: str) -> dict[str, Any]:
        cur = self._current_case()
        tail = self._log_tail()
        self.stop()
        if cur is None:
            return {"ran": 0, "failures": [], "lost": f"{detail} between cases:\n{tail}"}
        failure = {"target": cur["target"], "kind": kind, "case": cur["case"],
                   "detail": f"{detail}; worker log tail:\n{tail}"}
        return {"ran": 1, "failures": [failure]}


def _exit_text(rc: int) -> str:
    if rc < 0:
        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"exit status {rc}"


def case_hash(target: str, case: Any) -> str:
    """Stable name of a case in the corpus."""
    text = json.dumps({"target": target, "case": case}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def save_failure(failure: dict[str, Any], corpus: Path, seed: int | None) -> tuple[Path, bool]:
    """Write ``failure`` to the corpus; the path and whether it was not there before."""
    folder = corpus / failure["target"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{case_hash(failure['target'], failure['case'])}.json"
    if path.exists():
        return path, False
    entry = {"target": failure["target"], "kind": failure["kind"], "status": "open",
             "detail": failure["detail"], "seed": seed, "case": failure["case"]}
    path.write_text(json.dumps(entry, indent=1, sort_keys=True) + "\n")
    return path, True


def _batch_seed(seed: int, target: str, index: int) -> int:
    digest = hashlib.sha256(f"{seed}:{target}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def fuzz(targets: list[str], budget: float, seed: int, corpus: Path,
         case_timeout: float = CASE_TIMEOUT) -> int:
    """Fuzz ``targets`` for ``budget`` seconds in all; the number of new failures (a worker
    lost between cases, a harness failure, counts as one)."""
    print(f"fuzz: seed {seed}, budget {budget:.0f} s, targets {', '.join(targets)}", flush=True)
    new = 0
    with tempfile.TemporaryDirectory(prefix="tvm-fuzz-") as tmp:
        worker = Worker(Path(tmp), case_timeout)
        start = time.time()
        try:
            for k, target in enumerate(targets):
                # each target gets an equal share of what is left
                share = (budget - (time.time() - start)) / (len(targets) - k)
                end = time.time() + max(share, 1.0)
                ran, found, index = 0, 0, 0
                outcomes: dict[str, int] = {}
                while time.time() < end:
                    req = {"cmd": "fuzz", "target": target,
                           "seed": _batch_seed(seed, target, index), "examples": BATCH,
                           "stop_at": end, "shrink_until": end + min(20.0, share / 4)}
                    reply = worker.request(req, deadline=end + case_timeout + 60.0)
                    index += 1
                    ran += reply["ran"]
                    for label, n in reply.get("outcomes", {}).items():
                        outcomes[label] = outcomes.get(label, 0) + n
                    if "lost" in reply:  # the harness itself broke: a failure of the run
                        new += 1
                        print(f"fuzz: {target}: HARNESS {reply['lost']}", flush=True)
                    for failure in reply["failures"]:
                        found += 1
                        path, is_new = save_failure(failure, corpus, seed)
                        new += is_new
                        mark = "NEW" if is_new else "known"
                        first = failure["detail"].splitlines()[0][:300]
                        print(f"fuzz: {target}: {mark} {failure['kind']}: {first}\n"
                              f"      case written to {path}", flush=True)
                        if is_new:  # the whole entry, so a CI log is enough to reproduce
                            print("      " + path.read_text().replace("\n", ""), flush=True)
                print(f"fuzz: {target}: {ran} cases, {found} failures "
                      f"({time.time() - end + max(share, 1.0):.0f} s)", flush=True)
                for label, n in sorted(outcomes.items(), key=lambda kv: -kv[1]):
                    print(f"      {n:6d}  {label}", flush=True)
        finally:
            worker.stop()
    if new:
        print(f"fuzz: {new} new failing case(s); rerun with --seed {seed}, replay one with "
              "python -m fuzz --replay <file>", flush=True)
    return new


def replay(paths: list[Path], case_timeout: float = CASE_TIMEOUT,
           results: Path | None = None) -> int:
    """Run each corpus file's case again in a worker; the number still failing.

    ``results``: a JSON file to write ``{path: null or the failure}`` to."""
    failing = 0
    outcome: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tvm-fuzz-") as tmp:
        worker = Worker(Path(tmp), case_timeout)
        try:
            for path in paths:
                entry = json.loads(Path(path).read_text())
                reply = worker.request({"cmd": "check", "target": entry["target"],
                                        "case": entry["case"]},
                                       deadline=time.time() + case_timeout + 120.0)
                if reply["failures"]:
                    failing += 1
                    failure = reply["failures"][0]
                    outcome[str(path)] = {"kind": failure["kind"], "detail": failure["detail"]}
                    print(f"FAIL {path}: {failure['kind']}: {failure['detail']}", flush=True)
                else:
                    outcome[str(path)] = None
                    print(f"ok   {path}", flush=True)
        finally:
            worker.stop()
    if results is not None:
        results.write_text(json.dumps(outcome, indent=1))
    return failing


def main(argv: list[str] | None = None) -> int:
    """Command line of ``python -m fuzz``."""
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=float(os.environ.get(
        "TVM_FUZZ_BUDGET", "240")), help="seconds for all targets together (default 240, "
        "or $TVM_FUZZ_BUDGET)")
    parser.add_argument("--target", action="append", default=None,
                        help=f"one of {', '.join(TARGETS)} or all (repeatable)")
    parser.add_argument("--seed", type=int, default=None,
                        help="master seed (default: random, printed)")
    parser.add_argument("--corpus", type=Path, default=CORPUS,
                        help="folder new failing cases are written to")
    parser.add_argument("--case-timeout", type=float, default=CASE_TIMEOUT)
    parser.add_argument("--replay", nargs="+", type=Path, default=None,
                        help="run these corpus files' cases instead of fuzzing")
    parser.add_argument("--results", type=Path, default=None,
                        help="with --replay: write each file's result to this JSON file")
    args = parser.parse_args(argv)
    if args.replay:
        return 1 if replay(args.replay, args.case_timeout, args.results) else 0
    names = args.target or ["all"]
    targets = list(TARGETS) if "all" in names else names
    for name in targets:
        if name not in TARGETS:
            parser.error(f"unknown target {name!r}; known: {', '.join(TARGETS)}, all")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    return 1 if fuzz(targets, args.budget, seed, args.corpus, args.case_timeout) else 0
