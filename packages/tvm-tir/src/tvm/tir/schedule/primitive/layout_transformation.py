"""transform_layout: change the layout of a buffer with an index map.

``sch.transform_layout(block, ("write", 0), lambda i, j: (i // 4, j, i % 4))`` gives the
buffer the shape the map produces (``(16, 8) -> (4, 8, 4)``) and rewrites every access
``B[i, j]`` into ``B[i // 4, j, i % 4]`` and every declared region into the set of
indices it maps to, in the whole function (a parameter's buffer changes the function's
signature).  ``buffer`` is ``("read" | "write", index)`` into the block's regions, a
buffer name, or the Buffer itself; ``index_map`` an :class:`~tvm.tir.IndexMap` or a Python
function of the indices.

A map whose output shape holds more elements than the buffer introduces padding.  With
``pad_value`` a block ``<buffer>_pad`` filling the whole new buffer with that value is
placed before the first writer of the buffer, so the padding holds ``pad_value`` and the
rest what the writer stores; without it the padding is left unspecified.  A map with fewer
output elements than input elements is rejected as not injective.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from ...buffer import Buffer
from ...expr import IntImm, PrimExpr, Range, Var, const
from ...expr_util import is_const_int
from ...index_map import IndexMap
from ...stmt import BufferRegion
from .. import analysis as A
from ..error import ScheduleError
from ..handles import BlockRV
from ..instruction import instruction
from ..state import ScheduleState, StmtSRef
from ._util import (
    BufferReplacer, ScopeRewriter, child_position, copy_nest, loop_names,
    rewrite_scope, unique_block_name,
)

__all__ = ["transform_layout", "LayoutTransformationMixin", "resolve_buffer"]

BufferSpec = Union[tuple, list, str, Buffer]


def resolve_buffer(prim: str, block: Any, buffer: BufferSpec) -> tuple[str, int]:
    """``("read" | "write", index)`` for a buffer given as such a pair, a name or a Buffer."""
    if isinstance(buffer, (tuple, list)):
        if len(buffer) != 2 or buffer[0] not in ("read", "write") or \
                isinstance(buffer[1], bool) or not isinstance(buffer[1], int):
            raise ScheduleError(prim, f"buffer must be ('read' | 'write', index), got "
                                f"{buffer!r}", block)
        kind, index = buffer[0], buffer[1]
        regions = block.reads if kind == "read" else block.writes
        if not 0 <= index < len(regions):
            names = ", ".join(r.buffer.name for r in regions) or "none"
            raise ScheduleError(prim, f"{kind} buffer index {index} is out of range: the block "
                                f"{kind}s {len(regions)} buffer(s) ({names})", block)
        return kind, index
    for kind, regions in (("write", block.writes), ("read", block.reads)):
        for k, r in enumerate(regions):
            if (isinstance(buffer, str) and r.buffer.name == buffer) or r.buffer is buffer:
                return kind, k
    if isinstance(buffer, (str, Buffer)):
        name = buffer if isinstance(buffer, str) else buffer.name
        raise ScheduleError(prim, f"the block does not access a buffer {name!r}", block)
    raise TypeError(f"{prim}: buffer must be ('read'|'write', index), a name or a Buffer, got "
                    f"{type(buffer).__name__}")


def _product(values: list[PrimExpr]) -> Optional[int]:
    out = 1
    for v in values:
        if not isinstance(v, IntImm):
            return None
        out *= v.value
    return out


def transform_layout(state: ScheduleState, block_sref: StmtSRef, kind: str, index: int,
                     index_map: IndexMap, pad_value: Optional[PrimExpr] = None) -> None:
    """Apply ``index_map`` to a buffer the block reads or writes (see the module doc)."""
    from tvm.arith import Analyzer

    prim = "transform_layout"
    block = block_sref.block
    regions = block.reads if kind == "read" else block.writes
    buffer = regions[index].buffer
    if index_map.ndim_in != len(buffer.shape):
        raise ScheduleError(prim, f"the index map takes {index_map.ndim_in} indices but "
                            f"{buffer.name!r} has {len(buffer.shape)} dimensions", block)
    ana = Analyzer()
    try:
        new_shape = index_map.map_shape(buffer.shape, ana)
    except ValueError as err:
        raise ScheduleError(prim, str(err), block) from None
    old_n, new_n = _product(list(buffer.shape)), _product(new_shape)
    padded = old_n is not None and new_n is not None and new_n > old_n
    if old_n is not None and new_n is not None and new_n < old_n:
        raise ScheduleError(prim, f"the index map is not injective: it maps the {old_n} "
                            f"elements of {buffer.name!r} to a shape of {new_n}", block)
    func_name = block_sref.func_name
    func = state.func(func_name)
    is_param = any(b is buffer for b in func.buffer_map.values())
    writers = [s for s in state.iter_srefs(func_name) if s.is_block and s.parent is not None
               and any(w.buffer is buffer for w in s.block.writes)]
    if pad_value is not None:
        if not padded:
            raise ScheduleError(prim, f"pad_value is given but the index map adds no padding to "
                                f"{buffer.name!r}", block)
        if not writers:
            raise ScheduleError(prim, f"{buffer.name!r} is an input of the function; its "
                                "padding cannot be filled with pad_value", block)
    new_buffer = buffer.with_fields(shape=tuple(new_shape), strides=(), axis_separators=(),
                                    data=Var(buffer.data.name, buffer.data.dtype))

    def index_fn(old: Buffer, indices: tuple) -> tuple:
        return tuple(index_map.map_indices(indices, ana))

    def region_fn(old: Buffer, region: tuple) -> tuple:
        return _map_region(index_map, region, ana)

    replacer = BufferReplacer({id(buffer): new_buffer}, index_fn, region_fn)
    if is_param:
        new_body = replacer.visit_stmt(func.body)
        buffer_map = {p: (new_buffer if b is buffer else b) for p, b in func.buffer_map.items()}
        new_func = func.with_fields(body=new_body, buffer_map=buffer_map)
        state.replace_func(func_name, new_func, block_reuse=replacer.reuse)
    else:
        owner = _alloc_owner(block_sref, buffer)
        if owner is None:
            raise ScheduleError(prim, f"buffer {buffer.name!r} is neither a parameter nor "
                                "allocated by an enclosing block", block)
        new_owner = replacer.visit_stmt(owner.block)
        state.replace({owner.block: new_owner}, block_reuse=replacer.reuse,
                      func_name=func_name)
    if pad_value is not None:
        _fill_padding(state, writers, new_buffer, pad_value)


def _alloc_owner(block_sref: StmtSRef, buffer: Buffer) -> Optional[StmtSRef]:
    node: Optional[StmtSRef] = block_sref
    while node is not None:
        if node.is_block and any(b is buffer for b in node.block.alloc_buffers):
            return node
        node = node.parent
    return None


def _map_region(index_map: IndexMap, region: tuple, ana: Any) -> tuple:
    points = [r.min if is_const_int(r.extent, 1) else None for r in region]
    doms: dict[Var, Range] = {}
    args = []
    for k, r in enumerate(region):
        if points[k] is not None:
            args.append(points[k])
        else:
            v = Var(f"r{k}", r.min.dtype)
            doms[v] = r
            args.append(v)
    out = []
    from tvm.arith import eval_set

    for e in index_map.map_indices(args, ana):
        if not doms:
            out.append(Range(e, const(1, e.dtype)))
            continue
        s = eval_set(e, doms, ana)
        if not s.is_bounded():
            raise ScheduleError("transform_layout", f"cannot bound the mapped region {e!r}")
        out.append(Range(s.min_value, ana.simplify(s.max_value - s.min_value + 1)))
    return tuple(out)


def _fill_padding(state: ScheduleState, old_writers: list, buffer: Buffer,
                  pad_value: PrimExpr) -> None:
    """Insert ``<buffer>_pad`` filling ``buffer`` with ``pad_value`` before its first writer."""
    writers = [s for s in old_writers if s.stmt is not None]
    first = writers[0]
    scope = A.get_scope_root(first)
    func_name = first.func_name
    name = unique_block_name(state, func_name, f"{buffer.name}_pad")
    region = list(BufferRegion.full_region(buffer).region)
    nest, _ = copy_nest(buffer, buffer, region, name, value_fn=lambda vs: pad_value,
                        taken_names=loop_names(state, func_name))
    pos = child_position(scope, first)
    rewrite_scope(state, scope, ScopeRewriter(inserts={id(scope.block): [(pos, nest)]}))


def _pad_value(prim: str, value: Any, dtype: str) -> Optional[PrimExpr]:
    if value is None:
        return None
    if isinstance(value, PrimExpr):
        if value.dtype != dtype:
            raise ScheduleError(prim, f"pad_value has dtype {value.dtype}, the buffer {dtype}")
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return const(value, dtype)
    raise TypeError(f"{prim}: pad_value must be a number or PrimExpr, got {value!r}")


def _transform_layout(self: Any, block: BlockRV, buffer: Any, index_map: IndexMap,
                      pad_value: Optional[PrimExpr] = None) -> None:
    sref = self._block_sref(block, "transform_layout")
    transform_layout(self._state, sref, buffer[0], buffer[1], index_map, pad_value)


_transform_layout.__name__ = "transform_layout"  # the trace calls the public method


class LayoutTransformationMixin:
    """transform_layout method of :class:`Schedule`."""

    _transform_layout = instruction(
        "TransformLayout", inputs=("block",), attrs=("buffer", "index_map", "pad_value"),
    )(_transform_layout)

    def transform_layout(self, block: BlockRV, buffer: BufferSpec,
                         index_map: Union[IndexMap, Callable[..., Any]],
                         pad_value: Any = None) -> None:
        """Give a buffer of ``block`` the layout ``index_map`` (an IndexMap or a function of
        the indices), rewriting every access to it; ``pad_value`` fills padding."""
        sref = self._block_sref(block, "transform_layout")
        kind, index = resolve_buffer("transform_layout", sref.block, buffer)
        buf = (sref.block.reads if kind == "read" else sref.block.writes)[index].buffer
        dtype = buf.shape[0].dtype if buf.shape else "int32"
        try:
            imap = IndexMap.from_func(index_map, len(buf.shape), dtype)
        except ValueError as err:
            raise ScheduleError("transform_layout", str(err), sref.block) from None
        self._transform_layout(block, (kind, index), imap,
                               _pad_value("transform_layout", pad_value, buf.dtype))
