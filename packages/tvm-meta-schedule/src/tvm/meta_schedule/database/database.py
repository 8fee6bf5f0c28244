"""The tuning-record database: what was measured, for which kernel and target.

A :class:`Workload` is a kernel (an IRModule with a ``main`` PrimFunc) identified by its
structural hash; a :class:`TuningRecord` is one measured schedule of it: the trace with its
decisions, the target, the times.  Records apply to any structurally equal kernel.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from tvm.ffi.plugin import hookimpl

from ..arg_info import TensorInfo

__all__ = ["Database", "Workload", "TuningRecord", "RECORD_VERSION", "replay_record"]

logger = logging.getLogger("tvm.meta_schedule.database")

#: the version written into every record; records of another version are skipped
RECORD_VERSION = 1


@dataclass(eq=False)
class Workload:
    """A kernel to tune: ``mod`` (``main`` is the unscheduled PrimFunc) and ``shash``, its
    structural hash as a hex string (``tvm.ffi.structural_hash``, the same in every
    process)."""

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
        """A Schedule of ``mod`` replaying its best record (the function marked
        ``tir.is_scheduled``), or None when no successful record exists for ``target``.

        The best record is the fastest measured candidate; the tuner measures the default
        schedule as one of them, so a record is returned only where it is at least as fast
        as the default schedule (or where the default was never measured)."""
        record = self.query_tuning_record(mod, target)
        if record is None:
            return None
        return replay_record(record, mod)

    def query_ir_module(self, mod: Any, target: Any) -> Optional[Any]:
        """``mod`` scheduled by its best record, or None."""
        sch = self.query_schedule(mod, target)
        return None if sch is None else sch.mod

    def applied(self, target: Any = None) -> Any:
        """A context manager under which ``relax.build`` / ``tir.build`` schedule every
        kernel that has a record from it (hook ``tvm_tir_tuned_schedule``), the others with
        the default rules.  ``target``: answer only builds for that target (default: the
        target each build asks for).  A record that no longer replays is logged and the
        kernel gets its default schedule."""
        return _applied(self, target)

    def __len__(self) -> int:
        return len(self.get_all_tuning_records())


def _kernel_of(mod: Any) -> Any:
    """The PrimFunc of ``mod`` (a PrimFunc, or an IRModule with ``main`` or one PrimFunc)."""
    from tvm.ir.module import IRModule
    from tvm.tir.function import PrimFunc

    if isinstance(mod, PrimFunc):
        return mod
    if isinstance(mod, IRModule):
        prims = {gv.name_hint: f for gv, f in mod.items() if isinstance(f, PrimFunc)}
        if "main" in prims:
            return prims["main"]
        if len(prims) == 1:
            return next(iter(prims.values()))
    raise TypeError(f"expected a PrimFunc or an IRModule holding one, got {type(mod).__name__}")


def replay_record(record: TuningRecord, mod: Any) -> Any:
    """A :class:`tvm.tir.Schedule` of ``mod``'s kernel (marked ``tir.is_scheduled``, its
    other attributes kept) after ``record.trace``.  The trace is replayed on ``mod`` itself;
    if that fails (a structurally equal kernel whose block names differ), on the record's
    workload with ``mod``'s attributes."""
    from tvm.ir.module import IRModule
    from tvm.tir.schedule import Schedule
    from tvm.tir.schedule.rules import SCHEDULED_ATTR

    func = _kernel_of(mod)
    attrs = {**func.attrs, SCHEDULED_ATTR: True}
    first_error: Optional[Exception] = None
    for base in (func, record.workload.mod["main"]):
        sch = Schedule(IRModule({"main": base.with_fields(attrs=attrs)}))
        try:
            record.trace.apply_to_schedule(sch)
        except Exception as err:  # noqa: BLE001 - the second try, or the caller, reports it
            first_error = first_error or err
            continue
        return sch
    raise ValueError(f"the tuning record does not replay on the kernel: "
                     f"{type(first_error).__name__}: {first_error}") from first_error


_plugin_ids = itertools.count()


class _TunedSchedulePlugin:
    """Answers hook ``tvm_tir_tuned_schedule`` from a database."""

    def __init__(self, database: Database, target: Any) -> None:
        self.database = database
        self.target = target
        self.answered: list[str] = []   # kernels given a tuned schedule (name or hash)
        self.tuned: list[Any] = []      # the PrimFuncs returned for them

    @hookimpl
    def tvm_tir_tuned_schedule(self, func: Any, target: Any) -> Any:
        from tvm.ir.target import as_target

        if self.target is not None and str(as_target(self.target)) != str(target):
            return None
        try:
            sch = self.database.query_schedule(func, target)
        except Exception as err:  # noqa: BLE001 - a bad record must not break the build
            logger.warning("the tuning record of %s was not applied (default schedule "
                           "instead): %s", func.attrs.get("global_symbol", "a kernel"), err)
            return None
        if sch is None:
            return None
        from .workload import normalize_mod, shash_of

        name = func.attrs.get("global_symbol") or shash_of(normalize_mod(func))
        self.answered.append(str(name))
        self.tuned.append(sch.mod["main"])
        return sch.mod["main"]


@contextlib.contextmanager
def _applied(database: Database, target: Any) -> Iterator[Any]:
    from tvm.ffi.plugin import register_plugin, unregister_plugin

    import tvm.tir.hooks  # noqa: F401  (the hook spec)

    plugin = _TunedSchedulePlugin(database, target)
    name = f"tvm.meta_schedule.applied.{next(_plugin_ids)}"
    register_plugin(plugin, name, distribution="tvm-meta-schedule")
    try:
        yield plugin
    finally:
        unregister_plugin(name)
