"""tir.lower / tir.build: the default pipeline, target resolution and the codegen hooks."""

import numpy as np
import pytest
from lowering_helpers import find_all, matmul_blocks, run_func
from tvm import tir
from tvm.ffi import PluginError
from tvm.ffi.plugin import hookimpl, register_plugin, unregister_plugin
from tvm.ir import IRModule, Target, TargetKind, register_target_kind, unregister_target_kind
from tvm.ir.target import HOST_JIT, UnknownTargetKindError
from tvm.ir.transform import PassContext, PassInfo, PassTimingInstrument, get_pass, module_pass
from tvm.tir import (
    Block, BlockRealize, BufferLoad, BufferStore, FloatImm, For, ForKind, IntImm, IterVar,
    PrimFunc, Ramp, Range, Var, decl_buffer,
)
from tvm.tir.analysis import verify_well_formed
from tvm.tir.build import apply_default_schedule, get_target_passes
from tvm.tir.hooks import get_codegen
from tvm.tir.transform import Simplify


def _scheduled_elementwise(n=32, lanes=8):
    """``B[i] = A[i] * 2 + 1`` split into an outer serial and an inner vectorized loop, with
    an unrolled tail store, written as a scheduled block program."""
    a, b = Var("a", "handle"), Var("b", "handle")
    A = decl_buffer((n,), "float32", "A")
    B = decl_buffer((n,), "float32", "B")
    io, ii, vi = Var("io"), Var("ii"), Var("vi")
    store = BufferStore(B, A[vi] * FloatImm("float32", 2.0) + FloatImm("float32", 1.0), (vi,))
    realize = BlockRealize((io * lanes + ii,), IntImm("bool", 1),
                           Block((IterVar(Range(0, n), vi),), (), (), "B", store))
    loops = For(io, 0, n // lanes, ForKind.UNROLLED,
                For(ii, 0, lanes, ForKind.VECTORIZED, realize))
    root = BlockRealize((), IntImm("bool", 1), Block((), (), (), "root", loops))
    return PrimFunc([a, b], root, buffer_map={a: A, b: B})


# --------------------------------------------------------------------------- lowering


def test_lower_matmul_gives_flat_loops():
    mod = tir.lower(matmul_blocks(4, 5, 6))
    func = mod["matmul"]
    assert find_all(func, BlockRealize) == [] and find_all(func, Block) == []
    for node in find_all(func, BufferLoad) + find_all(func, BufferStore):
        assert len(node.indices) == 1 and len(node.buffer.shape) == 1
    assert [len(b.shape) for b in func.buffer_map.values()] == [2, 2, 2]
    assert len(find_all(func, For)) == 3
    assert verify_well_formed(func)
    rng = np.random.default_rng(0)
    a, b = rng.random((4, 6), dtype=np.float32), rng.random((6, 5), dtype=np.float32)
    c = run_func(func, a, b, np.zeros((4, 5), np.float32))[2]
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_lower_vectorizes_and_unrolls():
    func = tir.lower(_scheduled_elementwise(32, 8))["main"]
    assert find_all(func, For) == []  # unrolled x vectorized: straight-line vector code
    stores = find_all(func, BufferStore)
    assert len(stores) == 4 and all(isinstance(s.indices[0], Ramp) for s in stores)
    assert [s.indices[0].base.value for s in stores] == [0, 8, 16, 24]
    assert func.attrs["global_symbol"] == "main"
    a = np.arange(32, dtype=np.float32)
    np.testing.assert_allclose(run_func(func, a, np.zeros(32, np.float32))[1], a * 2 + 1)


def test_lowering_pipeline_order():
    names = [p.name for p in tir.get_lowering_pipeline().passes]
    assert names == [
        "tir.LowerInitBlock", "tir.LowerOpaqueBlock", "tir.GuardIntegerDivision", "tir.LowerChecks",
        "tir.CompactBufferAllocation", "tir.FlattenBuffer",
        "tir.LegalizeLowPrecision", "tir.Simplify", "tir.VectorizeLoop", "tir.UnrollLoop", "tir.LowerAllocation", "tir.Simplify",
        "tir.RemoveNoOp",
    ]
    full = tir.get_default_pipeline()
    assert full.passes[0].name == "tir.lowering_pipeline"
    assert full.passes[-1].name == "MakePackedAPI"


