"""The walkthrough in a browser: relax.build(target="webgpu"), export_web (kernels.json and
the JavaScript loader), then headless Chromium runs the walkthrough's kernel function through
navigator.gpu (SwiftShader's WebGPU adapter on a CPU-only host) and posts its output back
to the test's HTTP server, which compares it with llvm; an index check raises the CPU's
message in the page too.

Marked ``gpu``: it needs a browser that exposes WebGPU; without Chromium, or where its
WebGPU has no adapter, it skips saying which."""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from relax_gpu_util import requires_webgpu, run_both

pytest.importorskip("tvm.relax")

from tvm import relax  # noqa: E402
from tvm.relax import op  # noqa: E402
from walkthrough_model import Walkthrough, walkthrough_inputs  # noqa: E402

pytestmark = [pytest.mark.gpu, requires_webgpu]

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_FLAGS = ("--headless=new", "--no-sandbox", "--enable-unsafe-webgpu",
          "--use-webgpu-adapter=swiftshader", "--enable-features=Vulkan",
          "--use-angle=swiftshader", "--no-first-run", "--disable-gpu-sandbox")

PAGE = """<!doctype html>
<html><body><pre id="status">running</pre>
<script src="tvm_webgpu.js"></script>
<script>
async function post(path, body) { await fetch(path, { method: "POST", body }); }
async function floats(name) { return new Float32Array(await (await fetch(name)).arrayBuffer()); }
(async () => {
  if (!navigator.gpu) { await post("/unavailable", "this Chromium does not expose navigator.gpu"); return; }
  if (!(await navigator.gpu.requestAdapter())) { await post("/unavailable", "navigator.gpu has no adapter"); return; }
  try {
    const cfg = await (await fetch("config.json")).json();
    const mod = await TVMWebGPU.load("walkthrough/kernels.json");
    const args = [];
    for (const p of cfg.params) {
      args.push(p.input ? mod.tensor(await floats(p.input), p.shape, p.dtype) : mod.empty(p.shape, p.dtype));
    }
    await mod.call(cfg.function, ...args);
    const out = await mod.read(args[cfg.output]);
    await post("/result", out);
    // an index check: the page gets the CPU's message
    const take = await TVMWebGPU.load("take/kernels.json");
    const x = take.tensor(new Float32Array(32), [4, 8], "float32");
    const idx = take.tensor(new BigInt64Array([0n, 3n, 9n]), [3], "int64");
    let message = "no error";
    try { await take.call(cfg.take, x, idx, take.empty([3, 8], "float32")); } catch (e) { message = String(e.message); }
    await post("/check", message);
    document.getElementById("status").textContent = "done";
  } catch (e) { await post("/error", String(e && e.stack || e)); }
})();
</script></body></html>
"""


def _browser() -> str | None:
    for name in _BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


class _Server(http.server.ThreadingHTTPServer):
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.posts: dict[str, bytes] = {}
        self.event = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, directory=str(args[2].folder), **kwargs)

    def do_POST(self) -> None:  # noqa: N802 - the http.server spelling
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.posts[self.path.strip("/")] = body
        if self.path.strip("/") in ("check", "error", "unavailable"):
            self.server.event.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def _take_module():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    i = relax.Var("i", relax.TensorStructInfo((3,), "int64"))
    with bb.function("main", [x, i]):
        with bb.dataflow():
            out = bb.emit_output(op.take(x, i, axis=0))
        bb.emit_func_output(out)
    return bb.get()


def test_the_walkthrough_runs_in_headless_chromium(tmp_path):
    from tvm.target.webgpu import export_web

    browser = _browser()
    if browser is None:
        pytest.skip(f"no Chromium to run WebGPU in (looked for {', '.join(_BROWSERS)})")
    inputs = walkthrough_inputs(3)
    _, cpu, ex = run_both(Walkthrough, *inputs, target="webgpu")
    export_web(ex, tmp_path / "walkthrough")
    take_ex = relax.build(_take_module(), target="webgpu")
    export_web(take_ex, tmp_path / "take")
    shutil.copyfile(tmp_path / "walkthrough" / "tvm_webgpu.js", tmp_path / "tvm_webgpu.js")
    lib = ex.kernel_lib
    (fname,) = [n for n in lib.function_names if "matmul" in n]
    program = next(f for f in lib.payload["functions"] if f["name"] == fname)
    params = []
    for k, p in enumerate(program["params"]):
        entry = {"shape": p["shape"], "dtype": p["dtype"]}
        if k < len(inputs):
            inputs[k].tofile(tmp_path / f"in{k}.bin")
            entry["input"] = f"in{k}.bin"
        params.append(entry)
    (take_name,) = take_ex.kernel_lib.function_names
    (tmp_path / "config.json").write_text(json.dumps({
        "function": fname, "params": params, "output": len(params) - 1, "take": take_name}))
    (tmp_path / "index.html").write_text(PAGE)
    server = _Server(tmp_path)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    proc = subprocess.Popen([browser, *_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        finished = server.event.wait(240)
    finally:
        proc.kill()
        _, stderr = proc.communicate(timeout=60)
        server.shutdown()
    posts = server.posts
    if "unavailable" in posts:
        pytest.skip(f"{browser} runs, but its WebGPU is not usable here: "
                    f"{posts['unavailable'].decode()}")
    assert finished, f"the page did not report back in 240 s; browser log:\n{stderr.decode()[-3000:]}"
    assert "error" not in posts, posts["error"].decode()
    out = np.frombuffer(posts["result"], np.float32).reshape(cpu.shape)
    np.testing.assert_allclose(out, cpu, rtol=1e-4, atol=1e-4)
    assert posts["check"].decode() == "take: index 9 is out of range for axis 0 of size 4"
