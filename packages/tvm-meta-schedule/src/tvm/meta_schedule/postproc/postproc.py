"""Postprocessors: finish or verify a candidate schedule after its decisions are made."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["Postproc"]


class Postproc(ABC):
    """``apply(sch)`` may transform ``sch`` with traced primitives (so the trace still
    replays the candidate) and returns False to reject it (a GPU kernel over the thread or
    shared-memory limits, a vector loop the target cannot vectorize)."""

    name: str = "postproc"

    def initialize_with_tune_context(self, context: Any) -> None:
        self.context = context

    @abstractmethod
    def apply(self, sch: Any) -> bool:
        """Whether the candidate is kept."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
