"""``partition_for`` and ``offload``: a module's ops cut out for external backends.

::

    mod = partition_for(mod, ["cblas"], report=report)   # functions marked Codegen
    mod = offload(mod, ["cblas"], report=report)         # ... and compiled (RunCodegen)

Backends are asked in the order given; each one's patterns are matched in their order.
A backend that is unavailable here (its library is missing) takes nothing, but its patterns
are still matched so that the report says which ops it would have taken and why it did not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Optional

from tvm.ir.module import IRModule

from .registry import Backend, FusionPattern, get_backend
from .report import OffloadReport

__all__ = ["partition_for", "offload"]


def _unavailable_patterns(backend: Backend) -> list[FusionPattern]:
    reason = f"backend {backend.name!r} is unavailable: {backend.unavailable}"
    return [dataclasses.replace(p, check=lambda ctx, r=reason: r) for p in backend.patterns]


def _as_backends(backends: Sequence[Any]) -> list[Backend]:
    if isinstance(backends, (str, Backend)):
        backends = [backends]
    out = []
    for b in backends:
        if isinstance(b, Backend):
            out.append(b)
        elif isinstance(b, str):
            out.append(get_backend(b))
        else:
            raise TypeError(f"offload: a backend is a name or a Backend, got {b!r}")
    return out


def desired_layouts(backends: Sequence[Any]) -> dict[str, list[str]]:
    """The layouts the available ``backends`` ask for (``Backend.desired_layouts``; the first
    asking for an op wins), for ``ConvertLayout`` before partitioning."""
    out: dict[str, list[str]] = {}
    for backend in _as_backends(backends):
        if backend.unavailable is None:
            for op_name, layouts in (backend.desired_layouts or {}).items():
                out.setdefault(op_name, list(layouts))
    return out


def partition_for(mod: IRModule, backends: Sequence[Any],
                  report: Optional[OffloadReport] = None) -> IRModule:
    """``mod`` with what ``backends`` take cut out into functions marked ``Codegen``."""
    from ..transform.fuse_ops_by_pattern import FuseOpsByPattern
    from ..transform.merge_composite_functions import MergeCompositeFunctions

    if not isinstance(mod, IRModule):
        raise TypeError(f"partition_for expects an IRModule, got {type(mod).__name__}")
    for backend in _as_backends(backends):
        if backend.unavailable is not None:
            mod = FuseOpsByPattern(_unavailable_patterns(backend), report=report)(mod)
            continue
        fuse = FuseOpsByPattern(backend.patterns, bind_constants=backend.bind_constants,
                                annotate_codegen=not backend.merge, report=report)
        mod = fuse(mod)
        if backend.merge:
            mod = MergeCompositeFunctions(report=report)(mod)
    if report is not None:
        report.prune_taken()
    return mod


def offload(mod: IRModule, backends: Sequence[Any],
            report: Optional[OffloadReport] = None,
            options: Optional[dict[str, Any]] = None) -> IRModule:
    """:func:`partition_for`, then ``RunCodegen`` (the modules in attribute
    ``external_mods``)."""
    from ..transform.run_codegen import RunCodegen

    mod = partition_for(mod, backends, report)
    return RunCodegen(options, report=report)(mod)
