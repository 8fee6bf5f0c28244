"""The user-facing :class:`Schedule`.

::

    sch = tir.Schedule(func)                 # a PrimFunc or an IRModule
    b = sch.get_block("C")
    i, j, k = sch.get_loops(b)
    io, ii = sch.split(i, factors=[None, 32])
    sch.parallel(io)
    sch.mod.show(); sch.trace.show()

The class holds a :class:`ScheduleState` (the module and its sref tree), a symbol table
from handles (BlockRV/LoopRV/ExprRV) to srefs or sampled integers, the :class:`Trace`, and
the random state of the sampling primitives.  The primitives themselves live in the mixin
classes of :mod:`tvm.tir.schedule.primitive` and :mod:`tvm.tir.schedule.sampling`.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Optional, Union

from ..expr import IntImm, PrimExpr
from ..stmt import Block, For
from ..stmt_functor import free_vars, substitute
from . import analysis as A
from .error import InvalidHandleError, ScheduleError
from .handles import BlockRV, ExprRV, LoopRV
from .instruction import Decided, Instruction, InstructionKind, flatten_outputs, instruction
from .primitive import PRIMITIVE_MIXINS
from .sampling import SamplingMixin
from .state import ScheduleState, StmtSRef
from .trace import Trace

__all__ = ["Schedule", "ScheduleDebugMask"]


class ScheduleDebugMask:
    """Bits of ``debug_mask``: what to verify after every primitive."""

    VERIFY_SREF_TREE = 1
    VERIFY_WELL_FORMED = 2
    ALL = 3


def _parse_debug_mask(mask: Union[str, int]) -> int:
    if mask == "all":
        return ScheduleDebugMask.ALL
    if mask == "none" or mask is None:
        return 0
    if isinstance(mask, int) and not isinstance(mask, bool) and mask >= 0:
        return mask
    raise ValueError(f"Schedule: debug_mask must be 'all', 'none' or a non-negative int, "
                     f"got {mask!r}")


class Schedule(SamplingMixin, *PRIMITIVE_MIXINS):  # type: ignore[misc]
    """A schedule of a PrimFunc (or of the PrimFuncs of an IRModule)."""

    def __init__(
        self,
        mod: Any,
        *,
        seed: Optional[int] = None,
        debug_mask: Union[str, int] = "none",
    ):
        """``mod``: a PrimFunc (scheduled as ``"main"``) or an IRModule; ``seed`` seeds the
        sampling primitives; ``debug_mask`` ("none", "all" or ScheduleDebugMask bits) checks
        the state after every primitive."""
        self._state = ScheduleState(mod, _parse_debug_mask(debug_mask))
        names = self._state.func_names()
        if not names:
            raise ValueError("Schedule: the module has no PrimFunc to schedule")
        self._func_name = names[0] if len(names) == 1 or "main" not in names else "main"
        self._state.root(self._func_name)  # index (and give a root block to) the function
        self._symbols: dict[int, tuple[Any, Any]] = {}
        self._trace = Trace()
        self._rng = random.Random(seed)
        self._depth = 0

    # -- basic access -------------------------------------------------------------------------
    @property
    def mod(self) -> Any:
        """The current IRModule."""
        return self._state.mod

    @property
    def state(self) -> ScheduleState:
        return self._state

    @property
    def trace(self) -> Trace:
        """The instructions applied so far (a live object: copy it to keep a snapshot)."""
        return self._trace

    @property
    def func_working_on(self) -> str:
        return self._func_name

    def work_on(self, func_name: str) -> None:
        """Make ``func_name`` the function ``get_block`` looks in by default."""
        self._state.root(func_name)
        self._func_name = func_name

    def show(self, name: str = "Module") -> None:
        """Print the current module as TVMScript."""
        print(self.script(name), end="")

    def script(self, name: str = "Module") -> str:
        """The current module as TVMScript text."""
        return self.mod.script(name)

    def __repr__(self) -> str:
        return f"Schedule(func={self._func_name!r}, {len(self._trace)} instructions)"

    # -- copying and seeding ------------------------------------------------------------------
    def copy(self) -> Schedule:
        """An independent schedule in the same state; the same handles are valid in it."""
        new = object.__new__(type(self))
        new._state, remap = self._state.copy()
        new._func_name = self._func_name
        new._symbols = {}
        for key, (rv, value) in self._symbols.items():
            if isinstance(value, StmtSRef) and not value.mark:
                value = remap.get(id(value), value)
            new._symbols[key] = (rv, value)
        new._trace = self._trace.copy()
        new._rng = random.Random()
        new._rng.setstate(self._rng.getstate())
        new._depth = 0
        return new

    def seed(self, seed: int) -> None:
        """Re-seed the sampling primitives."""
        self._rng.seed(seed)

    def fork_seed(self) -> int:
        """A new seed drawn from this schedule's random state (for a child schedule)."""
        return self._rng.randrange(1, 2**31 - 1)

    # -- handles ------------------------------------------------------------------------------
    def get(self, rv: Any) -> Any:
        """The current Block / For of a handle, or the integer of an ExprRV."""
        if isinstance(rv, ExprRV):
            return self._expr_value(rv, "get")
        if isinstance(rv, (BlockRV, LoopRV)):
            sref = self._resolve(rv, "get")
            return sref.stmt
        if isinstance(rv, StmtSRef):
            return rv.stmt
        if isinstance(rv, PrimExpr):
            return self._int_value(rv, "get")
        raise TypeError(f"Schedule.get expects a BlockRV, LoopRV or ExprRV, got "
                        f"{type(rv).__name__}")

    def get_sref(self, rv_or_stmt: Any) -> StmtSRef:
        """The :class:`StmtSRef` of a handle, or of a Block/For of the current IR."""
        if isinstance(rv_or_stmt, (BlockRV, LoopRV)):
            return self._resolve(rv_or_stmt, "get_sref")
        if isinstance(rv_or_stmt, (Block, For)):
            sref = self._state.get_sref(rv_or_stmt)
            if sref is None:
                raise ScheduleError("get_sref", "the statement is not part of the current IR",
                                    rv_or_stmt)
            return sref
        raise TypeError(f"get_sref expects a BlockRV, LoopRV, Block or For, got "
                        f"{type(rv_or_stmt).__name__}")

    def remove_rv(self, rv: Any) -> None:
        """Forget a handle."""
        if self._symbols.pop(id(rv), None) is None:
            raise InvalidHandleError("remove_rv", f"{rv!r} is not a handle of this schedule")

    def _resolve(self, rv: Any, primitive: str) -> StmtSRef:
        entry = self._symbols.get(id(rv))
        if entry is None or entry[0] is not rv:
            raise InvalidHandleError(
                primitive, f"{rv!r} is not a handle of this schedule (handles of one schedule "
                "are valid in its copies, not in other schedules)"
            )
        sref = entry[1]
        if sref.mark:
            return sref
        if sref.stmt is None:
            raise InvalidHandleError(
                primitive, f"the {'block' if isinstance(rv, BlockRV) else 'loop'} of {rv!r} "
                f"was removed by {sref.removed_by}; get a new handle (get_block/get_loops)"
            )
        return sref

    def _block_sref(self, rv: Any, primitive: str) -> StmtSRef:
        """The sref of a BlockRV (a clear error for anything else)."""
        if not isinstance(rv, BlockRV):
            raise TypeError(f"{primitive}: expected a BlockRV, got {type(rv).__name__} {rv!r}")
        return self._resolve(rv, primitive)

    def _loop_sref(self, rv: Any, primitive: str, allow_marks: bool = False) -> StmtSRef:
        """The sref of a LoopRV; the root/inline marks only with ``allow_marks``."""
        if not isinstance(rv, LoopRV):
            raise TypeError(f"{primitive}: expected a LoopRV, got {type(rv).__name__} {rv!r}")
        sref = self._resolve(rv, primitive)
        if sref.mark and not allow_marks:
            raise ScheduleError(primitive, f"{rv!r} is the special {sref.mark!r} location "
                                "of sample_compute_location, not a loop")
        return sref

    def _block_or_loop_sref(self, rv: Any, primitive: str) -> StmtSRef:
        if not isinstance(rv, (BlockRV, LoopRV)):
            raise TypeError(f"{primitive}: expected a BlockRV or LoopRV, got "
                            f"{type(rv).__name__} {rv!r}")
        return self._loop_sref(rv, primitive) if isinstance(rv, LoopRV) else \
            self._resolve(rv, primitive)

    def _new_rv(self, value: Any) -> Any:
        """A new handle for an sref (BlockRV/LoopRV by kind) or an int (ExprRV)."""
        if isinstance(value, StmtSRef):
            rv: Any = BlockRV() if value.is_block else LoopRV()
        elif isinstance(value, int):
            rv = ExprRV("v", "int32")
        else:
            raise TypeError(f"cannot make a handle for {value!r}")
        self._symbols[id(rv)] = (rv, value)
        return rv

    def _new_mark_rv(self, mark: StmtSRef) -> LoopRV:
        rv = LoopRV()
        self._symbols[id(rv)] = (rv, mark)
        return rv

    def _expr_value(self, rv: ExprRV, primitive: str) -> int:
        entry = self._symbols.get(id(rv))
        if entry is None or entry[0] is not rv:
            raise InvalidHandleError(primitive, f"{rv!r} is not a sampled value of this schedule")
        return entry[1]

    def _int_value(self, value: Any, primitive: str, what: str = "value") -> int:
        """An int from an int, IntImm, ExprRV or an expression over ExprRVs."""
        if isinstance(value, bool):
            raise TypeError(f"{primitive}: {what} must be an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, IntImm):
            return value.value
        if isinstance(value, ExprRV):
            return self._expr_value(value, primitive)
        if isinstance(value, PrimExpr):
            vmap = {}
            for v in free_vars(value):
                if not isinstance(v, ExprRV):
                    raise ScheduleError(primitive, f"{what} {value!r} uses the variable "
                                        f"{v.name!r}, which is not a sampled value")
                vmap[v] = self._expr_value(v, primitive)
            from tvm.arith import Analyzer

            folded = Analyzer().simplify(substitute(value, vmap))
            if isinstance(folded, IntImm):
                return folded.value
            raise ScheduleError(primitive, f"{what} {value!r} does not fold to an integer")
        raise TypeError(f"{primitive}: {what} must be an int or ExprRV, got "
                        f"{type(value).__name__} {value!r}")

    # -- running primitives -------------------------------------------------------------------
    def _run_instruction(self, kind: InstructionKind, fn: Callable, sig: Any,
                         args: tuple, kwargs: dict) -> Any:
        """Run a decorated primitive: roll back on error, record it in the trace."""
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{kind.method}: {err}") from None
        bound.apply_defaults()
        if self._depth > 0:  # called from inside another primitive: not recorded
            result = fn(*bound.args, **bound.kwargs)
            return result.result if isinstance(result, Decided) else result
        snap = None if kind.pure else (self._state.snapshot(), dict(self._symbols))
        saved_primitive = self._state.current_primitive
        self._state.current_primitive = kind.method
        self._depth += 1
        try:
            result = fn(*bound.args, **bound.kwargs)
            if not kind.pure and self._state.debug_mask:
                self._verify(kind.method)
        except BaseException:
            if snap is not None:
                self._state.restore(snap[0])
                self._symbols = snap[1]
            raise
        finally:
            self._depth -= 1
            self._state.current_primitive = saved_primitive
        decision = None
        if isinstance(result, Decided):
            result, decision = result.result, result.decision
        values = bound.arguments
        inst = Instruction(
            kind, [values[p] for p in kind.inputs], [values[p] for p in kind.attrs],
            flatten_outputs(kind, result),
        )
        self._trace.append(inst, decision)
        return result

    def _verify(self, primitive: str) -> None:
        mask = self._state.debug_mask
        if mask & ScheduleDebugMask.VERIFY_SREF_TREE:
            self._state.verify()
        if mask & ScheduleDebugMask.VERIFY_WELL_FORMED:
            from ..analysis import verify_well_formed

            try:
                verify_well_formed(self._state.func(self._func_name), allow_blocks=True)
            except Exception as err:  # noqa: BLE001 - reported as the primitive's bug
                raise ScheduleError(primitive, f"the result is not well formed: {err}") from err

    def replay(self, trace: Trace, decision_provider: Any = None) -> None:
        """Apply ``trace`` to this schedule (``trace.apply_to_schedule(self)``)."""
        trace.apply_to_schedule(self, decision_provider=decision_provider)

    # -- lookups ------------------------------------------------------------------------------
    @instruction("GetBlock", attrs=("name", "func_name"), outputs="one", pure=True)
    def get_block(self, name: str, func_name: Optional[str] = None) -> BlockRV:
        """The block called ``name`` in ``func_name`` (default: the function worked on)."""
        if not isinstance(name, str):
            raise TypeError(f"get_block: name must be a str, got {type(name).__name__}")
        func = func_name or self._func_name
        found = [s for s in self._state.iter_srefs(func) if s.is_block and s.block.name_hint == name]
        if not found:
            import difflib

            names = [s.block.name_hint for s in self._state.iter_srefs(func) if s.is_block]
            close = difflib.get_close_matches(name, names, n=3)
            hint = f"did you mean {', '.join(map(repr, close))}?" if close else \
                f"blocks: {', '.join(map(repr, names))}"
            raise ScheduleError("get_block", f"no block named {name!r} in function {func!r}",
                                hint=hint)
        if len(found) > 1:
            raise ScheduleError("get_block", f"{len(found)} blocks are named {name!r} in "
                                f"function {func!r}; block names must be unique to be looked up")
        return self._new_rv(found[0])

    @instruction("GetLoops", inputs=("block",), outputs="list", pure=True)
    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        """The loops around ``block``, outermost first (up to its enclosing block)."""
        sref = self._block_sref(block, "get_loops")
        return [self._new_rv(s) for s in A.get_loops(sref)]

    @instruction("GetChildBlocks", inputs=("block_or_loop",), outputs="list", pure=True)
    def get_child_blocks(self, block_or_loop: Union[BlockRV, LoopRV]) -> list[BlockRV]:
        """The blocks directly inside a block or loop, in program order."""
        sref = self._block_or_loop_sref(block_or_loop, "get_child_blocks")
        return [self._new_rv(s) for s in A.get_child_blocks(sref)]

    @instruction("GetProducers", inputs=("block",), outputs="list", pure=True)
    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        """Blocks of the same scope that write what ``block`` reads."""
        sref = self._block_sref(block, "get_producers")
        return [self._new_rv(s) for s in A.get_producers(sref)]

    @instruction("GetConsumers", inputs=("block",), outputs="list", pure=True)
    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        """Blocks of the same scope that read what ``block`` writes."""
        sref = self._block_sref(block, "get_consumers")
        return [self._new_rv(s) for s in A.get_consumers(sref)]

    @instruction("GetOutputBlocks", inputs=("scope_block",), outputs="list", pure=True)
    def get_output_blocks(self, scope_block: BlockRV) -> list[BlockRV]:
        """Blocks of the scope that write the function's output buffers."""
        sref = self._block_sref(scope_block, "get_output_blocks")
        return [self._new_rv(s) for s in A.get_child_blocks(sref)
                if A.is_output_block(self._state, s)]

