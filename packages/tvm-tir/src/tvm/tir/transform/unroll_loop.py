"""UnrollLoop: ``unrolled`` loops become straight-line code.

A loop ``for i in T.unroll(m, m + n)`` with a constant extent ``n`` not above the
PassContext option ``tir.UnrollLoop.max_unroll`` (default 64) becomes ``n`` copies of its
body with ``i`` replaced by ``m``, ``m + 1``, ...; variables defined inside the body get fresh
copies so each stays defined once.  A longer loop, or one with a symbolic extent, becomes a
``serial`` loop annotated ``pragma_unroll = 1`` so the code generator can still ask its
backend to unroll it.  Inner loops are unrolled first.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ir.transform import FunctionPass, PassContext, register_config_option

from tvm.arith import const_fold as F

from ..expr import IntImm
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import For, ForKind, stmt_seq
from ..stmt_functor import substitute
from ..expr_util import const_int
from ._common import no_op, prim_func_pass, rename_definitions

__all__ = ["UnrollLoop", "unroll_loop", "MAX_UNROLL_KEY", "PRAGMA_UNROLL"]

MAX_UNROLL_KEY = "tir.UnrollLoop.max_unroll"
PRAGMA_UNROLL = "pragma_unroll"
_DEFAULT_MAX_UNROLL = 64

register_config_option(
    MAX_UNROLL_KEY,
    int,
    _DEFAULT_MAX_UNROLL,
    "Largest constant extent UnrollLoop expands; longer unrolled loops become serial loops "
    "annotated pragma_unroll.",
)


class _Unroller(StmtExprMutator):
    def __init__(self, max_unroll: int) -> None:
        self.max_unroll = max_unroll

    def visit_for_(self, op: For) -> Any:
        body = self.visit_stmt(op.body)
        loop = op if body is op.body else op.with_fields(body=body)
        if loop.kind != ForKind.UNROLLED:
            return loop
        extent = const_int(loop.extent)
        if extent is None or extent > self.max_unroll:
            return loop.with_fields(
                kind=ForKind.SERIAL, annotations={**loop.annotations, PRAGMA_UNROLL: 1}
            )
        if extent <= 0:
            return no_op()
        copies = []
        for k in range(extent):
            value = F.add(loop.min, IntImm(loop.min.dtype, k))
            copy = substitute(loop.body, {loop.loop_var: value})
            copies.append(copy if k == 0 else rename_definitions(copy))
        return stmt_seq(*copies)


def unroll_loop(func: PrimFunc, max_unroll: Optional[int] = None) -> PrimFunc:
    """``func`` with its unrolled loops expanded (see the module docstring).

    ``max_unroll`` defaults to the PassContext option ``tir.UnrollLoop.max_unroll``.
    """
    if max_unroll is None:
        max_unroll = PassContext.current().get_config(MAX_UNROLL_KEY, _DEFAULT_MAX_UNROLL)
    body = _Unroller(int(max_unroll)).visit_stmt(func.body)
    return func if body is func.body else func.with_body(body)


def UnrollLoop() -> FunctionPass:  # noqa: N802
    """The pass form of :func:`unroll_loop`."""
    return prim_func_pass(unroll_loop, "tir.UnrollLoop")
