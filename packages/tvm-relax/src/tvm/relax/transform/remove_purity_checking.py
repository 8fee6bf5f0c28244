"""RemovePurityChecking: prepare pure functions for lowering that adds impure calls.

Each pure Relax function gets the attribute ``relax.force_pure`` (its body may now contain
calls the well-formedness check would otherwise reject, such as allocations and VM
builtins), and ``call_pure_packed(f, *args)`` becomes a direct call of ``f``.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.op import Op

from ..expr import Call, ExternFunc, Function
from ..expr_functor import ExprMutator
from ._graph_utils import mutator_pass

__all__ = ["RemovePurityChecking"]


class _Unwrap(ExprMutator):
    def visit_call_(self, call: Call) -> Any:
        call = super().visit_call_(call)
        if isinstance(call.op, Op) and call.op.name == "relax.call_pure_packed":
            callee = call.args[0]
            if isinstance(callee, ExternFunc) or not isinstance(callee, Call):
                return Call(callee, call.args[1:], None, call.sinfo_args, span=call.span)
        return call

    def visit_function_(self, func: Function) -> Any:
        new = super().visit_function_(func)
        if new.is_pure and not new.attrs.get("relax.force_pure"):
            new = new.with_attr("relax.force_pure", True)
        return new


def RemovePurityChecking() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass (see the module docstring)."""

    return mutator_pass("RemovePurityChecking", _Unwrap)
