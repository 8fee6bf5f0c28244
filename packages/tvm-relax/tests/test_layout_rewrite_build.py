"""relax.build packs constant weights at compile time (layout rewriting of layout-free
buffers): the kernels read prepacked constants, and still compute what numpy does."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax
from tvm.ir.transform import PassContext
from tvm.relax import TensorStructInfo
from tvm.tir import PrimFunc
from tvm.tir.stmt import Block
from tvm.tir.stmt_functor import post_order_visit
from vm_testing import requires_llvm

import tvm.runtime
from tvm.runtime.vm import VirtualMachine, load_executable

pytestmark = requires_llvm

X_SHAPE, W_SHAPE = (1, 16, 10, 10), (64, 16, 3, 3)


def conv_relu(weight):
    """``relu(conv2d(x, w, padding=1))`` with ``w`` a constant (an array) or a parameter."""
    x = relax.Var("x", TensorStructInfo(list(X_SHAPE), "float32"))
    params = [x]
    if weight is None:
        w = relax.Var("w", TensorStructInfo(list(W_SHAPE), "float32"))
        params.append(w)
    else:
        w = relax.Constant(weight)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            c = bb.emit(relax.op.nn.conv2d(x, w, padding=[1, 1, 1, 1]))
            out = bb.emit_output(bb.emit(relax.op.nn.relu(c)))
        bb.emit_func_output(out)
    return bb.get()


def reference(x, w):
    n, c, h, wd = x.shape
    pad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.stack([pad[:, :, i:i + h, j:j + wd] for i in range(3) for j in range(3)], -1)
    out = np.einsum("nchwk,ock->nohw", windows, w.reshape(w.shape[0], c, 9))
    return np.maximum(out, 0)


def kernels(ex):
    return {gv.name_hint: f for gv, f in ex.lowered_mod.items() if isinstance(f, PrimFunc)}


def packing_blocks(func):
    """Blocks of ``func`` that only copy a parameter buffer into an internal one."""
    params = {id(b) for b in func.buffer_map.values()}
    found = []

    def visit(node):
        if isinstance(node, Block) and len(node.reads) == 1 and len(node.writes) == 1 and \
                id(node.reads[0].buffer) in params and id(node.writes[0].buffer) not in params \
                and node.name_hint != "root":
            found.append(node.name_hint)

    post_order_visit(func.body, visit)
    return found


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal(X_SHAPE).astype("float32"),
            rng.standard_normal(W_SHAPE).astype("float32"))


def test_constant_weight_is_packed_at_compile_time(data):
    x, w = data
    ex = relax.build(conv_relu(w), target="llvm")
    (name, kernel), = [(n, f) for n, f in kernels(ex).items() if "conv2d" in n]
    assert not packing_blocks(kernel), kernel.script()
    weight = kernel.buffer_map[kernel.params[1]]
    assert len(weight.shape) == 5  # the blocked layout, read as given
    assert not any(f.attrs.get("layout_rewrite_preproc") for f in kernels(ex).values())
    out = VirtualMachine(ex, tvm.runtime.cpu())["main"](x).numpy()
    np.testing.assert_allclose(out, reference(x, w), rtol=1e-4, atol=1e-4)


def test_weight_parameter_is_repacked_per_call(data):
    x, w = data
    ex = relax.build(conv_relu(None), target="llvm")
    (kernel,) = [f for n, f in kernels(ex).items() if "conv2d" in n]
    assert packing_blocks(kernel)
    assert len(kernel.buffer_map[kernel.params[1]].shape) == 4
    vm = VirtualMachine(ex, tvm.runtime.cpu())
    np.testing.assert_allclose(vm["main"](x, w).numpy(), reference(x, w), rtol=1e-4, atol=1e-4)
    w2 = -w
    np.testing.assert_allclose(vm["main"](x, w2).numpy(), reference(x, w2), rtol=1e-4,
                               atol=1e-4)


def test_opt_level_0_keeps_packing_in_the_kernel(data):
    x, w = data
    with PassContext(opt_level=0):
        ex = relax.build(conv_relu(w), target="llvm")
    assert any(packing_blocks(f) for n, f in kernels(ex).items() if "conv2d" in n)
    out = VirtualMachine(ex, tvm.runtime.cpu())["main"](x).numpy()
    np.testing.assert_allclose(out, reference(x, w), rtol=1e-4, atol=1e-4)


def test_export_library_keeps_the_prepacked_constants(data, tmp_path):
    x, w = data
    ex = relax.build(conv_relu(w), target="llvm")
    ex.export_library(tmp_path / "conv.so")
    loaded = load_executable(tmp_path / "conv.so")
    out = VirtualMachine(loaded, tvm.runtime.cpu())["main"](x).numpy()
    np.testing.assert_allclose(out, reference(x, w), rtol=1e-4, atol=1e-4)


def test_target_without_default_schedules_keeps_the_kernel(data):
    pytest.importorskip("tvm.target.c")
    x, w = data
    ex = relax.build(conv_relu(w), target="c")
    (kernel,) = [f for n, f in kernels(ex).items() if "conv2d" in n]
    assert not kernel.attrs.get("tir.is_scheduled")
    assert len(kernel.buffer_map[kernel.params[1]].shape) == 4
    out = VirtualMachine(ex, tvm.runtime.cpu())["main"](x).numpy()
    np.testing.assert_allclose(out, reference(x, w), rtol=1e-4, atol=1e-4)
