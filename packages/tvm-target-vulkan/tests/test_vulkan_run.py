"""The vulkan target on a real Vulkan device (lavapipe in CI): numbers against numpy,
argument checks, device-side checks, the device API and exported modules."""

import numpy as np
import pytest
from conftest import requires_vulkan
from tvm import tir
from tvm.ir import Target
from vk_kernels import checked_gather, compare, elementwise, matmul, row_reduce, scale

pytestmark = requires_vulkan

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def dev():
    import tvm.runtime as rt

    return rt.vulkan(0)


def _tensors(dev, *arrays):
    import tvm.runtime as rt

    return [rt.tensor(a, device=dev) for a in arrays]


def _empty(dev, shape, dtype="float32"):
    import tvm.runtime as rt

    return rt.empty(shape, dtype, dev)


# --------------------------------------------------------------------------- numbers


def test_elementwise_with_a_symbolic_size(dev):
    mod = tir.build(elementwise(), target="vulkan")
    for rows in (3, 33):
        a, b = RNG.random((rows, 64), dtype=np.float32), RNG.random((rows, 64), dtype=np.float32)
        c = _empty(dev, (rows, 64))
        mod["ew"](*_tensors(dev, a, b), c)
        np.testing.assert_allclose(c.numpy(), np.exp(a) * 0.5 + b, rtol=1e-5)


def test_vectorized_elementwise(dev):
    mod = tir.build(elementwise(n=16), target="vulkan")
    assert "vec4(" in mod.get_source()  # the default GPU schedule vectorizes by 4
    a, b = RNG.random((16, 64), dtype=np.float32), RNG.random((16, 64), dtype=np.float32)
    c = _empty(dev, (16, 64))
    mod["ew"](*_tensors(dev, a, b), c)
    np.testing.assert_allclose(c.numpy(), np.exp(a) * 0.5 + b, rtol=1e-5)


def test_float_scalar_push_constant(dev):
    mod = tir.build(scale(), target="vulkan")
    a = RNG.random(256, dtype=np.float32)
    b = _empty(dev, (256,))
    mod["scale"](*_tensors(dev, a), b, 2.5)
    np.testing.assert_allclose(b.numpy(), a * 2.5, rtol=1e-6)


