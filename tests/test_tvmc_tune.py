"""``tvmc tune`` then ``tvmc compile --tuning-records``: the records found schedule the
kernels of the compiled model (tvmc, tvm-meta-schedule and the llvm target together)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("tvm.meta_schedule")
pytest.importorskip("tvm.target.llvm")


def test_tune_then_compile_with_records(tmp_path, capsys):
    from onnx import TensorProto, helper, numpy_helper
    from tvm import meta_schedule as ms
    from tvm.driver.tvmc import main
    from tvm.driver.tvmc.compiler import compile_model
    from tvm.driver.tvmc.model import load_model
    from tvm.ffi import structural_equal

    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 48)).astype("float32")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="fc"),
         helper.make_node("Relu", ["y"], ["out"], name="relu")],
        "fc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 64])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [16, 48])],
        [numpy_helper.from_array(w, "w")])
    path = tmp_path / "fc.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    work = tmp_path / "tuning"
    assert main(["tune", str(path), "--trials", "6", "--trials-per-iter", "6", "--work-dir",
                 str(work), "--cost-model", "random", "--seed", "1", "-q"]) == 0
    assert "tuning records in" in capsys.readouterr().out
    db = ms.database.JSONDatabase(work_dir=work)
    assert len(db) > 0

    compiled = compile_model(load_model(path), "llvm", records=str(work))
    kernel = compiled.stages["tir"]["fused_matmul_relu"]
    (workload,) = {id(r.workload): r.workload for r in db.get_all_tuning_records()}.values()
    tuned = db.query_schedule(workload.mod, "llvm")
    assert tuned is not None
    record = tuned.mod["main"]  # the record's schedule (its attrs lack the model's layers)
    assert structural_equal(kernel.with_fields(attrs=record.attrs), record)

    out = tmp_path / "fc.so"
    assert main(["compile", str(path), "--tuning-records", str(work), "-o", str(out), "-q"]) == 0
    x = rng.standard_normal((16, 64)).astype("float32")
    np.savez(tmp_path / "in.npz", x=x)
    assert main(["run", str(out), "--inputs", str(tmp_path / "in.npz"), "--outputs",
                 str(tmp_path / "out.npz"), "-q"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output_0"], np.maximum(x @ w, 0),
                               rtol=1e-4, atol=1e-4)
    assert main(["compile", str(path), "--tuning-records", str(tmp_path / "nope"), "-q"]) == 1
    assert "not a directory" in capsys.readouterr().err
