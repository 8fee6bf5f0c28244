"""The design space of a target: schedule rules, postprocessors and mutator probabilities.

:func:`default_sch_rules`, :func:`default_postprocs` and :func:`default_mutator_probs`
dispatch on the target's keys: a target with key ``"gpu"`` gets :func:`_gpu_defaults`,
every other one the CPU parts, sized by hook ``tvm_tir_cpu_info`` (vector lanes, cores).
A space generator whose parts are None gets these (:func:`initialize_space_parts`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["default_sch_rules", "default_postprocs", "default_mutator_probs",
           "initialize_space_parts"]


def _target(target: Any) -> Any:
    from tvm.ir.target import as_target

    return as_target(target)


def _is_gpu(target: Any) -> bool:
    return "gpu" in tuple(target.keys)


def _gpu_defaults(target: Any) -> tuple[list[Any], list[Any], dict[Any, float]]:
    """``(sch_rules, postprocs, mutator_probs)`` of a GPU target (:mod:`.gpu_defaults`),
    with the mutators of sampled decisions both kinds of space share."""
    from ..mutator import MutateComputeLocation, MutateTileSize
    from .gpu_defaults import gpu_mutator_probs, gpu_postprocs, gpu_sch_rules

    mutators = {MutateTileSize(): 0.8, MutateComputeLocation(): 0.05}
    mutators.update(gpu_mutator_probs(target))
    return gpu_sch_rules(target), gpu_postprocs(target), mutators


def _cpu_sch_rules(target: Any) -> list[Any]:
    from ..schedule_rule import (
        AddRFactor, AutoInline, MultiLevelTiling, ParallelizeVectorizeUnroll,
        RandomComputeLocation, cpu_info,
    )
    from ..schedule_rule.target_info import num_cores

    cpu = cpu_info(target)
    cores = num_cores(cpu)
    return [
        AutoInline(),
        AddRFactor(max_jobs_per_core=16, num_cores=cores),
        MultiLevelTiling("SSRSRS", reuse_write="may", write_levels=(1, 2),
                         pack_operands="may", cpu=cpu),
        ParallelizeVectorizeUnroll(jobs_per_core=(1, 4, 16, 64),
                                   max_vectorize_extent=4 * cpu.lanes("float32"),
                                   unroll_max_steps=(0, 16, 64), num_cores=cores),
        RandomComputeLocation(),
    ]


def _cpu_postprocs(target: Any) -> list[Any]:
    # VerifyTraceReplay is not among them: replay is deterministic, and it doubles the cost
    # of every candidate (a record that fails to replay falls back to the default schedule)
    from ..postproc import (
        RewriteParallelVectorizeUnroll, RewriteReductionBlock, VerifyVectorization,
    )
    from ..schedule_rule import cpu_info

    cpu = cpu_info(target)
    return [RewriteReductionBlock(), RewriteParallelVectorizeUnroll(),
            VerifyVectorization(max_lanes=16 * cpu.lanes("float32"))]


def _cpu_mutator_probs(target: Any) -> dict[Any, float]:
    from ..mutator import MutateComputeLocation, MutateParallel, MutateTileSize, MutateUnroll

    return {MutateTileSize(): 0.9, MutateComputeLocation(): 0.05, MutateUnroll(): 0.03,
            MutateParallel(): 0.02}


def default_sch_rules(target: Any) -> list[Any]:
    """The schedule rules of ``target``'s design space."""
    target = _target(target)
    return _gpu_defaults(target)[0] if _is_gpu(target) else _cpu_sch_rules(target)


def default_postprocs(target: Any) -> list[Any]:
    """The postprocessors every candidate of ``target`` goes through, in order."""
    target = _target(target)
    return _gpu_defaults(target)[1] if _is_gpu(target) else _cpu_postprocs(target)


def default_mutator_probs(target: Any) -> dict[Any, float]:
    """Mutator -> probability of being picked when a candidate of ``target`` mutates."""
    target = _target(target)
    return _gpu_defaults(target)[2] if _is_gpu(target) else _cpu_mutator_probs(target)


def initialize_space_parts(space: Any, context: Any, rules: bool = True) -> None:
    """Fill ``space``'s parts left None with the defaults of ``context.target`` and
    initialize every part that takes a tune context."""
    target = context.target
    if rules and space.sch_rules is None:
        space.sch_rules = default_sch_rules(target)
    if space.postprocs is None:
        space.postprocs = default_postprocs(target)
    if space.mutator_probs is None:
        space.mutator_probs = default_mutator_probs(target)
    parts = [*(space.sch_rules or []), *(space.postprocs or []),
             *(space.mutator_probs or {})]
    for part in parts:
        init = getattr(part, "initialize_with_tune_context", None)
        if init is not None:
            init(context)
