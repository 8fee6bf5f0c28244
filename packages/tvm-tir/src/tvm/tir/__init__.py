"""tvm.tir: the loop-level tensor IR — expressions, statements, buffers and PrimFuncs."""

from . import op
from .buffer import Buffer, decl_buffer
from .expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, Broadcast, BufferLoad, Call, Cast, CmpOp,
    CommReducer, Div, FloatImm, FloorDiv, FloorMod, IntImm, IterVar, IterVarType, Let, Max, Min,
    Mod, Mul, Not, Or, PrimExpr, Ramp, Range, Reduce, Select, Shuffle, SizeVar, StringImm, Sub,
    Var, const, convert,
)
from .function import PrimFunc
from .functor import (
    ExprMutator, ExprVisitor, StmtExprMutator, StmtExprVisitor, StmtMutator, StmtVisitor,
)
from .op import (
    abs, all, any, call_extern, call_intrin, call_pure_extern, ceil, checked, cos, erf, exp, exp2,
    fabs, floor, floordiv, floormod, if_then_else, infinity, isfinite, isinf, isnan, likely, log,
    log1p, log2, log10, max, max_value, min, min_value, neg_infinity, power, round, rsqrt, sigmoid,
    sin, sqrt, tan, tanh, truncdiv, truncmod,
)
from .stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer,
    Evaluate, For, ForKind, IfThenElse, LetStmt, MatchBufferRegion, SeqStmt, Stmt, While, stmt_seq,
)
from .stmt_functor import free_vars, ir_transform, post_order_visit, pre_order_visit, substitute
from .index_map import IndexMap
from .tensor_intrin import TensorIntrin, TensorIntrinDef
from . import analysis, transform
from .build import build, get_default_pipeline, get_gpu_pipeline, get_lowering_pipeline, lower
from .schedule import BlockRV, ExprRV, LoopRV, Schedule, ScheduleError, ScheduleState, StmtSRef


def _install_script_printer() -> None:
    """``repr`` of TIR objects and ``IRModule.script()`` print TVMScript (``tvm.script.tir``),
    importing the printer on first use."""
    from tvm.ffi import register_repr
    from tvm.ir.module import register_script_printer

    def script_repr(node):
        from tvm.script.tir.printer import safe_repr

        return safe_repr(node)

    def module_printer(func, name, ctx):
        from tvm.script.tir.printer import print_prim_func

        return print_prim_func(func, name, header=False)

    for cls in (PrimFunc, PrimExpr, Stmt, Buffer, BufferRegion, IterVar, Range):
        register_repr(cls, script_repr)
    register_script_printer(PrimFunc, module_printer, "from tvm.script import tir as T")


_install_script_printer()
