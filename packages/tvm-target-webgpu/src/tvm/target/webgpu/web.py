"""The browser bundle of a WebGPU module: the kernel descriptions as JSON plus the
JavaScript loader that runs them through ``navigator.gpu``.

Run side only (imports neither the compiler nor ``wgpu``)::

    ex = relax.build(mod, target="webgpu")
    export_web(ex, "site/")            # site/kernels.json, site/tvm_webgpu.js

``kernels.json`` is the module's payload (format ``webgpu``): per kernel its WGSL
(``wgsl``), parameters, bind-group layout (``layout``: storage bindings, which of them are
read-only, the uniform block of the scalars), launch tags, checks (``error_record``) and
adapter features; and the host programs (``functions``) that check tensor shapes, compute
launch sizes and launch the kernels.  ``tvm_webgpu.js`` (``js/tvm_webgpu.js`` of this
package, :func:`loader_path`) evaluates those host programs in the page::

    <script src="tvm_webgpu.js"></script>
    const mod = await TVMWebGPU.load("kernels.json");          // requests a GPUDevice
    const x = mod.tensor(new Float32Array(...), [128, 256], "float32");
    const y = mod.empty([128, 512], "float32");
    await mod.call("fused_matmul_add", x, w, b, y);          // checks raise Errors
    const out = await mod.read(y);                           // a Float32Array

A Relax executable's bytecode stays in Python; in the page one calls the kernel functions
it calls (``ex.kernel_lib.function_names``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

__all__ = ["export_web", "loader_path", "LOADER_NAME", "KERNELS_NAME"]

LOADER_NAME = "tvm_webgpu.js"
KERNELS_NAME = "kernels.json"


def loader_path() -> Path:
    """The JavaScript loader shipped with this package."""
    return Path(__file__).parent / "js" / LOADER_NAME


def export_web(module: Any, folder: str | os.PathLike[str]) -> Path:
    """Write ``kernels.json`` (the WebGPU module of ``module``: a :class:`WebGPUModule` or
    an executable whose ``kernel_lib`` is one) and ``tvm_webgpu.js`` into ``folder``
    (created if missing); returns the path of ``kernels.json``."""
    from .runtime import FORMAT, WebGPUModule

    lib = module if isinstance(module, WebGPUModule) else getattr(module, "kernel_lib", None)
    if not isinstance(lib, WebGPUModule):
        raise TypeError(f"export_web: expected a webgpu module or an executable built for "
                        f"target 'webgpu', got {type(module).__name__}"
                        + (f" with kernels of {type(lib).__name__}" if lib is not None else ""))
    if lib.payload.get("format") != FORMAT:
        raise ValueError(f"export_web: the module has format {lib.payload.get('format')!r}")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / KERNELS_NAME
    path.write_text(json.dumps(lib.payload), encoding="utf-8")
    shutil.copyfile(loader_path(), out / LOADER_NAME)
    return path
