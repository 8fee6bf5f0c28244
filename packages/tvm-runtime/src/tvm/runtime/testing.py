"""Test helpers: prove that an artifact runs with tvm-runtime alone.

``runtime_only_python(folder)`` lays out a private import root holding only ``tvm.ffi``,
``tvm.runtime`` and their third-party dependencies (numpy, pluggy), and returns the command
prefix and environment that start a Python interpreter seeing nothing else — no
site-packages, so neither the compiler (tvm.ir, tvm.tir, targets) nor llvmlite can be
imported, whatever is installed in the current environment.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["runtime_only_python"]


def _package_dirs(module_name: str) -> list[Path]:
    module = __import__(module_name, fromlist=["__name__"])
    paths = list(getattr(module, "__path__", []))
    if not paths:
        paths = [os.path.dirname(module.__file__)]
    return [Path(p) for p in paths]


def runtime_only_python(folder: str | os.PathLike) -> tuple[list[str], dict[str, str]]:
    """``(argv_prefix, env)`` for a Python process that can import only the runtime.

    Run ``subprocess.run([*argv_prefix, "script.py", ...], env=env)``.
    """
    root = Path(folder) / "runtime_only_site"
    (root / "tvm").mkdir(parents=True, exist_ok=True)
    for part in ("ffi", "runtime"):
        link = root / "tvm" / part
        if not link.exists():
            link.symlink_to(_package_dirs(f"tvm.{part}")[0], target_is_directory=True)
    for dep in ("numpy", "pluggy"):
        src = _package_dirs(dep)[0]
        link = root / src.name
        if not link.exists():
            link.symlink_to(src, target_is_directory=True)
        libs = src.parent / f"{src.name}.libs"  # vendored shared libraries (OpenBLAS)
        if libs.is_dir() and not (root / libs.name).exists():
            (root / libs.name).symlink_to(libs, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(root)
    env["TVM_DISABLE_PLUGINS"] = ""
    # -S: no site-packages, so nothing installed beside the runtime is visible.
    return [sys.executable, "-S"], env
