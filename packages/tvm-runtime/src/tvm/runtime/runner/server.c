/* tvm runner server: runs kernels of an exported tvm library on the machine (or emulator)
 * it executes on, for tvm.runtime.runner (see docs/runners.md).
 *
 * It dlopens libraries that follow docs/abi.md, fills their runtime slots
 * (__TVMAPISetLastError, __TVMBackendParallelLaunch, __TVMBackendNumThreads), and answers
 * requests read from stdin; replies go to the original stdout (fd 1 is redirected to stderr
 * so that nothing a library prints can corrupt the protocol).  No Python is involved.
 *
 * Every message is   u32 op-or-status | u64 payload length | payload   (little-endian).
 * Requests:
 *   0 QUIT
 *   1 HELLO   -> "tvm-runner <protocol> <pointer bits> <machine>"
 *   2 LOAD    path                      -> u32 module id, then the module's metadata JSON
 *   3 CALL    u32 module, u32 len, name, u32 number, u32 repeat, u32 nargs, args
 *             arg: u8 type code (0 int, 1 uint, 2 float, 4 null, 7 tensor) then
 *                  int/uint: i64 | float: f64 | null: - |
 *                  tensor: u8 return?, u8 dtype code, u8 bits, u16 lanes, u32 ndim,
 *                          i64 shape[ndim], u64 nbytes, data
 *             -> u32 count, (u32 arg index, u64 nbytes, data) per returned tensor (their
 *                contents after the first call), u32 repeat, f64 seconds per call of each
 *                of the `repeat` timed rounds of `number` calls
 *   4 THREADS u32 n                     -> (empty): the thread count of parallel launches
 *   5 UPLOAD  the library's bytes       -> as LOAD (the server writes them to a temporary
 *             file, loads it and removes the file: for a server on another machine)
 * A reply has status 0 (ok) or 1 (error; the payload is the message).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define PROTOCOL 1
#define MAX_MODULES 64

typedef union { int64_t v_int64; double v_float64; void *v_handle; } TVMValue;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct {
  void *data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t *shape, *strides; uint64_t byte_offset;
} DLTensor;
typedef int32_t (*PackedFunc)(TVMValue *, int32_t *, int32_t, TVMValue *, int32_t *, void *);
typedef int32_t (*ParallelLambda)(int32_t task_id, int32_t num_task, void *cdata);

static int proto_out = 1;
/* at most this many threads run a parallel launch (what kernels see as the thread count) */
#define MAX_WORKERS 256
static int32_t num_threads = 1;
static void *modules[MAX_MODULES];
static int num_modules = 0;
static __thread char last_error[4096];

/* ------------------------------------------------------------------ runtime slots */

static void set_last_error(const char *msg) {
  strncpy(last_error, msg ? msg : "", sizeof(last_error) - 1);
  last_error[sizeof(last_error) - 1] = 0;
}

typedef struct {
  ParallelLambda f; void *cdata; int32_t num_task;
  int32_t next, status;
} Launch;

