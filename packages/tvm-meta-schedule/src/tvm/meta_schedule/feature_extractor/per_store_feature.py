"""PerStoreFeature: one fixed-length float32 vector per BufferStore of the lowered kernel.

In the spirit of Ansor / MetaSchedule: the candidate is lowered with the first passes of
:func:`tvm.tir.build.get_lowering_pipeline` (blocks lowered, init blocks and checks
explicit, buffers compacted, simplified; stopped before FlattenBuffer so buffers keep their
dimensions, and before VectorizeLoop/UnrollLoop so every loop keeps its kind), then one
visitor walks the loops and describes each store by what it computes, how its loops are
annotated, which buffers it touches and how, how its arithmetic intensity grows with the
loop nest, what it allocates and how deep it sits.  Every feature is listed with its
meaning in :data:`FEATURES` (and docs/meta_schedule_features.md); counts, bytes and extents
are log-scaled as ``log2(1 + x)``.

Approximations (documented, shared by all candidates so rankings stay meaningful): a loop
or buffer dimension that is not a constant counts as :data:`SYMBOLIC_EXTENT_GUESS`; a store
under an ``if`` runs on every iteration, except over the loops whose variables an
``expr == const`` condition fixes (a lowered init block's ``if k == 0`` runs once over the
reduction loops); an index that is not linear in the loop variables takes each loop's
average slope over its range.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
from tvm.arith import Analyzer
from tvm.arith.detect_linear import detect_linear_equation
from tvm.ir import DataType
from tvm.ir.module import IRModule
from tvm.ir.transform import Sequential
from tvm.tir import transform as T
from tvm.tir.build import get_lowering_pipeline
from tvm.tir.expr import EQ, Add, And, BufferLoad, Mul, Sub
from tvm.tir.expr_util import const_int
from tvm.tir.function import PrimFunc
from tvm.tir.functor import StmtExprVisitor
from tvm.tir.stmt import ForKind
from tvm.tir.stmt_functor import free_vars, substitute

from .feature_extractor import FeatureExtractor

__all__ = ["PerStoreFeature", "FEATURES", "FEATURE_NAMES", "NUM_FEATURES", "NUM_BUFFERS",
           "NUM_CURVE_SAMPLES", "SYMBOLIC_EXTENT_GUESS", "CACHE_LINE_BYTES",
           "extract_features", "feature_lowering_pipeline"]

#: the extent assumed for a loop or buffer dimension that is not a constant
SYMBOLIC_EXTENT_GUESS = 64
#: cache-line size used by the line counts
CACHE_LINE_BYTES = 64
#: buffers described per store (the most important first, zeros when fewer)
NUM_BUFFERS = 5
#: sample points of the arithmetic-intensity curve
NUM_CURVE_SAMPLES = 10

_OP_FEATURES = [
    ("float_mad", "float multiply-adds (a Mul directly under an Add/Sub), x executions"),
    ("float_addsub", "float additions and subtractions (not part of a mad), x executions"),
    ("float_mul", "float multiplications (not part of a mad), x executions"),
    ("float_divmod", "float divisions and modulos, x executions"),
    ("float_cmp", "float comparisons and min/max, x executions"),
    ("float_math_func", "calls of float math intrinsics (exp, log, sqrt, tanh...), x executions"),
    ("float_other_func", "other calls returning a float, x executions"),
    ("int_mad", "integer multiply-adds (indices included), x executions"),
    ("int_addsub", "integer additions and subtractions (indices included), x executions"),
    ("int_mul", "integer multiplications (indices included), x executions"),
    ("int_divmod", "integer (floor) divisions and modulos, x executions"),
    ("int_cmp", "integer comparisons and min/max, x executions"),
    ("int_math_func", "calls of integer math intrinsics, x executions"),
    ("int_other_func", "other calls returning an integer, x executions"),
    ("bool_op", "logical and/or/not, x executions"),
    ("select_op", "selects (Select, if_then_else), x executions"),
]


def _annotation_features(kind: str) -> list[tuple[str, str, bool]]:
    word = {"vec": "vectorized", "unroll": "unrolled"}.get(kind, kind)
    return [
        (f"{kind}_num", f"number of {word} loops around the store", True),
        (f"{kind}_prod", f"product of the extents of the {word} loops", True),
        (f"{kind}_len", f"extent of the innermost {word} loop", True),
        (f"{kind}_pos_inner", f"1 if the innermost {word} loop is the store's innermost loop",
         False),
        (f"{kind}_pos_middle", f"1 if the innermost {word} loop is neither the innermost nor "
         "the outermost loop", False),
        (f"{kind}_pos_outer", f"1 if the innermost {word} loop is the outermost loop (and not "
         "the innermost)", False),
        (f"{kind}_pos_none", f"1 if there is no {word} loop", False),
        (f"{kind}_reduce", f"1 if the innermost {word} loop is a reduction loop of the store "
         "(the stored indices do not use it)", False),
    ]


_GPU_FEATURES = [
    ("is_gpu", "1 for a GPU target", False),
    ("blockIdx_x_len", "extent of the loop bound to blockIdx.x (0: none)", True),
    ("blockIdx_y_len", "extent of the loop bound to blockIdx.y", True),
    ("blockIdx_z_len", "extent of the loop bound to blockIdx.z", True),
    ("threadIdx_x_len", "extent of the loop bound to threadIdx.x", True),
    ("threadIdx_y_len", "extent of the loop bound to threadIdx.y", True),
    ("threadIdx_z_len", "extent of the loop bound to threadIdx.z", True),
    ("vthread_len", "product of the extents of loops bound to vthread", True),
]

_BUFFER_FEATURES = [
    ("acc_read", "1 if the store only reads the buffer", False),
    ("acc_write", "1 if the store only writes the buffer", False),
    ("acc_readwrite", "1 if the store reads and writes the buffer", False),
    ("bytes", "bytes accessed over the whole loop nest (executions x element bytes, summed "
     "over the accesses)", True),
    ("unique_bytes", "distinct bytes touched by the whole loop nest", True),
    ("lines", "cache lines fetched if only consecutive iterations share a line: the "
     "iterations of the loops down to the innermost loop that moves the access, divided by "
     "the elements one line holds along that loop", True),
    ("unique_lines", "distinct cache lines touched by the whole loop nest", True),
    ("reuse_loop", "1: the innermost loop that does not move any access to the buffer reuses "
     "its data (loop multiple read)", False),
    ("reuse_serial", "1: no such loop, but the store accesses the buffer more than once in "
     "one iteration (serial multiple read/write)", False),
    ("reuse_none", "1: no reuse", False),
    ("reuse_dis_iter", "iterations between reuses: product of the extents of the loops "
     "inside the reuse loop (1 for serial reuse)", True),
    ("reuse_dis_bytes", "bytes all buffers of the store touch between reuses", True),
    ("reuse_ct", "times the data is reused: the reuse loop's extent (accesses - 1 for "
     "serial reuse)", True),
    ("bytes_d_reuse_ct", "bytes / max(1, reuse_ct)", True),
    ("unique_bytes_d_reuse_ct", "unique_bytes / max(1, reuse_ct)", True),
    ("lines_d_reuse_ct", "lines / max(1, reuse_ct)", True),
    ("unique_lines_d_reuse_ct", "unique_lines / max(1, reuse_ct)", True),
    ("stride", "element stride of the innermost loop that moves the access (0: none)", True),
]

_ALLOC_FEATURES = [
    ("alloc_size", "bytes of the stored buffer when the kernel allocates it (0: a parameter)",
     True),
    ("alloc_outer_prod", "product of the extents of the loops around its allocation", True),
    ("alloc_inner_prod", "executions of the store per allocation", True),
    ("alloc_total_bytes", "alloc_size x alloc_outer_prod", True),
    ("alloc_local", "1 if the stored buffer is allocated in a 'local' scope", False),
    ("alloc_shared", "1 if the stored buffer is allocated in a 'shared' scope", False),
]

_OUTER_FEATURES = [
    ("outer_prod", "executions of the store: product of the extents of all its loops", True),
    ("num_loops", "number of loops around the store", True),
    ("auto_unroll_max_step", "largest pragma_auto_unroll_max_step around the store", True),
]


def _build_features() -> list[tuple[str, str, bool]]:
    out: list[tuple[str, str, bool]] = [(n, m, True) for n, m in _OP_FEATURES]
    for kind in ("vec", "unroll", "parallel"):
        out += _annotation_features(kind)
    out += _GPU_FEATURES
    for b in range(NUM_BUFFERS):
        out += [(f"B{b}.{n}", f"buffer {b} (sorted by lines, then bytes): {m}", s)
                for n, m, s in _BUFFER_FEATURES]
    out += [(f"arith_intensity_curve_{k}", f"log2(1 + flops / bytes touched) at sample {k} of "
             f"{NUM_CURVE_SAMPLES}, evenly spaced in log2(flops) from the loop body alone to "
             "the whole nest", False) for k in range(NUM_CURVE_SAMPLES)]
    out += _ALLOC_FEATURES + _OUTER_FEATURES
    return out


#: (name, meaning, log-scaled) of every feature, in vector order
FEATURES: list[tuple[str, str, bool]] = _build_features()
#: the feature names, in vector order
FEATURE_NAMES: list[str] = [n for n, _, _ in FEATURES]
#: the length of every feature vector
NUM_FEATURES: int = len(FEATURES)
_LOG_MASK = np.array([s for _, _, s in FEATURES], dtype=bool)
_INDEX = {n: i for i, n in enumerate(FEATURE_NAMES)}

_MATH_FUNCS = frozenset(
    "exp exp2 exp10 expm1 log log2 log10 log1p sqrt rsqrt cbrt tanh sigmoid sin cos tan "
    "asin acos atan atan2 sinh cosh asinh acosh atanh erf pow fabs floor ceil round trunc "
    "nearbyint fmod hypot copysign ldexp abs popcount clz".split())
_TRANSPARENT_CALLS = frozenset(("likely", "assume", "reinterpret"))
_SELECT_CALLS = frozenset(("if_then_else",))


@functools.lru_cache(maxsize=2)
def feature_lowering_pipeline(is_gpu: bool = False) -> Any:
    """The passes a candidate goes through before its features are read: those of
    :func:`tvm.tir.build.get_lowering_pipeline` before ``FlattenBuffer`` (GPU: with
    ``LowerCrossThreadReduction`` first), then ``Simplify``."""
    passes = []
    if is_gpu:
        passes.append(T.LowerCrossThreadReduction())
    for p in get_lowering_pipeline().passes:
        if p.name == "tir.FlattenBuffer":
            break
        passes.append(p)
    passes.append(T.Simplify())
    return Sequential(passes, name="meta_schedule.feature_lowering")


# -- the visitors ---------------------------------------------------------------------------
def _const(expr: Any) -> Optional[int]:
    return const_int(expr)


def _extent(expr: Any) -> int:
    value = _const(expr)
    return SYMBOLIC_EXTENT_GUESS if value is None else max(int(value), 0)


def _elem_bytes(dtype: str) -> float:
    dt = DataType(dtype)
    return max(dt.bits * dt.lanes, 1) / 8.0


def _is_float(dtype: str) -> bool:
    return str(dtype).startswith(("float", "bfloat"))


@dataclass
class _Loop:
    var: Any
    extent: int
    kind: str                    # serial / parallel / vectorized / unrolled / thread
    thread_tag: str = ""


@dataclass
class _Access:
    buffer: Any
    indices: tuple
    is_write: bool


@dataclass
class _Alloc:
    nbytes: float
    outer_prod: float
    scope: str


@dataclass
class _Walk:
    """What the visitor knows at the current point of the walk."""

    loops: list[_Loop] = field(default_factory=list)
    unroll_steps: list[int] = field(default_factory=list)
    allocs: dict[int, _Alloc] = field(default_factory=dict)
    rows: list[np.ndarray] = field(default_factory=list)


class _OpCounter(StmtExprVisitor):
    """Counts arithmetic of one store's value and indices (one execution)."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys((n for n, _ in _OP_FEATURES), 0)

    def _bump(self, kind: str, dtype: str) -> None:
        if kind in ("bool_op", "select_op"):
            self.counts[kind] += 1
        else:
            self.counts[("float_" if _is_float(dtype) else "int_") + kind] += 1

    def _addsub(self, op: Any) -> None:
        mul = next((x for x in (op.a, op.b) if isinstance(x, Mul)), None)
        if mul is not None:
            self._bump("mad", op.dtype)
            other = op.b if mul is op.a else op.a
            self.visit_expr(mul.a)
            self.visit_expr(mul.b)
            self.visit_expr(other)
        else:
            self._bump("addsub", op.dtype)
            self.generic_visit(op)

    def visit_add_(self, op: Add) -> None:
        self._addsub(op)

    def visit_sub_(self, op: Sub) -> None:
        self._addsub(op)

    def _binary(self, op: Any, kind: str, dtype: Optional[str] = None) -> None:
        self._bump(kind, dtype or op.dtype)
        self.generic_visit(op)

    def visit_mul_(self, op: Any) -> None:
        self._binary(op, "mul")

    def visit_div_(self, op: Any) -> None:
        self._binary(op, "divmod")

    visit_mod_ = visit_floor_div_ = visit_floor_mod_ = visit_div_

    def visit_min_(self, op: Any) -> None:
        self._binary(op, "cmp")

    visit_max_ = visit_min_

    def visit_cmp_op_(self, op: Any) -> None:
        self._binary(op, "cmp", op.a.dtype)

    def visit_and_(self, op: Any) -> None:
        self._binary(op, "bool_op")

    visit_or_ = visit_not_ = visit_and_

    def visit_select_(self, op: Any) -> None:
        self._binary(op, "select_op")

    def visit_call_(self, op: Any) -> None:
        name = getattr(op.op, "name", "")
        name = name[4:] if name.startswith("tir.") else name
        if name in _SELECT_CALLS:
            self._bump("select_op", op.dtype)
        elif name in _MATH_FUNCS:
            self._bump("math_func", op.dtype)
        elif name not in _TRANSPARENT_CALLS:
            self._bump("other_func", op.dtype)
        self.visit(op.args)


