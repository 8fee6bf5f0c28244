"""Builders: scheduled kernels -> exported shared libraries, in worker processes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["Builder", "BuilderInput", "BuilderResult"]


@dataclass
class BuilderInput:
    """``mod``: an IRModule whose ``main`` is a scheduled PrimFunc; ``target``: a Target."""

    mod: Any
    target: Any


@dataclass
class BuilderResult:
    """``artifact_path`` of the exported library, or ``error_msg`` (never both)."""

    artifact_path: Optional[str] = None
    error_msg: Optional[str] = None


class Builder(ABC):
    """Builds a batch of kernels; a failing build is a result with ``error_msg``, never an
    exception (one bad candidate must not stop the tuning)."""

    @abstractmethod
    def build(self, inputs: list[BuilderInput]) -> list[BuilderResult]:
        """One result per input, in order."""
