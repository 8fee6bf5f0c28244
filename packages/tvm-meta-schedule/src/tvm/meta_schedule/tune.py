"""``ms.tune_tir`` (one kernel) and ``ms.tune_tasks`` (several, one budget): the parts put
together, with defaults named by strings.

::

    db = ms.tune_tir(func, "llvm -num-cores=2", work_dir="tune", max_trials_global=64)
    sch = db.query_schedule(func, "llvm -num-cores=2")

Defaults (each also takes an instance): ``builder="local"`` (:class:`~.builder.LocalBuilder`),
``runner="local"`` (:class:`~.runner.LocalRunner`), ``cost_model="xgb"`` (:class:`XGBModel`;
``"random"``: :class:`RandomModel`; None: no model), ``strategy="evolutionary"``
(``"replay-trace"``: :class:`~.search_strategy.ReplayTrace`), ``space="post-order-apply"``
(:class:`~.space_generator.PostOrderApply`), ``task_scheduler="gradient"`` (``"round-robin"``).

Determinism: the same ``seed`` gives the same sampled decisions and, given the same
measured times, the same search.  Measured times vary from run to run, so a search guided
by them (the cost model, the evolutionary selection, the task scheduler) can diverge once
two candidates' times are close; ``ReplayTrace`` and the first batch do not depend on them.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

from .tune_context import TuneContext

__all__ = ["tune_tir", "tune_tasks", "resolve_builder", "resolve_runner",
           "resolve_cost_model", "resolve_strategy", "resolve_space", "resolve_task_scheduler"]

Spec = Union[str, Any, None]


def _make(spec: Spec, table: dict[str, Callable[[], Any]], what: str, fresh: bool) -> Any:
    if isinstance(spec, str):
        if spec not in table:
            raise ValueError(f"unknown {what} {spec!r}; known: {', '.join(sorted(table))}")
        return table[spec]()
    if isinstance(spec, type):
        return spec()
    return copy.deepcopy(spec) if fresh else spec


def resolve_builder(spec: Spec) -> Any:
    def local() -> Any:
        from .builder import LocalBuilder

        return LocalBuilder()

    return _make(spec, {"local": local}, "builder", fresh=False)


def resolve_runner(spec: Spec) -> Any:
    def local() -> Any:
        from .runner import LocalRunner

        return LocalRunner()

    return _make(spec, {"local": local}, "runner", fresh=False)


def resolve_cost_model(spec: Spec) -> Any:
    if spec is None:
        return None

    def xgb() -> Any:
        from .cost_model import XGBModel

        return XGBModel()

    def rand() -> Any:
        from .cost_model import RandomModel

        return RandomModel()

    return _make(spec, {"xgb": xgb, "random": rand}, "cost model", fresh=False)


def resolve_strategy(spec: Spec) -> Any:
    """A new search strategy (one per task: a given instance is copied)."""

    def evolutionary() -> Any:
        from .search_strategy import EvolutionarySearch

        return EvolutionarySearch()

    def replay() -> Any:
        from .search_strategy import ReplayTrace

        return ReplayTrace()

    return _make(spec, {"evolutionary": evolutionary, "replay-trace": replay},
                 "search strategy", fresh=True)


def resolve_space(spec: Spec) -> Any:
    """A new space generator (one per task: a given instance is copied)."""

    def post_order_apply() -> Any:
        from .space_generator import PostOrderApply

        return PostOrderApply()

    return _make(spec, {"post-order-apply": post_order_apply}, "space generator", fresh=True)


def resolve_task_scheduler(spec: Spec) -> Any:
    def gradient() -> Any:
        from .task_scheduler import GradientBased

        return GradientBased()

    def round_robin() -> Any:
        from .task_scheduler import RoundRobin

        return RoundRobin()

    return _make(spec, {"gradient": gradient, "round-robin": round_robin}, "task scheduler",
                 fresh=False)


def _database(database: Any, work_dir: Any) -> Any:
    if database is not None:
        return database
    if work_dir is None:
        from .database import MemoryDatabase

        return MemoryDatabase()
    from .database import JSONDatabase

    return JSONDatabase(work_dir)


def tune_tasks(mods: Sequence[Any], target: Any, work_dir: Any, max_trials_global: int,
               num_trials_per_iter: int = 64, *, task_names: Optional[Sequence[str]] = None,
               task_weights: Optional[Sequence[float]] = None,
               max_trials_per_task: Optional[int] = None, builder: Spec = "local",
               runner: Spec = "local", database: Any = None, cost_model: Spec = "xgb",
               strategy: Spec = "evolutionary", space: Spec = "post-order-apply",
               task_scheduler: Spec = "gradient", measure_callbacks: Sequence[Any] = (),
               seed: Optional[int] = None, num_threads: int = 1,
               check_correctness: Any = "auto", progress: bool = True) -> Any:
    """Tune several kernels (PrimFuncs or IRModules with a ``main``) under one budget of
    ``max_trials_global`` measured candidates and return the database (a JSONDatabase in
    ``work_dir`` unless ``database`` is given; tuning resumes from the records in it).

    Each task's default schedule is measured first, once (a resumed tuning finds it in the
    database), so that a build with the records never takes a slower schedule; it counts
    as a trial, and is measured even when there are more tasks than trials.  Ctrl-C raises
    KeyboardInterrupt after the summary; every measured candidate is in the database."""
    from .progress import task_logger

    if not mods:
        raise ValueError("tune_tasks: no kernel to tune")
    names = list(task_names) if task_names is not None else \
        [f"task_{i}" if len(mods) > 1 else "main" for i in range(len(mods))]
    weights = list(task_weights) if task_weights is not None else [1.0] * len(mods)
    if len(names) != len(mods) or len(weights) != len(mods):
        raise ValueError(f"tune_tasks: {len(mods)} kernels, {len(names)} names, "
                         f"{len(weights)} weights")
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
    db = _database(database, work_dir)
    master = random.Random(seed)
    tasks = []
    for mod, name in zip(mods, names):
        tasks.append(TuneContext(
            mod, target, space_generator=resolve_space(space),
            search_strategy=resolve_strategy(strategy), task_name=name,
            seed=master.randrange(1 << 30), num_threads=num_threads,
            logger=task_logger(name)))
    scheduler = resolve_task_scheduler(task_scheduler)
    return scheduler.tune(
        tasks, weights, max_trials_global, max_trials_per_task, num_trials_per_iter,
        resolve_builder(builder), resolve_runner(runner), measure_callbacks, db,
        resolve_cost_model(cost_model), work_dir=work_dir, check_correctness=check_correctness,
        progress=progress)


def tune_tir(mod: Any, target: Any, work_dir: Any, max_trials_global: int,
             num_trials_per_iter: int = 64, *, builder: Spec = "local", runner: Spec = "local",
             database: Any = None, cost_model: Spec = "xgb", strategy: Spec = "evolutionary",
             space: Spec = "post-order-apply", seed: Optional[int] = None,
             task_name: str = "main", measure_callbacks: Sequence[Any] = (),
             num_threads: int = 1, check_correctness: Any = "auto",
             progress: bool = True) -> Any:
    """Tune one kernel (a PrimFunc or an IRModule with a ``main``) with at most
    ``max_trials_global`` measured candidates (the default schedule, measured first for
    comparison, is one of them) and return the database; ``db.query_schedule(mod, target)``
    gives the best schedule found."""
    return tune_tasks(
        [mod], target, work_dir, max_trials_global, num_trials_per_iter,
        task_names=[task_name], builder=builder, runner=runner, database=database,
        cost_model=cost_model, strategy=strategy, space=space, task_scheduler="round-robin",
        measure_callbacks=measure_callbacks, seed=seed, num_threads=num_threads,
        check_correctness=check_correctness, progress=progress)