_KINDS = {ForKind.SERIAL: "serial", ForKind.PARALLEL: "parallel",
          ForKind.VECTORIZED: "vectorized", ForKind.UNROLLED: "unrolled",
          ForKind.THREAD_BINDING: "thread"}


class _LoadCollector(StmtExprVisitor):
    """The loads of an expression, in order."""

    def __init__(self) -> None:
        self.loads: list[_Access] = []

    def visit_buffer_load_(self, op: BufferLoad) -> None:
        self.loads.append(_Access(op.buffer, tuple(op.indices), False))
        self.generic_visit(op)


class _Walker(StmtExprVisitor):
    """Walks the lowered function; at each BufferStore appends its feature row."""

    def __init__(self, is_gpu: bool) -> None:
        self.is_gpu = is_gpu
        self.state = _Walk()

    def visit_for_(self, op: Any) -> None:
        tag = op.thread_binding.thread_tag if op.thread_binding is not None else ""
        step = op.annotations.get("pragma_auto_unroll_max_step")
        pushed = step is not None and _const(step) is not None
        if pushed:
            self.state.unroll_steps.append(int(_const(step)))
        kind = _KINDS.get(op.kind, "serial")
        if kind == "serial" and op.annotations.get("pragma_unroll"):
            kind = "unrolled"
        self.state.loops.append(_Loop(op.loop_var, _extent(op.extent), kind, tag))
        self.visit_stmt(op.body)
        self.state.loops.pop()
        if pushed:
            self.state.unroll_steps.pop()

    def visit_attr_stmt_(self, op: Any) -> None:
        key = op.attr_key
        if key == "thread_extent" or key == "virtual_thread":
            iv = op.node
            tag = getattr(iv, "thread_tag", "") or ("vthread" if key == "virtual_thread"
                                                    else "")
            self.state.loops.append(_Loop(iv.var, _extent(op.value), "thread", tag))
            self.visit_stmt(op.body)
            self.state.loops.pop()
            return
        step = _const(op.value) if key == "pragma_auto_unroll_max_step" else None
        if step is not None:
            self.state.unroll_steps.append(int(step))
        self.visit_stmt(op.body)
        if step is not None:
            self.state.unroll_steps.pop()

    def visit_if_then_else_(self, op: Any) -> None:
        # ``if k == 0`` (a lowered init block) runs its body once over the loops of k
        pinned = _pinned_vars(op.condition)
        saved = list(self.state.loops)
        self.state.loops = [_Loop(lp.var, 1, lp.kind, lp.thread_tag)
                            if id(lp.var) in pinned else lp for lp in saved]
        self.visit_stmt(op.then_case)
        self.state.loops = saved
        if op.else_case is not None:
            self.visit_stmt(op.else_case)

    def visit_allocate_(self, op: Any) -> None:
        size = _elem_bytes(op.dtype)
        for e in op.extents:
            size *= _extent(e)
        outer = float(math.prod(lp.extent for lp in self.state.loops))
        self.state.allocs[id(op.buffer_var)] = _Alloc(size, outer, str(op.scope))
        self.visit_stmt(op.body)

    def visit_buffer_store_(self, op: Any) -> None:
        counter = _OpCounter()
        counter.visit(op.value)
        counter.visit(list(op.indices))
        loads = _LoadCollector()
        loads.visit(op.value)
        accesses = [_Access(op.buffer, tuple(op.indices), True)] + loads.loads
        self.state.rows.append(_store_row(self.state, op, counter.counts, accesses,
                                          self.is_gpu))


