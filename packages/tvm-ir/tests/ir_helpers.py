"""Shared helpers of the tvm-ir tests: a minimal function kind and target-kind fixtures."""

from __future__ import annotations

from typing import Any

from tvm.ffi import register_object
from tvm.ir import BaseFunc, register_script_printer


@register_object("testing.ir.Func")
class Func(BaseFunc):
    """A toy function: ``body`` is any value (ints, tuples, GlobalVars for calls)."""

    body: Any


@register_object("testing.ir.OtherFunc")
class OtherFunc(BaseFunc):
    """A second toy kind, with no printer registered."""

    body: Any


def _print_func(func: Func, name: str, ctx: Any) -> str:
    return f"@F.func\ndef {name}():\n    return {func.body!r}"


register_script_printer(Func, _print_func, prelude="from tvm.script import toy as F")