def test_full_pipeline_is_well_formed_after_every_pass():
    seen = []

    class Record:
        name = "record"

        def enter_pass_ctx(self):
            pass

        def exit_pass_ctx(self):
            pass

        def should_run(self, mod, info):
            return True

        def run_before_pass(self, mod, info):
            pass

        def run_after_pass(self, mod, info: PassInfo):
            seen.append(info.name)

    with PassContext(instruments=[Record()], config={"ir.verify_after_each_pass": True}):
        for func in (matmul_blocks(4, 4, 4), _scheduled_elementwise()):
            mod = tir.get_default_pipeline()(IRModule({"main": func.with_attr("global_symbol", "main")}))
            assert mod["main"].attrs["calling_conv"] == "packed"
    assert "MakePackedAPI" in seen and "tir.VectorizeLoop" in seen


def test_lower_accepts_custom_pipelines():
    func = matmul_blocks(2, 2, 2)
    only_blocks = tir.lower(func, pipeline=[tir.transform.LowerOpaqueBlock()])["matmul"]
    assert len(find_all(only_blocks, BufferStore)[0].indices) == 2  # not flattened
    by_name = tir.lower(func, pipeline="tir.lowering_pipeline")["matmul"]
    assert len(find_all(by_name, BufferStore)[0].indices) == 1
    with pytest.raises(TypeError, match="pipeline must be"):
        tir.lower(func, pipeline=42)


def test_names_and_global_symbols():
    func = _scheduled_elementwise()
    assert "global_symbol" not in func.attrs
    assert tir.lower(func, name="scale")["scale"].attrs["global_symbol"] == "scale"
    mod = tir.lower(IRModule({"kernel": func}))
    assert mod["kernel"].attrs["global_symbol"] == "kernel"
    with pytest.raises(ValueError, match="renames a single PrimFunc"):
        tir.lower(IRModule({"kernel": func}), name="other")
    with pytest.raises(TypeError, match="PrimFunc or an IRModule"):
        tir.lower("not a function")


# --------------------------------------------------------------------------- build and hooks


class _FakeCodegenPlugin:
    """A target plugin generating nothing: it records what it was asked to compile."""

    def __init__(self, kind):
        self.kind = kind
        self.calls = []
        self.schedule_calls = []
        self.schedule_result = None
        self.hook_targets = []  # what every hook call received as ``target``

    @hookimpl
    def tvm_tir_codegen(self, target):
        self.hook_targets.append(target)
        if target.kind_name != self.kind:
            return None

        def codegen(mod, tgt):
            self.calls.append((mod, tgt))
            return ("runtime-module", sorted(gv.name_hint for gv in mod))

        return codegen

    @hookimpl
    def tvm_tir_default_schedule(self, mod, target):
        self.hook_targets.append(target)
        if target.kind_name != self.kind:
            return None
        self.schedule_calls.append(mod)
        return self.schedule_result


@pytest.fixture
def fake_target():
    kind = TargetKind("tirtestcpu", 1, {"mcpu": (str, "generic")}, package="tvm-tir-tests")
    register_target_kind(kind)
    plugin = _FakeCodegenPlugin("tirtestcpu")
    register_plugin(plugin, "tirtestcpu-plugin")
    yield plugin
    unregister_plugin("tirtestcpu-plugin")
    unregister_target_kind("tirtestcpu")


def test_build_runs_pipeline_then_the_plugin_codegen(fake_target):
    result = tir.build(matmul_blocks(4, 4, 4), target="tirtestcpu -mcpu=fancy")
    assert result == ("runtime-module", ["matmul"])
    (mod, tgt), = fake_target.calls
    assert isinstance(tgt, Target) and tgt.mcpu == "fancy"
    packed = mod["matmul"]
    assert packed.attrs["calling_conv"] == "packed" and len(packed.params) == 6
    assert verify_well_formed(mod)


