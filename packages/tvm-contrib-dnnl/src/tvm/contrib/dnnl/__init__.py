"""Offload float32 matmul, batch matmul and dense layers (optionally with a bias) to oneDNN.

::

    from tvm.contrib.dnnl import partition_for_dnnl
    mod = partition_for_dnnl(mod)                   # functions marked Codegen="dnnl"
    ex = relax.build(mod, offload=["dnnl"])         # or let relax.build partition

:func:`find_dnnl` says which library is used (or why none is).
"""

from __future__ import annotations

from typing import Any, Optional

from .library import DNNLLibrary, find_dnnl

__all__ = ["partition_for_dnnl", "find_dnnl", "DNNLLibrary"]


def partition_for_dnnl(mod: Any, report: Optional[Any] = None) -> Any:
    """``mod`` with what oneDNN takes cut out into functions marked ``Codegen="dnnl"``."""
    from tvm.relax.backend import partition_for

    from .plugin import make_backend

    return partition_for(mod, [make_backend()], report)
