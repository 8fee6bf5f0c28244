"""The VM executable: bytecode functions, constants and the compiled kernel library.

File format (``Executable.export_library("model.so")``; see ``docs/abi.md``): the kernel
library's shared object, unchanged, followed by the *program blob* and a 16-byte trailer::

    [shared library bytes][program blob][u64 little-endian blob length]["TVMVMEX1"][seal]

so the file is still an ordinary shared library (``dlopen`` ignores bytes past its
segments) and :func:`tvm.runtime.load_module` recognises an executable by the trailer.  The
last 48 bytes are the file's seal (:mod:`tvm.runtime.file_seal`), checked before anything
of the file is read or opened as a library.
The program blob is::

    "TVMVMPRG"  u32 version  u32 n  [n bytes of UTF-8 JSON]  zero padding to 64  [constants]
        [embedded kernel module]

The JSON holds the functions (:mod:`.bytecode`), the constant table (dtype, shape, byte
offset and size of each constant in the raw section), the kernel names the program calls,
the target, free-form ``stats`` and, optionally, ``kernel_info``: per kernel name
``{"source_layers": [...]}``, the model layers it computes (read by the profiler; a reader
that does not know the entry ignores it, so it needs no new version).  GPU kernels are not a shared library but a device
module (host programs plus kernel source, :mod:`tvm.runtime.device_module`): its exported
file travels inside the blob, after the constants, described by the JSON's
``kernel_module`` entry (``format`` = the module's file suffix such as ``clmod``, ``offset``,
``nbytes``, ``device_type``), and the shared-library part is empty; such a program has
version 4, the others version 3 (versions 1 and 2, from before the bytecode's expressions
took the shared format of :mod:`tvm.runtime.int_expr`, are refused with a message to
rebuild).  The shared libraries of external backends (``relax.build(offload=[...])``, e.g.
the C of ``dnnl`` or ``cblas``) travel after that, each described by an entry of the JSON's
``external_modules`` (``backend``, ``format`` = ``so``, ``offset``, ``nbytes``: the library's
sealed file as it was written); such a program has version 5.  On load each is written once
to the content-addressed cache ``$TVM_CACHE_DIR/<backend>`` and loaded from there, and the
libraries it links (libdnnl, libopenblas) must be installed where it runs.  No pickle: a file is read without running its code (except the kernels
themselves, which the shared library is).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np
from tvm.ffi import knobs
from tvm.ffi.dtype import from_numpy_dtype, parse_dtype, to_numpy_dtype
from tvm.ffi.plugin import hookimpl

from ..file_seal import check_seal, sealed_payload_length, write_file, write_sealed

from ..error import ModuleLoadError
from ..module import Module, NativeModule, SharedLibraryModule, _all_imports
from .bytecode import BytecodeError, format_function, validate_function

__all__ = [
    "Executable",
    "load_executable",
    "is_executable_file",
    "split_executable_file",
    "PROGRAM_VERSION",
    "PROGRAM_VERSION_EMBEDDED",
    "PROGRAM_VERSION_EXTERNAL",
    "TRAILER_MAGIC",
    "VMExecutableLoaderPlugin",
]

PROGRAM_MAGIC = b"TVMVMPRG"
TRAILER_MAGIC = b"TVMVMEX1"
PROGRAM_VERSION = 3
#: the version of programs that carry an embedded kernel module (readers accept both)
PROGRAM_VERSION_EMBEDDED = 4
#: the version of programs that carry external backends' shared libraries
PROGRAM_VERSION_EXTERNAL = 5
_READABLE_VERSIONS = (PROGRAM_VERSION, PROGRAM_VERSION_EMBEDDED, PROGRAM_VERSION_EXTERNAL)
#: versions written before expressions took the shared run-time format (tvm.runtime.int_expr)
_OLD_EXPRESSION_VERSIONS = (1, 2)
_SHARED_LIBRARY_SUFFIXES = ("so", "dylib", "dll")
_TRAILER = struct.Struct("<Q8s")
_HEADER = struct.Struct("<8sII")
_ALIGN = 64


class Executable(Module):
    """A compiled Relax program for the VM: functions, constants, kernel library.

    ``program`` is the JSON-able description (functions, constant table, ...);
    ``constants`` the constant tensors as numpy arrays; ``kernel_lib`` the runtime module
    with the kernels (None when the program calls none).  Run it with
    ``tvm.runtime.vm.VirtualMachine(ex, device)``.
    """

    type_key = "vm_executable"

    def __init__(
        self,
        program: dict[str, Any],
        constants: Sequence[np.ndarray] = (),
        kernel_lib: Module | None = None,
    ) -> None:
        super().__init__()
        self.constants: list[np.ndarray] = [np.asarray(c) for c in constants]
        if not isinstance(program, dict):
            raise ModuleLoadError(f"a VM program must be a dict, got {type(program).__name__}")
        program = dict(program)
        if "constants" not in program:
            program["constants"] = [
                {"dtype": from_numpy_dtype(c.dtype), "shape": list(c.shape)}
                for c in self.constants
            ]
        self.program = _validate_program(program, len(constants))
        for i, (c, meta) in enumerate(zip(self.constants, self.program["constants"])):
            if from_numpy_dtype(c.dtype) != meta["dtype"] or list(c.shape) != meta["shape"]:
                raise ModuleLoadError(
                    f"Executable: constant {i} is {c.dtype}{list(c.shape)}, the program "
                    f"declares {meta['dtype']}{meta['shape']}"
                )
        self.kernel_lib = kernel_lib
        if kernel_lib is not None:
            self.import_module(kernel_lib)
        self._func_index = {f["name"]: i for i, f in enumerate(self.program["functions"])}

    # ------------------------------------------------------------------ inspection

    @property
    def vm_function_names(self) -> list[str]:
        """Names of the bytecode functions."""
        return [f["name"] for f in self.program["functions"]]

    def vm_function(self, name: str) -> dict[str, Any]:
        """The bytecode record of function ``name``."""
        index = self._func_index.get(name)
        if index is None:
            raise KeyError(
                f"the executable has no VM function {name!r}; it has: "
                f"{', '.join(self.vm_function_names)}"
            )
        return self.program["functions"][index]

    @property
    def target(self) -> str:
        return str(self.program.get("target", ""))

    @property
    def kernel_device_type(self) -> int | None:
        """The DLPack device type the kernels run on (``1`` for CPU kernels, the device
        module's type for GPU kernels), or None when the program calls no kernel."""
        lib = self.kernel_lib
        if lib is None or not lib.function_names:
            return None
        device_type = getattr(lib, "device_type", None)
        if isinstance(device_type, int) and device_type > 0:
            return device_type
        if isinstance(lib, NativeModule):
            return 1
        return None

    def kernel_source_layers(self, name: str) -> tuple[str, ...]:
        """The model layers kernel ``name`` computes (from the frontend's spans, carried
        through fusion), or ``()`` when the program does not record any."""
        entry = (self.program.get("kernel_info") or {}).get(name) or {}
        return tuple(entry.get("source_layers") or ())

    @property
    def stats(self) -> dict[str, Any]:
        """Compile-time statistics recorded by the compiler (e.g. the memory plan)."""
        return dict(self.program.get("stats") or {})

    def as_text(self) -> str:
        """The bytecode as text (one ``@function`` block per function)."""
        parts = [format_function(f) for f in self.program["functions"]]
        if self.constants:
            consts = [
                f"c[{i}]: {m['dtype']}{tuple(m['shape'])}"
                for i, m in enumerate(self.program["constants"])
            ]
            parts.append("# constants: " + ", ".join(consts))
        return "\n\n".join(parts) + "\n"

    def as_json(self, indent: int | None = 2) -> str:
        """The program (without the constants' data) as JSON."""
        return json.dumps(self.program, indent=indent)

    def __repr__(self) -> str:
        nk = len(self.kernel_lib.function_names) if self.kernel_lib is not None else 0
        return (
            f"<tvm.runtime.vm.Executable functions={self.vm_function_names} "
            f"constants={len(self.constants)} kernels={nk}>"
        )

    # ------------------------------------------------------------------ serialisation

    def program_bytes(self, kernel_module: dict[str, Any] | None = None,
                      external_modules: Sequence[tuple[str, bytes]] = ()) -> bytes:
        """The program blob (JSON header, raw constants and, when ``kernel_module`` is given
        as ``{"format", "data", "device_type"}``, that exported module, then the sealed
        library files of ``external_modules``, ``(backend, bytes)`` pairs), see the module
        docstring."""
        program = dict(self.program)
        table, raw, offset = [], [], 0
        for c in self.constants:
            data = np.asarray(c, order="C").tobytes()
            table.append({"dtype": from_numpy_dtype(c.dtype), "shape": list(c.shape),
                          "offset": offset, "nbytes": len(data)})
            pad = (-len(data)) % _ALIGN
            raw.append(data + b"\0" * pad)
            offset += len(data) + pad
        program["constants"] = table
        version = PROGRAM_VERSION
        if kernel_module is not None:
            data = kernel_module["data"]
            program["kernel_module"] = {"format": kernel_module["format"], "offset": offset,
                                        "nbytes": len(data),
                                        "device_type": kernel_module.get("device_type")}
            pad = (-len(data)) % _ALIGN
            raw.append(data + b"\0" * pad)
            offset += len(data) + pad
            version = PROGRAM_VERSION_EMBEDDED
        if external_modules:
            program["external_modules"] = []
            for backend, data in external_modules:
                program["external_modules"].append(
                    {"backend": backend, "format": "so", "offset": offset, "nbytes": len(data)})
                pad = (-len(data)) % _ALIGN
                raw.append(data + b"\0" * pad)
                offset += len(data) + pad
            version = PROGRAM_VERSION_EXTERNAL
        header = json.dumps(program, separators=(",", ":")).encode("utf-8")
        head = _HEADER.pack(PROGRAM_MAGIC, version, len(header)) + header
        head += b"\0" * ((-len(head)) % _ALIGN)
        return head + b"".join(raw)

    @classmethod
    def from_program_bytes(cls, blob: bytes, kernel_lib: Module | None = None,
                           origin: str = "program") -> Executable:
        """Rebuild an executable from :meth:`program_bytes` and its kernel library."""
        if len(blob) < _HEADER.size:
            raise ModuleLoadError(f"{origin}: the VM program is truncated")
        magic, version, n = _HEADER.unpack_from(blob)
        if magic != PROGRAM_MAGIC:
            raise ModuleLoadError(f"{origin}: not a VM program (bad magic {magic!r})")
        if version in _OLD_EXPRESSION_VERSIONS:
            raise ModuleLoadError(
                f"{origin}: VM program version {version} was written by an older tvm-runtime "
                "whose shape expressions had their own format (this runtime reads versions "
                f"{', '.join(map(str, _READABLE_VERSIONS))}, with tvm.runtime.int_expr "
                "expressions); rebuild the executable with relax.build"
            )
        if version not in _READABLE_VERSIONS:
            raise ModuleLoadError(
                f"{origin}: VM program version {version}; this runtime reads versions "
                f"{', '.join(map(str, _READABLE_VERSIONS))} (rebuild the executable or "
                "upgrade tvm-runtime)"
            )
        start = _HEADER.size
        try:
            program = json.loads(blob[start:start + n].decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ModuleLoadError(f"{origin}: the VM program JSON is invalid: {err}") from err
        if not isinstance(program, dict):
            raise ModuleLoadError(f"{origin}: the VM program must be a JSON object")
        raw_start = start + n + ((-(start + n)) % _ALIGN)
        constants = []
        metas = program.get("constants") or []
        if not isinstance(metas, list):
            raise ModuleLoadError(f"{origin}: the VM program's 'constants' must be a list, got "
                                  f"{type(metas).__name__}")
        for i, meta in enumerate(metas):
            try:
                dtype = to_numpy_dtype(meta["dtype"])
                shape = tuple(int(d) for d in meta["shape"])
                lo = raw_start + int(meta["offset"])
                hi = lo + int(meta["nbytes"])
            except (KeyError, TypeError, ValueError) as err:
                raise ModuleLoadError(f"{origin}: constant {i} has a bad entry {meta!r}") from err
            if (lo < raw_start or hi > len(blob) or any(d < 0 for d in shape)
                    or int(meta["nbytes"]) != int(np.prod(shape)) * dtype.itemsize):
                raise ModuleLoadError(f"{origin}: constant {i} lies outside the program data")
            constants.append(np.frombuffer(blob[lo:hi], dtype=dtype).reshape(shape).copy())
        embedded = program.pop("kernel_module", None)
        if embedded is not None:
            module = _load_embedded_module(embedded, blob, raw_start, origin)
            if kernel_lib is None:
                kernel_lib = module
            else:
                kernel_lib.import_module(module)
        external = program.pop("external_modules", None) or []
        if not isinstance(external, list):
            raise ModuleLoadError(f"{origin}: the VM program's 'external_modules' must be a "
                                  f"list, got {type(external).__name__}")
        for entry in external:
            if kernel_lib is None:
                kernel_lib = Module("external")
            kernel_lib.import_module(_load_external_module(entry, blob, raw_start, origin))
        return cls(program, constants, kernel_lib)

    def export_library(self, path: str | os.PathLike[str], cc: str | None = None,
                       options: Sequence[str] = (), **kwargs: Any) -> None:
        """Write one file: the kernel library plus the program.

        The result loads back with :func:`tvm.runtime.load_module` (or
        :func:`load_executable`) into an equal executable.  ``cc`` (the C compiler) and
        ``options`` (extra linker flags) go to the kernel library's ``export_library`` when
        it links a shared library (for a cross-compiled library the default is the matching
        cross compiler, see the target's module); other ``kwargs`` go to it as they are.
        With no kernels there is nothing to link and ``cc``/``options`` are unused.
        """
        path = os.fspath(path)
        external = _external_library_files(self.kernel_lib)
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"export_library: directory {parent!r} does not exist")
        suffix = os.path.splitext(path)[1] or ".so"
        lib = self.kernel_lib
        link = {k: v for k, v in (("cc", cc), ("options", tuple(options))) if v}
        with tempfile.TemporaryDirectory(prefix="tvm_vm_export_") as tmp:
            lib_bytes = b""
            embedded = None
            device_suffix = getattr(lib, "file_suffix", None)
            if lib is not None and lib.function_names and device_suffix and \
                    device_suffix not in _SHARED_LIBRARY_SUFFIXES:
                # a device module (GPU kernels + host programs): embedded in the blob
                lib_path = os.path.join(tmp, "kernels." + device_suffix)
                lib.export_library(lib_path, **link, **kwargs)
                with open(lib_path, "rb") as f:
                    embedded = {"format": device_suffix, "data": f.read(),
                                "device_type": getattr(lib, "device_type", None)}
            elif lib is not None and lib.function_names:
                lib_path = os.path.join(tmp, "kernels" + suffix)
                lib.export_library(lib_path, **link, **kwargs)
                with open(lib_path, "rb") as f:
                    lib_bytes = f.read()
            elif kwargs:
                raise TypeError(f"export_library: unexpected options {sorted(kwargs)}")
            blob = self.program_bytes(embedded, external)
        write_sealed(path, [lib_bytes, blob, _TRAILER.pack(len(blob), TRAILER_MAGIC)])


def _external_library_files(lib: Module | None) -> list[tuple[str, bytes]]:
    """``(backend, sealed library file)`` of each external backend's module under ``lib``."""
    out = []
    for m in ([lib, *_all_imports(lib)] if lib is not None else []):
        backend = getattr(m, "external_backend", None)
        if not backend:
            continue
        if not isinstance(m, SharedLibraryModule):
            raise TypeError(f"export_library: the {backend!r} backend's module is a "
                            f"{type(m).__name__}, not a shared library, and cannot be written "
                            "into an exported executable")
        check_seal(m.path, "export_library")
        with open(m.path, "rb") as f:
            out.append((str(backend), f.read()))
    return out


def _load_external_module(entry: Any, blob: bytes, raw_start: int, origin: str) -> Module:
    """An external backend's library stored in the program blob, loaded from the
    content-addressed cache (written there when missing or different)."""
    try:
        backend = str(entry["backend"])
        fmt = str(entry["format"])
        lo = raw_start + int(entry["offset"])
        hi = lo + int(entry["nbytes"])
    except (KeyError, TypeError, ValueError) as err:
        raise ModuleLoadError(f"{origin}: bad external_modules entry {entry!r}") from err
    if fmt != "so" or not backend.isidentifier() or lo < raw_start or hi > len(blob) or lo > hi:
        raise ModuleLoadError(f"{origin}: the external module {entry!r} lies outside the "
                              "program data, or has a bad backend name or format")
    data = blob[lo:hi]
    folder = knobs.cache_dir(backend)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(data).hexdigest()[:40]}.so"
    if not path.is_file() or path.read_bytes() != data:  # missing, or changed since
        write_file(path, [data], 0o755)
    try:
        module = SharedLibraryModule(path)  # the seal written with it is checked
    except ModuleLoadError as err:
        raise ModuleLoadError(f"{origin}: cannot load the {backend!r} backend's library "
                              f"(are the libraries it links installed here?): {err}") from err
    module.external_backend = backend  # type: ignore[attr-defined]
    return module