def test_build_uses_current_target_when_none_given(fake_target):
    with Target("tirtestcpu"):
        tir.build(_scheduled_elementwise(), target=None, name="ew")
    mod, _ = fake_target.calls[0]
    assert mod["ew"].attrs["global_symbol"] == "ew"


def test_build_defaults_to_the_host_target_of_the_registry(fake_target):
    # an in-process kind comes first among the host JIT kinds, whatever plugins are installed
    jit = TargetKind("tirtestcpu", 1, {"mcpu": (str, "generic")}, capabilities=(HOST_JIT,))
    register_target_kind(jit, override=True)
    tir.build(_scheduled_elementwise(), name="ew")
    (_, tgt), = fake_target.calls
    assert isinstance(tgt, Target) and tgt.kind_name == "tirtestcpu"


def test_hooks_receive_a_target(fake_target):
    func = _scheduled_elementwise()
    tir.build(func, target="tirtestcpu -mcpu=fancy")
    apply_default_schedule(IRModule({"main": func}), "tirtestcpu")
    get_codegen({"kind": "tirtestcpu"})
    assert len(fake_target.hook_targets) == 4
    assert all(isinstance(t, Target) for t in fake_target.hook_targets)
    assert fake_target.hook_targets[0].mcpu == "fancy"


def _mark_pass(mark):
    @module_pass(opt_level=0, name=f"tir.tirtest.{mark}")
    def mark_functions(mod, ctx):
        return IRModule({gv: f.with_attr(mark, True) for gv, f in mod.items()}, mod.attrs)

    return lambda: mark_functions


@pytest.fixture
def target_with_passes(fake_target):
    kind = TargetKind("tirtestcpu", 1, {"mcpu": (str, "generic")}, lowering_passes={
        "tir.tirtest.First": _mark_pass("First"), "tir.tirtest.Second": _mark_pass("Second")})
    register_target_kind(kind, override=True)
    return fake_target


def test_a_kinds_lowering_passes_end_the_default_pipeline(target_with_passes):
    pipeline = tir.get_default_pipeline("tirtestcpu")
    assert [p.name for p in pipeline.passes] == [
        "tir.lowering_pipeline", "MakePackedAPI", "tir.tirtest.First", "tir.tirtest.Second"]
    assert [p.name for p in get_target_passes(Target("tirtestcpu"))] == [
        "tir.tirtest.First", "tir.tirtest.Second"]
    assert get_pass("tir.tirtest.First").name == "tir.tirtest.First"
    assert [p.name for p in tir.get_default_pipeline().passes] == [
        "tir.lowering_pipeline", "MakePackedAPI"]  # no target: no target passes


def test_a_kinds_lowering_passes_run_under_the_pass_context(target_with_passes):
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        tir.build(matmul_blocks(2, 2, 2), target="tirtestcpu")
    (mod, _), = target_with_passes.calls
    attrs = mod["matmul"].attrs
    assert attrs["calling_conv"] == "packed" and attrs["First"] and attrs["Second"]
    names = list(timing.timings)
    assert names.index("MakePackedAPI") < names.index("tir.tirtest.First") < names.index(
        "tir.tirtest.Second")
    with PassContext(disabled_pass=["tir.tirtest.Second"]):
        tir.build(matmul_blocks(2, 2, 2), target="tirtestcpu")
    assert "Second" not in target_with_passes.calls[1][0]["matmul"].attrs


def test_build_with_custom_pipeline(fake_target):
    tir.build(matmul_blocks(2, 2, 2), target="tirtestcpu",
              pipeline=[tir.transform.LowerOpaqueBlock(), tir.transform.FlattenBuffer(), Simplify()])
    mod, _ = fake_target.calls[0]
    assert "calling_conv" not in mod["matmul"].attrs  # the custom pipeline has no MakePackedAPI


