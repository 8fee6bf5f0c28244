"""``LLVMModule``: a runtime module compiled by LLVM and run through MCJIT.

The module's LLVM IR — one module, or the parts a big one is generated in (see
:func:`.build.codegen_parts`) — is optimised and compiled to object code
(:func:`.object_code.compile_parts`, the parts in parallel processes), and MCJIT loads the
objects into this process; kernels are found by symbol address and wrapped by
:func:`tvm.runtime.module_from_symbols` machinery (``NativeModule``), which also reads
``__tvm_module_meta`` and fills the runtime slots.  ``export_library("x.so")`` compiles
position-independent objects with the same target machine and links them with the system
C compiler, so :func:`tvm.runtime.load_module` reads it back without LLVM.

A module for another architecture (``-mtriple=aarch64-linux-gnu``) is not loaded: its
functions are listed from the metadata in its IR (:func:`meta_from_ir`) as
:class:`CrossCompiledFunction` objects that refuse calls, and ``export_library`` links it
with the triple's GNU cross compiler (:func:`find_c_compiler`).  Under
``-threading=omp`` (parallel loops through libgomp) libgomp is loaded into the process
before MCJIT resolves symbols, and exported libraries link ``-lgomp``.

Sources: ``get_source("ll")`` (optimised LLVM IR, the default), ``get_source("ll-raw")``
(as generated, before optimisation) and ``get_source("asm")`` (assembly); of a module in
parts, the parts linked into one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

import llvmlite.binding as llvm
from tvm.ffi import knobs
from tvm.runtime.file_seal import write_file, write_sealed
from tvm.runtime.host import missing_features
from tvm.runtime.module import META_SYMBOL, Module, NativeModule

from .llvm_target import (LLVMTargetOptions, compile_jobs, create_target_machine, load_libgomp,
                          machine_spec)
from .object_code import CompiledPart, compile_parts

__all__ = ["LLVMModule", "CrossCompiledFunction", "find_c_compiler", "cross_compiler_names",
           "meta_from_ir"]


@functools.lru_cache(maxsize=None)
def _load_libm() -> None:
    """Make libm's symbols visible to MCJIT (kernels call tanhf, erff, ...)."""
    name = ctypes.util.find_library("m")
    if name:
        try:
            llvm.load_library_permanently(name)
        except RuntimeError:  # already part of the process on most systems
            pass


#: Debian/Ubuntu packages of the cross toolchain of an architecture (for error messages)
_CROSS_PACKAGES = {
    "aarch64": "gcc-aarch64-linux-gnu libc6-dev-arm64-cross",
    "riscv64": "gcc-riscv64-linux-gnu libc6-dev-riscv64-cross",
    "arm": "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross",
}


def cross_compiler_names(triple: str) -> list[str]:
    """The conventional names of a GNU cross compiler for ``triple``, most specific first
    (``aarch64-unknown-linux-gnu`` -> ``aarch64-unknown-linux-gnu-gcc``,
    ``aarch64-linux-gnu-gcc``)."""
    parts = triple.split("-")
    arch = parts[0]
    env = parts[-1] if len(parts) >= 3 else "gnu"
    if not env.startswith(("gnu", "musl")):
        env = "gnu"
    if arch.startswith(("armv", "thumbv")):
        arch, env = "arm", env if env.startswith("gnueabi") else "gnueabihf"
    names = [f"{triple}-gcc", f"{arch}-linux-{env}-gcc", f"{arch}-linux-gnu-gcc"]
    return list(dict.fromkeys(names))


def _cross_knob(arch: str) -> str | None:
    """``TVM_CROSS_CC`` for ``arch``: its ``arch=compiler`` entry, or the one plain value."""
    text = knobs.CROSS_CC.get()
    if not text:
        return None
    entries = [e.strip() for e in text.split(",") if e.strip()]
    if all("=" not in e for e in entries) and len(entries) == 1:
        return entries[0]
    for entry in entries:
        key, _, value = entry.partition("=")
        if key.strip() == arch:
            return value.strip()
    return None


