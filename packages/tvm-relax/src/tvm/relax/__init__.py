"""tvm.relax: the graph-level IR.

Nodes (:mod:`~tvm.relax.expr`), StructInfo (:mod:`~tvm.relax.struct_info`), operators
(:mod:`~tvm.relax.op`), :class:`BlockBuilder`, analyses (:mod:`~tvm.relax.analysis`) and
visitors/mutators (:mod:`~tvm.relax.expr_functor`).
"""

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

__version__ = "0.1.0"
