"""Builders: scheduled kernels -> exported shared libraries, in worker processes.

:class:`LocalBuilder` builds in a pool of processes on this machine (off the measuring
core); :class:`RayBuilder` spreads the builds over a Ray cluster's CPUs.
"""

from __future__ import annotations

from typing import Any

from .builder import Builder, BuilderInput, BuilderResult
from .local_builder import LocalBuilder, default_build, default_export

__all__ = ["Builder", "BuilderInput", "BuilderResult", "LocalBuilder", "RayBuilder",
           "default_build", "default_export"]


def __getattr__(name: str) -> Any:
    if name == "RayBuilder":  # ray is an extra; import it only when asked
        from .ray_builder import RayBuilder

        return RayBuilder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
