"""Patterns over Relax programs and the rewrite driver the graph passes share.

:mod:`~tvm.relax.dpl.pattern`: ``wildcard``, ``is_op``, ``is_const``, ``is_tuple``,
``is_tuple_get_item``, ``is_expr``, ``|`` and constraints (``has_dtype``, ``has_attr``,
``where``); :mod:`~tvm.relax.dpl.rewrite`: ``RewriteRule``, ``PatternRewriter``,
``rewrite_bindings``, ``rewrite_pass``.
"""

from .pattern import (
    CallPattern,
    ConstantPattern,
    ConstraintPattern,
    ExprPattern,
    Match,
    OpPattern,
    OrPattern,
    Pattern,
    TupleGetItemPattern,
    TuplePattern,
    WildcardPattern,
    constant_value,
    is_const,
    is_expr,
    is_op,
    is_tuple,
    is_tuple_get_item,
    wildcard,
)
from .rewrite import PatternRewriter, RewriteRule, is_call_to, rewrite_bindings, rewrite_pass