def test_default_schedule_hook_is_consulted_for_unscheduled_functions(fake_target):
    func = _scheduled_elementwise()
    tir.build(func, target="tirtestcpu")
    assert len(fake_target.schedule_calls) == 1
    fake_target.schedule_calls.clear()
    tir.build(func.with_attr("tir.is_scheduled", True), target="tirtestcpu")
    assert fake_target.schedule_calls == []


def test_default_schedule_result_replaces_the_module(fake_target):
    replacement = IRModule({"other": matmul_blocks(2, 2, 2).with_attr("global_symbol", "other")})
    fake_target.schedule_result = replacement
    mod = apply_default_schedule(IRModule({"main": _scheduled_elementwise()}), Target("tirtestcpu"))
    assert mod is replacement
    fake_target.schedule_result = "nonsense"
    with pytest.raises(TypeError, match="expected an IRModule or None"):
        tir.build(_scheduled_elementwise(), target="tirtestcpu")


class _TunedPlugin:
    """Answers ``tvm_tir_tuned_schedule`` for functions named in ``answers``."""

    def __init__(self, answers):
        self.answers = answers
        self.asked = []

    @hookimpl
    def tvm_tir_tuned_schedule(self, func, target):
        self.asked.append((func, target))
        return self.answers.get(func.attrs.get("global_symbol"))


def _named(func, name):
    return func.with_attr("global_symbol", name)


def test_tuned_schedule_hook_is_asked_before_the_default_schedule(fake_target):
    tuned = _named(_scheduled_elementwise(), "a").with_attr("tir.is_scheduled", True)
    plugin = _TunedPlugin({"a": tuned})
    register_plugin(plugin, "tirtest-tuned")
    try:
        mod = IRModule({"a": _named(_scheduled_elementwise(), "a"),
                        "b": _named(_scheduled_elementwise(), "b")})
        fake_target.schedule_result = None
        out = apply_default_schedule(mod, "tirtestcpu")
        assert out["a"] is tuned and out["b"] is mod["b"]
        assert sorted(f.attrs["global_symbol"] for f, _ in plugin.asked) == ["a", "b"]
        assert all(isinstance(t, Target) for _, t in plugin.asked)
        # the default schedule still sees the module, with the tuned function marked
        (seen,) = fake_target.schedule_calls
        assert seen["a"].attrs.get("tir.is_scheduled") and not seen["b"].attrs.get(
            "tir.is_scheduled")
        # every function tuned: the default schedule is not asked
        fake_target.schedule_calls.clear()
        plugin.answers["b"] = _named(_scheduled_elementwise(), "b").with_attr(
            "tir.is_scheduled", True)
        apply_default_schedule(mod, "tirtestcpu")
        assert fake_target.schedule_calls == []
    finally:
        unregister_plugin("tirtest-tuned")


def test_tuned_schedule_hook_must_answer_a_scheduled_prim_func(fake_target):
    plugin = _TunedPlugin({"a": _named(_scheduled_elementwise(), "a")})  # not marked
    register_plugin(plugin, "tirtest-tuned")
    try:
        with pytest.raises(TypeError, match="tvm_tir_tuned_schedule hook returned PrimFunc for a"):
            apply_default_schedule(IRModule({"a": _named(_scheduled_elementwise(), "a")}),
                                   "tirtestcpu")
    finally:
        unregister_plugin("tirtest-tuned")


def test_unknown_target_kind_gives_the_install_hint():
    with pytest.raises(UnknownTargetKindError, match="unknown target kind 'nosuchtarget'"):
        tir.build(matmul_blocks(2, 2, 2), target="nosuchtarget")


def test_registered_kind_without_codegen_is_a_plugin_error():
    register_target_kind(TargetKind("tirnocodegen", 1, package="tvm-tir-tests"))
    try:
        with pytest.raises(PluginError, match="no installed plugin generates code for target kind 'tirnocodegen'"):
            tir.build(matmul_blocks(2, 2, 2), target="tirnocodegen")
    finally:
        unregister_target_kind("tirnocodegen")


