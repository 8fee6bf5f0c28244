"""GPU code generation shared by the CUDA, OpenCL and Metal targets.

:class:`GPUPrinter` is the :class:`~.c_like.CLikePrinter` set up for device kernels (native
vector types, no parallel launch, every allocation a fixed-size array); a GPU language
subclasses it and overrides only its spellings (thread indices, address spaces, barriers,
warp shuffles, atomics, half types).

Checks in device code (the index checks of gather/scatter/take, any ``AssertStmt`` of a
kernel) report through an *error record*: a kernel that has checks takes one more
parameter, ``tvm_error_record`` (device memory of :data:`ERROR_RECORD_BYTES`: an int32
check number at offset 0, then up to :data:`ERROR_RECORD_ARGS` int64 message arguments
from offset 8).  The first thread whose check fails claims the record atomically (0 -> its
check's 1-based number), writes the message arguments and returns; a kernel with barriers
does not return (threads that left would never reach the barrier) but goes on, its result
discarded.  The kernel's description lists the checks (``error_record``: message and
argument count each), and the runtime reads the record after the launch and raises the
message (``tvm.runtime.device_module``).

:func:`generate_device_code` turns the output of :func:`tvm.tir.get_gpu_pipeline` (host
functions and ``device_kernel_launch`` kernels) into a :class:`DeviceCode`: the kernels'
source, a description of each kernel (parameters, launch tags) and the host program of each
function (:mod:`.host_program`), which ``tvm.runtime.device_module`` runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.ir.module import IRModule

from ..expr import BufferLoad, Call, IntImm, Let, PrimExpr, Select, Var
from ..functor import snake_name
from ..function import PrimFunc
from ..stmt import Allocate, AssertStmt
from ..stmt_functor import pre_order_visit
from ..transform._gpu import KERNELS_ATTR, LAUNCH_PARAMS_ATTR, THREAD_EXTENT_ATTR
from ..transform.split_host_device import is_device_kernel
from .c_like import CLikePrinter
from .c_like_stmt import negate
from .c_types import CodegenError, DType, dtype_of
from .host_program import host_program

__all__ = ["GPUPrinter", "DeviceCode", "generate_device_code", "kernel_info",
           "split_device_module", "ERROR_RECORD_PARAM", "ERROR_RECORD_BYTES",
           "ERROR_RECORD_ARGS"]

#: the kernel parameter of the error record (see the module docstring)
ERROR_RECORD_PARAM = "tvm_error_record"
#: bytes of an error record: the int32 check number, padding, the int64 arguments
ERROR_RECORD_BYTES = 64
#: message arguments an error record holds
ERROR_RECORD_ARGS = 7


class GPUPrinter(CLikePrinter):
    """Device-kernel printing common to the GPU languages (see the module docstring)."""

    language = "gpu"
    includes = ()
    vector_mode = "native"
    supports_error_reporting = True  # kernels: through the error record
    supports_parallel_launch = False
    outline_compute_scope = False
    max_stack_alloc_bytes = 1 << 62  # kernels have no heap: every array is local
    null_pointer = "0"
    #: warp (SIMD-group) width the printer's shuffles assume; 1: no shuffles
    warp_size = 32
    #: float math functions take vector arguments (OpenCL, Metal)
    vector_math_native = False

    def unroll_pragma(self, extent: Optional[int]) -> Optional[str]:
        return "#pragma unroll" if extent is not None and extent > 0 else None

    def kernel_param_decl(self, var: Var, name: str, index: int, func: PrimFunc) -> str:
        """One parameter of a kernel (pointers get the global address space)."""
        return super().param_decl(var, name, func)

    def param_decl(self, var: Var, name: str, func: PrimFunc) -> str:
        if is_device_kernel(func):
            return self.kernel_param_decl(var, name, list(func.params).index(var), func)
        return super().param_decl(var, name, func)

    # ------------------------------------------------------------------ checks
    def add_function(self, func: PrimFunc, name: Optional[str] = None) -> str:
        kernel = isinstance(func, PrimFunc) and is_device_kernel(func)
        self._checks = [] if kernel else None
        self._return_on_error = kernel and not _has_barrier(func)
        try:
            out = super().add_function(func, name)
            if self._checks:
                self.kernel_checks[out] = self._checks
        finally:
            self._checks = None
        return out

    def _s_assert_stmt(self, s: AssertStmt) -> None:
        if self._checks is None:  # a device helper function has no error record
            self.stmt(s.body)
            return
        fmt, args = self.assert_message(s)
        if len(args) > ERROR_RECORD_ARGS:
            raise CodegenError(f"{self.language} codegen: assert message {s.message!r} has "
                               f"{len(args)} arguments; a device check records at most "
                               f"{ERROR_RECORD_ARGS}")
        self._checks.append({"message": fmt, "nargs": len(args)})
        self.open_block(f"if ({negate(self.expr(s.condition))}) {{")
        self.open_block(f"if ({self.error_claim(ERROR_RECORD_PARAM, len(self._checks))}) {{")
        for k, a in enumerate(args):
            self.emit(self.error_record_store(ERROR_RECORD_PARAM, k, a))
        self.close_block()
        if self._return_on_error:
            self.emit("return;")
        self.close_block()
        self.stmt(s.body)

    def error_claim(self, record: str, number: int) -> str:
        """A condition that atomically sets ``record[0]`` from 0 to ``number`` and is true
        for the thread that did (may emit statements before it)."""
        return f"atomicCAS({record}, 0, {number}) == 0"

    def error_record_store(self, record: str, k: int, arg: Any) -> str:
        """The statement writing message argument ``k`` (expression ``arg``) as an int64 at
        byte offset ``8 + 8 * k`` of the error record."""
        wide = self.type_name(dtype_of("int64"))
        ptr = f"(({self.address_space_qualifier('global')}{wide}*)({record} + 2))"
        return f"{ptr}[{k}] = ({wide})({self.expr(arg)});"

    def error_param_decl(self, index: int) -> str:
        """The error record parameter, the kernel's parameter number ``index``."""
        return f"{self.address_space_qualifier('global')}int* {ERROR_RECORD_PARAM}"

    def function_header(self, func: PrimFunc, name: str, params: list[str]) -> str:
        if is_device_kernel(func):
            if self._checks:
                params = [*params, self.error_param_decl(len(params))]
            return self.kernel_header(func, name, params)
        return f"{self.helper_qualifier} " + super().function_header(func, name, params)

    def kernel_header(self, func: PrimFunc, name: str, params: list[str]) -> str:
        """``__global__ void name(params)`` in the language's spelling."""
        return f"{self.kernel_qualifier}void {name}({', '.join(params) or 'void'})"

    def _s_allocate(self, s: Allocate) -> None:
        for e in s.extents:
            if not isinstance(e, IntImm):
                raise CodegenError(
                    f"{self.language} codegen: {s.buffer_var.name!r} ({s.scope}) has the "
                    f"symbolic size {tuple(s.extents)}; memory allocated in a kernel needs a "
                    "constant size"
                )
        super()._s_allocate(s)

    def intrin_tvm_thread_allreduce(self, e: Any, lane: Any) -> str:
        raise CodegenError(f"{self.language} codegen: tvm_thread_allreduce must be lowered "
                           "first (tir.transform.LowerThreadAllreduce)")

    def intrin_tvm_call_packed(self, e: Any, lane: Any) -> str:
        raise CodegenError(f"{self.language} codegen: a kernel launch ({e.args[0]}) inside "
                           "device code; kernels are launched by the host program")

    # ------------------------------------------------------------------ vector loads
    def _vector_expr(self, e: Any) -> str:
        handler = getattr(self, f"_v_{snake_name(type(e))}", None)
        if handler is not None:
            out = handler(e)
            if out is not None:
                return out
        # printed lane by lane: load each contiguous vector once, as one wide access
        added: list[int] = []
        for load in _unconditional_vector_loads(e):
            if id(load) in self._vector_loads:
                continue
            same = next((name for name, other in self._vector_loads.values()
                         if structural_equal(other, load)), None)
            if same is None:
                text = self._v_buffer_load(load)
                if text is None:
                    continue
                same = self.declare_name("vload")
                self.emit(self.declaration(self.type_name(dtype_of(load.dtype)), same, text))
            self._vector_loads[id(load)] = (same, load)
            added.append(id(load))
        try:
            d = dtype_of(e.dtype)
            return self.make_vector(d, [self.lane(e, i) for i in range(d.lanes)])
        finally:
            for key in added:  # the names live in this statement's C scope only
                del self._vector_loads[key]

    def _v_call(self, e: Call) -> Optional[str]:
        name = getattr(e.op, "name", "")[4:]
        d = dtype_of(e.dtype)
        if (not self.vector_math_native or name not in _VECTOR_MATH or d.element.text != "float32"
                or any(dtype_of(a.dtype).lanes != d.lanes for a in e.args)):
            return None
        args = ", ".join(self.expr(a) for a in e.args)
        return f"{self.math_function(name, d.element)}({args})"

    def _p_buffer_load(self, e: Any, lane: Any) -> str:
        hoisted = self._vector_loads.get(id(e))
        if hoisted is not None and hoisted[1] is e and lane is not None:
            return self.vector_lane(hoisted[0], dtype_of(e.dtype), lane)
        return super()._p_buffer_load(e, lane)

    def uses_dtype(self, d: DType) -> bool:
        """Whether a type of the element kind of ``d`` was printed (for extension pragmas)."""
        return d.element.text in self._printed_types

    def type_name(self, d: Any) -> str:
        d = dtype_of(d) if isinstance(d, str) else d
        if not d.is_void:
            self._printed_types.add(d.element.text)
        return super().type_name(d)

    def __init__(self, target: str = "") -> None:
        self._printed_types: set[str] = set()
        self._vector_loads: dict[int, tuple[str, Any]] = {}
        #: the checks of each kernel printed so far that has any (its error record's table)
        self.kernel_checks: dict[str, list[dict[str, Any]]] = {}
        self._checks: Optional[list[dict[str, Any]]] = None
        self._return_on_error = False
        super().__init__(target)
        self.global_names.reserve(ERROR_RECORD_PARAM)


