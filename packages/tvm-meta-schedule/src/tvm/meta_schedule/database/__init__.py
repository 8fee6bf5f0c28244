"""The tuning-record database: :class:`JSONDatabase` (JSON-lines files in a work directory,
resumable) and :class:`MemoryDatabase`; ``db.query_schedule(mod, target)`` replays the best
record, ``with db.applied(): relax.build(...)`` builds with the records."""

from .database import RECORD_VERSION, Database, TuningRecord, Workload, replay_record
from .json_database import RECORD_FILE, WORKLOAD_FILE, DatabaseWarning, JSONDatabase
from .memory_database import MemoryDatabase
from .workload import normalize_mod, shash_of

__all__ = ["Database", "Workload", "TuningRecord", "RECORD_VERSION", "JSONDatabase",
           "MemoryDatabase", "DatabaseWarning", "WORKLOAD_FILE", "RECORD_FILE",
           "normalize_mod", "shash_of", "replay_record"]