def _load_embedded_module(entry: Any, blob: bytes, raw_start: int, origin: str) -> Module:
    """The kernel module stored in the program blob (through the loader of its format)."""
    from ..device import _PROVIDER
    from ..module import load_module

    try:
        fmt = str(entry["format"])
        lo = raw_start + int(entry["offset"])
        hi = lo + int(entry["nbytes"])
    except (KeyError, TypeError, ValueError) as err:
        raise ModuleLoadError(f"{origin}: bad kernel_module entry {entry!r}") from err
    if not fmt.isidentifier() or hi > len(blob) or lo > hi:
        raise ModuleLoadError(f"{origin}: the embedded kernel module {entry!r} lies outside "
                              "the program data or has a bad format name")
    with tempfile.TemporaryDirectory(prefix="tvm_vm_load_") as tmp:
        lib_path = os.path.join(tmp, "kernels." + fmt)
        with open(lib_path, "wb") as f:
            f.write(blob[lo:hi])
        try:
            return load_module(lib_path, fmt=fmt)
        except ModuleLoadError as err:
            provider = _PROVIDER.get(entry.get("device_type") or 0)
            hint = f" (install {provider})" if provider else ""
            raise ModuleLoadError(f"{origin}: cannot load the executable's {fmt!r} kernel "
                                  f"module{hint}: {err}") from err


