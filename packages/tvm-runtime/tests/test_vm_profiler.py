"""The VM profiler on hand-written bytecode (no compiler): rows with calls, shapes, device and
source layers, the overhead that makes them add up, CSV and JSON that parse back, and the
executable's kernel metadata through export and load."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

import tvm.runtime
from tvm.runtime.error import ModuleLoadError
from tvm.runtime.vm import Executable, ProfileReport, ProfileRow, VirtualMachine, load_executable

LAYERS = {"add_scalar": {"source_layers": ["block1/Add", "block2/Add"]}}


def R(i):
    return ["reg", i]


def shift_program(kernel_info=None):
    """main(x: f32[n]) = inner(x) + 2, inner(x) = x + 1: add_scalar called twice, once from
    a nested VM function, plus a builtin."""
    n = ["var", 0]
    size = ["mul", n, 4]

    def add(src, dst_reg, value):
        return [
            {"op": "alloc_storage", "dst": dst_reg - 1, "size": size, "device": 0,
             "scope": "global"},
            {"op": "alloc_tensor", "dst": dst_reg, "storage": R(dst_reg - 1), "offset": 0,
             "shape": ["shape", [n]], "dtype": "float32"},
            {"op": "call", "dst": None, "func": "add_scalar",
             "args": [src, R(dst_reg), ["imm", value]]},
        ]

    head = [{"op": "check_tensor_info", "arg": R(0), "ndim": 1, "dtype": "float32",
             "ctx": "parameter x"},
            {"op": "match_shape", "arg": R(0), "dims": [["store", 0]], "ctx": "parameter x"}]
    inner = {"name": "inner", "params": ["x"], "num_regs": 3, "heap_size": 1,
             "heap_names": ["n"], "code": head + add(R(0), 2, 1.0) + [{"op": "ret",
                                                                       "value": R(2)}]}
    main = {"name": "main", "params": ["x"], "num_regs": 5, "heap_size": 1, "heap_names": ["n"],
            "code": head + [{"op": "call", "dst": 1, "func": "inner", "args": [R(0)]}]
            + add(R(1), 3, 2.0)
            + [{"op": "call", "dst": 4, "func": "vm.builtin.make_tuple", "args": [R(3)]},
               {"op": "ret", "value": R(3)}]}
    program = {"functions": [main, inner], "target": "c"}
    if kernel_info is not None:
        program["kernel_info"] = kernel_info
    return program


@pytest.fixture
def exe(kernel_module):
    return Executable(shift_program(LAYERS), [], kernel_module)


def test_rows_have_calls_shapes_device_and_layers(exe):
    vm = VirtualMachine(exe)
    report = vm.profile("main", np.ones(64, "float32"), repeat=3)
    kernel = report.row("add_scalar")
    assert kernel.kind == "kernel" and kernel.count == 2  # one call made inside @inner
    assert kernel.shapes == (("float32[64]", "float32[64]", "float"),)
    assert kernel.arg_shapes == ("float32[64]", "float32[64]", "float")
    assert kernel.device == "cpu(0)" and kernel.source_layers == ("block1/Add", "block2/Add")
    builtin = report.row("vm.builtin.make_tuple")
    assert builtin.kind == "builtin" and builtin.count == 1 and builtin.source_layers == ()
    assert builtin.device == "cpu(0)"  # where its tensor argument lives
    assert {r.kind for r in report.rows} == {"kernel", "builtin"}  # @inner is not a row
    assert report.repeat == 3 and len(report.runs_s) == 3
    assert report.total_s == pytest.approx(sum(report.runs_s) / 3)
    # by construction: the rows and the overhead add up to the measured total
    assert report.calls_s + report.overhead_s == pytest.approx(report.total_s, rel=1e-12)
    assert sum(r.share for r in report.rows) <= 1.0 + 1e-12
    assert kernel.share == pytest.approx(kernel.total_s / report.total_s)


def test_distinct_shapes_and_repeated_profiles(exe):
    vm = VirtualMachine(exe)
    first = vm.profile("main", np.ones(8, "float32"), warmup=0)
    assert first.row("add_scalar").count == 2
    second = vm.profile("main", np.ones(5, "float32"))
    row = second.row("add_scalar")
    assert row.count == 2 and row.shapes == (("float32[5]", "float32[5]", "float"),)
    with pytest.raises(ValueError, match="repeat must be an int >= 1"):
        vm.profile("main", np.ones(5, "float32"), repeat=0)
    with pytest.raises(ValueError, match="warmup must be an int >= 0"):
        vm.profile("main", np.ones(5, "float32"), warmup=-1)


def test_table_csv_and_json_parse_back(exe):
    report = VirtualMachine(exe).profile("main", np.ones(16, "float32"), repeat=2)
    table = report.table()
    assert "Source layers" in table and "block1/Add, block2/Add" in table
    assert "float32[16], float32[16], float" in table and "(vm overhead)" in table
    assert "(mean of 2 runs)" in table and str(report) == table

    rows = list(csv.DictReader(io.StringIO(report.csv())))
    assert [r["name"] for r in rows][-1] == "(vm overhead)" and rows[-1]["kind"] == "vm"
    by_name = {r["name"]: r for r in rows}
    k = by_name["add_scalar"]
    assert k["kind"] == "kernel" and int(k["calls"]) == 2 and k["device"] == "cpu(0)"
    assert k["source_layers"].split("; ") == ["block1/Add", "block2/Add"]
    assert k["shapes"] == "float32[16], float32[16], float"
    total_us = sum(float(r["total_us"]) for r in rows)
    assert total_us == pytest.approx(report.total_s * 1e6, abs=1e-3 * len(rows))

    data = json.loads(report.json())
    assert data["total_s"] == pytest.approx(
        sum(r["total_s"] for r in data["rows"]) + data["overhead_s"])
    assert data["rows"][0].keys() >= {"name", "kind", "count", "total_s", "mean_s", "share",
                                      "device", "shapes", "source_layers"}
    back = ProfileReport.from_dict(data)
    assert back.rows == report.rows and back.total_s == report.total_s
    assert back.runs_s == report.runs_s and back.overhead_s == report.overhead_s
    assert report.as_dict() == data
    with pytest.raises(ValueError, match="not a profile report"):
        ProfileReport.from_dict({"rows": []})
    with pytest.raises(ValueError, match="not a profile row"):
        ProfileRow.from_dict({"name": "x"})


def test_report_api_of_plain_rows():
    rows = [ProfileRow("k", "kernel", 2, 3e-6), ProfileRow("b", "builtin", 1, 1e-6)]
    report = ProfileReport("main", rows, 5e-6, 4e-6)
    assert report.overhead_s == pytest.approx(1e-6) and report.row("k").mean_s == 1.5e-6
    assert "(total)" in report.table() and report.csv().count("\n") == 4
    with pytest.raises(KeyError, match="no function 'z' in the profile; it has: k, b"):
        report.row("z")


def test_kernel_info_survives_export_and_load(exe, tmp_path):
    assert exe.kernel_source_layers("add_scalar") == ("block1/Add", "block2/Add")
    assert exe.kernel_source_layers("other") == ()
    path = tmp_path / "model.so"
    exe.export_library(path)
    loaded = load_executable(path)
    assert loaded.program["kernel_info"] == LAYERS
    report = VirtualMachine(loaded).profile("main", np.ones(4, "float32"))
    assert report.row("add_scalar").source_layers == ("block1/Add", "block2/Add")


def test_programs_without_kernel_info_and_bad_entries(kernel_module, tmp_path):
    old = Executable(shift_program(), [], kernel_module)  # written before kernel_info
    assert old.kernel_source_layers("add_scalar") == ()
    report = VirtualMachine(old).profile("main", np.ones(4, "float32"))
    assert report.row("add_scalar").source_layers == ()
    for bad in ([1], {"add_scalar": {"source_layers": "conv"}},
                {"add_scalar": {"source_layers": [1]}}, {"add_scalar": 3}):
        with pytest.raises(ModuleLoadError, match="kernel_info"):
            Executable(shift_program(bad), [], kernel_module)


def test_cpu_profile_does_not_look_up_the_device_api(exe, monkeypatch):
    """The timers are cheap: on the CPU no device synchronisation (an API lookup) per call."""
    vm = VirtualMachine(exe)
    calls = []
    monkeypatch.setattr(tvm.runtime.Device, "sync", lambda self: calls.append(self))
    vm.profile("main", np.ones(4, "float32"), repeat=2)
    vm.time_evaluator("main", number=2, repeat=2)(np.ones(4, "float32"))
    assert calls == []