@pytest.mark.parametrize("m, n, k", [(64, 64, 32), (70, 50, 20)])
def test_matmul_with_shared_memory_tiles(dev, m, n, k):
    mod = tir.build(matmul(m, n, k), target="vulkan")
    assert "shared float A_shared" in mod.get_source()
    a, b = RNG.random((m, k), dtype=np.float32), RNG.random((k, n), dtype=np.float32)
    c = _empty(dev, (m, n))
    mod["matmul"](*_tensors(dev, a, b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_reduction_across_threads(dev, kind):
    mod = tir.build(row_reduce(5, 1000, kind), target="vulkan")
    a = RNG.standard_normal((5, 1000)).astype("float32")
    b = _empty(dev, (5,))
    mod[f"row_{kind}"](*_tensors(dev, a), b)
    ref = a.sum(1) if kind == "sum" else a.max(1)
    np.testing.assert_allclose(b.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_reduction_with_subgroup_shuffles(dev):
    width = dev.api.attributes(dev)["subgroup_size"]
    if not dev.api.attributes(dev)["subgroup_shuffle"] or width < 2:
        pytest.skip("the device has no subgroup shuffles")
    target = Target(f"vulkan -thread_warp_size={width} -max_num_threads={width * width}")
    mod = tir.build(row_reduce(5, 1000), target=target)
    assert "subgroupShuffleDown" in mod.get_source()
    a = RNG.standard_normal((5, 1000)).astype("float32")
    b = _empty(dev, (5,))
    mod["row_sum"](*_tensors(dev, a), b)
    np.testing.assert_allclose(b.numpy(), a.sum(1), rtol=1e-4, atol=1e-4)
    from tvm.runtime import KernelError

    wrong = tir.build(row_reduce(5, 1000), target=Target(
        f"vulkan -thread_warp_size={width * 2} -max_num_threads={width * 2}"))
    if "subgroupShuffleDown" in wrong.get_source():
        with pytest.raises(KernelError, match=f"subgroups of {width} lanes"):
            wrong["row_sum"](*_tensors(dev, a), b)


def test_float16_where_the_device_has_it(dev):
    from tvm.runtime import KernelError

    mod = tir.build(elementwise(n=8, dtype="float16"), target="vulkan")
    a = RNG.random((8, 64)).astype("float16")
    b = RNG.random((8, 64)).astype("float16")
    c = _empty(dev, (8, 64), "float16")
    if "shaderFloat16" not in dev.api.attributes(dev)["features"]:
        with pytest.raises(KernelError, match="shaderFloat16"):
            mod["ew"](*_tensors(dev, a, b), c)
        return
    mod["ew"](*_tensors(dev, a, b), c)
    ref = np.exp(a.astype("float32")) * 0.5 + b.astype("float32")
    np.testing.assert_allclose(c.numpy().astype("float32"), ref, rtol=2e-3, atol=2e-3)


def test_bool_results_are_bytes(dev):
    mod = tir.build(compare(), target="vulkan")
    a, b = RNG.random(100, dtype=np.float32), RNG.random(100, dtype=np.float32)
    c = _empty(dev, (100,), "bool")
    mod["less"](*_tensors(dev, a, b), c)
    np.testing.assert_array_equal(c.numpy(), a < b)


def test_a_missing_device_feature_is_a_clear_error(dev, monkeypatch):
    from tvm.runtime import KernelError
    from tvm.target.vulkan.runtime import device_api

    mod = tir.build(checked_gather(), target="vulkan")  # needs shaderInt64
    ctx = device_api().context(dev)
    monkeypatch.setattr(ctx, "features", ctx.features - {"shaderInt64"})
    a, i = RNG.random(16, dtype=np.float32), np.arange(8, dtype="int64")
    with pytest.raises(KernelError, match="needs the device features shaderInt64"):
        mod["gather"](*_tensors(dev, a, i), _empty(dev, (8,)))


# --------------------------------------------------------------------------- checks


def test_an_index_out_of_range_raises_the_checks_message(dev):
    from tvm.runtime import KernelError

    mod = tir.build(checked_gather(), target="vulkan")
    a = RNG.random(16, dtype=np.float32)
    b = _empty(dev, (8,))
    with pytest.raises(KernelError, match="g: index 99 is out of range of 16"):
        mod["gather"](*_tensors(dev, a, np.array([0, 1, 2, 99, 3, 4, 5, 6], "int64")), b)
    good = np.array([15, 0, 3, 3, 1, 2, 7, 9], "int64")
    mod["gather"](*_tensors(dev, a, good), b)  # the record was cleared
    np.testing.assert_array_equal(b.numpy(), a[good])


def test_arguments_are_checked_before_launch(dev):
    from tvm.runtime import KernelError

    mod = tir.build(elementwise(n=16), target="vulkan")
    a = RNG.random((16, 64), dtype=np.float32)
    with pytest.raises(TypeError, match="expects a tvm.runtime.Tensor on the vulkan device"):
        mod["ew"](a, a, a)
    with pytest.raises(KernelError, match="shape"):
        mod["ew"](*_tensors(dev, a, a), _empty(dev, (15, 64)))


# --------------------------------------------------------------------------- device API


def test_device_api_memory_and_copies(dev):
    from tvm.runtime import KernelError

    api = dev.api
    attrs = api.attributes(dev)
    assert attrs["name"] and attrs["max_work_group_invocations"] >= 128
    assert api.exists(dev)
    h1, h2 = api.alloc(dev, 1024, 64), api.alloc(dev, 1024, 64)
    data = np.arange(256, dtype="int32")
    api.copy_from_host(dev, h1, 0, data)
    api.copy_device_to_device(dev, h1, 16, dev, h2, 0, 512)
    out = np.zeros(128, "int32")
    api.copy_to_host(dev, h2, 0, out)
    np.testing.assert_array_equal(out, data[4:132])
    with pytest.raises(ValueError, match="outside the buffer"):
        api.copy_to_host(dev, h2, 1000, out)
    api.free(dev, h1)
    api.free(dev, h2)
    with pytest.raises(ValueError, match="was not allocated"):
        api.free(dev, h1)
    with pytest.raises(KernelError, match="not Vulkan memory"):
        api.buffer(h1)


def test_devices_list_gpus_before_cpu_implementations(dev):
    from tvm.target.vulkan.runtime import device_api

    kinds = [c.device_type == 4 for c in device_api().contexts()]  # VK_PHYSICAL_DEVICE_TYPE_CPU
    assert kinds == sorted(kinds)


def test_a_device_that_does_not_exist(dev):
    import tvm.runtime as rt
    from tvm.runtime.error import DeviceUnavailableError

    with pytest.raises(DeviceUnavailableError, match="does not exist"):
        rt.empty((4,), "float32", rt.vulkan(99))


# --------------------------------------------------------------------------- files


def test_exported_module_loads_and_runs(dev, tmp_path):
    import tvm.runtime as rt
    from tvm.runtime.error import ModuleLoadError

    mod = tir.build(elementwise(n=4), target="vulkan")
    path = tmp_path / "ew.vkmod"
    mod.export_library(path)
    loaded = rt.load_module(str(path))
    assert type(loaded).__name__ == "VulkanModule"
    a, b = RNG.random((4, 64), dtype=np.float32), RNG.random((4, 64), dtype=np.float32)
    c = _empty(dev, (4, 64))
    loaded["ew"](*_tensors(dev, a, b), c)
    np.testing.assert_allclose(c.numpy(), np.exp(a) * 0.5 + b, rtol=1e-5)
    with pytest.raises(ValueError, match=r"\.vkmod"):
        mod.export_library(tmp_path / "ew.bin")
    from tvm.target.vulkan.runtime import VulkanModule

    payload = dict(mod.payload, kernels=[dict(mod.payload["kernels"][0], spirv="@@@")])
    with pytest.raises(ModuleLoadError, match="SPIR-V"):
        VulkanModule(payload)


def test_copies_through_the_staging_buffer(dev, monkeypatch):
    """Device-local memory that the host cannot map is filled and read through a staging
    buffer (lavapipe's memory is host-visible: the test hides the mapping)."""
    from tvm.target.vulkan.runtime import device_api

    api = device_api()
    h = api.alloc(dev, 4096, 64)
    monkeypatch.setattr(api.buffer(h), "mapped", None)
    data = RNG.random(1024, dtype=np.float32)
    api.copy_from_host(dev, h, 0, data)
    out = np.zeros(512, "float32")
    api.copy_to_host(dev, h, 2048, out)
    np.testing.assert_array_equal(out, data[512:])
    api.free(dev, h)


def test_a_module_releases_its_pipelines(dev):
    import gc

    mod = tir.build(elementwise(n=4), target="vulkan")
    a = RNG.random((4, 64), dtype=np.float32)
    c = _empty(dev, (4, 64))
    mod["ew"](*_tensors(dev, a, a), c)
    objects = mod._objects
    assert objects
    del mod
    gc.collect()
    assert not objects
    np.testing.assert_allclose(c.numpy(), np.exp(a) * 0.5 + a, rtol=1e-5)


def test_many_queued_launches_recycle_descriptor_sets(dev):
    mod = tir.build(scale(), target="vulkan")
    a = RNG.random(256, dtype=np.float32)
    x, y = _tensors(dev, a, a)
    for _ in range(300):  # more than one descriptor pool holds: submitted on the way
        mod["scale"](x, y, 1.0)
        mod["scale"](y, x, 1.0)
    dev.sync()
    np.testing.assert_array_equal(x.numpy(), a)


def _unary(name, fn, dtype="float32", n=64):
    from tvm import te

    A = te.placeholder((n,), dtype, "A")
    B = te.compute((n,), lambda i: fn(A[i]), name="B")
    return te.create_prim_func([A, B]).with_attr("global_symbol", name)


def _ci(name, dtype, *args):
    from tvm.tir.op import call_intrin

    return call_intrin(dtype, name, *args)


MATH = {
    "erf": (lambda x: tir.erf(x), lambda a: np.vectorize(__import__("math").erf)(a)),
    "log10": (lambda x: tir.log10(x), np.log10),
    "log1p": (lambda x: tir.log1p(x), np.log1p),
    "expm1": (lambda x: _ci("expm1", "float32", x), np.expm1),
    "fmod": (lambda x: _ci("fmod", "float32", x, tir.const(0.3, "float32")), lambda a: np.fmod(a, np.float32(0.3))),
    "atan2": (lambda x: _ci("atan2", "float32", x, tir.const(-0.5, "float32")), lambda a: np.arctan2(a, -0.5)),
    "copysign": (lambda x: _ci("copysign", "float32", tir.const(2.0, "float32"), x), lambda a: np.copysign(2.0, a)),
    "hypot": (lambda x: _ci("hypot", "float32", x, tir.const(3.0, "float32")), lambda a: np.hypot(a, 3.0)),
    "round": (lambda x: tir.round(x * 4.0), lambda a: np.round(a * 4.0)),
    "rsqrt": (lambda x: tir.rsqrt(x), lambda a: 1 / np.sqrt(a)),
    "sigmoid": (lambda x: tir.sigmoid(x), lambda a: 1 / (1 + np.exp(-a))),
    "floormod": (lambda x: tir.floormod(x - 1.0, tir.const(0.7, "float32")),
                 lambda a: np.mod(a - 1.0, np.float32(0.7))),
}


@pytest.mark.parametrize("name", sorted(MATH))
def test_float_math_matches_numpy(dev, name):
    make, ref = MATH[name]
    mod = tir.build(_unary(name, make), target="vulkan")
    a = (RNG.random(64, dtype=np.float32) * 2.5 + 0.05).astype("float32")
    a[::2] *= -1 if name not in ("log10", "log1p", "rsqrt") else 1
    b = _empty(dev, (64,))
    mod[name](*_tensors(dev, a), b)
    np.testing.assert_allclose(b.numpy(), ref(a).astype("float32"), rtol=2e-5, atol=2e-6)


def test_integer_bits_and_division_match_numpy(dev):
    from tvm import te

    A = te.placeholder((64,), "int32", "A")
    outs = [te.compute((64,), f, name=f"B{k}") for k, f in enumerate([
        lambda i: _ci("popcount", "int32", A[i]),
        lambda i: _ci("clz", "int32", A[i]),
        lambda i: tir.floordiv(A[i], -7),
        lambda i: tir.floormod(A[i], -7),
        lambda i: tir.max(A[i], 3) - tir.min(A[i], -3),
    ])]
    mod = tir.build(te.create_prim_func([A, *outs]).with_attr("global_symbol", "ints"),
                    target="vulkan")
    a = RNG.integers(-1000, 1000, 64).astype("int32")
    a[0] = 0
    res = [_empty(dev, (64,), "int32") for _ in outs]
    mod["ints"](*_tensors(dev, a), *res)
    u = a.view("uint32")
    clz = np.array([32 if v == 0 else 32 - int(v).bit_length() for v in u])
    refs = [np.array([bin(v).count("1") for v in u]), clz, a // -7, a % -7,
            np.maximum(a, 3) - np.minimum(a, -3)]
    for r, ref in zip(res, refs):
        np.testing.assert_array_equal(r.numpy(), ref)


def test_the_device_target_carries_the_device_limits(dev):
    from tvm.target.vulkan import device_target

    attrs = dev.api.attributes(dev)
    text = device_target(0)
    t = Target(text)
    assert t.max_num_threads == min(attrs["max_work_group_invocations"], 1024)
    assert t.max_shared_memory_per_block == attrs["max_shared_memory"]
    if attrs["subgroup_shuffle"]:
        assert t.thread_warp_size == attrs["subgroup_size"]
    mod = tir.build(row_reduce(5, 1000), target=t)
    a = RNG.standard_normal((5, 1000)).astype("float32")
    b = _empty(dev, (5,))
    mod["row_sum"](*_tensors(dev, a), b)
    np.testing.assert_allclose(b.numpy(), a.sum(1), rtol=1e-4, atol=1e-4)
