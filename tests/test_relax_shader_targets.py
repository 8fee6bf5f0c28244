"""relax.build for the shader targets, vulkan (GLSL -> SPIR-V) and webgpu (WGSL), each on its
device (lavapipe in CI, through the vulkan bindings and through wgpu), against llvm: the
walkthrough, a set of operators (elementwise, matmul, softmax, reductions, comparisons and
bool tensors, scans, sorts, scatters, conv2d), a ResNet-style block, ResNet-18
(tests/test_relax_gpu_resnet.py's BlockBuilder network and the ONNX one), index checks
through the error record, and the exported executable run by a process that has only
tvm-runtime and the target's run side.  Every test runs once per target."""

from __future__ import annotations

import dataclasses
import json
import struct
import subprocess
import textwrap

import numpy as np
import pytest
from relax_gpu_util import ensure_llvm, requires_vulkan, requires_webgpu, run_both

pytest.importorskip("tvm.relax")

from tvm import relax  # noqa: E402
from tvm.relax import op  # noqa: E402

import tvm.runtime as rt  # noqa: E402
from tvm.runtime import KernelError  # noqa: E402
from tvm.runtime.vm import VirtualMachine  # noqa: E402
from walkthrough_model import Walkthrough  # noqa: E402

RNG = np.random.default_rng(7)


@dataclasses.dataclass(frozen=True)
class ShaderTarget:
    """What differs between the shader targets in these tests."""

    name: str
    module_class: str  # the executable's kernel module
    module_format: str  # its format in an exported file
    source_markers: tuple  # text its kernels' source contains
    run_packages: tuple  # what the runtime-only process imports besides tvm-runtime

    def device(self, index: int = 0):
        return getattr(rt, self.name)(index)


VULKAN = ShaderTarget("vulkan", "VulkanModule", "vkmod",
                      ("#version 450", "shared float", "barrier()"),
                      ("tvm.target.vulkan", "vulkan", "cffi", "pycparser"))
WEBGPU = ShaderTarget("webgpu", "WebGPUModule", "wgpumod",
                      ("var<workgroup>", "workgroupBarrier()",
                       "@compute @workgroup_size(tvm_wg_x, tvm_wg_y, tvm_wg_z)"),
                      ("tvm.target.webgpu", "wgpu", "cffi", "pycparser"))


@pytest.fixture(scope="module", params=[
    pytest.param(VULKAN, marks=requires_vulkan, id="vulkan"),
    pytest.param(WEBGPU, marks=requires_webgpu, id="webgpu")])
def shader(request):
    return request.param


def _module(make, *sinfos, tuple_out=True):
    bb = relax.BlockBuilder()
    params = [relax.Var(f"p{i}", s) for i, s in enumerate(sinfos)]
    with bb.function("main", params):
        with bb.dataflow():
            if tuple_out:
                outs = [bb.emit(e) for e in make(*params)]
                out = bb.emit_output(relax.Tuple(outs))
            else:
                out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    return bb.get()


def _t(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


@pytest.fixture(scope="module")
def walkthrough_inputs():
    return (RNG.standard_normal((128, 256), dtype="float32"),
            RNG.standard_normal((256, 512), dtype="float32"),
            RNG.standard_normal(512, dtype="float32"))


@pytest.fixture(scope="module")
def walkthrough(walkthrough_inputs, shader):
    return run_both(Walkthrough, *walkthrough_inputs, target=shader.name)


def test_walkthrough_matches_llvm(walkthrough, shader):
    gpu, cpu, ex = walkthrough
    np.testing.assert_allclose(gpu, cpu, rtol=1e-4, atol=1e-4)
    assert type(ex.kernel_lib).__name__ == shader.module_class
    src = ex.kernel_lib.get_source()
    for marker in shader.source_markers:
        assert marker in src, marker


def test_operators_match_llvm(shader):
    mod = _module(lambda x, y, w: [
        op.add(op.multiply(x, y), relax.const(0.5, "float32")),
        op.exp(x), op.tanh(y), op.nn.relu(op.subtract(x, y)), op.sigmoid(x),
        op.matmul(x, w),
        op.nn.softmax(x, axis=1),
        op.sum(x, axis=1), op.max(x, axis=0), op.mean(x), op.min(y, axis=1, keepdims=True),
        op.nn.gelu(x),
    ], _t((24, 40)), _t((24, 40)), _t((40, 16)))
    x, y = RNG.standard_normal((24, 40)).astype("float32"), RNG.standard_normal((24, 40)).astype("float32")
    w = RNG.standard_normal((40, 16)).astype("float32")
    gpu, cpu, _ = run_both(mod, x, y, w, target=shader.name)
    assert len(gpu) == 12
    for g, c in zip(gpu, cpu):
        assert g.shape == c.shape and g.dtype == c.dtype
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-4)


