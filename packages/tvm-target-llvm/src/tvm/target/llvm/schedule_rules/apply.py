"""The driver: which rule schedules which block of a PrimFunc.

:func:`schedule_prim_func` works on one PrimFunc in three steps (after giving a
contraction whose vectorization an inlined zero padding would mask a padded copy of its
input, :mod:`.padding`):

1. **inline**: data-parallel blocks that only feed others (casts, bias adds, broadcasts) are
   inlined into their consumers (``compute_inline``), except padding stages and producers of
   contractions (they keep a contiguous copy the micro-kernel reads) and expensive blocks
   read by several consumers (``exp`` in softmax);
2. **anchor rules**, by structure: every sum-of-products reduction gets the micro-kernel of
   :mod:`.contraction` with its elementwise consumers as epilogue (and its padding stage
   as prologue where that costs nothing extra); row-wise groups
   (softmax, layer norm: reductions whose results one output block combines with its
   input) get :mod:`.reduction`'s fused row schedule; other reductions its reduction rule;
3. the data-parallel blocks left get the elementwise rule of :mod:`.elementwise`.

Each rule runs on a copy of the schedule and is dropped if it fails, so a function always
gets at least the rules that apply cleanly.  The result carries ``tir.is_scheduled``.
Functions already marked, and functions whose loops were visibly transformed by hand
(:func:`looks_scheduled`), are left as they are.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Union

from tvm.ir.module import IRModule
from tvm.tir import PrimFunc, Schedule
from tvm.tir.expr import IntImm, Var
from tvm.tir.functor import StmtExprVisitor
from tvm.tir.stmt import BlockRealize, For, ForKind
from tvm.tir.schedule import InvalidHandleError, ScheduleError

from .analysis import (
    BlockInfo, analyze_block, contraction_candidates, is_padding_like, match_contraction,
)
from .common import NotApplicable, try_primitive
from .contraction import choose_contraction, schedule_contraction
from .cpu import CPUInfo, cpu_info
from .elementwise import schedule_spatial
from .padding import materialize_padding
from .reduction import find_row_group, schedule_reduction, schedule_row_group

__all__ = [
    "apply_default_schedules", "schedule_prim_func", "explain_default_schedule",
    "looks_scheduled", "SCHEDULED_ATTR", "STRICT_ENV",
]

logger = logging.getLogger("tvm.target.llvm.schedule_rules")

#: attribute marking a PrimFunc whose loops are already scheduled (by a user or a rule)
SCHEDULED_ATTR = "tir.is_scheduled"
#: set to 1 to raise instead of logging when a rule fails (tests use it)
STRICT_ENV = "TVM_SCHEDULE_RULES_STRICT"

_MATH_CALLS = ("exp", "log", "tanh", "erf", "sigmoid", "pow", "sqrt", "rsqrt", "sin", "cos",
               "exp2", "log2", "log10", "tan", "atan", "fmod")


def _strict() -> bool:
    return os.environ.get(STRICT_ENV, "").strip() not in ("", "0")


def apply_default_schedules(mod: IRModule, target: Any = None) -> IRModule:
    """``mod`` with every PrimFunc that lacks ``tir.is_scheduled`` scheduled by the rules
    for ``target`` (an llvm Target, target string, or None for the host)."""
    cpu = cpu_info(target)
    changed = {}
    for gv, func in mod.items():
        if isinstance(func, PrimFunc) and not func.attrs.get(SCHEDULED_ATTR):
            changed[gv] = schedule_prim_func(func, cpu, gv.name_hint)
    if not changed:
        return mod
    return mod.with_functions(changed)


def schedule_prim_func(func: PrimFunc, target: Union[CPUInfo, Any] = None,
                       name: str = "main") -> PrimFunc:
    """``func`` scheduled by the default CPU rules and marked ``tir.is_scheduled``.

    ``target`` is a :class:`CPUInfo`, an llvm Target or target string (None: the host).
    A function already marked is returned as is.
    """
    if not isinstance(func, PrimFunc):
        raise TypeError(f"schedule_prim_func: expected a tir.PrimFunc, got "
                        f"{type(func).__name__}")
    if func.attrs.get(SCHEDULED_ATTR):
        return func
    cpu = target if isinstance(target, CPUInfo) else cpu_info(target)
    if not _has_blocks(func) or looks_scheduled(func):
        # lowered loops, or loops a user already split/reordered/annotated: leave them
        return func.with_attr(SCHEDULED_ATTR, True)
    try:
        scheduled = _schedule(func, cpu, name)
    except Exception as err:  # noqa: BLE001 - a rule bug must not break the build
        if _strict():
            raise
        logger.warning("default schedule of %s failed, left unscheduled: %s: %s", name,
                       type(err).__name__, err)
        scheduled = func
    return scheduled.with_attr(SCHEDULED_ATTR, True)


def explain_default_schedule(func: PrimFunc, target: Union[CPUInfo, Any] = None
                             ) -> dict[str, str]:
    """Which rule the default schedule applies to each block of ``func``: block name ->
    ``"contraction"``, ``"epilogue of C"``, ``"row group"``, ``"reduction"``,
    ``"elementwise"``, ``"inlined"`` or ``"<rule> (created)"`` for blocks a rule made
    (``C_init``, ``C_rf``, packed copies).  Empty for a function left as it is."""
    if func.attrs.get(SCHEDULED_ATTR) or not _has_blocks(func) or looks_scheduled(func):
        return {}
    cpu = target if isinstance(target, CPUInfo) else cpu_info(target)
    driver = _Driver(func, cpu, "main")
    driver.run()
    return dict(driver.applied)


# -- the driver ----------------------------------------------------------------------------
class _Driver:
    def __init__(self, func: PrimFunc, cpu: CPUInfo, name: str):
        self.sch = Schedule(func)
        self.cpu = cpu
        self.name = name
        self.done: set[str] = set()
        self.applied: dict[str, str] = {}  # block name -> rule, for reports and tests
        self._materialize_padding(func)

    def _materialize_padding(self, func: PrimFunc) -> None:
        """Give contractions whose best vectorization is masked by an inlined padding
        check a padded copy of their input to read instead (see :mod:`.padding`)."""
        guarded = set()
        for block in self.blocks():
            info = self.info(block)
            if not info.is_reduction:
                continue
            con = choose_contraction(info, contraction_candidates(info), self.cpu)
            if con is not None and con.guarded:
                guarded.add(info.name)
        if guarded:
            padded = materialize_padding(func, guarded)
            if padded is not func:
                self.sch = Schedule(padded)

    # helpers
    def root(self) -> Any:
        sref = self.sch.state.root(self.sch.func_working_on)
        return self.sch.get_block(sref.block.name_hint)

    def blocks(self) -> list[Any]:
        return self.sch.get_child_blocks(self.root())

    def info(self, block: Any) -> BlockInfo:
        return analyze_block(self.sch, block)

    def block_name(self, block: Any) -> str:
        return self.sch.get(block).name_hint

    def is_output(self, block: Any) -> bool:
        from tvm.tir.schedule import analysis as A

        return A.is_output_block(self.sch.state, self.sch.get_sref(block))

    def attempt(self, what: str, rule: Any, *args: Any) -> bool:
        """Run ``rule(sch, *args)`` on a copy; keep the result only if it succeeds."""
        trial = self.sch.copy()
        before = self._block_names(trial)
        try:
            rule(trial, *args)
        except (NotApplicable, ScheduleError, ValueError, TypeError, NotImplementedError) as err:
            if _strict() and (isinstance(err, InvalidHandleError)
                              or not isinstance(err, (ScheduleError, NotApplicable))):
                raise
            logger.info("schedule rule %s on %s did not apply: %s", what, self.name, err)
            return False
        self.sch = trial
        for name in self._block_names(trial) - before:  # e.g. C_init, C_rf: scheduled too
            self._mark(name, f"{what} (created)")
        return True

    def _block_names(self, sch: Any) -> set[str]:
        func = sch.func_working_on
        return {s.block.name_hint for s in sch.state.iter_srefs(func) if s.is_block}

    # step 1
    def inline(self) -> None:
        progress = True
        while progress:
            progress = False
            for block in self.blocks():
                if not self._inlinable(block):
                    continue
                name = self.block_name(block)
                if try_primitive(self.sch, "compute_inline", block) is not None:
                    self.applied[name] = "inlined"
                    progress = True
                    break

    def _inlinable(self, block: Any) -> bool:
        info = self.info(block)
        if not info.is_spatial or info.store is None or self.is_output(block):
            return False
        if is_padding_like(info):
            return False
        consumers = self.sch.get_consumers(block)
        if not consumers:
            return False
        for c in consumers:
            cinfo = self.info(c)
            if cinfo.is_reduction and match_contraction(cinfo) is not None:
                return False
        return len(consumers) == 1 or not _has_math(info)

    # step 2 and 3
    def run(self) -> PrimFunc:
        self.inline()
        for block in self.blocks():
            name = self.block_name(block)
            if name in self.done:
                continue
            info = self.info(block)
            if not info.is_reduction:
                continue
            con = choose_contraction(info, contraction_candidates(info), self.cpu)
            if con is not None:
                epilogue = self._epilogue(block)
                prologue = [p for p in self.sch.get_producers(block)
                            if is_padding_like(self.info(p))]
                if self.attempt("contraction", schedule_contraction, block, info, con,
                                self.cpu, epilogue, None, prologue):
                    self._mark(name, "contraction")
                    for e in epilogue:
                        if self._same_nest(block, e):
                            self._mark(self.block_name(e), f"epilogue of {name}")
                    for p in prologue:
                        if self._same_nest(block, p):
                            self._mark(self.block_name(p), f"prologue of {name}")
                    continue
            group = find_row_group(self.sch, block, self.blocks(), self.done)
            if group is not None and self.attempt(
                    "row group", schedule_row_group, group, self.cpu):
                for b in group.blocks:
                    self._mark(self.block_name(b), "row group")
                continue
            if self.attempt("reduction", schedule_reduction, block, info, self.cpu):
                self._mark(name, "reduction")
        for block in self.blocks():
            name = self.block_name(block)
            if name in self.done:
                continue
            info = self.info(block)
            if info.is_spatial and self.attempt("elementwise", schedule_spatial, block, info,
                                                self.cpu):
                self._mark(name, "elementwise")
        return self._result()

    def _mark(self, name: str, rule: str) -> None:
        self.done.add(name)
        self.applied[name] = rule

    def _same_nest(self, a: Any, b: Any) -> bool:
        """Whether blocks ``a`` and ``b`` share their outermost loop (``b`` was moved into
        ``a``'s nest by reverse_compute_at)."""
        la, lb = self.sch.get_loops(a), self.sch.get_loops(b)
        return bool(la and lb) and self.sch.get(la[0]) is self.sch.get(lb[0])

    def _epilogue(self, block: Any) -> list[Any]:
        """Elementwise consumers to compute per tile: a chain of single consumers, each
        reading the previous one at its own indices."""
        chain: list[Any] = []
        current = block
        while True:
            consumers = self.sch.get_consumers(current)
            if len(consumers) != 1:
                break
            nxt = consumers[0]
            info = self.info(nxt)
            if not info.is_spatial or not _reads_elementwise(info, self.sch.get(current)):
                break
            chain.append(nxt)
            current = nxt
        return chain

    def _result(self) -> PrimFunc:
        mod = self.sch.mod
        return mod[self.sch.func_working_on]


def _schedule(func: PrimFunc, cpu: CPUInfo, name: str) -> PrimFunc:
    return _Driver(func, cpu, name).run()


def _has_blocks(func: PrimFunc) -> bool:
    from tvm.tir.stmt import BlockRealize
    from tvm.tir.stmt_functor import pre_order_visit

    found = False

    def visit(n: Any) -> bool:
        nonlocal found
        if isinstance(n, BlockRealize) and n.block.iter_vars or found:
            found = True
            return False
        return True

    pre_order_visit(func.body, visit)
    return found


def looks_scheduled(func: PrimFunc) -> bool:
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
        bound = [v for v in op.iter_values if isinstance(v, Var)]
        if any(not isinstance(v, (Var, IntImm)) for v in op.iter_values):
            return False
        positions = []
        for v in bound:
            idx = next((k for k, lv in enumerate(self.loops) if lv is v), None)
            if idx is not None:  # other variables: iteration variables of an outer block
                positions.append(idx)
        return positions == sorted(set(positions))


def _has_math(info: BlockInfo) -> bool:
    from tvm.ir.op import Op
    from tvm.tir.expr import Call
    from tvm.tir.stmt_functor import post_order_visit

    found = False

    def visit(n: Any) -> None:
        nonlocal found
        if isinstance(n, Call) and isinstance(n.op, Op) and \
                n.op.name.removeprefix("tir.") in _MATH_CALLS:
            found = True

    if info.store is not None:
        post_order_visit(info.store.value, visit)
    return found


def _reads_elementwise(info: BlockInfo, producer_block: Any) -> bool:
    """Every load of the producer's output in ``info`` uses the block's own store indices
    (up to iteration variables of extent 1)."""
    written = {id(r.buffer) for r in producer_block.writes}
    found = False
    for acc in info.loads:
        if id(acc.buffer) in written:
            found = True
            if info.write is None or \
                    _unit_free(acc.forms, info) != _unit_free(info.write.forms, info):
                return False
    return found


def _unit_free(forms: list, info: BlockInfo) -> list:
    """``forms`` without the iteration variables of extent 1 (a broadcast batch index
    ``0`` reads the same element as ``v_n`` over ``n in range(1)``)."""
    return [None if f is None else {k: c for k, c in f.items() if info.extents[k] != 1}
            for f in forms]