def _has_barrier(func: PrimFunc) -> bool:
    found = []

    def visit(node: Any) -> bool:
        if isinstance(node, Call) and getattr(node.op, "name", "") == "tir.tvm_storage_sync":
            found.append(node)
        return not found

    pre_order_visit(func.body, visit)
    return bool(found)


#: float math the vector-math languages apply lane-wise to vector arguments
_VECTOR_MATH = frozenset("""exp exp2 log log2 log10 log1p sqrt sin cos tan sinh cosh tanh asin
acos atan erf floor ceil trunc fabs pow fmod atan2 expm1""".split())


def _unconditional_vector_loads(e: Any) -> list[BufferLoad]:
    """Vector BufferLoads of ``e`` evaluated whatever the lane (not under a select, a
    conditional call or a let), outermost first."""
    out: list[BufferLoad] = []

    def walk(x: Any) -> None:
        if isinstance(x, BufferLoad):
            if dtype_of(x.dtype).lanes > 1:
                out.append(x)
            return
        if isinstance(x, (Select, Let)):
            return
        if isinstance(x, Call):
            if getattr(x.op, "name", "") in ("tir.if_then_else", "tir.likely"):
                return
            for a in x.args:
                walk(a)
            return
        for name in ("a", "b", "value"):
            child = getattr(x, name, None)
            if isinstance(child, PrimExpr):
                walk(child)

    walk(e)
    return out


