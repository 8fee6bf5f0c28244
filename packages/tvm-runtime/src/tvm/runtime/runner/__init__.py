"""Runners: run exported kernels here, in a child process, or under an emulator.

One interface (:class:`Runner` / :class:`Session`, see :mod:`.base`) shared by tests,
benchmarks and the auto-tuner; :class:`LocalRunner` loads the library in this process,
:class:`ProcessRunner` (:mod:`.process`) runs the C runner server (``server.c``) in a child
process, optionally under an emulator command.  Target packages provide more by name
through the ``tvm_runtime_runner`` hook (:func:`create_runner`).  See ``docs/runners.md``.
"""

from .base import (
    LocalRunner,
    Runner,
    RunnerError,
    RunnerTimeoutError,
    RunnerUnavailableError,
    RunResult,
    Session,
    create_runner,
)
from .process import ProcessRunner, ProcessSession, RemoteFunction, RemoteModule, build_server

__all__ = [
    "Runner",
    "Session",
    "RunResult",
    "LocalRunner",
    "ProcessRunner",
    "ProcessSession",
    "RemoteModule",
    "RemoteFunction",
    "RunnerError",
    "RunnerTimeoutError",
    "RunnerUnavailableError",
    "create_runner",
    "build_server",
]
