"""A layered (Sugiyama-style) drawing of a :class:`~.graph.Graph`, top to bottom.

Steps, each about linear in nodes plus edges (sorting makes it ``O(n log n)``):

1. ranks: the longest path from the inputs; a source (input, constant) sits just above its
   first consumer rather than at the top;
2. edges spanning several ranks get a bend point per rank (capped, so a wide graph with many
   long edges stays linear: beyond the cap an edge is drawn straight);
3. order within a rank: a few barycenter sweeps down and up;
4. x positions: each node pulled towards the mean of its neighbours, keeping order and spacing
   (the mean of a left-packed and a right-packed placement, which keeps both constraints).

In 3 and 4 a node's inputs and constants follow their consumer but do not pull it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .graph import Graph

__all__ = ["Layout", "layout"]

NODE_H = 38
RANK_GAP = 34
GAP = 18
CHAR_W = 6.6
MIN_W = 56
MAX_W = 240
BEND_W = 8.0
SWEEPS = 4


@dataclass
class Layout:
    """Centres and sizes of the nodes (``{id: (x, y, w, h)}``), each edge's points (from the
    producer's bottom to the consumer's top), and the drawing's size."""

    boxes: dict[str, tuple[float, float, float, float]]
    edges: list[tuple[str, str, list[tuple[float, float]]]]
    width: float
    height: float


def _label_width(text: str) -> float:
    return min(max(MIN_W, len(text) * CHAR_W + 16), MAX_W)


def node_label(node: object) -> tuple[str, str]:
    """The two lines drawn on a node: its name and operator, then its type."""
    name, op = getattr(node, "name"), getattr(node, "op")
    first = name if op in ("input", "output", "constant") else f"{name} = {op}"
    return first, f"{getattr(node, 'shape')} {getattr(node, 'dtype')}".strip()


def layout(graph: Graph, labels: Optional[dict[str, tuple[str, str]]] = None) -> Layout:
    """Lay ``graph`` out (see the module docstring); ``labels`` overrides the two text lines
    of nodes (by id), which set their widths."""
    nodes = graph.nodes
    index = {n.id: i for i, n in enumerate(nodes)}
    preds = [[index[s] for s in n.inputs if s in index] for n in nodes]
    succs: list[list[int]] = [[] for _ in nodes]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    rank = _ranks(preds, succs)
    labels = labels or {}
    width = [max(_label_width(a), _label_width(b))
             for a, b in (labels.get(n.id) or node_label(n) for n in nodes)]

    # virtual nodes: one per rank an edge crosses; chains[i] = per (p, i) edge the bends
    cap = 4 * len(nodes) + 2000
    vrank, vwidth = list(rank), list(width)
    vpreds = [list() for _ in nodes]
    vsuccs: list[list[int]] = [[] for _ in nodes]
    chains: list[tuple[int, int, list[int]]] = []
    for i, ps in enumerate(preds):
        for p in ps:
            bends: list[int] = []
            prev = p
            if rank[i] - rank[p] > 1 and len(vrank) + rank[i] - rank[p] <= len(nodes) + cap:
                for r in range(rank[p] + 1, rank[i]):
                    v = len(vrank)
                    vrank.append(r)
                    vwidth.append(BEND_W)
                    vpreds.append([prev])
                    vsuccs.append([])
                    vsuccs[prev].append(v)
                    bends.append(v)
                    prev = v
            vpreds[i].append(prev)
            vsuccs[prev].append(i)
            chains.append((p, i, bends))

    # a node follows its computed operands, not its constants (which would pull it sideways)
    source = [v < len(nodes) and not preds[v] for v in range(len(vrank))]
    vpreds = [[u for u in ps if not source[u]] or ps for ps in vpreds]
    layers: list[list[int]] = [[] for _ in range(max(vrank, default=-1) + 1)]
    for v, r in enumerate(vrank):
        layers[r].append(v)
    pos = [0.0] * len(vrank)
    for layer in layers:
        for k, v in enumerate(layer):
            pos[v] = k
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        seq = layers[1:] if down else layers[-2::-1]
        for layer in seq:
            neigh = vpreds if down else vsuccs

            def key(v: int, neigh: list[list[int]] = neigh) -> float:
                ns = neigh[v]
                return sum(pos[u] for u in ns) / len(ns) if ns else pos[v]

            layer.sort(key=key)
            for k, v in enumerate(layer):
                pos[v] = k

    x = [0.0] * len(vrank)
    for layer in layers:
        cur = 0.0
        for k, v in enumerate(layer):
            if k:
                cur += (vwidth[layer[k - 1]] + vwidth[v]) / 2 + GAP
            x[v] = cur
    for sweep in range(SWEEPS):
        neigh = vpreds if sweep % 2 == 0 else vsuccs
        for layer in layers if sweep % 2 == 0 else layers[::-1]:
            want = [sum(x[u] for u in neigh[v]) / len(neigh[v]) if neigh[v] else x[v]
                    for v in layer]
            _place(layer, want, vwidth, x)
    left = min((x[v] - vwidth[v] / 2 for v in range(len(vrank))), default=0.0)
    shift = GAP - left
    boxes: dict[str, tuple[float, float, float, float]] = {}
    for i, n in enumerate(nodes):
        boxes[n.id] = (round(x[i] + shift, 1), float(GAP + NODE_H / 2 + rank[i] * (NODE_H + RANK_GAP)),
                       width[i], float(NODE_H))
    edges = []
    for p, i, bends in chains:
        pts = [(boxes[nodes[p].id][0], boxes[nodes[p].id][1] + NODE_H / 2)]
        for v in bends:
            pts.append((round(x[v] + shift, 1), GAP + NODE_H / 2 + vrank[v] * (NODE_H + RANK_GAP)))
        pts.append((boxes[nodes[i].id][0], boxes[nodes[i].id][1] - NODE_H / 2))
        edges.append((nodes[p].id, nodes[i].id, pts))
    total_w = max((x[v] + shift + vwidth[v] / 2 for v in range(len(vrank))), default=0.0) + GAP
    total_h = GAP * 2 + len(layers) * (NODE_H + RANK_GAP) - RANK_GAP
    return Layout(boxes, edges, round(total_w, 1), float(max(total_h, NODE_H)))


def _ranks(preds: list[list[int]], succs: list[list[int]]) -> list[int]:
    """Longest-path ranks over the (topologically ordered) nodes; sources pulled down."""
    rank = [0] * len(preds)
    for i, ps in enumerate(preds):
        if ps:
            rank[i] = 1 + max(rank[p] for p in ps)
    for i, ps in enumerate(preds):
        if not ps and succs[i]:
            rank[i] = max(min(rank[s] for s in succs[i]) - 1, 0)
    return rank


def _place(layer: list[int], want: list[float], width: list[float], x: list[float]) -> None:
    """Positions near ``want`` in the layer's order with spacing: the mean of the
    left-packed and right-packed placements."""
    n = len(layer)
    if not n:
        return
    sep = [(width[layer[k - 1]] + width[layer[k]]) / 2 + GAP for k in range(1, n)]
    lo = list(want)
    for k in range(1, n):
        lo[k] = max(lo[k], lo[k - 1] + sep[k - 1])
    hi = list(want)
    for k in range(n - 2, -1, -1):
        hi[k] = min(hi[k], hi[k + 1] - sep[k])
    for k, v in enumerate(layer):
        x[v] = (lo[k] + hi[k]) / 2
