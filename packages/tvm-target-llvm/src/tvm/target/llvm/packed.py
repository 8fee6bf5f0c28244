"""The packed-API side of code generation (mixed into :class:`CodeGenLLVM`).

* the runtime slot globals of ``docs/abi.md`` (``__TVMAPISetLastError``,
  ``__TVMBackendParallelLaunch``, ``__TVMBackendNumThreads`` when parallel loops launch
  through libgomp): pointer-sized globals initialised to NULL that the runtime fills after
  loading; a kernel checks for NULL before using them;
* ``tir.tvm_struct_get`` / ``tir.tvm_struct_set`` on ``DLTensor`` arrays and ``TVMValue``
  arrays (field offsets of the 64-bit DLPack layout);
* error reporting: format the message (``snprintf`` when it has arguments), pass it to the
  runtime, return -1; and propagating a non-zero status from a called function.  Inside the
  body of a libgomp-launched parallel loop the message goes to the launch's shared record
  instead (the first failing task wins), and the launching thread reports it after the
  join, so the message reaches the thread that called the kernel.
"""

from __future__ import annotations

from llvmlite import ir
from tvm import tir
from tvm.tir.transform.make_packed_api import StructFieldKind as K

from .dtypes import I8, I16, I32, I64, PTR, VOID, DType, dtype_info

__all__ = ["PackedCodegen", "IndirectCallee", "SLOT_SET_LAST_ERROR", "SLOT_PARALLEL_LAUNCH",
           "SLOT_NUM_THREADS", "DLTENSOR_SIZE", "TASK_SHARED_TYPE"]

SLOT_SET_LAST_ERROR = "__TVMAPISetLastError"
SLOT_PARALLEL_LAUNCH = "__TVMBackendParallelLaunch"
SLOT_NUM_THREADS = "__TVMBackendNumThreads"
ERROR_HELPER = "__tvm_report_error"
TASK_ERROR_HELPER = "__tvm_task_error"
MESSAGE_BUFFER = 1024

#: The record one libgomp launch shares between its threads: ``{void* cdata;
#: int32_t num_task; int32_t status; int32_t next_task; char message[MESSAGE_BUFFER];}``
TASK_SHARED_TYPE = ir.LiteralStructType([PTR, I32, I32, I32, ir.ArrayType(I8, MESSAGE_BUFFER)])
SHARED_CDATA, SHARED_NUM_TASK, SHARED_STATUS, SHARED_NEXT, SHARED_MESSAGE = range(5)

DLTENSOR_SIZE = 48
# kind -> (byte offset in DLTensor, C type, signed)
_DLTENSOR_FIELDS: dict[int, tuple[int, ir.Type, bool]] = {
    K.ARR_DATA: (0, PTR, False),
    K.ARR_DEVICE_TYPE: (8, I32, True),
    K.ARR_DEVICE_ID: (12, I32, True),
    K.ARR_NDIM: (16, I32, True),
    K.ARR_TYPE_CODE: (20, I8, False),
    K.ARR_TYPE_BITS: (21, I8, False),
    K.ARR_TYPE_LANES: (22, I16, False),
    K.ARR_SHAPE: (24, PTR, False),
    K.ARR_STRIDES: (32, PTR, False),
    K.ARR_BYTE_OFFSET: (40, I64, False),
}


class IndirectCallee:
    """A function pointer value with its function type, for ``IRBuilder.call`` (llvmlite
    needs the callee's type, which an opaque pointer does not carry)."""

    def __init__(self, value: ir.Value, fnty: ir.FunctionType) -> None:
        self.value = value
        self.function_type = fnty
        self.type = value.type

    def get_reference(self) -> str:
        return self.value.get_reference()

    def __str__(self) -> str:
        return str(self.value)