def _validate_program(program: Any, nconst: int) -> dict[str, Any]:
    if not isinstance(program, dict):
        raise ModuleLoadError(f"a VM program must be a dict, got {type(program).__name__}")
    funcs = program.get("functions")
    if not isinstance(funcs, list):
        raise ModuleLoadError("the VM program has no 'functions' list")
    consts = program.get("constants")
    if not isinstance(consts, list):
        raise ModuleLoadError("the VM program's 'constants' must be a list")
    if len(consts) != nconst:
        raise ModuleLoadError(
            f"the VM program declares {len(consts)} constants but {nconst} were given"
        )
    for i, meta in enumerate(consts):
        if not isinstance(meta, dict) or "dtype" not in meta or "shape" not in meta:
            raise ModuleLoadError(f"the VM program's constant {i} has no dtype/shape")
        try:
            parse_dtype(meta["dtype"])
        except (TypeError, ValueError) as err:
            raise ModuleLoadError(f"the VM program's constant {i}: {err}") from err
    info = program.get("kernel_info")
    if info is not None:
        if not isinstance(info, dict):
            raise ModuleLoadError("the VM program's 'kernel_info' must be an object")
        for name, entry in info.items():
            layers = entry.get("source_layers", []) if isinstance(entry, dict) else None
            if not isinstance(layers, list) or not all(isinstance(n, str) for n in layers):
                raise ModuleLoadError(
                    f"the VM program's kernel_info[{name!r}] must be an object whose "
                    f"'source_layers' is a list of strings, got {entry!r}"
                )
    names = set()
    for fn in funcs:
        try:
            validate_function(fn, nconst)
        except BytecodeError as err:
            raise ModuleLoadError(str(err)) from err
        if fn["name"] in names:
            raise ModuleLoadError(f"the VM program defines function {fn['name']!r} twice")
        names.add(fn["name"])
    return program


