"""Operators the VM lowering introduces (``relax.builtin.*``)."""

from .builtin import alloc_tensor

__all__ = ["alloc_tensor"]
