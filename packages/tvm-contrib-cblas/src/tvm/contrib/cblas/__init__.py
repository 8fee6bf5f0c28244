"""Offload float32 matmul, batch matmul and dense layers (optionally with a bias) to CBLAS.

::

    from tvm.contrib.cblas import partition_for_cblas
    mod = partition_for_cblas(mod)                  # functions marked Codegen="cblas"
    ex = relax.build(mod, offload=["cblas"])        # or let relax.build partition

:func:`find_cblas` says which library is used (or why none is); see
``docs/tutorials/external_codegen.md``.
"""

from __future__ import annotations

from typing import Any, Optional

from .library import CBLASLibrary, find_cblas

__all__ = ["partition_for_cblas", "find_cblas", "CBLASLibrary"]


def partition_for_cblas(mod: Any, report: Optional[Any] = None) -> Any:
    """``mod`` with what cblas takes cut out into functions marked ``Codegen="cblas"``."""
    from tvm.relax.backend import partition_for

    from .plugin import make_backend

    return partition_for(mod, [make_backend()], report)
