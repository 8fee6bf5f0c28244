"""Mutators: change one sampled decision of a trace (and nothing else).

* :class:`MutateTileSize` (``SamplePerfectTile``), :class:`MutateUnroll` and
  :class:`MutateParallel` (the ``SampleCategorical`` of the root annotations),
  :class:`MutateComputeLocation` (``SampleComputeLocation``)
* GPU: :class:`MutateThreadBinding` (thread counts), :class:`MutateUnrollGPU`
"""

from __future__ import annotations

from .mutate_compute_location import MutateComputeLocation
from .mutate_parallel import MutateParallel
from .mutate_thread_binding import MutateThreadBinding
from .mutate_tile_size import MutateTileSize
from .mutate_unroll import MutateUnroll
from .mutate_unroll_gpu import MutateUnrollGPU
from .mutator import Mutator

__all__ = ["Mutator", "MutateTileSize", "MutateUnroll", "MutateParallel",
           "MutateComputeLocation", "MutateThreadBinding", "MutateUnrollGPU"]
