"""Source code generation shared by the C-family targets (C, CUDA, OpenCL, Metal).

:class:`CLikePrinter` prints lowered TIR as C-like source; target plugins subclass it and
override only what their language spells differently.
"""

from .c_like import CLikePrinter, FunctionState, pointer_element_types
from .c_like_stmt import captured_vars
from .c_types import CodegenError, DType, NameTable, c_string_literal, dtype_of

__all__ = [
    "CLikePrinter", "FunctionState", "CodegenError", "DType", "NameTable", "captured_vars",
    "c_string_literal", "dtype_of", "pointer_element_types",
]
