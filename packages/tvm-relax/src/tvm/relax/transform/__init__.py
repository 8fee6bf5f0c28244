"""Relax passes (IRModule -> IRModule)."""

from .legalize_ops import LegalizeOps, get_legalize, register_legalize

__all__ = ["LegalizeOps", "register_legalize", "get_legalize"]
