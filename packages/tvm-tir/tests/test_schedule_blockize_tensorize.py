"""blockize / tensorize and TensorIntrin: before/after, mismatches, numbers."""

from __future__ import annotations

import warnings

import pytest
from schedule_block_util import check_numbers, check_replay
from schedule_util import assert_func_equal, check_same_numbers, matmul, needs_llvm, script_module
from tvm import te, tir
from tvm.tir import ScheduleError, TensorIntrin
from tvm.tir.tensor_intrin import TensorIntrinDef
from tvm.ffi.plugin import PluginLoadWarning, hookimpl, register_plugin, unregister_plugin

T = script_module()


@T.prim_func
def ew(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)


@T.prim_func
def ew_blockized(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j_0 in T.grid(16, 4):
        with T.block("B_o"):
            vi_o, vj_o = T.axis.remap("SS", [i, j_0])
            for j_1 in range(4):
                with T.block("B"):
                    vj_i = T.axis.spatial(4, j_1)
                    B[vi_o, vj_o * 4 + vj_i] = A[vi_o, vj_o * 4 + vj_i] * T.float32(2.0)


@T.prim_func
def ew_blockized_whole(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    with T.block("B_o"):
        vi_o = T.axis.spatial(1, 0)  # noqa: F841 - a declared (unit) block variable
        vj_o = T.axis.spatial(1, 0)  # noqa: F841
        for i, j in T.grid(16, 16):
            with T.block("B"):
                vi_i, vj_i = T.axis.remap("SS", [i, j])
                B[vi_i, vj_i] = A[vi_i, vj_i] * T.float32(2.0)


@T.prim_func
def mm(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
       C: T.Buffer((16, 16), "float32")):
    for i_0, j_0, k_0, i_1, j_1, k_1 in T.grid(4, 4, 4, 4, 4, 4):
        with T.block("C"):
            vi = T.axis.spatial(16, i_0 * 4 + i_1)
            vj = T.axis.spatial(16, j_0 * 4 + j_1)
            vk = T.axis.reduce(16, k_0 * 4 + k_1)
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def mm_blockized(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                 C: T.Buffer((16, 16), "float32")):
    for i_0, j_0, k_0 in T.grid(4, 4, 4):
        with T.block("C_o"):
            vi_o, vj_o, vk_o = T.axis.remap("SSR", [i_0, j_0, k_0])
            with T.init():
                for i_1, j_1 in T.grid(4, 4):
                    with T.block("C_init"):
                        vi_i, vj_i = T.axis.remap("SS", [i_1, j_1])
                        C[vi_o * 4 + vi_i, vj_o * 4 + vj_i] = T.float32(0.0)
            for i_1, j_1, k_1 in T.grid(4, 4, 4):
                with T.block("C"):
                    vi_i, vj_i, vk_i = T.axis.remap("SSR", [i_1, j_1, k_1])
                    C[vi_o * 4 + vi_i, vj_o * 4 + vj_i] = C[vi_o * 4 + vi_i, vj_o * 4 + vj_i] + \
                        A[vi_o * 4 + vi_i, vk_o * 4 + vk_i] * B[vk_o * 4 + vk_i, vj_o * 4 + vj_i]


@T.prim_func
def mma_desc(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4, 4))
    B = T.match_buffer(b, (4, 4))
    C = T.match_buffer(c, (4, 4))
    with T.block("root"):
        T.reads(C[0:4, 0:4], A[0:4, 0:4], B[0:4, 0:4])
        T.writes(C[0:4, 0:4])
        for i, j, k in T.grid(4, 4, 4):
            with T.block("update"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def mma_impl(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4, 4))
    B = T.match_buffer(b, (4, 4))
    C = T.match_buffer(c, (4, 4))
    with T.block("root"):
        T.reads(C[0:4, 0:4], A[0:4, 0:4], B[0:4, 0:4])
        T.writes(C[0:4, 0:4])
        for k, i in T.grid(4, 4):
            for j in T.vectorized(4):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]