def _pinned_vars(cond: Any) -> set[int]:
    """Variables an ``if`` condition fixes to one value: ``expr == const`` conjuncts."""
    if isinstance(cond, And):
        return _pinned_vars(cond.a) | _pinned_vars(cond.b)
    if isinstance(cond, EQ):
        for side, other in ((cond.a, cond.b), (cond.b, cond.a)):
            if _const(other) is not None:
                return {id(v) for v in free_vars(side)}
    return set()


# -- one store ------------------------------------------------------------------------------
class _AccessInfo:
    """Per-loop coefficients of one access and the region its inner loops touch."""

    def __init__(self, acc: _Access, loops: list[_Loop], analyzer: Any):
        buf = acc.buffer
        self.acc = acc
        self.elem = _elem_bytes(buf.dtype)
        self.shape = [_extent(s) for s in buf.shape] or [1]
        if buf.strides:
            self.fstrides = [_extent(s) for s in buf.strides]
        else:
            self.fstrides = [int(math.prod(self.shape[d + 1:])) for d in range(len(self.shape))]
        n = len(loops)
        self.coef = [[0.0] * n for _ in self.shape]
        for d, index in enumerate(acc.indices[:len(self.shape)]):
            self.coef[d] = _coefficients(index, loops, analyzer)
        self.stride = [sum(self.coef[d][j] * self.fstrides[d] for d in range(len(self.shape)))
                       for j in range(n)]
        self.moving = [any(self.coef[d][j] != 0 for d in range(len(self.shape)))
                       for j in range(n)]

    def region(self, loops: list[_Loop], level: int) -> tuple[float, float]:
        """(distinct elements, distinct cache lines) touched while loops ``level..`` run."""
        uniq, bbox = [], []
        for d, shp in enumerate(self.shape):
            span, count = 1.0, 1.0
            for j in range(level, len(loops)):
                c = self.coef[d][j]
                if c != 0:
                    span += abs(c) * (loops[j].extent - 1)
                    count *= loops[j].extent
            bbox.append(min(span, shp))
            uniq.append(min(span, count, shp))
        elements = float(math.prod(uniq))
        line_elems = max(CACHE_LINE_BYTES / self.elem, 1.0)
        k, trailing = len(self.shape) - 1, 1.0
        while k >= 0 and uniq[k] >= self.shape[k]:
            trailing *= self.shape[k]
            k -= 1
        if k < 0:
            lines = math.ceil(trailing / line_elems)
        elif uniq[k] >= bbox[k]:
            lines = math.prod(uniq[:k]) * math.ceil(bbox[k] * trailing / line_elems)
        else:
            lines = math.prod(uniq[:k]) * uniq[k] * math.ceil(trailing / line_elems)
        return elements, float(min(lines, elements))

    def streamed_lines(self, loops: list[_Loop]) -> float:
        inner = max((j for j, m in enumerate(self.moving) if m), default=-1)
        if inner < 0:
            return 1.0
        iters = float(math.prod(lp.extent for lp in loops[:inner + 1]))
        stride = abs(self.stride[inner]) or 1.0
        per_line = min(loops[inner].extent, max(1.0, CACHE_LINE_BYTES / (stride * self.elem)))
        return iters / per_line

    def inner_stride(self) -> float:
        inner = max((j for j, m in enumerate(self.moving) if m), default=-1)
        return abs(self.stride[inner]) if inner >= 0 else 0.0


