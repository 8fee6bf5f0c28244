"""The cuda target on a GPU (marked ``gpu``: skipped without a CUDA GPU and pycuda):
numbers against numpy, argument checks, the device API and exported modules."""

import numpy as np
import pytest
from cuda_kernels import elementwise, matmul, row_sum, softmax
from tvm import tir

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def dev():
    import tvm.runtime as rt

    return rt.cuda(0)


def _arch(dev):
    return dev.attributes["arch"]


def _put(dev, *arrays):
    import tvm.runtime as rt

    return [rt.tensor(a, device=dev) for a in arrays]


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-6), ("float16", 1e-2)])
def test_elementwise(dev, dtype, rtol):
    import tvm.runtime as rt

    mod = tir.build(elementwise(4096, dtype), target=f"cuda -arch={_arch(dev)}")
    a = RNG.random(4096).astype(dtype)
    b = RNG.random(4096).astype(dtype)
    c = rt.empty((4096,), dtype, dev)
    mod["ew"](*_put(dev, a, b), c)
    ref = a.astype("float32") * b.astype("float32") + a.astype("float32")
    np.testing.assert_allclose(c.numpy().astype("float32"), ref, rtol=rtol)


@pytest.mark.parametrize("m, n, k", [(128, 128, 64), (100, 72, 40)])
def test_matmul(dev, m, n, k):
    import tvm.runtime as rt

    mod = tir.build(matmul(m, n, k), target=f"cuda -arch={_arch(dev)}")
    a, b = RNG.random((m, k), dtype=np.float32), RNG.random((k, n), dtype=np.float32)
    c = rt.empty((m, n), "float32", dev)
    mod["matmul"](*_put(dev, a, b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


def test_row_sum_with_warp_shuffles(dev):
    import tvm.runtime as rt

    mod = tir.build(row_sum(64, 1024), target=f"cuda -arch={_arch(dev)}")
    a = RNG.standard_normal((64, 1024)).astype("float32")
    b = rt.empty((64,), "float32", dev)
    mod["row_sum"](*_put(dev, a), b)
    np.testing.assert_allclose(b.numpy(), a.sum(1), rtol=1e-4, atol=1e-4)


def test_softmax(dev):
    import tvm.runtime as rt

    mod = tir.build(softmax(32, 500), target=f"cuda -arch={_arch(dev)}")
    x = RNG.standard_normal((32, 500)).astype("float32")
    out = rt.empty((32, 500), "float32", dev)
    mod["softmax"](*_put(dev, x), out)
    ref = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), ref / ref.sum(1, keepdims=True), rtol=1e-5,
                               atol=1e-7)


def test_arguments_are_checked(dev):
    import tvm.runtime as rt

    mod = tir.build(row_sum(8, 64), target=f"cuda -arch={_arch(dev)}")
    a = _put(dev, RNG.random((8, 64), dtype=np.float32))[0]
    with pytest.raises(rt.KernelError, match=r"argument B has shape\[0\] = 7, expected 8"):
        mod["row_sum"](a, rt.empty((7,), "float32", dev))


def test_device_api_and_views(dev):
    import tvm.runtime as rt

    assert dev.exist and dev.attributes["warp_size"] == 32
    x = RNG.random((16, 4), dtype=np.float32)
    t = rt.tensor(x, device=dev)
    np.testing.assert_array_equal(t.copyto(dev).numpy(), x)
    np.testing.assert_array_equal(t.create_view((4,), byte_offset=16).numpy(), x[1])
    dev.sync()


def test_exported_module_runs(dev, tmp_path):
    import tvm.runtime as rt

    mod = tir.build(row_sum(4, 256), target=f"cuda -arch={_arch(dev)}")
    path = tmp_path / "row_sum.cumod"
    mod.export_library(str(path))
    loaded = rt.load_module(str(path))
    a = RNG.random((4, 256), dtype=np.float32)
    b = rt.empty((4,), "float32", dev)
    loaded["row_sum"](*_put(dev, a), b)
    np.testing.assert_allclose(b.numpy(), a.sum(1), rtol=1e-5)


@pytest.mark.parametrize("reduce", [False, True])
def test_a_failed_check_in_a_kernel_raises_and_the_next_call_runs(dev, reduce):
    import tvm.runtime as rt
    from cuda_kernels import checked_gather
    from tvm.runtime import KernelError

    mod = tir.build(checked_gather(reduce), target=f"cuda -arch={_arch(dev)}")
    a = np.arange(16, dtype="float32")
    shape = (4, 256) if reduce else (8,)
    bad = np.zeros(shape, "int64")
    bad.flat[5] = 99
    out = rt.empty((shape[0],), "float32", dev)
    with pytest.raises(KernelError, match="g: index 99 is out of range of 16"):
        mod["main"](*_put(dev, a, bad), out)
    good = (np.arange(bad.size) % 16).reshape(shape)
    mod["main"](*_put(dev, a, good), out)
    ref = a[good].sum(axis=1) if reduce else a[good]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)
