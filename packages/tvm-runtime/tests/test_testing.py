"""tvm.runtime.testing.runtime_only_python: a child interpreter that sees the runtime and
what is asked for, nothing else; plugins declared for it are discovered like installed ones."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tvm.runtime.testing import runtime_only_python

PLUGIN = textwrap.dedent("""
    from tvm.ffi.plugin import hookimpl
    from tvm.runtime.device import CPUDeviceAPI

    class _API(CPUDeviceAPI):
        name = "demo-ext"

        def exists(self, dev):
            return dev.device_type == 12

    API = _API()

    @hookimpl
    def tvm_device_api(device_type):
        return API if device_type == 12 else None
""")


def _run(argv, env, code):
    return subprocess.run([*argv, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)


def test_only_the_runtime_is_importable(tmp_path):
    argv, env = runtime_only_python(tmp_path)
    out = _run(argv, env, "import tvm.runtime, numpy, pluggy; print('ok')")
    assert out.stdout.strip() == "ok", out.stderr
    for name in ("pytest", "tvm.ir", "tvm.tir"):
        out = _run(argv, env, f"import {name}")
        assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr, name


def test_extra_packages_and_plugins(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    (src / "demo_tvm_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(src))
    argv, env = runtime_only_python(tmp_path, extra_packages=["demo_tvm_plugin"],
                                    plugins={"demo": "demo_tvm_plugin"})
    code = ("import tvm.runtime as rt; from tvm.ffi.plugin import list_plugins; "
            "print(rt.ext_dev(0).exist, [p.name for p in list_plugins() if p.name == 'demo'])")
    out = _run(argv, env, code)
    assert out.stdout.split() == ["True", "['demo']"], out.stderr
    sys.modules.pop("demo_tvm_plugin", None)
