"""Task schedulers: share one global trial budget among the tasks of a model.

:meth:`TaskScheduler.tune` is the loop; a subclass only chooses the task that gets the next
batch (:meth:`next_task_id`)::

    for each task: commit its workload; measure the default schedule (a record like any
        other, so "a record beats the default" is known); build and run the untuned kernel
        here on random inputs for the correctness check; design spaces; pre_tuning
    while (i := next_task_id()) >= 0:
        batch = task i's strategy.generate_measure_candidates()   # None: the task is done
        build (Builder), run (Runner, with the check), commit each record as it arrives,
        strategy.notify_runner_results, cost_model.update, measure callbacks, progress

A candidate that fails to build, crashes, times out or computes a wrong result is committed
with ``run_secs=None`` and the tuning goes on.  Ctrl-C (KeyboardInterrupt) stops it: what
was measured is already in the database, the summary is printed and logged, and the
KeyboardInterrupt is raised again.
"""

from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ..progress import Progress, TaskProgress, estimate_flops, remove_logs, setup_logs

__all__ = ["TaskScheduler", "TaskState", "MeasureCallback"]

logger = logging.getLogger("tvm.meta_schedule.task_scheduler")


class MeasureCallback(ABC):
    """Called after each measured batch: ``apply(task_scheduler, task_id, candidates,
    builder_results, runner_results)``.  A plain function of those arguments works too."""

    @abstractmethod
    def apply(self, task_scheduler: Any, task_id: int, candidates: list[Any],
              builder_results: list[Any], runner_results: list[Any]) -> None:
        """Look at (log, stop on, save) one measured batch of task ``task_id``."""


@dataclass
class TaskState:
    """A task during tuning: its context, weight, workload, progress and history of the
    best time after each of its batches (``(trials, best_sec)``, for gradient-based
    scheduling)."""

    ctx: Any
    weight: float
    progress: TaskProgress
    workload: Any = None
    check: Any = None
    default_key: Optional[str] = None
    done: bool = False
    rounds: int = 0
    history: list[tuple[int, float]] = field(default_factory=list)


def _is_remote_or_gpu(target: Any) -> bool:
    return "gpu" in tuple(target.keys) or bool(target.attrs.get("mtriple"))


