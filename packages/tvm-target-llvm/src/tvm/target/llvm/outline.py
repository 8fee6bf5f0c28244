"""Outlined functions: compute scopes and parallel loops (mixed into :class:`CodeGenLLVM`).

Compute scope (``AttrStmt "compute_scope"`` from MakePackedAPI): the body after the argument
checks becomes an internal function whose parameters are the variables it uses; under
``tir.noalias`` its pointer parameters are ``noalias``, which LLVM keeps as scoped alias
metadata when it inlines the function back.

Parallel loop (``For`` of kind ``parallel``), following ``__TVMBackendParallelLaunch`` of
``docs/abi.md``::

    struct closure { <loop min>, <loop extent>, <captured values...> };
    int32_t lambda(int32_t task_id, int32_t num_task, void* cdata) {
        chunk = ceil(extent / num_task); lo = task_id * chunk; hi = min(lo + chunk, extent);
        return body(min, lo, hi, captured...);   // a noalias function, usually inlined
    }
    status = slot ? slot(lambda, &closure, num_task) : lambda(0, 1, &closure);

Parallel loops nested in a parallel loop run serially inside the task.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from tvm import tir
from tvm.tir.functor import StmtExprVisitor

from .dtypes import I32, PTR, dtype_info
from .packed import IndirectCallee

__all__ = ["OutlineCodegen", "used_vars"]


class _UsedVars(StmtExprVisitor):
    def __init__(self) -> None:
        self.seen: dict[tir.Var, None] = {}

    def visit_var_(self, v: tir.Var) -> None:
        self.seen.setdefault(v, None)

    def visit_buffer(self, buffer: tir.Buffer) -> None:
        self.seen.setdefault(buffer.data, None)
        for e in (*buffer.shape, *buffer.strides):
            self.visit_expr(e)
        if buffer.elem_offset is not None:
            self.visit_expr(buffer.elem_offset)


def used_vars(*nodes: Any) -> list[tir.Var]:
    """Every variable referenced in ``nodes`` (buffers' data and shape included), in order."""
    v = _UsedVars()
    for n in nodes:
        v.visit(n)
    return list(v.seen)


_LAMBDA_TYPE = ir.FunctionType(I32, [I32, I32, PTR])
_LAUNCH_TYPE = ir.FunctionType(I32, [PTR, PTR, I32])


class OutlineCodegen:
    """Compute scopes and parallel-for outlining."""

    builder: ir.IRBuilder
    var_map: dict

    def captured(self, *nodes: Any, exclude: tuple = ()) -> list[tir.Var]:
        """The variables of ``nodes`` that the current function has values for."""
        return [v for v in used_vars(*nodes) if v in self.var_map and v not in exclude]

    def _outlined_function(self, name: str, params: list[tuple[tir.Var | None, ir.Type]]
                           ) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(I32, [t for _, t in params]),
                         name=self.unique_name(name))
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        for (var, _), arg in zip(params, fn.args):
            if var is not None:
                arg.name = var.name
                if self.noalias and var.dtype == "handle":
                    arg.add_attribute("noalias")
        return fn

    # ------------------------------------------------------------------ compute scope
    def compute_scope(self, s: tir.AttrStmt) -> None:
        name = s.value.value if isinstance(s.value, tir.StringImm) else f"{self.func_name}_compute_"
        vars_ = self.captured(s.body)
        values = [self.var_map[v] for v in vars_]
        fn = self._outlined_function(name, [(v, val.type) for v, val in zip(vars_, values)])
        in_parallel = self.in_parallel
        with self.new_function(fn, self.func_name):
            self.in_parallel = in_parallel
            for v, arg in zip(vars_, fn.args):
                self.var_map[v] = arg
            self.stmt(s.body)
            if not self.builder.block.is_terminated:
                self.builder.ret(ir.Constant(I32, 0))
        self.check_status(self.builder.call(fn, values))

    # ------------------------------------------------------------------ parallel for
    def parallel_for(self, s: tir.For) -> None:
        b = self.builder
        ltype = dtype_info(s.loop_var.dtype)
        begin = self.loop_bound(s.min, s.loop_var.dtype)
        extent = self.loop_bound(s.extent, s.loop_var.dtype)
        vars_ = self.captured(s.body, exclude=(s.loop_var,))
        values = [self.var_map[v] for v in vars_]
        closure_t = ir.LiteralStructType([begin.type, extent.type, *[v.type for v in values]])
        closure = self.alloca(closure_t, name="closure", align=8)
        for k, val in enumerate([begin, extent, *values]):
            b.store(val, b.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, k)],
                               inbounds=True, source_etype=closure_t))

        base = f"{self.func_name}_parallel"
        body_fn = self._parallel_body(base, s, ltype, begin.type, vars_, values)
        lam = ir.Function(self.module, _LAMBDA_TYPE, name=self.unique_name(f"{base}_lambda"))
        lam.linkage = "internal"
        lam.attributes.add("nounwind")
        lb = ir.IRBuilder(lam.append_basic_block("entry"))
        task_id, num_task, cdata = lam.args
        task_id.name, num_task.name, cdata.name = "task_id", "num_task", "cdata"
        fields = [lb.load(lb.gep(cdata, [ir.Constant(I32, 0), ir.Constant(I32, k)],
                                 inbounds=True, source_etype=closure_t), typ=t)
                  for k, t in enumerate(closure_t.elements)]
        lo, hi = self._task_range(lb, task_id, num_task, fields[1], ltype)
        lb.ret(lb.call(body_fn, [fields[0], lo, hi, *fields[2:]]))

        slot = b.load(self.slot_parallel_launch, typ=PTR, align=8)
        has_pool = self.new_block("parallel.launch")
        inline = self.new_block("parallel.inline")
        done = self.new_block("parallel.done")
        b.cbranch(b.icmp_unsigned("==", slot, ir.Constant(PTR, None)), inline, has_pool)
        b.position_at_end(has_pool)
        launched = b.call(IndirectCallee(slot, _LAUNCH_TYPE),
                          [lam, closure, ir.Constant(I32, self.num_parallel_tasks)])
        b.branch(done)
        b.position_at_end(inline)
        direct = b.call(lam, [ir.Constant(I32, 0), ir.Constant(I32, 1), closure])
        b.branch(done)
        b.position_at_end(done)
        status = b.phi(I32)
        status.add_incoming(launched, has_pool)
        status.add_incoming(direct, inline)
        self.check_status(status)

    def _task_range(self, b: ir.IRBuilder, task_id: ir.Value, num_task: ir.Value,
                    extent: ir.Value, ltype: Any) -> tuple[ir.Value, ir.Value]:
        t = extent.type
        i32 = dtype_info("int32")
        nt = self.cast_with(b, num_task, i32, ltype)
        tid = self.cast_with(b, task_id, i32, ltype)
        one = ir.Constant(t, 1)
        nt = b.select(b.icmp_signed("<", nt, one), one, nt)
        chunk = b.sdiv(b.sub(b.add(extent, nt), one), nt)
        # nsw: the task's range lies within the loop's, so index arithmetic derived from
        # the loop variable can be widened to 64 bits (address computations fold)
        lo = b.mul(tid, chunk, flags=("nsw",))
        hi = b.add(lo, chunk, flags=("nsw",))
        hi = b.select(b.icmp_signed("<", hi, extent), hi, extent)
        return lo, hi

    def cast_with(self, b: ir.IRBuilder, v: ir.Value, src: Any, dst: Any) -> ir.Value:
        """:meth:`cast` emitted through another builder."""
        saved = self.builder
        self.builder = b
        try:
            return self.cast(v, src, dst)
        finally:
            self.builder = saved

    def _parallel_body(self, base: str, s: tir.For, ltype: Any, index_type: ir.Type,
                       vars_: list[tir.Var], values: list[ir.Value]) -> ir.Function:
        params: list[tuple[tir.Var | None, ir.Type]] = [(None, index_type)] * 3
        params += [(v, val.type) for v, val in zip(vars_, values)]
        fn = self._outlined_function(f"{base}_body", params)
        fn.args[0].name, fn.args[1].name, fn.args[2].name = "begin", "lo", "hi"
        with self.new_function(fn, self.func_name):
            self.in_parallel = True
            for v, arg in zip(vars_, fn.args[3:]):
                self.var_map[v] = arg
            b = self.builder
            begin, lo, hi = fn.args[:3]
            counter = tir.Var(f"{s.loop_var.name}.task", s.loop_var.dtype)

            def body() -> None:
                value = self.builder.add(begin, self.var_map[counter], flags=("nsw",))
                with self.bind_var(s.loop_var, value):
                    self.stmt(s.body)

            self.serial_loop(counter, lo, hi, body)
            if not b.block.is_terminated:
                self.builder.ret(ir.Constant(I32, 0))
        return fn
