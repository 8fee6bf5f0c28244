"""VMBuiltinLower: lower the remaining builtin operators to what the VM executes.

* ``relax.builtin.alloc_tensor(shape, dtype, dev)`` -> ``relax.memory.alloc_storage`` of
  ``prod(shape) * bytes(dtype)`` bytes (symbolic sizes stay expressions) followed by
  ``relax.memory.alloc_tensor`` at offset 0;
* ``relax.shape_of(x)`` -> ``vm.builtin.shape_of``; ``relax.null_value()`` ->
  ``vm.builtin.null_value``; ``relax.call_pure_packed(f, *args)`` -> ``f(*args)``;
* ``relax.memory.*`` stay (the code generator reads them).

Any other operator left at this point has no lowering: the pass fails naming it and
the function (run LegalizeOps; ``relax.build`` does), and so does a ``call_tir`` that
CallTIRRewrite did not rewrite.
"""

from __future__ import annotations

from typing import Any

from tvm.ffi.dtype import storage_bytes
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import PassContext, module_pass
from tvm.tir.expr import IntImm

from ..errors import RelaxError
from ..expr import Call, DataTypeImm, ExternFunc, PrimValue, ShapeExpr, StringImm
from ..expr_functor import ExprMutator
from ..struct_info import ObjectStructInfo, ShapeStructInfo
from ..vm import memory_ops
from ._graph_utils import map_relax_functions

__all__ = ["VMBuiltinLower"]

_KEEP_PREFIX = ("relax.memory.",)


def _nbytes(shape: ShapeExpr, dtype: str) -> Any:
    size: Any = IntImm("int64", storage_bytes(dtype))
    for d in shape.values:
        size = size * d
    from tvm.arith import Analyzer

    return Analyzer().simplify(size)


class _Lower(ExprMutator):
    def __init__(self, mod: IRModule):
        super().__init__(mod)
        self.where = "?"

    def visit_call_(self, call: Call) -> Any:
        call = super().visit_call_(call)
        op = call.op
        if not isinstance(op, Op):
            return call
        name = op.name
        if name == "relax.builtin.alloc_tensor":
            shape, dtype = call.args[0], call.args[1]
            if not isinstance(shape, ShapeExpr):
                raise RelaxError(
                    f"VMBuiltinLower ({self.where}): builtin.alloc_tensor needs a shape "
                    "expression, got a shape value only known at run time"
                )
            dev = call.args[2] if len(call.args) > 2 else PrimValue(0)
            scope = call.args[3] if len(call.args) > 3 else StringImm("global")
            storage = self.builder_.emit(
                memory_ops.alloc_storage(
                    ShapeExpr([_nbytes(shape, dtype.value)]), dev, scope, "uint8"
                ),
                "storage",
            )
            return memory_ops.alloc_tensor(storage, 0, shape, DataTypeImm(dtype.value))
        if name == "relax.shape_of":
            sinfo = call.struct_info_ if call.struct_info_ is not None else ShapeStructInfo()
            return Call(ExternFunc("vm.builtin.shape_of"), call.args, None, [sinfo])
        if name == "relax.null_value":
            return Call(ExternFunc("vm.builtin.null_value"), [], None, [ObjectStructInfo()])
        if name == "relax.call_pure_packed":
            return Call(call.args[0], call.args[1:], None, call.sinfo_args)
        if name.startswith(_KEEP_PREFIX):
            return call
        if name in ("relax.call_tir", "relax.call_dps_packed"):
            raise RelaxError(
                f"VMBuiltinLower ({self.where}): {name} is still present; run CallTIRRewrite "
                "first"
            )
        raise RelaxError(
            f"VMBuiltinLower ({self.where}): operator {name} has no VM lowering; lower it to "
            "TIR with relax.transform.LegalizeOps() (relax.build does) or register an "
            "FLegalize for it"
        )


def VMBuiltinLower() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass (see the module docstring); run it after StaticPlanBlockMemory."""

    @module_pass(opt_level=0, name="VMBuiltinLower")
    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        mutator = _Lower(mod)

        def lower(func: Any, gv: Any) -> Any:
            mutator.where = f"@{gv.name_hint}"
            return mutator.visit_expr(func)

        return map_relax_functions(mod, lower)

    return run
