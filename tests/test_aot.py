"""AOT C packages (``relax.build(mod, target, exec_mode="aot")``) linked into C programs.

Each model is built twice, for the VM and as an AOT package; a C program (``aot_driver``)
includes the package's header, links ``lib<name>.a`` (or ``lib<name>.so``), reads the inputs
numpy wrote and writes the outputs, which must equal the VM's bit for bit.  The walkthrough
also runs under valgrind (no error, no leak, the same heap allocations for 1 and 3 runs: a
run allocates nothing) and AddressSanitizer; the walkthrough and MobileNetV2 are cross-built
for aarch64 and run under qemu-user, compared bit for bit with the aarch64 VM (its kernels
run under qemu through the runner).  ResNet-18 and MobileNetV2 are the reduced graphs of
``tests/onnx/models.py`` at 64x64 (ResNet width 8, MobileNet width 0.25) to keep CI short.

Needs a C compiler; valgrind, the aarch64 cross compiler and qemu-user skip where missing
(CI installs them, ``.ci/run``, and allows no skip).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

from aot_driver import compile_driver, run_driver  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.aot import AOTError, AOTPackage  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402
from tvm.script import tir as T  # noqa: E402

import tvm.runtime  # noqa: E402

AARCH64 = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
pytestmark = pytest.mark.xdist_group("aot")


def _walkthrough():
    from walkthrough_model import Walkthrough, walkthrough_inputs

    return Walkthrough, walkthrough_inputs()


def _onnx_model(make):
    pytest.importorskip("onnx")
    from tvm.relax.frontend.onnx import from_onnx

    sys.path.insert(0, str(Path(__file__).parent / "onnx"))
    try:
        import models
    finally:
        sys.path.pop(0)
    return from_onnx(make(models)), [models.image_input(1, 64)["input"]]


MODELS = {
    "walkthrough": _walkthrough,
    "resnet18": lambda: _onnx_model(lambda m: m.resnet18(width=8, image_size=64, classes=10)),
    "mobilenet_v2": lambda: _onnx_model(
        lambda m: m.mobilenet_v2(width_mult=0.25, image_size=64, classes=10)),
}


def _vm_outputs(ex, inputs) -> list[np.ndarray]:
    out = relax.VirtualMachine(ex, tvm.runtime.cpu())["main"](*inputs)
    return [o.numpy() for o in out] if isinstance(out, tuple) else [out.numpy()]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``model -> (folder, package, inputs, VM outputs)``: exported as ``name`` = model."""
    cache: dict = {}

    def get(model: str):
        if model not in cache:
            mod, inputs = MODELS[model]()
            expected = _vm_outputs(relax.build(mod, "llvm"), inputs)
            pkg = relax.build(mod, "llvm", exec_mode="aot")
            folder = tmp_path_factory.mktemp(f"aot_{model}")
            pkg.export(folder, model)
            cache[model] = (folder, pkg, inputs, expected)
        return cache[model]

    return get


def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} on PATH")


@pytest.mark.parametrize("model", sorted(MODELS))
def test_c_program_matches_the_vm_bit_for_bit(model, built):
    folder, pkg, inputs, expected = built(model)
    assert isinstance(pkg, AOTPackage)
    for link in ("static", "shared") if model == "walkthrough" else ("static",):
        prog = compile_driver(folder, model, pkg, link)
        proc, got = run_driver(prog, inputs, pkg, runs=2)
        assert proc.returncode == 0, proc.stderr
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


def test_header_describes_the_io_and_workspace(built):
    folder, pkg, _, _ = built("walkthrough")
    header = (folder / "walkthrough.h").read_text()
    for text in ("int walkthrough_run(const walkthrough_inputs* inputs, walkthrough_outputs* "
                 "outputs);", "#define WALKTHROUGH_WORKSPACE_SIZE", "const float* x;",
                 "#define WALKTHROUGH_INPUT_W_SHAPE {256, 512}", "float* output;",
                 "const char* walkthrough_last_error(void);",
                 "#define WALKTHROUGH_OUTPUT_OUTPUT_BYTES 262144"):
        assert text in header
    assert pkg.workspace_size > 0 and f"{pkg.workspace_size}  /* bytes */" in header
    # the matmul's packed weight and accumulator (768 KiB, its own aligned_alloc in the VM
    # build) are in its call's arena, a range of the workspace
    assert pkg.plan.arena_size >= 128 * 512 * 4 + 8 * 256 * 64 * 4
    assert pkg.plan.liveness_bound <= pkg.workspace_size