def _coefficients(index: Any, loops: list[_Loop], analyzer: Any) -> list[float]:
    """How much ``index`` moves per step of each loop (an average slope if not linear)."""
    used = {id(v) for v in free_vars(index)}
    out = [0.0] * len(loops)
    live = [j for j, lp in enumerate(loops) if id(lp.var) in used]
    if not live:
        return out
    coeffs = detect_linear_equation(index, [loops[j].var for j in live], analyzer)
    if coeffs:
        for j, c in zip(live, coeffs[:-1]):
            value = _const(c)
            out[j] = float(value) if value is not None else 1.0
        return out
    zero = {loops[j].var: 0 for j in live}
    for j in live:
        ext = loops[j].extent
        if ext <= 1:
            continue
        lo = _const(analyzer.simplify(substitute(index, zero)))
        hi = _const(analyzer.simplify(substitute(index, {**zero, loops[j].var: ext - 1})))
        out[j] = abs(hi - lo) / (ext - 1) if lo is not None and hi is not None else 1.0
    return out


def _log(x: float) -> float:
    return math.log2(1.0 + max(x, 0.0))


def _store_row(state: _Walk, store: Any, counts: dict[str, int], accesses: list[_Access],
               is_gpu: bool) -> np.ndarray:
    """The feature row of ``store`` (not yet log-scaled parts are scaled at the end)."""
    loops = state.loops
    row = np.zeros(NUM_FEATURES, dtype=np.float64)
    executions = float(math.prod(lp.extent for lp in loops))
    for name, value in counts.items():
        row[_INDEX[name]] = value * executions
    _loop_kind_features(row, loops, {id(v) for idx in store.indices for v in free_vars(idx)})
    _thread_features(row, loops, is_gpu)

    analyzer = Analyzer()
    infos = [_AccessInfo(a, loops, analyzer) for a in accesses]
    groups: dict[int, list[_AccessInfo]] = {}
    for info in infos:
        groups.setdefault(id(info.acc.buffer.data), []).append(info)
    footprints = [sum(max(i.region(loops, level)[0] * i.elem for i in group)
                      for group in groups.values()) for level in range(len(loops) + 1)]
    _buffer_features(row, loops, groups, executions, footprints)
    # a mad is two operations; an integer store's own arithmetic counts as its flops
    prefix = "float_" if _is_float(store.buffer.dtype) else "int_"
    flops = sum(counts[k] for k in counts if k.startswith(prefix)) + counts[prefix + "mad"]
    _curve_features(row, loops, flops, footprints)

    alloc = state.allocs.get(id(store.buffer.data))
    if alloc is not None:
        row[_INDEX["alloc_size"]] = alloc.nbytes
        row[_INDEX["alloc_outer_prod"]] = alloc.outer_prod
        row[_INDEX["alloc_inner_prod"]] = executions / max(alloc.outer_prod, 1.0)
        row[_INDEX["alloc_total_bytes"]] = alloc.nbytes * alloc.outer_prod
        row[_INDEX["alloc_local"]] = float(alloc.scope.startswith("local"))
        row[_INDEX["alloc_shared"]] = float(alloc.scope.startswith("shared"))
    row[_INDEX["outer_prod"]] = executions
    row[_INDEX["num_loops"]] = len(loops)
    row[_INDEX["auto_unroll_max_step"]] = max(state.unroll_steps, default=0)

    row[_LOG_MASK] = np.log2(1.0 + np.maximum(row[_LOG_MASK], 0.0))
    return row.astype(np.float32)


