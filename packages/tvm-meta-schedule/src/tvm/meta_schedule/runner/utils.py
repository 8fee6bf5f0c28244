"""Pieces shared by the measuring runners: which cores measure, the timer library that runs
inside the runner server, and the comparison of a kernel's results with the expected ones.

**Core policy** (one machine): a measurement runs on :func:`measure_cores` (``num_threads``
cores of this process's CPU set, ending with ``last_core``, by default the highest one), one
candidate at a time; :class:`~tvm.meta_schedule.builder.LocalBuilder`'s workers are pinned to
the remaining cores (:func:`build_cores`).  When a multi-threaded kernel needs every core,
building and measuring still never overlap: the task scheduler calls ``builder.build()``
and then ``runner.run()``, and :class:`~.local_runner.LocalRunner` measures inside ``run()``
(its futures are ready when it returns).

**Timer** (:data:`TIMER_SOURCE`): a small library with the kernel C ABI (docs/abi.md) that
the runner server (:mod:`tvm.runtime.runner.process`) loads beside the candidates.  Called
through the server's ordinary CALL request, it finds the candidate's function in the
already loaded library and does TVM's ``time_evaluator`` in the child process: a warm-up
call, growing ``number`` until one round lasts ``min_repeat_ms``, then ``repeat`` timed
rounds with an optional cooldown between them and an optional flush of the arguments from
the CPU caches before every call (``repeat`` 0: one call, whose results the check reads).
It arms ``alarm()`` for the call, so a child whose kernel hangs ends itself a little after
its parent's timeout even when the parent is gone.  So timing needs no protocol of its own,
and one request per candidate.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

__all__ = ["measure_cores", "build_cores", "available_cores", "timer_library",
           "compare_results", "TIMER_SYMBOL"]

TIMER_SYMBOL = "tvm_ms_time_evaluator"


def available_cores() -> list[int]:
    """The cores this process may run on, ascending."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


def measure_cores(num_threads: int = 1, last_core: Optional[int] = None) -> list[int]:
    """The ``num_threads`` cores a measurement runs on: consecutive cores of this process's
    CPU set that end with ``last_core`` (default: the highest one)."""
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be an int >= 1, got {num_threads!r}")
    cores = available_cores()
    if last_core is None:
        last_core = cores[-1]
    if last_core not in cores:
        raise ValueError(f"core {last_core} is not one this process may run on ({cores})")
    end = cores.index(last_core) + 1
    if num_threads > end:
        raise ValueError(f"{num_threads} measuring threads ending at core {last_core} do not "
                         f"fit in the cores this process may run on ({cores})")
    return cores[end - num_threads:end]


def build_cores(avoid: Sequence[int]) -> list[int]:
    """The cores builds run on: the available ones except ``avoid`` (all of them when that
    would leave none)."""
    cores = available_cores()
    rest = [c for c in cores if c not in set(avoid)]
    return rest or cores


def set_thread_affinity(cores: Sequence[int]) -> Optional[set[int]]:
    """Pin the calling thread to ``cores`` (processes it starts inherit that); returns the
    previous set, or None where affinity cannot be set."""
    try:
        old = os.sched_getaffinity(0)
        os.sched_setaffinity(0, set(cores))
        return old
    except (AttributeError, OSError):
        return None


# ---------------------------------------------------------------------------- the timer

