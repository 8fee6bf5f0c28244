"""FuseTIR: primitive functions become one PrimFunc (before/after in TVMScript)."""

from __future__ import annotations

import pytest
from tvm import tir
from tvm.ffi import assert_structural_equal
from tvm.relax.transform import FuseOps, FuseTIR, LegalizeOps
from tvm.relax.transform.fuse_tir import fuse_primitive_function
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T
from tvm.tir import PrimFunc
from tvm.tir.analysis import verify_well_formed
from vm_testing import requires_llvm


def fuse_tir(mod):
    return FuseTIR()(FuseOps()(LegalizeOps()(mod)))


@I.ir_module
class Epilogue:
    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32"),
             b: R.Tensor((4,), "float32")) -> R.Tensor((8, 4), "float32"):
        with R.dataflow():
            lv = R.matmul(x, w)
            lv1 = R.add(lv, b)
            gv = R.nn.relu(lv1)
            R.output(gv)
        return gv


@I.ir_module
class EpilogueFused:
    @T.prim_func(private=True)
    def fused_matmul_add_relu(x: T.Buffer((T.int64(8), T.int64(16)), "float32"),
                              w: T.Buffer((T.int64(16), T.int64(4)), "float32"),
                              b: T.Buffer((T.int64(4),), "float32"),
                              gv: T.Buffer((T.int64(8), T.int64(4)), "float32")):
        T.func_attr({"tir.noalias": True, "op_pattern": 4})
        lv = T.alloc_buffer((T.int64(8), T.int64(4)), "float32")
        lv1 = T.alloc_buffer((T.int64(8), T.int64(4)), "float32")
        for i0, i1, k in T.grid(T.int64(8), T.int64(4), T.int64(16)):
            with T.block("T_matmul"):
                v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
                T.reads(x[v_i0, v_k], w[v_k, v_i1])
                T.writes(lv[v_i0, v_i1])
                with T.init():
                    lv[v_i0, v_i1] = T.float32(0.0)
                lv[v_i0, v_i1] = lv[v_i0, v_i1] + x[v_i0, v_k] * w[v_k, v_i1]
        for i0, i1 in T.grid(T.int64(8), T.int64(4)):
            with T.block("T_add"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(lv[v_i0, v_i1], b[v_i1])
                T.writes(lv1[v_i0, v_i1])
                lv1[v_i0, v_i1] = lv[v_i0, v_i1] + b[v_i1]
        for i0, i1 in T.grid(T.int64(8), T.int64(4)):
            with T.block("T_relu"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(lv1[v_i0, v_i1])
                T.writes(gv[v_i0, v_i1])
                gv[v_i0, v_i1] = T.Select(lv1[v_i0, v_i1] < T.float32(0.0), T.float32(0.0), lv1[v_i0, v_i1])

    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w: R.Tensor((16, 4), "float32"),
             b: R.Tensor((4,), "float32")) -> R.Tensor((8, 4), "float32"):
        cls = EpilogueFused
        with R.dataflow():
            gv = R.call_tir(cls.fused_matmul_add_relu, (x, w, b),
                            out_sinfo=R.Tensor((8, 4), "float32"))
            R.output(gv)
        return gv


def test_epilogue_becomes_one_prim_func():
    assert_structural_equal(fuse_tir(Epilogue), EpilogueFused)


@I.ir_module
class Twice:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")
             ) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.add(a, y)
            gv = R.exp(b)
            R.output(gv)
        return gv


def test_a_prim_func_inlined_twice_stays_well_formed():
    out = fuse_tir(Twice)
    assert sorted(g.name_hint for g in out.get_global_vars()) == ["fused_add_add_exp", "main"]
    fused = out["fused_add_add_exp"]
    verify_well_formed(fused)
    names = []
    tir.stmt_functor.post_order_visit(
        fused.body, lambda n: names.append(n.name_hint) if isinstance(n, tir.Block) else None
    )
    assert names == ["T_add", "T_add_1", "T_exp", "root"]
    assert [b.name for b in fused.body.block.alloc_buffers] == ["a", "b"]
    assert fused.attrs["op_pattern"] == 0


@I.ir_module
class SymbolicEpilogue:
    @R.function
    def main(x: R.Tensor(("n", 16), "float32"), w: R.Tensor((16, 4), "float32"),
             b: R.Tensor((4,), "float32")):
        with R.dataflow():
            lv = R.matmul(x, w)
            gv = R.add(lv, b)
            R.output(gv)
        return gv


