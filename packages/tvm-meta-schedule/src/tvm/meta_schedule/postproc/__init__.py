"""Postprocessors: finish (with traced primitives) or verify a candidate; False rejects it.

* :class:`RewriteReductionBlock`: the init of a tiled reduction as its own block
* :class:`RewriteParallelVectorizeUnroll`: the root annotations made real
* :class:`VerifyVectorization`: vector loops the code generator makes vector code of
* :class:`VerifyTraceReplay`: the candidate's trace reproduces it
* GPU: :class:`RewriteUnrollGPU` (sampled unroll limits), :class:`VerifyGPUCode` (launch
  limits of the target)
* :func:`apply_postprocs`: run a list of them on a candidate
"""

from __future__ import annotations

from .apply import apply_postprocs
from .postproc import Postproc
from .rewrite_parallel_vectorize_unroll import RewriteParallelVectorizeUnroll
from .rewrite_reduction_block import RewriteReductionBlock
from .rewrite_unroll_gpu import RewriteUnrollGPU
from .verify_gpu_code import VerifyGPUCode
from .verify_replay import VerifyTraceReplay
from .verify_vector import VerifyVectorization, vector_loop_problems

__all__ = ["Postproc", "RewriteParallelVectorizeUnroll", "RewriteReductionBlock",
           "VerifyVectorization", "VerifyTraceReplay", "apply_postprocs",
           "vector_loop_problems", "RewriteUnrollGPU", "VerifyGPUCode"]
