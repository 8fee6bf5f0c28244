"""Corrupted exported executables against ``tvm.runtime.load_module`` and the VM.

The base is a small model (matmul by a constant weight, add, softmax, sum) built for llvm and
written with ``export_library``.  Two kinds of case:

- ``raw``: bytes flipped, the file truncated, a chunk spliced elsewhere or garbage
  appended.  The seal covers every byte, so ``load_module`` must raise ``ModuleLoadError``
  (before ``dlopen``, so none of the file's code runs), unless the bytes did not change, in
  which case it must load and give the original results.
- ``program``: the VM program inside the file is changed (a leaf of its JSON header
  retyped or set to another value, or a byte of the program blob flipped), and the file is
  sealed again, as someone who can write the file could.  The library part, native code
  that a sealed file is trusted to carry, is left alone.  The loader validates the program,
  so ``load_module`` raises ``ModuleLoadError`` or the executable loads; running it on valid
  inputs returns values or raises a ``TVMError`` (``VMError``, ``KernelError``...), a
  ``MemoryError``, a ``RecursionError`` (a program changed to call itself without end) or the
  call's ``TypeError`` for a changed parameter count, and never crashes or hangs.
"""

from __future__ import annotations

import functools
import json
import os
import struct
import tempfile
from typing import Any

import numpy as np
from hypothesis import strategies as st

from fuzz.common import Failure, describe

_TRAILER = struct.Struct("<Q8s")
_INTS = [-1, 0, 1, 2, 3, 7, 64, 255, 2 ** 31, 2 ** 63 - 1, -(2 ** 63)]
_STRS = ["", "x", "float16", "int8", "bool", "handle", "ret", "call", "main", "reg", "imm",
         "vm.builtin.alloc_storage", "vm.builtin.null", "fused_matmul_add", "global"]


def _model() -> Any:
    from tvm import relax
    from tvm.relax import op

    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo([2, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(op.add(op.matmul(x, relax.const(w)), relax.const(np.ones(3, "float32"))))
            s = bb.emit(op.nn.softmax(h, axis=-1))
            out = bb.emit_output(relax.Tuple([s, bb.emit(op.sum(h, axis=[1]))]))
        bb.emit_func_output(out)
    return bb.get()


@functools.lru_cache(maxsize=None)
def base() -> tuple[bytes, tuple[np.ndarray, ...]]:
    """The exported file's bytes and its outputs on :func:`inputs`."""
    import tvm.runtime
    from tvm import relax

    ex = relax.build(_model(), target="llvm")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.so")
        ex.export_library(path)
        with open(path, "rb") as f:
            data = f.read()
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    return data, tuple(o.numpy() for o in vm["main"](inputs()))


def inputs() -> np.ndarray:
    """The input the executable runs on."""
    return np.random.default_rng(1).standard_normal((2, 4)).astype("float32")


def _split(data: bytes) -> tuple[bytes, bytes]:
    """(library part, program blob) of a sealed executable's bytes."""
    from tvm.runtime.file_seal import SEAL_SIZE

    payload = data[:-SEAL_SIZE]
    blob_len, _ = _TRAILER.unpack(payload[-_TRAILER.size:])
    lib_end = len(payload) - _TRAILER.size - blob_len
    return payload[:lib_end], payload[lib_end:lib_end + blob_len]


def _leaves(value: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k in sorted(value) for p in _leaves(value[k], path + (k,))] + [path]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, path + (i,))] + [path]
    return [path]


def _set_leaf(header: dict[str, Any], m: list[Any]) -> None:
    paths = [p for p in _leaves(header) if p]
    path = paths[m[1] % len(paths)]
    parent = header
    for key in path[:-1]:
        parent = parent[key]
    old = parent[path[-1]]
    if isinstance(old, bool):
        new: Any = not old
    elif isinstance(old, int):
        new = _INTS[m[2] % len(_INTS)]
    elif isinstance(old, str):
        new = _STRS[m[2] % len(_STRS)]
    elif isinstance(old, list) and old and m[2] % 3:
        new = old[:-1] if m[2] % 3 == 1 else old + old[-1:]
    else:
        new = [None, {}, [], 1.5, "x", -1][m[2] % 6]
    parent[path[-1]] = new


