"""The opencl target on a real OpenCL device (pocl in CI): numbers against numpy, argument
checks, the device API and exported modules."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cl_kernels import cast_to, elementwise, matmul, row_reduce, softmax
from conftest import requires_opencl
from tvm import tir
from tvm.script import tir as T

pytestmark = requires_opencl

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def dev():
    import tvm.runtime as rt

    return rt.opencl(0)


def _tensors(dev, *arrays):
    import tvm.runtime as rt

    return [rt.tensor(a, device=dev) for a in arrays]


def _empty(dev, shape):
    import tvm.runtime as rt

    return rt.empty(shape, "float32", dev)


# --------------------------------------------------------------------------- numbers


def test_elementwise_with_a_symbolic_size(dev):
    mod = tir.build(elementwise(), target="opencl")
    for rows in (3, 33):
        a, b = RNG.random((rows, 64), dtype=np.float32), RNG.random((rows, 64), dtype=np.float32)
        c = _empty(dev, (rows, 64))
        mod["ew"](*_tensors(dev, a, b), c)
        np.testing.assert_allclose(c.numpy(), np.exp(a) * 0.5 + b, rtol=1e-5)


@pytest.mark.parametrize("m, n, k", [(64, 64, 32), (70, 50, 20)])
def test_matmul_with_shared_memory_tiles(dev, m, n, k):
    mod = tir.build(matmul(m, n, k), target="opencl")
    assert "__local float A_shared" in mod.get_source()
    a, b = RNG.random((m, k), dtype=np.float32), RNG.random((k, n), dtype=np.float32)
    c = _empty(dev, (m, n))
    mod["matmul"](*_tensors(dev, a, b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_reduction_across_threads(dev, kind):
    mod = tir.build(row_reduce(5, 1000, kind), target="opencl")
    assert "red_buf" in mod.get_source()
    a = RNG.standard_normal((5, 1000)).astype("float32")
    b = _empty(dev, (5,))
    mod[f"row_{kind}"](*_tensors(dev, a), b)
    ref = a.sum(1) if kind == "sum" else a.max(1)
    np.testing.assert_allclose(b.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_softmax(dev):
    mod = tir.build(softmax(6, 300), target="opencl")
    assert len(mod.kernels) == 1
    x = RNG.standard_normal((6, 300)).astype("float32")
    out = _empty(dev, (6, 300))
    mod["softmax"](*_tensors(dev, x), out)
    ref = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), ref / ref.sum(1, keepdims=True), rtol=1e-5,
                               atol=1e-7)


@T.prim_func
def reverse_blocks(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    T.func_attr({"tir.is_scheduled": True})
    S = T.alloc_buffer((256,), scope="shared")
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("S"):
                v = T.axis.spatial(256, bx * 64 + tx)
                S[v] = A[v]
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            with T.block("B"):
                v = T.axis.spatial(256, bx * 64 + tx)
                B[v] = S[bx * 64 + 63 - tx % 64]


def test_hand_scheduled_kernel_gets_its_barrier(dev):
    mod = tir.build(reverse_blocks, target="opencl")
    src = mod.get_source()
    assert "__local float S[64];" in src and "barrier(CLK_LOCAL_MEM_FENCE);" in src
    a = RNG.random(256, dtype=np.float32)
    b = _empty(dev, (256,))
    mod["reverse_blocks"](*_tensors(dev, a), b)
    np.testing.assert_array_equal(b.numpy(), a.reshape(4, 64)[:, ::-1].reshape(-1))


# --------------------------------------------------------------------------- argument checks


def test_arguments_are_checked_before_any_launch(dev):
    import tvm.runtime as rt

    mod = tir.build(row_reduce(5, 64), target="opencl")
    f = mod["row_sum"]
    a = _tensors(dev, RNG.random((5, 64), dtype=np.float32))[0]
    with pytest.raises(rt.KernelError, match=r"row_sum: argument B has shape\[0\] = 4, "
                                             r"expected 5"):
        f(a, _empty(dev, (4,)))
    with pytest.raises(rt.KernelError, match=r"argument A has dtype float64, expected float32"):
        f(rt.tensor(np.zeros((5, 64)), device=dev), _empty(dev, (5,)))
    with pytest.raises(TypeError, match=r"argument A expects a tvm.runtime.Tensor on the "
                                        r"opencl device, got a numpy array"):
        f(np.zeros((5, 64), "float32"), _empty(dev, (5,)))
    with pytest.raises(rt.KernelError, match=r"argument A is on cpu\(0\), expected the opencl "
                                             r"device \(device type 4\)"):
        f(rt.tensor(np.zeros((5, 64), "float32")), _empty(dev, (5,)))
    with pytest.raises(TypeError, match=r"row_sum: expected 2 arguments \(A, B\), got 1"):
        f(a)


def test_symbolic_dimensions_must_agree(dev):
    import tvm.runtime as rt

    mod = tir.build(elementwise(), target="opencl")
    a, b = _tensors(dev, np.zeros((3, 64), "float32"), np.zeros((4, 64), "float32"))
    with pytest.raises(rt.KernelError, match=r"ew: argument B has shape\[0\] = 4, but n = 3 "
                                             r"from argument A"):
        mod["ew"](a, b, _empty(dev, (3, 64)))


# --------------------------------------------------------------------------- device API


def test_device_api_allocates_copies_and_reports(dev):
    import tvm.runtime as rt

    assert dev.exist
    attrs = dev.attributes
    assert attrs["max_work_group_size"] > 0 and attrs["name"]
    x = RNG.random((7, 3), dtype=np.float32)
    t = rt.tensor(x, device=dev)
    np.testing.assert_array_equal(t.numpy(), x)
    u = t.copyto(dev)  # device to device
    np.testing.assert_array_equal(u.numpy(), x)
    view = t.create_view((3,), byte_offset=12)
    np.testing.assert_array_equal(view.numpy(), x[1])
    dev.sync()
    assert not rt.opencl(999).exist


def test_views_with_an_offset_are_refused_by_kernels(dev):
    import tvm.runtime as rt

    mod = tir.build(row_reduce(1, 64), target="opencl")
    base = rt.tensor(RNG.random(128, dtype=np.float32), device=dev)
    view = base.create_view((1, 64), byte_offset=256)
    with pytest.raises(rt.KernelError, match="byte offset"):
        mod["row_sum"](view, _empty(dev, (1,)))


# --------------------------------------------------------------------------- export


def test_exported_module_runs_with_the_runtime_alone(dev, tmp_path):
    mod = tir.build(row_reduce(4, 96), target="opencl")
    path = tmp_path / "row_sum.clmod"
    mod.export_library(str(path))
    with pytest.raises(ValueError, match=r"\.clmod file"):
        mod.export_library(str(tmp_path / "row_sum.so"))
    src = Path(__file__).resolve().parents[3] / "packages"
    run_side = [src / "tvm-ffi" / "src", src / "tvm-runtime" / "src",
                src / "tvm-target-opencl" / "src"]
    script = f"""
