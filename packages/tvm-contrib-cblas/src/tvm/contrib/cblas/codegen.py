"""The cblas backend: the shared matmul patterns, and C over the library's ``sgemm``.

Patterns and check: :mod:`tvm.relax.backend.matmul` (``cblas.dense_bias``,
``cblas.matmul_bias``, ``cblas.dense``, ``cblas.matmul``; float32, static shapes, 2-D or
3-D).  Constants reach the partitions as arguments (the backend partitions with
``bind_constants=False``), so weights bound with ``relax.build(..., params=...)`` are
passed by the VM from its constant table.  Each partition becomes one packed C function
(:mod:`tvm.relax.backend.c_source`: argument checks as compiled kernels do them) calling
the library's sgemm: one call per batch (or one over the rows of a 3-D lhs times a 2-D
rhs), the bias copied into the output first and accumulated with ``beta = 1``.  Compiled by
the system C compiler, linked against the CBLAS of :func:`~.library.find_cblas`, cached
under ``$TVM_CACHE_DIR/cblas``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from tvm.relax.backend import FusionPattern
from tvm.relax.backend.c_source import CTensor, compile_c, packed_c_module
from tvm.relax.backend.matmul import matmul_patterns, read_matmul_composite
from tvm.relax.expr import Function

from .library import CBLASLibrary

__all__ = ["patterns", "generate_c", "build_module"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

_HEADER = """typedef BLASINT blasint_t;
extern void SGEMM(int order, int transa, int transb, blasint_t m, blasint_t n, blasint_t k,
                  float alpha, const float* a, blasint_t lda, const float* b, blasint_t ldb,
                  float beta, float* c, blasint_t ldc);
"""


def patterns() -> list[FusionPattern]:
    """The backend's patterns, most specific first."""
    return matmul_patterns("cblas")


def _emit_gemm(lines: list[str], comp: Function, args: list[CTensor], out: CTensor) -> None:
    spec = read_matmul_composite(comp)
    a, b = args[spec.a], args[spec.b]
    m, k = a.shape[-2], a.shape[-1]
    n = out.shape[-1]
    batch_b = len(b.shape) == 3
    rows = m * (a.shape[0] if len(a.shape) == 3 and not batch_b else 1)
    nbatch = a.shape[0] if batch_b else 1
    beta = "0.0f"
    if spec.bias is not None:
        lines.append(f"  for (int64_t r = 0; r < {rows * nbatch}; ++r) memcpy({out.ptr} + r * "
                     f"{n}, {args[spec.bias].ptr}, {n} * sizeof(float));")
        beta = "1.0f"
    lines.append(f"  for (int64_t i = 0; i < {nbatch}; ++i)")
    lines.append(f"    SGEMM({_ROW_MAJOR}, {_NO_TRANS}, {_TRANS if spec.trans_b else _NO_TRANS}, "
                 f"{rows}, {n}, {k}, 1.0f, {a.ptr} + i * {rows * k}, {k}, "
                 f"{b.ptr} + i * {(k * n) if batch_b else 0}, {k if spec.trans_b else n}, "
                 f"{beta}, {out.ptr} + i * {rows * n}, {n});")


def generate_c(funcs: Sequence[tuple[str, Function]], lib: CBLASLibrary) -> tuple[str, dict]:
    """The C source and the module metadata of the partition functions ``funcs``."""
    header = f"#define BLASINT {lib.int_type}\n#define SGEMM {lib.sgemm}\n{_HEADER}"
    return packed_c_module(funcs, header, _emit_gemm, "cblas")


def build_module(funcs: Sequence[tuple[str, Function]], lib: CBLASLibrary) -> Any:
    """Compile the partition functions into a loaded shared-library module."""
    source, _ = generate_c(funcs, lib)
    return compile_c(source, "cblas", [lib.path, f"-Wl,-rpath,{os.path.dirname(lib.path)}"])
