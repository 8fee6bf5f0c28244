"""Test helpers: prove that an artifact runs with tvm-runtime alone.

``runtime_only_python(folder)`` lays out a private import root holding only ``tvm.ffi``,
``tvm.runtime`` and their third-party dependencies (numpy, pluggy), and returns the command
prefix and environment that start a Python interpreter seeing nothing else — no
site-packages, so neither the compiler (tvm.ir, tvm.tir, targets) nor llvmlite can be
imported, whatever is installed in the current environment.

A GPU artifact also needs the run side of its target and that target's driver binding::

    argv, env = runtime_only_python(
        tmp, extra_packages=["tvm.target.opencl", "pyopencl"],
        plugins={"opencl": "tvm.target.opencl.plugin"})

``extra_packages`` adds import names (a part of the ``tvm`` namespace such as
``tvm.target.opencl`` is added alone; any other package comes with the installed
distributions it requires, e.g. pyopencl's pytools and platformdirs); ``plugins`` declares
``tvm`` entry points (name -> module) in a generated ``.dist-info``, so the child process
discovers them as if their distributions were installed.

``run_exported_vm(path, inputs, folder)`` runs an exported VM executable's ``main`` in such a
process and returns its outputs (and which ``tvm`` modules the process had imported).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib import import_module, metadata
from pathlib import Path

from tvm.ffi.knobs import DISABLE_PLUGINS

__all__ = ["runtime_only_python", "run_exported_vm"]

_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _module_paths(module_name: str) -> list[Path]:
    """The directory of a package, or the file of a single-module distribution."""
    module = import_module(module_name)
    paths = list(getattr(module, "__path__", []))
    if paths:
        return [Path(p) for p in paths]
    if getattr(module, "__file__", None) is None:
        raise ValueError(f"runtime_only_python: {module_name!r} has no file to link "
                         "(a built-in module needs no linking)")
    return [Path(module.__file__)]


def _link(root: Path, src: Path, name: str | None = None) -> None:
    link = root / (name or src.name)
    if link.exists() or link.is_symlink():
        return
    link.symlink_to(src, target_is_directory=src.is_dir())
    libs = src.parent / f"{src.name}.libs"  # vendored shared libraries (auditwheel)
    if src.is_dir() and libs.is_dir() and not (root / libs.name).exists():
        (root / libs.name).symlink_to(libs, target_is_directory=True)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level_names(dist: metadata.Distribution) -> list[str]:
    text = dist.read_text("top_level.txt")
    if text:
        return [n.strip() for n in text.split() if n.strip()]
    names = []
    for f in dist.files or ():
        first = f.parts[0]
        if first.endswith((".dist-info", ".egg-info", ".data")) or first in ("__pycache__",
                                                                               "..", "bin"):
            continue
        name = first.split(".")[0] if len(f.parts) == 1 else first
        if (len(f.parts) > 1 or first.endswith((".py", ".so", ".pyd"))) and name not in names:
            names.append(name)
    return names


def _with_requirements(import_names: Iterable[str]) -> tuple[list[str], list[Path]]:
    """``import_names`` plus the top-level names of every installed distribution they
    (transitively) require (extras are not followed), and those distributions' metadata
    folders (some packages read their own version from it)."""
    owners = metadata.packages_distributions()
    queue = [d for n in import_names for d in owners.get(n.split(".")[0], [])]
    seen: set[str] = set()
    names = list(import_names)
    infos: list[Path] = []
    while queue:
        dist_name = queue.pop()
        if _normalize(dist_name) in seen:
            continue
        seen.add(_normalize(dist_name))
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        for n in _top_level_names(dist):
            if n not in names:
                names.append(n)
        info = getattr(dist, "_path", None)
        if info is not None and Path(info).is_dir():
            infos.append(Path(info))
        for req in dist.requires or ():
            if ";" in req and "extra" in req.split(";", 1)[1]:
                continue
            m = _REQ_NAME.match(req)
            if m:
                queue.append(m.group(1))
    return names, infos


def _write_plugins(root: Path, plugins: Mapping[str, str]) -> None:
    for name, module in plugins.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"runtime_only_python: bad plugin name {name!r}")
        info = root / f"tvm_runtime_only_{name}-0.0.0.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: tvm-runtime-only-{name}\nVersion: 0.0.0\n")
        (info / "entry_points.txt").write_text(f"[tvm]\n{name} = {module}\n")


def runtime_only_python(
    folder: str | os.PathLike,
    extra_packages: Sequence[str] = (),
    plugins: Mapping[str, str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """``(argv_prefix, env)`` for a Python process that can import only the runtime (plus
    ``extra_packages``, with ``plugins`` registered; see the module docstring).

    Run ``subprocess.run([*argv_prefix, "script.py", ...], env=env)``.
    """
    root = Path(folder) / "runtime_only_site"
    (root / "tvm").mkdir(parents=True, exist_ok=True)
    for part in ("ffi", "runtime"):
        _link(root / "tvm", _module_paths(f"tvm.{part}")[0], part)
    tvm_parts = [n for n in extra_packages if n.startswith("tvm.")]
    others = [n for n in extra_packages if not n.startswith("tvm.")]
    for name in tvm_parts:
        *parents, leaf = name.split(".")[1:]
        where = root / "tvm"
        for p in parents:  # namespace packages (tvm.target): plain folders, no __init__.py
            where = where / p
            where.mkdir(exist_ok=True)
        _link(where, _module_paths(name)[0], leaf)
    deps, infos = _with_requirements(["numpy", "pluggy", *others])
    for dep in deps:
        try:
            paths = _module_paths(dep)
        except (ImportError, ValueError):
            continue  # an optional or platform-specific requirement that is not importable
        _link(root, paths[0])
    for info in infos:
        if not info.name.startswith(("tvm_", "tvm-")):
            _link(root, info)
    if plugins:
        _write_plugins(root, plugins)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(root)
    env[DISABLE_PLUGINS.name] = ""
    # -S: no site-packages, so nothing installed beside the runtime is visible.
    return [sys.executable, "-S"], env


_VM_RUNNER = """
import json, sys
import numpy as np
import tvm.runtime
from tvm.runtime.vm import VirtualMachine

path, inputs, outputs = sys.argv[1:4]
ex = tvm.runtime.load_module(path)
out = VirtualMachine(ex, tvm.runtime.cpu())["main"](*np.load(inputs).values())
out = out if isinstance(out, (list, tuple)) else [out]
np.savez(outputs, *[o.numpy() for o in out])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("tvm."))))
"""


def run_exported_vm(
    path: str | os.PathLike,
    inputs: Sequence,
    folder: str | os.PathLike,
    extra_env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> tuple[list, list[str]]:
    """Run ``main`` of the exported executable ``path`` on ``inputs`` (numpy arrays) in a
    runtime-only process (:func:`runtime_only_python`, files under ``folder``): ``(outputs as
    numpy arrays, the tvm modules the process imported)``.  A failure raises
    ``AssertionError`` with the process's stderr."""
    import json

    import numpy as np

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    script, ins, outs = folder / "run_vm.py", folder / "inputs.npz", folder / "outputs.npz"
    script.write_text(_VM_RUNNER)
    np.savez(ins, *inputs)
    argv, env = runtime_only_python(folder)
    env.update(extra_env or {})
    proc = subprocess.run([*argv, str(script), os.fspath(path), str(ins), str(outs)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with np.load(outs) as data:
        got = [data[k] for k in data.files]
    return got, json.loads(proc.stdout.strip().splitlines()[-1])