def _loop_kind_features(row: np.ndarray, loops: list[_Loop], stored_vars: set[int]) -> None:
    n = len(loops)
    for kind, loop_kind in (("vec", "vectorized"), ("unroll", "unrolled"),
                            ("parallel", "parallel")):
        picked = [j for j, lp in enumerate(loops) if lp.kind == loop_kind]
        row[_INDEX[f"{kind}_num"]] = len(picked)
        row[_INDEX[f"{kind}_prod"]] = math.prod(loops[j].extent for j in picked)
        if not picked:
            row[_INDEX[f"{kind}_pos_none"]] = 1
            continue
        j = picked[-1]
        row[_INDEX[f"{kind}_len"]] = loops[j].extent
        pos = "inner" if j == n - 1 else "outer" if j == 0 else "middle"
        row[_INDEX[f"{kind}_pos_{pos}"]] = 1
        row[_INDEX[f"{kind}_reduce"]] = float(id(loops[j].var) not in stored_vars)


def _thread_features(row: np.ndarray, loops: list[_Loop], is_gpu: bool) -> None:
    row[_INDEX["is_gpu"]] = float(is_gpu)
    vthread = 1.0
    for lp in loops:
        if lp.kind != "thread":
            continue
        tag = lp.thread_tag.replace(".", "_")
        if tag.startswith("vthread"):
            vthread *= lp.extent
        elif f"{tag}_len" in _INDEX:
            row[_INDEX[f"{tag}_len"]] = lp.extent
    row[_INDEX["vthread_len"]] = vthread if vthread > 1 else 0.0


