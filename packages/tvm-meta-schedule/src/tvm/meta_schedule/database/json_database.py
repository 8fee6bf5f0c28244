"""JSONDatabase: two JSON-lines files that a tuning appends to and a later one resumes from.

``database_workload.json``, one kernel a line::

    {"shash": "9f0c...", "tvmscript": "@I.ir_module\\nclass Module: ...", "version": 1}

``database_tuning_record.json``, one measured candidate a line::

    {"workload": 0, "shash": "9f0c...", "trace": {"version": 1, "insts": [...],
     "decisions": [...]}, "target": "llvm -num-cores=2", "run_secs": [1.2e-05, ...],
     "args_info": [["TENSOR", "float32", [64, 64]], ...], "version": 1}

``workload`` is the line number (from 0) of the workload in its file and ``shash`` that
line's ``shash``: together they pair a record with its kernel.  ``shash`` is
``tvm.ffi.structural_hash`` of the kernel (the same in every process); a reader still
recomputes it from the parsed kernel for its lookups, so a file written under another
version of the hash (or a kernel whose TVMScript was edited) pairs its records by line and
is looked up by what the kernel is now.  ``run_secs`` is null for a
candidate that failed.  Kernels are stored as TVMScript and read back with the
TVMScript parser; traces as :meth:`Trace.as_json`: nothing is pickled or executed.  Each
line is flushed as it is written, so an interrupted tuning keeps every measurement.  On
reading, a line that does not parse, or is of another ``version``, is skipped with a
:class:`DatabaseWarning` naming the file and line.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import Optional, Union

from ..arg_info import TensorInfo
from .database import RECORD_VERSION, TuningRecord, Workload
from .memory_database import MemoryDatabase, target_key
from .workload import mod_from_tvmscript, mod_to_tvmscript, normalize_mod, shash_of

__all__ = ["JSONDatabase", "DatabaseWarning", "WORKLOAD_FILE", "RECORD_FILE"]

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"

logger = logging.getLogger("tvm.meta_schedule.database")

PathLike = Union[str, "os.PathLike[str]"]


class DatabaseWarning(UserWarning):
    """A line of a database file was skipped (corrupted, foreign version, unknown kernel)."""


class JSONDatabase(MemoryDatabase):
    """Records in ``work_dir`` (or in the two files named), read back on construction.

    ``allow_missing``: create missing files (and directories) instead of raising."""

    def __init__(self, work_dir: Optional[PathLike] = None, *,
                 path_workload: Optional[PathLike] = None,
                 path_tuning_record: Optional[PathLike] = None,
                 allow_missing: bool = True) -> None:
        super().__init__()
        if work_dir is None and (path_workload is None or path_tuning_record is None):
            raise ValueError("JSONDatabase: give work_dir, or both path_workload and "
                             "path_tuning_record")
        base = Path(work_dir) if work_dir is not None else None
        self.path_workload = Path(path_workload) if path_workload is not None \
            else base / WORKLOAD_FILE  # type: ignore[operator]
        self.path_tuning_record = Path(path_tuning_record) if path_tuning_record is not None \
            else base / RECORD_FILE  # type: ignore[operator]
        for path in (self.path_workload, self.path_tuning_record):
            if not path.exists():
                if not allow_missing:
                    raise FileNotFoundError(f"JSONDatabase: {path} does not exist")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            elif path.is_dir():
                raise IsADirectoryError(f"JSONDatabase: {path} is a directory, expected a "
                                        "JSON-lines file")
        self._line_of: dict[int, int] = {}   # id(workload) -> its line in the workload file
        self._file_shash: dict[int, str] = {}  # id(workload) -> the shash written on that line
        self._n_workload_lines = 0
        self.skipped = 0
        self._load()

    # -- reading ------------------------------------------------------------------------------
    def _skip(self, path: Path, lineno: int, why: str) -> None:
        self.skipped += 1
        msg = f"{path}:{lineno}: skipped: {why}"
        logger.warning("%s", msg)
        warnings.warn(msg, DatabaseWarning, stacklevel=3)

    @staticmethod
    def _lines(path: Path) -> list[str]:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()

    def _load(self) -> None:
        from tvm.ffi import structural_equal

        by_line: dict[int, tuple[Workload, str]] = {}
        lines = self._lines(self.path_workload)
        self._n_workload_lines = len(lines)
        for index, text in enumerate(lines):
            if not text.strip():
                continue
            where = (self.path_workload, index + 1)
            try:
                data = self._versioned(text, "workload", where)
                if data is None:
                    continue
                file_shash = data["shash"]
                if not isinstance(file_shash, str):
                    raise ValueError(f"shash must be a string, got {file_shash!r}")
                mod = normalize_mod(mod_from_tvmscript(data["tvmscript"]))
                shash = shash_of(mod)   # what the kernel hashes to now (module docstring)
            except Exception as err:  # noqa: BLE001 - any bad line is skipped
                self._skip(*where, f"not a workload ({type(err).__name__}: {err})")
                continue
            same = [w for w in self._by_hash.get(shash, ()) if structural_equal(w.mod, mod)]
            if same:
                wl = same[0]
            else:
                wl = Workload(mod, shash)
                self._add_workload(wl)
                self._line_of[id(wl)] = index
                self._file_shash[id(wl)] = file_shash
            by_line[index] = (wl, file_shash)
        for lineno, text in enumerate(self._lines(self.path_tuning_record), start=1):
            if not text.strip():
                continue
            record = self._parse_record(text, by_line, lineno)
            if record is not None:
                self._add_record(record)

    def _versioned(self, text: str, what: str, where: tuple[Path, int]) -> Optional[dict]:
        """The JSON object of a line; None (skipped with a warning) when it is of another
        version; ValueError when it is not an object."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("version") != RECORD_VERSION:
            self._skip(*where, f"{what} of version {data.get('version')!r}; this tuner reads "
                       f"version {RECORD_VERSION}")
            return None
        return data

    def _parse_record(self, text: str, by_line: dict[int, tuple[Workload, str]],
                      lineno: int) -> Optional[TuningRecord]:
        from tvm.ir.target import as_target
        from tvm.tir.schedule import Trace

        where = (self.path_tuning_record, lineno)
        try:
            data = self._versioned(text, "record", where)
            if data is None:
                return None
            entry = by_line.get(data.get("workload"))
            wl = entry[0] if entry is not None and entry[1] == data.get("shash") else None
            if wl is None:
                self._skip(*where, f"its workload (line {data.get('workload')!r} of "
                           f"{self.path_workload.name}, hash {data.get('shash')!r}) is unknown")
                return None
            run_secs = data.get("run_secs")
            if run_secs is not None:
                if not isinstance(run_secs, list) or not all(
                        isinstance(s, (int, float)) and not isinstance(s, bool) and s >= 0
                        for s in run_secs):
                    raise ValueError(f"run_secs must be null or non-negative numbers, got "
                                     f"{run_secs!r}")
                run_secs = [float(s) for s in run_secs]
            return TuningRecord(
                trace=Trace.from_json(data["trace"]), workload=wl,
                target=as_target(data["target"]), run_secs=run_secs,
                args_info=[TensorInfo.from_json(a) for a in data.get("args_info", [])],
                version=RECORD_VERSION,
            )
        except Exception as err:  # noqa: BLE001 - any bad line is skipped
            self._skip(*where, f"not a tuning record ({type(err).__name__}: {err})")
            return None

    # -- writing ------------------------------------------------------------------------------
    @staticmethod
    def _append(path: Path, line: str) -> None:
        with open(path, "a+b") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() > 0:  # an interrupted last line must not swallow this one
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
            f.write(line.encode("utf-8") + b"\n")
            f.flush()

    def _line_count(self) -> int:
        with open(self.path_workload, "rb") as f:
            data = f.read()
        return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)

    def _persist_workload(self, wl: Workload) -> None:
        line = json.dumps({"shash": wl.shash, "tvmscript": mod_to_tvmscript(wl.mod),
                           "version": RECORD_VERSION})
        self._line_of[id(wl)] = self._line_count()
        self._file_shash[id(wl)] = wl.shash
        self._append(self.path_workload, line)

    def _persist_record(self, record: TuningRecord) -> None:
        line = json.dumps({
            "workload": self._line_of[id(record.workload)],
            "shash": self._file_shash[id(record.workload)],
            "trace": json.loads(record.trace.as_json()),
            "target": target_key(record.target),
            "run_secs": None if record.run_secs is None else [float(s) for s in record.run_secs],
            "args_info": [a.as_json() for a in record.args_info],
            "version": record.version,
        })
        self._append(self.path_tuning_record, line)

    def __repr__(self) -> str:
        return f"JSONDatabase({str(self.path_workload.parent)!r}, " \
               f"{len(self._workloads)} workloads, {len(self._records)} records)"