def find_c_compiler(cc: str | None = None, triple: str | None = None) -> str:
    """The C compiler that links shared libraries for ``triple`` (None: this machine).

    For this machine: ``cc``, ``$CC``, or cc/gcc/clang.  For another architecture (a cross
    target): ``cc``, ``$TVM_CROSS_CC`` (one compiler, or ``arch=compiler`` pairs), or the
    GNU cross compiler named after the triple (``aarch64-linux-gnu-gcc``,
    ``riscv64-linux-gnu-gcc``); the host compiler is never used for a foreign triple.
    """
    from .host_cpu import host_triple

    arch = triple.split("-")[0] if triple else None
    cross = arch is not None and arch != host_triple().split("-")[0]
    # an explicit choice (the argument, the cross knob) is used or refused, never skipped
    explicit = [c for c in (cc, _cross_knob(arch) if cross else None) if c]
    for candidate in explicit[:1]:
        path = shutil.which(candidate)
        if path is None:
            raise RuntimeError(f"export_library: the C compiler {candidate!r} was not found "
                               "(neither a path nor a command on PATH)")
        return path
    fallbacks = cross_compiler_names(triple) if cross else [knobs.CC.get(), "cc", "gcc", "clang"]
    for candidate in fallbacks:
        path = shutil.which(candidate) if candidate else None
        if path:
            return path
    if cross:
        names = ", ".join(cross_compiler_names(triple))
        pkgs = _CROSS_PACKAGES.get(arch, f"gcc-{arch}-linux-gnu")
        raise RuntimeError(
            f"export_library needs a cross C compiler to link a shared library for {triple} "
            f"(the module was cross-compiled), but none of {names} was found on PATH; install "
            f"one (Debian/Ubuntu: apt-get install {pkgs}), set {knobs.CROSS_CC.name}="
            f"{arch}=/path/to/{arch}-linux-gnu-gcc, or pass cc='/path/to/compiler'"
        )
    raise RuntimeError(
        "export_library needs a C compiler to link the shared library, but none of $CC, cc, "
        "gcc or clang was found on PATH; install one (e.g. apt-get install gcc) or pass "
        "cc='/path/to/compiler'"
    )


_META_RE = re.compile(r'^@"?' + re.escape(META_SYMBOL) + r'"?\s*=[^\n]*?c"((?:[^"\\]|\\.)*)"',
                      re.M)


def meta_from_ir(ir_text: str) -> dict[str, Any]:
    """The ``__tvm_module_meta`` JSON of a module, read from its LLVM IR text (what a
    cross-compiled module, which is never loaded here, knows of its functions)."""
    found = _META_RE.search(ir_text)
    if found is None:
        raise RuntimeError(f"llvm module IR defines no {META_SYMBOL} string")
    raw = re.sub(rb"\\([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]),
                 found.group(1).encode("latin-1"))
    return json.loads(raw.rstrip(b"\0").decode("utf-8"))


class CrossCompiledFunction:
    """A kernel of a module built for another architecture: listed (name, parameters) but
    not callable here; calling it says how to run it."""

    __slots__ = ("name", "meta", "triple")

    def __init__(self, meta: dict[str, Any], triple: str) -> None:
        self.name: str = meta["name"]
        self.meta = meta
        self.triple = triple

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from .host_cpu import host_triple

        raise RuntimeError(
            f"kernel {self.name!r} was cross-compiled for {self.triple} and cannot run on this "
            f"{host_triple()} machine: export_library(path) and run the library on a "
            f"{self.triple.split('-')[0]} machine (or under qemu-user)"
        )

    def __repr__(self) -> str:
        return f"<CrossCompiledFunction {self.name!r} for {self.triple}>"