static void *launch_worker(void *arg) {
  Launch *l = (Launch *)arg;
  for (;;) {
    int32_t task = __atomic_fetch_add(&l->next, 1, __ATOMIC_SEQ_CST);
    if (task >= l->num_task) break;
    int32_t rc = l->f(task, l->num_task, l->cdata);
    if (rc != 0) {
      int32_t zero = 0;
      __atomic_compare_exchange_n(&l->status, &zero, rc, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
  }
  return NULL;
}

static int32_t parallel_launch(ParallelLambda f, void *cdata, int32_t num_task) {
  if (num_task <= 0) num_task = num_threads;
  int32_t workers = num_threads < num_task ? num_threads : num_task;
  Launch l = {f, cdata, num_task, 0, 0};
  pthread_t threads[MAX_WORKERS];
  if (workers > MAX_WORKERS) workers = MAX_WORKERS;
  int started = 0;
  for (int i = 1; i < workers; ++i)
    if (pthread_create(&threads[started], NULL, launch_worker, &l) == 0) ++started;
  launch_worker(&l);
  for (int i = 0; i < started; ++i) pthread_join(threads[i], NULL);
  return l.status;
}

/* ------------------------------------------------------------------ i/o */

static int read_full(void *buf, size_t n) {
  char *p = (char *)buf;
  while (n) {
    ssize_t r = read(0, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r; n -= (size_t)r;
  }
  return 0;
}

static void write_full(const void *buf, size_t n) {
  const char *p = (const char *)buf;
  while (n) {
    ssize_t w = write(proto_out, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) exit(3);  /* the host went away */
    p += w; n -= (size_t)w;
  }
}

typedef struct { char *data; size_t len, cap; } Buf;

static void buf_put(Buf *b, const void *src, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    b->data = (char *)realloc(b->data, cap);
    if (!b->data) { fprintf(stderr, "tvm runner server: out of memory\n"); exit(4); }
    b->cap = cap;
  }
  memcpy(b->data + b->len, src, n);
  b->len += n;
}

static void reply(uint32_t status, const void *payload, uint64_t n) {
  write_full(&status, 4);
  write_full(&n, 8);
  if (n) write_full(payload, n);
}

static void reply_error(const char *fmt, const char *arg) {
  char msg[4600];
  snprintf(msg, sizeof(msg), fmt, arg);
  reply(1, msg, strlen(msg));
}

/* A cursor over a request payload; `ok` drops to 0 when a read runs past the end. */
typedef struct { const char *p, *end; int ok; } Cursor;

static const void *take(Cursor *c, size_t n) {
  if (!c->ok || (size_t)(c->end - c->p) < n) { c->ok = 0; return NULL; }
  const void *r = c->p;
  c->p += n;
  return r;
}
#define TAKE(c, T, dflt) (take((c), sizeof(T)) ? *(const T *)((c)->p - sizeof(T)) : (dflt))

/* ------------------------------------------------------------------ requests */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void load_path(const char *path) {
  if (num_modules >= MAX_MODULES) { reply_error("LOAD: too many modules loaded%s", ""); return; }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) { reply_error("cannot load the library: %s", dlerror()); return; }
  const char *meta = (const char *)dlsym(h, "__tvm_module_meta");
  if (!meta) {
    dlclose(h);
    reply_error("the library defines no __tvm_module_meta: it is not a tvm module%s", "");
    return;
  }
  void **slot;
  if ((slot = (void **)dlsym(h, "__TVMAPISetLastError"))) *slot = (void *)set_last_error;
  if ((slot = (void **)dlsym(h, "__TVMBackendParallelLaunch"))) *slot = (void *)parallel_launch;
  if ((slot = (void **)dlsym(h, "__TVMBackendNumThreads"))) *slot = (void *)&num_threads;
  uint32_t id = (uint32_t)num_modules;
  modules[num_modules++] = h;
  Buf out = {0};
  buf_put(&out, &id, 4);
  buf_put(&out, meta, strlen(meta));
  reply(0, out.data, out.len);
  free(out.data);
}

static void do_load(const char *payload, uint64_t n) {
  char path[4096];
  if (n >= sizeof(path)) { reply_error("LOAD: path too long%s", ""); return; }
  memcpy(path, payload, n);
  path[n] = 0;
  load_path(path);
}

static void do_upload(const char *payload, uint64_t n) {
  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/tvm-runner-lib-XXXXXX", dir && dir[0] ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) { reply_error("UPLOAD: cannot create a temporary file: %s", strerror(errno)); return; }
  const char *p = payload;
  uint64_t left = n;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { close(fd); unlink(path); reply_error("UPLOAD: cannot write %s", path); return; }
    p += w; left -= (uint64_t)w;
  }
  close(fd);
  load_path(path);
  unlink(path);  /* the mapping stays valid */
}