def test_comparisons_and_bool_tensors_match_llvm(shader):
    def make(x, y):
        mask = op.greater(x, y)
        return [mask, op.where(mask, x, y), op.logical_not(mask), op.less_equal(x, y),
                op.astype(mask, "float32")]

    mod = _module(make, _t((6, 41)), _t((6, 41)))
    x, y = RNG.standard_normal((6, 41)).astype("float32"), RNG.standard_normal((6, 41)).astype("float32")
    gpu, cpu, _ = run_both(mod, x, y, target=shader.name)
    for g, c in zip(gpu, cpu):
        assert g.dtype == c.dtype and g.shape == c.shape
        np.testing.assert_array_equal(g, c)


def test_scans_sorts_scatters_and_tuple_reductions_match_llvm(shader):
    mod = _module(lambda x, i, u: [
        op.sort(x, axis=1), op.argsort(x, axis=0), op.cumsum(x, axis=0), op.cumsum(x),
        op.argmax(x), op.argmin(x, axis=1),
        op.scatter_elements(x, i, u, axis=0, reduction="add"),
        op.take(x, relax.const(np.array([5, 0, 2], "int64")), axis=0),
    ], _t((6, 40)), _t((2, 40), "int64"), _t((2, 40)))
    x = RNG.standard_normal((6, 40)).astype("float32")
    idx = RNG.integers(-6, 6, (2, 40)).astype("int64")
    upd = RNG.standard_normal((2, 40)).astype("float32")
    gpu, cpu, _ = run_both(mod, x, idx, upd, target=shader.name)
    for g, c in zip(gpu, cpu):
        assert g.dtype == c.dtype and g.shape == c.shape
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-5)


def test_conv2d_and_a_resnet_block_match_llvm(shader):
    def block(x, w1, w2, b):
        y = op.nn.relu(op.add(op.nn.conv2d(x, w1, padding=1), b))
        y = op.nn.conv2d(y, w2, padding=1)
        return op.nn.relu(op.add(y, x))

    mod = _module(lambda x, w1, w2, b: [op.nn.conv2d(x, w1, strides=2, padding=1),
                                        block(x, w1, w2, b)],
                  _t((1, 8, 16, 16)), _t((8, 8, 3, 3)), _t((8, 8, 3, 3)), _t((1, 8, 1, 1)))
    args = [RNG.standard_normal(s).astype("float32") * 0.5
            for s in ((1, 8, 16, 16), (8, 8, 3, 3), (8, 8, 3, 3), (1, 8, 1, 1))]
    gpu, cpu, _ = run_both(mod, *args, target=shader.name)
    for g, c in zip(gpu, cpu):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-4)


def test_resnet18_from_the_block_builder_matches_llvm(shader):
    from test_relax_gpu_resnet import _check, resnet18_blockbuilder

    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype("float32")
    gpu, cpu, _ = run_both(resnet18_blockbuilder(), x, target=shader.name)
    assert gpu.shape == (1, 10)
    _check(gpu, cpu)


def test_resnet18_from_onnx_matches_llvm(shader):
    pytest.importorskip("onnx")
    frontend = pytest.importorskip("tvm.relax.frontend.onnx")
    import sys
    from pathlib import Path

    from test_relax_gpu_resnet import _check

    sys.path.insert(0, str(Path(__file__).parent / "onnx"))
    try:
        from models import resnet18
    finally:
        sys.path.pop(0)
    mod = frontend.from_onnx(resnet18(width=16, image_size=56, classes=10))
    x = np.random.default_rng(1).standard_normal((1, 3, 56, 56)).astype("float32")
    gpu, cpu, ex = run_both(mod, x, target=shader.name)
    assert gpu.shape == (1, 10)
    _check(gpu, cpu)
    assert len(ex.kernel_lib.function_names) > 10


