"""tvm.meta_schedule: the auto-tuner.

::

    from tvm import meta_schedule as ms

    db = ms.tune_tir(func, target="llvm -num-cores=2", work_dir="tune", max_trials_global=64)
    sch = db.query_schedule(func, target)             # the best schedule found
    db = ms.tune_relax(mod, params, target, work_dir, max_trials_global=2000)
    with db.applied():
        ex = relax.build(mod, target)                 # tuned kernels, default rules elsewhere

The parts, one subpackage each: ``space_generator`` (a kernel's design space from
``schedule_rule``\\ s, with ``mutator``\\ s and ``postproc``\\ s), ``search_strategy``
(replay, evolutionary search), ``cost_model`` and ``feature_extractor`` (XGBoost over
per-store features), ``builder`` and ``runner`` (worker processes, Ray), ``database``
(JSON-lines records), ``task_scheduler`` (one budget over a model's tasks); ``tune.py`` and
``relax_integration.py`` put them together.  See docs/tutorials/auto_tuning.md.
"""

from __future__ import annotations

import importlib
from typing import Any

_SUBPACKAGES = (
    "arg_info", "builder", "cost_model", "database", "feature_extractor", "measure_candidate",
    "mutator", "postproc", "relax_integration", "runner", "schedule_rule", "search_strategy",
    "space_generator", "task_scheduler", "tune", "tune_context",
)

#: public name -> module that defines it
_EXPORTS = {
    "TuneContext": "tune_context",
    "TensorInfo": "arg_info",
    "MeasureCandidate": "measure_candidate",
    "tune_tir": "tune",
    "tune_tasks": "tune",
    "tune_relax": "relax_integration",
    "extract_tasks": "relax_integration",
    "compile_relax": "relax_integration",
}

__all__ = list(_SUBPACKAGES) + list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