class TaskScheduler(ABC):
    """Drives every task's search strategy, sends its candidates to the builder and runner,
    commits the results to the database and updates the cost model (see the module
    docstring); subclasses choose which task gets the next batch (:meth:`next_task_id`)."""

    tasks: list[TaskState]

    @abstractmethod
    def next_task_id(self) -> int:
        """Index of the task to tune next, or -1 when every task is done."""

    # -- for next_task_id ---------------------------------------------------------------------
    def total_trials(self) -> int:
        return sum(t.progress.trials for t in self.tasks)

    def alive_tasks(self) -> list[int]:
        """Tasks that may still get a batch (none once the global budget is spent)."""
        if self.total_trials() >= self.max_trials_global:
            return []
        return [i for i, t in enumerate(self.tasks)
                if not t.done and t.progress.trials < t.progress.max_trials]

    # -- the loop -----------------------------------------------------------------------------
    def tune(self, tasks: Sequence[Any], task_weights: Sequence[float], max_trials_global: int,
             max_trials_per_task: Optional[int], num_trials_per_iter: int, builder: Any,
             runner: Any, measure_callbacks: Sequence[Any], database: Any, cost_model: Any,
             *, work_dir: Any = None, check_correctness: Any = "auto",
             measure_default: bool = True, progress: bool = True) -> Any:
        """Tune ``tasks`` (TuneContexts with a space generator and a search strategy) and
        return ``database``.  ``check_correctness``: True, False or "auto" (compare with the
        untuned kernel when this machine can run the target's code: a CPU target without
        ``-mtriple``).  ``work_dir``: where ``logs/`` go (None: no log files)."""
        if len(tasks) != len(task_weights):
            raise ValueError(f"tune: {len(tasks)} tasks but {len(task_weights)} weights")
        if not tasks:
            raise ValueError("tune: no task to tune")
        if max_trials_global < 1 or num_trials_per_iter < 1:
            raise ValueError(f"tune: max_trials_global ({max_trials_global}) and "
                             f"num_trials_per_iter ({num_trials_per_iter}) must be >= 1")
        per_task = max_trials_global if max_trials_per_task is None else max_trials_per_task
        self.max_trials_global = max_trials_global
        self.num_trials_per_iter = num_trials_per_iter
        self.builder, self.runner, self.database = builder, runner, database
        self.cost_model = cost_model
        self.measure_callbacks = list(measure_callbacks or [])
        self.tasks = [
            TaskState(ctx, float(w), TaskProgress(ctx.task_name, float(w),
                                                  estimate_flops(ctx.mod), per_task))
            for ctx, w in zip(tasks, task_weights)
        ]
        self.reporter = Progress([t.progress for t in self.tasks], max_trials_global,
                                 enabled=progress)
        handlers = setup_logs(work_dir, [(t.ctx.task_name, t.ctx.logger) for t in self.tasks]) \
            if work_dir is not None else []
        logger.info("tuning %d tasks, %d trials, %d per batch; builder %r, runner %r",
                    len(self.tasks), max_trials_global, num_trials_per_iter, builder, runner)
        try:
            for task_id in range(len(self.tasks)):
                self._prepare(task_id, check_correctness, measure_default)
            self.on_prepared()
            while (task_id := self.next_task_id()) >= 0:
                self._tune_batch(task_id)
            for task in self.tasks:
                task.ctx.search_strategy.post_tuning()
            self.reporter.finish()
        except KeyboardInterrupt:
            logger.warning("tuning interrupted after %d trials; every measured candidate is in "
                           "the database (%r)", self.total_trials(), database)
            self.reporter.finish("Tuning summary (interrupted)")
            raise
        finally:
            remove_logs(handlers)
        return database

    def on_prepared(self) -> None:  # noqa: B027 - a hook for subclasses
        """Called once every task is prepared, before the first batch."""

    # -- preparing a task ---------------------------------------------------------------------
    def _prepare(self, task_id: int, check_correctness: Any, measure_default: bool) -> None:
        from ..search_strategy.replay_trace import trace_key

        task = self.tasks[task_id]
        ctx = task.ctx
        task.workload = self.database.commit_workload(ctx.mod)
        default = _default_schedule(ctx)
        # a resumed tuning: what the database knows already
        earlier = self.database.records_of(task.workload, ctx.target) \
            if hasattr(self.database, "records_of") else []
        if default is not None:
            task.default_key = trace_key(default.trace)
        for rec in earlier:
            if rec.mean_sec is None:
                continue
            if task.default_key is not None and trace_key(rec.trace) == task.default_key:
                task.progress.default_sec = min(task.progress.default_sec or math.inf,
                                                rec.mean_sec)
            else:
                task.progress.best_sec = min(task.progress.best_sec, rec.mean_sec)
        want_check = check_correctness is True or (
            check_correctness == "auto" and not _is_remote_or_gpu(ctx.target))
        if want_check:
            task.check = _correctness_check(ctx, default)
        if default is not None and measure_default and task.progress.default_sec is None:
            from ..arg_info import args_info
            from ..measure_candidate import MeasureCandidate

            cand = MeasureCandidate(default, args_info(ctx.mod))
            _, results = self._measure(task_id, [cand])
            if results[0].run_secs:
                task.progress.default_sec = sum(results[0].run_secs) / len(results[0].run_secs)
            else:
                ctx.logger.warning("the default schedule of %s failed: %s", ctx.task_name,
                                   results[0].error_msg)
        self._record_best(task)
        spaces = ctx.generate_design_space()
        ctx.search_strategy.pre_tuning(task.progress.max_trials, self.num_trials_per_iter,
                                       spaces, self.database, self.cost_model)
        ctx.logger.info("task %s: %d design spaces, %.3g FLOP, default %s", ctx.task_name,
                        len(spaces), task.progress.flops,
                        "-" if task.progress.default_sec is None
                        else f"{task.progress.default_sec * 1e6:.1f} us")

    # -- one batch ----------------------------------------------------------------------------
    def _tune_batch(self, task_id: int) -> None:
        task = self.tasks[task_id]
        batch = task.ctx.search_strategy.generate_measure_candidates()
        if not batch:
            task.done = True
            task.ctx.logger.info("task %s: the search is over", task.ctx.task_name)
            return
        room = min(self.max_trials_global - self.total_trials(),
                   task.progress.max_trials - task.progress.trials)
        batch = batch[:max(room, 0)]
        if not batch:
            task.done = True
            return
        builder_results, results = self._measure(task_id, batch)
        task.ctx.search_strategy.notify_runner_results(batch, results)
        if self.cost_model is not None:
            self.cost_model.update(task.ctx, batch, results)
        for callback in self.measure_callbacks:
            fn = callback.apply if hasattr(callback, "apply") else callback
            fn(self, task_id, batch, builder_results, results)
        task.rounds += 1
        self._record_best(task)
        self.reporter.update(task_id)

    def _record_best(self, task: TaskState) -> None:
        task.history.append((task.progress.trials, task.progress.best_overall))

    def _measure(self, task_id: int, candidates: list[Any]) -> tuple[list[Any], list[Any]]:
        """Build and run ``candidates`` of task ``task_id``, committing each record as its
        result arrives; the builder and runner results (a failed build: a RunnerResult with
        its error)."""
        from tvm.ir.module import IRModule
        from tvm.tir.schedule.rules import SCHEDULED_ATTR

        from ..builder.builder import BuilderInput, BuilderResult
        from ..runner.runner import RunnerInput, RunnerResult

        task = self.tasks[task_id]
        ctx = task.ctx
        inputs = [BuilderInput(IRModule({"main": c.sch.mod["main"].with_attr(SCHEDULED_ATTR,
                                                                              True)}),
                               ctx.target) for c in candidates]
        try:
            builder_results = self.builder.build(inputs)
        except Exception as err:  # noqa: BLE001 - a builder bug costs this batch only
            ctx.logger.warning("the builder %r raised %s: %s", self.builder,
                               type(err).__name__, err)
            builder_results = [BuilderResult(error_msg=f"the builder raised {err!r}")
                               for _ in inputs]
        if len(builder_results) != len(inputs):
            raise RuntimeError(f"the builder {self.builder!r} returned {len(builder_results)} "
                               f"results for {len(inputs)} inputs")
        device = ctx.target.kind_name if ctx.is_gpu else "cpu"
        results: list[Any] = [None] * len(candidates)
        to_run = []
        for i, (cand, built) in enumerate(zip(candidates, builder_results)):
            if built.error_msg is not None or built.artifact_path is None:
                results[i] = RunnerResult(error_msg=f"build failed: {built.error_msg}")
                self._commit(task, cand, results[i])
            else:
                to_run.append(i)
        futures = self.runner.run([
            RunnerInput(builder_results[i].artifact_path, device, candidates[i].args_info,
                        task.check) for i in to_run
        ]) if to_run else []
        for i, future in zip(to_run, futures):
            try:
                results[i] = future.result()
            except Exception as err:  # noqa: BLE001 - a runner bug costs one candidate
                results[i] = RunnerResult(error_msg=f"the runner raised {err!r}")
            self._commit(task, candidates[i], results[i])
        return builder_results, results

    def _commit(self, task: TaskState, cand: Any, result: Any) -> None:
        from ..database.database import TuningRecord

        run_secs = list(result.run_secs) if result.run_secs else None
        self.database.commit_tuning_record(TuningRecord(
            trace=cand.sch.trace, workload=task.workload, target=task.ctx.target,
            run_secs=run_secs, args_info=list(cand.args_info)))
        p = task.progress
        p.trials += 1
        if run_secs is None:
            p.failed += 1
            task.ctx.logger.info("candidate %d of %s failed: %s", p.trials, task.ctx.task_name,
                                 str(result.error_msg)[:2000])
            return
        sec = sum(run_secs) / len(run_secs)
        if sec < p.best_sec:
            p.best_sec = sec
            task.ctx.logger.info("candidate %d of %s: new best %.2f us", p.trials,
                                 task.ctx.task_name, sec * 1e6)