def _valgrind(prog, inputs, pkg, runs, extra=(), threads="1"):
    env = {**os.environ, "OMP_NUM_THREADS": threads}
    proc, got = run_driver(prog, inputs, pkg, runs=runs, env=env, prefix=[
        "valgrind", "--error-exitcode=9", "--leak-check=full", *extra])
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = [line for line in proc.stderr.splitlines() if "total heap usage" in line]
    assert summary, proc.stderr[-2000:]
    return got, summary[0].split("total heap usage:")[1].split("allocs")[0].strip()


def test_walkthrough_is_clean_under_valgrind_and_allocates_nothing_per_run(tmp_path):
    _need("valgrind")
    # valgrind does not decode AVX-512: on x86 build for an AVX2 machine (which this is)
    import platform

    target = "llvm -mcpu=haswell" if platform.machine() == "x86_64" else "llvm"
    mod, inputs = _walkthrough()
    expected = _vm_outputs(relax.build(mod, target), inputs)
    pkg = relax.build(mod, target, exec_mode="aot")
    pkg.export(tmp_path, "walkthrough")
    prog = compile_driver(tmp_path, "walkthrough", pkg, "static")
    # one OpenMP thread: libgomp's worker threads live until exit, which valgrind would
    # report as possibly lost thread stacks (libgomp's, not ours); with threads below
    got, once = _valgrind(prog, inputs, pkg, 1)
    np.testing.assert_array_equal(got[0], expected[0])
    _, thrice = _valgrind(prog, inputs, pkg, 3)
    assert once == thrice, f"heap allocations: {once} with 1 run, {thrice} with 3"
    # two threads: libgomp's team is made in the first run and reused
    definite = ["--errors-for-leak-kinds=definite"]
    got, once = _valgrind(prog, inputs, pkg, 1, definite, "2")
    np.testing.assert_array_equal(got[0], expected[0])
    _, thrice = _valgrind(prog, inputs, pkg, 3, definite, "2")
    assert once == thrice, f"heap allocations: {once} with 1 run, {thrice} with 3 (2 threads)"