def _buffer_features(row: np.ndarray, loops: list[_Loop], groups: dict[int, list[_AccessInfo]],
                     executions: float, footprints: list[float]) -> None:
    """The accesses of each buffer, the most important ``NUM_BUFFERS`` buffers."""
    n = len(loops)
    buffers = []
    for group in groups.values():
        reads = any(not i.acc.is_write for i in group)
        writes = any(i.acc.is_write for i in group)
        nbytes = sum(executions * i.elem for i in group)
        regions = [i.region(loops, 0) for i in group]
        lines = max(i.streamed_lines(loops) for i in group)
        feats = {"acc_read": float(reads and not writes), "acc_write": float(writes and not reads),
                 "acc_readwrite": float(reads and writes), "bytes": nbytes,
                 "unique_bytes": max(r[0] * i.elem for r, i in zip(regions, group)),
                 "lines": lines, "unique_lines": max(r[1] for r in regions),
                 "stride": min(i.inner_stride() for i in group)}
        reuse = max((j for j in range(n)
                     if not any(i.moving[j] for i in group) and loops[j].extent > 1), default=-1)
        if reuse >= 0:
            feats.update(reuse_loop=1.0, reuse_ct=float(loops[reuse].extent),
                         reuse_dis_iter=float(math.prod(lp.extent for lp in loops[reuse + 1:])),
                         reuse_dis_bytes=footprints[reuse + 1])
        elif len(group) > 1:
            per_iter = sum(i.elem for g in groups.values() for i in g)
            feats.update(reuse_serial=1.0, reuse_ct=float(len(group) - 1), reuse_dis_iter=1.0,
                         reuse_dis_bytes=per_iter)
        else:
            feats["reuse_none"] = 1.0
        ct = max(1.0, feats.get("reuse_ct", 0.0))
        for key in ("bytes", "unique_bytes", "lines", "unique_lines"):
            feats[f"{key}_d_reuse_ct"] = feats[key] / ct
        buffers.append((-lines, -nbytes, str(group[0].acc.buffer.name), feats))
    buffers.sort(key=lambda b: b[:3])
    for b, (_, _, _, feats) in enumerate(buffers[:NUM_BUFFERS]):
        for key, value in feats.items():
            row[_INDEX[f"B{b}.{key}"]] = value


