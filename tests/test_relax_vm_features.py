"""More of relax.build + the VM end to end: bound parameters (constants in the exported file),
tuples, control flow, calls between functions, static memory planning."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm.target.llvm")

from tvm import relax  # noqa: E402
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402

import tvm.runtime  # noqa: E402
from tvm.runtime.vm import VirtualMachine  # noqa: E402


@I.ir_module
class Dense:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 3), "float32"),
             b: R.Tensor((3,), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.add(y, b)
            e = R.exp(z)
            R.output(z, e)
        return (z, e)


def test_bound_params_become_constants_that_survive_export(tmp_path):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 3), dtype="float32")
    b = rng.standard_normal(3, dtype="float32")
    ex = relax.build(Dense, "llvm", params={"w": w, "b": b})
    assert ex.vm_function("main")["params"] == ["x"]
    assert "c[0]" in ex.as_text() and "c[1]" in ex.as_text()
    path = tmp_path / "dense.so"
    ex.export_library(path)
    vm = VirtualMachine(tvm.runtime.load_module(path))
    x = rng.standard_normal((4, 8), dtype="float32")
    z, e = vm["main"](x)
    np.testing.assert_allclose(z.numpy(), x @ w + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(e.numpy(), np.exp(x @ w + b), rtol=1e-5)
    with pytest.raises(KeyError, match="has no parameter"):
        relax.build(Dense, "llvm", params={"nope": w})


@I.ir_module
class Branchy:
    @R.function(private=True)
    def square(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            y = R.multiply(x, x)
            R.output(y)
        return y

    @R.function
    def main(flag: R.Prim("bool"), x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Branchy
        if flag:
            r = cls.square(x)
        else:
            r = R.negative(x)
        return r


def test_if_and_calls_between_functions():
    ex = relax.build(Branchy, "llvm")
    text = ex.as_text()
    assert "if %0, else goto" in text and "call %" in text and "= square(" in text
    vm = VirtualMachine(ex)
    x = np.array([1, -2, 3, -4], "float32")
    np.testing.assert_array_equal(vm["main"](True, x).numpy(), x * x)
    np.testing.assert_array_equal(vm["main"](False, x).numpy(), -x)


@I.ir_module
class Deep:
    @R.function
    def main(x: R.Tensor((64, 64), "float32")) -> R.Tensor((64, 64), "float32"):
        with R.dataflow():
            a = R.matmul(x, x)
            b = R.matmul(a, x)
            c = R.matmul(b, x)
            d = R.matmul(c, x)
            e = R.matmul(d, x)
            R.output(e)
        return e


def test_static_memory_plan_shares_storage_and_keeps_results():
    ex = relax.build(Deep, "llvm")
    plan = ex.stats["memory_plan"]["main"]
    assert plan["num_planned"] == 4
    assert plan["planned_bytes"] < plan["naive_bytes"]
    assert ex.as_text().count("alloc_storage") == plan["num_storages"] + 1  # + the output
    x = np.random.default_rng(2).standard_normal((64, 64)).astype("float32") * 0.1
    out = VirtualMachine(ex)["main"](x).numpy()
    ref = x.astype("float64")
    want = ref
    for _ in range(5):
        want = want @ ref
    np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-6)
    vm = VirtualMachine(ex)
    vm["main"](x)
    misses = vm.pool.stats["misses"]
    vm["main"](x)
    assert vm.pool.stats["misses"] == misses  # the second run allocates nothing new


def test_opt_level_zero_skips_fusion():
    from tvm.ir.transform import PassContext

    with PassContext(opt_level=0):
        ex = relax.build(Dense, "llvm")
    assert "fused_" not in ex.as_text()
    x = np.ones((4, 8), "float32")
    w = np.ones((8, 3), "float32")
    b = np.zeros(3, "float32")
    z, _ = VirtualMachine(ex)["main"](x, w, b)
    np.testing.assert_array_equal(z.numpy(), np.full((4, 3), 8.0))


def test_scalar_constant_keeps_rank_zero():
    """A 0-d constant stays 0-d through codegen, the VM and export (np.ascontiguousarray
    would have made it 1-d)."""
    pytest.importorskip("tvm.target.llvm")
    import numpy as np
    from tvm import relax, runtime
    from tvm.script import relax as R

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            y = R.add(x, R.const(1.5, "float32"))
            R.output(y)
        return y

    from tvm import ir

    ex = relax.build(ir.IRModule({"main": main}), target="llvm")
    vm = relax.VirtualMachine(ex, runtime.cpu())
    x = np.arange(4, dtype="float32")
    np.testing.assert_allclose(vm["main"](x).numpy(), x + 1.5)
