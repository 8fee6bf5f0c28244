"""``tvm.relax.explore``: a compiled model as a picture.

* :func:`graph_of` — a Relax function as a dataflow :class:`Graph` (one node per binding,
  with operator, type, source layers and the fused kernel it ended in);
* :func:`write_report` / :class:`Report` — one self-contained HTML page: the graph drawn
  before and after fusion (coloured by kernel, with kernel times when profiled), each stage's
  IR, the pass timings and the profile (the stages: e.g. ``tvm.driver.tvmc.compiler.compile_model``);
* :func:`to_model_explorer` / :func:`write_model_explorer` — the graphs as Google Model
  Explorer JSON.

See ``docs/explore.md``.
"""

from .graph import Graph, Node, graph_of, kernel_assignment, layers_of
from .layout import Layout, layout
from .model_explorer import to_model_explorer, write_model_explorer
from .report import Report, write_report

__all__ = [
    "Graph", "Node", "graph_of", "kernel_assignment", "layers_of", "Layout", "layout",
    "Report", "write_report", "to_model_explorer", "write_model_explorer",
]
