/* Hand-written kernels following docs/abi.md, compiled by the tests with the system cc.
 * @META@ is replaced by the module metadata (a C string literal) before compiling. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef union { int64_t v_int64; double v_float64; void* v_handle; } TVMValue;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void* data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t* shape; int64_t* strides; uint64_t byte_offset;
} DLTensor;
typedef int32_t (*FTVMParallelLambda)(int32_t task_id, int32_t num_task, void* cdata);

/* Runtime slots, filled by tvm.runtime right after loading. */
void (*__TVMAPISetLastError)(const char* msg) = 0;
int32_t (*__TVMBackendParallelLaunch)(FTVMParallelLambda f, void* cdata, int32_t num_task) = 0;

const char __tvm_module_meta[] = @META@;

static int32_t fail(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (__TVMAPISetLastError) __TVMAPISetLastError(buf);
  return -1;
}

/* Check one 1-D compact float tensor argument. */
static int32_t check_vec(const char* fn, const char* name, TVMValue v, int32_t code,
                         uint8_t dcode, uint8_t bits, int64_t* n) {
  if (code != 7) return fail("%s: argument %s has type code %d, expected 7 (DLTensor*)", fn, name, code);
  DLTensor* t = (DLTensor*)v.v_handle;
  if (t->ndim != 1) return fail("%s: argument %s has ndim %d, expected 1", fn, name, t->ndim);
  if (t->dtype.code != dcode || t->dtype.bits != bits || t->dtype.lanes != 1)
    return fail("%s: argument %s has dtype (%d, %d, %d), expected (%d, %d, 1)", fn, name,
                t->dtype.code, t->dtype.bits, t->dtype.lanes, dcode, bits);
  if (t->device.device_type != 1)
    return fail("%s: argument %s is on device type %d, expected 1 (cpu)", fn, name, t->device.device_type);
  if (*n < 0) *n = t->shape[0];
  else if (t->shape[0] != *n)
    return fail("%s: argument %s has shape[0] = %lld, expected n = %lld", fn, name,
                (long long)t->shape[0], (long long)*n);
  if (t->strides && t->shape[0] > 1 && t->strides[0] != 1)
    return fail("%s: argument %s has strides[0] = %lld, expected 1 (compact)", fn, name,
                (long long)t->strides[0]);
  return 0;
}

/* B[i] = A[i] + alpha */
int32_t add_scalar(TVMValue* args, int32_t* codes, int32_t num_args, TVMValue* ret,
                   int32_t* ret_code, void* resource) {
  if (num_args != 3) return fail("add_scalar: expected 3 arguments, got %d", num_args);
  int64_t n = -1;
  if (check_vec("add_scalar", "A", args[0], codes[0], 2, 32, &n)) return -1;
  if (check_vec("add_scalar", "B", args[1], codes[1], 2, 32, &n)) return -1;
  if (codes[2] != 2) return fail("add_scalar: argument alpha has type code %d, expected 2", codes[2]);
  DLTensor* A = (DLTensor*)args[0].v_handle;
  DLTensor* B = (DLTensor*)args[1].v_handle;
  float* a = (float*)((char*)A->data + A->byte_offset);
  float* b = (float*)((char*)B->data + B->byte_offset);
  float alpha = (float)args[2].v_float64;
  for (int64_t i = 0; i < n; ++i) b[i] = a[i] + alpha;
  return 0;
}

/* returns x / y as an int; an error when y == 0 */
int32_t checked_div(TVMValue* args, int32_t* codes, int32_t num_args, TVMValue* ret,
                    int32_t* ret_code, void* resource) {
  if (num_args != 2) return fail("checked_div: expected 2 arguments, got %d", num_args);
  if (codes[0] != 0 || codes[1] != 0) return fail("checked_div: expected integer arguments");
  if (args[1].v_int64 == 0) return fail("checked_div: argument y must be non-zero, got 0");
  ret->v_int64 = args[0].v_int64 / args[1].v_int64;
  *ret_code = 0;
  return 0;
}

int32_t fails_silently(TVMValue* args, int32_t* codes, int32_t num_args, TVMValue* ret,
                       int32_t* ret_code, void* resource) {
  return -3;
}

/* ---- parallel kernels ---- */

typedef struct { double* out; int64_t n; int64_t iters; int32_t fail_task; } SpinClosure;