def test_walkthrough_under_address_sanitizer(built, tmp_path):
    folder, pkg, inputs, expected = built("walkthrough")
    probe = tmp_path / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    if subprocess.run(["cc", "-fsanitize=address", str(probe), "-o", str(tmp_path / "p")],
                      capture_output=True).returncode != 0:
        pytest.skip("the C compiler has no AddressSanitizer")
    asan = tmp_path / "asan"
    pkg.export(asan, "walkthrough", cflags=("-O1", "-g", "-fsanitize=address"))
    prog = compile_driver(asan, "walkthrough", pkg, "static", cflags=["-fsanitize=address"])
    proc, got = run_driver(prog, inputs, pkg, runs=2,
                           env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    np.testing.assert_array_equal(got[0], expected[0])


@pytest.mark.parametrize("model", ["walkthrough", "mobilenet_v2"])
def test_cross_built_for_aarch64_runs_under_qemu(model, tmp_path):
    _need("aarch64-linux-gnu-gcc", "qemu-aarch64")
    from tvm.runtime.runner import RunnerUnavailableError, create_runner

    mod, inputs = MODELS[model]()
    pkg = relax.build(mod, AARCH64, exec_mode="aot")
    paths = pkg.export(tmp_path, model)
    head = paths["so"].read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183  # EM_AARCH64
    prog = compile_driver(tmp_path, model, pkg, "static", cc="aarch64-linux-gnu-gcc",
                          cflags=["-static"])
    proc, got = run_driver(prog, inputs, pkg, prefix=["qemu-aarch64", "-L",
                                                      "/usr/aarch64-linux-gnu"])
    assert proc.returncode == 0, proc.stderr
    # the aarch64 VM (its kernels run under qemu through the runner) gives the same bits
    ex = relax.build(mod, AARCH64)
    lib = tmp_path / f"{model}_vm.so"
    ex.export_library(lib)
    runner = create_runner("qemu", target=AARCH64, timeout=180.0)
    try:
        runner.check_available()
        runner.server_path()
    except RunnerUnavailableError as err:
        pytest.skip(str(err))
    with runner.session() as session:
        expected = _vm_outputs(session.load_executable(lib), inputs)
    np.testing.assert_array_equal(got[0], expected[0])


# -- errors ---------------------------------------------------------------------------------
@I.ir_module
class Take:
    @R.function
    def main(x: R.Tensor((4, 3), "float32"), idx: R.Tensor((2,), "int64")
             ) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            y = R.take(x, idx, axis=0)
            R.output(y)
        return y


@I.ir_module
class Outputs:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            y = R.add(x, R.const(1.0, "float32"))
            z = R.reshape(y, (3, 2))
            R.output(y, z)
        return (y, z, x)


def test_tuple_outputs_views_and_inputs_as_outputs(tmp_path):
    pkg = relax.build(Outputs, "llvm", exec_mode="aot")
    header = pkg.header("outs")
    assert "float* output0;" in header and "float* output2;" in header
    assert "#define OUTS_OUTPUT_OUTPUT1_SHAPE {3, 2}" in header
    pkg.export(tmp_path, "outs")
    prog = compile_driver(tmp_path, "outs", pkg)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    proc, got = run_driver(prog, [x], pkg)
    assert proc.returncode == 0, proc.stderr
    expected = _vm_outputs(relax.build(Outputs, "llvm"), [x])
    assert [g.shape for g in got] == [(2, 3), (3, 2), (2, 3)]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@I.ir_module
class BuiltinView:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((6,), "float32"):
        y = R.add(x, x)
        z = R.call_pure_packed("vm.builtin.reshape", y, R.shape([6]),
                               sinfo_args=R.Tensor((6,), "float32"))
        w = R.add(z, z)
        return w


def test_a_reshape_builtin_is_a_view_of_the_same_memory(tmp_path):
    pkg = relax.build(BuiltinView, "llvm", exec_mode="aot")
    first, second = pkg.plan.calls
    assert first.args[-1].base == second.args[0].base and second.args[0].shape == (6,)
    pkg.export(tmp_path, "view")
    prog = compile_driver(tmp_path, "view", pkg)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    proc, got = run_driver(prog, [x], pkg)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(got[0], 4 * x.reshape(6))


# a kernel whose parallel tasks each take a 32 KiB buffer from aligned_alloc
@I.ir_module
class ParScratch:
    @T.prim_func
    def scratch(A: T.Buffer((8, 8192), "float32"), B: T.Buffer((8, 8192), "float32")):
        T.func_attr({"tir.is_scheduled": True, "tir.noalias": True})
        for i in T.parallel(8):
            with T.block("outer"):
                vi = T.axis.spatial(8, i)
                T.reads(A[vi, 0:8192])
                T.writes(B[vi, 0:8192])
                tmp = T.alloc_buffer((8192,), "float32")
                for j in range(8192):
                    with T.block("t"):
                        vj = T.axis.spatial(8192, j)
                        tmp[vj] = A[vi, vj] * T.float32(2.0)
                for j in range(8192):
                    with T.block("b"):
                        vj = T.axis.spatial(8192, j)
                        B[vi, vj] = tmp[8191 - vj] + T.float32(1.0)

    @R.function
    def main(x: R.Tensor((8, 8192), "float32")) -> R.Tensor((8, 8192), "float32"):
        cls = ParScratch
        y = R.call_tir(cls.scratch, (x,), out_sinfo=R.Tensor((8, 8192), "float32"))
        return y


def test_parallel_tasks_take_their_buffers_from_the_arena(tmp_path):
    pkg = relax.build(ParScratch, "llvm", exec_mode="aot")
    (call,) = pkg.plan.calls
    assert call.arena == 8 * (8192 * 4 + 64)  # one per task, as the code generator pads
    assert pkg.plan.arena_size == call.arena
    pkg.export(tmp_path, "par")
    prog = compile_driver(tmp_path, "par", pkg)
    x = np.random.default_rng(0).standard_normal((8, 8192), dtype="float32")
    for threads in ("1", "4"):
        proc, got = run_driver(prog, [x], pkg, runs=3,
                               env={**os.environ, "OMP_NUM_THREADS": threads})
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(got[0], x[:, ::-1] * 2 + 1)


def test_kernel_check_failure_is_a_return_code_with_the_message(tmp_path):
    pkg = relax.build(Take, "llvm", exec_mode="aot")
    pkg.export(tmp_path, "take")
    prog = compile_driver(tmp_path, "take", pkg, "static")
    x = np.arange(12, dtype="float32").reshape(4, 3)
    proc, got = run_driver(prog, [x, np.array([3, 1], "int64")], pkg)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(got[0], x[[3, 1]])
    proc, _ = run_driver(prog, [x, np.array([9, 1], "int64")], pkg)
    assert proc.returncode == 3
    assert "rc=-1: take: index 9 is out of range for axis 0 of size 4" in proc.stderr


def test_null_pointers_are_refused(tmp_path):
    pkg = relax.build(Take, "llvm", exec_mode="aot")
    pkg.export(tmp_path, "take")
    src = tmp_path / "null.c"
    src.write_text('#include <stdio.h>\n#include "take.h"\nint main(void) {\n'
                   "  float out[6]; take_inputs in = {0, 0}; take_outputs o = {out};\n"
                   "  int rc = take_run(&in, &o);\n"
                   '  printf("%d %s|", rc, take_last_error());\n'
                   '  rc = take_run(0, &o); printf("%d %s", rc, take_last_error());\n'
                   "  return 0;\n}\n")
    prog = tmp_path / "null"
    subprocess.run(["cc", "-I", str(tmp_path), str(src), str(tmp_path / "libtake.a"),
                    "-lgomp", "-lm", "-o", str(prog)], check=True)
    out = subprocess.run([str(prog)], capture_output=True, text=True, check=True).stdout
    assert out == "-2 take_run: input x is NULL|-2 take_run: inputs or outputs is NULL"


def test_two_packages_link_into_one_program(built, tmp_path):
    """Only the API symbols are global in a package: the kernels, slots and weights of two
    packages (here two of the same model) do not collide."""
    folder, _, _, _ = built("walkthrough")
    pkg = relax.build(Take, "llvm", exec_mode="aot")
    pkg.export(tmp_path, "take")
    pkg.export(tmp_path, "take2")  # the same kernels, in a second package
    src = tmp_path / "both.c"
    src.write_text(
        '#include <stdio.h>\n#include "take.h"\n#include "take2.h"\n#include "walkthrough.h"\n'
        "static float x[WALKTHROUGH_INPUT_X_SIZE], w[WALKTHROUGH_INPUT_W_SIZE], "
        "b[WALKTHROUGH_INPUT_B_SIZE], o[WALKTHROUGH_OUTPUT_OUTPUT_SIZE];\n"
        "int main(void) {\n"
        "  float tx[12], to[6], to2[6]; int64_t idx[2] = {3, 0};\n"
        "  for (int i = 0; i < 12; ++i) tx[i] = (float)i;\n"
        "  b[7] = 2.5f;\n"
        "  take_inputs ti = {tx, idx}; take_outputs tout = {to};\n"
        "  take2_inputs ti2 = {tx, idx}; take2_outputs tout2 = {to2};\n"
        "  walkthrough_inputs wi = {x, w, b}; walkthrough_outputs wo = {o};\n"
        "  int rc = take_run(&ti, &tout) | take2_run(&ti2, &tout2) | walkthrough_run(&wi, &wo);\n"
        '  printf("%d %g %g %g %g", rc, to[0], to[3], to2[2], o[512 + 7]);\n'
        "  return rc;\n}\n")
    prog = tmp_path / "both"
    subprocess.run(["cc", "-I", str(tmp_path), "-I", str(folder), str(src),
                    str(tmp_path / "libtake.a"), str(tmp_path / "libtake2.a"),
                    str(folder / "libwalkthrough.a"), "-lgomp", "-lm", "-o", str(prog)],
                   check=True)
    out = subprocess.run([str(prog)], capture_output=True, text=True, check=True).stdout
    assert out == "0 9 0 11 2.5"


def test_symbolic_shapes_are_refused():
    @I.ir_module
    class Dyn:
        @R.function
        def main(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n", 4), "float32"):
            with R.dataflow():
                y = R.add(x, x)
                R.output(y)
            return y

    with pytest.raises(AOTError, match=r"@main\): parameter x has shape \(n, 4\).*static"):
        relax.build(Dyn, "llvm", exec_mode="aot")


def test_control_flow_and_packed_functions_are_refused():
    @I.ir_module
    class Branch:
        @R.function
        def main(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")
                 ) -> R.Tensor((4,), "float32"):
            if c:
                y = R.add(x, x)
            else:
                y = R.multiply(x, x)
            return y

    with pytest.raises(AOTError, match=r"@main, instruction \d+: if .*control flow"):
        relax.build(Branch, "llvm", exec_mode="aot")

    @I.ir_module
    class Packed:
        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.call_packed("my.custom_op", x, sinfo_args=R.Tensor((4,), "float32"))
            return y

    with pytest.raises(AOTError, match=r"my.custom_op .*no C implementation"):
        relax.build(Packed, "llvm", exec_mode="aot")


def test_targets_without_object_code_are_refused():
    pytest.importorskip("tvm.target.c")
    with pytest.raises(AOTError, match="target 'c' .*build for an llvm target"):
        relax.build(Take, "c", exec_mode="aot")


def test_package_name_must_be_a_c_identifier(tmp_path):
    pkg = relax.build(Take, "llvm", exec_mode="aot")
    with pytest.raises(ValueError, match="must be a C identifier"):
        pkg.export(tmp_path, "my-model")


def test_unknown_exec_mode_is_refused():
    with pytest.raises(ValueError, match="exec_mode 'graph' is not supported"):
        relax.build(Take, "llvm", exec_mode="graph")


def test_a_kernel_named_like_a_libm_function(tmp_path):
    """The kernel of a lone R.exp is called ``exp``: its object exports it as
    ``__tvm_fn_exp`` (libm's exp is another function), and the package calls that."""
    @I.ir_module
    class Exp:
        @R.function
        def main(x: R.Tensor((6, 5), "float32")):
            with R.dataflow():
                y = R.exp(x)
                R.output(y)
            return y

    pkg = relax.build(Exp, "llvm", exec_mode="aot")
    assert [c.symbol for c in pkg.plan.calls] == ["exp"]
    assert '__asm__("__tvm_fn_exp")' in pkg.c_source("expm")
    x = np.linspace(-2, 2, 30, dtype="float32").reshape(6, 5)
    expected = _vm_outputs(relax.build(Exp, "llvm"), [x])
    pkg.export(tmp_path, "expm")
    proc, got = run_driver(compile_driver(tmp_path, "expm", pkg), [x], pkg)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(got[0], expected[0])


@pytest.mark.parametrize("backend", ["dnnl", "cblas"])
def test_offloaded_partitions_are_compiled_into_the_package(backend, tmp_path):
    """A convolution (dnnl) or matmul (cblas) runs in the external backend's C, compiled into
    the package; the rest are our kernels. The C program matches the VM."""
    pytest.importorskip(f"tvm.contrib.{backend}")
    library = __import__(f"tvm.contrib.{backend}.library", fromlist=["_"])
    found, why = (library.find_dnnl if backend == "dnnl" else library.find_cblas)()
    if found is None:
        pytest.skip(why)
    __import__(f"tvm.contrib.{backend}.plugin", fromlist=["_"]).ensure_registered()

    @I.ir_module
    class Model:
        @R.function
        def main(x: R.Tensor((1, 4, 8, 8), "float32"), w: R.Tensor((8, 4, 3, 3), "float32"),
                 a: R.Tensor((6, 8), "float32"), b: R.Tensor((8, 5), "float32")):
            with R.dataflow():
                y = R.nn.relu(R.nn.conv2d(x, w, padding=1))
                z = R.exp(R.matmul(a, b))
                R.output(y, z)
            return (y, z)

    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype("float32")
              for s in ((1, 4, 8, 8), (8, 4, 3, 3), (6, 8), (8, 5))]
    pkg = relax.build(Model, "llvm", exec_mode="aot", offload=[backend])
    assert {p.backend for p in pkg.offload_report.partitions} == {backend}
    expected = _vm_outputs(relax.build(Model, "llvm", offload=[backend]), inputs)
    pkg.export(tmp_path, "offloaded")
    assert pkg.link_flags and f"calls external backends ({backend})" in (
        tmp_path / "offloaded.h").read_text()
    for link in ("static", "shared"):
        prog = compile_driver(tmp_path, "offloaded", pkg, link,
                              libs=("-lgomp", "-lm", *pkg.link_flags))
        proc, got = run_driver(prog, inputs, pkg, runs=2)
        assert proc.returncode == 0, proc.stderr
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["model", "kernels", "weights", "plan"])
def test_a_package_may_be_named_like_its_parts(name, tmp_path):
    mod, inputs = MODELS["walkthrough"]()
    expected = _vm_outputs(relax.build(mod, "llvm"), inputs)
    pkg = relax.build(mod, "llvm", exec_mode="aot")
    pkg.export(tmp_path, name)
    prog = compile_driver(tmp_path, name, pkg)
    proc, got = run_driver(prog, inputs, pkg)
    assert proc.returncode == 0, proc.stderr
    for g, w in zip(got, expected):
        np.testing.assert_array_equal(g, w)


