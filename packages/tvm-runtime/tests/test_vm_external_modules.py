"""External backends' libraries inside an executable's program blob: what a reader refuses.

The round trip with real libraries (oneDNN, cblas) is tested by tvm-contrib-dnnl and
tvm-contrib-cblas; here the blob is written by hand."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from tvm.runtime.error import ModuleLoadError
from tvm.runtime.vm import Executable
from tvm.runtime.vm.executable import PROGRAM_VERSION_EXTERNAL

_HEADER = struct.Struct("<8sII")


def _program():
    return {"functions": [{"name": "main", "params": ["x"], "num_regs": 1, "heap_size": 0,
                           "heap_names": [], "code": [{"op": "ret", "value": ["reg", 0]}]}],
            "target": "llvm"}


def _exe():
    return Executable(_program(), [np.arange(3, dtype="float32")], None)


def _with_entries(blob: bytes, entries) -> bytes:
    """``blob`` with its JSON's external_modules replaced (the raw data left as it is)."""
    magic, version, n = _HEADER.unpack_from(blob)
    program = json.loads(blob[_HEADER.size:_HEADER.size + n])
    program["external_modules"] = entries
    header = json.dumps(program).encode()
    head = _HEADER.pack(magic, version, len(header)) + header
    head += b"\0" * ((-len(head)) % 64)
    old_raw = _HEADER.size + n + ((-(_HEADER.size + n)) % 64)
    return head + blob[old_raw:]


def test_the_blob_records_each_library_after_the_constants():
    blob = _exe().program_bytes(None, [("mylib", b"\x7fELF-not-really")])
    magic, version, n = _HEADER.unpack_from(blob)
    assert version == PROGRAM_VERSION_EXTERNAL
    program = json.loads(blob[_HEADER.size:_HEADER.size + n])
    [entry] = program["external_modules"]
    assert entry["backend"] == "mylib" and entry["format"] == "so"
    assert entry["offset"] == 64 and entry["nbytes"] == len(b"\x7fELF-not-really")


@pytest.mark.parametrize("entry,match", [
    ({"backend": "mylib", "format": "so", "offset": 10**9, "nbytes": 4}, "outside"),
    ({"backend": "mylib", "format": "so", "offset": -100, "nbytes": 4}, "outside"),
    ({"backend": "../evil", "format": "so", "offset": 64, "nbytes": 4}, "bad backend"),
    ({"backend": "mylib", "format": "py", "offset": 64, "nbytes": 4}, "format"),
    ({"backend": "mylib", "offset": 64}, "bad external_modules entry"),
    ("not an object", "bad external_modules entry"),
])
def test_bad_entries_are_refused(entry, match):
    blob = _with_entries(_exe().program_bytes(None, [("mylib", b"x" * 8)]), [entry])
    with pytest.raises(ModuleLoadError, match=match):
        Executable.from_program_bytes(blob)


def test_external_modules_must_be_a_list():
    blob = _with_entries(_exe().program_bytes(None, [("mylib", b"x" * 8)]), {"a": 1})
    with pytest.raises(ModuleLoadError, match="must be a list"):
        Executable.from_program_bytes(blob)


def test_a_library_without_a_seal_is_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("TVM_CACHE_DIR", str(tmp_path))
    blob = _exe().program_bytes(None, [("mylib", b"\x7fELF" + b"\0" * 60)])
    with pytest.raises(ModuleLoadError, match="'mylib' backend's library"):
        Executable.from_program_bytes(blob)
