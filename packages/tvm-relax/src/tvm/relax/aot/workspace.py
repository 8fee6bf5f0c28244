"""LiftKernelWorkspace: a kernel's large scratch buffers become arguments the caller plans.

A PrimFunc's root block may allocate intermediate buffers (``lv = T.alloc_buffer(...)``, a
packed copy of a weight, a cache).  Code generation puts small ones on the stack and takes
big ones (over :data:`STACK_BYTES`) from ``aligned_alloc`` at every call, which an AOT
program with a static memory plan must not do.  This pass, run after CallTIRRewrite and
before StaticPlanBlockMemory, turns each such buffer of a constant shape into one more
parameter of the PrimFunc (after its outputs) and has every caller allocate it right before
the call::

    _ = fused_matmul_add(x, w, b, out)
    # becomes
    ws = R.builtin.alloc_tensor(R.shape([128, 512]), R.dtype("float32"), R.prim_value(0))
    _ = fused_matmul_add(x, w, b, out, ws)

so the memory planner gives the scratch a place in the static workspace (shared with other
tensors, as it dies after the call).  The kernel checks the new argument like any other.
A kernel with scalar (``tir_vars``) parameters, or whose large buffers are not in its root
block, is left alone.
"""

from __future__ import annotations

from typing import Any, Optional

from tvm.ffi.dtype import storage_bytes
from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.transform import module_pass
from tvm.tir import expr as tir
from tvm.tir.function import PrimFunc
from tvm.tir.stmt import BlockRealize

from ..expr import Call, ShapeExpr, VarBinding
from ..expr_functor import ExprMutator
from ..op.builtin import alloc_tensor
from ..struct_info import ObjectStructInfo
from ..transform._graph_utils import map_relax_functions

__all__ = ["LiftKernelWorkspace", "STACK_BYTES"]

#: buffers up to this size stay in the kernel (the llvm target puts them on the stack)
STACK_BYTES = 16 * 1024


def _const_shape(buf: Any) -> Optional[list[int]]:
    dims = []
    for d in buf.shape:
        if not isinstance(d, tir.IntImm):
            return None
        dims.append(int(d.value))
    return dims


def _lift(func: PrimFunc) -> Optional[tuple[PrimFunc, list[tuple[list[int], str]]]]:
    """``func`` with its large root-block buffers as trailing parameters, and their
    (shape, dtype); None when there is nothing to lift."""
    body = func.body
    if not isinstance(body, BlockRealize) or any(p.dtype != "handle" for p in func.params):
        return None
    root = body.block
    keep, lifted = [], []
    for buf in root.alloc_buffers:
        shape = _const_shape(buf)
        nbytes = None
        if shape is not None and buf.scope == "global" and not buf.strides:
            nbytes = storage_bytes(buf.dtype)
            for d in shape:
                nbytes *= d
        if nbytes is not None and nbytes > STACK_BYTES:
            lifted.append((buf, shape))
        else:
            keep.append(buf)
    if not lifted:
        return None
    params = list(func.params)
    buffer_map = dict(func.buffer_map)
    for buf, _ in lifted:
        handle = tir.Var(f"var_{buf.name}", "handle")
        params.append(handle)
        buffer_map[handle] = buf
    new_root = root.with_fields(alloc_buffers=tuple(keep))
    new = func.with_fields(params=tuple(params), buffer_map=buffer_map,
                           body=body.with_fields(block=new_root))
    return new, [(shape, buf.dtype) for buf, shape in lifted]


class _Caller(ExprMutator):
    def __init__(self, mod: IRModule, lifted: dict[GlobalVar, list[tuple[list[int], str]]]):
        super().__init__(mod)
        self.lifted = lifted

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        scratch = self.lifted.get(value.op) if isinstance(value, Call) and isinstance(
            value.op, GlobalVar) else None
        if scratch is None:
            super().visit_var_binding_(binding)
            return
        call = self.visit_expr(value)
        bb = self.builder_
        extra = [bb.emit(alloc_tensor(ShapeExpr(shape), dtype, 0), "workspace")
                 for shape, dtype in scratch]
        invoke = Call(call.op, [*call.args, *extra], span=call.span)
        object.__setattr__(invoke, "struct_info_", ObjectStructInfo())
        var = self.visit_var_def(binding.var)
        if var is not binding.var:
            self.var_remap[binding.var] = var
        bb.emit_normalized(VarBinding(var, invoke, span=binding.span))


def _run(mod: IRModule, ctx: Any) -> IRModule:
    lifted: dict[GlobalVar, list[tuple[list[int], str]]] = {}
    updates = {}
    for gv, func in mod.items():
        if isinstance(func, PrimFunc):
            found = _lift(func)
            if found is not None:
                updates[gv] = found[0]
                lifted[gv] = found[1]
    if not lifted:
        return mod
    mod = mod.with_functions(updates)
    caller = _Caller(mod, lifted)
    return map_relax_functions(mod, lambda func, gv: caller.visit_expr(func))


def LiftKernelWorkspace() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass (see the module docstring): after CallTIRRewrite, before memory planning."""
    return module_pass(opt_level=0, name="relax.aot.LiftKernelWorkspace")(_run)
