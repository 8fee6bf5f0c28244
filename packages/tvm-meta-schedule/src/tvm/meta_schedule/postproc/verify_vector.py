"""VerifyVectorization: reject a candidate whose vector loops the code generator would not
make vector code of.

A ``vectorized`` loop must have a constant extent of at most ``max_lanes`` and hold no
other loop (VectorizeLoop would silently run it serially: a slow candidate that a cost
model could not tell from a fast one).
"""

from __future__ import annotations

from typing import Any

from tvm.tir.expr_util import const_int
from tvm.tir.stmt import For, ForKind
from tvm.tir.stmt_functor import pre_order_visit

from .postproc import Postproc

__all__ = ["VerifyVectorization", "vector_loop_problems"]


def _has_loop(stmt: Any) -> bool:
    found: list[Any] = []

    def visit(node: Any) -> bool:
        if found or isinstance(node, For):
            found.append(node)
            return False
        return True

    pre_order_visit(stmt, visit)
    return bool(found)


def vector_loop_problems(func: Any, max_lanes: int) -> list[str]:
    """What is wrong with each vectorized loop of ``func`` (empty: all fine)."""
    problems: list[str] = []

    def visit(node: Any) -> bool:
        if isinstance(node, For) and node.kind == ForKind.VECTORIZED:
            name = node.loop_var.name
            ext = const_int(node.extent)
            if ext is None:
                problems.append(f"vector loop {name!r} has the non-constant extent "
                                f"{node.extent!r}")
            elif ext > max_lanes:
                problems.append(f"vector loop {name!r} has {ext} lanes, more than {max_lanes}")
            if _has_loop(node.body):
                problems.append(f"vector loop {name!r} holds another loop")
            return False
        return True

    pre_order_visit(func.body, visit)
    return problems


class VerifyVectorization(Postproc):
    """Reject candidates with a vector loop of a non-constant extent, of more than
    ``max_lanes`` lanes, or holding another loop."""

    name = "verify_vectorization"

    def __init__(self, max_lanes: int = 256):
        if max_lanes < 1:
            raise ValueError(f"VerifyVectorization: max_lanes must be positive, got {max_lanes}")
        self.max_lanes = int(max_lanes)

    def apply(self, sch: Any) -> bool:
        return not vector_loop_problems(sch.mod[sch.func_working_on], self.max_lanes)