def test_bad_target_type():
    with pytest.raises(TypeError, match="target must be"):
        tir.build(matmul_blocks(2, 2, 2), target=3)


def test_lower_te_matmul_and_softmax_like_reduction():
    te = pytest.importorskip("tvm.te")
    A = te.placeholder((8, 4), name="A")
    B = te.placeholder((4, 6), name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((8, 6), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((8, 6), lambda i, j: C[i, j] * 2.0, name="D")
    func = te.create_prim_func([A, B, D])
    mod = tir.lower(func, name="mm2")
    lowered = mod["mm2"]
    assert find_all(lowered, BlockRealize) == []
    for node in find_all(lowered, BufferLoad) + find_all(lowered, BufferStore):
        assert len(node.indices) == 1
    assert verify_well_formed(lowered)
    rng = np.random.default_rng(2)
    a, b = rng.random((8, 4), dtype=np.float32), rng.random((4, 6), dtype=np.float32)
    d = run_func(lowered, a, b, np.zeros((8, 6), np.float32))[2]
    np.testing.assert_allclose(d, (a @ b) * 2.0, rtol=1e-5)


def _local_stage(kind: str):
    from tvm.script import tir as T

    loop = T.parallel if kind == "parallel" else T.serial

    @T.prim_func
    def f(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4, 8), "float32")):
        B = T.alloc_buffer((4, 8), scope="local")
        for i in loop(4):
            for j in range(8):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2.0)
            for j in range(8):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1.0)

    return f.with_attr("tir.is_scheduled", True)


@pytest.mark.parametrize("kind", ["parallel", "serial"])
def test_cpu_lowering_compacts_local_buffers_into_parallel_loops_only(kind):
    """A ``local`` intermediate used inside one iteration of a parallel loop is allocated
    per iteration at the size one iteration uses (a row, on the stack); a serial loop may
    carry values in it, so there it keeps its place and size."""
    from tvm.tir.stmt import Allocate
    from tvm.tir.stmt_functor import post_order_visit

    func = tir.lower(_local_stage(kind))["f"]
    found = []
    post_order_visit(func.body, lambda s: found.append(s) if isinstance(s, Allocate) else None)
    (alloc,) = found
    size = 1
    for e in alloc.extents:
        size *= int(e)
    assert size == (8 if kind == "parallel" else 32)
    loops = find_all(func, For)
    inside = []
    post_order_visit(loops[0].body, lambda s: inside.append(s) if isinstance(s, Allocate) else None)
    assert bool(inside) == (kind == "parallel")
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_allclose(run_func(func, a, np.zeros((4, 8), np.float32))[1], a * 2 + 1)


def test_accumulator_cache_is_not_recreated_inside_its_reduction_loop():
    """A ``shared`` write cache of a matmul whose reduction loop ``k`` is outermost (found by
    the random-schedule property test): every access lies inside the ``k`` loop, but the
    cache carries the running sum from one ``k`` to the next, so it must be allocated
    outside it (it was allocated per iteration, and the sums came out wrong)."""
    from schedule_util import check_same_numbers, llvm_available
    from tvm import te
    from tvm.tir.stmt import Allocate
    from tvm.tir.stmt_functor import post_order_visit

    A = te.placeholder((1, 2), name="A")
    B = te.placeholder((2, 2), name="B")
    r = te.reduce_axis((0, 2), name="k")
    C = te.compute((1, 2), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = te.compute((1, 2), lambda i, j: C[i, j] * 0.5, name="D")
    func = te.create_prim_func([A, B, D])
    sch = tir.Schedule(func)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.reverse_compute_at(sch.get_block("D"), k, preserve_unit_loops=False)
    sch.reorder(k, i, j)
    sch.cache_write(c, 0, "shared")
    lowered = tir.lower(sch.mod)["main"]
    outer = find_all(lowered, For)[0]
    assert outer.loop_var.name == "k"
    inside = []
    post_order_visit(outer.body, lambda s: inside.append(s) if isinstance(s, Allocate) else None)
    assert not inside
    if llvm_available():
        check_same_numbers(func, sch.mod)