class PackedCodegen:
    """Runtime slots, struct access and error paths."""

    module: ir.Module
    builder: ir.IRBuilder
    define_slots: bool

    def _init_slots(self) -> None:
        self.slot_set_last_error = self._slot(SLOT_SET_LAST_ERROR)
        self.slot_parallel_launch = self._slot(SLOT_PARALLEL_LAUNCH)
        self._slot_num_threads: ir.GlobalVariable | None = None
        self._error_helper: ir.Function | None = None
        self._task_error_helper: ir.Function | None = None

    @property
    def slot_num_threads(self) -> ir.GlobalVariable:
        """``const int32_t* __TVMBackendNumThreads`` (created on first use)."""
        if self._slot_num_threads is None:
            self._slot_num_threads = self._slot(SLOT_NUM_THREADS)
        return self._slot_num_threads

    def shared_field(self, b: ir.IRBuilder, shared: ir.Value, k: int) -> ir.Value:
        """Address of field ``k`` of a :data:`TASK_SHARED_TYPE` record."""
        return b.gep(shared, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                     source_etype=TASK_SHARED_TYPE)

    def _task_error_fn(self) -> ir.Function:
        """``internal void __tvm_task_error(shared*, const char*)``: the first failing task
        of a launch claims ``status`` (0 -> -1) and copies its message into the record."""
        if self._task_error_helper is None:
            fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR, PTR]),
                             name=TASK_ERROR_HELPER)
            fn.linkage = "internal"
            fn.attributes.add("noinline")
            fn.attributes.add("cold")
            shared, msg = fn.args
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            claim = b.cmpxchg(self.shared_field(b, shared, SHARED_STATUS), ir.Constant(I32, 0),
                              ir.Constant(I32, -1), "seq_cst")
            copy = fn.append_basic_block("copy")
            done = fn.append_basic_block("done")
            b.cbranch(b.extract_value(claim, 1), copy, done)
            b.position_at_end(copy)
            strncpy = self.declare("strncpy", PTR, [PTR, PTR, I64])
            dst = self.shared_field(b, shared, SHARED_MESSAGE)
            b.call(strncpy, [dst, msg, ir.Constant(I64, MESSAGE_BUFFER - 1)])
            last = b.gep(dst, [ir.Constant(I64, MESSAGE_BUFFER - 1)], inbounds=True,
                         source_etype=I8)
            b.store(ir.Constant(I8, 0), last)
            b.branch(done)
            b.position_at_end(done)
            b.ret_void()
            self._task_error_helper = fn
        return self._task_error_helper

    def _slot(self, name: str) -> ir.GlobalVariable:
        """The slot global ``name``: defined (NULL until the runtime fills it), or only
        declared in a part of a module whose header part defines it."""
        g = ir.GlobalVariable(self.module, PTR, name)
        if self.define_slots:
            g.initializer = ir.Constant(PTR, None)
        g.align = 8
        if self.protected_slots:
            g.storage_class = "protected"
        return g

    # ------------------------------------------------------------------ errors
    def _report_error_fn(self) -> ir.Function:
        """``internal void __tvm_report_error(const char*)``: call the slot if it is set."""
        if self._error_helper is None:
            fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR]), name=ERROR_HELPER)
            fn.linkage = "internal"
            fn.attributes.add("noinline")
            fn.attributes.add("cold")
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            target = b.load(self.slot_set_last_error, typ=PTR, align=8)
            call_bb = fn.append_basic_block("call")
            done = fn.append_basic_block("done")
            b.cbranch(b.icmp_unsigned("==", target, ir.Constant(PTR, None)), done, call_bb)
            b.position_at_end(call_bb)
            b.call(IndirectCallee(target, ir.FunctionType(VOID, [PTR])), [fn.args[0]])
            b.branch(done)
            b.position_at_end(done)
            b.ret_void()
            self._error_helper = fn
        return self._error_helper

    def emit_error(self, message: str, args: list[ir.Value], dtypes: list[DType]) -> None:
        """At the current (failure) block: report ``message`` and ``ret i32 -1``.

        With ``args`` the message is a printf format and every argument is passed as int64
        (floats as double).
        """
        b = self.builder
        if args:
            buf = self._message_buffer()
            snprintf = self.declare("snprintf", I32, [PTR, I64, PTR], var_arg=True)
            vals = []
            for v, d in zip(args, dtypes):
                if d.is_float:
                    vals.append(self.cast(v, d, dtype_info("float64")))
                elif d.is_handle:
                    vals.append(v)
                else:
                    vals.append(self.cast(v, d, dtype_info("int64")))
            b.call(snprintf, [buf, ir.Constant(I64, MESSAGE_BUFFER),
                              self.global_string(message), *vals])
            msg: ir.Value = buf
        else:
            msg = self.global_string(message)
        if self.task_error is not None:
            b.call(self._task_error_fn(), [self.task_error, msg])
        else:
            b.call(self._report_error_fn(), [msg])
        b.ret(ir.Constant(I32, -1))

    def _message_buffer(self) -> ir.Value:
        """The function's one buffer for formatted messages, a slot of its entry block
        (every failure block of a function writes its message there and returns)."""
        found = self._msg_buffer
        if found is None or found[0] is not self.function:
            found = (self.function, self.alloca(ir.ArrayType(I8, MESSAGE_BUFFER), name="msg"))
            self._msg_buffer = found
        return found[1]

    def check_status(self, status: ir.Value) -> None:
        """Return ``status`` from the current function when it is non-zero."""
        b = self.builder
        fail = self.new_block("status.fail")
        ok = self.new_block("status.ok")
        b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), fail, ok)
        b.position_at_end(fail)
        b.ret(status)
        b.position_at_end(ok)

    # ------------------------------------------------------------------ struct access
    def _struct_field(self, call: tir.Call) -> tuple[ir.Value, ir.Type, bool]:
        ptr_e, index_e, kind_e = call.args[:3]
        if not isinstance(kind_e, tir.IntImm):
            raise ValueError("llvm codegen: tvm_struct_get/set needs a constant field kind")
        kind = K(kind_e.value)
        b = self.builder
        base = self.expr(ptr_e)
        index = self.cast(self.expr(index_e), dtype_info(index_e.dtype), dtype_info("int64"))
        if kind == K.TVM_VALUE_CONTENT:
            d = dtype_info(call.dtype if call.op.name.endswith("get") else call.args[3].dtype)
            ctype: ir.Type = PTR if d.is_handle else (ir.DoubleType() if d.is_float else I64)
            addr = b.gep(base, [index], inbounds=True, source_etype=I64)
            return addr, ctype, not d.is_float
        if kind == K.ARR_ADDR:
            offset = b.mul(index, ir.Constant(I64, DLTENSOR_SIZE))
            return b.gep(base, [offset], inbounds=True, source_etype=I8), PTR, False
        field_offset, ctype, signed = _DLTENSOR_FIELDS[kind]
        offset = b.add(b.mul(index, ir.Constant(I64, DLTENSOR_SIZE)),
                       ir.Constant(I64, field_offset))
        return b.gep(base, [offset], inbounds=True, source_etype=I8), ctype, signed

    def _convert_field(self, v: ir.Value, ctype: ir.Type, signed: bool, to: DType) -> ir.Value:
        if ctype == PTR or isinstance(ctype, ir.DoubleType):
            src = dtype_info("handle" if ctype == PTR else "float64")
        else:
            src = dtype_info(f"{'int' if signed else 'uint'}{ctype.width}")
        return self.cast(v, src, to)

    def _i_tvm_struct_get(self, call: tir.Call) -> ir.Value:
        ptr, ctype, signed = self._struct_field(call)
        if call.args[2].value == K.ARR_ADDR:
            return ptr
        align = 8 if ctype in (PTR, I64) or isinstance(ctype, ir.DoubleType) else ctype.width // 8
        v = self.builder.load(ptr, typ=ctype, align=align)
        return self._convert_field(v, ctype, signed, dtype_info(call.dtype))

    def _i_tvm_struct_set(self, call: tir.Call) -> ir.Value:
        ptr, ctype, signed = self._struct_field(call)
        value_e = call.args[3]
        v = self.expr(value_e)
        if ctype == PTR or isinstance(ctype, ir.DoubleType):
            dst = dtype_info("handle" if ctype == PTR else "float64")
        else:
            dst = dtype_info(f"{'int' if signed else 'uint'}{ctype.width}")
        v = self.cast(v, dtype_info(value_e.dtype), dst)
        self.builder.store(v, ptr)
        return ir.Constant(I32, 0)