# ---------------------------------------------------------------------------- loading


def _read_trailer(path: str, end: int | None = None) -> tuple[int, int] | None:
    """``(library length, blob length)`` of an executable file whose content (before its
    seal) ends at ``end`` (default: where the seal says, else the file's end), or None if
    it is not one."""
    size = end if end is not None else (sealed_payload_length(path) or os.path.getsize(path))
    if size < _TRAILER.size:
        return None
    with open(path, "rb") as f:
        f.seek(size - _TRAILER.size)
        blob_len, magic = _TRAILER.unpack(f.read(_TRAILER.size))
    if magic != TRAILER_MAGIC:
        return None
    if blob_len > size - _TRAILER.size:
        raise ModuleLoadError(f"{path!r}: the VM program trailer is corrupt (length {blob_len})")
    return size - _TRAILER.size - blob_len, blob_len


def split_executable_file(path: str | os.PathLike[str], end: int | None = None
                          ) -> tuple[int, bytes] | None:
    """``(length of the shared-library part, program blob)`` of an exported executable, or
    None when ``path`` is not one (for loaders that run the library part elsewhere)."""
    path = os.fspath(path)
    found = _read_trailer(path, end)
    if found is None:
        return None
    lib_len, blob_len = found
    with open(path, "rb") as f:
        f.seek(lib_len)
        return lib_len, f.read(blob_len)


