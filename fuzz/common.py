"""What every fuzz target shares: the failure type, the target registry and the check that an
exception is one of the kinds a caller was promised."""

from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: target name -> module of fuzz/ that implements it
TARGETS = {
    "relax_graphs": "fuzz.relax_graphs",
    "onnx_models": "fuzz.onnx_models",
    "tvmscript": "fuzz.tvmscript",
    "json_docs": "fuzz.json_docs",
    "executables": "fuzz.executables",
}

#: targets for the harness's own tests, not run by ``--target all``
SELF_TEST_TARGETS = {"_crash_for_test": "fuzz._selftest"}


class Failure(Exception):
    """An oracle violation: ``kind`` (``wrong-answer``, ``unexpected-exception``, ...) and a
    readable detail.  Crashes and hangs are found by the runner, not raised."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass
class Outcome:
    """How a case ended: ``ok`` (including an allowed exception), or a failure kind."""

    kind: str
    detail: str = ""


def load_target(name: str) -> ModuleType:
    """The module implementing target ``name`` (it defines ``cases()`` and ``check(case)``)."""
    module = TARGETS.get(name) or SELF_TEST_TARGETS.get(name)
    if module is None:
        raise KeyError(f"unknown fuzz target {name!r}; known: {', '.join(TARGETS)}")
    return importlib.import_module(module)


def describe(err: BaseException) -> str:
    """``Type: message`` plus the innermost frames, enough to find where it came from."""
    frames = traceback.extract_tb(err.__traceback__)[-3:]
    where = "; ".join(f"{f.filename.rsplit('/src/', 1)[-1]}:{f.lineno} {f.name}" for f in frames)
    return f"{type(err).__module__}.{type(err).__name__}: {str(err)[:500]} [at {where}]"


def expect_clean(err: BaseException, allowed: tuple[type[BaseException], ...], what: str) -> None:
    """Raise :class:`Failure` unless ``err`` is an instance of one of ``allowed``."""
    if isinstance(err, Failure):
        raise err
    if not isinstance(err, allowed):
        names = ", ".join(a.__name__ for a in allowed)
        raise Failure("unexpected-exception",
                      f"{what} raised {describe(err)}; expected one of {names}") from err


def to_jsonable(value: Any) -> Any:
    """Tuples as lists (a case goes through JSON to the corpus and back unchanged)."""
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value