def _curve_features(row: np.ndarray, loops: list[_Loop], flops: float,
                    footprints: list[float]) -> None:
    xs, ys = [], []
    for level in range(len(loops), -1, -1):
        ops = flops * math.prod(lp.extent for lp in loops[level:])
        xs.append(_log(ops))
        ys.append(ops / max(footprints[level], 1.0))
    if xs[-1] > xs[0]:
        samples = np.interp(np.linspace(xs[0], xs[-1], NUM_CURVE_SAMPLES), xs, ys)
    else:
        samples = np.full(NUM_CURVE_SAMPLES, ys[-1])
    start = _INDEX["arith_intensity_curve_0"]
    row[start:start + NUM_CURVE_SAMPLES] = np.log2(1.0 + samples)


# -- the extractor --------------------------------------------------------------------------
def extract_features(func_or_mod: Any, is_gpu: bool = False, lowered: bool = False
                     ) -> np.ndarray:
    """The ``[n_stores, NUM_FEATURES]`` float32 features of a scheduled PrimFunc (or of
    every PrimFunc of an IRModule, rows concatenated); ``lowered=True`` skips the lowering
    (the function already went through :func:`feature_lowering_pipeline`)."""
    if isinstance(func_or_mod, PrimFunc):
        mod = IRModule({"main": func_or_mod})
    elif isinstance(func_or_mod, IRModule):
        mod = func_or_mod
    else:
        raise TypeError(f"extract_features: expected a PrimFunc or IRModule, got "
                        f"{type(func_or_mod).__name__}")
    if not lowered:
        mod = feature_lowering_pipeline(is_gpu)(mod)
    walker = _Walker(is_gpu)
    for _, func in mod.items():
        if isinstance(func, PrimFunc):
            walker.visit_stmt(func.body)
    if not walker.state.rows:
        return np.zeros((0, NUM_FEATURES), dtype=np.float32)
    return np.stack(walker.state.rows)