def test_profile_and_time_evaluator_time_on_the_device(walkthrough, walkthrough_inputs,
                                                      shader):
    _, _, ex = walkthrough
    vm = VirtualMachine(ex, shader.device())
    report = vm.profile("main", *walkthrough_inputs)
    row = report.row("fused_matmul_add")
    assert row.kind == "kernel" and row.count == 1 and row.total_s > 0
    result = vm.time_evaluator("main", number=2, repeat=2)(*walkthrough_inputs)
    assert len(result.results) == 2 and min(result.results) > 0


@pytest.mark.parametrize("name", ["take", "gather_elements", "gather_nd"])
@pytest.mark.parametrize("bad", [9, -9, 1 << 40])
def test_an_index_out_of_range_raises_as_on_the_cpu(name, bad, shader):
    from test_relax_gpu_index_checks import CASES, _run

    ensure_llvm()
    call, indices = _run(name, bad, shader.name)
    with pytest.raises(KernelError) as info:
        call(indices(bad))
    assert str(info.value) == CASES[name][4].format(bad=bad)
    good = indices(1)
    cpu, _ = _run(name, bad, "llvm")
    np.testing.assert_array_equal(call(good), cpu(good))


def test_index_out_of_range_reports_through_the_error_record(shader):
    mod = _module(lambda x, i: op.take(x, i, axis=0), _t((4, 8)), _t((3,), "int64"),
                  tuple_out=False)
    vm = VirtualMachine(relax.build(mod, target=shader.name), shader.device())
    x = RNG.standard_normal((4, 8)).astype("float32")
    with pytest.raises(KernelError, match="take: index 9 is out of range for axis 0 of size 4"):
        vm["main"](x, np.array([0, 3, 9], "int64"))
    out = vm["main"](x, np.array([0, 3, -1], "int64")).numpy()  # a good call after a bad one
    np.testing.assert_array_equal(out, x[[0, 3, -1]])


def test_exported_executable_runs_with_the_runtime_alone(walkthrough, walkthrough_inputs,
                                                         shader, tmp_path):
    from tvm.runtime.testing import runtime_only_python

    gpu, cpu, ex = walkthrough
    path = tmp_path / "walkthrough.so"
    ex.export_library(path)
    data = path.read_bytes()[:-48]  # without the file's seal (tvm.runtime.file_seal)
    header_len = struct.unpack("<I", data[12:16])[0]
    assert json.loads(data[16:16 + header_len])["kernel_module"]["format"] == shader.module_format
    for name, a in zip("xwb", walkthrough_inputs):
        np.save(tmp_path / f"{name}.npy", a)
    np.save(tmp_path / "expected.npy", cpu)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        import numpy as np
        import tvm.runtime as rt
        from tvm.runtime.vm import VirtualMachine
        ex = rt.load_module({str(path)!r})
        vm = VirtualMachine(ex, rt.{shader.name}())
        args = [np.load({str(tmp_path)!r} + f"/{{n}}.npy") for n in "xwb"]
        out = vm["main"](*args)
        assert out.device == rt.{shader.name}(0), out.device
        np.testing.assert_allclose(out.numpy(), np.load({str(tmp_path)!r} + "/expected.npy"),
                                   rtol=1e-4, atol=1e-4)
        banned = [m for m in sys.modules if m.startswith(("tvm.ir", "tvm.tir", "tvm.relax",
                                                          "tvm.script", "llvmlite"))]
        assert not banned, banned
        print("ok", type(ex.kernel_lib).__name__)
    """))
    argv, env = runtime_only_python(tmp_path, extra_packages=list(shader.run_packages),
                                    plugins={shader.name: f"tvm.target.{shader.name}.plugin"})
    out = subprocess.run([*argv, str(script)], capture_output=True, text=True, env=env,
                         timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split() == ["ok", shader.module_class]
