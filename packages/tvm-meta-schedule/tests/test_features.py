"""PerStoreFeature: shape, finiteness, what the features say about schedules, speed."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import numpy as np
import pytest
from search_test_helpers import default_space, matmul, tiled
from tvm import te, tir
from tvm.meta_schedule.feature_extractor import (
    FEATURE_NAMES, FEATURES, NUM_FEATURES, PerStoreFeature, extract_features,
)
from tvm.meta_schedule.feature_extractor.per_store_feature import SYMBOLIC_EXTENT_GUESS
from tvm.meta_schedule.measure_candidate import MeasureCandidate
from tvm.tir.stmt import Evaluate

DOC = Path(__file__).resolve().parents[3] / "docs" / "meta_schedule_features.md"
IDX = {n: i for i, n in enumerate(FEATURE_NAMES)}


def log(x: float) -> float:
    return math.log2(1 + x)


def feats(sch) -> np.ndarray:
    return extract_features(sch.mod)


def update_row(x: np.ndarray) -> np.ndarray:
    """The matmul's accumulation store (the one with a mad)."""
    rows = [r for r in x if r[IDX["float_mad"]] > 0]
    assert len(rows) == 1
    return rows[0]


def buffer_slots(row: np.ndarray, key: str) -> list[float]:
    return [row[IDX[f"B{b}.{key}"]] for b in range(5)]


def test_names_are_unique_and_documented():
    assert len(FEATURE_NAMES) == NUM_FEATURES == len(FEATURES)
    assert len(set(FEATURE_NAMES)) == NUM_FEATURES
    doc = DOC.read_text()
    documented = set(re.findall(r"^\| `([^`]+)` \|", doc, flags=re.M))
    generic = {re.sub(r"^B\d\.", "B{b}.", re.sub(r"_\d+$", "_{k}", n))
               if n.startswith(("B", "arith_intensity_curve_")) else n for n in FEATURE_NAMES}
    assert generic == documented
    assert f"**{NUM_FEATURES}**" in doc


def test_matmul_rows_are_finite_and_of_the_documented_length():
    x = feats(tiled(matmul(), tiles=[(8, 8), (4, 16), (16, 4)]))
    assert x.dtype == np.float32 and x.shape == (2, NUM_FEATURES)  # init store + update
    assert np.isfinite(x).all()
    row = update_row(x)
    assert row[IDX["float_mad"]] == pytest.approx(log(64 ** 3), rel=1e-5)
    assert row[IDX["outer_prod"]] == pytest.approx(log(64 ** 3), rel=1e-5)
    assert row[IDX["num_loops"]] == pytest.approx(log(6))
    init = [r for r in x if r[IDX["float_mad"]] == 0][0]
    # the init store runs once over the reduction loops (if k == 0)
    assert init[IDX["outer_prod"]] == pytest.approx(log(64 * 64), rel=1e-5)
    # C is read and written, A and B are read; the rest of the slots are empty
    assert sorted(buffer_slots(row, "acc_readwrite")) == [0, 0, 0, 0, 1]
    assert sum(buffer_slots(row, "acc_read")) == 2
    assert buffer_slots(row, "bytes")[3:] == [0, 0]


def test_vectorize_changes_the_vectorize_features_only_there():
    vec = update_row(feats(tiled(matmul(), tiles=[(8, 8), (4, 16), (16, 4)])))
    plain = update_row(feats(tiled(matmul(), tiles=[(8, 8), (4, 16), (16, 4)],
                                   vectorize=False)))
    assert vec[IDX["vec_num"]] == pytest.approx(log(1))
    assert vec[IDX["vec_len"]] == pytest.approx(log(16))
    assert vec[IDX["vec_pos_inner"]] == 1 and vec[IDX["vec_pos_none"]] == 0
    assert vec[IDX["vec_reduce"]] == 0  # j1 is a spatial loop of C
    assert plain[IDX["vec_num"]] == 0 and plain[IDX["vec_len"]] == 0
    assert plain[IDX["vec_pos_none"]] == 1
    differ = {FEATURE_NAMES[i] for i in np.nonzero(vec != plain)[0]}
    assert differ and all(n.startswith("vec_") for n in differ)


def test_parallel_and_unroll_annotations():
    row = update_row(feats(tiled(matmul(), tiles=[(8, 8), (4, 16), (16, 4)], parallel=True,
                                 unroll=True)))
    assert row[IDX["parallel_len"]] == pytest.approx(log(8))
    assert row[IDX["parallel_pos_outer"]] == 1
    assert row[IDX["unroll_len"]] == pytest.approx(log(8))   # i1
    assert row[IDX["unroll_pos_middle"]] == 1


def test_features_scale_with_loop_extents():
    small = update_row(feats(tiled(matmul(32), tiles=[(4, 8), (4, 8), (4, 8)])))
    big = update_row(feats(tiled(matmul(64), tiles=[(8, 8), (8, 8), (8, 8)])))
    for name in ("float_mad", "outer_prod"):
        assert big[IDX[name]] - small[IDX[name]] == pytest.approx(3.0, abs=1e-3)
    assert max(buffer_slots(big, "bytes")) > max(buffer_slots(small, "bytes"))
    assert max(buffer_slots(big, "unique_bytes")) == pytest.approx(log(64 * 64 * 4), rel=1e-5)
    assert max(buffer_slots(small, "unique_bytes")) == pytest.approx(log(32 * 32 * 4), rel=1e-5)


