"""The dnnl backend: the shared conv2d and matmul patterns, and C over oneDNN's
convolution and matmul primitives.

Patterns and checks: :mod:`tvm.relax.backend.conv` (``dnnl.conv2d_bias_relu``, ...; float32
NCHW or NHWC, grouped and depthwise, any strides, padding and dilation; the backend asks for
NHWC/OHWI, the layout oneDNN's direct convolutions run in, so that ``relax.build`` converts a
model to it and activations need no reorder) and
:mod:`tvm.relax.backend.matmul` (``dnnl.dense_bias``, ...; float32, static shapes, 2-D or
3-D), with constants passed as arguments.  Each composite call of a partition becomes one
oneDNN primitive, created on the first call and kept (under a lock), run on a stream per
call, inside one packed C function per partition (:mod:`tvm.relax.backend.c_source`):

* a convolution (forward inference, direct algorithm) whose source, weights and
  destination layouts oneDNN picks (``format_tag_any``: its blocked layouts such as
  ``nChw16c``, or NHWC); the plain NCHW/NHWC and OIHW/OHWI/HWIO tensors are reordered into
  them and the result back on each call where they differ, a weight too unless every call passes the same constant (RunCodegen's
  ``constant_params``): that one is reordered once, when the primitive is made; a relu is
  its post-op, the bias a 1-D ``C`` tensor;
* a matmul (a 3-D lhs times a 2-D rhs is one 2-D product over its rows; a transposed rhs is
  the ``ba`` layout; the bias a ``1 x N`` tensor).

With oneDNN's OpenMP runtime a primitive runs on the runtime's thread count
(``tvm.runtime.set_num_threads``), set on the calling thread before each call; since oneDNN
fixes a primitive's thread count when it creates it, each call site keeps one primitive per
thread count it has run with.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tvm.relax.backend import FusionPattern
from tvm.relax.backend.c_source import CTensor, compile_c, packed_c_module
from tvm.relax.backend.conv import conv2d_patterns, read_conv2d_composite
from tvm.relax.backend.matmul import matmul_patterns, read_matmul_composite
from tvm.relax.expr import Function

from .library import DNNLLibrary

__all__ = ["patterns", "generate_c", "build_module"]

_HEADER = r"""#include <pthread.h>
#include <oneapi/dnnl/dnnl.h>
static pthread_mutex_t tvm_dnnl_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t tvm_dnnl_engine = NULL;
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
#include <dlfcn.h>
/* oneDNN's OpenMP runs a primitive on the calling thread's OpenMP thread count: follow the
   runtime's.  omp_set_num_threads comes from the libgomp that libdnnl loaded (not linked
   here, so another OpenMP in the process is not touched). */
/* sets the calling thread's OpenMP thread count to the runtime's; returns it (0: unknown) */
static int tvm_dnnl_threads(void) {
  static void (*set)(int) = NULL;
  static int looked = 0;
  int n = TVM_NUM_THREADS();
  if (!looked) {
    void* gomp = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (gomp) set = (void (*)(int))dlsym(gomp, "omp_set_num_threads");
    looked = 1;
  }
  if (n > 0 && set) set(n);
  return set ? n : 0;
}
#else
static int tvm_dnnl_threads(void) { return 0; }
#endif
/* A call site keeps one primitive per thread count (oneDNN fixes a primitive's thread count
   when it creates it): an append-only list, searched and extended under the lock. */
