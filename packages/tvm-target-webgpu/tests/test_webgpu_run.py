"""The webgpu target on a real adapter (lavapipe through wgpu in CI): numbers against numpy,
argument checks, device-side checks, the device API, exported modules and clear errors for
a missing adapter or feature."""

import numpy as np
import pytest
from conftest import requires_webgpu
from tvm import tir
from wg_kernels import (
    checked_gather, elementwise, int64_copy_and_index, matmul, row_reduce, scale, unary,
)

pytestmark = requires_webgpu

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def dev():
    import tvm.runtime as rt

    return rt.webgpu(0)


def _tensors(dev, *arrays):
    import tvm.runtime as rt

    return [rt.tensor(a, device=dev) for a in arrays]


def _empty(dev, shape, dtype="float32"):
    import tvm.runtime as rt

    return rt.empty(shape, dtype, dev)


# --------------------------------------------------------------------------- numbers


def test_elementwise_with_a_symbolic_size(dev):
    mod = tir.build(elementwise(), target="webgpu")
    for rows in (3, 33):
        a, b = RNG.random((rows, 64), dtype=np.float32), RNG.random((rows, 64), dtype=np.float32)
        c = _empty(dev, (rows, 64))
        mod["ew"](*_tensors(dev, a, b), c)
        np.testing.assert_allclose(c.numpy(), np.exp(a) * 0.5 + b, rtol=1e-5)


def test_vectorized_elementwise(dev):
    mod = tir.build(elementwise(n=16), target="webgpu")
    a, b = RNG.random((16, 64), dtype=np.float32), RNG.random((16, 64), dtype=np.float32)
    c = _empty(dev, (16, 64))
    mod["ew"](*_tensors(dev, a, b), c)
    np.testing.assert_allclose(c.numpy(), np.exp(a) * 0.5 + b, rtol=1e-5)


def test_scalars_in_the_uniform_block(dev):
    from tvm.runtime import KernelError

    mod = tir.build(scale(), target="webgpu")
    a = RNG.random(256, dtype=np.float32)
    b = _empty(dev, (256,))
    mod["scale"](*_tensors(dev, a), b, 2.5, -7)
    np.testing.assert_allclose(b.numpy(), a * 2.5 - 7, rtol=1e-6)
    with pytest.raises(KernelError, match=r"parameter k = 4294967296 does not fit in 32 bits"):
        mod["scale"](*_tensors(dev, a), b, 2.5, 1 << 32)


