"""The default graph-level pipeline: which passes run at which ``opt_level``.

``get_default_graph_pipeline(opt_level, desired_layouts=None)`` returns the
:class:`~tvm.ir.transform.Sequential` ``relax.build`` runs before LegalizeOps:

=========================  =========  =================================================
pass                       opt_level  purpose
=========================  =========  =================================================
CanonicalizeBindings       1          drop ``y = x``, trivial match_cast, known ``t[i]``
FoldConstant               1          evaluate calls on constants
FoldBatchnormToConv2D      2          batch-norm (inference) into conv2d weights + bias
ConvertLayout              asked      only with ``desired_layouts``
SimplifyExpr               2          reshape chains, transpose pairs, ``x * 1`` ...
FoldConstant (again)       2          fold what the rewrites exposed (weight transposes)
EliminateCommonSubexpr     2          compute repeated values once
CanonicalizeBindings       2          clean up the aliases CSE leaves
DeadCodeElimination        1          unused bindings and unreachable functions
=========================  =========  =================================================

Level 0 runs nothing (ConvertLayout still runs when asked).  Levels above 2 run the
level-2 pipeline.  Each pass also carries its level in its PassInfo, so a
``PassContext(opt_level=...)`` lower than the one asked for skips the passes above it.

The passes are found by name (``tvm.ir.transform.get_pass("relax.FoldConstant")``,
``"relax.graph_pipeline"`` for the level-2 pipeline): tvm-relax declares them under the
entry-point group ``tvm.passes`` in its ``pyproject.toml``.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from tvm.ir.transform import Pass, Sequential

from .canonicalize_bindings import CanonicalizeBindings
from .convert_layout import ConvertLayout
from .dead_code_elimination import DeadCodeElimination
from .eliminate_common_subexpr import EliminateCommonSubexpr
from .fold_batchnorm import FoldBatchnormToConv2D
from .fold_constant import FoldConstant
from .simplify_expr import SimplifyExpr

__all__ = ["get_default_graph_pipeline", "GRAPH_PASS_OPT_LEVELS"]

GRAPH_PASS_OPT_LEVELS: dict[str, int] = {
    "CanonicalizeBindings": 1,
    "FoldConstant": 1,
    "DeadCodeElimination": 1,
    "FoldBatchnormToConv2D": 2,
    "SimplifyExpr": 2,
    "EliminateCommonSubexpr": 2,
}


def get_default_graph_pipeline(
    opt_level: int = 2,
    desired_layouts: Optional[Mapping[str, Sequence[str]]] = None,
) -> Sequential:
    """The graph passes for ``opt_level`` (see the module docstring for the table)."""
    if not isinstance(opt_level, int) or isinstance(opt_level, bool) or opt_level < 0:
        raise ValueError(f"opt_level must be a non-negative int, got {opt_level!r}")
    passes: list[Pass] = []
    layout = [ConvertLayout(desired_layouts)] if desired_layouts else []
    if opt_level >= 2:
        passes = [
            CanonicalizeBindings(),
            FoldConstant(),
            FoldBatchnormToConv2D(),
            *layout,
            SimplifyExpr(),
            FoldConstant(),
            EliminateCommonSubexpr(),
            CanonicalizeBindings(),
            DeadCodeElimination(),
        ]
    elif opt_level == 1:
        passes = [CanonicalizeBindings(), FoldConstant(), *layout, DeadCodeElimination()]
    else:
        passes = layout
    return Sequential(passes, opt_level=0, name="relax.graph_pipeline")