typedef struct tvm_dnnl_mm {
  dnnl_primitive_t prim; dnnl_memory_desc_t a, b, bias, c; int has_bias, nthr;
  struct tvm_dnnl_mm* next;
} tvm_dnnl_mm;
/* *out: the site's matmul for this thread count, created on first use; a dnnl_status_t */
static int tvm_dnnl_make(tvm_dnnl_mm** site, tvm_dnnl_mm** out, int nd, const dnnl_dim_t* ad,
                         const dnnl_dim_t* bd, const dnnl_dim_t* biasd, const dnnl_dim_t* cd,
                         int trans_b) {
  int st = dnnl_success, nthr = tvm_dnnl_threads();
  tvm_dnnl_mm* mm;
  pthread_mutex_lock(&tvm_dnnl_lock);
  for (mm = *site; mm && mm->nthr != nthr; mm = mm->next) {}
  if (!mm && !(mm = (tvm_dnnl_mm*)calloc(1, sizeof *mm))) st = dnnl_out_of_memory;
  else if (!mm->prim) {
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
    if (st == dnnl_success) { mm->nthr = nthr; mm->next = *site; *site = mm; }
    else { free(mm); mm = NULL; }
  }
  pthread_mutex_unlock(&tvm_dnnl_lock);
  *out = mm;
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


_CONV = r"""
typedef struct tvm_dnnl_conv {
  dnnl_primitive_t prim, src_in, w_in, dst_out;  /* the conv; reorders (NULL: not needed) */
  dnnl_memory_desc_t src_user, w_user, dst_user, bias, src, w, dst;
  int has_bias, nthr;
  void* w_ready;  /* a constant weight, reordered once (NULL: reordered on each call) */
  struct tvm_dnnl_conv* next;
} tvm_dnnl_conv;
static int tvm_dnnl_reorder(dnnl_primitive_t* r, const dnnl_memory_desc_t* from,
                            const dnnl_memory_desc_t* to) {
  dnnl_primitive_desc_t pd = NULL;
  int st = dnnl_success;
  *r = NULL;
  if (dnnl_memory_desc_equal(from, to)) return st;
  st = dnnl_reorder_primitive_desc_create(&pd, from, tvm_dnnl_engine, to, tvm_dnnl_engine, NULL);
  if (st == dnnl_success) st = dnnl_primitive_create(r, pd);
  if (pd) dnnl_primitive_desc_destroy(pd);
  return st;
}
/* runs reorder r from `from` (desc f) into a new buffer *to (desc t); a dnnl_status_t */
static int tvm_dnnl_reorder_into(dnnl_primitive_t r, const dnnl_memory_desc_t* f, void* from,
                                 const dnnl_memory_desc_t* t, void** to) {
  dnnl_memory_t a = NULL, b = NULL;
  dnnl_stream_t stream = NULL;
  int st = (*to = malloc(dnnl_memory_desc_get_size(t))) ? dnnl_success : dnnl_out_of_memory;
  if (st == dnnl_success) st = dnnl_stream_create(&stream, tvm_dnnl_engine, dnnl_stream_default_flags);
  if (st == dnnl_success) st = dnnl_memory_create(&a, f, tvm_dnnl_engine, from);
  if (st == dnnl_success) st = dnnl_memory_create(&b, t, tvm_dnnl_engine, *to);
  if (st == dnnl_success) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
    st = dnnl_primitive_execute(r, stream, 2, args);
  }
  if (st == dnnl_success) st = dnnl_stream_wait(stream);
  if (a) dnnl_memory_destroy(a);
  if (b) dnnl_memory_destroy(b);
  if (stream) dnnl_stream_destroy(stream);
  if (st != dnnl_success) { free(*to); *to = NULL; }
  return st;
}
/* *out: the site's convolution (and reorders) for this thread count, created on first use;
   a constant weight (w_const) is reordered then, from w; a dnnl_status_t */
static int tvm_dnnl_conv_make(tvm_dnnl_conv** site, tvm_dnnl_conv** out, const dnnl_dim_t* sd,
                              dnnl_format_tag_t data_tag, int wnd, const dnnl_dim_t* wd,
                              dnnl_format_tag_t w_tag, const dnnl_dim_t* od,
                              const dnnl_dim_t* strides, const dnnl_dim_t* dilates,
                              const dnnl_dim_t* pad_l, const dnnl_dim_t* pad_r, int has_bias,
                              int relu, int w_const, float* w) {
  int st = dnnl_success, nthr = tvm_dnnl_threads();
  tvm_dnnl_conv* cv;
  pthread_mutex_lock(&tvm_dnnl_lock);
  for (cv = *site; cv && cv->nthr != nthr; cv = cv->next) {}
  if (!cv && !(cv = (tvm_dnnl_conv*)calloc(1, sizeof *cv))) st = dnnl_out_of_memory;
  else if (!cv->prim) {
    dnnl_convolution_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_dim_t bd[1] = {od[1]};
    if (!tvm_dnnl_engine) st = dnnl_engine_create(&tvm_dnnl_engine, dnnl_cpu, 0);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&cv->src_user, 4, sd, dnnl_f32, data_tag);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&cv->w_user, wnd, wd, dnnl_f32, w_tag);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&cv->dst_user, 4, od, dnnl_f32, data_tag);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&cv->bias, 1, bd, dnnl_f32, dnnl_a);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&cv->src, 4, sd, dnnl_f32, dnnl_format_tag_any);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&cv->w, wnd, wd, dnnl_f32, dnnl_format_tag_any);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&cv->dst, 4, od, dnnl_f32, dnnl_format_tag_any);
    cv->has_bias = has_bias;
    if (st == dnnl_success)
      st = dnnl_dilated_convolution_forward_desc_init(
          &desc, dnnl_forward_inference, dnnl_convolution_direct, &cv->src, &cv->w,
          has_bias ? &cv->bias : NULL, &cv->dst, strides, dilates, pad_l, pad_r);
    if (st == dnnl_success && relu) {
      st = dnnl_primitive_attr_create(&attr);
      if (st == dnnl_success) st = dnnl_post_ops_create(&ops);
      if (st == dnnl_success) st = dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
      if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, ops);
    }
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &desc, attr, tvm_dnnl_engine, NULL);
    if (st == dnnl_success) {
      cv->src = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
      cv->w = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
      cv->dst = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
      st = tvm_dnnl_reorder(&cv->src_in, &cv->src_user, &cv->src);
    }
    if (st == dnnl_success) st = tvm_dnnl_reorder(&cv->w_in, &cv->w_user, &cv->w);
    if (st == dnnl_success) st = tvm_dnnl_reorder(&cv->dst_out, &cv->dst, &cv->dst_user);
    if (st == dnnl_success && w_const && cv->w_in)
      st = tvm_dnnl_reorder_into(cv->w_in, &cv->w_user, w, &cv->w, &cv->w_ready);
    if (st == dnnl_success) st = dnnl_primitive_create(&cv->prim, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (ops) dnnl_post_ops_destroy(ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (st == dnnl_success) { cv->nthr = nthr; cv->next = *site; *site = cv; }
    else { free(cv); cv = NULL; }
  }
  pthread_mutex_unlock(&tvm_dnnl_lock);
  *out = cv;
  return st;
}
/* x, w, bias (C or NULL) -> y, in the layouts the primitive was made for */
static int tvm_dnnl_conv_run(tvm_dnnl_conv* cv, float* x, float* w, float* bias, float* y) {
  enum { X, W, B, Y, XU, WU, YU, N };
  dnnl_memory_t mem[N] = {NULL};
  void* tmp[3] = {NULL, NULL, NULL};
  dnnl_stream_t stream = NULL;
  int st = dnnl_stream_create(&stream, tvm_dnnl_engine, dnnl_stream_default_flags);
  const dnnl_memory_desc_t* md[3] = {&cv->src, &cv->w, &cv->dst};
  const dnnl_memory_desc_t* user[3] = {&cv->src_user, &cv->w_user, &cv->dst_user};
  dnnl_primitive_t reorder[3] = {cv->src_in, cv->w_ready ? NULL : cv->w_in, cv->dst_out};
  float* data[3] = {x, cv->w_ready ? (float*)cv->w_ready : w, y};
  for (int i = 0; i < 3 && st == dnnl_success; ++i) {
    if (!reorder[i]) {
      st = dnnl_memory_create(&mem[i == 2 ? Y : i], md[i], tvm_dnnl_engine, data[i]);
      continue;
    }
    tmp[i] = malloc(dnnl_memory_desc_get_size(md[i]));
    if (!tmp[i]) { st = -1; break; }
    st = dnnl_memory_create(&mem[i == 2 ? Y : i], md[i], tvm_dnnl_engine, tmp[i]);
    if (st == dnnl_success) st = dnnl_memory_create(&mem[XU + i], user[i], tvm_dnnl_engine, data[i]);
  }
  if (st == dnnl_success && cv->has_bias) st = dnnl_memory_create(&mem[B], &cv->bias, tvm_dnnl_engine, bias);
  for (int i = 0; i < 2 && st == dnnl_success; ++i) {
    if (!reorder[i]) continue;
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, mem[XU + i]}, {DNNL_ARG_TO, mem[i]}};
    st = dnnl_primitive_execute(reorder[i], stream, 2, args);
  }
  if (st == dnnl_success) {
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[X]}, {DNNL_ARG_WEIGHTS, mem[W]},
                               {DNNL_ARG_DST, mem[Y]}, {DNNL_ARG_BIAS, mem[B]}};
    st = dnnl_primitive_execute(cv->prim, stream, cv->has_bias ? 4 : 3, args);
  }
  if (st == dnnl_success && reorder[2]) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, mem[Y]}, {DNNL_ARG_TO, mem[YU]}};
    st = dnnl_primitive_execute(reorder[2], stream, 2, args);
  }
  if (st == dnnl_success) st = dnnl_stream_wait(stream);
  for (int i = 0; i < N; ++i) if (mem[i]) dnnl_memory_destroy(mem[i]);
  for (int i = 0; i < 3; ++i) free(tmp[i]);
  if (stream) dnnl_stream_destroy(stream);
  return st;
}
"""


def patterns() -> list[FusionPattern]:
    """The backend's patterns, most specific first."""
    return conv2d_patterns("dnnl") + matmul_patterns("dnnl")


#: (kernel layout, grouped) -> the oneDNN tag of that memory order over oneDNN's dims
_WEIGHT_TAGS = {("OIHW", False): "dnnl_oihw", ("OIHW", True): "dnnl_goihw",
                ("OHWI", False): "dnnl_ohwi", ("OHWI", True): "dnnl_gohwi",
                ("HWIO", False): "dnnl_hwio", ("HWIO", True): "dnnl_hwigo"}


def _dims(v: Sequence[int]) -> str:
    return "{" + ", ".join(map(str, v)) + "}"


class _Emitter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, lines: list[str], comp: Function, args: list[CTensor],
                 out: CTensor) -> None:
        if str(comp.attrs.get("Composite", "")).startswith("dnnl.conv2d"):
            self.conv2d(lines, comp, args, out)
        else:
            self.matmul(lines, comp, args, out)

    def conv2d(self, lines: list[str], comp: Function, args: list[CTensor],
               out: CTensor) -> None:
        spec = read_conv2d_composite(comp)
        x, w = args[spec.data], args[spec.weight]
        # oneDNN's dims are always (N, C, H, W) and (G,) O, I, KH, KW; the tag says how
        # they lie in memory
        perm = {k: spec.kernel_layout.index(k) for k in "OIHW"}
        o, i_, kh, kw = (w.shape[perm[k]] for k in "OIHW")
        wd = [o, i_, kh, kw] if spec.groups == 1 else [spec.groups, o // spec.groups, i_, kh, kw]
        w_tag = _WEIGHT_TAGS[(spec.kernel_layout, spec.groups > 1)]
        sd, od = ([s[spec.data_layout.index(k)] for k in "NCHW"] for s in (x.shape, out.shape))
        data_tag = "dnnl_nchw" if spec.data_layout == "NCHW" else "dnnl_nhwc"
        t, left, b, r = spec.padding
        i = self.count
        self.count += 1
        lines.append(f"  {{ static tvm_dnnl_conv* site{i}; tvm_dnnl_conv* cv;")
        lines.append(f"    static const dnnl_dim_t sd[] = {_dims(sd)}, "
                     f"wd[] = {_dims(wd)}, od[] = {_dims(od)}, "
                     f"strides[] = {_dims(spec.strides)}, "
                     f"dil[] = {_dims([d - 1 for d in spec.dilation])}, "
                     f"pl[] = {_dims([t, left])}, pr[] = {_dims([b, r])};")
        lines.append(f"    int st = tvm_dnnl_conv_make(&site{i}, &cv, sd, {data_tag}, {len(wd)}, "
                     f"wd, {w_tag}, od, strides, dil, pl, pr, {int(spec.bias is not None)}, "
                     f"{int(spec.relu)}, {int(w.constant)}, {w.ptr});")
        bias = "NULL" if spec.bias is None else args[spec.bias].ptr
        lines.append(f"    if (st == dnnl_success) st = tvm_dnnl_conv_run(cv, {x.ptr}, "
                     f"{w.ptr}, {bias}, {out.ptr});")
        lines.append("    if (st != dnnl_success) TVM_FAIL(\"dnnl: conv2d %d failed (oneDNN "
                     f"status %d)\", {i}, st); }}")

    def matmul(self, lines: list[str], comp: Function, args: list[CTensor],
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
        lines.append(f"  {{ static tvm_dnnl_mm* site{i}; tvm_dnnl_mm* mm;")
        lines.append(f"    static const dnnl_dim_t ad[] = {_dims(ad)}, bd[] = {_dims(bd)}, "
                     f"cd[] = {_dims(cd)}" + ("" if biasd is None else f", biasd[] = {_dims(biasd)}")
                     + ";")
        lines.append(f"    int st = tvm_dnnl_make(&site{i}, &mm, {len(cd)}, ad, bd, "
                     f"{'NULL' if biasd is None else 'biasd'}, cd, {int(spec.trans_b)});")
        lines.append(f"    if (st == dnnl_success) st = tvm_dnnl_run(mm, {a.ptr}, {b.ptr}, "
                     f"{'NULL' if spec.bias is None else args[spec.bias].ptr}, {out.ptr});")
        lines.append("    if (st != dnnl_success) TVM_FAIL(\"dnnl: matmul %d failed (oneDNN "
                     f"status %d)\", {i}, st); }}")


def generate_c(funcs: Sequence[tuple[str, Function]]) -> tuple[str, dict]:
    """The C source and the module metadata of the partition functions ``funcs``."""
    return packed_c_module(funcs, _HEADER + _CONV, _Emitter(), "dnnl")


def build_module(funcs: Sequence[tuple[str, Function]], lib: DNNLLibrary) -> Any:
    """Compile the partition functions into a loaded shared-library module."""
    source, _ = generate_c(funcs)
    return compile_c(source, "dnnl", [f"-I{lib.include_dir}", lib.path,
                                      f"-Wl,-rpath,{os.path.dirname(lib.path)}", "-lpthread", "-ldl"])
