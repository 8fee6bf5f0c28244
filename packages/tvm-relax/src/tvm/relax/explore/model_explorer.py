"""The graphs in the JSON format of Google's Model Explorer (``ai-edge-model-explorer``).

Model Explorer loads a JSON graph file directly ("select a model": a ``.json`` file) holding
``{"graphs": [Graph, ...]}``; each graph is ``{"id", "nodes"}`` and each node
``{"id", "label", "namespace", "subgraphIds", "attrs": [{"key", "value"}],
"incomingEdges": [{"sourceNodeId", "sourceNodeOutputId", "targetNodeInputId"}],
"outputsMetadata": [{"id", "attrs": [...]}]}``.  A node's namespace (``a/b``) puts it in a
collapsible group: bindings of a before-fusion graph are grouped by the kernel they were
fused into, so the viewer shows each kernel as a layer that opens to its operators.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from .graph import Graph, Node

__all__ = ["to_model_explorer", "write_model_explorer"]


def _kv(key: str, value: Any) -> dict[str, str]:
    return {"key": key, "value": str(value)}


def _label(node: Node) -> str:
    return {"input": "Input", "output": "Output", "constant": "Constant"}.get(node.kind, node.op)


def _node(node: Node, times: dict[str, Any]) -> dict[str, Any]:
    attrs = [_kv("name", node.name), _kv("kind", node.kind)]
    if node.kernel:
        attrs.append(_kv("kernel", node.kernel))
        if node.call:
            attrs.append(_kv("kernel_call", node.call))
        t = times.get(node.kernel)
        if t:
            attrs.append(_kv("kernel_total_us", f"{t['total_s'] * 1e6:.2f}"))
            attrs.append(_kv("kernel_calls", t["count"]))
    if node.layers:
        attrs.append(_kv("source_layers", ", ".join(node.layers)))
    attrs.extend(_kv(k, v) for k, v in node.attrs.items())
    shape = f"{node.dtype}[{node.shape.replace('x', ',')}]" if node.dtype else node.shape
    outputs = [] if node.kind == "output" else [{
        "id": "0", "attrs": [_kv("tensor_shape", shape), _kv("__tensor_tag", node.name)]}]
    # grouped by the kernel call it ends in, unless it is that call itself
    namespace = ""
    if node.kernel and node.kind != "kernel":
        namespace = f"{node.kernel} ({node.call})" if node.call else node.kernel
        namespace = namespace.replace("/", "_")
    return {
        "id": node.id,
        "label": _label(node),
        "namespace": namespace,
        "subgraphIds": [],
        "attrs": attrs,
        "incomingEdges": [{"sourceNodeId": src, "sourceNodeOutputId": "0",
                           "targetNodeInputId": str(k)} for k, src in enumerate(node.inputs)],
        "outputsMetadata": outputs,
    }


def to_model_explorer(graphs: Union[Graph, Iterable[Graph], Any],
                      profile: Optional[Any] = None) -> dict[str, Any]:
    """``{"graphs": [...]}`` for Model Explorer from one graph, several, or a
    :class:`~.report.Report` (its drawings and profile); ``profile`` (a ProfileReport) adds
    each kernel's time to its nodes' attributes."""
    from .report import Report, _profile

    if isinstance(graphs, Report):
        report = graphs
        items = [(f"{stage}", g) for stage, g in report.graphs.items()]
        prof = report.profile if profile is None else _profile(profile)
    else:
        seq = [graphs] if isinstance(graphs, Graph) else list(graphs)
        for g in seq:
            if not isinstance(g, Graph):
                raise TypeError(f"to_model_explorer: expected Graphs, got {type(g).__name__}")
        items = [(g.name if len(seq) == 1 else f"{g.name}_{i}", g) for i, g in enumerate(seq)]
        prof = _profile(profile)
    times = {r["name"]: r for r in prof["rows"]} if prof else {}
    return {"graphs": [{"id": gid, "nodes": [_node(n, times) for n in g.nodes]}
                       for gid, g in items]}


def write_model_explorer(path: Union[str, Path], graphs: Any, profile: Optional[Any] = None) -> Path:
    """Write :func:`to_model_explorer` as a JSON file Model Explorer opens; returns the path."""
    path = Path(path)
    path.write_text(json.dumps(to_model_explorer(graphs, profile), indent=1), encoding="utf-8")
    return path