def _default_schedule(ctx: Any) -> Any:
    """The target's default schedule of the task's kernel as a Schedule replayed from its
    trace (so it is stored and compared like any candidate), or None where the default
    schedule leaves the kernel as it is or the target has no rules."""
    from tvm.tir.schedule import Schedule
    from tvm.tir.schedule.rules import apply_rules, has_blocks, looks_scheduled, rules_for_target

    func = ctx.mod["main"]
    if not has_blocks(func) or looks_scheduled(func):
        return None
    rules = rules_for_target(ctx.target)
    if not rules:
        return None
    try:
        trace = apply_rules(func, rules, ctx.task_name).trace
        sch = Schedule(ctx.mod)
        trace.apply_to_schedule(sch)
    except Exception as err:  # noqa: BLE001 - the tuning goes on without it
        ctx.logger.warning("no default schedule of %s to compare with: %s", ctx.task_name, err)
        return None
    return sch


def _correctness_check(ctx: Any, default: Any) -> Any:
    """The untuned kernel run here on reproducible random inputs: what every argument holds
    afterwards is what each candidate must compute.  None (with a warning) when it cannot
    be run here."""
    import tvm.runtime as rt
    from tvm.ir.module import IRModule
    from tvm.tir.build import build
    from tvm.tir.schedule.rules import SCHEDULED_ATTR

    from ..arg_info import args_info, random_inputs
    from ..runner.runner import CorrectnessCheck

    try:
        infos = args_info(ctx.mod)
        inputs = random_inputs(infos, ctx.seed)
        mod = ctx.mod if default is None else IRModule(
            {"main": default.mod["main"].with_attr(SCHEDULED_ATTR, True)})
        kernel = build(mod, ctx.target)
        tensors = [rt.tensor(a.copy()) for a in inputs]
        kernel["main"](*tensors)
        expected = [t.numpy() for t in tensors]
    except Exception as err:  # noqa: BLE001 - the tuning goes on without the check
        ctx.logger.warning("no correctness check for %s (the untuned kernel did not run "
                           "here): %s: %s", ctx.task_name, type(err).__name__, err)
        return None
    if any(not math.isfinite(float(abs(e).max())) for e in expected if e.size and
           e.dtype.kind == "f"):
        ctx.logger.warning("no correctness check for %s: the untuned kernel gives non-finite "
                           "values on random inputs", ctx.task_name)
        return None
    return CorrectnessCheck(inputs, expected)