TIMER_SOURCE = r"""
/* tvm.meta_schedule timer: time_evaluator inside the tvm runner server (see utils.py). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef union { int64_t v_int64; double v_float64; void *v_handle; } TVMValue;
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
  void *data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t *shape, *strides; uint64_t byte_offset;
} DLTensor;
typedef int32_t (*PackedFunc)(TVMValue *, int32_t *, int32_t, TVMValue *, int32_t *, void *);

void (*__TVMAPISetLastError)(const char *msg) = 0;
const char __tvm_module_meta[] = @META@;

static int32_t fail(const char *msg, const char *arg) {
  char buf[1024];
  snprintf(buf, sizeof(buf), msg, arg);
  if (__TVMAPISetLastError) __TVMAPISetLastError(buf);
  return -1;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char scratch_sink;
static void flush_tensor(const DLTensor *t) {
  uint64_t n = t->dtype.bits / 8 * (uint64_t)(t->dtype.lanes ? t->dtype.lanes : 1);
  for (int32_t d = 0; d < t->ndim; ++d) n *= (uint64_t)t->shape[d];
  const char *p = (const char *)t->data + t->byte_offset;
#if defined(__x86_64__) || defined(__i386__)
  for (uint64_t i = 0; i < n; i += 64) __builtin_ia32_clflush(p + i);
  __builtin_ia32_mfence();
#elif defined(__aarch64__)
  for (uint64_t i = 0; i < n; i += 64) __asm__ volatile("dc civac, %0" ::"r"(p + i) : "memory");
  __asm__ volatile("dsb ish" ::: "memory");
#else
  /* no cache-line flush instruction known: evict by streaming through 64 MiB */
  static char *big = 0;
  if (!big) big = (char *)calloc(1, 64u << 20);
  if (big) for (uint64_t i = 0; i < (64u << 20); i += 64) scratch_sink += ++big[i];
  (void)p; (void)n;
#endif
}

static void flush_args(TVMValue *v, int32_t *codes, int32_t n) {
  for (int32_t i = 0; i < n; ++i)
    if (codes[i] == 7 && v[i].v_handle) flush_tensor((const DLTensor *)v[i].v_handle);
}

static int32_t str_arg(TVMValue v, int32_t code, char *out, size_t cap) {
  if (code != 7) return -1;
  const DLTensor *t = (const DLTensor *)v.v_handle;
  if (t->ndim != 1 || t->dtype.bits != 8 || (uint64_t)t->shape[0] >= cap) return -1;
  memcpy(out, (const char *)t->data + t->byte_offset, (size_t)t->shape[0]);
  out[t->shape[0]] = 0;
  return 0;
}

typedef struct {
  PackedFunc f; TVMValue *v; int32_t *c; int32_t n;
  int64_t number, repeat, flush; double min_repeat_s, cooldown; double *out;
} Eval;

static int32_t call(Eval *e) {
  TVMValue ret; int32_t ret_code = 4;
  return e->f(e->v, e->c, e->n, &ret, &ret_code, NULL);
}

/* `number` calls (each after a flush if asked); their seconds, or < 0 on an error (*rc) */
static double round_of(Eval *e, int32_t *rc) {
  double elapsed = 0.0;
  if (e->flush) {
    for (int64_t k = 0; k < e->number; ++k) {
      flush_args(e->v, e->c, e->n);
      double t0 = now();
      if ((*rc = call(e)) != 0) return -1.0;
      elapsed += now() - t0;
    }
    return elapsed;
  }
  double t0 = now();
  for (int64_t k = 0; k < e->number; ++k)
    if ((*rc = call(e)) != 0) return -1.0;
  return now() - t0;
}

static int32_t evaluate(Eval *e) {
  int32_t rc = 0;
  if ((rc = call(e)) != 0 || e->repeat == 0) return rc; /* warm-up, or the one checked call */
  for (;;) { /* grow number until one round lasts min_repeat_ms */
    double elapsed = round_of(e, &rc);
    if (elapsed < 0) return rc;
    if (elapsed >= e->min_repeat_s || e->number >= (1LL << 40)) break;
    double per_call = elapsed / (double)e->number;
    double want = per_call > 0 ? e->min_repeat_s / per_call * 1.1 : (double)e->number * 10;
    int64_t grown = (int64_t)ceil(want);
    e->number = grown > e->number * 2 ? grown : e->number * 2;
    if (e->number > (1LL << 40)) e->number = 1LL << 40;
  }
  for (int64_t r = 0; r < e->repeat; ++r) {
    if (r > 0 && e->cooldown > 0) {
      double whole = floor(e->cooldown);
      struct timespec ts = {(time_t)whole, (long)((e->cooldown - whole) * 1e9)};
      nanosleep(&ts, NULL);
    }
    double elapsed = round_of(e, &rc);
    if (elapsed < 0) return rc;
    e->out[r] = elapsed / (double)e->number;
  }
  return 0;
}

/* args: path (u8[]), symbol (u8[]), number, repeat (0: call once, for the check),
 *       min_repeat_ms, cooldown_s, flush, watchdog_s, out seconds (f64[max(repeat, 1)]),
 *       then the kernel's arguments.  The watchdog (alarm) ends this process if the call
 *       outlives its parent's timeout, even when the parent is gone. */
int32_t tvm_ms_time_evaluator(TVMValue *args, int32_t *codes, int32_t num_args, TVMValue *ret,
                              int32_t *ret_code, void *resource) {
  char path[4096], symbol[512];
  if (num_args < 9) return fail("timer: expected at least 9 arguments%s", "");
  if (str_arg(args[0], codes[0], path, sizeof(path)) || str_arg(args[1], codes[1], symbol, sizeof(symbol)))
    return fail("timer: the path and symbol must be u8 tensors%s", "");
  if (codes[2] != 0 || codes[3] != 0 || codes[4] != 2 || codes[5] != 2 || codes[6] != 0 ||
      codes[7] != 2 || codes[8] != 7)
    return fail("timer: malformed arguments%s", "");
  Eval e;
  e.number = args[2].v_int64; e.repeat = args[3].v_int64; e.flush = args[6].v_int64;
  e.min_repeat_s = args[4].v_float64 / 1000.0; e.cooldown = args[5].v_float64;
  double watchdog = args[7].v_float64;
  DLTensor *secs = (DLTensor *)args[8].v_handle;
  if (e.number < 1 || e.repeat < 0 || secs->ndim != 1 || secs->shape[0] < e.repeat)
    return fail("timer: bad number/repeat or output shape%s", "");
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return fail("timer: the library %s is not loaded in this server", path);
  e.f = (PackedFunc)dlsym(lib, symbol);
  dlclose(lib); /* the server still holds it */
  if (!e.f) return fail("timer: the library has no function %s", symbol);
  e.v = args + 9; e.c = codes + 9; e.n = num_args - 9;
  e.out = (double *)((char *)secs->data + secs->byte_offset);
  if (watchdog > 0) alarm((unsigned)ceil(watchdog));
  int32_t rc = evaluate(&e);
  alarm(0);
  return rc;
}
"""

