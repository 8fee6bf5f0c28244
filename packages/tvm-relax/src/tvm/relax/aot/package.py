"""The AOT package: a static plan plus its kernels, exported as a C library.

``AOTPackage.export(folder, name)`` writes ``lib<name>.a``, ``lib<name>.so`` and ``<name>.h``
(see ``docs/tutorials/deploy_aot.md``).  The kernels come from the kernel module's object
code (``export_library("x.o")``), the program and the runtime slots from the generated C,
the weights from an assembler file that includes them as read-only data; all are compiled
by the C compiler of the kernels' triple (a cross compiler for a cross target).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Optional, Union

from .csource import emit_header, emit_source, emit_weights_asm
from .plan import AOTError, Plan

__all__ = ["AOTPackage", "API"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: the functions a package exports, as <name>_<api>
API = ("run", "run_with_workspace", "last_error", "set_num_threads")


class AOTPackage:
    """What ``relax.build(mod, target, exec_mode="aot")`` returns.

    ``plan`` is the static plan (:class:`~tvm.relax.aot.plan.Plan`), ``kernel_lib`` the
    compiled kernels, ``lowered_mod`` the final Relax module; :meth:`export` writes the C
    package, :meth:`header` and :meth:`c_source` give its text.
    """

    def __init__(self, plan: Plan, kernel_lib: Any, target: str, lowered_mod: Any = None,
                 external_modules: tuple[Any, ...] = ()):
        self.plan = plan
        self.kernel_lib = kernel_lib
        self.target = target
        self.lowered_mod = lowered_mod
        self.external_modules = tuple(external_modules)

    @property
    def link_flags(self) -> list[str]:
        """What a program linking ``lib<name>.a`` adds for the external backends' libraries
        (``offload``: ``-ldnnl``, rpaths ...); empty without offload."""
        out: list[str] = []
        for m in self.external_modules:
            out += [f for f in m.link_flags if not f.startswith("-I") and f not in out]
        return out

    @property
    def workspace_size(self) -> int:
        """Bytes of the one workspace of a run."""
        return self.plan.workspace_size

    def _named(self, name: str) -> Plan:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"AOTPackage: the name {name!r} must be a C identifier "
                             "(it prefixes the library's symbols: <name>_run)")
        return dataclasses.replace(self.plan, name=name)

    def header(self, name: str = "model") -> str:
        """The text of ``<name>.h``."""
        text = emit_header(self._named(name))
        if self.external_modules:
            backends = ", ".join(sorted({str(m.external_backend) for m in self.external_modules}))
            text = (f"/* calls external backends ({backends}): link lib{name}.a with "
                    f"{' '.join(self.link_flags)}; their libraries allocate on the heap */\n"
                    f"{text}")
        return text

    def c_source(self, name: str = "model") -> str:
        """The text of the generated ``<name>.c`` (the program; the kernels are objects)."""
        return emit_source(self._named(name))

    def export(self, folder: Union[str, os.PathLike[str]], name: str = "model",
               cc: Optional[str] = None, cflags: tuple[str, ...] = ("-O2",)) -> dict[str, Path]:
        """Write ``lib<name>.a``, ``lib<name>.so`` and ``<name>.h`` into ``folder``;
        returns their paths by suffix (``"a"``, ``"so"``, ``"h"``).  ``cc`` overrides the
        C compiler (default: the kernels' triple's, as their ``export_library`` picks)."""
        plan = self._named(name)
        info = self._link_info(cc)
        compiler, libs = info["cc"], list(info["libs"])
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"a": out / f"lib{name}.a", "so": out / f"lib{name}.so", "h": out / f"{name}.h"}
        with tempfile.TemporaryDirectory(prefix="tvm_aot_") as tmp:
            t = Path(tmp)
            (t / f"{name}.h").write_text(self.header(name))
            (t / f"{name}.c").write_text(emit_source(plan))
            # the parts' names hold a '-', which no package name (a C identifier) has, so
            # none is the combined <name>.o
            (t / "weights-part.bin").write_bytes(plan.weights)
            (t / "weights-part.S").write_text(emit_weights_asm(plan,
                                                               str(t / "weights-part.bin")))
            objs = [t / "plan-part.o", t / "weights-part.o"]
            _run([compiler, "-c", "-fPIC", *cflags, "-I", tmp, "-o", str(objs[0]),
                  str(t / f"{name}.c")], name)
            _run([compiler, "-c", "-fPIC", "-o", str(objs[1]), str(t / "weights-part.S")],
                 name)
            for i, m in enumerate(self.external_modules):  # the backends' C, as it is
                src, obj = t / f"external{i}-part.c", t / f"external{i}-part.o"
                src.write_text(m.get_source("c"))
                _run([compiler, "-c", "-fPIC", "-O2", "-std=gnu11",
                      *[f for f in m.link_flags if f.startswith("-I")], "-o", str(obj),
                      str(src)], name)
                # every module has its own metadata symbol; the package reads none of them
                _run([_binutil(compiler, "objcopy"), "--localize-symbol=__tvm_module_meta",
                      str(obj)], name)
                objs.append(obj)
            libs += [f for f in self.link_flags if f not in libs]
            if self.kernel_lib is not None:
                kernels = t / "kernels-part.o"
                self.kernel_lib.export_library(str(kernels))
                # the kernels' heap buffers come from the workspace arena (see .arena)
                _run([_binutil(compiler, "objcopy"),
                      f"--redefine-sym=aligned_alloc={name}_aot_alloc",
                      f"--redefine-sym=free={name}_aot_free", str(kernels)], name)
                objs.insert(0, kernels)
            # one object whose only global symbols are the API's: the kernels, the runtime
            # slots and the weights become local, so packages link side by side
            combined = t / f"{name}.o"
            _run([compiler, "-r", "-nostdlib", "-o", str(combined), *map(str, objs)], name)
            _run([_binutil(compiler, "objcopy"),
                  *[f"--keep-global-symbol={name}_{api}" for api in API], str(combined)], name)
            archive = t / paths["a"].name
            _run([_binutil(compiler, "ar"), "rcs", str(archive), str(combined)], name)
            shared = t / paths["so"].name
            _run([compiler, "-shared", "-o", str(shared), str(combined), *libs], name)
            for key, src in (("a", archive), ("so", shared), ("h", t / f"{name}.h")):
                shutil.copyfile(src, paths[key])
        return paths

    def _link_info(self, cc: Optional[str]) -> dict[str, Any]:
        if self.kernel_lib is None:
            from tvm.ffi import knobs

            found = cc or knobs.CC.get() or shutil.which("cc") or shutil.which("gcc")
            if not found:
                raise AOTError("AOT export needs a C compiler (cc, gcc or $CC)")
            return {"cc": found, "libs": ["-lm"]}
        link_info = getattr(self.kernel_lib, "link_info", None)
        if link_info is None:
            raise AOTError(
                f"AOT export needs kernels as object code; the kernel module of target "
                f"{self.target!r} ({type(self.kernel_lib).__name__}) cannot provide it "
                "(build for the llvm target)")
        return link_info(cc)

    def __repr__(self) -> str:
        return (f"<AOTPackage target={self.target!r} kernels={len({c.symbol for c in self.plan.calls})} "
                f"calls={len(self.plan.calls)} workspace={self.plan.workspace_size} "
                f"weights={len(self.plan.weights)}>")


def _binutil(compiler: str, tool: str) -> str:
    """The binutils ``tool`` (``ar``, ``objcopy``) of a (cross) compiler:
    ``aarch64-linux-gnu-gcc`` -> ``aarch64-linux-gnu-ar``; the plain tool for ``cc``."""
    base = os.path.basename(compiler)
    for suffix in ("gcc", "cc", "clang"):
        if base.endswith(suffix) and base != suffix and base[: -len(suffix)].endswith("-"):
            candidate = shutil.which(base[: -len(suffix)] + tool) or shutil.which(
                os.path.join(os.path.dirname(compiler), base[: -len(suffix)] + tool))
            if candidate:
                return candidate
            raise AOTError(f"AOT export needs {base[: -len(suffix)]}{tool} (the binutils of "
                           f"{base}) to write the package")
    found = shutil.which(tool)
    if found is None:
        raise AOTError(f"AOT export needs {tool} (binutils) to write the package")
    return found


def _run(cmd: list[str], name: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AOTError(f"AOT export of {name}: {' '.join(cmd)} failed (exit "
                       f"{proc.returncode}):\n{proc.stderr.strip()}")