@T.prim_func
def mm_tensorized(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                  C: T.Buffer((16, 16), "float32")):
    for i_0, j_0, k_0 in T.grid(4, 4, 4):
        with T.block("C_o"):
            vi_o, vj_o, vk_o = T.axis.remap("SSR", [i_0, j_0, k_0])
            T.reads(A[vi_o * 4:vi_o * 4 + 4, vk_o * 4:vk_o * 4 + 4],
                    B[vk_o * 4:vk_o * 4 + 4, vj_o * 4:vj_o * 4 + 4])
            T.writes(C[vi_o * 4:vi_o * 4 + 4, vj_o * 4:vj_o * 4 + 4])
            A_1 = T.match_buffer(A[vi_o * 4:vi_o * 4 + 4, vk_o * 4:vk_o * 4 + 4], (4, 4))
            B_1 = T.match_buffer(B[vk_o * 4:vk_o * 4 + 4, vj_o * 4:vj_o * 4 + 4], (4, 4))
            C_1 = T.match_buffer(C[vi_o * 4:vi_o * 4 + 4, vj_o * 4:vj_o * 4 + 4], (4, 4))
            with T.init():
                for i_1, j_1 in T.grid(4, 4):
                    with T.block("C_init"):
                        vi_i, vj_i = T.axis.remap("SS", [i_1, j_1])
                        C[vi_o * 4 + vi_i, vj_o * 4 + vj_i] = T.float32(0.0)
            for k, i in T.grid(4, 4):
                for j in T.vectorized(4):
                    C_1[i, j] = C_1[i, j] + A_1[i, k] * B_1[k, j]


