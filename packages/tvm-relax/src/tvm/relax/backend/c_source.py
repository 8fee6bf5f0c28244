"""Packed C functions for external backends that generate C (``docs/abi.md``).

:func:`packed_c_module` writes, for each partition function (the ``Codegen`` functions
RunCodegen hands a backend), one ``int32_t <global_symbol>(TVMValue* args, int32_t* codes,
int32_t num_args, ...)`` that checks every tensor argument as compiled kernels do (type
code, ndim, dtype, device, each dimension, compact strides; the messages of MakePackedAPI,
``argument x has shape[1] = 9, expected 8``), allocates the intermediate results of merged
partitions, and lets the backend emit the code of each composite call
(``emit(lines, composite, args, out)``, with :class:`CTensor` names and shapes); then the
module's ``__tvm_module_meta``.  :func:`compile_c` compiles it with the system C compiler
(``$CC``, else cc/gcc/clang), cached by content under ``$TVM_CACHE_DIR/<backend>``, and
loads it; the module carries ``external_backend``, its source (``get_source("c")``) and
``link_flags`` (an AOT package compiles the source into itself with them).
Generated code reads the runtime's thread count (``tvm.runtime.set_num_threads``) with
``TVM_NUM_THREADS()`` (0 when the runtime has not filled the slot), to hand it to a library.
Float32 tensors of static shape only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from tvm.ffi import knobs

from ..expr import Call, Function, Tuple, Var, VarBinding
from .matmul import static_shape

__all__ = ["CTensor", "packed_c_module", "compile_c", "ExternalCodegenError"]


class ExternalCodegenError(RuntimeError):
    """A partition a backend cannot compile, or its C compiler failed."""


@dataclasses.dataclass(frozen=True)
class CTensor:
    """A float32 tensor in generated C: an expression for its data pointer, its shape, and
    whether every call passes the same constant (a weight: RunCodegen's
    ``constant_params``), which a backend may prepare once."""

    ptr: str
    shape: tuple[int, ...]
    constant: bool = False

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


PRELUDE = r"""#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
typedef union { int64_t v_int64; double v_float64; void* v_handle; } TVMValue;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct { void* data; DLDevice device; int32_t ndim; DLDataType dtype; int64_t* shape;
                 int64_t* strides; uint64_t byte_offset; } DLTensor;
/* the runtime slots, weak: linked with kernels that define them (an AOT package), one slot */
__attribute__((weak)) void (*__TVMAPISetLastError)(const char* msg) = NULL;
__attribute__((weak)) const int32_t* __TVMBackendNumThreads = NULL;  /* set_num_threads */
#define TVM_NUM_THREADS() (__TVMBackendNumThreads ? *__TVMBackendNumThreads : 0)
#define TVM_FAIL(...) do { char tvm_msg[512]; snprintf(tvm_msg, sizeof tvm_msg, __VA_ARGS__); \
  if (__TVMAPISetLastError) __TVMAPISetLastError(tvm_msg); return -1; } while (0)