def test_matmul_with_workgroup_tiles(dev):
    mod = tir.build(matmul(64, 48, 40), target="webgpu")
    a, b = RNG.random((64, 40), dtype=np.float32), RNG.random((40, 48), dtype=np.float32)
    c = _empty(dev, (64, 48))
    mod["matmul"](*_tensors(dev, a, b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_row_reductions(dev, kind):
    mod = tir.build(row_reduce(5, 1000, kind), target="webgpu")
    a = RNG.standard_normal((5, 1000)).astype(np.float32)
    c = _empty(dev, (5,))
    mod[f"row_{kind}"](*_tensors(dev, a), c)
    np.testing.assert_allclose(c.numpy(), getattr(a, kind)(axis=1), rtol=1e-4, atol=1e-4)


def test_int64_tensors_copy_exactly_and_hold_results(dev):
    mod = tir.build(int64_copy_and_index(), target="webgpu")
    a = RNG.integers(-(1 << 62), 1 << 62, 64, dtype=np.int64)
    b, c = _empty(dev, (64,), "int64"), _empty(dev, (64,), "int64")
    mod["i64"](*_tensors(dev, a), b, c)
    np.testing.assert_array_equal(b.numpy(), a[::-1])
    np.testing.assert_array_equal(c.numpy(), np.arange(64) * 3)


def test_bool_tensors_neighbouring_bytes_in_one_word(dev):
    from tvm import te

    A = te.placeholder((37,), "float32", "A")
    B = te.placeholder((37,), "float32", "B")
    C = te.compute((37,), lambda i: A[i] < B[i], name="C")
    D = te.compute((37,), lambda i: tir.Select(C[i], A[i], B[i]), name="D")
    mod = tir.build(te.create_prim_func([A, B, C, D]).with_attr("global_symbol", "less"),
                    target="webgpu")
    a, b = RNG.random(37, dtype=np.float32), RNG.random(37, dtype=np.float32)
    c, d = _empty(dev, (37,), "bool"), _empty(dev, (37,))
    mod["less"](*_tensors(dev, a, b), c, d)
    np.testing.assert_array_equal(c.numpy(), a < b)
    np.testing.assert_array_equal(d.numpy(), np.minimum(a, b))


def test_math_and_special_values(dev):
    x = np.array([-np.inf, -3.0, -0.5, 0.0, 0.5, 2.0, np.inf, np.nan] * 8, np.float32)
    cases = [
        (lambda v: tir.Select(tir.isnan(v), tir.const(-1.0, "float32"), v), lambda v: np.where(np.isnan(v), -1, v)),
        (lambda v: tir.Select(tir.isinf(v), tir.const(7.0, "float32"), v), lambda v: np.where(np.isinf(v), 7, v)),
        (lambda v: tir.max(v, tir.const(float("-inf"), "float32")),
         lambda v: np.where(v > -np.inf, v, -np.inf)),  # max as C: NaN > -inf is false
        (lambda v: tir.sigmoid(v), lambda v: 1 / (1 + np.exp(-v))),
        (lambda v: tir.erf(v), None),
    ]
    for fn, ref in cases:
        mod = tir.build(unary(fn=fn), target="webgpu")
        b = _empty(dev, (64,))
        mod["unary"](*_tensors(dev, x), b)
        if ref is None:
            import math

            ref = np.vectorize(lambda v: math.erf(v) if not math.isnan(v) else v)
        np.testing.assert_allclose(b.numpy(), ref(x).astype(np.float32), rtol=1e-5, atol=1e-6)


def test_float16_where_the_adapter_has_shader_f16(dev):
    if "shader-f16" not in dev.api.attributes(dev)["features"]:
        pytest.skip("this adapter has no shader-f16")  # lavapipe has it
    mod = tir.build(elementwise(n=8, dtype="float16"), target="webgpu")
    a = RNG.random((8, 64)).astype(np.float16)
    b = RNG.random((8, 64)).astype(np.float16)
    c = _empty(dev, (8, 64), "float16")
    mod["ew"](*_tensors(dev, a, b), c)
    np.testing.assert_allclose(c.numpy().astype(np.float32),
                               (np.exp(a.astype(np.float32)) * 0.5 + b).astype(np.float32),
                               rtol=2e-3, atol=2e-3)


# --------------------------------------------------------------------------- checks


def test_index_checks_raise_the_message_through_the_error_record(dev):
    from tvm.runtime import KernelError

    mod = tir.build(checked_gather(), target="webgpu")
    a = RNG.random(16, dtype=np.float32)
    idx = np.array([0, 3, 15, 2, 1, 1, 7, 9], "int64")
    out = _empty(dev, (8,))
    mod["gather"](*_tensors(dev, a, idx), out)
    np.testing.assert_array_equal(out.numpy(), a[idx])
    for bad in (16, -1, 1 << 40, -(1 << 40)):
        idx[3] = bad
        with pytest.raises(KernelError, match=rf"^g: index {bad} is out of range of 16$"):
            mod["gather"](*_tensors(dev, a, idx), out)
    idx[3] = 2  # a good call after a bad one
    mod["gather"](*_tensors(dev, a, idx), out)
    np.testing.assert_array_equal(out.numpy(), a[idx])


def test_arguments_are_checked_before_the_launch(dev):
    import tvm.runtime as rt
    from tvm.runtime import KernelError

    mod = tir.build(elementwise(n=16), target="webgpu")
    a = rt.tensor(np.zeros((16, 64), np.float32), device=dev)
    with pytest.raises(KernelError, match=r"argument C has shape\[0\] = 8, expected 16"):
        mod["ew"](a, a, _empty(dev, (8, 64)))
    with pytest.raises(TypeError, match="expects a tvm.runtime.Tensor on the webgpu device"):
        mod["ew"](np.zeros((16, 64), np.float32), a, a)


# --------------------------------------------------------------------------- device API


def test_device_api_copies_at_any_byte_offset(dev):
    api = dev.api
    h = api.alloc(dev, 10, 64)
    try:
        api.copy_from_host(dev, h, 0, np.arange(10, dtype=np.uint8))
        api.copy_from_host(dev, h, 3, np.array([200, 201, 202], np.uint8))
        out = np.zeros(7, np.uint8)
        api.copy_to_host(dev, h, 1, out)
        np.testing.assert_array_equal(out, [1, 2, 200, 201, 202, 6, 7])
        h2 = api.alloc(dev, 16, 64)
        api.copy_device_to_device(dev, h, 0, dev, h2, 4, 8)
        full = np.zeros(16, np.uint8)
        api.copy_to_host(dev, h2, 0, full)
        np.testing.assert_array_equal(full[4:12], [0, 1, 2, 200, 201, 202, 6, 7])
        api.free(dev, h2)
        with pytest.raises(ValueError, match="outside the buffer"):
            api.copy_to_host(dev, h, 12, np.zeros(8, np.uint8))
    finally:
        api.free(dev, h)
    attrs = api.attributes(dev)
    assert attrs["name"] and attrs["max_work_group_invocations"] >= 256


def test_device_target_states_the_adapter_limits():
    from tvm.ir import Target
    from tvm.target.webgpu.runtime import device_target

    t = Target(device_target(0))
    assert t.kind_name == "webgpu" and t.max_num_threads >= 256


def test_exported_module_loads_and_runs(dev, tmp_path):
    import tvm.runtime as rt

    mod = tir.build(elementwise(), target="webgpu")
    path = tmp_path / "ew.wgpumod"
    mod.export_library(path)
    loaded = rt.load_module(str(path))
    assert type(loaded).__name__ == "WebGPUModule"
    a, b = RNG.random((5, 64), dtype=np.float32), RNG.random((5, 64), dtype=np.float32)
    c = _empty(dev, (5, 64))
    loaded["ew"](*_tensors(dev, a, b), c)
    np.testing.assert_allclose(c.numpy(), np.exp(a) * 0.5 + b, rtol=1e-5)
    with pytest.raises(ValueError, match=r"\.wgpumod file"):
        mod.export_library(tmp_path / "ew.json")


# --------------------------------------------------------------------------- bad input


def test_bad_wgsl_and_missing_features_are_kernel_errors(dev):
    from tvm.runtime import KernelError, ModuleLoadError
    from tvm.target.webgpu.runtime import WebGPUModule

    payload = dict(tir.build(elementwise(n=16), target="webgpu").payload)
    kernel = dict(payload["kernels"][0], wgsl="fn main() { this is not wgsl }")
    bad = WebGPUModule(dict(payload, kernels=[kernel]))
    a = _empty(dev, (16, 64))
    with pytest.raises(KernelError, match="the WGSL of kernel ew_kernel does not compile"):
        bad["ew"](a, a, a)
    kernel = dict(payload["kernels"][0], features=["shader-f99"])
    with pytest.raises(KernelError, match="needs the adapter features shader-f99"):
        WebGPUModule(dict(payload, kernels=[kernel]))["ew"](a, a, a)
    kernel = {k: v for k, v in payload["kernels"][0].items() if k != "wgsl"}
    with pytest.raises(ModuleLoadError, match="needs each kernel's WGSL"):
        WebGPUModule(dict(payload, kernels=[kernel]))


def test_a_missing_adapter_is_a_clear_error(monkeypatch):
    from tvm.runtime import Device, DeviceUnavailableError
    from tvm.target.webgpu.runtime import WebGPUDeviceAPI

    api = WebGPUDeviceAPI()
    monkeypatch.setattr(api, "_contexts", [])
    with pytest.raises(DeviceUnavailableError, match=r"webgpu\(0\) does not exist: 0 WebGPU "
                                                     r"adapter\(s\) found \(pip install wgpu"):
        api.alloc(Device(15, 0), 64, 64)
    assert not api.exists(Device(15, 0))
