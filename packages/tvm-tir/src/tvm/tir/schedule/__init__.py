"""tvm.tir.schedule: scheduling a PrimFunc with recorded, replayable primitives.

::

    sch = tir.Schedule(func, seed=0, debug_mask="all")
    b0 = sch.get_block("C")
    i, j, k = sch.get_loops(b0)
    i0, i1 = sch.split(i, factors=[None, 32])
    sch.reorder(i0, j, i1)
    sch.parallel(i0)
    sch.show()            # the scheduled program as TVMScript
    sch.trace.show()      # the schedule as Python

Layout
------
* ``state.py``      ScheduleState (the IRModule) and StmtSRef (stable references to Blocks
                    and Fors of the immutable IR; see that module for how they follow rewrites)
* ``handles.py``    BlockRV / LoopRV / ExprRV, the handles users hold
* ``schedule.py``   Schedule: the symbol table handle -> sref, lookups (get_block, get_loops,
                    get_child_blocks, get_producers, get_consumers), copy/seed, rollback
* ``instruction.py`` the ``@instruction`` decorator, Instruction and InstructionKind
* ``trace.py``      Trace: printing as Python, JSON, replay, decisions
* ``sampling.py``   sample_perfect_tile / sample_categorical / sample_compute_location
* ``analysis.py``   shared analyses (loops of a block, producers, block kinds, loop users)
* ``error.py``      ScheduleError
* ``primitive/``    one module per primitive family (loop_transform, for_kind, annotate,
                    padding, ...)
* ``rules/``        the schedule-rule framework: ScheduleRule, block helpers, the driver
                    (default schedules, vendor rules, design spaces; docs/schedule_rules.md)
* ``gpu_rules/``    the default GPU rules every GPU target shares, written in ``rules/``

How to add a primitive
----------------------
1. In ``primitive/<family>.py`` write the transformation as a function over the state and
   srefs, e.g. ``def my_prim(state, block_sref, factor) -> StmtSRef``:

   * read the IR through srefs: ``block_sref.block`` (the Block), ``block_sref.realize``
     (its BlockRealize), ``analysis.get_loops(block_sref)`` (loop srefs, outermost first),
     ``loop_sref.loop`` (the For), ``sref.parent`` / ``sref.children``;
   * check every precondition first and raise ``ScheduleError("my_prim", "reason",
     block_or_loop_stmt, hint="what to do")``;
   * build the new statements and call ``state.replace({old_stmt: new_stmt, ...},
     block_reuse={old_block: new_block}, func_name=sref.func_name)``: ancestors are rebuilt
     and handles follow (identical objects, same loop_var, ``block_reuse``, unique block
     name); ``None`` as a new statement deletes it (``state.removal_target(sref)`` says
     which statement to delete so no empty loop is left);
   * return srefs of the results (``state.get_sref(new_stmt, func_name)``).
2. In the same module, add a method to the family's mixin class::

       @instruction("MyPrim", inputs=("block", "factor"), attrs=("name",), outputs="one")
       def my_prim(self, block: BlockRV, factor: int, name: str = "x") -> BlockRV:
           sref = self._block_sref(block, "my_prim")
           return self._new_rv(my_prim(self._state, sref, self._int_value(factor, "my_prim")))

   ``inputs`` are the parameters that hold handles or values that may be sampled (ExprRV);
   ``attrs`` the plain ones.  The decorator records the call in ``sch.trace`` (printing,
   JSON and replay follow from the declaration) and rolls the state back if it raises.
3. Add the mixin to ``PRIMITIVE_MIXINS`` in ``primitive/__init__.py`` (new family only).
4. Test it in ``tests/test_schedule_<family>.py``: before/after structural equality,
   ``ScheduleError`` cases, trace replay, and numbers through ``tir.build`` where possible.
"""

from . import analysis
from .error import InvalidHandleError, ScheduleError
from .handles import BlockRV, ExprRV, LoopRV
from .instruction import (
    Instruction, InstructionKind, get_instruction_kind, instruction, list_instruction_kinds,
)
from .schedule import Schedule, ScheduleDebugMask
from .state import ScheduleState, StmtSRef
from .trace import Trace

__all__ = [
    "Schedule", "ScheduleDebugMask", "ScheduleError", "InvalidHandleError", "BlockRV",
    "LoopRV", "ExprRV", "Instruction", "InstructionKind", "Trace", "ScheduleState",
    "StmtSRef", "instruction", "get_instruction_kind", "list_instruction_kinds", "analysis",
]
