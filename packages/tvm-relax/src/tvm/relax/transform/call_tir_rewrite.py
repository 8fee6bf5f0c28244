"""CallTIRRewrite: ``call_tir``/``call_dps_packed`` to explicit allocation plus a call.

::

    lv = R.call_tir(add, (x, y), out_sinfo=R.Tensor((n, 4), "float32"))
    # becomes
    lv = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0))
    _ = add(x, y, lv)                     # destination-passing call of the PrimFunc

Outputs are allocated first (one ``alloc_tensor`` each; a tuple of them is bound to the
original variable when there are several), then the callee is called with the inputs, the
outputs and the ``tir_vars`` as scalar arguments.  Output shapes must be known (symbolic
dimensions are fine).
"""

from __future__ import annotations

from typing import Any

from tvm.ir.op import Op

from ..errors import RelaxError
from ..expr import Call, PrimValue, ShapeExpr, Tuple, Var, VarBinding
from ..expr_functor import ExprMutator
from ..op.builtin import alloc_tensor
from ..struct_info import ObjectStructInfo, TensorStructInfo, TupleStructInfo
from ._graph_utils import mutator_pass

__all__ = ["CallTIRRewrite"]

_DPS = ("relax.call_tir", "relax.call_dps_packed")


class _Rewriter(ExprMutator):
    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        if not (isinstance(value, Call) and isinstance(value.op, Op) and value.op.name in _DPS):
            super().visit_var_binding_(binding)
            return
        call = self.visit_expr(value)
        bb = self.builder_
        out = call.sinfo_args[0]
        fields = list(out.fields) if isinstance(out, TupleStructInfo) else [out]
        outputs = []
        for k, sinfo in enumerate(fields):
            if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None or (
                sinfo.is_unknown_dtype
            ):
                raise RelaxError(
                    f"CallTIRRewrite: output {k} of {call.op.name} bound to "
                    f"{binding.var.name_hint!r} has no known shape and dtype ({sinfo}); "
                    "give out_sinfo a shape (symbolic dimensions are fine)"
                )
            alloc = bb.normalize(alloc_tensor(ShapeExpr(sinfo.shape_values), sinfo.dtype, 0))
            if len(fields) == 1:
                var = self.visit_var_def(binding.var)
                var = var if var.struct_info_ is not None else Var(var.name_hint, alloc.struct_info)
                if var is not binding.var:
                    self.var_remap[binding.var] = var
                bb.emit_normalized(VarBinding(var, alloc, span=binding.span))
                outputs.append(var)
            else:
                outputs.append(bb.emit(alloc, f"{binding.var.name_hint}_{k}"))
        args = list(call.args[1].fields) if isinstance(call.args[1], Tuple) else [call.args[1]]
        scalars = [PrimValue(v) for v in call.args[2].values] if len(call.args) > 2 else []
        invoke = Call(call.args[0], [*args, *outputs, *scalars], span=call.span)
        object.__setattr__(invoke, "struct_info_", ObjectStructInfo())
        bb.emit_normalized(VarBinding(Var("_", ObjectStructInfo()), invoke))
        if len(fields) > 1:
            var = self.visit_var_def(binding.var)
            tup = bb.normalize(Tuple(outputs))
            if var.struct_info_ is None:
                var = Var(var.name_hint, tup.struct_info)
            if var is not binding.var:
                self.var_remap[binding.var] = var
            bb.emit_normalized(VarBinding(var, tup, span=binding.span))


def CallTIRRewrite() -> Any:  # noqa: N802 - pass constructors are CamelCase
    """The pass (see the module docstring); run it after ToNonDataflow."""

    return mutator_pass("CallTIRRewrite", _Rewriter)
