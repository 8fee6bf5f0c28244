"""``tvmc``: every command on a small ONNX model, end to end, and its errors and exit codes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


pytestmark = pytest.mark.skipif(not _has("tvm.target.llvm"),
                                reason="tvmc compiles for llvm: needs tvm-target-llvm")

from tvm.driver.tvmc import main  # noqa: E402
from tvm.driver.tvmc.cli import EXIT_INPUT, EXIT_USAGE  # noqa: E402

RNG = np.random.default_rng(0)
W = RNG.standard_normal((32, 16)).astype("float32")
B = RNG.standard_normal((16,)).astype("float32")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="fc/matmul"),
         helper.make_node("Add", ["y", "B"], ["z"], name="fc/add"),
         helper.make_node("Relu", ["z"], ["out"], name="relu")],
        "fc_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 16])],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path_factory.mktemp("model") / "fc.onnx"
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def artifact(model_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("build") / "fc.so"
    assert main(["compile", str(model_path), "-o", str(out), "-q"]) == 0
    return out


def reference(x):
    return np.maximum(x @ W + B, 0)


def run_tvmc(capsys, *argv):
    code = main([*map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_help_lists_every_command_with_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for command in ("compile", "run", "tune", "show", "plugins", "targets", "explore"):
        assert command in text
    assert "examples:" in text and "exit codes:" in text
    for command in ("compile", "run", "tune", "show", "explore"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "examples:" in capsys.readouterr().out, command


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == EXIT_USAGE
    assert "COMMAND" in capsys.readouterr().out


def test_compile_then_run_matches_numpy(artifact, tmp_path, capsys):
    x = RNG.standard_normal((4, 32)).astype("float32")
    np.savez(tmp_path / "in.npz", x=x)
    code, out, _ = run_tvmc(capsys, "run", artifact, "--inputs", tmp_path / "in.npz",
                            "--outputs", tmp_path / "out.npz", "-q")
    assert code == 0, out
    with np.load(tmp_path / "out.npz") as result:
        np.testing.assert_allclose(result["output_0"], reference(x), rtol=1e-5, atol=1e-5)


def test_run_with_random_inputs_prints_outputs_and_times(artifact, capsys):
    code, out, err = run_tvmc(capsys, "run", artifact, "--print-time", "--repeat", "3")
    assert code == 0, err
    assert "output_0: float32[4, 16]" in out
    assert "3 measurements of 1 runs (ms): mean" in out
    assert "loading" in err and "done" in err  # the progress lines go to stderr


def test_run_profile_table(artifact, capsys):
    code, out, _ = run_tvmc(capsys, "run", artifact, "--profile", "-q")
    assert code == 0
    assert "fused_matmul_add_relu" in out and "(vm overhead)" in out


def test_progress_lines_are_quiet_with_q(artifact, capsys):
    code, _, err = run_tvmc(capsys, "run", artifact, "-q")
    assert code == 0 and err == ""


def test_show_every_stage(model_path, capsys):
    expect = {
        "relax": "R.matmul",
        "legalized": "R.call_tir",
        "fused": "def fused_matmul_add_relu",
        "tir": '"tir.is_scheduled"',
        "bytecode": "call fused_matmul_add_relu",
        "ll": "define",
        "asm": "fused_matmul_add_relu:",
    }
    for stage, needle in expect.items():
        code, out, err = run_tvmc(capsys, "show", model_path, "--stage", stage, "-q")
        assert code == 0, (stage, err)
        assert needle in out, (stage, out[:400])


def test_show_leaves_out_weights_unless_show_meta(model_path, capsys):
    _, out, _ = run_tvmc(capsys, "show", model_path, "-q")
    assert "metadata omitted" in out and "tvm-json" not in out
    _, out, _ = run_tvmc(capsys, "show", model_path, "--show-meta", "-q")
    assert "# <metadata:" in out and "tvm-json" in out


def test_show_kernel_code_is_the_compute_part(model_path, capsys):
    name = "fused_matmul_add_relu"
    for stage in ("ll", "asm"):
        _, whole, _ = run_tvmc(capsys, "show", model_path, "--stage", stage, "--kernel", name,
                               "--all", "-q")
        _, hot, _ = run_tvmc(capsys, "show", model_path, "--stage", stage, "--kernel", name,
                             "-q")
        assert len(hot) < len(whole), stage
        assert "assert.fail" not in hot and "snprintf" not in hot, stage
        assert "snprintf" in whole, stage  # --all keeps the argument checks
    _, c_code, _ = run_tvmc(capsys, "show", model_path, "--stage", "code", "--target", "c",
                            "--kernel", name, "-q")
    assert "for (" in c_code and "_compute_" in c_code and "tvm_report_error" not in c_code
    _, fused, _ = run_tvmc(capsys, "show", model_path, "--stage", "fused", "--kernel", name,
                           "-q")
    assert "T.prim_func" in fused and "R.function" not in fused


def test_show_unknown_kernel_names_the_kernels(model_path, capsys):
    code, _, err = run_tvmc(capsys, "show", model_path, "--stage", "ll", "--kernel", "nope", "-q")
    assert code == 1
    assert "no kernel 'nope'" in err and "fused_matmul_add_relu" in err
    assert "Traceback" not in err


def test_print_ir_after_and_pass_times(model_path, tmp_path, capsys):
    code, out, err = run_tvmc(capsys, "compile", model_path, "-o", tmp_path / "m.so",
                              "--print-ir-after", "FuseOps", "--print-ir-after", "Fuse",
                              "--print-pass-times", "-q")
    assert code == 0
    assert out.count("# IR after pass FuseOps") == 1 and "# IR after pass LegalizeOps" not in out
    assert "LegalizeOps" in out and "Total" in out  # the timing table
    assert "no pass named Fuse ran" in err


def test_dump_code_writes_every_stage(model_path, tmp_path, capsys):
    dump = tmp_path / "dump"
    code, out, _ = run_tvmc(capsys, "compile", model_path, "-o", tmp_path / "m.so",
                            "--dump-code", dump, "-q")
    assert code == 0
    names = sorted(p.name for p in dump.iterdir())
    assert names[:4] == ["00_relax.py", "01_legalized.py", "02_fused.py", "03_tir.py"]
    assert {"bytecode.txt", "kernels.ll", "kernels.s"} <= set(names)
    assert "fused_matmul_add_relu" in (dump / "02_fused.py").read_text()


def test_input_shapes_override_and_errors(model_path, tmp_path, capsys):
    code, out, _ = run_tvmc(capsys, "show", model_path, "--input-shapes", "x:[n,32]", "-q")
    assert code == 0 and 'R.Tensor(("n", 32)' in out
    code, _, err = run_tvmc(capsys, "show", model_path, "--input-shapes", "x:1,32", "-q")
    assert code == EXIT_USAGE and "NAME:[d0,d1,...]" in err
    code, _, err = run_tvmc(capsys, "show", model_path, "--input-shapes", "y:[1,32]", "-q")
    assert code == EXIT_USAGE and "its inputs are x" in err


def test_bad_files_exit_3_without_traceback(model_path, tmp_path, capsys):
    code, _, err = run_tvmc(capsys, "compile", tmp_path / "missing.onnx")
    assert code == EXIT_INPUT and "no such model file" in err and "Traceback" not in err
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08garbage that is not a protobuf")
    code, _, err = run_tvmc(capsys, "compile", bad)
    assert code == EXIT_INPUT and "not a readable ONNX model" in err
    code, _, err = run_tvmc(capsys, "run", model_path)  # a model is not an executable
    assert code == EXIT_INPUT and "not written by tvm" in err
    pt2 = tmp_path / "m.pt2"
    pt2.write_bytes(b"PK\x03\x04")
    code, _, err = run_tvmc(capsys, "compile", pt2)
    assert code == EXIT_INPUT and "export the model to ONNX" in err


def test_verbose_shows_the_traceback(tmp_path, capsys):
    code, _, err = run_tvmc(capsys, "compile", tmp_path / "missing.onnx", "--verbose")
    assert code == EXIT_INPUT and "Traceback" in err


def test_unknown_target_is_a_failure_naming_the_kinds(model_path, capsys):
    code, _, err = run_tvmc(capsys, "compile", model_path, "--target", "notatarget", "-q")
    assert code == 1 and "unknown target kind 'notatarget'" in err and "llvm" in err


def test_run_input_errors(artifact, tmp_path, capsys):
    np.savez(tmp_path / "wrong.npz", q=np.zeros(3))
    code, _, err = run_tvmc(capsys, "run", artifact, "--inputs", tmp_path / "wrong.npz", "-q")
    assert code == EXIT_USAGE and "its parameters are x" in err
    np.savez(tmp_path / "shape.npz", x=np.zeros((3, 32), "float32"))
    code, _, err = run_tvmc(capsys, "run", artifact, "--inputs", tmp_path / "shape.npz", "-q")
    assert code == 1 and "shape" in err and "Traceback" not in err


def test_plugins_and_targets(capsys):
    code, out, _ = run_tvmc(capsys, "plugins")
    assert code == 0 and "tvm-target-llvm" in out and "loaded" in out
    code, out, _ = run_tvmc(capsys, "targets", "--attrs")
    assert code == 0 and "llvm" in out and "-mcpu" in out and "named targets" in out


def test_console_script_and_module_entry_point(model_path, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tvm.driver.tvmc", "show", str(model_path),
                           "--stage", "bytecode"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "@main" in proc.stdout and "importing" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "tvm.driver.tvmc", "show",
                           str(tmp_path / "nope.onnx")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == EXIT_INPUT and "Traceback" not in proc.stderr


def test_profile_formats_parse(artifact, tmp_path, capsys):
    code, out, _ = run_tvmc(capsys, "run", artifact, "--profile", "--profile-format", "json",
                            "-q")
    assert code == 0
    data = json.loads(out)
    assert any(r["name"] == "fused_matmul_add_relu" for r in data["rows"])
    code, out, _ = run_tvmc(capsys, "run", artifact, "--profile", "--profile-format", "csv",
                            "--profile-output", tmp_path / "p.csv", "-q")
    assert code == 0 and "fused_matmul_add_relu" in (tmp_path / "p.csv").read_text()
