"""JSONDatabase / MemoryDatabase: round trip, resume, skipped lines, lookup by structure,
query_schedule and applied()."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tvm import tir
from tvm.ffi import structural_equal
from tvm.meta_schedule.arg_info import args_info
from tvm.meta_schedule.database import (
    RECORD_FILE, WORKLOAD_FILE, DatabaseWarning, JSONDatabase, MemoryDatabase, TuningRecord,
)
from tvm.tir.schedule.rules import SCHEDULED_ATTR

sys.path.insert(0, str(Path(__file__).parent))
from tune_fakes import matmul  # noqa: E402

TARGET = "llvm -num-cores=1"


def tiled(func, factor, seed=0):
    sch = tir.Schedule(func, seed=seed)
    i, j, k = sch.get_loops(sch.get_block("C"))
    n = int(sch.get(i).extent.value)
    t = sch.sample_perfect_tile(i, n=2, max_innermost_factor=64, decision=[n // factor, factor])
    sch.split(i, t)
    return sch


def same_code(f, g):
    """Structurally equal apart from the function attributes (name, scheduled mark)."""
    return structural_equal(f.with_fields(attrs={}), g.with_fields(attrs={}))


def add_records(db, func, times):
    wl = db.commit_workload(func)
    for factor, sec in times:
        db.commit_tuning_record(TuningRecord(tiled(func, factor).trace, wl, TARGET,
                                             None if sec is None else [sec, sec],
                                             args_info(func)))
    return wl


def test_round_trip_and_resume(tmp_path):
    db = JSONDatabase(tmp_path)
    add_records(db, matmul(), [(2, 3e-4), (4, 1e-4), (8, None)])
    assert (tmp_path / WORKLOAD_FILE).read_text().count("\n") == 1
    lines = (tmp_path / RECORD_FILE).read_text().splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0])
    assert set(first) == {"workload", "shash", "trace", "target", "run_secs", "args_info",
                          "version"}
    assert json.loads(lines[2])["run_secs"] is None

    again = JSONDatabase(tmp_path)
    assert len(again) == 3 and again.skipped == 0
    wl = again.lookup_workload(matmul())
    assert wl is not None
    top = again.get_top_k(wl, 5, TARGET)
    assert [r.run_secs[0] for r in top] == [1e-4, 3e-4]       # the failed one is not a top
    assert top[0].trace.as_json() == tiled(matmul(), 4).trace.as_json()
    assert again.get_top_k(wl, 5, "llvm -num-cores=4") == []   # another target

    # resume: appending after reopening keeps the old lines and line numbers
    add_records(again, matmul(), [(16, 5e-5)])
    add_records(again, matmul(32), [(2, 1e-6)])
    third = JSONDatabase(tmp_path)
    assert len(third) == 5 and len(third.workloads) == 2
    assert third.query_tuning_record(matmul(), TARGET).run_secs[0] == 5e-5
    assert third.query_tuning_record(matmul(32), TARGET).run_secs[0] == 1e-6


def test_corrupted_and_foreign_lines_are_skipped_with_a_warning(tmp_path):
    db = JSONDatabase(tmp_path)
    add_records(db, matmul(), [(2, 3e-4), (4, 1e-4)])
    rec = tmp_path / RECORD_FILE
    good = rec.read_text().splitlines()
    foreign = json.loads(good[1])
    foreign["version"] = 99
    foreign["run_secs"] = [1e-9]
    bad_trace = json.loads(good[1])
    bad_trace["trace"]["insts"][0][0] = "NoSuchInstruction"
    rec.write_text("\n".join([good[0], '{"workload": 0, "trace": [trunc', json.dumps(foreign),
                              json.dumps(bad_trace), good[1]]) + "\n")
    with pytest.warns(DatabaseWarning) as caught:
        again = JSONDatabase(tmp_path)
    messages = [str(w.message) for w in caught]
    assert any(f"{RECORD_FILE}:2" in m and "not a tuning record" in m for m in messages)
    assert any(f"{RECORD_FILE}:3" in m and "version 99" in m for m in messages)
    assert any(f"{RECORD_FILE}:4" in m for m in messages)
    assert again.skipped == 3 and len(again) == 2
    # the record of the foreign version (1 ns) is not taken
    assert again.query_tuning_record(matmul(), TARGET).run_secs[0] == 1e-4

    # a half-written last line (a crash mid-write) does not swallow the next record
    with open(rec, "a") as f:
        f.write('{"workload": 0, "sha')
    with pytest.warns(DatabaseWarning):
        third = JSONDatabase(tmp_path)
    add_records(third, matmul(), [(8, 1e-5)])
    with pytest.warns(DatabaseWarning):
        fourth = JSONDatabase(tmp_path)
    assert fourth.query_tuning_record(matmul(), TARGET).run_secs[0] == 1e-5


def test_a_corrupted_workload_skips_its_records(tmp_path):
    db = JSONDatabase(tmp_path)
    add_records(db, matmul(), [(2, 3e-4)])
    add_records(db, matmul(32), [(2, 1e-6)])
    wfile = tmp_path / WORKLOAD_FILE
    lines = wfile.read_text().splitlines()
    data = json.loads(lines[0])
    data["tvmscript"] = data["tvmscript"][: len(data["tvmscript"]) // 2]   # cut in half
    wfile.write_text(json.dumps(data) + "\n" + lines[1] + "\n")
    with pytest.warns(DatabaseWarning) as caught:
        again = JSONDatabase(tmp_path)
    assert any(f"{WORKLOAD_FILE}:1" in str(w.message) for w in caught)
    assert any("workload" in str(w.message) and f"{RECORD_FILE}:1" in str(w.message)
               for w in caught)
    assert not again.has_workload(matmul()) and again.has_workload(matmul(32))


def test_lookup_by_structure_not_by_object(tmp_path):
    db = MemoryDatabase()
    a = matmul()
    add_records(db, a, [(4, 1e-4)])
    b = matmul().with_attr("global_symbol", "fused_matmul7")   # built again, other name
    assert b is not a and db.has_workload(b)
    assert not db.has_workload(matmul(32)) and not db.has_workload(matmul(relu=True))
    assert db.commit_workload(b) is db.commit_workload(a)

    sch = db.query_schedule(b, TARGET)
    func = sch.mod["main"]
    assert func.attrs[SCHEDULED_ATTR] and func.attrs["global_symbol"] == "fused_matmul7"
    assert same_code(sch.mod["main"], tiled(matmul(), 4).mod["main"])
    assert db.query_schedule(b, "llvm -num-cores=4") is None
    assert db.query_schedule(matmul(32), TARGET) is None
    # the model layers a kernel came from name it too: another model's layer finds the record
    c = matmul().with_attr("source_layers", ("encoder/fc1", "encoder/relu"))
    assert db.commit_workload(c) is db.commit_workload(a)
    assert db.query_schedule(c, TARGET).mod["main"].attrs["source_layers"] == (
        "encoder/fc1", "encoder/relu")


def test_applied_schedules_tir_build_with_the_record(tmp_path):
    pytest.importorskip("tvm.target.llvm")
    import numpy as np
    import tvm.runtime as rt
    from tvm.tir.build import apply_default_schedule
    from tvm.ir.module import IRModule

    db = JSONDatabase(tmp_path)
    add_records(db, matmul(), [(4, 1e-4)])
    mod = IRModule({"main": matmul(), "other": matmul(32)})
    with db.applied() as plugin:
        scheduled = apply_default_schedule(mod, TARGET)
    assert plugin.answered == ["main"]
    assert same_code(scheduled["main"], tiled(matmul(), 4).mod["main"])
    # the other kernel got the default rules (a different structure from both)
    plain = apply_default_schedule(IRModule({"other": matmul(32)}), TARGET)
    assert structural_equal(scheduled["other"], plain["other"])
    # outside the context nothing answers
    again = apply_default_schedule(IRModule({"main": matmul()}), TARGET)
    assert not same_code(again["main"], tiled(matmul(), 4).mod["main"])
    # and the tuned kernel computes the matmul
    with db.applied(TARGET):
        kernel = tir.build(matmul(), TARGET)
    a, b = (np.random.default_rng(0).random((64, 64), dtype="float32") for _ in range(2))
    out = rt.tensor(np.zeros((64, 64), "float32"))
    kernel["main"](rt.tensor(a), rt.tensor(b), out)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_applied_only_for_its_target():
    pytest.importorskip("tvm.target.llvm")
    from tvm.ir.module import IRModule
    from tvm.tir.build import apply_default_schedule

    db = MemoryDatabase()
    add_records(db, matmul(), [(4, 1e-4)])
    with db.applied("llvm -num-cores=4") as plugin:
        apply_default_schedule(IRModule({"main": matmul()}), TARGET)
    assert plugin.answered == []


WRITE = """
import sys
sys.path.insert(0, {tests!r})
from test_database import add_records, matmul
from tvm.meta_schedule.database import JSONDatabase
add_records(JSONDatabase({d!r}), matmul({n}), [(4, {sec})])
"""


def test_another_process_reads_and_extends_the_files(tmp_path):
    """Structural hashes differ between processes (string hashing is randomized): the
    files still pair records with kernels, and lookups work in the reading process."""
    import os
    import subprocess

    tests = str(Path(__file__).parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    for seed, n, sec in (("1", 64, 2e-4), ("2", 64, 1e-4), ("3", 32, 5e-6)):
        env["PYTHONHASHSEED"] = seed
        subprocess.run([sys.executable, "-c", WRITE.format(tests=tests, d=str(tmp_path), n=n,
                                                           sec=sec)],
                       check=True, env=env, timeout=300)
    db = JSONDatabase(tmp_path)
    assert db.skipped == 0 and len(db) == 3 and len(db.workloads) == 2
    assert db.query_tuning_record(matmul(), TARGET).run_secs[0] == 1e-4
    assert db.query_tuning_record(matmul(32), TARGET).run_secs[0] == 5e-6