@T.prim_func
def max_desc(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4, 4))
    B = T.match_buffer(b, (4, 4))
    C = T.match_buffer(c, (4, 4))
    with T.block("root"):
        for i, j, k in T.grid(4, 4, 4):
            with T.block("update"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                C[vi, vj] = T.max(C[vi, vj], A[vi, vk] * B[vk, vj])


@T.prim_func
def mma8_desc(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (8, 8))
    B = T.match_buffer(b, (8, 8))
    C = T.match_buffer(c, (8, 8))
    with T.block("root"):
        for i, j, k in T.grid(8, 8, 8):
            with T.block("update"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def mma8_impl(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (8, 8))
    B = T.match_buffer(b, (8, 8))
    C = T.match_buffer(c, (8, 8))
    with T.block("root"):
        for i, j, k in T.grid(8, 8, 8):
            C[i, j] = C[i, j] + A[i, k] * B[k, j]


@pytest.fixture(scope="module", autouse=True)
def intrinsics():
    TensorIntrin.register("test.mma4", mma_desc, mma_impl, override=True)
    TensorIntrin.register("test.max4", max_desc, mma_impl, override=True)
    TensorIntrin.register("test.mma8", mma8_desc, mma8_impl, override=True)


def _tiled():
    sch = tir.Schedule(mm, debug_mask="all")
    loops = sch.get_loops(sch.get_block("C"))
    return sch, loops


# -- blockize ---------------------------------------------------------------------------------
def test_blockize_divides_bindings():
    sch = tir.Schedule(ew, debug_mask="all")
    b = sch.get_block("B")
    _, j = sch.get_loops(b)
    _, j1 = sch.split(j, factors=[None, 4])
    outer = sch.blockize(j1)
    assert_func_equal(sch, ew_blockized)
    assert sch.get(outer).name_hint == "B_o"
    assert len(sch.get(b).iter_vars) == 1  # the inner block keeps its handle
    check_replay(sch, ew)


@pytest.mark.parametrize("preserve", [True, False])
def test_blockize_the_whole_nest(preserve):
    sch = tir.Schedule(ew, debug_mask="all")
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.blockize(i, preserve_unit_iters=preserve)
    if preserve:
        assert_func_equal(sch, ew_blockized_whole)
    else:
        assert not sch.get(sch.get_block("B_o")).iter_vars


def test_blockize_moves_the_init_to_the_outer_block():
    sch, loops = _tiled()
    sch.blockize(loops[3])
    assert_func_equal(sch, mm_blockized)


def test_blockize_rejects_two_blocks():
    sch = tir.Schedule(matmul(8, 8, 8, with_epilogue=True))
    i, _ = sch.get_loops(sch.get_block("D"))
    sch.compute_at(sch.get_block("C"), i)
    with pytest.raises(ScheduleError, match="blockize: loop 'i': the loop must contain "
                       "exactly one block, it contains 2"):
        sch.blockize(i)


def test_blockize_rejects_indivisible_bindings():
    sch = tir.Schedule(ew)
    i, j = sch.get_loops(sch.get_block("B"))
    fused = sch.fuse(i, j)
    _, inner = sch.split(fused, factors=[None, 24])
    with pytest.raises(ScheduleError, match="cannot be divided into a part over the loops "
                       "outside"):
        sch.blockize(inner)


# -- tensorize --------------------------------------------------------------------------------
def test_tensorize_block():
    sch, loops = _tiled()
    outer = sch.blockize(loops[3])
    sch.tensorize(outer, "test.mma4")
    assert_func_equal(sch, mm_tensorized)
    assert_func_equal(T.parse(sch.mod["main"].script()), mm_tensorized)
    check_replay(sch, mm)


def test_tensorize_loop_blockizes_first():
    sch, loops = _tiled()
    sch.tensorize(loops[3], "test.mma4")
    assert_func_equal(sch, mm_tensorized)
    assert str(sch.trace).splitlines()[-1] == 'sch.tensorize(l4, tensor_intrin="test.mma4")'


def _two_matmuls():
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    k2 = te.reduce_axis((0, 16), name="k2")
    E = te.compute((16, 16), lambda i, j: te.sum(C[i, k2] * B[k2, j], axis=k2), name="E")
    return te.create_prim_func([A, B, E])


def _tensorize_both(func):
    sch = tir.Schedule(func, debug_mask="all")
    for name in ("C", "E"):
        i, j, k = sch.get_loops(sch.get_block(name))
        i0, i1 = sch.split(i, factors=[None, 4])
        j0, j1 = sch.split(j, factors=[None, 4])
        k0, k1 = sch.split(k, factors=[None, 4])
        sch.reorder(i0, j0, k0, i1, j1, k1)
        sch.tensorize(i1, "test.mma4")
    return sch


def test_tensorize_twice_makes_fresh_copies():
    sch = _tensorize_both(_two_matmuls())
    bodies = [sch.get(sch.get_block(n)).body for n in ("C_o", "E_o")]
    assert bodies[0].loop_var is not bodies[1].loop_var
    matched = [sch.get(sch.get_block(n)).match_buffers[0].buffer for n in ("C_o", "E_o")]
    assert matched[0] is not matched[1] and matched[0].data is not matched[1].data


def test_tensorize_mismatching_operation():
    sch, loops = _tiled()
    outer = sch.blockize(loops[3])
    with pytest.raises(ScheduleError, match=r"tensorize: block 'C_o': the block does not match "
                       r"the description of 'test.max4': .*Add.* where the description has .*Max"):
        sch.tensorize(outer, "test.max4")
    assert sch.get(outer).name_hint == "C_o"  # rolled back, still usable


def test_tensorize_mismatching_shape():
    sch, loops = _tiled()
    outer = sch.blockize(loops[3])
    with pytest.raises(ScheduleError, match="does not match the description of 'test.mma8': "
                       "loop extent 4 where the description has 8"):
        sch.tensorize(outer, "test.mma8")


def test_tensorize_unknown_intrinsic():
    sch, loops = _tiled()
    with pytest.raises(ScheduleError, match=r"no tensor intrinsic named 'nope' is registered "
                       r"\(registered: .*test.mma4"):
        sch.tensorize(loops[3], "nope")


# -- TensorIntrin -----------------------------------------------------------------------------
def test_tensor_intrin_registry():
    intrin = TensorIntrin.get("test.mma4")
    assert intrin.desc is mma_desc and intrin.impl is mma_impl
    assert "test.mma4" in TensorIntrin.list()
    with pytest.raises(ValueError, match="already registered"):
        TensorIntrin.register("test.mma4", mma_desc, mma_impl)
    with pytest.raises(KeyError, match="no tensor intrinsic named 'missing'"):
        TensorIntrin.get("missing")
    assert TensorIntrin.get("missing", allow_missing=True) is None
    with pytest.raises(ValueError, match=r"buffer parameter 0 is float32\[4, 4\] in desc but "
                       r"float32\[8, 8\] in impl"):
        TensorIntrin.register("test.bad", mma_desc, mma8_impl)


# -- numbers ----------------------------------------------------------------------------------
@needs_llvm
def test_tensorized_matmul_keeps_numbers():
    sch, loops = _tiled()
    sch.tensorize(loops[3], "test.mma4")
    check_numbers(mm, sch)


@needs_llvm
def test_tensorized_after_decompose_keeps_numbers():
    func = matmul(16, 16, 16, with_epilogue=True)
    sch = tir.Schedule(func, debug_mask="all")
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 4])
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    outer = sch.blockize(i1)
    sch.decompose_reduction(outer, k0)
    sch.tensorize(outer, "test.mma4")
    check_same_numbers(func, sch.mod)


@needs_llvm
def test_two_tensorized_matmuls_keep_numbers():
    func = _two_matmuls()
    check_same_numbers(func, _tensorize_both(func).mod)


@needs_llvm
def test_blockized_keeps_numbers():
    sch = tir.Schedule(ew, debug_mask="all")
    i, j = sch.get_loops(sch.get_block("B"))
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.blockize(j1)
    check_numbers(ew, sch)


class _VendorIntrins:
    """A plugin providing a tensor intrinsic, as a vendor's distribution would."""

    @hookimpl
    def tvm_tir_register_tensor_intrins(self, register):
        register(TensorIntrinDef("vendor.mma4", mma_desc, mma_impl))