static int32_t spin_lambda(int32_t task_id, int32_t num_task, void* cdata) {
  SpinClosure* c = (SpinClosure*)cdata;
  if (task_id == c->fail_task) return fail("parallel_spin: task %d of %d failed on purpose", task_id, num_task);
  volatile double acc = 0.0;
  for (int64_t i = 0; i < c->iters; ++i) acc += (double)(i & 7) * 0.5;
  if (task_id < c->n) c->out[task_id] = 1.0 + (double)num_task + 0.0 * acc;
  return 0;
}

/* out[t] = 1 + num_task for each task t; iters of busy work per task; fail_task < 0: none */
int32_t parallel_spin(TVMValue* args, int32_t* codes, int32_t num_args, TVMValue* ret,
                      int32_t* ret_code, void* resource) {
  if (num_args != 4) return fail("parallel_spin: expected 4 arguments, got %d", num_args);
  int64_t n = -1;
  if (check_vec("parallel_spin", "out", args[0], codes[0], 2, 64, &n)) return -1;
  if (!__TVMBackendParallelLaunch) return fail("parallel_spin: runtime slot not filled");
  DLTensor* out = (DLTensor*)args[0].v_handle;
  SpinClosure c = {(double*)((char*)out->data + out->byte_offset), n, args[1].v_int64,
                   (int32_t)args[3].v_int64};
  int32_t rc = __TVMBackendParallelLaunch(spin_lambda, &c, (int32_t)args[2].v_int64);
  return rc;
}

typedef struct { double* out; int32_t outer; } NestedClosure;

static int32_t inner_lambda(int32_t task_id, int32_t num_task, void* cdata) {
  NestedClosure* c = (NestedClosure*)cdata;
  c->out[c->outer * num_task + task_id] += 1.0;
  return 0;
}

static int32_t outer_lambda(int32_t task_id, int32_t num_task, void* cdata) {
  NestedClosure c = {(double*)cdata, task_id};
  return __TVMBackendParallelLaunch(inner_lambda, &c, 3);
}

/* out (shape [2 * 3]): each element incremented exactly once by nested launches */
int32_t nested_parallel(TVMValue* args, int32_t* codes, int32_t num_args, TVMValue* ret,
                        int32_t* ret_code, void* resource) {
  if (num_args != 1) return fail("nested_parallel: expected 1 argument, got %d", num_args);
  int64_t n = 6;
  if (check_vec("nested_parallel", "out", args[0], codes[0], 2, 64, &n)) return -1;
  DLTensor* out = (DLTensor*)args[0].v_handle;
  return __TVMBackendParallelLaunch(outer_lambda, (char*)out->data + out->byte_offset, 2);
}

typedef struct { double* out; int64_t n; volatile int32_t arrived; double timeout_s; } MeetClosure;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every task announces itself, then waits (up to timeout_s) until all num_task tasks have:
 * out[t] = 1 when task t saw them all at once (they ran concurrently), 0 after a timeout. */
static int32_t meet_lambda(int32_t task_id, int32_t num_task, void* cdata) {
  MeetClosure* c = (MeetClosure*)cdata;
  __atomic_add_fetch(&c->arrived, 1, __ATOMIC_SEQ_CST);
  double deadline = now_s() + c->timeout_s;
  int32_t all = 0;
  while (!(all = __atomic_load_n(&c->arrived, __ATOMIC_SEQ_CST) >= num_task) && now_s() < deadline) {
  }
  if (task_id < c->n) c->out[task_id] = all ? 1.0 : 0.0;
  return 0;
}

/* parallel_meet(out, num_task, timeout_s): see meet_lambda */
int32_t parallel_meet(TVMValue* args, int32_t* codes, int32_t num_args, TVMValue* ret,
                      int32_t* ret_code, void* resource) {
  if (num_args != 3) return fail("parallel_meet: expected 3 arguments, got %d", num_args);
  int64_t n = -1;
  if (check_vec("parallel_meet", "out", args[0], codes[0], 2, 64, &n)) return -1;
  if (!__TVMBackendParallelLaunch) return fail("parallel_meet: runtime slot not filled");
  DLTensor* out = (DLTensor*)args[0].v_handle;
  MeetClosure c = {(double*)((char*)out->data + out->byte_offset), n, 0, args[2].v_float64};
  return __TVMBackendParallelLaunch(meet_lambda, &c, (int32_t)args[1].v_int64);
}

