"""The long-lived worker process: it runs many cases (importing tvm once) and, before each,
writes the case to a file, so that when it dies of a signal or hangs, the parent
(:mod:`fuzz.runner`) knows which case did it.

Protocol: one JSON request per line on stdin, one JSON reply per line on the file descriptor
given by ``--reply-fd`` (the process's own stdout is sent to stderr, so what the compiler
prints cannot corrupt the protocol).

- ``{"cmd": "fuzz", "target", "seed", "examples", "stop_at", "shrink_until"}`` runs up to
  ``examples`` hypothesis-generated cases until the wall clock passes ``stop_at``; a failing
  case is shrunk (until ``shrink_until``).  Reply ``{"ran": n, "failures": [...]}``.
- ``{"cmd": "check", "target", "case"}`` runs one case.  Reply ``{"ran": 1, "failures": []}``
  or with the failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from typing import Any

from fuzz.common import Failure, describe, load_target, to_jsonable


class _Recorder:
    """Writes the current case before it runs and keeps the last failure seen."""

    def __init__(self, current_path: str) -> None:
        self.current_path = current_path
        self.ran = 0
        self.last_failure: dict[str, Any] | None = None
        self.outcomes: dict[str, int] = {}

    def run(self, target_name: str, module: Any, case: dict[str, Any]) -> None:
        case = to_jsonable(case)
        tmp = self.current_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"target": target_name, "case": case, "started": time.time()}, f)
        os.replace(tmp, self.current_path)
        self.ran += 1
        try:
            outcome = module.check(case) or "ok"
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        except Failure as err:
            self.last_failure = {"target": target_name, "kind": err.kind,
                                 "detail": err.detail, "case": case}
            raise
        except Exception as err:  # noqa: BLE001 - an oracle's own bug is a failure too
            self.last_failure = {"target": target_name, "kind": "harness-error",
                                 "detail": describe(err), "case": case}
            raise
        finally:
            try:
                os.remove(self.current_path)
            except FileNotFoundError:
                pass


def _fuzz(rec: _Recorder, req: dict[str, Any]) -> dict[str, Any]:
    from hypothesis import HealthCheck, Phase, given, seed, settings

    name = req["target"]
    module = load_target(name)
    stop_at = float(req["stop_at"])
    shrink_until = float(req.get("shrink_until", stop_at))
    state = {"failed": False}
    rec.ran = 0
    rec.last_failure = None
    rec.outcomes = {}

    @seed(int(req["seed"]))
    @settings(max_examples=int(req["examples"]), database=None, deadline=None,
              derandomize=False, phases=[Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(module.cases())
    def one(case: dict[str, Any]) -> None:
        now = time.time()
        if (not state["failed"] and now > stop_at) or now > shrink_until:
            return  # out of time: the remaining examples (or shrink attempts) pass untried
        try:
            rec.run(name, module, case)
        except BaseException:
            state["failed"] = True
            raise

    try:
        one()
    except Exception:  # noqa: BLE001 - the recorder holds the (shrunk) failure
        pass
    failures = [rec.last_failure] if rec.last_failure is not None else []
    return {"ran": rec.ran, "failures": failures, "outcomes": rec.outcomes}


def _check(rec: _Recorder, req: dict[str, Any]) -> dict[str, Any]:
    name = req["target"]
    module = load_target(name)
    rec.last_failure = None
    try:
        rec.run(name, module, req["case"])
    except Exception:  # noqa: BLE001 - recorded
        pass
    failures = [rec.last_failure] if rec.last_failure is not None else []
    return {"ran": 1, "failures": failures}


def main(argv: list[str] | None = None) -> None:
    """Serve requests until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m fuzz.worker")
    parser.add_argument("--current", required=True, help="file the current case is written to")
    parser.add_argument("--reply-fd", type=int, required=True)
    args = parser.parse_args(argv)
    reply = os.fdopen(args.reply_fd, "w", buffering=1)
    os.dup2(2, 1)  # prints of the code under test go to the log, not the protocol
    sys.stdout = sys.stderr
    warnings.simplefilter("ignore")
    rec = _Recorder(args.current)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        handler = {"fuzz": _fuzz, "check": _check}[req["cmd"]]
        reply.write(json.dumps(handler(rec, req)) + "\n")


if __name__ == "__main__":
    main()
