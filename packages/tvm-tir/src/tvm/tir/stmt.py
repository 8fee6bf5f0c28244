"""TIR statements: loops, blocks, stores, allocations and control flow."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Optional

from tvm.ffi import Object, def_field, ignore_field, register_json_value, register_object
from tvm.ir.span import Span

from .buffer import Buffer
from .expr import IterVar, PrimExpr, Range, Var, convert

__all__ = [
    "Stmt", "LetStmt", "AttrStmt", "AssertStmt", "BufferStore", "Allocate", "DeclBuffer",
    "SeqStmt", "IfThenElse", "Evaluate", "ForKind", "For", "While", "BufferRegion",
    "MatchBufferRegion", "Block", "BlockRealize", "stmt_seq",
]


@register_object()
class Stmt(Object):
    """Base of all TIR statements."""


@register_object("tir.LetStmt")
class LetStmt(Stmt):
    var: Var = def_field()
    value: PrimExpr = None  # type: ignore[assignment]
    body: Stmt = None  # type: ignore[assignment]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("tir.AttrStmt")
class AttrStmt(Stmt):
    """Annotates ``body`` with ``attr_key = value`` about ``node`` (e.g. a thread extent)."""

    node: Any
    attr_key: str
    value: PrimExpr
    body: Stmt
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("tir.AssertStmt")
class AssertStmt(Stmt):
    """Check ``condition`` before ``body``; on failure the kernel reports ``message`` and returns.

    ``message`` may hold printf-style ``%lld`` placeholders filled with ``message_args``
    (int64 expressions) so that errors can say what was given, e.g.
    ``"matmul: argument A has shape[1] = %lld, expected 256"``.
    """

    condition: PrimExpr
    message: str
    body: Stmt
    message_args: tuple[PrimExpr, ...] = ()
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("tir.BufferStore")
class BufferStore(Stmt):
    """``buffer[indices] = value``; a vector store when an index is a Ramp."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "indices", tuple(convert(i) for i in self.indices))
        if not isinstance(self.value, PrimExpr):
            from .expr import const

            object.__setattr__(self, "value", const(self.value, self.buffer.dtype))


@register_object("tir.Allocate")
class Allocate(Stmt):
    """Allocate ``extents`` elements of ``dtype`` in ``scope``, bound to ``buffer_var``."""

    buffer_var: Var = def_field()
    dtype: str = "float32"
    extents: tuple[PrimExpr, ...] = ()
    condition: PrimExpr = None  # type: ignore[assignment]
    body: Stmt = None  # type: ignore[assignment]
    scope: str = "global"
    annotations: dict = None  # type: ignore[assignment]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "extents", tuple(convert(e) for e in self.extents))
        if self.condition is None:
            object.__setattr__(self, "condition", convert(True))
        if self.annotations is None:
            object.__setattr__(self, "annotations", {})


@register_object("tir.DeclBuffer")
class DeclBuffer(Stmt):
    """Declares ``buffer`` (a view of already-allocated memory) for ``body``."""

    buffer: Buffer = def_field()
    body: Stmt = None  # type: ignore[assignment]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("tir.SeqStmt")
class SeqStmt(Stmt):
    seq: tuple[Stmt, ...]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __len__(self) -> int:
        return len(self.seq)

    def __getitem__(self, i: int) -> Stmt:
        return self.seq[i]


@register_object("tir.IfThenElse")
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Optional[Stmt] = None
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("tir.Evaluate")
class Evaluate(Stmt):
    """Evaluate an expression for its side effect (a call)."""

    value: PrimExpr
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "value", convert(self.value))


class ForKind(IntEnum):
    SERIAL = 0
    PARALLEL = 1
    VECTORIZED = 2
    UNROLLED = 3
    THREAD_BINDING = 4


register_json_value(ForKind, "tir.ForKind", int, ForKind)


