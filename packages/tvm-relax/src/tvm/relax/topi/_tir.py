"""A tiny builder for hand-written TIR PrimFuncs (scans, sorts, scatters).

::

    fb = FuncBuilder()
    x = fb.arg(shape, "float32", "x")
    out = fb.arg(shape, "float32", "out")
    acc = fb.scalar("float32", "acc")
    func = fb.finish(loop_nest(shape, lambda i: out.store(i, x.load(i))))

Symbolic dimensions in argument shapes are bound by the buffers (match_buffer), so the
function works for every size.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from tvm.tir import (
    Block, BlockRealize, Buffer, BufferStore, For, IfThenElse, IntImm, PrimExpr, PrimFunc, Stmt,
    Var, While, decl_buffer, stmt_seq,
)

__all__ = ["FuncBuilder", "Scalar", "fresh_shapes", "loop_nest", "if_then", "while_loop",
           "seq", "i64"]


def i64(value: int) -> IntImm:
    return IntImm("int64", value)


def fresh_shapes(*shapes: Sequence[Any]) -> list[tuple]:
    """``shapes`` with their symbolic variables replaced by new ones (the same replacement
    in all of them): a PrimFunc binds its own shape variables instead of sharing the
    caller's.  A compound dimension (``n * 4``) becomes a variable of its own (the same one
    for structurally equal dimensions): a buffer binds a dimension only when it is a
    variable, so ``n`` alone would not be defined."""
    from tvm.ffi import structural_equal

    mapping: dict[Var, Var] = {}
    compound: list[tuple[PrimExpr, Var]] = []
    out = []
    for shape in shapes:
        dims = []
        for d in shape:
            if isinstance(d, Var):
                if d not in mapping:
                    mapping[d] = Var(d.name, d.dtype)
                d = mapping[d]
            elif isinstance(d, PrimExpr) and not isinstance(d, IntImm):
                found = next((v for e, v in compound if structural_equal(e, d)), None)
                if found is None:
                    found = Var("dim", d.dtype)
                    compound.append((d, found))
                d = found
            dims.append(d)
        out.append(tuple(dims))
    return out


class Scalar:
    """A mutable scalar: a one-element local buffer."""

    def __init__(self, buffer: Buffer):
        self.buffer = buffer

    @property
    def value(self) -> PrimExpr:
        return self.buffer[i64(0)]

    def set(self, value: Any) -> Stmt:
        return BufferStore(self.buffer, value, (i64(0),))


class FuncBuilder:
    """Collects parameters and local buffers; :meth:`finish` wraps a body into a PrimFunc."""

    def __init__(self) -> None:
        self.params: list[Var] = []
        self.buffer_map: dict[Var, Buffer] = {}
        self.allocs: list[Buffer] = []

    def arg(self, shape: Sequence[Any], dtype: str, name: str) -> Buffer:
        buf = decl_buffer(tuple(shape), dtype, name)
        handle = Var(f"var_{name}", "handle")
        self.params.append(handle)
        self.buffer_map[handle] = buf
        return buf

    def local(self, shape: Sequence[Any], dtype: str, name: str) -> Buffer:
        scope = "local" if all(isinstance(d, IntImm) for d in shape) else "global"
        buf = decl_buffer(tuple(shape), dtype, name, scope=scope)
        self.allocs.append(buf)
        return buf

    def scalar(self, dtype: str, name: str) -> Scalar:
        return Scalar(self.local((i64(1),), dtype, name))

    def finish(self, body: Stmt) -> PrimFunc:
        block = Block((), (), (), "root", body, alloc_buffers=tuple(self.allocs))
        root = BlockRealize((), IntImm("bool", 1), block)
        return PrimFunc(self.params, root, buffer_map=self.buffer_map,
                        attrs={"tir.noalias": True})


def loop_nest(extents: Sequence[Any], body: Callable[[list[Var]], Stmt], prefix: str = "i") -> Stmt:
    """Nested serial loops over ``extents`` (none for a 0-d shape)."""
    vars_ = [Var(f"{prefix}{k}", "int64") for k in range(len(extents))]
    stmt = body(vars_)
    for v, e in reversed(list(zip(vars_, extents))):
        stmt = For(v, i64(0), e, body=stmt)
    return stmt


def if_then(cond: PrimExpr, then: Stmt, other: Stmt | None = None) -> Stmt:
    return IfThenElse(cond, then, other)


def while_loop(cond: PrimExpr, body: Stmt) -> Stmt:
    return While(cond, body)


def seq(*stmts: Stmt) -> Stmt:
    return stmt_seq(*stmts)