def kernel_info(func: PrimFunc, name: Optional[str] = None) -> dict[str, Any]:
    """What the runtime needs to launch a kernel: parameter kinds/dtypes and launch tags."""
    from .c_like import pointer_element_types

    elems, _ = pointer_element_types(func)
    params = []
    for p in func.params:
        if dtype_of(p.dtype).is_handle:
            elem = elems.get(p)
            params.append({"name": p.name, "kind": "handle",
                           "dtype": elem.text if elem is not None else "void"})
        else:
            params.append({"name": p.name, "kind": "scalar", "dtype": p.dtype})
    extents = []
    for tag, ext in func.attrs.get(THREAD_EXTENT_ATTR, []):
        extents.append([tag, ext if isinstance(ext, int) else None])
    return {"name": name or func.attrs["global_symbol"], "params": params,
            "launch_params": list(func.attrs.get(LAUNCH_PARAMS_ATTR, [])),
            "thread_extent": extents}


@dataclass
class DeviceCode:
    """Generated device code: ``source`` (or a binary made from it by the target),
    ``kernels`` (:func:`kernel_info` dicts) and host ``functions`` (host programs)."""

    target: str
    source: str
    kernels: list[dict[str, Any]] = field(default_factory=list)
    functions: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "source": self.source, "kernels": self.kernels,
                "functions": self.functions}

    def __str__(self) -> str:
        return json.dumps(self.to_json(), indent=1)