_TIMER_META = {"version": 1, "target": "c",
               "functions": [{"name": TIMER_SYMBOL, "symbol": TIMER_SYMBOL}]}
_timer_lock = threading.Lock()


def _c_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def timer_library(cc: Optional[str] = None) -> Path:
    """The timer library compiled by ``cc`` (``$CC``, else ``cc``/``gcc``/``clang``), from
    the cache (``tvm.ffi.knobs.cache_dir("meta_schedule")``) when built before."""
    from tvm.ffi import knobs
    from tvm.runtime.runner import RunnerUnavailableError

    cc = cc or knobs.CC.get()
    candidates = [cc] if cc else ["cc", "gcc", "clang"]
    parts = next((c.split() for c in candidates if c and shutil.which(c.split()[0])), None)
    if parts is None:
        raise RunnerUnavailableError(
            f"meta_schedule runner: no C compiler to build the timer library (tried "
            f"{', '.join(candidates)}); install one or set $CC")
    exe = shutil.which(parts[0])
    source = TIMER_SOURCE.replace("@META@", _c_literal(json.dumps(_TIMER_META)))
    key = hashlib.sha256((source + "\0".join([exe, *parts[1:]])).encode()).hexdigest()[:16]
    out = knobs.cache_dir("meta_schedule") / f"tvm-ms-timer-{key}.so"
    if out.exists():
        return _sealed(out)
    with _timer_lock:
        if out.exists():
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        src = out.with_name(f"{out.stem}.{os.getpid()}.c")
        tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
        src.write_text(source)
        cmd = [exe, *parts[1:], "-O2", "-std=gnu11", "-shared", "-fPIC", "-o", str(tmp),
               str(src), "-ldl", "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        src.unlink(missing_ok=True)
        if proc.returncode != 0:
            raise RunnerUnavailableError(
                f"meta_schedule runner: building the timer library failed (exit "
                f"{proc.returncode}):\n  {' '.join(cmd)}\n{proc.stderr}")
        os.replace(tmp, out)
    return _sealed(out)


_checked: set[Path] = set()


def _sealed(path: Path) -> Path:
    """``path``, carrying tvm's file seal where the runtime checks seals before loading (it
    refuses libraries tvm did not write)."""
    if path not in _checked:
        try:
            from tvm.runtime.file_seal import seal_file
        except ImportError:  # a runtime without seals
            pass
        else:
            seal_file(path)
        _checked.add(path)
    return path


# ---------------------------------------------------------------------------- checking


def compare_results(actual: dict[int, np.ndarray], expected: Sequence[np.ndarray],
                    rtol: float, atol: float, names: Sequence[str] = ()) -> Optional[str]:
    """None when every argument ``i`` of ``actual`` matches ``expected[i]`` (NaN where NaN is
    expected), else ``"wrong result: ..."`` naming the first argument that differs, its
    largest difference and where."""
    if len(expected) != len(actual):
        return (f"wrong result: the check expects {len(expected)} arguments, the kernel has "
                f"{len(actual)}")
    for i, want in enumerate(expected):
        got = actual[i]
        name = f"argument {i}" + (f" ({names[i]})" if i < len(names) and names[i] else "")
        want = np.asarray(want)
        if got.shape != want.shape:
            return f"wrong result: {name} has shape {got.shape}, expected {want.shape}"
        if got.dtype.kind in "fc" or want.dtype.kind in "fc":
            g, w = got.astype(np.float64), want.astype(np.float64)
            ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            g, w = got.astype(np.int64), want.astype(np.int64)
            ok = g == w
        if ok.all():
            continue
        bad = int(np.count_nonzero(~ok))
        diff = np.abs(g - w)
        diff = np.where(ok, 0.0, np.where(np.isnan(diff), np.inf, diff))
        at = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
        where = tuple(int(x) for x in at)
        return (f"wrong result: {name} differs in {bad} of {ok.size} elements; max abs diff "
                f"{float(np.abs(g[at] - w[at])):.6g} at {where} (got {g[at].item()!r}, "
                f"expected {w[at].item()!r}; rtol={rtol:g}, atol={atol:g})")
    return None
