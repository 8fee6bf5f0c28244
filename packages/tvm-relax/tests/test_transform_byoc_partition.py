"""FuseOpsByPattern, MergeCompositeFunctions, RunCodegen and the backend registry."""

from __future__ import annotations

import warnings

import pytest
from tvm.ffi import assert_structural_equal
from tvm.ffi.plugin import PluginHookWarning, hookimpl, register_plugin, unregister_plugin
from tvm.relax import transform as T
from tvm.relax.backend import (Backend, FusionPattern, OffloadReport, get_backend,
                               list_backends, partition_for)
from tvm.relax.dpl import is_op, wildcard
from tvm.relax.expr import Call, ExternFunc
from tvm.runtime.module import Module
from tvm.script import ir as I
from tvm.script import relax as R


def _patterns():
    mm = is_op("relax.matmul")(wildcard(), wildcard())
    bias = is_op("relax.add")(mm, wildcard())

    def f32(ctx):
        dtype = ctx.root.struct_info.dtype
        return None if dtype == "float32" else f"dtype {dtype}, needs float32"

    return [FusionPattern("toy.matmul_bias", bias, {}, f32),
            FusionPattern("toy.matmul", mm, {}, f32)]


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 16), "float32"),
             b: R.Tensor((16,), "float32")) -> R.Tensor((4, 16), "float32"):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.add(y, b)
            e = R.exp(z)
            R.output(e)
        return e


@I.ir_module
class ExpectedAnnotated:
    @R.function
    def fused_relax_matmul_relax_add_toy(
            x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 16), "float32"),
            b: R.Tensor((16,), "float32")) -> R.Tensor((4, 16), "float32"):
        R.func_attr({"Codegen": "toy"})

        @R.function
        def fused_relax_matmul_relax_add(
                x_1: R.Tensor((4, 8), "float32"), w_1: R.Tensor((8, 16), "float32"),
                b_1: R.Tensor((16,), "float32")) -> R.Tensor((4, 16), "float32"):
            R.func_attr({"Composite": "toy.matmul_bias", "Primitive": 1})
            with R.dataflow():
                y = R.matmul(x_1, w_1)
                z = R.add(y, b_1)
                R.output(z)
            return z

        gv = fused_relax_matmul_relax_add(x, w, b)
        return gv

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 16), "float32"),
             b: R.Tensor((16,), "float32")) -> R.Tensor((4, 16), "float32"):
        cls = ExpectedAnnotated
        with R.dataflow():
            z = cls.fused_relax_matmul_relax_add_toy(x, w, b)
            e = R.exp(z)
            R.output(e)
        return e


def test_fuse_ops_by_pattern_annotate_codegen():
    after = T.FuseOpsByPattern(_patterns(), annotate_codegen=True)(Before)
    assert_structural_equal(after, ExpectedAnnotated)


def test_fuse_ops_by_pattern_composite_and_check_report():
    @I.ir_module
    class Mixed:
        @R.function
        def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 16), "float32"),
                 h: R.Tensor((4, 8), "float16"), v: R.Tensor((8, 2), "float16")):
            with R.dataflow():
                y = R.matmul(x, w)
                u = R.matmul(h, v)
                R.output(y, u)
            return (y, u)

    report = OffloadReport()
    after = T.FuseOpsByPattern(_patterns(), report=report)(Mixed)
    comp = after["fused_relax_matmul"]
    assert comp.attrs["Composite"] == "toy.matmul" and comp.attrs["Primitive"] == 1
    assert "Codegen" not in comp.attrs
    assert [p.symbol for p in report.partitions] == ["fused_relax_matmul"]
    [rej] = report.rejections
    assert (rej.binding, rej.op, rej.pattern) == ("u", "relax.matmul", "toy.matmul")
    assert "float16" in rej.reason and "stayed on the host" in str(report)


def test_intermediate_used_outside_is_not_fused():
    @I.ir_module
    class Escapes:
        @R.function
        def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 16), "float32"),
                 b: R.Tensor((16,), "float32")):
            with R.dataflow():
                y = R.matmul(x, w)
                z = R.add(y, b)
                R.output(y, z)
            return (y, z)

    report = OffloadReport()
    after = T.FuseOpsByPattern(_patterns(), report=report)(Escapes)
    # the bias pattern is refused (y escapes); the matmul alone is taken
    assert [p.patterns for p in report.partitions] == [("toy.matmul",)]
    assert "used outside" in report.rejections[0].reason
    assert after["fused_relax_matmul"].attrs["Composite"] == "toy.matmul"


