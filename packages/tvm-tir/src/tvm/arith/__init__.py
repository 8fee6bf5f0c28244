"""tvm.arith: arithmetic analysis for index expressions.

* :class:`Analyzer` — simplification (canonical and rewrite), constant bounds, integer sets,
  proofs (``can_prove``), variable binding and constraint scopes;
* :mod:`~tvm.arith.const_fold` — the constant folder of tvm-tir: exact folding per dtype,
  exact identities and Ramp/Broadcast forms, also the builders the lowering passes use;
* :class:`ConstIntBound`, :class:`IntervalSet`, :func:`eval_set` — bound and set analysis;
* :func:`detect_linear_equation` — coefficients of a linear form.

The ``tir.Simplify`` pass is this package applied statement by statement; small expression
queries (``const_int``, ``same_expr``, ...) live in :mod:`tvm.tir.expr_util`.
"""

from . import const_fold
from .analyzer import Analyzer
from .bound import ConstIntBound
from .canonical import CanonicalSimplifier
from .detect_linear import detect_linear_equation
from .int_set import NEG_INF, POS_INF, IntervalSet, eval_set, intersect, union
from .rewrite_simplify import RewriteSimplifier

__all__ = [
    "Analyzer", "ConstIntBound", "IntervalSet", "eval_set", "union", "intersect", "POS_INF",
    "NEG_INF", "detect_linear_equation", "const_fold", "CanonicalSimplifier",
    "RewriteSimplifier",
]
