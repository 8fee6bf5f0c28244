"""What rules ask about blocks and loops, and the one auto-inline step.

* :func:`block_kind`: ``"spatial"`` / ``"reduction"`` / ``"other"`` by iteration kinds;
* :func:`loop_roles`: which kind of iteration each loop around a block drives;
* :func:`loop_extent`: the constant extent of a loop handle;
* :func:`root_blocks`, :func:`is_output_block`: the blocks the driver offers, and whether a
  block writes a function output;
* :func:`has_blocks`, :func:`looks_scheduled`: whether a function is a block program the
  rules can work on, and whether its loops were already transformed by hand;
* :class:`AutoInline`: the rule inlining data-parallel blocks into their consumers, with
  the target's test of which blocks to inline.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ...expr import BufferLoad, IntImm, IterVarType, Var
from ...functor import StmtExprVisitor
from ...stmt import Block, BlockRealize, BufferStore, For, ForKind
from ...stmt_functor import free_vars, pre_order_visit
from .. import analysis as A
from .rule import ScheduleRule

__all__ = ["block_kind", "loop_roles", "loop_extent", "root_blocks", "is_output_block",
           "has_blocks", "looks_scheduled", "AutoInline"]


def block_kind(sch: Any, block: Any) -> str:
    """``"spatial"`` (only data-parallel iterations), ``"reduction"`` (data-parallel and
    reduction iterations) or ``"other"``."""
    b: Block = sch.get(block)
    kinds = {iv.iter_type for iv in b.iter_vars}
    if kinds <= {IterVarType.DATA_PAR}:
        return "spatial"
    if kinds <= {IterVarType.DATA_PAR, IterVarType.COMM_REDUCE}:
        return "reduction"
    return "other"


def loop_roles(sch: Any, block: Any) -> list[tuple[Any, str]]:
    """Each loop around ``block`` with the kind of iterations it drives: ``"S"``
    (data-parallel), ``"R"`` (reduction), ``"SR"`` (both) or ``""`` (none, a unit loop)."""
    realize = sch.get_sref(block).realize
    spatial: set[Var] = set()
    reduce: set[Var] = set()
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        target = reduce if iv.iter_type == IterVarType.COMM_REDUCE else spatial
        target.update(free_vars(value))
    out = []
    for loop in sch.get_loops(block):
        var = sch.get(loop).loop_var
        out.append((loop, ("S" if var in spatial else "") + ("R" if var in reduce else "")))
    return out


def loop_extent(sch: Any, loop: Any) -> Optional[int]:
    """The constant extent of a loop handle, or ``None`` when symbolic."""
    return A.loop_extent(sch.get_sref(loop))


def root_blocks(sch: Any) -> list[Any]:
    """The blocks directly under the root block of the function worked on."""
    sref = sch.state.root(sch.func_working_on)
    return sch.get_child_blocks(sch.get_block(sref.block.name_hint))


def is_output_block(sch: Any, block: Any) -> bool:
    """Whether ``block`` writes a buffer of the function's signature."""
    return A.is_output_block(sch.state, sch.get_sref(block))


def has_blocks(func: Any) -> bool:
    """Whether ``func`` has a block with iteration variables (loops the rules can read)."""
    found = False

    def visit(n: Any) -> bool:
        nonlocal found
        if found or (isinstance(n, BlockRealize) and n.block.iter_vars):
            found = True
            return False
        return True

    pre_order_visit(func.body, visit)
    return found


def looks_scheduled(func: Any) -> bool:
    """Whether ``func``'s loops were transformed by hand (a ``tir.Schedule`` whose result was
    not marked ``tir.is_scheduled``): a loop that is not serial, or a block whose iteration
    variables are not bound one-to-one and in order to the loops around it (split, fuse,
    reorder), or a guarded block."""
    finder = _ScheduledFinder()
    finder.visit_stmt(func.body)
    return finder.found


class _ScheduledFinder(StmtExprVisitor):
    def __init__(self) -> None:
        self.found = False
        self.loops: list[Any] = []

    def visit_for_(self, op: For) -> None:
        if op.kind != ForKind.SERIAL:
            self.found = True
            return
        self.loops.append(op.loop_var)
        self.visit_stmt(op.body)
        self.loops.pop()

    def visit_block_realize_(self, op: BlockRealize) -> None:
        if self.found:
            return
        if op.block.iter_vars and not self._trivial(op):
            self.found = True
            return
        saved, self.loops = self.loops, []
        self.visit_stmt(op.block.body)
        if op.block.init is not None:
            self.visit_stmt(op.block.init)
        self.loops = saved

    def _trivial(self, op: BlockRealize) -> bool:
        if not (isinstance(op.predicate, IntImm) and op.predicate.value == 1):
            return False
        if any(not isinstance(v, (Var, IntImm)) for v in op.iter_values):
            return False
        positions = []
        for v in op.iter_values:
            if not isinstance(v, Var):
                continue
            idx = next((k for k, lv in enumerate(self.loops) if lv is v), None)
            if idx is not None:  # other variables: iteration variables of an outer block
                positions.append(idx)
        return positions == sorted(set(positions))


class AutoInline(ScheduleRule):
    """Inline a data-parallel block that feeds other blocks into its consumers
    (``compute_inline``).  ``inlinable(sch, block)`` is the target's extra test (which
    producers to keep: padding stages, expensive values read several times ...); the
    default inlines every spatial block whose body is one store and that has consumers."""

    name = "auto_inline"
    label = "inlined"
    single_primitive = True
    #: expression nodes a producer may have and still be copied into a consumer that reads
    #: it several times (each copy repeats it: a chain of such blocks, inlined one into the
    #: next, would grow exponentially, as x * erf(x) ... does)
    MAX_DUPLICATED_NODES = 24

    def __init__(self, inlinable: Optional[Callable[[Any, Any], bool]] = None):
        self.inlinable = inlinable

    def applies(self, sch: Any, block: Any) -> bool:
        if self.inlinable is not None:
            fits = self.inlinable(sch, block)
        else:
            fits = (block_kind(sch, block) == "spatial"
                    and isinstance(sch.get(block).body, BufferStore)
                    and bool(sch.get_consumers(block)))
        return fits and not self._duplicates(sch, block)

    def _duplicates(self, sch: Any, block: Any) -> bool:
        """Whether inlining would copy a large expression several times into a consumer."""
        body = sch.get(block).body
        if not isinstance(body, BufferStore):
            return False
        size = 0

        def count(_: Any) -> bool:
            nonlocal size
            size += 1
            return True

        pre_order_visit(body.value, count)
        if size <= self.MAX_DUPLICATED_NODES:
            return False
        data = body.buffer.data
        for consumer in sch.get_consumers(block):
            reads = 0

            def loads(node: Any) -> bool:
                nonlocal reads
                if isinstance(node, BufferLoad) and node.buffer.data is data:
                    reads += 1
                return True

            pre_order_visit(sch.get(consumer).body, loads)
            if reads > 1:
                return True
        return False

    def transform(self, sch: Any, block: Any) -> None:
        sch.compute_inline(block)
