"""tvm.relax.explore: the HTML report (content, escaping, rendering in headless Chromium) and
the Model Explorer JSON."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
from explore_testing import (
    Small,
    chromium,
    payload,
    read_png,
    requires_chromium,
    resnet_like,
    small_model,
)
from tvm import relax
from tvm.ir.instrument import PassTimingInstrument
from tvm.ir.module import IRModule
from tvm.relax import explore
from tvm.relax.explore.report import PALETTE
from tvm.script.ir import metadata

HOSTILE = "</script><script>document.documentElement.setAttribute('data-pwned','1')</script>"
HOSTILE_IMG = "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','2')\">"


def compiled(model, x_shape):
    """(stages, pass timings, profile) of compiling an ONNX model for the host as tvmc does."""
    pytest.importorskip("onnx")
    pytest.importorskip("tvm.target.llvm")
    import tvm
    from tvm.driver.tvmc.compiler import compile_model
    from tvm.ir.target import host_target
    from tvm.relax.frontend.onnx import from_onnx

    timing = PassTimingInstrument()
    result = compile_model(from_onnx(model), host_target(), instruments=[timing])
    vm = relax.VirtualMachine(result.executable, tvm.runtime.cpu())
    profile = vm.profile("main", np.random.default_rng(0).random(x_shape, dtype=np.float32))
    return result.stages, timing, profile


@pytest.fixture(scope="module")
def small():
    return compiled(small_model(), (1, 4, 8, 8))


def test_the_graphs_drawn_are_the_first_stage_and_the_last_one_calling_kernels(small):
    stages, _, _ = small
    assert list(stages) == ["relax", "legalized", "fused", "tir"]
    assert all(isinstance(m, IRModule) for m in stages.values())
    report = explore.Report(stages)
    assert (report.before, report.after) == ("relax", "fused")  # "tir" holds PrimFuncs only
    report = explore.Report(stages, before="legalized", after="legalized")
    assert (report.before, report.after) == ("legalized", None)


def test_report_page_holds_graphs_ir_timings_and_profile(small, tmp_path):
    stages, timing, profile = small
    path = explore.write_report(tmp_path / "r.html", stages, pass_timings=timing, profile=profile,
                                title="small <model>")
    text = path.read_text()
    assert "<title>small &lt;model&gt;</title>" in text
    # self-contained: no external script, style or image
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", text)
    data = payload(text)
    before, after = data["graphs"]
    assert (before["id"], after["id"]) == ("relax", "fused")
    colors = {k["name"]: k["color"] for k in data["kernels"]}
    assert len(set(colors.values())) == len(colors) == 3
    ops = {n["op"]: n for n in before["nodes"]}
    assert ops["nn.conv2d"]["kernel"] == ops["nn.relu"]["kernel"] == "fused_conv2d_add_relu"
    assert ops["nn.conv2d"]["color"] == colors["fused_conv2d_add_relu"]
    assert ops["sigmoid"]["color"] == colors["fused_matmul_sigmoid"]
    assert ops["input"]["color"] is None
    # after fusion: one node per kernel call, with its measured time on the node
    kernels = [n for n in after["nodes"] if n["kind"] == "kernel"]
    assert [n["op"] for n in kernels] == ["fused_conv2d_add_relu", "reshape", "fused_matmul_sigmoid"]
    assert kernels[0]["members"] == ["lv = nn.conv2d", "c = add", "r = nn.relu"]
    for n in kernels:
        row = profile.row(n["op"])
        assert n["time"]["total_s"] == pytest.approx(row.total_s)
        assert n["time"]["count"] == row.count
        assert n["label"][1].endswith("us") or n["label"][1].endswith("ms")
    assert all("x" in n and "y" in n and "w" in n for n in before["nodes"])
    # IR of every stage, weights left out
    assert [s["name"] for s in data["stages"]] == list(stages)
    assert all(metadata.BEGIN not in s["text"] for s in data["stages"])
    assert metadata.OMITTED in data["stages"][0]["text"]
    assert "def fused_conv2d_add_relu" in data["stages"][-1]["text"]
    passes = {p["name"]: p for p in data["passes"]}
    assert passes["FuseOps"]["calls"] == 1 and passes["FuseOps"]["total_s"] > 0
    assert data["profile"]["total_s"] == pytest.approx(profile.total_s)
    assert {r["name"] for r in data["profile"]["rows"]} == {r.name for r in profile.rows}


def test_report_without_timings_or_profile_and_a_single_stage(tmp_path):
    data = payload(explore.Report({"relax": Small}).html())
    assert len(data["graphs"]) == 1 and data["passes"] == [] and data["profile"] is None
    assert data["kernels"] == []


def test_report_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty mapping"):
        explore.Report({})
    with pytest.raises(TypeError, match="stage 'a' is a str"):
        explore.Report({"a": "mod"})
    with pytest.raises(KeyError, match="before='x' is not a stage"):
        explore.Report({"a": Small}, before="x")
    with pytest.raises(TypeError, match="PassTimingInstrument"):
        explore.Report({"a": Small}, pass_timings=[1, 2])
    with pytest.raises(TypeError, match=r"pass_timings\['p'\] must be \(calls, seconds\)"):
        explore.Report({"a": Small}, pass_timings={"p": 3})
    with pytest.raises(TypeError, match="ProfileReport"):
        explore.Report({"a": Small}, profile={"rows": []})


def hostile_module():
    bb = relax.BlockBuilder()
    x = relax.Var(HOSTILE_IMG, relax.TensorStructInfo([2, 3], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.exp(x), HOSTILE)
            out = bb.emit_output(relax.op.negative(a), "out")
        bb.emit_func_output(out)
    return bb.get()


def test_names_from_the_model_cannot_become_markup(tmp_path):
    mod = hostile_module()
    text = explore.Report({"relax": mod}, title=HOSTILE).html()
    assert "<script>document" not in text and "<img" not in text
    assert text.count("<script") == 2  # the data and the page's own script
    names = {n["name"] for n in payload(text)["graphs"][0]["nodes"]}
    assert {HOSTILE, HOSTILE_IMG} <= names  # intact, as data


def test_model_explorer_json_structure(small, tmp_path):
    stages, timing, profile = small
    report = explore.Report(stages, timing, profile)
    doc = explore.to_model_explorer(report)
    assert set(doc) == {"graphs"} and [g["id"] for g in doc["graphs"]] == ["relax", "fused"]
    for graph in doc["graphs"]:
        ids = [n["id"] for n in graph["nodes"]]
        assert len(ids) == len(set(ids))
        for n in graph["nodes"]:
            assert set(n) == {"id", "label", "namespace", "subgraphIds", "attrs", "incomingEdges",
                              "outputsMetadata"}
            assert all(set(kv) == {"key", "value"} and isinstance(kv["value"], str)
                       for kv in n["attrs"])
            for k, e in enumerate(n["incomingEdges"]):
                assert e["sourceNodeId"] in ids and e["sourceNodeId"] != n["id"]
                assert (e["sourceNodeOutputId"], e["targetNodeInputId"]) == ("0", str(k))
    before = {dict((kv["key"], kv["value"]) for kv in n["attrs"])["name"]: n
              for n in doc["graphs"][0]["nodes"]}
    conv = before["lv"]
    assert conv["label"] == "nn.conv2d"
    assert conv["namespace"] == "fused_conv2d_add_relu (r)"  # grouped by its kernel call
    attrs = {kv["key"]: kv["value"] for kv in conv["attrs"]}
    assert attrs["kernel"] == "fused_conv2d_add_relu" and attrs["strides"] == "(1, 1)"
    assert float(attrs["kernel_total_us"]) == pytest.approx(
        profile.row("fused_conv2d_add_relu").total_s * 1e6, abs=0.01)
    (meta,) = conv["outputsMetadata"]
    assert {kv["key"]: kv["value"] for kv in meta["attrs"]}["tensor_shape"] == "float32[1,8,6,6]"
    assert before["x"]["label"] == "Input" and before["x"]["namespace"] == ""
    after = doc["graphs"][1]["nodes"]
    assert all(n["namespace"] == "" for n in after)  # kernel calls are not grouped
    # a single graph, written to a file
    g = report.graphs["relax"]
    path = explore.write_model_explorer(tmp_path / "g.json", g)
    assert json.loads(path.read_text()) == explore.to_model_explorer(g)
    with pytest.raises(TypeError, match="expected Graphs"):
        explore.to_model_explorer([g, "x"])


# ---------------------------------------------------------------------------- in a browser


def rendered_attrs(dom: str) -> dict[str, str]:
    (html_tag,) = re.findall(r"<html[^>]*>", dom)[:1]
    return dict(re.findall(r'([\w-]+)="([^"]*)"', html_tag))


@requires_chromium
def test_report_renders_in_headless_chromium(tmp_path):
    stages, timing, profile = compiled(resnet_like(), (1, 4, 8, 8))
    report = explore.Report(stages, timing, profile, title="resnet-like")
    sizes = [len(g.nodes) for g in report.graphs.values()]
    assert 150 <= sizes[0] <= 250  # ResNet-18 sized
    page = report.write(tmp_path / "report.html")

    run = chromium(page, tmp_path, "--dump-dom")
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    attrs = rendered_attrs(dom)
    assert attrs.get("data-errors") == "0", attrs.get("data-error-text")
    assert attrs.get("data-rendered") == "2"
    counts = [int(c) for c in re.findall(r'<svg[^>]*data-node-count="(\d+)"', dom)]
    assert counts == sizes
    assert len(re.findall(r'<g class="node kind-', dom)) == sum(sizes)
    assert len(re.findall(r'<path [^>]*class="edge"', dom)) == sum(
        len(g.edges) for g in report.graphs.values())
    assert "Uncaught" not in run.stderr

    shot = tmp_path / "shot.png"
    run = chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,900")
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    assert "Uncaught" not in run.stderr
    pixels = read_png(shot)[..., :3]
    assert pixels.shape[:2] == (900, 1280)
    colors = np.unique(pixels.reshape(-1, 3), axis=0)
    assert len(colors) > 20
    # the before-fusion graph is drawn: its nodes are filled with the first kernel's colour
    first = tuple(int(PALETTE[0][i:i + 2], 16) for i in (1, 3, 5))
    assert int(np.all(pixels == first, axis=-1).sum()) > 200


@requires_chromium
def test_hostile_names_stay_text_in_the_browser(tmp_path):
    page = explore.write_report(tmp_path / "h.html", {"relax": hostile_module()}, title=HOSTILE)
    run = chromium(page, tmp_path, "--dump-dom")
    assert run.returncode == 0, run.stderr[-2000:]
    attrs = rendered_attrs(run.stdout)
    assert "data-pwned" not in attrs
    assert attrs.get("data-errors") == "0", attrs.get("data-error-text")
    assert attrs.get("data-rendered") == "1"
    assert "&lt;/script&gt;&lt;script&gt;document" in run.stdout  # shown as text on the page
    # selecting the node (a link can) shows its details, still as text
    graph = explore.graph_of(hostile_module())
    node = graph.find(HOSTILE)
    run = chromium(page, tmp_path, "--dump-dom", fragment=f"graph-0/{node.id}")
    attrs = rendered_attrs(run.stdout)
    assert "data-pwned" not in attrs
    assert attrs.get("data-errors") == "0", attrs.get("data-error-text")
    details = re.search(r'<aside class="details">(.*?)</aside>', run.stdout, re.S).group(1)
    assert "<h3>&lt;/script&gt;&lt;script&gt;document" in details
    assert "<dd>" + html.escape(HOSTILE_IMG, quote=False) + "</dd>" in details  # its input
    assert re.search(rf'<g class="node kind-op selected"[^>]*data-id="{node.id}"', run.stdout)