def test_the_liveness_bound_of_a_matmul_chain():
    """Three matmuls in a row (FuseOps keeps them apart): at most two 4x8 intermediates are
    live at once, so the bound is 2 * 128 bytes; the planned storages reach at least it."""
    @I.ir_module
    class Chain:
        @R.function
        def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 8), "float32")):
            with R.dataflow():
                a = R.matmul(x, w)
                b = R.matmul(a, w)
                c = R.matmul(b, w)
                R.output(c)
            return c

    pkg = relax.build(Chain, "llvm", exec_mode="aot")
    assert len(pkg.plan.calls) == 3
    assert pkg.plan.liveness_bound == 2 * 4 * 8 * 4
    # a and c share their 128 bytes (a is dead when c is written): the bound is reached
    assert pkg.workspace_size == pkg.plan.liveness_bound
    offsets = [c.args[-1].base for c in pkg.plan.calls]
    assert offsets[0] == offsets[2] != offsets[1]


@pytest.mark.parametrize("model", ["resnet18", "mobilenet_v2"])
def test_the_workspace_is_near_the_liveness_bound(model, built):
    """Storages and the calls' scratch share one workspace by their lives (the ratio at
    full size is in benchmarks/aot.py): no range is used by two blocks live at once."""
    _, pkg, _, _ = built(model)
    plan = pkg.plan
    assert 0 < plan.liveness_bound <= plan.workspace_size <= 1.5 * plan.liveness_bound
    for t, call in enumerate(plan.calls):  # this call's tensors and arena do not overlap
        ranges = sorted({(a.base[1], a.base[1] + a.nbytes) for a in call.args
                         if hasattr(a, "base") and a.base[0] == "workspace"})
        if call.arena:
            ranges = sorted(ranges + [(call.arena_offset, call.arena_offset + call.arena)])
        for (_, e), (o, _) in zip(ranges, ranges[1:]):
            assert e <= o, (t, call.text, ranges)
