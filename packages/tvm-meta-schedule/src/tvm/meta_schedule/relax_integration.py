"""Whole models: the kernels of a Relax module as tuning tasks, one budget over them, and a
build that uses the records.

::

    tasks = ms.extract_tasks(mod, target, params)        # unique kernels, call counts
    db = ms.tune_relax(mod, params, target, "tune", max_trials_global=2000)
    ex = ms.compile_relax(db, mod, target, params)       # = with db.applied(): relax.build

The kernels are those ``relax.build``'s scheduling step asks the tuned-schedule hook about:
:func:`extract_tasks` runs the same steps (``bind_params``, ``default_pipeline`` under the
target, ``AnnotateLayoutFreeBuffers``), so their structural hashes are the ones the build
looks up.  Relax is imported only here, inside functions (extra ``tvm-meta-schedule[relax]``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

__all__ = ["ExtractedTask", "extract_tasks", "tune_relax", "compile_relax"]

logger = logging.getLogger("tvm.meta_schedule.relax_integration")


@dataclass
class ExtractedTask:
    """A unique kernel of a model: ``task_name`` (the first fused function's name), ``mod``
    (an IRModule whose ``main`` is the PrimFunc), ``target``, ``weight`` (how many times the
    model calls it) and ``dispatched`` (the names of every structurally equal function)."""

    task_name: str
    mod: Any
    target: Any
    weight: int
    dispatched: list[str]


def _relax() -> Any:
    try:
        import tvm.relax as relax
    except ImportError as err:  # pragma: no cover - depends on the installation
        raise ImportError("the Relax integration of tvm-meta-schedule needs tvm-relax: "
                          "pip install 'tvm-meta-schedule[relax]'") from err
    return relax


def scheduling_input(mod: Any, target: Any, params: Optional[Mapping[str, Any]] = None) -> Any:
    """The module as ``relax.build`` hands it to its scheduling step: parameters bound, the
    default graph pipeline run under ``target``, layout-free buffers annotated."""
    from tvm.ir.module import IRModule
    from tvm.ir.target import as_target

    relax = _relax()
    from tvm.relax import transform as T
    from tvm.relax.vm.build import bind_params, default_pipeline

    if isinstance(mod, relax.Function):
        mod = IRModule({"main": mod})
    if not isinstance(mod, IRModule):
        raise TypeError(f"extract_tasks: expected a Relax IRModule, got {type(mod).__name__}")
    tgt = as_target(target)
    if params:
        mod = bind_params(mod, params)
    with tgt:
        mod = default_pipeline()(mod)
        mod = T.AnnotateLayoutFreeBuffers()(mod)
    return mod


def _call_counts(mod: Any) -> dict[str, int]:
    from tvm.ir.module import GlobalVar
    from tvm.ir.op import Op
    from tvm.relax.expr import Function
    from tvm.relax.expr_functor import ExprVisitor

    counts: dict[str, int] = {}

    class _Calls(ExprVisitor):
        def visit_call_(self, call: Any) -> None:
            if isinstance(call.op, Op) and call.op.name == "relax.call_tir" and call.args \
                    and isinstance(call.args[0], GlobalVar):
                name = call.args[0].name_hint
                counts[name] = counts.get(name, 0) + 1
            super().visit_call_(call)

    for _, func in mod.items():
        if isinstance(func, Function):
            _Calls().visit_expr(func)
    return counts


def extract_tasks(mod: Any, target: Any, params: Optional[Mapping[str, Any]] = None,
                  ) -> list[ExtractedTask]:
    """The unique kernels of a Relax module (after fusion), deduplicated by structural
    equality, weighted by call count, in the order the module first defines them.  Kernels
    the default schedule leaves as they are (already scheduled) and kernels with symbolic
    shapes (a task measures one concrete workload; give the model static input shapes to
    tune them) are not tasks: they keep the default schedule."""
    from tvm.ffi import structural_equal
    from tvm.ir.target import as_target
    from tvm.tir.function import PrimFunc
    from tvm.tir.schedule.rules import SCHEDULED_ATTR

    from .arg_info import args_info
    from .database.workload import normalize_mod, shash_of

    tgt = as_target(target)
    lowered = scheduling_input(mod, tgt, params)
    counts = _call_counts(lowered)
    tasks: list[ExtractedTask] = []
    symbolic: list[str] = []
    by_hash: dict[str, list[ExtractedTask]] = {}
    for gv, func in lowered.items():
        if not isinstance(func, PrimFunc) or func.attrs.get(SCHEDULED_ATTR):
            continue
        name = gv.name_hint
        weight = counts.get(name, 0)
        if weight == 0 and counts:
            continue  # not called by the model
        weight = max(weight, 1)
        try:
            args_info(func)
        except ValueError as err:
            symbolic.append(name)
            logger.info("kernel %s is not a tuning task: %s", name, err)
            continue
        norm = normalize_mod(func)
        shash = shash_of(norm)
        same = [t for t in by_hash.get(shash, ()) if structural_equal(t.mod, norm)]
        if same:
            same[0].weight += weight
            same[0].dispatched.append(name)
            continue
        task = ExtractedTask(name, norm, tgt, weight, [name])
        by_hash.setdefault(shash, []).append(task)
        tasks.append(task)
    if symbolic:
        logger.warning("%d kernels have symbolic shapes and keep their default schedule: %s",
                       len(symbolic), ", ".join(symbolic[:8]) + (" ..." if len(symbolic) > 8
                                                                  else ""))
    return tasks


def tune_relax(mod: Any, params: Optional[Mapping[str, Any]], target: Any, work_dir: Any,
               max_trials_global: int, num_trials_per_iter: int = 64, *,
               max_trials_per_task: Optional[int] = None, builder: Any = "local",
               runner: Any = "local", database: Any = None, cost_model: Any = "xgb",
               strategy: Any = "evolutionary", space: Any = "post-order-apply",
               task_scheduler: Any = "gradient", measure_callbacks: Sequence[Any] = (),
               seed: Optional[int] = None, num_threads: int = 1,
               check_correctness: Any = "auto", progress: bool = True) -> Any:
    """Tune every kernel of a Relax module under one budget (gradient-based task scheduling
    by default, weights = call counts) and return the database; build with
    :func:`compile_relax` or ``with db.applied(): relax.build(...)``."""
    from .tune import tune_tasks

    tasks = extract_tasks(mod, target, params)
    if not tasks:
        raise ValueError("tune_relax: the module has no kernel to tune (kernels with "
                         "symbolic shapes are not tuned: give the model static shapes)")
    return tune_tasks(
        [t.mod for t in tasks], target, work_dir, max_trials_global, num_trials_per_iter,
        task_names=[t.task_name for t in tasks], task_weights=[t.weight for t in tasks],
        max_trials_per_task=max_trials_per_task, builder=builder, runner=runner,
        database=database, cost_model=cost_model, strategy=strategy, space=space,
        task_scheduler=task_scheduler, measure_callbacks=measure_callbacks, seed=seed,
        num_threads=num_threads, check_correctness=check_correctness, progress=progress)


def compile_relax(database: Any, mod: Any, target: Any,
                  params: Optional[Mapping[str, Any]] = None) -> Any:
    """``relax.build(mod, target, params)`` with ``database``'s records applied: tuned kernels
    where a record exists, the default schedule elsewhere."""
    relax = _relax()
    with database.applied(target):
        return relax.build(mod, target, params=params)
