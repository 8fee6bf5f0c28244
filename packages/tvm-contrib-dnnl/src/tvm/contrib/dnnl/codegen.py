"""The dnnl backend: the shared matmul patterns, and C over oneDNN's matmul primitive.

Patterns and check: :mod:`tvm.relax.backend.matmul` (``dnnl.dense_bias``, ...; float32,
static shapes, 2-D or 3-D), with constants passed as arguments.  Each composite call of a
partition becomes one oneDNN matmul primitive (a 3-D lhs times a 2-D rhs is one 2-D
product over its rows; a transposed rhs is the ``ba`` layout; the bias a ``1 x N`` tensor),
created on the first call and kept (under a lock), run on a stream per call, inside one
packed C function per partition (:mod:`tvm.relax.backend.c_source`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tvm.relax.backend import FusionPattern
from tvm.relax.backend.c_source import CTensor, compile_c, packed_c_module
from tvm.relax.backend.matmul import matmul_patterns, read_matmul_composite
from tvm.relax.expr import Function

from .library import DNNLLibrary

__all__ = ["patterns", "generate_c", "build_module"]

_HEADER = r"""#include <pthread.h>
#include <oneapi/dnnl/dnnl.h>
static pthread_mutex_t tvm_dnnl_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t tvm_dnnl_engine = NULL;
typedef struct { dnnl_primitive_t prim; dnnl_memory_desc_t a, b, bias, c; int has_bias; } tvm_dnnl_mm;
/* creates mm->prim once; returns a dnnl_status_t */
static int tvm_dnnl_make(tvm_dnnl_mm* mm, int nd, const dnnl_dim_t* ad, const dnnl_dim_t* bd,
                         const dnnl_dim_t* biasd, const dnnl_dim_t* cd, int trans_b) {
  int st = dnnl_success;
  pthread_mutex_lock(&tvm_dnnl_lock);
  if (!mm->prim) {
    dnnl_format_tag_t plain = nd == 2 ? dnnl_ab : dnnl_abc;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    if (!tvm_dnnl_engine) st = dnnl_engine_create(&tvm_dnnl_engine, dnnl_cpu, 0);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&mm->a, nd, ad, dnnl_f32, plain);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&mm->b, nd, bd, dnnl_f32,
                                                               trans_b ? dnnl_ba : plain);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&mm->c, nd, cd, dnnl_f32, plain);
    mm->has_bias = biasd != NULL;
    if (st == dnnl_success && biasd)
      st = dnnl_memory_desc_init_by_tag(&mm->bias, nd, biasd, dnnl_f32, plain);
    if (st == dnnl_success)
      st = dnnl_matmul_desc_init(&desc, &mm->a, &mm->b, biasd ? &mm->bias : NULL, &mm->c);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &desc, NULL, tvm_dnnl_engine, NULL);
    if (st == dnnl_success) st = dnnl_primitive_create(&mm->prim, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
  }
  pthread_mutex_unlock(&tvm_dnnl_lock);
  return st;
}
static int tvm_dnnl_run(tvm_dnnl_mm* mm, float* a, float* b, float* bias, float* c) {
  dnnl_memory_t mem[4] = {NULL, NULL, NULL, NULL};
  dnnl_stream_t stream = NULL;
  int st = dnnl_stream_create(&stream, tvm_dnnl_engine, dnnl_stream_default_flags);
  if (st == dnnl_success) st = dnnl_memory_create(&mem[0], &mm->a, tvm_dnnl_engine, a);
  if (st == dnnl_success) st = dnnl_memory_create(&mem[1], &mm->b, tvm_dnnl_engine, b);
  if (st == dnnl_success) st = dnnl_memory_create(&mem[2], &mm->c, tvm_dnnl_engine, c);
  if (st == dnnl_success && mm->has_bias)
    st = dnnl_memory_create(&mem[3], &mm->bias, tvm_dnnl_engine, bias);
  if (st == dnnl_success) {
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]},
                               {DNNL_ARG_DST, mem[2]}, {DNNL_ARG_BIAS, mem[3]}};
    st = dnnl_primitive_execute(mm->prim, stream, mm->has_bias ? 4 : 3, args);
  }
  if (st == dnnl_success) st = dnnl_stream_wait(stream);
  for (int i = 0; i < 4; ++i) if (mem[i]) dnnl_memory_destroy(mem[i]);
  if (stream) dnnl_stream_destroy(stream);
  return st;
}
"""


def patterns() -> list[FusionPattern]:
    """The backend's patterns, most specific first."""
    return matmul_patterns("dnnl")


class _Emitter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, lines: list[str], comp: Function, args: list[CTensor],
                 out: CTensor) -> None:
        spec = read_matmul_composite(comp)
        a, b = args[spec.a], args[spec.b]
        k, n = a.shape[-1], out.shape[-1]
        if len(b.shape) == 3:  # one batched product
            ad, bd, cd = list(a.shape), [b.shape[0], k, n], list(out.shape)
        else:  # rows of a (2-D or 3-D) times b
            rows = a.size // k
            ad, bd, cd = [rows, k], [k, n], [rows, n]
        biasd = None if spec.bias is None else [1] * (len(cd) - 1) + [n]
        i = self.count
        self.count += 1

        def dims(v: list[int]) -> str:
            return "{" + ", ".join(map(str, v)) + "}"

        lines.append(f"  {{ static tvm_dnnl_mm mm{i};")
        lines.append(f"    static const dnnl_dim_t ad[] = {dims(ad)}, bd[] = {dims(bd)}, "
                     f"cd[] = {dims(cd)}" + ("" if biasd is None else f", biasd[] = {dims(biasd)}")
                     + ";")
        lines.append(f"    int st = tvm_dnnl_make(&mm{i}, {len(cd)}, ad, bd, "
                     f"{'NULL' if biasd is None else 'biasd'}, cd, {int(spec.trans_b)});")
        lines.append(f"    if (st == dnnl_success) st = tvm_dnnl_run(&mm{i}, {a.ptr}, {b.ptr}, "
                     f"{'NULL' if spec.bias is None else args[spec.bias].ptr}, {out.ptr});")
        lines.append("    if (st != dnnl_success) TVM_FAIL(\"dnnl: matmul %d failed (oneDNN "
                     f"status %d)\", {i}, st); }}")


def generate_c(funcs: Sequence[tuple[str, Function]]) -> tuple[str, dict]:
    """The C source and the module metadata of the partition functions ``funcs``."""
    return packed_c_module(funcs, _HEADER, _Emitter(), "dnnl")


def build_module(funcs: Sequence[tuple[str, Function]], lib: DNNLLibrary) -> Any:
    """Compile the partition functions into a loaded shared-library module."""
    source, _ = generate_c(funcs)
    return compile_c(source, "dnnl", [f"-I{lib.include_dir}", lib.path,
                                      f"-Wl,-rpath,{os.path.dirname(lib.path)}", "-lpthread"])
