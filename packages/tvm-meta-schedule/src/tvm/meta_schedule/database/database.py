"""The tuning-record database: what was measured, for which kernel and target.

A :class:`Workload` is a kernel (an IRModule with a ``main`` PrimFunc) identified by its
structural hash; a :class:`TuningRecord` is one measured schedule of it: the trace with its
decisions, the target, the times.  Records apply to any structurally equal kernel.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Optional

from ..arg_info import TensorInfo

__all__ = ["Database", "Workload", "TuningRecord", "RECORD_VERSION"]

#: the version written into every record; records of another version are skipped
RECORD_VERSION = 1


@dataclass(eq=False)
class Workload:
    """A kernel to tune: ``mod`` (``main`` is the unscheduled PrimFunc) and ``shash``, its
    structural hash as a hex string."""

    mod: Any
    shash: str


@dataclass(eq=False)
class TuningRecord:
    """One measured schedule: ``trace`` (a :class:`tvm.tir.schedule.Trace` with decisions),
    ``workload``, ``target`` (a Target), ``run_secs`` (None: the candidate failed),
    ``args_info``, and the ``version`` of the format."""

    trace: Any
    workload: Workload
    target: Any
    run_secs: Optional[list[float]] = None
    args_info: list[TensorInfo] = field(default_factory=list)
    version: int = RECORD_VERSION

    @property
    def mean_sec(self) -> Optional[float]:
        """Mean of the measured times; None for a failed candidate."""
        if not self.run_secs:
            return None
        return sum(self.run_secs) / len(self.run_secs)


class Database(ABC):
    """Workloads and their records.  Subclasses: ``JSONDatabase`` (two JSON-lines files in a
    directory), ``MemoryDatabase``."""

    @abstractmethod
    def has_workload(self, mod: Any) -> bool:
        """Whether a structurally equal kernel is known."""

    @abstractmethod
    def commit_workload(self, mod: Any) -> Workload:
        """The workload of ``mod``, added if new."""

    @abstractmethod
    def commit_tuning_record(self, record: TuningRecord) -> None:
        """Store ``record`` (its workload must have been committed)."""

    @abstractmethod
    def get_top_k(self, workload: Workload, k: int, target: Any = None) -> list[TuningRecord]:
        """The ``k`` fastest successful records of ``workload`` (for ``target`` if given)."""

    @abstractmethod
    def get_all_tuning_records(self) -> list[TuningRecord]:
        """Every record, in the order committed."""

    def query_tuning_record(self, mod: Any, target: Any) -> Optional[TuningRecord]:
        """The fastest record of a kernel structurally equal to ``mod`` for ``target``."""
        if not self.has_workload(mod):
            return None
        top = self.get_top_k(self.commit_workload(mod), 1, target)
        return top[0] if top else None

    def query_schedule(self, mod: Any, target: Any) -> Optional[Any]:
        """A Schedule of ``mod`` replaying its best record, or None."""
        raise NotImplementedError

    def query_ir_module(self, mod: Any, target: Any) -> Optional[Any]:
        """``mod`` scheduled by its best record, or None."""
        sch = self.query_schedule(mod, target)
        return None if sch is None else sch.mod

    def applied(self, target: Any = None) -> Any:
        """A context manager under which ``relax.build`` / ``tir.build`` schedule every
        kernel that has a record from it (hook ``tvm_tir_tuned_schedule``), the others with
        the default rules."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.get_all_tuning_records())
