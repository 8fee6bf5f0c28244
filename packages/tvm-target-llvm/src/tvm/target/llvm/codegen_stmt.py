"""Statements: control flow, stores and allocations (mixed into :class:`CodeGenLLVM`).

* ``For``: serial loops; ``unrolled`` loops with constant bounds are unrolled for real (up to
  :data:`MAX_UNROLL` iterations); ``parallel`` loops are outlined (:mod:`.outline`);
  ``vectorized`` loops that survived lowering run serially.
* ``AssertStmt``: on failure the message is formatted with ``snprintf`` (when it has
  ``message_args``) and handed to the runtime through ``__TVMAPISetLastError``; the
  function returns -1.
* ``Allocate``: a 64-byte aligned stack slot in the entry block for constant sizes up to
  :data:`STACK_LIMIT` bytes, otherwise ``aligned_alloc``/``free`` around the body.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from tvm import tir
from tvm.tir import ForKind

from .dtypes import I64, PTR, dtype_info, mem_type

__all__ = ["StmtCodegen", "MAX_UNROLL", "STACK_LIMIT", "ALLOC_ALIGN"]

MAX_UNROLL = 64
STACK_LIMIT = 16 * 1024
ALLOC_ALIGN = 64


class StmtCodegen:
    """Statement visitors."""

    builder: ir.IRBuilder

    def _s_seq_stmt(self, s: tir.SeqStmt) -> None:
        for item in s.seq:
            self.stmt(item)

    def _s_evaluate(self, s: tir.Evaluate) -> None:
        if isinstance(s.value, (tir.IntImm, tir.FloatImm, tir.StringImm)):
            return
        self.expr(s.value)

    def _s_let_stmt(self, s: tir.LetStmt) -> None:
        with self.bind_var(s.var, self.expr(s.value)):
            self.stmt(s.body)

    def _s_attr_stmt(self, s: tir.AttrStmt) -> None:
        from tvm.tir.transform.make_packed_api import COMPUTE_SCOPE

        if s.attr_key == COMPUTE_SCOPE:
            self.compute_scope(s)
        else:
            self.stmt(s.body)

    def _s_decl_buffer(self, s: tir.DeclBuffer) -> None:
        self.stmt(s.body)

    def _s_buffer_store(self, s: tir.BufferStore) -> None:
        self.store(s.buffer, s.indices, s.value)

    def _s_assert_stmt(self, s: tir.AssertStmt) -> None:
        cond = self.expr(s.condition)
        b = self.builder
        ok = self.new_block("assert.ok")
        fail = self.new_block("assert.fail")
        b.cbranch(cond, ok, fail)
        b.position_at_end(fail)
        args = [self.expr(a) for a in s.message_args]
        self.emit_error(s.message, args, [dtype_info(a.dtype) for a in s.message_args])
        b.position_at_end(ok)
        self.stmt(s.body)

    def _s_if_then_else(self, s: tir.IfThenElse) -> None:
        b = self.builder
        cond = self.expr(s.condition)
        then_bb = self.new_block("if.then")
        end_bb = self.new_block("if.end")
        else_bb = self.new_block("if.else") if s.else_case is not None else end_bb
        b.cbranch(cond, then_bb, else_bb)
        b.position_at_end(then_bb)
        self.stmt(s.then_case)
        if not b.block.is_terminated:
            b.branch(end_bb)
        if s.else_case is not None:
            b.position_at_end(else_bb)
            self.stmt(s.else_case)
            if not b.block.is_terminated:
                b.branch(end_bb)
        b.position_at_end(end_bb)

    def _s_while(self, s: tir.While) -> None:
        b = self.builder
        head = self.new_block("while.head")
        body = self.new_block("while.body")
        end = self.new_block("while.end")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(self.expr(s.condition), body, end)
        b.position_at_end(body)
        self.stmt(s.body)
        if not b.block.is_terminated:
            b.branch(head)
        b.position_at_end(end)

    # ------------------------------------------------------------------ loops
    def _s_for(self, s: tir.For) -> None:
        if s.kind == ForKind.THREAD_BINDING:
            raise ValueError(
                f"llvm codegen: loop {s.loop_var.name} in {self.func_name} is bound to a GPU "
                "thread; the llvm target runs on the CPU (use parallel/vectorize instead)"
            )
        if s.kind == ForKind.PARALLEL and not self.in_parallel:
            self.parallel_for(s)
            return
        if (s.kind == ForKind.UNROLLED and isinstance(s.min, tir.IntImm)
                and isinstance(s.extent, tir.IntImm) and s.extent.value <= MAX_UNROLL):
            for i in range(s.min.value, s.min.value + s.extent.value):
                with self.bind_var(s.loop_var, self.const(s.loop_var.dtype, i)):
                    self.stmt(s.body)
            return
        begin = self.loop_bound(s.min, s.loop_var.dtype)
        extent = self.loop_bound(s.extent, s.loop_var.dtype)
        end = self.builder.add(begin, extent)
        self.serial_loop(s.loop_var, begin, end, lambda: self.stmt(s.body))

    def loop_bound(self, e: tir.PrimExpr, dtype: str) -> ir.Value:
        v = self.expr(e)
        return self.cast(v, dtype_info(e.dtype), dtype_info(dtype))

    def serial_loop(self, var: tir.Var, begin: ir.Value, end: ir.Value,
                    emit_body: Callable[[], None]) -> None:
        """``for (var = begin; var < end; ++var) emit_body()``."""
        b = self.builder
        pre = b.block
        head = self.new_block(f"for.{var.name}.head")
        body = self.new_block(f"for.{var.name}.body")
        end_bb = self.new_block(f"for.{var.name}.end")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(begin.type, name=var.name)
        i.add_incoming(begin, pre)
        signed = dtype_info(var.dtype).is_signed
        cond = b.icmp_signed("<", i, end) if signed else b.icmp_unsigned("<", i, end)
        b.cbranch(cond, body, end_bb)
        b.position_at_end(body)
        with self.bind_var(var, i):
            emit_body()
        if not b.block.is_terminated:
            nxt = b.add(i, ir.Constant(i.type, 1), flags=("nsw",) if signed else ())
            i.add_incoming(nxt, b.block)
            b.branch(head)
        b.position_at_end(end_bb)

    # ------------------------------------------------------------------ memory
    def _s_allocate(self, s: tir.Allocate) -> None:
        d = dtype_info(s.dtype)
        count: int | None = 1
        for e in s.extents:
            if isinstance(e, tir.IntImm) and count is not None:
                count *= e.value
            else:
                count = None
        b = self.builder
        name = s.buffer_var.name
        if count is not None and count * d.nbytes <= STACK_LIMIT:
            slot = self.alloca(ir.ArrayType(mem_type(s.dtype), max(count, 1)), name=name,
                               align=ALLOC_ALIGN)
            self.var_align[s.buffer_var] = ALLOC_ALIGN
            with self.bind_var(s.buffer_var, slot):
                self.stmt(s.body)
            return
        nbytes = ir.Constant(I64, d.nbytes)
        for e in s.extents:
            nbytes = b.mul(nbytes, self.cast(self.expr(e), dtype_info(e.dtype),
                                             dtype_info("int64")))
        # aligned_alloc wants a multiple of the alignment; never ask for 0 bytes.
        padded = b.and_(b.add(nbytes, ir.Constant(I64, ALLOC_ALIGN)),
                        ir.Constant(I64, -ALLOC_ALIGN))
        alloc = self.declare("aligned_alloc", PTR, [I64, I64])
        ptr = b.call(alloc, [ir.Constant(I64, ALLOC_ALIGN), padded], name=name)
        ok = self.new_block("alloc.ok")
        fail = self.new_block("alloc.fail")
        b.cbranch(b.icmp_unsigned("==", ptr, ir.Constant(PTR, None)), fail, ok)
        b.position_at_end(fail)
        self.emit_error(f"{self.func_name}: out of memory allocating %lld bytes for {name}",
                        [nbytes], [dtype_info("int64")])
        b.position_at_end(ok)
        self.var_align[s.buffer_var] = ALLOC_ALIGN
        with self.bind_var(s.buffer_var, ptr):
            self.stmt(s.body)
        if not b.block.is_terminated:
            b.call(self.declare("free", ir.VoidType(), [PTR]), [ptr])

    def _s_block_realize(self, s: tir.Stmt) -> None:
        raise NotImplementedError(
            f"llvm codegen: {self.func_name} still contains blocks; run the TIR lowering "
            "passes (blocks to loops, buffer flattening) before building"
        )

    _s_block = _s_block_realize

