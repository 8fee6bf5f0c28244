"""The cblas backend: patterns with checks, and C generation over ``cblas_sgemm``.

Patterns, most specific first: ``cblas.dense_bias``, ``cblas.matmul_bias``
(``add(matmul(a, b), bias)``), ``cblas.dense``, ``cblas.matmul`` (``matmul(a, b)``); in
the dense ones ``b`` is ``permute_dims(w)`` of a 2-D ``w`` (a linear layer: transposed B).  The check takes float32 tensors of static shape: ``a``
2-D or 3-D, ``b`` 2-D (a 3-D ``a`` is one GEMM over its rows) or 3-D of the same batch
(one GEMM per batch), the bias broadcast along the last axis only (``(N,)``, ``(1, N)``).

Constants reach the partitions as arguments (the backend partitions with
``bind_constants=False``), so weights bound with ``relax.build(..., params=...)`` are passed
by the VM from its constant table.  Each partition becomes one packed C function (``docs/abi.md``) that checks its
arguments as compiled kernels do and calls the library's sgemm; the C source is compiled
by the system C compiler into a shared library linked against the CBLAS of
:func:`~.library.find_cblas`, cached under ``$TVM_CACHE_DIR/cblas``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from typing import Any, Optional

from tvm.ffi import knobs
from tvm.relax.analysis.struct_info_analysis import get_static_shape
from tvm.relax.backend import FusionPattern, PatternCheckContext
from tvm.relax.dpl import is_op, wildcard
from tvm.relax.expr import Call, Function, Tuple, Var, VarBinding
from tvm.runtime.file_seal import check_seal, write_sealed
from tvm.runtime.module import Module, SharedLibraryModule

from .library import CBLASLibrary

__all__ = ["patterns", "generate_c", "build_module", "CBLASCodegenError"]


class CBLASCodegenError(RuntimeError):
    """A partition the cblas backend cannot compile (or the C compiler failed)."""


def patterns() -> list[FusionPattern]:
    """The backend's patterns, most specific first (with bias before without, a transposed
    rhs before a plain one)."""
    out = []
    for bias in (True, False):
        for dense in (True, False):
            rhs = is_op("relax.permute_dims")(wildcard()) if dense else wildcard()
            mm = is_op("relax.matmul")(wildcard(), rhs)
            pat = is_op("relax.add")(mm, wildcard()) if bias else mm
            name = ("dense" if dense else "matmul") + ("_bias" if bias else "")
            out.append(FusionPattern(f"cblas.{name}", pat, {"matmul": mm}, _check))
    return out


def _sinfo(e: Any) -> Any:
    return getattr(e, "struct_info_", None) or getattr(e, "struct_info", None)


def _shape(e: Any) -> Optional[tuple[int, ...]]:
    s = _sinfo(e)
    return get_static_shape(s) if s is not None else None


def _check(ctx: PatternCheckContext) -> Optional[str]:
    mm = ctx.annotated["matmul"]
    a, b = mm.args
    dense = _is_permute(b, ctx)
    for name, e in (("output", ctx.root), ("lhs", a), ("rhs", b)):
        s = _sinfo(e)
        dtype = getattr(s, "dtype", None)
        if dtype != "float32":
            return f"{name} has dtype {dtype}, cblas takes float32"
        if _shape(e) is None:
            return f"{name} has a symbolic or unknown shape {s}, cblas needs static shapes"
    sa, sb = _shape(a), _shape(b)
    if dense and len(sb) != 2:
        return f"a transposed rhs must be 2-D, got shape {sb}"
    if len(sa) not in (2, 3) or len(sb) not in (2, 3) or (len(sa) == 2 and len(sb) == 3):
        return f"operand shapes {sa} x {sb}: cblas takes 2-D or 3-D lhs and 2-D or 3-D rhs"
    if len(sa) == 3 and len(sb) == 3 and sa[0] != sb[0]:
        return f"batch sizes {sa[0]} and {sb[0]} differ (broadcast batch is not supported)"
    if ctx.root is not mm:
        bias = ctx.root.args[1] if ctx.root.args[0] is not ctx.root.args[1] else None
        sbias = _shape(bias) if bias is not None else None
        n = _shape(ctx.root)[-1]
        if sbias is None or len(sbias) == 0 or sbias[-1] != n or any(d != 1 for d in sbias[:-1]):
            return f"bias of shape {sbias} is not broadcast along the last axis only"
        if getattr(_sinfo(bias), "dtype", None) != "float32":
            return "bias is not float32"
    return None


def _is_permute(b: Any, ctx: PatternCheckContext) -> bool:
    v = ctx.bindings.get(b)
    return isinstance(v, Call) and getattr(v.op, "name", "") == "relax.permute_dims"


# ------------------------------------------------------------------------------ C source

_PRELUDE = r"""#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
typedef union { int64_t v_int64; double v_float64; void* v_handle; } TVMValue;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct { void* data; DLDevice device; int32_t ndim; DLDataType dtype; int64_t* shape;
                 int64_t* strides; uint64_t byte_offset; } DLTensor;
