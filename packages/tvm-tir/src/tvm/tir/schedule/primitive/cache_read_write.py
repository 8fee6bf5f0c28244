"""cache_read / cache_write: stage a buffer through a new buffer in another storage scope.

``cache_read(block, i, "shared")`` makes a buffer ``A_shared``, a block ``A_shared`` copying
``A`` into it, and has the consumers of ``A`` (all readers in the block's scope, or the
given ``consumer_blocks``) read ``A_shared`` instead.  ``cache_write(block, i, "local")``
has the block write ``B_local`` and adds a block ``B_local`` writing it back to ``B``.

Where the copy goes and what it copies follows TVM:

* an input buffer (no writer in the scope) is copied at the start of the scope: the
  region the scope block declares to read (a blockized or tensorized block), or all of it;
* otherwise the copy goes right before the first consumer, in the innermost loop that
  holds both the writer and that consumer (the scope itself if none), and copies what the
  writer writes there: its write region relaxed over the loops below that location;
* a cache_write with no (remaining) consumer is written back right after the writer.

``compute_at`` / ``reverse_compute_at`` then move the copy next to its use and shrink it
to the region needed there.  The cache buffer is allocated by the scope block.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ...buffer import Buffer
from ...stmt import Block, BufferRegion
from .. import analysis as A
from ..error import ScheduleError
from ..handles import BlockRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef
from ._util import (
    BufferReplacer, ScopeRewriter, block_region_in_loops, check_storage_scope, child_position,
    clip_to_shape, copy_nest, find_region, loop_dom_map, loop_names, lowest_common_ancestor,
    make_analyzer,
    new_buffer_like, program_order, relax_ranges, rewrite_scope, unique_block_name,
)

__all__ = ["cache_read", "cache_write", "CacheReadWriteMixin"]


def _buffer_at(primitive: str, block: Block, index: int, kind: str) -> Buffer:
    regions = block.reads if kind == "read" else block.writes
    if isinstance(index, bool) or not isinstance(index, int):
        raise ScheduleError(primitive, f"{kind}_buffer_index must be an int, got {index!r}",
                            block)
    if not 0 <= index < len(regions):
        names = ", ".join(r.buffer.name for r in regions) or "none"
        raise ScheduleError(
            primitive, f"{kind}_buffer_index {index} is out of range: the block {kind}s "
            f"{len(regions)} buffer(s) ({names})", block,
        )
    return regions[index].buffer


def _enclosing_loops(loc: StmtSRef) -> list[StmtSRef]:
    """``loc`` (if a loop) and the loops around it, up to its block."""
    out = []
    node: Optional[StmtSRef] = loc
    while node is not None and node.is_loop:
        out.append(node)
        node = node.parent
    return out


def _loops_below(loc: StmtSRef, block_sref: StmtSRef) -> list[StmtSRef]:
    return [s for s in A.get_loops(block_sref) if loc.is_ancestor_of(s)]


def _relaxed_write_region(block_sref: StmtSRef, buffer: Buffer, loc: StmtSRef) -> list:
    region = find_region(block_sref.block.writes, buffer)
    ana = make_analyzer(_enclosing_loops(loc))
    ranges = block_region_in_loops(block_sref, region)  # type: ignore[arg-type]
    sets = relax_ranges(ranges, loop_dom_map(_loops_below(loc, block_sref)), ana)
    return clip_to_shape(sets, buffer, ana)  # type: ignore[return-value]


def _cache_names(state: ScheduleState, func_name: str, buffer: Buffer, scope: str
                 ) -> tuple[str, str]:
    base = f"{buffer.name}_{scope.replace('.', '_')}"
    return base, unique_block_name(state, func_name, base)


def _check_consumers(primitive: str, scope: StmtSRef, consumers: Sequence[StmtSRef],
                     buffer: Buffer) -> None:
    children = {id(c) for c in A.get_child_blocks(scope)}
    for c in consumers:
        if id(c) not in children:
            raise ScheduleError(primitive, "the consumer block is not in the scope of the "
                                "block", c.stmt, scope.stmt)
        if find_region(c.block.reads, buffer) is None:
            raise ScheduleError(primitive, f"the consumer block does not read buffer "
                                f"{buffer.name!r}", c.stmt)


def cache_read(state: ScheduleState, block_sref: StmtSRef, read_buffer_index: int,
               storage_scope: str, consumer_srefs: Optional[Sequence[StmtSRef]] = None
               ) -> StmtSRef:
    """Cache the ``read_buffer_index``-th buffer the block reads; returns the copy block."""
    prim = "cache_read"
    block = block_sref.block
    buffer = _buffer_at(prim, block, read_buffer_index, "read")
    check_storage_scope(prim, storage_scope, block)
    scope = A.get_scope_root(block_sref)
    if scope is block_sref:
        raise ScheduleError(prim, "cannot cache a buffer of the root block", block)
    func_name = block_sref.func_name
    order = program_order(state, func_name)
    children = A.get_child_blocks(scope)
    writers = [c for c in children if find_region(c.block.writes, buffer) is not None]
    if len(writers) > 1:
        names = ", ".join(repr(w.block.name_hint) for w in writers)
        raise ScheduleError(prim, f"buffer {buffer.name!r} is written by several blocks "
                            f"({names}); the cache needs a single writer", block)
    if consumer_srefs:
        consumers = list(consumer_srefs)
        _check_consumers(prim, scope, consumers, buffer)
    else:
        consumers = [c for c in children if c not in writers
                     and find_region(c.block.reads, buffer) is not None]
    if writers and any(w is c for w in writers for c in consumers):
        raise ScheduleError(prim, f"the block both writes and reads {buffer.name!r}; "
                            "cache_read needs a consumer that only reads it", block,
                            hint="use cache_write for the writer")
    if writers:
        writer = writers[0]
        if consumers:
            first = min(consumers, key=lambda s: order[id(s)])
            if order[id(first)] < order[id(writer)]:
                raise ScheduleError(prim, f"a consumer reads {buffer.name!r} before its "
                                    "writer runs", first.stmt, writer.stmt)
            loc = lowest_common_ancestor([writer, first])
            pos = child_position(loc, first)
        else:
            loc, pos = scope, child_position(scope, writer) + 1
        region = _relaxed_write_region(writer, buffer, loc)
    else:  # an input of the scope: what the scope block declares to read, or all of it
        loc, pos = scope, 0
        declared = find_region(scope.block.reads, buffer)
        region = list((declared or BufferRegion.full_region(buffer)).region)
    buf_name, block_name = _cache_names(state, func_name, buffer, storage_scope)
    cache = new_buffer_like(buffer, buf_name, storage_scope)
    nest, copy_block = copy_nest(buffer, cache, region, block_name,
                                 taken_names=loop_names(state, func_name))
    replacer = BufferReplacer({id(buffer): cache})
    fns = {id(c.block): replacer.visit_stmt for c in consumers}
    _add_alloc(fns, scope, cache)
    rewriter = ScopeRewriter(inserts={id(loc.stmt): [(pos, nest)]}, block_fns=fns)
    rewrite_scope(state, scope, rewriter, _current(state, func_name, replacer.reuse))
    return state.get_sref(copy_block, func_name)  # type: ignore[return-value]


def cache_write(state: ScheduleState, block_sref: StmtSRef, write_buffer_index: int,
                storage_scope: str, consumer_srefs: Optional[Sequence[StmtSRef]] = None
                ) -> StmtSRef:
    """Have the block write a cache of its ``write_buffer_index``-th output and add a block
    writing the cache back; returns the write-back block.  ``consumer_srefs`` read the
    cache directly."""
    prim = "cache_write"
    block = block_sref.block
    buffer = _buffer_at(prim, block, write_buffer_index, "write")
    check_storage_scope(prim, storage_scope, block)
    scope = A.get_scope_root(block_sref)
    if scope is block_sref:
        raise ScheduleError(prim, "cannot cache a buffer of the root block", block)
    func_name = block_sref.func_name
    order = program_order(state, func_name)
    children = A.get_child_blocks(scope)
    others = [c for c in children if c is not block_sref
              and find_region(c.block.writes, buffer) is not None]
    if others:
        raise ScheduleError(prim, f"buffer {buffer.name!r} is also written by block "
                            f"{others[0].block.name_hint!r}; the cache needs a single writer",
                            block)
    readers = [c for c in children if c is not block_sref
               and find_region(c.block.reads, buffer) is not None]
    direct = list(consumer_srefs or [])
    _check_consumers(prim, scope, direct, buffer)
    related = [c for c in readers if not any(c is d for d in direct)]
    for c in readers:
        if order[id(c)] < order[id(block_sref)]:
            raise ScheduleError(prim, f"block {c.block.name_hint!r} reads {buffer.name!r} "
                                "before the block writes it", block)
    if related:
        first = min(related, key=lambda s: order[id(s)])
        loc = lowest_common_ancestor([block_sref, first])
        pos = child_position(loc, first)
    else:
        loc, pos = scope, child_position(scope, block_sref) + 1
    region = _relaxed_write_region(block_sref, buffer, loc)
    buf_name, block_name = _cache_names(state, func_name, buffer, storage_scope)
    cache = new_buffer_like(buffer, buf_name, storage_scope)
    nest, copy_block = copy_nest(cache, buffer, region, block_name,
                                 taken_names=loop_names(state, func_name))
    replacer = BufferReplacer({id(buffer): cache})
    fns = {id(c.block): replacer.visit_stmt for c in [block_sref, *direct]}
    _add_alloc(fns, scope, cache)
    rewriter = ScopeRewriter(inserts={id(loc.stmt): [(pos, nest)]}, block_fns=fns)
    rewrite_scope(state, scope, rewriter, _current(state, func_name, replacer.reuse))
    return state.get_sref(copy_block, func_name)  # type: ignore[return-value]


def _add_alloc(fns: dict, scope: StmtSRef, buffer: Buffer) -> None:
    old = fns.get(id(scope.block))

    def add(b: Block) -> Block:
        if old is not None:
            b = old(b)
        return b.with_fields(alloc_buffers=tuple(b.alloc_buffers) + (buffer,))

    fns[id(scope.block)] = add


def _current(state: ScheduleState, func_name: str, reuse: dict) -> dict:
    """The entries of ``reuse`` whose old block is part of the current IR."""
    return {old: new for old, new in reuse.items()
            if state.get_sref(old, func_name) is not None}


class CacheReadWriteMixin:
    """cache_read / cache_write methods of :class:`Schedule`."""

    @instruction("CacheRead", inputs=("block", "consumer_blocks"),
                 attrs=("read_buffer_index", "storage_scope"), outputs="one")
    def cache_read(self, block: BlockRV, read_buffer_index: int, storage_scope: str,
                   consumer_blocks: Optional[Sequence[BlockRV]] = None) -> BlockRV:
        """Copy the ``read_buffer_index``-th buffer ``block`` reads into a new buffer of
        ``storage_scope`` and make its consumers (or ``consumer_blocks``) read the copy.
        Returns the copy block."""
        sref = self._block_sref(block, "cache_read")
        consumers = [self._block_sref(b, "cache_read") for b in consumer_blocks or []]
        return self._new_rv(cache_read(self._state, sref, read_buffer_index, storage_scope,
                                       consumers))

    @instruction("CacheWrite", inputs=("block", "consumer_blocks"),
                 attrs=("write_buffer_index", "storage_scope"), outputs="one")
    def cache_write(self, block: BlockRV, write_buffer_index: int, storage_scope: str,
                    consumer_blocks: Optional[Sequence[BlockRV]] = None) -> BlockRV:
        """Make ``block`` write a new buffer of ``storage_scope`` instead of its
        ``write_buffer_index``-th output, copied back by a new block (returned).
        ``consumer_blocks`` read the cache directly."""
        sref = self._block_sref(block, "cache_write")
        consumers = [self._block_sref(b, "cache_write") for b in consumer_blocks or []]
        return self._new_rv(cache_write(self._state, sref, write_buffer_index, storage_scope,
                                        consumers))
