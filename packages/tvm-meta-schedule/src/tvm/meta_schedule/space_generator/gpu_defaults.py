"""The design space of GPU targets (CUDA, OpenCL, Metal: targets whose keys hold ``"gpu"``):
schedule rules, postprocessors and mutators, each sized by the target's launch limits
(``max_num_threads``, ``thread_warp_size``, ``max_shared_memory_per_block``).

* :func:`gpu_sch_rules`: AutoInline (the framework's), MultiLevelTilingGPU (contractions:
  ``SSSRRSRS`` tiles, shared-memory operands, a local accumulator), CrossThreadReduction
  (row reductions over a group of threads), AutoBind (everything else, one thread per
  output); in that order, each taking the blocks the earlier ones left;
* :func:`gpu_postprocs`: RewriteUnrollGPU (the sampled unroll limits of the kernels), then
  VerifyGPUCode (the candidate fits the target's launch limits);
* :func:`gpu_mutator_probs`: the GPU-specific mutators (thread counts, kernel unroll
  limits); the generic mutators of sampled decisions (tile sizes, compute locations) are
  shared with the CPU space and added by its defaults.
"""

from __future__ import annotations

from typing import Any

__all__ = ["gpu_sch_rules", "gpu_postprocs", "gpu_mutator_probs", "check_gpu_target"]


def check_gpu_target(target: Any) -> Any:
    """``target`` as a Target; ValueError when it is not a GPU target."""
    from tvm.ir.target import as_target

    tgt = as_target(target)
    if "gpu" not in tuple(tgt.keys):
        raise ValueError(f"{str(tgt)!r} is not a GPU target (its keys {list(tgt.keys)} have "
                         "no 'gpu'); use the CPU defaults")
    return tgt


def gpu_sch_rules(target: Any) -> list[Any]:
    """The GPU schedule rules for ``target``, in the order they are applied."""
    from tvm.tir.schedule.rules import AutoInline

    from ..schedule_rule.auto_bind import AutoBind
    from ..schedule_rule.cross_thread_reduction import CrossThreadReduction
    from ..schedule_rule.multi_level_tiling_gpu import MultiLevelTilingGPU

    tgt = check_gpu_target(target)
    return [
        AutoInline(),
        MultiLevelTilingGPU.from_target(tgt),
        CrossThreadReduction.from_target(tgt),
        AutoBind.from_target(tgt),
    ]


def gpu_postprocs(target: Any) -> list[Any]:
    """The GPU postprocessors for ``target``."""
    from ..postproc.rewrite_unroll_gpu import RewriteUnrollGPU
    from ..postproc.verify_gpu_code import VerifyGPUCode

    return [RewriteUnrollGPU(), VerifyGPUCode(check_gpu_target(target))]


def gpu_mutator_probs(target: Any) -> dict[Any, float]:
    """GPU-specific mutators with their probabilities (to merge with the shared ones)."""
    from ..mutator.mutate_thread_binding import MutateThreadBinding
    from ..mutator.mutate_unroll_gpu import MutateUnrollGPU

    check_gpu_target(target)
    return {MutateThreadBinding(): 0.1, MutateUnrollGPU(): 0.05}
