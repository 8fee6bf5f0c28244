"""tvm.ir: what every IR of the compiler shares.

DataType, source spans and diagnostics, GlobalVar/BaseFunc/IRModule, the pass
infrastructure (``tvm.ir.transform``) and targets with their kind registry.
"""

from . import instrument, transform
from .base import BaseFunc, FrozenDict, GlobalVar
from .diagnostics import (
    Diagnostic,
    DiagnosticContext,
    DiagnosticError,
    get_source,
    register_source,
    render_diagnostic,
)
from .dtype import DataType, DTypeCode
from .module import FunctionNotFoundError, IRModule, register_expr_wrapper, register_script_printer
from .op import Op, register_op_attr
from .span import SourceName, Span
from .target import (
    HOST_JIT,
    Target,
    TargetError,
    TargetKind,
    TargetTag,
    UnknownTargetKindError,
    as_target,
    get_target_kind,
    get_target_tag,
    host_target,
    list_target_kinds,
    list_target_tags,
    register_target_kind,
    register_target_tag,
    unregister_target_kind,
    unregister_target_tag,
)
from .transform import (
    DumpIR,
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    PassTimingInstrument,
    PassVerificationError,
    PrintAfterEachPass,
    Sequential,
    function_pass,
    module_pass,
    register_config_option,
    register_pass,
    register_verifier,
)

__all__ = [
    "BaseFunc",
    "DTypeCode",
    "DataType",
    "Diagnostic",
    "DiagnosticContext",
    "DiagnosticError",
    "DumpIR",
    "FrozenDict",
    "FunctionNotFoundError",
    "FunctionPass",
    "GlobalVar",
    "IRModule",
    "ModulePass",
    "Op",
    "Pass",
    "PassContext",
    "PassInfo",
    "PassInstrument",
    "PassTimingInstrument",
    "PassVerificationError",
    "PrintAfterEachPass",
    "Sequential",
    "SourceName",
    "Span",
    "Target",
    "TargetError",
    "TargetKind",
    "TargetTag",
    "UnknownTargetKindError",
    "function_pass",
    "get_source",
    "get_target_kind",
    "get_target_tag",
    "host_target",
    "as_target",
    "HOST_JIT",
    "list_target_kinds",
    "list_target_tags",
    "module_pass",
    "register_config_option",
    "register_expr_wrapper",
    "register_op_attr",
    "register_pass",
    "register_script_printer",
    "register_source",
    "register_target_kind",
    "register_target_tag",
    "register_verifier",
    "render_diagnostic",
    "transform",
    "unregister_target_kind",
    "unregister_target_tag",
]

__version__ = "0.1.0"