def test_strides_and_reuse_follow_the_loop_order():
    # j1 innermost: B[k, j] moves by 1 element, A[i, k] is reused across j1
    row = update_row(feats(tiled(matmul(), tiles=[(8, 8), (4, 16), (16, 4)])))
    assert 64.0 not in [2 ** s - 1 for s in buffer_slots(row, "stride")]
    # k innermost: B[k, j] jumps a row (64 elements) per step
    sch = tir.Schedule(matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    kx = update_row(feats(sch))
    assert any(abs(s - log(64)) < 1e-4 for s in buffer_slots(kx, "stride"))
    # C[i, j] does not move with k: its reuse loop is k (64 reuses, 1 iteration apart)
    rw = buffer_slots(kx, "acc_readwrite").index(1.0)
    assert kx[IDX[f"B{rw}.reuse_loop"]] == 1
    assert kx[IDX[f"B{rw}.reuse_ct"]] == pytest.approx(log(64))
    assert kx[IDX[f"B{rw}.reuse_dis_iter"]] == pytest.approx(log(1))


def test_allocation_and_outer_features_of_a_cache_write():
    sch = tir.Schedule(matmul())
    block = sch.get_block("C")
    cache = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    sch.reverse_compute_at(cache, j)
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)
    x = feats(sch)
    assert x.shape[0] == 3
    local = [r for r in x if r[IDX["alloc_local"]] == 1]
    assert len(local) == 2  # init and update of C_local
    assert all(r[IDX["alloc_size"]] > 0 for r in local)
    assert all(r[IDX["auto_unroll_max_step"]] == pytest.approx(log(16)) for r in x)


def test_no_store_gives_an_empty_matrix():
    func = tir.PrimFunc([], Evaluate(0))
    x = extract_features(func)
    assert x.shape == (0, NUM_FEATURES) and x.dtype == np.float32


def test_symbolic_extent_uses_the_documented_guess():
    n = te.var("n")
    A = te.placeholder((n, 64), name="A")
    B = te.compute((n, 64), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    x = extract_features(te.create_prim_func([A, B]))
    assert x.shape == (1, NUM_FEATURES) and np.isfinite(x).all()
    assert x[0, IDX["outer_prod"]] == pytest.approx(log(SYMBOLIC_EXTENT_GUESS * 64), rel=1e-5)
    assert x[0, IDX["float_mad"]] == pytest.approx(log(SYMBOLIC_EXTENT_GUESS * 64), rel=1e-5)


def test_math_and_compare_ops_are_counted():
    A = te.placeholder((16, 16), name="A")
    B = te.compute((16, 16), lambda i, j: te.max(te.exp(A[i, j]), A[i, j] / 2.0), name="B")
    row = extract_features(te.create_prim_func([A, B]))[0]
    for name in ("float_math_func", "float_cmp", "float_divmod"):
        assert row[IDX[name]] == pytest.approx(log(256)), name
    assert row[IDX["float_mad"]] == 0


def test_extractor_on_candidates_and_speed():
    func = matmul()
    space = tiled(func)
    cands = []
    for seed in range(512):
        sch = tir.Schedule(func, seed=seed)
        space.trace.apply_to_schedule(sch, decision_provider=lambda *a: None)
        cands.append(MeasureCandidate(sch, []))
    start = time.perf_counter()
    out = PerStoreFeature().extract_from(None, cands)
    elapsed = time.perf_counter() - start
    assert len(out) == 512 and all(m.shape == (2, NUM_FEATURES) for m in out)
    assert len({m.tobytes() for m in out}) > 20  # different tilings, different features
    # a few seconds on a quiet core; the bound leaves room for a loaded CI machine
    assert elapsed < 30, f"512 candidates took {elapsed:.1f} s"


def test_default_space_features():
    x = feats(default_space(matmul()))
    assert update_row(x)[IDX["vec_len"]] == pytest.approx(log(8))


def test_gpu_thread_features():
    sch = tir.Schedule(matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 8])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    row = update_row(extract_features(sch.mod, is_gpu=True))
    assert row[IDX["is_gpu"]] == 1
    assert row[IDX["blockIdx_x_len"]] == pytest.approx(log(8))
    assert row[IDX["threadIdx_x_len"]] == pytest.approx(log(8))
    assert row[IDX["threadIdx_y_len"]] == 0


def test_worker_processes_give_the_same_features():
    func = matmul()
    space = tiled(func)
    cands = []
    for seed in range(16):
        sch = tir.Schedule(func, seed=seed)
        space.trace.apply_to_schedule(sch, decision_provider=lambda *a: None)
        cands.append(MeasureCandidate(sch, []))
    here = PerStoreFeature(num_workers=1).extract_from(None, cands)
    pooled = PerStoreFeature(num_workers=2)
    try:
        there = pooled.extract_from(None, cands)
        assert pooled._pool is not None  # the batch did go to the workers
    finally:
        pooled.close()
    assert len(there) == 16 and all(np.array_equal(a, b) for a, b in zip(here, there))
    with pytest.raises(ValueError, match="num_workers"):
        PerStoreFeature(num_workers=0)