import sys
import numpy as np
from tvm.target.opencl.plugin import ensure_registered
ensure_registered()
import tvm.runtime as rt
m = rt.load_module({str(path)!r})
x = np.arange(384, dtype='float32').reshape(4, 96)
b = rt.empty((4,), 'float32', rt.opencl(0))
m['row_sum'](rt.tensor(x, device=rt.opencl(0)), b)
assert np.allclose(b.numpy(), x.sum(1)), b.numpy()
assert 'tvm.tir' not in sys.modules and 'tvm.ir' not in sys.modules, 'compiler imported'
print('ok', type(m).__name__)
"""
    env = dict(os.environ)
    if all(p.exists() for p in run_side):  # a source checkout: only the run-side packages
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in run_side)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "OpenCLModule"]


@pytest.mark.parametrize("dtype,extension", [("float16", "cl_khr_fp16"),
                                             ("float64", "cl_khr_fp64")])
def test_a_kernel_needing_an_extension_the_device_lacks_is_refused_by_name(dev, dtype,
                                                                           extension):
    import tvm.runtime as rt
    from tvm.target.opencl.runtime import device_api

    mod = tir.build(cast_to(dtype), target="opencl")
    a = RNG.random(64, dtype=np.float32)
    b = rt.empty((64,), dtype, dev)
    if extension in device_api()._device(dev).extensions.split():
        mod[f"to_{dtype}"](*_tensors(dev, a), b)
        np.testing.assert_array_equal(b.numpy(), a.astype(dtype))
        return
    with pytest.raises(rt.KernelError, match=rf"opencl: kernel to_{dtype}_kernel uses {dtype} "
                                             rf"\(needs {extension}\), which opencl\(0\)"):
        mod[f"to_{dtype}"](*_tensors(dev, a), b)
