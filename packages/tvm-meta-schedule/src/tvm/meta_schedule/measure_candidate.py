"""A candidate the search proposes for measurement: a schedule and its kernel's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .arg_info import TensorInfo

__all__ = ["MeasureCandidate"]


@dataclass
class MeasureCandidate:
    """``sch`` (a :class:`tvm.tir.Schedule` whose trace holds every decision) and the
    :class:`TensorInfo` of the scheduled function's arguments."""

    sch: Any
    args_info: list[TensorInfo]
