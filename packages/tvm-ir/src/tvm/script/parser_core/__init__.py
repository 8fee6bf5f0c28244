"""Machinery shared by the TVMScript parsers and printers of every dialect.

Parsing: :class:`Source` (script text with its place in the user's file, spans for ``ast``
nodes), :class:`VarTable` and :class:`ExprEvaluator` (Python expressions evaluated in the
function's closure and globals, dialect hooks for operators), decorator registration and
:func:`from_source`.  Errors are :class:`tvm.ir.diagnostics.DiagnosticError` with the span
of the offending source.

Printing: :class:`NameTable` (unique names), :class:`DocBuilder` (indented lines), literal
and precedence helpers.
"""

from .doc import (
    PREC, DocBuilder, NameTable, deep_recursion, float_literal, python_value, sanitize_name,
    str_literal, wrap,
)
from .entry import (
    function_env,
    in_class_body,
    lookup_decorator,
    parse_definition,
    register_decorator,
    register_namespace,
    from_source,
)
from .evaluator import MISSING, OP_SYMBOLS, ExprEvaluator, VarTable
from .source import Source

__all__ = [
    "Source",
    "VarTable",
    "ExprEvaluator",
    "MISSING",
    "OP_SYMBOLS",
    "register_decorator",
    "lookup_decorator",
    "register_namespace",
    "function_env",
    "in_class_body",
    "parse_definition",
    "from_source",
    "NameTable",
    "DocBuilder",
    "sanitize_name",
    "str_literal",
    "float_literal",
    "python_value",
    "PREC",
    "wrap",
    "deep_recursion",
]
