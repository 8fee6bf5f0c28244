"""Bring your own backend: external backends' patterns and code generators, partitioning.

:mod:`.registry` (:class:`Backend`, :class:`FusionPattern`, the plugin hook
``tvm_relax_register_backends``), :mod:`.report` (:class:`OffloadReport`) and
:func:`partition_for` (FuseOpsByPattern with the backends' patterns, MergeCompositeFunctions
when asked, RunCodegen).  ``docs/tutorials/external_codegen.md`` walks through it.
"""

from .partition import desired_layouts, offload, partition_for
from .registry import (Backend, BackendSpecs, FusionPattern, PatternCheckContext,
                       backend_of_pattern, get_backend, get_pattern, get_patterns_with_prefix,
                       list_backends, register_backend, unregister_backend)
from .report import OffloadReport, Partition, Rejection

__all__ = [
    "desired_layouts",
    "Backend", "BackendSpecs", "FusionPattern", "PatternCheckContext", "OffloadReport",
    "Partition", "Rejection", "register_backend", "unregister_backend", "get_backend",
    "list_backends", "get_patterns_with_prefix", "get_pattern", "backend_of_pattern",
    "partition_for", "offload",
]
