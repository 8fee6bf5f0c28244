"""Runners: time built kernels in isolated processes, and check what they compute."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..arg_info import TensorInfo

__all__ = ["Runner", "RunnerInput", "RunnerResult", "RunnerFuture", "CorrectnessCheck"]


@dataclass
class CorrectnessCheck:
    """Inputs to call the kernel with and what every argument must hold afterwards (the
    untuned kernel's results), compared with ``rtol``/``atol``."""

    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    rtol: float = 1e-3
    atol: float = 1e-3


@dataclass
class RunnerInput:
    """A built kernel to time: ``artifact_path`` (from a BuilderResult), the ``device`` kind
    (``"cpu"``, ``"cuda"``...), the arguments' ``args_info``, an optional ``check``."""

    artifact_path: str
    device: str
    args_info: list[TensorInfo]
    check: Optional[CorrectnessCheck] = None
    func_name: str = "main"


@dataclass
class RunnerResult:
    """Seconds per run (``run_secs``, one per repeat) or ``error_msg`` (crash, timeout,
    wrong result)."""

    run_secs: Optional[list[float]] = None
    error_msg: Optional[str] = None


class RunnerFuture(ABC):
    """A measurement under way."""

    @abstractmethod
    def done(self) -> bool:
        """Whether :meth:`result` would return at once."""

    @abstractmethod
    def result(self) -> RunnerResult:
        """Wait for and return the result (errors are results, never exceptions)."""


@dataclass
class _Ready(RunnerFuture):
    value: RunnerResult = field(default_factory=RunnerResult)

    def done(self) -> bool:
        return True

    def result(self) -> RunnerResult:
        return self.value


class Runner(ABC):
    """Runs a batch of built kernels; never lets one candidate stop the tuning."""

    @abstractmethod
    def run(self, inputs: list[RunnerInput]) -> list[RunnerFuture]:
        """One future per input, in order."""

    @staticmethod
    def ready(result: RunnerResult) -> RunnerFuture:
        """A future that is already done (for a runner that measures synchronously)."""
        return _Ready(result)

    def describe(self) -> str:  # for logs
        return type(self).__name__

    def __repr__(self) -> str:
        return self.describe()