void (*__TVMAPISetLastError)(const char* msg) = NULL;
#define TVM_FAIL(...) do { char tvm_msg[512]; snprintf(tvm_msg, sizeof tvm_msg, __VA_ARGS__); \
  if (__TVMAPISetLastError) __TVMAPISetLastError(tvm_msg); return -1; } while (0)
typedef BLASINT blasint_t;
extern void SGEMM(int order, int transa, int transb, blasint_t m, blasint_t n, blasint_t k,
                  float alpha, const float* a, blasint_t lda, const float* b, blasint_t ldb,
                  float beta, float* c, blasint_t ldc);
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

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


def _parse_composite(func: Function) -> dict[str, Any]:
    """``{"a", "b", "bias", "trans_b"}`` as parameter indices of the composite function."""
    index = {id(p): k for k, p in enumerate(func.params)}
    values: dict[int, Any] = {}
    for block in func.body.blocks:
        for b in block.bindings:
            values[id(b.var)] = b.value
    root = values.get(id(func.body.body))
    out: dict[str, Any] = {"bias": None, "trans_b": False}
    if getattr(root.op, "name", "") == "relax.add":
        mm_var, bias = root.args
        out["bias"] = index[id(bias)]
        root = values[id(mm_var)]
    a, b = root.args
    if id(b) in values:  # permute_dims(w)
        b = values[id(b)].args[0]
        out["trans_b"] = True
    out["a"], out["b"] = index[id(a)], index[id(b)]
    return out


def _emit_gemm(lines: list[str], spec: dict[str, Any], a: tuple, b: tuple, c: tuple,
               pa: str, pb: str, pc: str, bias: Optional[tuple], pbias: str) -> None:
    m, k = a[-2], a[-1]
    n = c[-1]
    trans = spec["trans_b"]
    ldb = k if trans else n
    batch_b = len(b) == 3
    rows = m * (a[0] if len(a) == 3 and not batch_b else 1)
    nbatch = a[0] if batch_b else 1
    beta = "0.0f"
    if bias is not None:
        total = rows * nbatch
        lines.append(f"  for (int64_t r = 0; r < {total}; ++r) memcpy({pc} + r * {n}, {pbias}, "
                     f"{n} * sizeof(float));")
        beta = "1.0f"
    lines.append(f"  for (int64_t i = 0; i < {nbatch}; ++i)")
    lines.append(f"    SGEMM({_ROW_MAJOR}, {_NO_TRANS}, {_TRANS if trans else _NO_TRANS}, "
                 f"{rows}, {n}, {k}, 1.0f, {pa} + i * {rows * k}, {k}, "
                 f"{pb} + i * {(k * n) if batch_b else 0}, {ldb}, {beta}, "
                 f"{pc} + i * {rows * n}, {n});")