@register_object("tir.For")
class For(Stmt):
    """``for loop_var in range(min, min + extent)`` of the given kind."""

    loop_var: Var = def_field()
    min: PrimExpr = None  # type: ignore[assignment]
    extent: PrimExpr = None  # type: ignore[assignment]
    kind: ForKind = ForKind.SERIAL
    body: Stmt = None  # type: ignore[assignment]
    thread_binding: Optional[IterVar] = None
    annotations: dict = None  # type: ignore[assignment]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "min", convert(self.min))
        object.__setattr__(self, "extent", convert(self.extent))
        object.__setattr__(self, "kind", ForKind(self.kind))
        if self.annotations is None:
            object.__setattr__(self, "annotations", {})


@register_object("tir.While")
class While(Stmt):
    condition: PrimExpr
    body: Stmt
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("tir.BufferRegion")
class BufferRegion(Object):
    """A rectangular region of a buffer: one Range per dimension."""

    buffer: Buffer
    region: tuple[Range, ...]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    @staticmethod
    def full_region(buffer: Buffer) -> BufferRegion:
        return BufferRegion(buffer, tuple(Range(0, s) for s in buffer.shape))


@register_object("tir.MatchBufferRegion")
class MatchBufferRegion(Object):
    """Binds ``buffer`` to a sub-region of another buffer (used by tensorize)."""

    buffer: Buffer = def_field()
    source: BufferRegion = None  # type: ignore[assignment]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)


@register_object("tir.Block")
class Block(Stmt):
    """A unit of computation with declared iteration variables and buffer accesses.

    ``init`` runs once before the first reduction iteration.  Blocks are what schedule
    primitives address by name.
    """

    # Declaration order is comparison order: the buffers a block allocates or matches are
    # bound before the regions and the body that use them.  The constructor keeps the
    # familiar argument order.
    iter_vars: tuple[IterVar, ...] = def_field()
    alloc_buffers: tuple[Buffer, ...] = def_field(default=())
    match_buffers: tuple[MatchBufferRegion, ...] = ()
    reads: tuple[BufferRegion, ...] = ()
    writes: tuple[BufferRegion, ...] = ()
    name_hint: str = ""
    body: Stmt = None  # type: ignore[assignment]
    init: Optional[Stmt] = None
    annotations: dict = None  # type: ignore[assignment]
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __init__(
        self,
        iter_vars: Any = (),
        reads: Any = (),
        writes: Any = (),
        name_hint: str = "",
        body: Optional[Stmt] = None,
        init: Optional[Stmt] = None,
        alloc_buffers: Any = (),
        match_buffers: Any = (),
        annotations: Optional[dict] = None,
        *,
        span: Optional[Span] = None,
    ):
        for name, value in (
            ("iter_vars", iter_vars), ("alloc_buffers", alloc_buffers),
            ("match_buffers", match_buffers), ("reads", reads), ("writes", writes),
            ("name_hint", name_hint), ("body", body), ("init", init),
            ("annotations", annotations), ("span", span),
        ):
            object.__setattr__(self, name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.annotations is None:
            object.__setattr__(self, "annotations", {})


@register_object("tir.BlockRealize")
class BlockRealize(Stmt):
    """Runs ``block`` with its iteration variables bound to ``iter_values`` when ``predicate``."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block
    span: Optional[Span] = ignore_field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "iter_values", tuple(convert(v) for v in self.iter_values))
        object.__setattr__(self, "predicate", convert(self.predicate))
        if len(self.iter_values) != len(self.block.iter_vars):
            raise ValueError(
                f"block {self.block.name_hint!r} has {len(self.block.iter_vars)} iteration "
                f"variables but {len(self.iter_values)} bindings"
            )


def stmt_seq(*stmts: Any) -> Stmt:
    """Flatten into one statement: nested SeqStmts are spliced, a single one is returned as is."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        elif isinstance(s, (list, tuple)):
            inner = stmt_seq(*s)
            flat.extend(inner.seq if isinstance(inner, SeqStmt) else [inner])
        else:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat))