def test_symbolic_shapes_carry_into_the_fused_function():
    out = fuse_tir(SymbolicEpilogue)
    fused = out["fused_matmul_add"]
    assert isinstance(fused, PrimFunc)
    verify_well_formed(fused)
    x_buf = fused.buffer_map[fused.params[0]]
    out_buf = fused.buffer_map[fused.params[3]]
    assert isinstance(x_buf.shape[0], tir.Var) and out_buf.shape[0] is x_buf.shape[0]
    assert len(fused.params) == 4  # n comes from x: no extra scalar parameter
    call = out["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.call_tir" and len(call.args) == 2
    assert "matmul" not in out and "add" not in out


def test_unlegalized_primitive_function_stays_relax():
    fused = FuseOps()(Epilogue)
    out = FuseTIR()(fused)
    assert out is fused
    with pytest.raises(ValueError, match="cannot merge @fused_matmul_add_relu: binding lv is "
                                         "relax.matmul"):
        fuse_primitive_function(fused, fused["fused_matmul_add_relu"], "fused_matmul_add_relu")


def _repeated_layers(n_layers, widths=None, batch="n"):
    """``n_layers`` of matmul + add + relu; ``widths`` (per layer) makes layers differ."""
    from tvm import relax
    from tvm.relax import op

    widths = widths or [16] * (n_layers + 1)
    n = tir.Var(batch, "int64") if isinstance(batch, str) else batch
    x = relax.Var("x", relax.TensorStructInfo((n, widths[0]), "float32"))
    ws = [relax.Var(f"w{i}", relax.TensorStructInfo((widths[i], widths[i + 1]), "float32"))
          for i in range(n_layers)]
    bs = [relax.Var(f"b{i}", relax.TensorStructInfo((widths[i + 1],), "float32"))
          for i in range(n_layers)]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *ws, *bs]):
        with bb.dataflow():
            h = x
            for w, b in zip(ws, bs):
                h = bb.emit(op.nn.relu(bb.emit(op.add(bb.emit(op.matmul(h, w)), b))))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def _called_prim_funcs(mod):
    return [b.value.args[0].name_hint for blk in mod["main"].body.blocks for b in blk.bindings
            if getattr(getattr(b.value, "op", None), "name", None) == "relax.call_tir"]


def test_repeated_layers_share_one_fused_prim_func(monkeypatch):
    from tvm.relax.transform import fuse_tir as fuse_tir_module

    runs = []
    original = fuse_tir_module._Fuser.run
    monkeypatch.setattr(fuse_tir_module._Fuser, "run",
                        lambda self: runs.append(self.name) or original(self))
    out = fuse_tir(_repeated_layers(4))
    prims = sorted(g.name_hint for g, f in out.functions.items() if isinstance(f, PrimFunc))
    assert prims == ["fused_matmul_add_relu"]
    assert _called_prim_funcs(out) == ["fused_matmul_add_relu"] * 4
    assert runs == ["fused_matmul_add_relu"]  # the repeats reuse the first fusion
    verify_well_formed(out["fused_matmul_add_relu"])


def test_layers_of_different_shapes_keep_their_own_prim_funcs():
    out = fuse_tir(_repeated_layers(3, widths=[16, 16, 8, 8], batch=4))
    called = _called_prim_funcs(out)
    assert len(called) == 3 and called[1] != called[0] and len(set(called)) == 3
    assert all(isinstance(out[name], PrimFunc) for name in called)


def test_deduplicated_layers_compute_every_layer():
    pytest.importorskip("tvm.target.llvm")
    import numpy as np
    from tvm import relax

    import tvm.runtime

    mod = _repeated_layers(3)
    ex = relax.build(mod, target="llvm")
    assert ex.as_text().count("call fused_matmul_add_relu(") == 3
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 16), dtype="float32")
    ws = [rng.standard_normal((16, 16), dtype="float32") for _ in range(3)]
    bs = [rng.standard_normal(16, dtype="float32") for _ in range(3)]
    out = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](x, *ws, *bs).numpy()
    ref = x.astype("float64")
    for w, b in zip(ws, bs):
        ref = np.maximum(ref @ w + b, 0)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)



def _matmul_scale_relu():
    import numpy as np
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((8, 16), "float32"))
    w = relax.const(np.ones((16, 4), "float32"))
    scale = relax.const(np.full((1, 4), 2.0, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(R.matmul(x, w))
            lv1 = bb.emit(R.multiply(lv, scale))
            gv = bb.emit_output(R.nn.relu(lv1))
        bb.emit_func_output(gv)
    return bb.get()


def test_constants_read_by_a_group_become_parameters_of_the_fused_prim_func():
    """Weights (constants) inside a fused group must not stop FuseTIR from merging it."""
    mod = fuse_tir(_matmul_scale_relu())
    prims = [gv.name_hint for gv, f in mod.items() if isinstance(f, PrimFunc)]
    assert prims == ["fused_matmul_multiply_relu"]
    fused = mod["fused_matmul_multiply_relu"]
    assert len(fused.params) == 4  # x, the two constants, the result
    assert verify_well_formed(fused)


@requires_llvm
def test_fused_group_with_constants_runs():
    import numpy as np
    from tvm import relax, runtime

    ex = relax.build(_matmul_scale_relu(), target="llvm")
    vm = relax.VirtualMachine(ex, runtime.cpu())
    data = np.random.default_rng(0).standard_normal((8, 16)).astype("float32")
    np.testing.assert_allclose(vm["main"](data).numpy(),
                               np.maximum(data @ np.ones((16, 4)) * 2.0, 0), rtol=1e-5)


def test_scalar_constants_are_written_into_the_fused_kernel():
    """One-element constants (``x * 0.5 + 1``) stay out of the kernel's parameters: their
    values become immediates of the fused PrimFunc."""
    import numpy as np
    from tvm import relax
    from tvm.tir.stmt_functor import post_order_visit

    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((8, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit(R.multiply(x, relax.const(0.5, "float32")))
            lv1 = bb.emit(R.add(lv, relax.const(np.ones((1, 1), "float32"))))
            gv = bb.emit_output(R.nn.relu(lv1))
        bb.emit_func_output(gv)
    mod = fuse_tir(bb.get())
    fused = mod["fused_multiply_add_relu"]
    assert len(fused.params) == 2  # x and the result
    floats = []
    post_order_visit(fused.body, lambda n: floats.append(n.value)
                     if isinstance(n, tir.FloatImm) else None)
    assert 0.5 in floats and 1.0 in floats
    call = [b.value for b in mod["main"].body.blocks[0].bindings][0]
    assert len(call.args[1].fields) == 1