def generate_c(funcs: Sequence[tuple[str, Function]], lib: CBLASLibrary) -> tuple[str, dict]:
    """The C source and the module metadata of the partition functions ``funcs``."""
    src = [f"#define BLASINT {lib.int_type}", f"#define SGEMM {lib.sgemm}", _PRELUDE]
    meta_funcs = []
    for symbol, func in funcs:
        if not symbol.isidentifier():
            raise CBLASCodegenError(f"cblas: {symbol!r} is not a C identifier")
        locals_: dict[int, Function] = {}
        steps: list[tuple[Var, Function, list[Any]]] = []
        for block in func.body.blocks:
            for b in block.bindings:
                if isinstance(b, VarBinding) and isinstance(b.value, Function):
                    locals_[id(b.var)] = b.value
                elif isinstance(b, VarBinding) and isinstance(b.value, Call) and id(
                        b.value.op) in locals_:
                    steps.append((b.var, locals_[id(b.value.op)], list(b.value.args)))
                else:
                    raise CBLASCodegenError(f"cblas: {symbol}: unexpected binding {b}")
        result = func.body.body
        outs = list(result.fields) if isinstance(result, Tuple) else [result]
        names: dict[int, str] = {}
        shapes: dict[int, tuple] = {}
        params_meta = []
        for k, p in enumerate(func.params):
            names[id(p)] = f"DATA({k})"
            shapes[id(p)] = _shape(p)
            params_meta.append({"name": p.name_hint, "kind": "tensor", "dtype": "float32",
                                "shape": list(_shape(p))})
        nin = len(func.params)
        for j, o in enumerate(outs):
            names[id(o)] = f"DATA({nin + j})"
            shapes[id(o)] = _shape(o)
            params_meta.append({"name": f"out{j}", "kind": "tensor", "dtype": "float32",
                                "shape": list(_shape(o)), "written": True})
        nargs = len(params_meta)
        body = [f"int32_t {symbol}(TVMValue* args, int32_t* codes, int32_t num_args, "
                "TVMValue* ret, int32_t* ret_code, void* resource) {",
                f"  if (num_args != {nargs}) TVM_FAIL(\"{symbol}: expected {nargs} arguments, "
                "got %d\", num_args);"]
        for k, pm in enumerate(params_meta):
            dims = ", ".join(str(d) for d in pm["shape"]) or "0"
            body.append(f"  {{ static const int64_t s[] = {{{dims}}}; if (tvm_check("
                        f"\"{symbol}\", \"{pm['name']}\", args, codes, {k}, "
                        f"{len(pm['shape'])}, s)) return -1; }}")
        temps = []
        for t, (var, comp, args) in enumerate(steps):
            if id(var) not in names:
                shape = _shape(var)
                size = 1
                for d in shape:
                    size *= d
                names[id(var)] = f"tmp{t}"
                shapes[id(var)] = shape
                body.append(f"  float* tmp{t} = (float*)malloc({size} * sizeof(float));")
                body.append(f"  if (!tmp{t}) {{ {' '.join(f'free({x});' for x in temps)} "
                            f"TVM_FAIL(\"{symbol}: out of memory ({size * 4} bytes)\"); }}")
                temps.append(f"tmp{t}")
            spec = _parse_composite(comp)
            arg_names = [names[id(a)] for a in args]
            arg_shapes = [shapes[id(a)] for a in args]
            bias = spec["bias"]
            _emit_gemm(body, spec, arg_shapes[spec["a"]], arg_shapes[spec["b"]],
                       shapes[id(var)], arg_names[spec["a"]], arg_names[spec["b"]],
                       names[id(var)], None if bias is None else arg_shapes[bias],
                       "" if bias is None else arg_names[bias])
        body += [f"  free({t});" for t in temps]
        body += ["  return 0;", "}"]
        src.append("\n".join(body))
        meta_funcs.append({"name": symbol, "symbol": symbol, "params": params_meta})
    meta = {"version": 1, "target": "cblas", "functions": meta_funcs}
    literal = json.dumps(json.dumps(meta))
    src.append(f"const char __tvm_module_meta[] = {literal};")
    return "\n".join(src) + "\n", meta


def _compiler() -> list[str]:
    for cand in [knobs.CC.get()] if knobs.CC.get() else []:
        words = shlex.split(cand)
        if words and shutil.which(words[0]):
            return words
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return [name]
    raise CBLASCodegenError("cblas: no C compiler found (install gcc, or set $CC)")


def build_module(funcs: Sequence[tuple[str, Function]], lib: CBLASLibrary) -> Module:
    """Compile the partition functions into a loaded shared-library module."""
    source, _ = generate_c(funcs, lib)
    cc = _compiler()
    flags = ["-O2", "-shared", "-fPIC", "-std=gnu11"]
    link = [lib.path, f"-Wl,-rpath,{os.path.dirname(lib.path)}"]
    key = hashlib.sha256("\0".join([*cc, *flags, *link, source]).encode()).hexdigest()[:40]
    cache = knobs.cache_dir("cblas")
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / f"{key}.so"
    try:
        check_seal(out)
        cached = True
    except Exception:  # missing, or changed since: rebuilt
        cached = False
    if not cached:
        with tempfile.TemporaryDirectory(prefix="tvm-cblas-") as work:
            src = os.path.join(work, "cblas.c")
            so = os.path.join(work, "cblas.so")
            with open(src, "w") as f:
                f.write(source)
            proc = subprocess.run([*cc, *flags, "-o", so, src, *link], capture_output=True,
                                  text=True, timeout=300)
            if proc.returncode != 0:
                raise CBLASCodegenError(f"cblas: the C compiler failed:\n{proc.stderr[:4000]}")
            with open(so, "rb") as f:
                write_sealed(out, [f.read()])
    module = SharedLibraryModule(out)
    module.external_backend = "cblas"  # type: ignore[attr-defined]
    module._sources["c"] = source
    return module
