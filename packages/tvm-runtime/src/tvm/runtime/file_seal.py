"""Sealed files: what tvm writes, it can tell apart from what it did not write.

Every shared library and VM executable tvm exports ends with a 48-byte *seal*::

    [payload bytes][32-byte SHA-256 of the payload][u64 little-endian payload length]["TVMSEAL1"]

``dlopen`` ignores bytes past an ELF/Mach-O file's segments, so a sealed library is still an
ordinary library.  Loaders check the seal *before* ``dlopen`` (which runs a library's
constructors): a truncated, extended or corrupted file, or one tvm did not write, is refused
with :class:`~tvm.runtime.error.ModuleLoadError` instead of crashing the process or running
its code.  A library built some other way that you trust is sealed with :func:`seal_file`
(or loaded with ``load_module(path, trusted=True)``).  The seal is an integrity check, not a
signature: it stops accidents and files from elsewhere, not someone who can write a valid
seal; load files only from places you trust (docs/abi.md).

Files are written with :func:`write_file`: into a new temporary file created with
``O_EXCL`` next to the destination (never through a name someone else made, so a planted
symlink is not followed), flushed, then renamed over the destination.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from collections.abc import Iterable

from .error import ModuleLoadError

__all__ = ["SEAL_MAGIC", "SEAL_SIZE", "write_file", "write_sealed", "seal_file", "check_seal",
           "sealed_payload_length", "seal_bytes"]

SEAL_MAGIC = b"TVMSEAL1"
_SEAL = struct.Struct("<32sQ8s")
#: bytes the seal adds to a file
SEAL_SIZE = _SEAL.size


def write_file(path: str | os.PathLike[str], chunks: Iterable[bytes], mode: int = 0o644) -> None:
    """Write ``chunks`` to ``path`` atomically: a fresh ``O_EXCL`` temporary file in the same
    directory, renamed over ``path`` once complete (``mode`` less the umask)."""
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"write: directory {parent!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, mode & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _seal_of(digest: bytes, length: int) -> bytes:
    return _SEAL.pack(digest, length, SEAL_MAGIC)


def write_sealed(path: str | os.PathLike[str], chunks: Iterable[bytes], mode: int = 0o755
                 ) -> None:
    """Write ``chunks`` followed by their seal, atomically (see :func:`write_file`)."""
    h = hashlib.sha256()
    length = 0
    data = []
    for chunk in chunks:
        h.update(chunk)
        length += len(chunk)
        data.append(chunk)
    write_file(path, [*data, _seal_of(h.digest(), length)], mode)


def seal_bytes(data: bytes) -> bytes:
    """``data`` with a seal appended, or ``data`` itself when its own seal already checks
    (the in-memory form of :func:`seal_file`, for bytes sent elsewhere to be loaded)."""
    if len(data) >= SEAL_SIZE:
        digest, length, magic = _SEAL.unpack(data[-SEAL_SIZE:])
        if (magic == SEAL_MAGIC and length == len(data) - SEAL_SIZE
                and hashlib.sha256(memoryview(data)[:length]).digest() == digest):
            return data
    return bytes(data) + _seal_of(hashlib.sha256(data).digest(), len(data))


def sealed_payload_length(path: str | os.PathLike[str]) -> int | None:
    """The payload length a file's seal records, or None when it has none (not verified)."""
    path = os.fspath(path)
    size = os.path.getsize(path)
    if size < SEAL_SIZE:
        return None
    with open(path, "rb") as f:
        f.seek(size - SEAL_SIZE)
        _, length, magic = _SEAL.unpack(f.read(SEAL_SIZE))
    return length if magic == SEAL_MAGIC and length == size - SEAL_SIZE else None


def check_seal(path: str | os.PathLike[str], what: str = "load_module") -> int:
    """The payload length of a sealed file whose checksum matches; ModuleLoadError otherwise
    (no seal, a length that does not match the file, a checksum that does not)."""
    path = os.fspath(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        if size >= SEAL_SIZE:
            f.seek(size - SEAL_SIZE)
            digest, length, magic = _SEAL.unpack(f.read(SEAL_SIZE))
        else:
            magic = b""
        if magic != SEAL_MAGIC:
            raise ModuleLoadError(
                f"{what}: {path!r} was not written by tvm (it has no tvm seal; {size} bytes): "
                "refusing to load it, since loading a library runs its code. Export it with "
                "export_library, or if you trust the file, seal it with "
                "tvm.runtime.seal_file(path) or pass trusted=True")
        if length != size - SEAL_SIZE:
            raise ModuleLoadError(
                f"{what}: {path!r} is truncated or extended: its seal records {length} bytes "
                f"of content and the file holds {size - SEAL_SIZE}")
        f.seek(0)
        h = hashlib.sha256()
        left = length
        while left:
            block = f.read(min(left, 1 << 20))
            if not block:
                break
            h.update(block)
            left -= len(block)
    if h.digest() != digest:
        raise ModuleLoadError(f"{what}: {path!r} is corrupt: its content does not match the "
                              "checksum in its seal")
    return length


def seal_file(path: str | os.PathLike[str]) -> None:
    """Seal a file in place (a library built outside tvm that you trust); a file whose seal
    already checks is left as it is."""
    path = os.fspath(path)
    try:
        check_seal(path)
        return
    except ModuleLoadError:
        pass
    with open(path, "rb") as f:
        data = f.read()
    mode = os.stat(path).st_mode & 0o777
    write_sealed(path, [data], mode)
