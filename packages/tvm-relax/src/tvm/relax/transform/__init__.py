"""Relax passes (IRModule -> IRModule)."""

from .legalize_ops import LegalizeOps, get_legalize, register_legalize

__all__ = ["LegalizeOps", "register_legalize", "get_legalize"]
from .dead_code_elimination import DeadCodeElimination, remove_unused_bindings
from .simplify_expr import AlgebraicSimplify, SimplifyExpr
from .canonicalize_bindings import CanonicalizeBindings, canonicalize_bindings
from .eliminate_common_subexpr import CommonSubexpressionElimination, EliminateCommonSubexpr
from .fold_constant import FoldConstant, fold_constant
from .fold_batchnorm import FoldBatchnormToConv2D
from .convert_layout import ConvertLayout, convert_layout
from .pipeline import GRAPH_PASS_OPT_LEVELS, get_default_graph_pipeline
from .qdq_to_integer import QDQReport, QDQToInteger, qdq_to_integer
# fusion and VM lowering (relax.build)
from .annotate_tir_op_pattern import AnnotateTIROpPattern, OpPatternKind, analyze_op_pattern
from .fuse_ops import FuseOps
from .fuse_tir import FuseTIR
from .to_non_dataflow import ToNonDataflow
from .remove_purity_checking import RemovePurityChecking
from .call_tir_rewrite import CallTIRRewrite
from .static_plan_block_memory import StaticPlanBlockMemory, memory_plan_report
from .vm_builtin_lower import VMBuiltinLower
from .vm_shape_lower import VMShapeLower
from .split_layout_rewrite_preproc import (
    AnnotateLayoutFreeBuffers,
    SplitLayoutRewritePreproc,
)
# bring your own backend (tvm.relax.backend)
from .fuse_ops_by_pattern import FuseOpsByPattern
from .merge_composite_functions import MergeCompositeFunctions
from .run_codegen import RunCodegen
