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
    abs, all, any, call_extern, call_intrin, call_pure_extern, ceil, cos, erf, exp, exp2, fabs,
    floor, floordiv, floormod, if_then_else, infinity, isfinite, isinf, isnan, likely, log, log1p,
    log2, log10, max, max_value, min, min_value, neg_infinity, power, round, rsqrt, sigmoid, sin,
    sqrt, tan, tanh, truncdiv, truncmod,
)
from .stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer,
    Evaluate, For, ForKind, IfThenElse, LetStmt, MatchBufferRegion, SeqStmt, Stmt, While, stmt_seq,
)
from .stmt_functor import free_vars, ir_transform, post_order_visit, pre_order_visit, substitute