def _rewrite_program(blob: bytes, mutations: list[list[Any]]) -> bytes:
    magic, version, n = struct.unpack("<8sII", blob[:16])
    header = json.loads(blob[16:16 + n])
    data_start = -(-(16 + n) // 64) * 64
    consts = blob[data_start:]
    for m in mutations:
        if m[0] == "json_leaf":
            _set_leaf(header, m)
    text = json.dumps(header).encode()
    head = struct.pack("<8sII", magic, version, len(text)) + text
    out = bytearray(head + b"\0" * (-len(head) % 64) + consts)
    for m in mutations:
        if m[0] == "blob_flip" and out:
            out[m[1] % len(out)] ^= 1 << (m[2] % 8)
    return bytes(out)


def mutated_file(case: dict[str, Any]) -> bytes:
    """The executable's bytes after the case's mutations."""
    from tvm.runtime.file_seal import _seal_of  # the same seal export_library writes
    import hashlib

    data, _ = base()
    if case["mode"] == "program":
        lib, blob = _split(data)
        blob = _rewrite_program(blob, case["mutations"])
        payload = lib + blob + _TRAILER.pack(len(blob), b"TVMVMEX1")
        return payload + _seal_of(hashlib.sha256(payload).digest(), len(payload))
    out = bytearray(data)
    for m in case["mutations"]:
        kind = m[0]
        if kind == "flip" and out:
            out[m[1] % len(out)] ^= 1 << (m[2] % 8)
        elif kind == "truncate":
            del out[m[1] % (len(out) + 1):]
        elif kind == "splice" and out:
            src, dst = m[1] % len(out), m[2] % len(out)
            out[dst:dst + 64] = out[src:src + 64]
        elif kind == "append":
            out += bytes(range(256))[: m[1] % 257]
    return bytes(out)


def cases() -> st.SearchStrategy[dict[str, Any]]:
    """Raw corruptions and re-sealed program changes."""
    n = st.integers(0, 10 ** 7)
    raw = st.tuples(st.sampled_from(["flip", "truncate", "splice", "append"]), n, n).map(list)
    prog = st.tuples(st.sampled_from(["json_leaf", "json_leaf", "json_leaf", "blob_flip"]),
                     n, n).map(list)
    return st.one_of(
        st.fixed_dictionaries({"mode": st.just("raw"),
                               "mutations": st.lists(raw, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"mode": st.just("program"),
                               "mutations": st.lists(prog, min_size=1, max_size=3)}))


def check(case: dict[str, Any]) -> str:
    """Load the corrupted file and run it; only clean errors or right answers."""
    import tvm.runtime
    from tvm.ffi import TVMError
    from tvm.runtime import ModuleLoadError
    from tvm.runtime.vm import VirtualMachine

    data = mutated_file(case)
    original, expected = base()
    with tempfile.TemporaryDirectory(prefix="tvm-fuzz-exe-") as tmp:
        path = os.path.join(tmp, "model.so")  # a fresh path: dlopen caches by path
        with open(path, "wb") as f:
            f.write(data)
        try:
            ex = tvm.runtime.load_module(path)
        except ModuleLoadError as err:
            if data == original:
                raise Failure("wrong-answer", f"the unchanged file was refused: {err}") from err
            return "load refused (ModuleLoadError)"
        except Exception as err:  # noqa: BLE001 - classified
            raise Failure("unexpected-exception", f"load_module raised {describe(err)}") from err
        if case["mode"] == "raw" and data != original:
            raise Failure("accepted-corrupt-file", "load_module accepted a file whose bytes "
                          "changed after it was sealed")
        try:
            vm = VirtualMachine(ex, tvm.runtime.cpu())
            out = vm["main"](inputs())
        except (TVMError, MemoryError, RecursionError) as err:
            # RecursionError: a program changed to call itself without end (non-tail calls)
            return f"run refused ({type(err).__name__})"
        except TypeError as err:
            if "argument(s)" not in str(err):
                raise Failure("unexpected-exception", f"running the loaded executable raised "
                              f"{describe(err)}") from err
            return "run refused (TypeError: the parameters changed)"
        except Exception as err:  # noqa: BLE001 - classified
            raise Failure("unexpected-exception", f"running the loaded executable raised "
                          f"{describe(err)}") from err
    if data == original:
        outs = [o.numpy() for o in (out if isinstance(out, (tuple, list)) else [out])]
        for a, e in zip(outs, expected):
            if not np.array_equal(a, e):
                raise Failure("wrong-answer", "the unchanged file computes other values")
        return "unchanged; same values"
    return "program changed; ran"
