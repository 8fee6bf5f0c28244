"""Sealed files: a library or executable is checked before dlopen (truncated, extended,
corrupted or foreign files are refused), and exports are written through O_EXCL temporaries
that never follow a planted symlink."""

from __future__ import annotations

import os

import pytest
import tvm.runtime as rt
from rt_testing import compile_shared, kernel_source
from tvm.runtime.file_seal import (
    SEAL_SIZE, check_seal, seal_file, sealed_payload_length, write_file, write_sealed,
)


def test_write_sealed_round_trips_and_keeps_the_payload(tmp_path):
    path = tmp_path / "f.bin"
    write_sealed(path, [b"hello ", b"world"])
    data = path.read_bytes()
    assert data[:-SEAL_SIZE] == b"hello world" and len(data) == 11 + SEAL_SIZE
    assert check_seal(path) == 11 == sealed_payload_length(path)


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[:-1], "not written by tvm"),                     # the seal cut
    (lambda d: d[:5] + d[6:], "truncated or extended"),           # a byte lost
    (lambda d: b"x" + d, "truncated or extended"),                # a byte added
    (lambda d: d[:3] + bytes([d[3] ^ 1]) + d[4:], "is corrupt"),  # a bit flipped
])
def test_damaged_files_are_refused(tmp_path, damage, message):
    path = tmp_path / "f.bin"
    write_sealed(path, [b"0123456789" * 10])
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(rt.ModuleLoadError, match=message):
        check_seal(path)


def test_a_library_is_checked_before_dlopen(tmp_path):
    # a library whose constructor would leave a mark if it ran
    marker = tmp_path / "ran"
    source = kernel_source() + (
        "\n#include <stdio.h>\n__attribute__((constructor)) static void tvm_test_ctor(void) {"
        f' FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    lib = compile_shared(source, tmp_path / "ctor.so", seal=False)
    with pytest.raises(rt.ModuleLoadError, match="not written by tvm"):
        rt.load_module(lib)
    assert not marker.exists()  # refused before dlopen: the constructor never ran
    seal_file(lib)               # the user vouches for it
    mod = rt.load_module(lib)
    assert marker.exists() and mod.function_names
    # a corrupted copy is refused (the loaded file itself is mapped: never write it)
    data = bytearray(lib.read_bytes())
    data[100] ^= 0xFF
    copy = tmp_path / "corrupt.so"
    copy.write_bytes(bytes(data))
    with pytest.raises(rt.ModuleLoadError, match="is corrupt"):
        rt.load_module(copy)


def test_seal_file_is_idempotent(tmp_path):
    path = tmp_path / "x.so"
    path.write_bytes(b"abc")
    seal_file(path)
    once = path.read_bytes()
    seal_file(path)
    assert path.read_bytes() == once


def test_write_file_never_follows_a_planted_symlink(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out = tmp_path / "model.so"
    # the names an attacker could predict: the old `<path>.tmp<pid>` scheme
    for name in (f"model.so.tmp{os.getpid()}", ".model.so.tmp"):
        os.symlink(victim, tmp_path / name)
    write_file(out, [b"payload"])
    assert victim.read_text() == "keep me"
    assert out.read_bytes() == b"payload" and not out.is_symlink()
    # a symlink at the destination itself is replaced, not written through
    os.remove(out)
    os.symlink(victim, out)
    write_file(out, [b"new"])
    assert victim.read_text() == "keep me" and out.read_bytes() == b"new"
    assert not any(p.name.endswith(".tmp") and not p.is_symlink() for p in tmp_path.iterdir())


def test_write_file_leaves_nothing_behind_on_failure(tmp_path):
    def chunks():
        yield b"part"
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_file(tmp_path / "out.bin", chunks())
    assert list(tmp_path.iterdir()) == []
