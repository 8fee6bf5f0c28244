"""storage_align and set_scope: properties of a buffer a block writes.

* ``storage_align(block, buffer_index, axis, factor, offset)`` asks that the stride of
  ``axis`` of the ``buffer_index``-th written buffer be ``factor * k + offset`` (to avoid
  shared-memory bank conflicts).  As in TVM it is recorded as the block annotation
  ``buffer_dim_align``, a list of ``(buffer_index, axis, factor, offset)`` (one per
  aligned axis), for a later buffer-compaction pass to apply.
* ``set_scope(block, buffer_index, scope)`` moves that buffer to another storage scope
  (``shared``, ``local`` ...), replacing it everywhere it is used.

Both only apply to buffers allocated inside the function, not to its parameters.
"""

from __future__ import annotations

from typing import Any

from ...buffer import Buffer
from ...expr import Var
from ...stmt import Block
from ..error import ScheduleError
from ..handles import BlockRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef
from ._util import BufferReplacer, check_storage_scope

__all__ = ["storage_align", "set_scope", "BlockAnnotateMixin", "BUFFER_DIM_ALIGN"]

BUFFER_DIM_ALIGN = "buffer_dim_align"


def _int(prim: str, value: Any, what: str, block: Block) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError(prim, f"{what} must be an int, got {value!r}", block)
    return value


def _written_buffer(prim: str, block: Block, index: Any) -> Buffer:
    index = _int(prim, index, "buffer_index", block)
    if not 0 <= index < len(block.writes):
        names = ", ".join(r.buffer.name for r in block.writes) or "none"
        raise ScheduleError(prim, f"buffer_index {index} is out of range: the block writes "
                            f"{len(block.writes)} buffer(s) ({names})", block)
    return block.writes[index].buffer


def _alloc_owner(prim: str, block_sref: StmtSRef, buffer: Buffer) -> StmtSRef:
    node = block_sref
    while node is not None:
        if node.is_block and any(b is buffer for b in node.block.alloc_buffers):
            return node
        node = node.parent
    raise ScheduleError(prim, f"buffer {buffer.name!r} is not allocated inside the function "
                        "(it is a parameter); only intermediate buffers can be changed",
                        block_sref.stmt)


def storage_align(state: ScheduleState, block_sref: StmtSRef, buffer_index: int, axis: int,
                  factor: int, offset: int) -> None:
    """Annotate the block so that ``axis`` of its written buffer is aligned."""
    prim = "storage_align"
    block = block_sref.block
    buffer = _written_buffer(prim, block, buffer_index)
    _alloc_owner(prim, block_sref, buffer)
    ndim = len(buffer.shape)
    axis = _int(prim, axis, "axis", block)
    if not -ndim <= axis < ndim:
        raise ScheduleError(prim, f"axis {axis} is out of range for the {ndim}-d buffer "
                            f"{buffer.name!r}", block)
    axis %= ndim
    factor = _int(prim, factor, "factor", block)
    offset = _int(prim, offset, "offset", block)
    if factor <= 0:
        raise ScheduleError(prim, f"factor must be positive, got {factor}", block)
    if not 0 <= offset < factor:
        raise ScheduleError(prim, f"offset must be in [0, factor={factor}), got {offset}", block)
    old = block.annotations.get(BUFFER_DIM_ALIGN) or ()
    entries = [tuple(int(x) for x in e) for e in old
               if (int(e[0]), int(e[1])) != (buffer_index, axis)]
    entries.append((buffer_index, axis, factor, offset))
    value = tuple(sorted(entries))
    new = block.with_fields(annotations={**block.annotations, BUFFER_DIM_ALIGN: value})
    state.replace({block: new}, block_reuse={block: new}, func_name=block_sref.func_name)


def set_scope(state: ScheduleState, block_sref: StmtSRef, buffer_index: int,
              storage_scope: str) -> None:
    """Move the block's ``buffer_index``-th written buffer to ``storage_scope``."""
    prim = "set_scope"
    block = block_sref.block
    buffer = _written_buffer(prim, block, buffer_index)
    check_storage_scope(prim, storage_scope, block)
    owner = _alloc_owner(prim, block_sref, buffer)
    if buffer.scope == storage_scope:
        return
    new_buffer = buffer.with_fields(data=Var(buffer.data.name, buffer.data.dtype),
                                    scope=storage_scope)
    replacer = BufferReplacer({id(buffer): new_buffer})
    new_owner = replacer.visit_stmt(owner.block)
    state.replace({owner.block: new_owner}, block_reuse=replacer.reuse,
                  func_name=block_sref.func_name)


class BlockAnnotateMixin:
    """storage_align / set_scope methods of :class:`Schedule`."""

    @instruction("StorageAlign", inputs=("block",),
                 attrs=("buffer_index", "axis", "factor", "offset"))
    def storage_align(self, block: BlockRV, buffer_index: int, axis: int, factor: int,
                      offset: int) -> None:
        """Require ``stride[axis] % factor == offset`` for the ``buffer_index``-th buffer
        ``block`` writes (recorded as the ``buffer_dim_align`` annotation)."""
        storage_align(self._state, self._block_sref(block, "storage_align"), buffer_index,
                      axis, factor, offset)

    @instruction("SetScope", inputs=("block",), attrs=("buffer_index", "storage_scope"))
    def set_scope(self, block: BlockRV, buffer_index: int, storage_scope: str) -> None:
        """Put the ``buffer_index``-th buffer ``block`` writes in ``storage_scope``."""
        set_scope(self._state, self._block_sref(block, "set_scope"), buffer_index,
                  storage_scope)
