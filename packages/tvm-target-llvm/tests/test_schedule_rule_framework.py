"""The default CPU schedule as rules of tvm.tir.schedule.rules: its trace replays from JSON
(padded convolutions included), and a vendor's rule joins it through the plugin hook
``tvm_tir_schedule_rules``."""

from __future__ import annotations

import numpy as np
import pytest
import schedule_workloads as W
from test_conv_schedules import depthwise_inline_pad
from tvm import te, tir
from tvm.ffi import structural_equal
from tvm.ffi.plugin import hookimpl, register_plugin, unregister_plugin
from tvm.ir.target import Target
from tvm.target.llvm.schedule_rules import (
    SCHEDULED_ATTR, STRICT_ENV, cpu_info, cpu_rules, default_rules, explain_default_schedule,
    schedule_prim_func, trace_default_schedule,
)
from tvm.tir.expr import FloatImm, Max
from tvm.tir.schedule import Trace
from tvm.tir.schedule.rules import ScheduleRule, block_kind, rules_for_target

TARGETS = ["llvm -mcpu=skylake-avx512 -num-cores=4", "llvm -mcpu=haswell -num-cores=4"]


@pytest.fixture(autouse=True)
def strict_rules(monkeypatch):
    monkeypatch.setenv(STRICT_ENV, "1")


CASES = {
    "matmul": lambda: W.matmul(64, 128, 96, bias=True, relu=True),
    "dense": lambda: W.dense(64, 128, 256),
    "conv2d": lambda: W.conv2d_nchw(1, 16, 14, 14, 32),
    "padded depthwise": lambda: depthwise_inline_pad(32, 56, 56),
    "softmax": lambda: W.softmax(64, 256),
    "layer norm": lambda: W.layer_norm(64, 256),
    "reduce": lambda: W.reduce_sum((64, 33), 1),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_default_schedule_trace_replays_from_json(case, target):
    func = CASES[case]()
    trace = trace_default_schedule(func, target)
    replayed = tir.Schedule(func)
    Trace.from_json(trace.as_json()).apply_to_schedule(replayed)
    expected = schedule_prim_func(func, target)
    assert structural_equal(replayed.mod["main"].with_attr(SCHEDULED_ATTR, True), expected)


def test_padding_is_a_traced_primitive():
    func = depthwise_inline_pad(32, 56, 56)
    trace = trace_default_schedule(func, TARGETS[0])
    names = [i.kind.name for i in trace.insts]
    assert "MaterializePadding" in names
    assert names.index("MaterializePadding") < names.index("ComputeAt")  # then placed per channel


def test_the_plugin_gives_the_cpu_rules():
    tgt = Target(TARGETS[1])
    assert [r.name for r in rules_for_target(tgt)] == [r.name for r in default_rules(tgt)]
    assert [r.name for r in default_rules(tgt)] == \
        ["padding", "auto_inline", "int8 dot product", "anchor", "elementwise"]


# -- a vendor's rule through the plugin manager -------------------------------------------------
class VendorRelu(ScheduleRule):
    """``max(x, 0)`` blocks of a vendor's CPU: rows in parallel, 16 lanes unrolled."""

    name = "vendor_relu"
    priority = 10

    def applies(self, sch, block):
        if block_kind(sch, block) != "spatial":
            return False
        value = sch.get(block).body.value
        return isinstance(value, Max) and isinstance(value.b, FloatImm) and value.b.value == 0

    def transform(self, sch, block):
        *outer, inner = sch.get_loops(block)
        io, ii = sch.split(inner, [None, 16])
        sch.unroll(ii)
        sch.parallel(sch.fuse(*outer, io) if outer else io)
        sch.annotate(block, "vendor.kernel", "relu16")


class VendorPlugin:
    @hookimpl
    def tvm_tir_schedule_rules(self, target):
        if getattr(target, "kind_name", None) != "llvm":
            return None
        return [VendorRelu()]


@pytest.fixture
def vendor():
    register_plugin(VendorPlugin(), "acme_rules")
    yield
    unregister_plugin("acme_rules")


def _relu(n: int = 8, m: int = 64):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: te.max(A[i, j], 0.0), name="T_relu")
    return te.create_prim_func([A, B])


def test_vendor_rule_joins_the_default_schedule(vendor):
    tgt = Target(TARGETS[1])
    names = [r.name for r in rules_for_target(tgt)]
    assert names[0] == "vendor_relu" and "anchor" in names
    assert explain_default_schedule(_relu(), tgt) == {"T_relu": "vendor_relu"}
    mod = tir.build(_relu(), target=TARGETS[1])
    x = np.random.default_rng(0).standard_normal((8, 64)).astype("float32")
    out = np.zeros_like(x)
    mod["main"](x, out)
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    # the rest of the function is still the CPU rules' work
    plan = explain_default_schedule(W.matmul(64, 128, 96, bias=True, relu=True), tgt)
    assert plan["C"] == "contraction"


def test_without_the_vendor_the_cpu_rules_schedule_it():
    assert explain_default_schedule(_relu(), TARGETS[1]) == {"T_relu": "elementwise"}
    assert all(r.name != "vendor_relu" for r in rules_for_target(Target(TARGETS[1])))
    assert [r.name for r in cpu_rules(cpu_info(TARGETS[1]))] == \
        [r.name for r in rules_for_target(Target(TARGETS[1]))]