def is_executable_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an exported VM executable."""
    return _read_trailer(os.fspath(path)) is not None


def load_executable(path: str | os.PathLike[str], trusted: bool | None = None) -> Executable:
    """Load an exported executable (the kernels are ``dlopen``-ed from the same file).

    Its seal is checked first (see :mod:`tvm.runtime.file_seal`) unless ``trusted``
    (default: what ``load_module(..., trusted=...)`` was called with)."""
    from ..module import _TRUSTED

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_executable: no such file: {path!r}")
    trusted = _TRUSTED.get() if trusted is None else trusted
    end = None if trusted else check_seal(path, "load_executable")
    found = split_executable_file(path, end)
    if found is None:
        raise ModuleLoadError(
            f"{path!r} is not a VM executable (no {TRAILER_MAGIC.decode()} trailer); export "
            "one with Executable.export_library"
        )
    lib_len, blob = found
    kernel_lib = SharedLibraryModule(path, trusted=True) if lib_len else None  # checked
    return Executable.from_program_bytes(blob, kernel_lib, origin=repr(path))


def _load_shared_library(path: str) -> Module:
    if is_executable_file(path):
        return load_executable(path)
    return SharedLibraryModule(path)


class VMExecutableLoaderPlugin:
    """Built-in loader: shared libraries that carry a VM program load as an Executable."""

    @staticmethod
    @hookimpl
    def tvm_runtime_module_loader(fmt: str) -> Any:
        if fmt in ("so", "dylib", "dll"):
            return _load_shared_library
        return None
