"""tvm.relax: the graph-level IR.

Nodes (:mod:`~tvm.relax.expr`), StructInfo (:mod:`~tvm.relax.struct_info`), operators
(:mod:`~tvm.relax.op`), :class:`BlockBuilder`, analyses (:mod:`~tvm.relax.analysis`) and
visitors/mutators (:mod:`~tvm.relax.expr_functor`); passes in :mod:`~tvm.relax.transform`,
and :func:`build` (the VM compiler, :mod:`~tvm.relax.vm`) with :class:`VirtualMachine`.
"""

from tvm.ffi.lazy import lazy_exports
from tvm.ir.base import GlobalVar
from tvm.ir.module import IRModule
from tvm.ir.op import Op

from . import analysis, op
from .analysis.struct_info_analysis import (
    BaseCheckResult,
    derive_call_ret_struct_info,
    erase_to_well_defined,
    get_static_shape,
    is_base_of,
    struct_info_base_check,
    struct_info_lca,
)
from .block_builder import BlockBuilder
from .errors import NormalizeError, RelaxError, StructInfoError, WellFormedError
from .expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    as_expr,
    const,
    is_leaf,
)
from .expr_functor import ExprMutator, ExprVisitor
from .op import call_dps_packed, call_pure_packed, call_tir
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from .vm import Executable, VirtualMachine, build

__version__ = "0.1.0"


def _install_script_printer() -> None:
    """``repr`` of Relax objects, ``Function.script()`` and the Relax functions of
    ``IRModule.script()`` print TVMScript (``tvm.script.relax``), importing the printer on
    first use."""
    from tvm.ffi import register_repr
    from tvm.ir.module import register_script_printer

    def script_repr(node):
        from tvm.script.relax.printer import safe_repr

        return safe_repr(node)

    def function_printer(func, name, ctx):
        from tvm.script.relax.printer import FunctionPrinter

        return FunctionPrinter(ctx).print_function(func, name)

    for cls in (Expr, StructInfo, Binding, BindingBlock):
        register_repr(cls, script_repr)
    register_script_printer(Function, function_printer, "from tvm.script import relax as R")


_install_script_printer()


# ``relax.transform``, ``relax.frontend``, ... import on first use (keeps import fast)
__getattr__, __dir__ = lazy_exports(
    __name__, {}, submodules=("transform", "frontend", "analysis", "vm", "topi", "dpl", "op",
                           "quantize")
)