static void do_call(const char *payload, uint64_t n) {
  Cursor c = {payload, payload + n, 1};
  uint32_t mod = TAKE(&c, uint32_t, 0);
  uint32_t name_len = TAKE(&c, uint32_t, 0);
  const char *name_p = (const char *)take(&c, name_len);
  uint32_t number = TAKE(&c, uint32_t, 1);
  uint32_t repeat = TAKE(&c, uint32_t, 0);
  uint32_t nargs = TAKE(&c, uint32_t, 0);
  if (!c.ok || nargs > 4096) { reply_error("CALL: malformed request%s", ""); return; }
  char name[512];
  if (name_len >= sizeof(name)) { reply_error("CALL: function name too long%s", ""); return; }
  memcpy(name, name_p, name_len);
  name[name_len] = 0;
  if (mod >= (uint32_t)num_modules) { reply_error("CALL: no module loaded with that id%s", ""); return; }
  PackedFunc f = (PackedFunc)dlsym(modules[mod], name);
  if (!f) { reply_error("the library has no function %s", name); return; }

  TVMValue *values = (TVMValue *)calloc(nargs + 1, sizeof(TVMValue));
  int32_t *codes = (int32_t *)calloc(nargs + 1, sizeof(int32_t));
  DLTensor *tensors = (DLTensor *)calloc(nargs + 1, sizeof(DLTensor));
  uint8_t *want = (uint8_t *)calloc(nargs + 1, 1);
  uint64_t *sizes = (uint64_t *)calloc(nargs + 1, sizeof(uint64_t));
  for (uint32_t i = 0; i < nargs && c.ok; ++i) {
    uint8_t code = TAKE(&c, uint8_t, 255);
    codes[i] = code;
    if (code == 0 || code == 1) values[i].v_int64 = TAKE(&c, int64_t, 0);
    else if (code == 2) values[i].v_float64 = TAKE(&c, double, 0.0);
    else if (code == 4) values[i].v_handle = NULL;
    else if (code == 7) {
      DLTensor *t = &tensors[i];
      want[i] = TAKE(&c, uint8_t, 0);
      t->dtype.code = TAKE(&c, uint8_t, 0);
      t->dtype.bits = TAKE(&c, uint8_t, 0);
      t->dtype.lanes = TAKE(&c, uint16_t, 0);
      t->ndim = (int32_t)TAKE(&c, uint32_t, 0);
      t->shape = (int64_t *)calloc((size_t)t->ndim + 1, sizeof(int64_t));
      for (int32_t d = 0; d < t->ndim; ++d) t->shape[d] = TAKE(&c, int64_t, 0);
      uint64_t nbytes = TAKE(&c, uint64_t, 0);
      const void *src = take(&c, nbytes);
      sizes[i] = nbytes;
      if (posix_memalign(&t->data, 64, nbytes ? nbytes : 64) != 0) c.ok = 0;
      else if (src) memcpy(t->data, src, nbytes);
      t->device.device_type = 1;
      values[i].v_handle = t;
    } else c.ok = 0;
  }
  if (!c.ok) {
    reply_error("CALL: malformed arguments for %s", name);
  } else {
    TVMValue ret; int32_t ret_code = 4;
    set_last_error("");
    int32_t rc = f(values, codes, (int32_t)nargs, &ret, &ret_code, NULL);
    if (rc != 0) {
      char msg[4600];
      snprintf(msg, sizeof(msg), "%s", last_error[0] ? last_error : "");
      if (!msg[0]) snprintf(msg, sizeof(msg), "%s: the kernel failed (code %d) without a message", name, rc);
      reply(1, msg, strlen(msg));
    } else {
      Buf out = {0};
      uint32_t count = 0;
      for (uint32_t i = 0; i < nargs; ++i) count += codes[i] == 7 && want[i];
      buf_put(&out, &count, 4);
      for (uint32_t i = 0; i < nargs; ++i) {
        if (codes[i] != 7 || !want[i]) continue;
        buf_put(&out, &i, 4);
        buf_put(&out, &sizes[i], 8);
        buf_put(&out, tensors[i].data, sizes[i]);
      }
      buf_put(&out, &repeat, 4);
      for (uint32_t r = 0; r < repeat && rc == 0; ++r) {
        double start = now();
        for (uint32_t k = 0; k < number && rc == 0; ++k)
          rc = f(values, codes, (int32_t)nargs, &ret, &ret_code, NULL);
        double per_call = (now() - start) / (number ? number : 1);
        buf_put(&out, &per_call, 8);
      }
      if (rc != 0) reply(1, last_error, strlen(last_error));
      else reply(0, out.data, out.len);
      free(out.data);
    }
  }
  for (uint32_t i = 0; i < nargs; ++i)
    if (codes[i] == 7) { free(tensors[i].data); free(tensors[i].shape); }
  free(values); free(codes); free(tensors); free(want); free(sizes);
}

int main(void) {
  proto_out = dup(1);
  dup2(2, 1);  /* whatever a library prints goes to stderr */
  const char *env = getenv("TVM_NUM_THREADS");
  if (env && atoi(env) > 0) num_threads = atoi(env) > MAX_WORKERS ? MAX_WORKERS : atoi(env);
  for (;;) {
    uint32_t op; uint64_t n;
    if (read_full(&op, 4) || read_full(&n, 8)) return 0;  /* the host closed the pipe */
    char *payload = (char *)malloc(n ? n : 1);
    if (!payload) { fprintf(stderr, "tvm runner server: out of memory\n"); return 4; }
    if (n && read_full(payload, n)) return 2;
    if (op == 0) { reply(0, NULL, 0); free(payload); return 0; }
    if (op == 1) {
      struct utsname u;
      char hello[512];
      uname(&u);
      snprintf(hello, sizeof(hello), "tvm-runner %d %d %s", PROTOCOL, (int)(8 * sizeof(void *)), u.machine);
      reply(0, hello, strlen(hello));
    } else if (op == 2) do_load(payload, n);
    else if (op == 5) do_upload(payload, n);
    else if (op == 3) do_call(payload, n);
    else if (op == 4 && n == 4) {
      int32_t t = *(int32_t *)payload;
      num_threads = t <= 0 ? 1 : (t > MAX_WORKERS ? MAX_WORKERS : t);
      reply(0, NULL, 0);
    } else reply_error("unknown request%s", "");
    free(payload);
  }
}
