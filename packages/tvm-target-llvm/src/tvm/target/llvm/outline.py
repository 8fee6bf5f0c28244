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

How the lambda is launched depends on the target's ``-threading``:

``pool``: through the runtime slot (the runtime's thread pool)::

    status = slot ? slot(lambda, &closure, num_task) : lambda(0, 1, &closure);

``omp``: natively through libgomp, with the thread count the runtime keeps in the
``__TVMBackendNumThreads`` slot (``set_num_threads``/``TVM_NUM_THREADS``; NULL: libgomp's
default).  The closure also carries the launch's shared record
(:data:`~.packed.TASK_SHARED_TYPE`)::

    shared = {&closure, num_task, 0, 0, ""};
    n = slot ? *slot : 0;  if (num_task) n = min(n, num_task);
    if (omp_get_level() > 0 || n == 1) status = lambda(0, 1, &closure);   // nested: serial
    else { GOMP_parallel(lambda_omp, &shared, n, 0); status = shared.status; }
    if (status && shared.message[0]) __TVMAPISetLastError(shared.message);

    void lambda_omp(void* shared) {   // every thread of the team
        nt = shared->num_task ? shared->num_task : omp_get_num_threads();
        while ((t = atomic_fetch_add(shared->next_task, 1)) < nt && !atomic_load(shared->status))
            if ((rc = lambda(t, nt, shared->cdata))) { cmpxchg(shared->status, 0, rc); break; }
    }

Tasks go to whichever thread asks first (as in the runtime pool): a team thread that the OS
schedules late finds its task already done by the others instead of holding up the launch.

An error raised inside the body (an assertion) goes to ``shared.message`` (the first failing
task claims ``status``), so the launching thread reports it: the runtime's last error is
per thread and the team's threads are not the caller.

Parallel loops nested in a parallel loop run serially inside the task.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from tvm import tir
from tvm.tir.functor import StmtExprVisitor

from .dtypes import I8, I32, PTR, VOID, dtype_info
from .packed import (
    SHARED_CDATA,
    SHARED_MESSAGE,
    SHARED_NEXT,
    SHARED_NUM_TASK,
    SHARED_STATUS,
    TASK_SHARED_TYPE,
    IndirectCallee,
)

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
_ZERO = ir.Constant(I32, 0)


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
        omp = self.threading == "omp"
        ltype = dtype_info(s.loop_var.dtype)
        begin = self.loop_bound(s.min, s.loop_var.dtype)
        extent = self.loop_bound(s.extent, s.loop_var.dtype)
        vars_ = self.captured(s.body, exclude=(s.loop_var,))
        values = [self.var_map[v] for v in vars_]
        shared = self.alloca(TASK_SHARED_TYPE, name="shared", align=8) if omp else None
        fields_in = [begin, extent, *values, *([shared] if omp else [])]
        closure_t = ir.LiteralStructType([v.type for v in fields_in])
        closure = self.alloca(closure_t, name="closure", align=8)
        for k, val in enumerate(fields_in):
            b.store(val, b.gep(closure, [_ZERO, ir.Constant(I32, k)],
                               inbounds=True, source_etype=closure_t))

        base = f"{self.func_name}_parallel"
        body_fn = self._parallel_body(base, s, ltype, begin.type, vars_, values, omp)
        lam = ir.Function(self.module, _LAMBDA_TYPE, name=self.unique_name(f"{base}_lambda"))
        lam.linkage = "internal"
        lam.attributes.add("nounwind")
        lb = ir.IRBuilder(lam.append_basic_block("entry"))
        task_id, num_task, cdata = lam.args
        task_id.name, num_task.name, cdata.name = "task_id", "num_task", "cdata"
        fields = [lb.load(lb.gep(cdata, [_ZERO, ir.Constant(I32, k)],
                                 inbounds=True, source_etype=closure_t), typ=t)
                  for k, t in enumerate(closure_t.elements)]
        lo, hi = self._task_range(lb, task_id, num_task, fields[1], ltype)
        lb.ret(lb.call(body_fn, [fields[0], lo, hi, *fields[2:]]))
        if omp:
            self._launch_omp(lam, closure, shared)
        else:
            self._launch_pool(lam, closure)

    def _launch_pool(self, lam: ir.Function, closure: ir.Value) -> None:
        b = self.builder
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
        direct = b.call(lam, [_ZERO, ir.Constant(I32, 1), closure])
        b.branch(done)
        b.position_at_end(done)
        status = b.phi(I32)
        status.add_incoming(launched, has_pool)
        status.add_incoming(direct, inline)
        self.check_status(status)

    def _launch_omp(self, lam: ir.Function, closure: ir.Value, shared: ir.Value) -> None:
        b = self.builder
        tasks = ir.Constant(I32, self.num_parallel_tasks)
        message = self.shared_field(b, shared, SHARED_MESSAGE)
        b.store(closure, self.shared_field(b, shared, SHARED_CDATA))
        b.store(tasks, self.shared_field(b, shared, SHARED_NUM_TASK))
        b.store(_ZERO, self.shared_field(b, shared, SHARED_STATUS))
        b.store(_ZERO, self.shared_field(b, shared, SHARED_NEXT))
        b.store(ir.Constant(I8, 0), message)
        level = b.call(self.declare("omp_get_level", I32, []), [])
        slot = b.load(self.slot_num_threads, typ=PTR, align=8)
        read = self.new_block("parallel.nthreads")
        choose = self.new_block("parallel.choose")
        before = b.block
        b.cbranch(b.icmp_unsigned("==", slot, ir.Constant(PTR, None)), choose, read)
        b.position_at_end(read)
        n_read = b.load(slot, typ=I32, align=4)
        b.branch(choose)
        b.position_at_end(choose)
        n = b.phi(I32, name="nthreads")
        n.add_incoming(_ZERO, before)
        n.add_incoming(n_read, read)
        if self.num_parallel_tasks > 0:
            n = b.select(b.icmp_unsigned(">", n, tasks), tasks, n)
        serial = b.or_(b.icmp_signed(">", level, _ZERO), b.icmp_signed("==", n, ir.Constant(I32, 1)))
        launch = self.new_block("parallel.launch")
        inline = self.new_block("parallel.inline")
        done = self.new_block("parallel.done")
        b.cbranch(serial, inline, launch)
        b.position_at_end(launch)
        gomp = self.declare("GOMP_parallel", VOID, [PTR, PTR, I32, I32])
        b.call(gomp, [self._omp_task_fn(lam), shared, n, _ZERO])
        launched = b.load(self.shared_field(b, shared, SHARED_STATUS), typ=I32, align=4)
        b.branch(done)
        b.position_at_end(inline)
        direct = b.call(lam, [_ZERO, ir.Constant(I32, 1), closure])
        b.branch(done)
        b.position_at_end(done)
        status = b.phi(I32)
        status.add_incoming(launched, launch)
        status.add_incoming(direct, inline)
        failed = self.new_block("parallel.failed")
        report = self.new_block("parallel.report")
        fail = self.new_block("status.fail")
        ok = self.new_block("status.ok")
        b.cbranch(b.icmp_signed("!=", status, _ZERO), failed, ok)
        b.position_at_end(failed)
        has_message = b.icmp_unsigned("!=", b.load(message, typ=I8), ir.Constant(I8, 0))
        b.cbranch(has_message, report, fail)
        b.position_at_end(report)
        b.call(self._report_error_fn(), [message])
        b.branch(fail)
        b.position_at_end(fail)
        b.ret(status)
        b.position_at_end(ok)

    def _omp_task_fn(self, lam: ir.Function) -> ir.Function:
        """``void <lambda>_omp(void* shared)``: the tasks of one team thread (see above)."""
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR]),
                         name=self.unique_name(f"{lam.name}_omp"))
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        shared = fn.args[0]
        shared.name = "shared"
        entry = fn.append_basic_block("entry")
        head = fn.append_basic_block("task.head")
        check = fn.append_basic_block("task.check")
        run = fn.append_basic_block("task.run")
        fail = fn.append_basic_block("task.fail")
        exit_ = fn.append_basic_block("exit")
        b = ir.IRBuilder(entry)
        nthr = b.call(self.declare("omp_get_num_threads", I32, []), [])
        nt = b.load(self.shared_field(b, shared, SHARED_NUM_TASK), typ=I32, align=4)
        nt = b.select(b.icmp_signed(">", nt, _ZERO), nt, nthr)
        cdata = b.load(self.shared_field(b, shared, SHARED_CDATA), typ=PTR, align=8)
        status_ptr = self.shared_field(b, shared, SHARED_STATUS)
        next_ptr = self.shared_field(b, shared, SHARED_NEXT)
        b.branch(head)
        b.position_at_end(head)
        t = b.atomic_rmw("add", next_ptr, ir.Constant(I32, 1), "monotonic")
        b.cbranch(b.icmp_signed("<", t, nt), check, exit_)
        b.position_at_end(check)
        # another task failed: skip the rest (as the runtime pool does)
        st = b.load_atomic(status_ptr, "monotonic", 4, typ=I32)
        b.cbranch(b.icmp_signed("!=", st, _ZERO), exit_, run)
        b.position_at_end(run)
        rc = b.call(lam, [t, nt, cdata])
        b.cbranch(b.icmp_signed("!=", rc, _ZERO), fail, head)
        b.position_at_end(fail)
        b.cmpxchg(status_ptr, _ZERO, rc, "seq_cst")
        b.branch(exit_)
        b.position_at_end(exit_)
        b.ret_void()
        return fn

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
                       vars_: list[tir.Var], values: list[ir.Value], omp: bool) -> ir.Function:
        params: list[tuple[tir.Var | None, ir.Type]] = [(None, index_type)] * 3
        params += [(v, val.type) for v, val in zip(vars_, values)]
        if omp:
            params.append((None, PTR))  # the launch's shared record: errors go there
        fn = self._outlined_function(f"{base}_body", params)
        fn.args[0].name, fn.args[1].name, fn.args[2].name = "begin", "lo", "hi"
        with self.new_function(fn, self.func_name):
            self.in_parallel = True
            if omp:
                fn.args[-1].name = "shared"
                self.task_error = fn.args[-1]
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