def split_device_module(mod: Any) -> tuple[list[tuple[str, PrimFunc]], list[tuple[str, PrimFunc]]]:
    """``(host functions, kernels)`` of a module (a PrimFunc counts as a host function)."""
    if isinstance(mod, PrimFunc):
        return [(mod.attrs.get("global_symbol") or "main", mod)], []
    if not isinstance(mod, IRModule):
        raise TypeError(f"expected an IRModule or a PrimFunc, got {type(mod).__name__}")
    hosts, kernels = [], []
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc):
            raise TypeError(f"function {gv.name_hint!r} is a {type(func).__name__}; only TIR "
                            "PrimFuncs compile for a GPU target")
        name = func.attrs.get("global_symbol") or gv.name_hint
        (kernels if is_device_kernel(func) else hosts).append((name, func))
    return hosts, kernels


def _needs_pipeline(hosts: list, kernels: list) -> bool:
    return not kernels and any(not f.attrs.get(KERNELS_ATTR) for _, f in hosts)


def generate_device_code(mod: Any, printer: GPUPrinter, target: Any = None) -> DeviceCode:
    """Print the kernels of ``mod`` with ``printer`` and describe its host functions.

    A module that has not been through :func:`tvm.tir.get_gpu_pipeline` (no kernels yet) is
    scheduled by the default GPU rules (functions not marked ``tir.is_scheduled``) and lowered
    with it first, under ``target``.
    """
    hosts, kernels = split_device_module(mod)
    if _needs_pipeline(hosts, kernels):
        from tvm.ir.target import Target

        from ..build import _as_module, get_gpu_pipeline

        from ..schedule.gpu_rules import apply_default_gpu_schedule

        module = mod if isinstance(mod, IRModule) else _as_module(mod, None)
        tgt = target if isinstance(target, Target) else Target(target or printer.target)
        module = apply_default_gpu_schedule(module, tgt)
        with tgt:
            module = get_gpu_pipeline(tgt)(module)
        hosts, kernels = split_device_module(module)
    infos: dict[str, dict[str, Any]] = {}
    for name, func in kernels:
        printer.add_function(func, name)
        infos[name] = kernel_info(func, name)
        if name in printer.kernel_checks:
            infos[name]["error_record"] = printer.kernel_checks[name]
    programs = [host_program(func, infos, name) for name, func in hosts]
    return DeviceCode(str(target) if target is not None else printer.target, printer.finish(),
                      list(infos.values()), programs)
