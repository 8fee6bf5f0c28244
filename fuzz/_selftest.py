"""A target that misbehaves on purpose, for the runner's own tests (tests/test_fuzz.py): a
case ``{"signal": "SIGSEGV"}`` kills the worker with that signal, ``{"sleep": s}`` hangs."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from hypothesis import strategies as st


def cases() -> st.SearchStrategy[dict[str, Any]]:
    """Always the same crashing case."""
    return st.just({"signal": "SIGSEGV"})


def check(case: dict[str, Any]) -> str:
    """Crash or hang as the case says."""
    if "sleep" in case:
        time.sleep(case["sleep"])
        return "slept"
    os.kill(os.getpid(), getattr(signal, case["signal"]))
    return "survived"
