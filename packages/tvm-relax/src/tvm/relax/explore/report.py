"""One self-contained HTML page about a compilation: the graph before and after fusion, each
stage's IR, the pass timings and the per-kernel profile.

::

    compiled = compile_model(mod, "llvm", instruments=[timing])   # tvm.driver.tvmc.compiler
    write_report("report.html", compiled.stages, pass_timings=timing,
                 profile=vm.profile("main", x))

The page needs no network: the data is embedded as JSON (with ``<``, ``>``, ``&`` escaped, so
no model name can close the script element) and drawn by a small script of the package
(``report.js``) that only ever sets text, never HTML.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from tvm.ir.instrument import PassTimingInstrument
from tvm.ir.module import IRModule

from ..expr import Function
from .graph import Graph, _kernel_calls, graph_of
from .layout import layout, node_label

__all__ = ["Report", "write_report"]

# distinct light colours, one per kernel (cycled)
PALETTE = (
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
    "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3", "#fbb4ae", "#decbe4", "#fed9a6", "#e5d8bd",
)


def _timings(pass_timings: Any) -> list[dict[str, Any]]:
    if pass_timings is None:
        return []
    if isinstance(pass_timings, PassTimingInstrument):
        pass_timings = pass_timings.timings
    if not isinstance(pass_timings, Mapping):
        raise TypeError("pass_timings must be a PassTimingInstrument or its .timings dict "
                        f"{{pass: (calls, seconds)}}, got {type(pass_timings).__name__}")
    rows = []
    for name, entry in pass_timings.items():
        try:
            calls, secs = entry
            rows.append({"name": str(name), "calls": int(calls), "total_s": float(secs)})
        except (TypeError, ValueError):
            raise TypeError(f"pass_timings[{name!r}] must be (calls, seconds), got {entry!r}") from None
    return sorted(rows, key=lambda r: -r["total_s"])


def _profile(profile: Any) -> Optional[dict[str, Any]]:
    if profile is None:
        return None
    if not hasattr(profile, "rows") or not hasattr(profile, "total_s"):
        raise TypeError("profile must be a tvm.runtime.vm.profiler.ProfileReport (rows, total_s), "
                        f"got {type(profile).__name__}")
    rows = [{"name": str(r.name), "kind": str(r.kind), "count": int(r.count),
             "total_s": float(r.total_s)} for r in profile.rows]
    return {"total_s": float(profile.total_s), "overhead_s": float(getattr(profile, "overhead_s", 0.0)),
            "rows": rows}


def _calls_kernels(mod: IRModule, function: str) -> bool:
    func = mod[function] if function in mod else None
    return isinstance(func, Function) and bool(_kernel_calls(func, mod))


class Report:
    """The content of the page, built from ordered ``stages`` (name -> IRModule).

    ``before`` (default: the first stage) is drawn with every binding coloured by the kernel
    it ends in, from ``after`` (default: the last stage whose ``function`` calls kernels),
    which is drawn with one node per kernel call; with a ``profile`` the kernels show their
    time.  ``graphs`` holds the :class:`~.graph.Graph` of each drawing.
    """

    def __init__(self, stages: Mapping[str, IRModule], pass_timings: Any = None,
                 profile: Any = None, title: str = "tvm compilation report",
                 before: Optional[str] = None, after: Optional[str] = None,
                 function: str = "main") -> None:
        if not isinstance(stages, Mapping) or not stages:
            raise ValueError("Report: stages must be a non-empty mapping name -> IRModule")
        for name, mod in stages.items():
            if not isinstance(mod, IRModule):
                raise TypeError(f"Report: stage {name!r} is a {type(mod).__name__}, not an IRModule")
        self.stages = dict(stages)
        self.title = str(title)
        self.function = function
        self.passes = _timings(pass_timings)
        self.profile = _profile(profile)
        names = list(self.stages)
        for label, chosen in (("before", before), ("after", after)):
            if chosen is not None and chosen not in self.stages:
                raise KeyError(f"Report: {label}={chosen!r} is not a stage; stages: {', '.join(names)}")
        self.before = before or names[0]
        if after is None:
            fused = [n for n in names if _calls_kernels(self.stages[n], function)]
            after = fused[-1] if fused else None
        self.after = after if after != self.before else None
        self.graphs: dict[str, Graph] = {}
        kernels = self.stages[self.after] if self.after else None
        self.graphs[self.before] = graph_of(self.stages[self.before], function, kernels=kernels)
        if self.after:
            self.graphs[self.after] = graph_of(self.stages[self.after], function)

    # -------------------------------------------------------------------------- data
    def kernel_colors(self) -> dict[str, str]:
        """A colour per kernel, in the after-fusion graph's order."""
        order: list[str] = []
        for g in (self.graphs.get(self.after or ""), self.graphs[self.before]):
            if g is not None:
                order.extend(k for k in g.kernels if k not in order)
        return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(order)}

    def _kernel_times(self) -> dict[str, dict[str, float]]:
        if not self.profile:
            return {}
        total = self.profile["total_s"] or 0.0
        return {r["name"]: {"total_s": r["total_s"], "count": r["count"],
                            "share": r["total_s"] / total if total else 0.0}
                for r in self.profile["rows"]}

    def _graph_data(self, stage: str, title: str, times: dict[str, dict[str, float]],
                    colors: dict[str, str], show_time: bool) -> dict[str, Any]:
        graph = self.graphs[stage]
        # after fusion, a kernel call lists the operators of the before-fusion graph it runs
        members: dict[tuple[Optional[str], Optional[str]], list[str]] = {}
        if stage == self.after:
            for n in self.graphs[self.before].nodes:
                if n.kernel and n.kind != "kernel":
                    members.setdefault((n.kernel, n.call), []).append(f"{n.name} = {n.op}")
        labels = {}
        for n in graph.nodes:
            first, second = node_label(n)
            t = times.get(n.kernel or "") if show_time and n.kind == "kernel" else None
            if t:
                second = f"{second} | {_us(t['total_s'] / max(t['count'], 1))}".strip(" |")
            labels[n.id] = (first, second)
        lay = layout(graph, labels)
        nodes = []
        for n in graph.nodes:
            x, y, w, h = lay.boxes[n.id]
            nodes.append({
                "id": n.id, "name": n.name, "kind": n.kind, "op": n.op, "shape": n.shape,
                "dtype": n.dtype, "kernel": n.kernel, "call": n.call, "layers": list(n.layers), "attrs": n.attrs,
                "inputs": n.inputs, "x": x, "y": y, "w": w, "h": h,
                "label": list(labels[n.id]), "color": colors.get(n.kernel or ""),
                "time": times.get(n.kernel or ""),
                "members": members.get((n.kernel, n.name), []) if n.kind == "kernel" else [],
            })
        edges = [{"src": s, "dst": d, "points": pts} for s, d, pts in lay.edges]
        return {"id": stage, "title": title, "nodes": nodes, "edges": edges,
                "width": lay.width, "height": lay.height}

    def data(self) -> dict[str, Any]:
        """Everything the page shows, as JSON-able data."""
        colors, times = self.kernel_colors(), self._kernel_times()
        heading = f"{self.before}: before fusion" if self.after else f"{self.before}: graph"
        graphs = [self._graph_data(self.before, heading, times, colors, show_time=False)]
        if self.after:
            graphs.append(self._graph_data(self.after, f"{self.after}: after fusion", times,
                                           colors, show_time=True))
        stages = [{"name": name, "text": mod.script(show_meta=False)}
                  for name, mod in self.stages.items()]
        return {"title": self.title, "function": self.function, "graphs": graphs,
                "kernels": [{"name": k, "color": c, "time": times.get(k)} for k, c in colors.items()],
                "stages": stages, "passes": self.passes, "profile": self.profile}

    # -------------------------------------------------------------------------- output
    def html(self) -> str:
        """The page: one HTML document with its style, script and data inline."""
        static = resources.files(__package__)
        css = static.joinpath("report.css").read_text(encoding="utf-8")
        js = static.joinpath("report.js").read_text(encoding="utf-8")
        payload = _script_safe(json.dumps(self.data(), separators=(",", ":")))
        title = html.escape(self.title)
        return (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{title}</title>\n<style>\n{css}</style>\n</head>\n<body>\n"
            f"<header><h1>{title}</h1><nav id=\"tabs\"></nav></header>\n"
            "<main id=\"panes\"></main>\n"
            f"<script type=\"application/json\" id=\"report-data\">{payload}</script>\n"
            f"<script>\n{js}</script>\n</body>\n</html>\n"
        )

    def write(self, path: Union[str, Path]) -> Path:
        """Write :meth:`html` to ``path``; returns the path."""
        path = Path(path)
        path.write_text(self.html(), encoding="utf-8")
        return path


def _script_safe(text: str) -> str:
    """JSON text that cannot end a ``<script>`` element or start markup inside it."""
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.1f}us" if us < 10000 else f"{us / 1000:.2f}ms"


def write_report(path: Union[str, Path], stages: Mapping[str, IRModule], pass_timings: Any = None,
                 profile: Any = None, title: str = "tvm compilation report",
                 before: Optional[str] = None, after: Optional[str] = None,
                 function: str = "main") -> Path:
    """Write the report page of ``stages`` to ``path`` (see :class:`Report`)."""
    return Report(stages, pass_timings, profile, title, before, after, function).write(path)
