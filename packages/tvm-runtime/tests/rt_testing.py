"""Test helpers: the hand-written ABI kernels (kernels.c) and a fake non-CPU device API."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent

KERNEL_META = {
    "version": 1,
    "target": "c",
    "functions": [
        {
            "name": "add_scalar",
            "symbol": "add_scalar",
            "params": [
                {"name": "A", "kind": "tensor", "dtype": "float32", "shape": ["n"]},
                {"name": "B", "kind": "tensor", "dtype": "float32", "shape": ["n"]},
                {"name": "alpha", "kind": "scalar", "dtype": "float32"},
            ],
        },
        {
            "name": "checked_div",
            "symbol": "checked_div",
            "params": [
                {"name": "x", "kind": "scalar", "dtype": "int64"},
                {"name": "y", "kind": "scalar", "dtype": "int64"},
            ],
        },
        {"name": "fails_silently", "symbol": "fails_silently", "params": []},
        {
            "name": "parallel_spin",
            "symbol": "parallel_spin",
            "params": [
                {"name": "out", "kind": "tensor", "dtype": "float64", "shape": ["n"]},
                {"name": "iters", "kind": "scalar", "dtype": "int64"},
                {"name": "num_task", "kind": "scalar", "dtype": "int32"},
                {"name": "fail_task", "kind": "scalar", "dtype": "int32"},
            ],
        },
        {
            "name": "parallel_meet",
            "symbol": "parallel_meet",
            "params": [
                {"name": "out", "kind": "tensor", "dtype": "float64", "shape": ["n"]},
                {"name": "num_task", "kind": "scalar", "dtype": "int32"},
                {"name": "timeout_s", "kind": "scalar", "dtype": "float64"},
            ],
        },
        {
            "name": "nested_parallel",
            "symbol": "nested_parallel",
            "params": [{"name": "out", "kind": "tensor", "dtype": "float64", "shape": [6]}],
        },
    ],
}


def c_string_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def compile_shared(source: str, out: Path, seal: bool = True) -> Path:
    """Compile C ``source`` into the shared library ``out`` with the system ``cc``, sealed
    (as tvm's own exports are) unless ``seal`` is False."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (cc) available")
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(src)], check=True)
    if seal:
        from tvm.runtime import seal_file

        seal_file(out)
    return out


def kernel_source(meta: dict | None = None) -> str:
    text = (HERE / "kernels.c").read_text()
    return text.replace("@META@", c_string_literal(json.dumps(meta or KERNEL_META)))


class FakeExtDeviceAPI:
    """Host memory dressed up as a non-CPU device (ext_dev), counting what it is asked."""

    def __init__(self):
        from tvm.runtime.device import CPUDeviceAPI

        class _API(CPUDeviceAPI):
            name = "fake-ext"
            calls: dict[str, int] = {}

            def exists(self, dev):
                return dev.device_type == 12 and dev.index < 2

            def _count(self, what):
                self.calls[what] = self.calls.get(what, 0) + 1

            def alloc(self, dev, nbytes, alignment):
                self._count("alloc")
                return super().alloc(dev, nbytes, alignment)

            def free(self, dev, handle):
                self._count("free")
                super().free(dev, handle)

            def copy_device_to_device(self, *args):
                self._count("d2d")
                super().copy_device_to_device(*args)

            def synchronize(self, dev):
                self._count("sync")

        self.api = _API()

    @property
    def calls(self):
        return self.api.calls
