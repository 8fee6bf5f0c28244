"""Runners: time built kernels in isolated processes and check what they compute.

:class:`LocalRunner` measures on this machine (one candidate at a time, in the C runner
server of :mod:`tvm.runtime.runner`, pinned to the measuring cores); :class:`RayRunner`
measures on the nodes of a Ray cluster that carry a measuring resource, with the same
logic; :class:`RPCRunner` measures on a remote device through ``tvm.runtime.rpc`` (an RPC
server, or one a tracker assigns).  The core policy is described in :mod:`.utils`.
"""

from __future__ import annotations

from typing import Any

from .local_runner import LocalRunner
from .rpc_runner import RPCRunner
from .runner import CorrectnessCheck, Runner, RunnerFuture, RunnerInput, RunnerResult

__all__ = ["Runner", "RunnerInput", "RunnerResult", "RunnerFuture", "CorrectnessCheck",
           "LocalRunner", "RPCRunner", "RayRunner"]


def __getattr__(name: str) -> Any:
    if name == "RayRunner":  # ray is an extra; import it only when asked
        from .ray_runner import RayRunner

        return RayRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
