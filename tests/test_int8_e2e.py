"""Integer kernels end to end: a quantized net (qnn.conv2d NCHW and NHWC with zero points and
padding, requantize, qnn.dense) through ``relax.build`` for the ISAs of this machine, equal
to the Relax numpy reference; the kernels use the target's dot product (VNNI ``vpdpbusd``,
AVX2 ``vpmaddwd``) and the zero-point sums of the constant weights are folded at compile
time."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

import tvm.runtime  # noqa: E402
from tvm import relax, tir  # noqa: E402
from tvm.ir.target import Target  # noqa: E402
from tvm.relax import op  # noqa: E402
from tvm.relax.transform import AnnotateLayoutFreeBuffers, FoldConstant  # noqa: E402
from tvm.relax.vm import bind_params  # noqa: E402
from tvm.relax.vm.build import default_pipeline, schedule_and_prepack  # noqa: E402
from tvm.target.llvm.host_cpu import host_has_feature, host_triple  # noqa: E402
from tvm.target.llvm.schedule_rules import explain_default_schedule  # noqa: E402

TARGETS = {
    "llvm": (),
    "llvm -mcpu=cascadelake": ("avx512vnni", "avx512bw", "avx512vl"),
    "llvm -mcpu=haswell": ("avx2", "fma"),
}


def _net(rng: np.random.Generator, adt: str = "uint8") -> relax.Function:
    zx = 128 if adt == "uint8" else 3
    x = relax.Var("x", relax.TensorStructInfo([1, 16, 10, 10], adt))
    w1 = rng.integers(-128, 128, (32, 16, 3, 3)).astype("int8")
    w1[0] = 127  # a channel of extremes: 255 x 127 pairs
    w2 = rng.integers(-128, 128, (3, 3, 32, 32)).astype("int8")
    w3 = rng.integers(-128, 128, (16, 32 * 10 * 10)).astype("int8")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(op.qnn.conv2d(x, relax.const(w1), input_zero_point=zx,
                                      kernel_zero_point=0, padding=1))
            a = bb.emit(op.qnn.requantize(a, 0.0005, 0, 1.0, 128, out_dtype="uint8"))
            a = bb.emit(op.permute_dims(a, [0, 2, 3, 1]))
            a = bb.emit(op.qnn.conv2d(a, relax.const(w2), input_zero_point=128,
                                      kernel_zero_point=list(range(32)), padding=1,
                                      data_layout="NHWC", kernel_layout="HWIO"))
            a = bb.emit(op.qnn.requantize(a, 0.0002, 0, 1.0, 120, out_dtype="uint8"))
            a = bb.emit(op.reshape(a, [1, -1]))
            y = bb.emit_output(op.qnn.dense(a, relax.const(w3), input_zero_point=120,
                                            kernel_zero_point=2))
        bb.emit_func_output(y)
    return bb.get()


def _reference(mod, x: np.ndarray) -> np.ndarray:
    bound = bind_params(mod, {"x": x})
    folded = FoldConstant(evaluator="numpy", max_elements=1 << 30)(bound)
    body = folded["main"].body
    return np.asarray(body.body.data if hasattr(body.body, "data") else
                      body.blocks[-1].bindings[-1].value.data)


def _runnable(target: str) -> bool:
    return host_triple().startswith("x86_64") and all(host_has_feature(f)
                                                      for f in TARGETS[target])


@pytest.mark.parametrize("target", [t for t in sorted(TARGETS) if _runnable(t)])
@pytest.mark.parametrize("adt", ["uint8", "int8"])
def test_quantized_net_equals_the_numpy_reference(target, adt):
    """On every target of TARGETS this host can run (chosen at collection: CI forbids
    skips; "llvm", the host, always runs)."""
    rng = np.random.default_rng(0)
    mod = _net(rng, adt)
    lo, hi = (0, 255) if adt == "uint8" else (-128, 127)
    x = rng.integers(lo, hi + 1, (1, 16, 10, 10)).astype(adt)
    x[0, :, :3] = hi
    expected = _reference(mod, x)
    vm = relax.VirtualMachine(relax.build(mod, target=target), tvm.runtime.cpu())
    np.testing.assert_array_equal(vm["main"](x).numpy(), expected)


@pytest.mark.parametrize("target,intrin", [
    ("llvm -mcpu=cascadelake", "dot_16x4_u8s8_avx512vnni"),
    ("llvm -mcpu=haswell", "dot_8x2_u8s8_avx2"),
])
def test_kernels_use_the_dot_product_and_fold_the_weight_sums(target, intrin):
    mod = default_pipeline()(_net(np.random.default_rng(0)))
    annotated = AnnotateLayoutFreeBuffers()(mod)  # as relax.build does before scheduling
    labels = [label for f in annotated.functions.values() if isinstance(f, tir.PrimFunc)
              for label in explain_default_schedule(f, target).values()]
    assert labels.count(f"int8 dot product ({intrin})") == 3  # two convolutions, the dense
    assert labels.count("int8 dot product (weight sum, compile time)") >= 2
    packed = schedule_and_prepack(mod, Target(target))
    kernels = [f for f in packed.functions.values() if isinstance(f, tir.PrimFunc)]
    for f in kernels:
        text = f.script()
        assert "wsum_init" not in text and "bsum_init" not in text  # no sum runs per call
    assert not [f for f in kernels if f.attrs.get("layout_rewrite_preproc")]  # all folded
