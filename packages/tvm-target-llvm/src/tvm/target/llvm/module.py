"""``LLVMModule``: a runtime module compiled by LLVM and run through MCJIT.

The optimised LLVM IR is compiled in-process by MCJIT; kernels are found by symbol address
and wrapped by :func:`tvm.runtime.module_from_symbols` machinery (``NativeModule``), which
also reads ``__tvm_module_meta`` and fills the runtime slots.  ``export_library("x.so")``
emits a position-independent object with the same target machine and links it with the
system C compiler, so :func:`tvm.runtime.load_module` reads it back without LLVM.  Under
``-threading=omp`` (parallel loops through libgomp) libgomp is loaded into the process
before MCJIT resolves symbols, and exported libraries link ``-lgomp``.

Sources: ``get_source("ll")`` (optimised LLVM IR, the default), ``get_source("ll-raw")``
(as generated, before optimisation) and ``get_source("asm")`` (assembly).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import functools
import os
import shutil
import subprocess
import tempfile
from typing import Any

import llvmlite.binding as llvm
from tvm.ffi import knobs
from tvm.runtime.host import missing_features
from tvm.runtime.module import NativeModule

from .llvm_target import LLVMTargetOptions, create_target_machine, load_libgomp, optimize_module

__all__ = ["LLVMModule", "find_c_compiler"]


@functools.lru_cache(maxsize=None)
def _load_libm() -> None:
    """Make libm's symbols visible to MCJIT (kernels call tanhf, erff, ...)."""
    name = ctypes.util.find_library("m")
    if name:
        try:
            llvm.load_library_permanently(name)
        except RuntimeError:  # already part of the process on most systems
            pass


def find_c_compiler(cc: str | None = None) -> str:
    """The C compiler used to link shared libraries: ``cc``, ``$CC``, or cc/gcc/clang."""
    for candidate in (cc, knobs.CC.get(), "cc", "gcc", "clang"):
        if not candidate:
            continue
        path = shutil.which(candidate)
        if path:
            return path
    raise RuntimeError(
        "export_library needs a C compiler to link the shared library, but none of $CC, cc, "
        "gcc or clang was found on PATH; install one (e.g. apt-get install gcc) or pass "
        "cc='/path/to/compiler'"
    )


class LLVMModule(NativeModule):
    """Kernels compiled from LLVM IR; see the module docstring."""

    def __init__(self, ir_text: str, options: LLVMTargetOptions, name: str = "tvm_module"
                 ) -> None:
        _load_libm()
        if options.threading == "omp" and options.is_host and not load_libgomp():
            raise RuntimeError(
                f"llvm module {name!r} was generated for -threading=omp but libgomp cannot be "
                "loaded into this process; build with -threading=pool"
            )
        self.options = options
        self.name = name
        tm = create_target_machine(options, jit=True)
        mod = llvm.parse_assembly(ir_text)
        mod.name = name
        try:
            mod.verify()
        except RuntimeError as err:
            raise RuntimeError(f"llvm codegen produced invalid IR for {name}: {err}") from err
        optimize_module(mod, tm, options.opt_level)
        self._raw_ir = ir_text
        self._ir = str(mod)
        if not options.is_host:
            # Cross-compiled code cannot run here: expose sources and export only.
            self._engine = None
            from tvm.runtime.module import Module

            Module.__init__(self, "llvm")
            self._lookup_symbol = lambda symbol: None
            self._keepalive = None
            self.origin = f"llvm module {name!r} (cross-compiled for {options.triple})"
            self.meta = {}
            self.target = options.target_str
            self.slots = []
        else:
            engine = llvm.create_mcjit_compiler(mod, tm)
            engine.finalize_object()
            self._engine = engine

            def lookup(symbol: str) -> int | None:
                return engine.get_global_value_address(symbol) or None

            # built for a CPU this one is not (to export): loads, but its functions refuse
            super().__init__(lookup, "llvm", keepalive=engine, origin=f"llvm module {name!r}",
                             host_check="call", allow_features=self._unused_missing())
        self._sources["ll"] = self._ir
        self._sources["ll-raw"] = self._raw_ir

    def _unused_missing(self) -> list[str]:
        """The features this host lacks that the code is compiled for but does not use
        (``-mcpu=znver3`` implies ``clzero`` on an Intel host): the machine code without
        them is the same."""
        missing = missing_features(self.options.requirements)
        if not missing:
            return []
        without = dataclasses.replace(
            self.options, features=",".join(filter(None, [self.options.features,
                                                          *(f"-{f}" for f in missing)])))
        same = create_target_machine(without).emit_assembly(llvm.parse_assembly(self._ir)) == \
            create_target_machine(self.options).emit_assembly(llvm.parse_assembly(self._ir))
        return missing if same else []

    def get_source(self, fmt: str = "") -> str:
        """``"ll"`` (default), ``"ll-raw"`` or ``"asm"``."""
        if fmt == "asm" and "asm" not in self._sources:
            tm = create_target_machine(self.options)
            self._sources["asm"] = tm.emit_assembly(llvm.parse_assembly(self._ir))
        return super().get_source(fmt or "ll")

    def emit_object(self) -> bytes:
        """Position-independent object code of the module."""
        tm = create_target_machine(self.options, pic=True)
        return tm.emit_object(llvm.parse_assembly(self._ir))

    def export_library(self, path: str | os.PathLike[str], cc: str | None = None,
                       options: tuple[str, ...] = (), **kwargs: Any) -> None:
        """Write the module as a shared library (``.so``/``.dylib``), object (``.o``) or IR
        (``.ll``).  ``cc`` overrides the linker; ``options`` are extra linker flags."""
        if kwargs:
            raise TypeError(f"LLVMModule.export_library: unexpected options {sorted(kwargs)}")
        path = os.fspath(path)
        suffix = os.path.splitext(path)[1].lower()
        if suffix == ".ll":
            with open(path, "w", encoding="utf-8") as f:
                f.write(self._ir)
            return
        obj = self.emit_object()
        if suffix == ".o":
            with open(path, "wb") as f:
                f.write(obj)
            return
        compiler = find_c_compiler(cc)
        with tempfile.TemporaryDirectory(prefix="tvm_export_") as tmp:
            obj_path = os.path.join(tmp, "lib0.o")
            with open(obj_path, "wb") as f:
                f.write(obj)
            cmd = [compiler, "-shared", "-o", os.path.abspath(path), obj_path, *options]
            if self.options.threading == "omp":
                cmd.append("-lgomp")  # parallel loops call GOMP_parallel (see .outline)
            if "darwin" not in self.options.triple:
                cmd.append("-lm")
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"export_library: linking {path!r} failed (exit {proc.returncode}):\n"
                    f"  {' '.join(cmd)}\n{proc.stderr.strip()}"
                )

    def __repr__(self) -> str:
        return (f"<LLVMModule {self.name!r} target={self.options.target_str!r} "
                f"functions={self.function_names}>")