def _safe_extract(mod: Any, is_gpu: bool) -> tuple[np.ndarray, Optional[str]]:
    try:
        return extract_features(mod, is_gpu=is_gpu), None
    except Exception as err:  # noqa: BLE001 - one bad candidate must not stop tuning
        return np.zeros((0, NUM_FEATURES), dtype=np.float32), f"{type(err).__name__}: {err}"


def _extract_json(texts: list[str], is_gpu: bool) -> list[tuple[np.ndarray, Optional[str]]]:
    """In a worker process: the features of modules sent as tvm.ffi JSON."""
    from tvm.ffi import from_json

    return [_safe_extract(from_json(text), is_gpu) for text in texts]


class PerStoreFeature(FeatureExtractor):
    """Per-store features of each candidate (see :data:`FEATURES`).

    A candidate whose lowering fails (it should have been rejected by a postprocessor) gets
    a ``(0, NUM_FEATURES)`` matrix, which cost models score as the worst.

    ``num_workers`` processes share a large batch (the modules travel as tvm.ffi JSON, so
    the work left here is about a third); None takes the context's ``num_threads``, 1 works
    in this process.  The pool starts on first use (spawned, so it never inherits the
    tuner's threads) and stops with :meth:`close` or at exit."""

    feature_names: list[str] = FEATURE_NAMES
    num_features: int = NUM_FEATURES

    def __init__(self, num_workers: Optional[int] = None):
        if num_workers is not None and (isinstance(num_workers, bool) or num_workers < 1):
            raise ValueError(f"PerStoreFeature: num_workers must be >= 1, got {num_workers!r}")
        self.num_workers = num_workers
        self._pool: Any = None
        self._pool_size = 0

    def extract_from(self, context: Any, candidates: list[Any]) -> list[np.ndarray]:
        is_gpu = bool(getattr(context, "is_gpu", False)) if context is not None else False
        mods = [getattr(getattr(c, "sch", c), "mod", c) for c in candidates]
        workers = self.num_workers or int(getattr(context, "num_threads", 1) or 1)
        if workers > 1 and len(mods) >= 4 * workers:
            found = self._in_pool(mods, is_gpu, workers)
        else:
            found = [_safe_extract(mod, is_gpu) for mod in mods]
        logger = getattr(context, "logger", None)
        for _, err in found:
            if err is not None and logger is not None:
                logger.debug("feature extraction failed: %s", err)
        return [mat for mat, _ in found]

    def _in_pool(self, mods: list[Any], is_gpu: bool, workers: int
                 ) -> list[tuple[np.ndarray, Optional[str]]]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from tvm.ffi import to_json

        if self._pool is None or self._pool_size != workers:
            self.close()
            self._pool = ProcessPoolExecutor(workers,
                                             mp_context=multiprocessing.get_context("spawn"))
            self._pool_size = workers
        texts = [to_json(mod) for mod in mods]
        size = -(-len(texts) // (2 * workers))
        chunks = [texts[k:k + size] for k in range(0, len(texts), size)]
        out: list[tuple[np.ndarray, Optional[str]]] = []
        for part in self._pool.map(_extract_json, chunks, [is_gpu] * len(chunks)):
            out += part
        return out

    def close(self) -> None:
        """Stop the worker processes, if any."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __repr__(self) -> str:
        return f"PerStoreFeature({NUM_FEATURES} features)"
