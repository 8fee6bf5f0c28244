"""MemoryDatabase: workloads and records in this process (the base of JSONDatabase)."""

from __future__ import annotations

from typing import Any, Optional

from .database import Database, TuningRecord, Workload
from .workload import normalize_mod, shash_of

__all__ = ["MemoryDatabase"]


def target_key(target: Any) -> str:
    """The canonical text of a target: records match a target by it."""
    from tvm.ir.target import Target, as_target

    return str(target if isinstance(target, Target) else as_target(target))


class MemoryDatabase(Database):
    """Workloads looked up by structural hash then structural equality; records kept in the
    order committed."""

    def __init__(self) -> None:
        self._workloads: list[Workload] = []
        self._by_hash: dict[str, list[Workload]] = {}
        self._records: list[TuningRecord] = []
        self._by_workload: dict[int, list[TuningRecord]] = {}

    # -- workloads ----------------------------------------------------------------------------
    def _find(self, mod: Any) -> tuple[Any, str, Optional[Workload]]:
        from tvm.ffi import structural_equal

        norm = normalize_mod(mod)
        shash = shash_of(norm)
        for wl in self._by_hash.get(shash, ()):
            if structural_equal(wl.mod, norm):
                return norm, shash, wl
        return norm, shash, None

    def has_workload(self, mod: Any) -> bool:
        return self._find(mod)[2] is not None

    def lookup_workload(self, mod: Any) -> Optional[Workload]:
        """The workload structurally equal to ``mod``, or None (nothing is added)."""
        return self._find(mod)[2]

    def commit_workload(self, mod: Any) -> Workload:
        norm, shash, found = self._find(mod)
        if found is not None:
            return found
        wl = Workload(norm, shash)
        self._add_workload(wl)
        self._persist_workload(wl)
        return wl

    def _add_workload(self, wl: Workload) -> None:
        self._workloads.append(wl)
        self._by_hash.setdefault(wl.shash, []).append(wl)

    def _persist_workload(self, wl: Workload) -> None:
        """Hook of a persistent subclass: write ``wl`` (it is already added)."""

    @property
    def workloads(self) -> list[Workload]:
        return list(self._workloads)

    # -- records ------------------------------------------------------------------------------
    def commit_tuning_record(self, record: TuningRecord) -> None:
        if not isinstance(record, TuningRecord):
            raise TypeError(f"commit_tuning_record: expected a TuningRecord, got "
                            f"{type(record).__name__}")
        if not any(w is record.workload for w in self._workloads):
            # a workload of another database: use this one's equal workload
            record.workload = self.commit_workload(record.workload.mod)
        self._add_record(record)
        self._persist_record(record)

    def _add_record(self, record: TuningRecord) -> None:
        self._records.append(record)
        self._by_workload.setdefault(id(record.workload), []).append(record)

    def _persist_record(self, record: TuningRecord) -> None:
        """Hook of a persistent subclass: write ``record`` (it is already added)."""

    def records_of(self, workload: Workload, target: Any = None) -> list[TuningRecord]:
        """Every record of ``workload`` (for ``target`` if given), failed ones included."""
        out = self._by_workload.get(id(workload), [])
        if target is not None:
            key = target_key(target)
            out = [r for r in out if target_key(r.target) == key]
        return list(out)

    def get_top_k(self, workload: Workload, k: int, target: Any = None) -> list[TuningRecord]:
        if k < 0:
            raise ValueError(f"get_top_k: k must be >= 0, got {k}")
        ok = [r for r in self.records_of(workload, target) if r.mean_sec is not None]
        ok.sort(key=lambda r: r.mean_sec)
        return ok[:k]

    def get_all_tuning_records(self) -> list[TuningRecord]:
        return list(self._records)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._workloads)} workloads, " \
               f"{len(self._records)} records)"