class LLVMModule(NativeModule):
    """Kernels compiled from LLVM IR (one module's text, or the texts of its parts: part 0
    defines the runtime slots and the metadata); see the module docstring."""

    def __init__(self, ir_text: str | list[str], options: LLVMTargetOptions,
                 name: str = "tvm_module") -> None:
        _load_libm()
        if options.threading == "omp" and options.is_host and not load_libgomp():
            raise RuntimeError(
                f"llvm module {name!r} was generated for -threading=omp but libgomp cannot be "
                "loaded into this process; build with -threading=pool"
            )
        self.options = options
        self.name = name
        self._raw_parts = [ir_text] if isinstance(ir_text, str) else list(ir_text)
        self._parts: list[CompiledPart] = compile_parts(
            self._raw_parts, machine_spec(options), name, jobs=compile_jobs())
        self._linked: str | None = None
        if not options.is_host:
            # Cross-compiled code cannot run here: its functions are listed (from the
            # module's metadata) but raise when called; sources and export work.
            self._engine = None
            Module.__init__(self, "llvm")
            self._lookup_symbol = lambda symbol: None
            self._keepalive = None
            self.origin = f"llvm module {name!r} (cross-compiled for {options.triple})"
            self.meta = meta_from_ir(self._parts[0].ir)
            self.target = str(self.meta.get("target", options.target_str))
            self.slots = []
            for fmeta in self.meta.get("functions", ()):
                self._functions[fmeta["name"]] = CrossCompiledFunction(fmeta, options.triple)
        else:
            empty = llvm.parse_assembly("")
            empty.triple = options.triple
            engine = llvm.create_mcjit_compiler(empty, create_target_machine(options, jit=True))
            for part in self._parts:
                engine.add_object_file(llvm.ObjectFileRef.from_data(part.obj))
            engine.finalize_object()
            self._engine = engine

            def lookup(symbol: str) -> int | None:
                return engine.get_global_value_address(symbol) or None

            # built for a CPU this one is not (to export): loads, but its functions refuse
            super().__init__(lookup, "llvm", keepalive=engine, origin=f"llvm module {name!r}",
                             host_check="call", allow_features=self._unused_missing())

    @property
    def _ir(self) -> str:
        """The optimised IR of the whole module (the parts linked into one)."""
        if self._linked is None:
            self._linked = str(self._linked_module())
        return self._linked

    def _linked_module(self) -> llvm.ModuleRef:
        """The optimised parts linked into one LLVM module."""
        return self._link([p.ir for p in self._parts])

    def _link(self, texts: list[str]) -> llvm.ModuleRef:
        mod = llvm.parse_assembly(texts[0])
        for text in texts[1:]:
            mod.link_in(llvm.parse_assembly(text))
        mod.name = self.name
        return mod

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
        with_tm, without_tm = create_target_machine(self.options), create_target_machine(without)
        same = all(without_tm.emit_assembly(llvm.parse_assembly(p.ir)) ==
                   with_tm.emit_assembly(llvm.parse_assembly(p.ir)) for p in self._parts)
        return missing if same else []

    @property
    def source_formats(self) -> list[str]:
        """``ll`` (optimised LLVM IR), ``ll-raw`` (before optimisation), ``asm`` (made when
        first asked for)."""
        return ["ll", "ll-raw", "asm"]

    def get_source(self, fmt: str = "") -> str:
        """``"ll"`` (default), ``"ll-raw"`` or ``"asm"``."""
        fmt = fmt or "ll"
        if fmt not in self._sources:
            if fmt == "ll":
                self._sources["ll"] = self._ir
            elif fmt == "ll-raw":
                self._sources["ll-raw"] = self._raw_ir()
            elif fmt == "asm":
                self._sources["asm"] = create_target_machine(self.options).emit_assembly(
                    self._linked_module())
        return super().get_source(fmt)

    def _raw_ir(self) -> str:
        if len(self._raw_parts) == 1:
            return self._raw_parts[0]
        return str(self._link(self._raw_parts))

    def emit_object(self) -> bytes:
        """Position-independent object code of the module (its parts linked into one)."""
        tm = create_target_machine(self.options, pic=True)
        return tm.emit_object(self._linked_module())

    def _pic_objects(self) -> list[bytes]:
        """Position-independent object code of each part (compiled in parallel)."""
        return [p.obj for p in compile_parts([p.ir for p in self._parts],
                                             machine_spec(self.options), self.name, pic=True,
                                             optimize=False, jobs=compile_jobs())]

    def link_info(self, cc: str | None = None) -> dict[str, Any]:
        """How C code linking this module's object (``export_library("x.o")``) is built:
        ``{"cc": the C compiler for the module's triple (cross compiler included),
        "libs": the libraries the kernels need, e.g. ["-lgomp", "-lm"], "triple"}``.
        The AOT package of ``relax.build(..., exec_mode="aot")`` uses it."""
        libs = ["-lgomp"] if self.options.threading == "omp" else []
        if "darwin" not in self.options.triple:
            libs.append("-lm")
        return {"cc": find_c_compiler(cc, self.options.triple), "libs": libs,
                "triple": self.options.triple}

    def export_library(self, path: str | os.PathLike[str], cc: str | None = None,
                       options: tuple[str, ...] = (), **kwargs: Any) -> None:
        """Write the module as a shared library (``.so``/``.dylib``), object (``.o``) or IR
        (``.ll``).  ``cc`` overrides the linker; ``options`` are extra linker flags."""
        if kwargs:
            raise TypeError(f"LLVMModule.export_library: unexpected options {sorted(kwargs)}")
        path = os.fspath(path)
        suffix = os.path.splitext(path)[1].lower()
        if suffix == ".ll":
            write_file(path, [self._ir.encode("utf-8")])
            return
        if suffix == ".o":
            write_file(path, [self.emit_object()])
            return
        compiler = find_c_compiler(cc, self.options.triple)
        with tempfile.TemporaryDirectory(prefix="tvm_export_") as tmp:
            obj_paths = []
            for i, obj in enumerate(self._pic_objects()):
                obj_paths.append(os.path.join(tmp, f"lib{i}.o"))
                with open(obj_paths[-1], "wb") as f:
                    f.write(obj)
            lib_path = os.path.join(tmp, "lib" + (suffix or ".so"))
            cmd = [compiler, "-shared", "-o", lib_path, *obj_paths, *options]
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
            with open(lib_path, "rb") as f:
                write_sealed(path, [f.read()])  # see tvm.runtime.file_seal

    def __repr__(self) -> str:
        return (f"<LLVMModule {self.name!r} target={self.options.target_str!r} "
                f"functions={self.function_names}>")