static int tvm_check(const char* fn, const char* arg, TVMValue* args, int32_t* codes, int i,
                     int ndim, const int64_t* shape) {
  if (codes[i] != 7) TVM_FAIL("%s: argument %s has type code %d, expected a tensor (7)", fn, arg, codes[i]);
  DLTensor* t = (DLTensor*)args[i].v_handle;
  if (t->ndim != ndim) TVM_FAIL("%s: argument %s has ndim = %lld, expected %d", fn, arg, (long long)t->ndim, ndim);
  if (!(t->dtype.code == 2 && t->dtype.bits == 32 && t->dtype.lanes == 1))
    TVM_FAIL("%s: argument %s has dtype (code=%lld, bits=%lld, lanes=%lld), expected float32 (code=2, bits=32, lanes=1)",
             fn, arg, (long long)t->dtype.code, (long long)t->dtype.bits, (long long)t->dtype.lanes);
  if (t->device.device_type != 1)
    TVM_FAIL("%s: argument %s is on device type %lld, expected 1 (cpu)", fn, arg, (long long)t->device.device_type);
  int64_t compact = 1;
  for (int k = ndim - 1; k >= 0; --k) {
    if (t->shape[k] != shape[k])
      TVM_FAIL("%s: argument %s has shape[%d] = %lld, expected %lld", fn, arg, k, (long long)t->shape[k], (long long)shape[k]);
    if (t->strides && shape[k] != 1 && t->strides[k] != compact)
      TVM_FAIL("%s: argument %s is not compact: strides[%d] = %lld, expected %lld", fn, arg, k, (long long)t->strides[k], (long long)compact);
    compact *= shape[k];
  }
  return 0;
}
#define DATA(i) ((float*)((char*)((DLTensor*)args[i].v_handle)->data + ((DLTensor*)args[i].v_handle)->byte_offset))
"""

Emit = Callable[[list[str], Function, list[CTensor], CTensor], None]


def _steps(symbol: str, func: Function) -> list[tuple[Var, Function, list[Any]]]:
    local: dict[int, Function] = {}
    steps = []
    for block in func.body.blocks:
        for b in block.bindings:
            if isinstance(b, VarBinding) and isinstance(b.value, Function):
                local[id(b.var)] = b.value
            elif isinstance(b, VarBinding) and isinstance(b.value, Call) and id(
                    b.value.op) in local:
                steps.append((b.var, local[id(b.value.op)], list(b.value.args)))
            else:
                raise ExternalCodegenError(
                    f"{symbol}: a partition function binds composite functions and calls "
                    f"them; got {b}")
    return steps


def _static(symbol: str, e: Any, what: str) -> tuple[int, ...]:
    shape = static_shape(e)
    dtype = getattr(getattr(e, "struct_info_", None), "dtype", None)
    if shape is None or dtype != "float32":
        raise ExternalCodegenError(f"{symbol}: {what} must be a float32 tensor of static "
                                   f"shape, got {getattr(e, 'struct_info_', None)}")
    return shape


def packed_c_module(funcs: Sequence[tuple[str, Function]], header: str, emit: Emit,
                    target: str) -> tuple[str, dict]:
    """The C source and module metadata of the partition functions (module docstring)."""
    src = [PRELUDE, header]
    meta_funcs = []
    for symbol, func in funcs:
        if not symbol.isidentifier():
            raise ExternalCodegenError(f"{target}: {symbol!r} is not a C identifier")
        steps = _steps(symbol, func)
        result = func.body.body
        outs = list(result.fields) if isinstance(result, Tuple) else [result]
        tensors: dict[int, CTensor] = {}
        params = []
        constant = {int(getattr(k, "value", k)) for k in func.attrs.get("constant_params", ())}
        for k, p in enumerate([*func.params, *outs]):
            shape = _static(symbol, p, f"parameter {p.name_hint}")
            tensors[id(p)] = CTensor(f"DATA({k})", shape, k in constant)
            entry = {"name": p.name_hint if k < len(func.params) else
                     f"out{k - len(func.params)}", "kind": "tensor", "dtype": "float32",
                     "shape": list(shape)}
            if k >= len(func.params):
                entry["written"] = True
            params.append(entry)
        body = [f"int32_t {symbol}(TVMValue* args, int32_t* codes, int32_t num_args, "
                "TVMValue* ret, int32_t* ret_code, void* resource) {",
                f"  if (num_args != {len(params)}) TVM_FAIL(\"{symbol}: expected "
                f"{len(params)} arguments, got %d\", num_args);"]
        for k, pm in enumerate(params):
            dims = ", ".join(str(d) for d in pm["shape"]) or "0"
            body.append(f"  {{ static const int64_t s[] = {{{dims}}}; if (tvm_check("
                        f"\"{symbol}\", \"{pm['name']}\", args, codes, {k}, "
                        f"{len(pm['shape'])}, s)) return -1; }}")
        temps: list[str] = []
        for t, (var, comp, args) in enumerate(steps):
            if id(var) not in tensors:
                tmp = CTensor(f"tmp{t}", _static(symbol, var, var.name_hint))
                tensors[id(var)] = tmp
                frees = " ".join(f"free({x});" for x in temps)
                body.append(f"  float* tmp{t} = (float*)malloc({tmp.size} * sizeof(float));")
                body.append(f"  if (!tmp{t}) {{ {frees} TVM_FAIL(\"{symbol}: out of memory "
                            f"({tmp.size * 4} bytes)\"); }}")
                temps.append(f"tmp{t}")
            emit(body, comp, [tensors[id(a)] for a in args], tensors[id(var)])
        body += [f"  free({t});" for t in temps] + ["  return 0;", "}"]
        src.append("\n".join(body))
        meta_funcs.append({"name": symbol, "symbol": symbol, "params": params})
    meta = {"version": 1, "target": target, "functions": meta_funcs}
    src.append(f"const char __tvm_module_meta[] = {json.dumps(json.dumps(meta))};")
    return "\n".join(src) + "\n", meta


def _compiler() -> list[str]:
    cc = knobs.CC.get()
    if cc:
        words = shlex.split(cc)
        if words and shutil.which(words[0]):
            return words
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return [name]
    raise ExternalCodegenError("no C compiler found to build an external backend's code "
                               "(install gcc, or set $CC)")


def compile_c(source: str, backend: str, link: Sequence[str] = ()) -> Any:
    """``source`` compiled into a shared library (linked with ``link``) and loaded."""
    from tvm.runtime.file_seal import check_seal, write_sealed
    from tvm.runtime.module import SharedLibraryModule

    cc = _compiler()
    flags = ["-O2", "-shared", "-fPIC", "-std=gnu11"]
    key = hashlib.sha256("\0".join([*cc, *flags, *link, source]).encode()).hexdigest()[:40]
    cache = knobs.cache_dir(backend)
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / f"{key}.so"
    try:
        check_seal(out)
        cached = True
    except Exception:  # missing, or changed since: rebuilt
        cached = False
    if not cached:
        with tempfile.TemporaryDirectory(prefix=f"tvm-{backend}-") as work:
            src, so = os.path.join(work, "part.c"), os.path.join(work, "part.so")
            with open(src, "w") as f:
                f.write(source)
            proc = subprocess.run([*cc, *flags, "-o", so, src, *link], capture_output=True,
                                  text=True, timeout=300)
            if proc.returncode != 0:
                raise ExternalCodegenError(f"{backend}: the C compiler failed:\n"
                                           f"{(proc.stderr or proc.stdout)[:4000]}")
            with open(so, "rb") as f:
                write_sealed(out, [f.read()])
    module = SharedLibraryModule(out)
    module.external_backend = backend  # type: ignore[attr-defined]
    module.link_flags = list(link)  # type: ignore[attr-defined]  # -I... and libraries
    module._sources["c"] = source
    return module