class _BrokenIntrins:
    @hookimpl
    def tvm_tir_register_tensor_intrins(self, register):
        register(TensorIntrinDef("vendor.bad", mma_desc, mma8_impl))  # shapes differ


def test_a_plugin_provides_tensor_intrinsics_and_a_broken_one_is_isolated():
    register_plugin(_VendorIntrins(), "vendorintrins")
    register_plugin(_BrokenIntrins(), "brokenintrins")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            names = TensorIntrin.list()
        assert "vendor.mma4" in names and "vendor.bad" not in names
        assert any(issubclass(w.category, PluginLoadWarning) and "brokenintrins" in str(w.message)
                   for w in caught)
        sch, loops = _tiled()
        sch.tensorize(sch.blockize(loops[3]), "vendor.mma4")
        assert_func_equal(sch, mm_tensorized)
        # an in-process registration of the same name wins over the plugin's
        TensorIntrin.register("vendor.mma4", max_desc, mma_impl)
        assert TensorIntrin.get("vendor.mma4").desc.same_as(max_desc)
    finally:
        unregister_plugin("vendorintrins")
        unregister_plugin("brokenintrins")
        from tvm.tir import tensor_intrin

        tensor_intrin._REGISTRY.pop("vendor.mma4", None)
    with pytest.raises(KeyError, match="no tensor intrinsic named 'vendor.mma4'"):
        TensorIntrin.get("vendor.mma4")


# -- a dot-product step over a packed operand (the int8 kernels' shape) ------------------------
def _dot_funcs(lanes: int, group: int):
    """desc/impl of ``C[j] += A[k] * B[j * group + k]`` (j < lanes, k < group)."""

    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (group,))
        B = T.match_buffer(b, (lanes * group,))
        C = T.match_buffer(c, (lanes,))
        with T.block("root"):
            T.reads(C[0:lanes], A[0:group], B[0:lanes * group])
            T.writes(C[0:lanes])
            for j, k in T.grid(lanes, group):
                with T.block("update"):
                    vj, vk = T.axis.remap("SR", [j, k])
                    C[vj] = C[vj] + A[vk] * B[vj * group + vk]

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (group,))
        B = T.match_buffer(b, (lanes * group,))
        C = T.match_buffer(c, (lanes,))
        with T.block("root"):
            T.reads(C[0:lanes], A[0:group], B[0:lanes * group])
            T.writes(C[0:lanes])
            for k in range(group):
                for j in T.vectorized(lanes):
                    C[j] = C[j] + A[k] * B[j * group + k]

    return desc, impl


def _packed_dense(group: int, vectors: int = 2, lanes: int = 4):
    """C = A @ W.T with W packed as P[j // NT, k // G, j % NT * G + k % G], the step
    tensorized over (lanes of j) x (G of k)."""
    name = f"test.dot{lanes}x{group}"
    TensorIntrin.register(name, *_dot_funcs(lanes, group), override=True)
    A = te.placeholder((8, 16), name="A")
    W = te.placeholder((16, 16), name="W")
    r = te.reduce_axis((0, 16), name="k")
    C = te.compute((8, 16), lambda i, j: te.sum(A[i, r] * W[j, r], axis=r), name="C")
    func = te.create_prim_func([A, W, C])
    sch = tir.Schedule(func, debug_mask="all")
    c = sch.get_block("C")
    nt = vectors * lanes
    pack = sch.cache_read(c, 1, "global")
    sch.transform_layout(pack, ("write", 0),
                         lambda j, k: (j // nt, k // group, j % nt * group + k % group))
    i, j, k = sch.get_loops(c)
    jo, jv, ji = sch.split(j, [None, vectors, lanes])
    ko, ki = sch.split(k, [None, group])
    sch.reorder(jo, i, ko, jv, ji, ki)
    sch.decompose_reduction(c, ko)
    sch.tensorize(ji, name)
    return func, sch


@pytest.mark.parametrize("group", [4, 1])
def test_tensorize_reads_packed_indices_with_the_block_ranges(group):
    # (v_o * NV + v_v) // NV ... of the packed layout, and a unit inner step (group 1)
    _, sch = _packed_dense(group)
    text = sch.mod["main"].script()
    assert "match_buffer(W_global" in text
    assert f"C_1[j] = C_1[j] + A_1[k] * B[j * {group} + k]" in text


@needs_llvm
@pytest.mark.parametrize("group", [4, 1])
def test_tensorized_packed_dense_keeps_numbers(group):
    func, sch = _packed_dense(group)
    check_same_numbers(func, sch.mod)