def test_merge_composite_functions_groups_without_cycles():
    @I.ir_module
    class Chain:
        @R.function
        def main(x: R.Tensor((4, 4), "float32"), w: R.Tensor((4, 4), "float32")):
            with R.dataflow():
                a = R.matmul(x, w)
                b = R.matmul(a, w)      # joins a's group
                c = R.exp(a)            # host op reading the group
                d = R.matmul(c, b)      # would close a cycle: a new group
                R.output(d)
            return d

    fused = T.FuseOpsByPattern(_patterns())(Chain)
    merged = T.MergeCompositeFunctions()(fused)
    codegen = {gv.name_hint: f for gv, f in merged.items() if f.attrs.get("Codegen")}
    assert len(codegen) == 2, list(codegen)
    assert not any(f.attrs.get("Composite") for _, f in merged.items())
    sizes = sorted(sum(isinstance(b.value, Call) for blk in f.body.blocks for b in blk.bindings)
                   for f in codegen.values())
    assert sizes == [1, 2]
    from tvm.relax.analysis.well_formed import well_formed

    assert well_formed(merged)


class _FakeModule(Module):
    def __init__(self, symbols):
        super().__init__("toy")
        for s in symbols:
            self._functions[s] = lambda *a: None


def test_run_codegen_replaces_calls_and_keeps_modules():
    seen = []

    def codegen(funcs):
        seen.extend(s for s, _ in funcs)
        return _FakeModule([s for s, _ in funcs])

    toy = Backend("toy", _patterns(), codegen)
    mod = partition_for(Before, [toy])
    from tvm.relax.backend import register_backend, unregister_backend

    register_backend(toy)
    try:
        after = T.RunCodegen()(mod)
    finally:
        unregister_backend("toy")
    assert seen == ["fused_relax_matmul_relax_add_toy"]
    assert "fused_relax_matmul_relax_add_toy" not in after
    [ext] = after.get_attr("external_mods")
    assert isinstance(ext, _FakeModule)
    call = after["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.call_dps_packed"
    assert isinstance(call.args[0], ExternFunc)
    assert call.args[0].global_symbol == "fused_relax_matmul_relax_add_toy"


def test_run_codegen_tells_the_backend_which_parameters_are_constants():
    import numpy as np

    seen = {}

    def codegen(funcs):
        seen.update((s, f.attrs.get("constant_params")) for s, f in funcs)
        return _FakeModule([s for s, _ in funcs])

    toy = Backend("toy", _patterns(), codegen, bind_constants=False)
    w = np.ones((8, 16), "float32")
    from tvm.relax.backend import register_backend, unregister_backend
    from tvm.relax.vm.build import bind_params

    register_backend(toy)
    try:
        for params, want in (({"w": w}, (1,)), ({}, None)):
            mod = bind_params(Before, params) if params else Before
            T.RunCodegen()(partition_for(mod, [toy]))
            assert [tuple(int(k) for k in v) if v is not None else None
                    for v in seen.values()] == [want]
            seen.clear()
    finally:
        unregister_backend("toy")


class _Broken:
    @hookimpl
    def tvm_relax_register_backends(self, register):
        raise RuntimeError("vendor SDK not found")


class _Good:
    @hookimpl
    def tvm_relax_register_backends(self, register):
        register(Backend("goodtoy", [], lambda funcs: _FakeModule([])))


def test_failing_backend_plugin_is_isolated():
    register_plugin(_Broken(), "brokenbackend")
    register_plugin(_Good(), "goodbackend")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            names = [b.name for b in list_backends()]
        assert "goodtoy" in names
        assert any(issubclass(w.category, PluginHookWarning) and "brokenbackend" in str(w.message)
                   for w in caught)
        with pytest.raises(KeyError, match="no external backend named 'nope'"):
            get_backend("nope")
    finally:
        unregister_plugin("brokenbackend")
        unregister_plugin("goodbackend")


def test_unavailable_backend_reports_why():
    toy = Backend("toy", _patterns(), lambda funcs: None, unavailable="libtoy.so not found")
    report = OffloadReport()
    after = partition_for(Before, [toy], report)
    assert after is Before or not any(f.attrs.get("Codegen") for _, f in after.items())
    assert report.partitions == []
    assert all("libtoy.so not found" in r.reason for r in report.rejections)
    assert {r.pattern for r in report.rejections} == {"toy.matmul_bias", "toy.matmul"}


def test_bad_patterns_are_clear_errors():
    with pytest.raises(TypeError, match="FusionPattern"):
        T.FuseOpsByPattern([42])
    with pytest.raises(TypeError, match="dpl Pattern"):
        FusionPattern("toy.x", "not a pattern")


def test_partitioned_modules_print_and_parse_back():
    fused = T.FuseOpsByPattern(_patterns())(Before)
    for mod in (fused, T.MergeCompositeFunctions()(fused),
                T.FuseOpsByPattern(_patterns(), annotate_codegen=True)(Before)):
        assert_structural_equal(I.parse(mod.script()), mod)


def test_later_backend_takes_what_an_unavailable_one_left():
    gone = Backend("gone", [FusionPattern("gone.matmul_bias", _patterns()[0].pattern)],
                   lambda funcs: None, unavailable="libgone.so not found")
    toy = Backend("toy", _patterns(), lambda funcs: _FakeModule([s for s, _ in funcs]))
    report = OffloadReport()
    partition_for(Before, [gone, toy], report)
    assert [p.backend for p in report.partitions] == ["toy"]
    assert report.rejections == []  # the binding toy took is not reported as left behind
