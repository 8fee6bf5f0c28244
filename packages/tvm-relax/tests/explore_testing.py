"""Helpers for the tvm.relax.explore tests: ONNX models, a headless Chromium and a PNG reader."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tvm.script import ir as I
from tvm.script import relax as R

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
requires_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH")


@I.ir_module
class Small:
    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32")):
        with R.dataflow():
            m = R.matmul(x, w)
            b = R.add(m, R.const(1.0, "float32"))
            r = R.nn.relu(b)
            t = R.tuple(r, m)
            g = t[0]
            R.output(g)
        return g


def onnx_model(nodes: list[Any], inits: list[Any], x_shape: list[int], y_shape: list[int]) -> Any:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def small_model(last_name: str = "head/sigmoid") -> Any:
    """conv -> add(bias) -> relu -> flatten -> matmul -> sigmoid, an ONNX model."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.random((8, 4, 3, 3), dtype=np.float32), "W"),
        numpy_helper.from_array(rng.random(8, dtype=np.float32), "B"),
        numpy_helper.from_array(rng.random((8 * 6 * 6, 10), dtype=np.float32), "W2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv1"),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "W2"], ["m"], name="fc"),
        helper.make_node("Sigmoid", ["m"], ["y"], name=last_name),
    ]
    return onnx_model(nodes, inits, [1, 4, 8, 8], [1, 10])


def resnet_like(blocks: int = 12, ch: int = 4, hw: int = 8) -> Any:
    """``blocks`` residual blocks (conv-bn-relu-conv-bn, add, relu) and a classifier head:
    about 190 graph nodes for 12 blocks, ResNet-18 sized."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(1)
    inits, nodes = [], []

    def const(name: str, shape: tuple) -> str:
        inits.append(numpy_helper.from_array(
            (np.abs(rng.standard_normal(shape)) + 0.1).astype(np.float32), name))
        return name

    def conv_bn(x: str, name: str, relu: bool) -> str:
        nodes.append(helper.make_node("Conv", [x, const(name + "_w", (ch, ch, 3, 3))],
                                      [name + "_c"], name=name + "/conv", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node(
            "BatchNormalization",
            [name + "_c"] + [const(f"{name}_{p}", (ch,)) for p in "sbmv"], [name + "_bn"],
            name=name + "/bn"))
        if not relu:
            return name + "_bn"
        nodes.append(helper.make_node("Relu", [name + "_bn"], [name + "_r"], name=name + "/relu"))
        return name + "_r"

    x = "x"
    for b in range(blocks):
        y = conv_bn(conv_bn(x, f"b{b}a", True), f"b{b}b", False)
        nodes.append(helper.make_node("Add", [x, y], [f"b{b}_add"], name=f"block{b}/add"))
        nodes.append(helper.make_node("Relu", [f"b{b}_add"], [f"b{b}_out"], name=f"block{b}/relu"))
        x = f"b{b}_out"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="head/pool"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="head/flatten"))
    nodes.append(helper.make_node("Gemm", ["flat", const("fc_w", (ch, 10)), const("fc_b", (10,))],
                                  ["y"], name="head/fc"))
    return onnx_model(nodes, inits, [1, ch, hw, hw], [1, 10])


def payload(html_text: str) -> dict[str, Any]:
    """The JSON data embedded in a report page."""
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>',
                      html_text, re.S)
    assert found, "no report-data script in the page"
    return json.loads(found.group(1))


def chromium(page: Path, tmp: Path, *args: str, fragment: str = "",
             timeout: int = 120) -> subprocess.CompletedProcess:
    """Run headless Chromium on ``page`` (``#fragment`` appended) with ``args`` (e.g.
    ``--dump-dom``)."""
    assert CHROMIUM is not None
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", f"--user-data-dir={tmp / 'chromium-profile'}",
           "--enable-logging=stderr", "--v=0", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def read_png(path: Path) -> np.ndarray:
    """The pixels (height, width, channels) of an 8-bit RGB/RGBA, non-interlaced PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    assert header is not None, "PNG without IHDR"
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    bpp = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + width * bpp)
    out = np.zeros((height, width * bpp), dtype=np.uint8)
    prev = np.zeros(width * bpp, dtype=np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            cur = line.copy()
        elif kind == 1:  # sub: a running sum per channel (uint8 wraps like the filter)
            cur = np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif kind == 2:
            cur = line + prev
        else:
            cur = np.zeros_like(line)
            a_row = cur
            for i in range(width * bpp):
                a = int(a_row[i - bpp]) if i >= bpp else 0
                b = int(prev[i])
                if kind == 3:
                    pred = (a + b) // 2
                else:
                    c = int(prev[i - bpp]) if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[i] = (int(line[i]) + pred) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)
