"""Print -> parse round trips: every module prints as TVMScript that parses back to a
structurally equal module, and printing the parsed module gives the same text."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax, te, tir
from tvm.ffi import assert_structural_equal
from tvm.ir import IRModule
from tvm.relax import op
from tvm.relax.transform import LegalizeOps
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


def roundtrip(mod: IRModule) -> str:
    text = mod.script()
    parsed = I.parse(text)
    assert_structural_equal(mod, parsed)
    assert parsed.script() == text
    return text


def roundtrip_func(func: relax.Function) -> str:
    text = func.script()
    parsed = R.parse(text)
    assert_structural_equal(func, parsed)
    assert parsed.script() == text
    return text


def f32(*shape):
    return relax.TensorStructInfo(list(shape), "float32")


# ---------------------------------------------------------------------------------------
# modules written in TVMScript


@I.ir_module
class Walkthrough:
    @R.function
    def main(a: R.Tensor((128, 256), "float32"), b: R.Tensor((256, 512), "float32"),
             bias: R.Tensor((512,), "float32")) -> R.Tensor((128, 512), "float32"):
        with R.dataflow():
            lv = R.matmul(a, b)
            out = R.add(lv, bias)
            R.output(out)
        return out


@I.ir_module
class Symbolic:
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32"), y: R.Tensor(ndim=1, dtype="float32"),
             z: R.Tensor(("n * 2",), "float32")):
        n = T.int64()
        m = T.int64()
        k = T.int64()
        with R.dataflow():
            a = R.match_cast(y, R.Tensor((k,), "float32"))
            b = R.reshape(x, (m, n))
            c = R.permute_dims(b)
            s = R.shape([n, k, m * 2 + 1])
            p = R.prim_value(n + k)
            R.output(a, c, s, p)
        return (a, c, s, p)


@I.ir_module
class Tuples:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"),
             t: R.Tuple(R.Tensor((2, 3), "float32"), R.Tuple(R.Object, R.Shape([2])))):
        a = (x, (x, x), R.tuple())
        b = a[1]
        c = b[0]
        d = t[1][1]
        e = R.tuple(x, d)[0]
        p = (R.prim_value(T.int32(5)), R.prim_value(T.float32(0.5)), R.prim_value(True),
             R.prim_value(T.uint8(7)), R.prim_value(-3))
        return (c, d, e, p)


@I.ir_module
class Branches:
    @R.function
    def main(flag: R.Prim("bool"), c: R.Tensor((), "bool"), x: R.Tensor(("n",), "float32")):
        n = T.int64()
        if flag:
            y = R.add(x, x)
            z: R.Tensor((n,), "float32") = R.multiply(y, x)
        else:
            z: R.Tensor((n,), "float32") = x
        if c:
            w = R.nn.relu(z)
        else:
            w = R.sigmoid(z)
        with R.dataflow():
            v = R.exp(w)
            R.output(v)
        return v


@I.ir_module
class Constants:
    @R.function
    def main(x: R.Tensor((64,), "float32")):
        a = R.const(1.5, "float32")
        b = R.const([[1, -2], [3, 4]], "int32")
        c = R.const([float("nan"), float("inf"), -0.0, 0.25], "float32")
        d = R.const(True, "bool")
        e = R.const(np.linspace(0, 1, 64, dtype="float32"))
        f = R.const(np.zeros((0, 3), "float16"))
        y = R.add(x, e)
        z = R.multiply(y, a)
        return (z, b, c, d, f)


@I.ir_module
class Calls:
    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        cls = Calls
        y = cls.double(x)
        z = cls.helper(y)
        return z

    @R.function
    def double(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        return R.add(x, x)

    @R.function(private=True)
    def helper(x: R.Tensor(("m",), "float32")) -> R.Tensor(("m",), "float32"):
        return R.exp(x)

    @R.function
    def countdown(x: R.Tensor((), "int64"), stop: R.Prim("bool")) -> R.Tensor((), "int64"):
        if stop:
            r = x
        else:
            y = R.subtract(x, R.const(1, "int64"))
            r = countdown(y, stop)  # noqa: F821
        return r

    @R.function
    def apply(f: R.Callable((R.Tensor((4,), "float32"),), R.Tensor((4,), "float32")),
              x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = f(x)
        return y


@I.ir_module
class CallTIR:
    I.module_attrs({"name": "call_tir", "version": 2})

    @T.prim_func(private=True)
    def split(a: T.handle, b: T.handle, c: T.handle, m: T.int64):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (m,), "float32")
        C = T.match_buffer(c, (n - m,), "float32")
        for i in range(m):
            with T.block("B"):
                vi = T.axis.spatial(m, i)
                B[vi] = A[vi]
        for i in range(n - m):
            with T.block("C"):
                vi = T.axis.spatial(n - m, i)
                C[vi] = A[vi + m]

    @R.function
    def main(x: R.Tensor(("n",), "float32"), s: R.Shape(["m"])):
        n = T.int64()
        m = T.int64()
        cls = CallTIR
        with R.dataflow():
            t = R.call_tir(cls.split, (x,), out_sinfo=[R.Tensor((m,), "float32"),
                                                       R.Tensor((n - m,), "float32")],
                           tir_vars=R.shape([m]))
            R.output(t)
        return t


@I.ir_module
class Packed:
    @R.function(pure=False)
    def main(x: R.Tensor((4,), "float32")):
        R.func_attr({"num_input": 1, "relax.force_pure": False})
        a = R.call_dps_packed("my.add_one", (x,), out_sinfo=R.Tensor((4,), "float32"))
        b = R.call_pure_packed("my.identity", a, x, sinfo_args=R.Tensor((4,), "float32"))
        c = R.call_packed("my.print", b, sinfo_args=R.Tuple())
        d = R.call_packed("my.pair", b, sinfo_args=(R.Tensor((4,), "float32"), R.Object))
        f = R.ExternFunc("my.fn")
        g = R.call_op("relax.add", a, b)
        h = R.call_op(f, a, attrs={"k": 1}, sinfo_args=R.Tensor((4,), "float32"))
        return (c, d, g, h)


@I.ir_module
class StructInfos:
    @R.function
    def main(a: R.Tensor, b: R.Tensor(dtype="int8"), c: R.Tensor(ndim=3),
             d: R.Shape, e: R.Shape(ndim=2), f: R.Object, g: R.Prim("float16"),
             h: R.Prim(value="k"), i: R.Prim("int32", value=3), j: R.Tuple,
             cb: R.Callable(ret=R.Object, purity=False)) -> R.Prim(value="k"):
        return h


@I.ir_module
class ShapeVars:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        s = R.shape_of(x)
        with R.dataflow():
            y = R.reshape(x, s)
            z = R.add(y, y)
            R.output(z)
        w = R.builtin.alloc_tensor(s, R.dtype("float32"), R.prim_value(0), R.str("global"))
        return (z, w)


@I.ir_module
class Blocks:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            a = R.add(x, x)
            b = R.multiply(a, a)
            R.output(a, b)
        c = R.subtract(b, a)
        with R.dataflow():
            d = R.exp(c)  # noqa: F841 - a binding nothing uses
            R.output()
        with R.dataflow():
            e = R.sqrt(b)
            f = R.negative(e)
            R.output(f)
        return f


@I.ir_module
class LocalFunctions:
    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        n = T.int64()

        @R.function
        def scale(y: R.Tensor((n,), "float32")) -> R.Tensor((n,), "float32"):
            z = R.multiply(y, x)  # x is captured
            return z

        @R.function(pure=False)
        def show(y: R.Tensor(("m",), "float32")):
            R.func_attr({"note": "local"})
            u = R.call_packed("my.print", y, sinfo_args=R.Tuple())  # noqa: F841
            return y

        r = scale(x)
        return r


@pytest.mark.parametrize("mod", [Walkthrough, Symbolic, Tuples, Branches, Constants, Calls,
                                 CallTIR, Packed, StructInfos, ShapeVars, Blocks,
                                 LocalFunctions],
                         ids=lambda m: m.get_global_vars()[0].name_hint)
def test_written_modules_roundtrip(mod: IRModule) -> None:
    roundtrip(mod)


def test_walkthrough_text() -> None:
    assert Walkthrough.script() == '''\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((128, 256), dtype="float32"), b: R.Tensor((256, 512), dtype="float32"), \
bias: R.Tensor((512,), dtype="float32")) -> R.Tensor((128, 512), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((128, 512), dtype="float32") = R.matmul(a, b, out_dtype="void")
            out: R.Tensor((128, 512), dtype="float32") = R.add(lv, bias)
            R.output(out)
        return out
'''


def test_constants_inline_and_metadata() -> None:
    text = roundtrip(Constants)
    assert 'R.const([[1, -2], [3, 4]], "int32")' in text
    assert 'R.const([float("nan"), float("inf"), -0.0, 0.25], "float32")' in text
    assert 'metadata["relax.expr.Constant"][0]' in text
    assert 'metadata["relax.expr.Constant"][1]' in text  # the empty array
    assert text.rstrip().endswith("# </metadata>")


# ---------------------------------------------------------------------------------------
# modules built by passes and the BlockBuilder


def test_legalized_walkthrough_roundtrip() -> None:
    text = roundtrip(LegalizeOps()(Walkthrough))
    assert "R.call_tir(cls.matmul, (a, b), out_sinfo=R.Tensor((128, 512), dtype=\"float32\"))" \
        in text
    assert "@T.prim_func(private=True)" in text and "cls = Module" in text


@I.ir_module
class ToLegalize:
    @R.function
    def main(x: R.Tensor(("n", 16), "float32"), w: R.Tensor((16, 8), "float32")):
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.nn.softmax(a, axis=-1)
            c = R.sum(b, axis=[1], keepdims=True)
            d = R.divide(b, c)
            R.output(d)
        return d


def test_legalized_symbolic_module_roundtrip() -> None:
    roundtrip(LegalizeOps()(ToLegalize))


def test_emit_te_with_symbolic_output_roundtrip() -> None:
    n = tir.Var("n", "int64")
    x = relax.Var("x", f32(n, 4))
    bb = relax.BlockBuilder()

    def repeat2(a):
        return te.compute((a.shape[0] * 2, a.shape[1]), lambda i, j: a[i // 2, j], name="rep")

    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_te(repeat2, x, primfunc_name_hint="repeat2")
            z = bb.emit(op.nn.relu(y))
            out = bb.emit_output(z)
        bb.emit_func_output(out)
    text = roundtrip(bb.get())
    assert "R.Tensor((n * 2, 4), dtype=\"float32\")" in text


def test_block_builder_module_with_if_and_match_cast() -> None:
    n = tir.Var("n", "int64")
    k = tir.Var("k", "int64")
    x = relax.Var("x", f32(n, 3))
    c = relax.Var("c", relax.PrimStructInfo("bool"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, c]):
        y = bb.emit(relax.If(c, op.add(x, x), op.multiply(x, x)))
        z = bb.match_cast(y, relax.TensorStructInfo([k, 3], "float32"))
        t = bb.emit(relax.Tuple([z, relax.ShapeExpr([k, n])]))
        bb.emit_func_output(t)
    roundtrip(bb.get())


def test_generic_call_forms_roundtrip() -> None:
    x = relax.Var("x", f32(4))
    gv = relax.GlobalVar("other")
    bb = relax.BlockBuilder()
    with bb.function("other", [relax.Var("a", f32(4))]):
        bb.emit_func_output(bb.emit(op.exp(bb._func_stack[-1].params[0])))
    mod = bb.get()
    gv = mod.get_global_var("other")
    body = relax.SeqExpr([relax.BindingBlock([
        relax.VarBinding(v1 := relax.Var("v1", f32(4)),
                         relax.Call(gv, [x], sinfo_args=[f32(4)])),
        relax.VarBinding(v2 := relax.Var("v2", f32(4)),
                         relax.Call(relax.Op.get("relax.add"), [v1, x], attrs={"note": "hi"})),
    ])], v2)
    mod = mod.with_function("main", relax.Function([x], body, f32(4), attrs={
        "global_symbol": "main"}))
    text = roundtrip(mod)
    assert "R.call_op(cls.other, x, sinfo_args=R.Tensor((4,), dtype=\"float32\"))" in text
    assert 'R.call_op("relax.add", v1, x, attrs={"note": "hi"})' in text


# ---------------------------------------------------------------------------------------
# every kind of operator call through its builder


_x4 = relax.Var("x", f32(1, 3, 8, 8))
_w = relax.Var("w", f32(4, 3, 3, 3))
_m = relax.Var("m", f32(4, 6))
_i = relax.Var("i", relax.TensorStructInfo([4], "int64"))
_c = relax.Var("c", relax.TensorStructInfo([4, 6], "bool"))
_OP_CASES = {
    "conv2d": lambda: op.nn.conv2d(_x4, _w, strides=(1, 1), padding=(1, 1)),
    "resize2d": lambda: op.image.resize2d(_x4, (16, 16)),
    "max_pool2d": lambda: op.nn.max_pool2d(_x4, pool_size=(2, 2), strides=(2, 2)),
    "sum": lambda: op.sum(_m, axis=[1], keepdims=True),
    "mean": lambda: op.mean(_m),
    "split": lambda: op.split(_m, 2, axis=1),
    "concat": lambda: op.concat([_m, _m], axis=0),
    "strided_slice": lambda: op.strided_slice(_m, axes=[1], begin=[0], end=[4]),
    "take": lambda: op.take(_m, _i, axis=1),
    "where": lambda: op.where(_c, _m, _m),
    "full": lambda: op.full((2, 3), relax.const(1.0, "float32")),
    "layer_norm": lambda: op.nn.layer_norm(_m, relax.const(np.ones(6, "float32")),
                                           relax.const(np.zeros(6, "float32")), axes=[-1]),
    "clip": lambda: op.clip(_m, 0.0, 6.0),
    "astype": lambda: op.astype(_m, "float16"),
    "topk": lambda: op.topk(_m, 2),
    "cumsum": lambda: op.cumsum(_m, axis=1),
    "pad": lambda: op.nn.pad(_x4, [0, 0, 0, 0, 1, 1, 1, 1]),
    "broadcast_to": lambda: op.broadcast_to(_i, (3, 4)),
    "arange": lambda: op.arange(0, 10, 1, "int64"),
    "shape_of": lambda: op.shape_of(_m),
}


@pytest.mark.parametrize("name", sorted(_OP_CASES))
def test_operator_calls_roundtrip(name: str) -> None:
    bb = relax.BlockBuilder()
    with bb.function("main", [_x4, _w, _m, _i, _c]):
        with bb.dataflow():
            out = bb.emit_output(_OP_CASES[name]())
        bb.emit_func_output(out)
    text = roundtrip(bb.get())
    assert "R.call_op" not in text


def test_standalone_function_roundtrip_with_metadata() -> None:
    x = relax.Var("x", f32(32))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(op.add(x, relax.const(np.arange(32, dtype="float32"))))
        bb.emit_func_output(y)
    text = roundtrip_func(bb.get()["main"])
    assert text.startswith("# from tvm.script import relax as R\n\n@R.function\n")
    assert "# <metadata" in text


def test_printed_module_runs_as_a_python_file(tmp_path) -> None:
    """The text is a Python program: with the imports uncommented, executing the file runs
    @I.ir_module on the class, which reads the metadata block back from the file."""
    import runpy

    text = roundtrip(Constants)
    header = "from tvm.script import ir as I\nfrom tvm.script import relax as R\n"
    path = tmp_path / "printed_module.py"
    path.write_text(header + text)
    namespace = runpy.run_path(str(path))
    assert_structural_equal(namespace["Module"], Constants)


def test_class_in_a_function_sees_local_names() -> None:
    k = tir.Var("k", "int64")
    table = relax.const(np.arange(4, dtype="float32"))

    @I.ir_module
    class Local:
        @R.function
        def main(x: R.Tensor((k,), "float32"), y: R.Tensor((4,), "float32")):
            z = R.add(y, table)
            return (x, z)

    main = Local["main"]
    assert main.params[0].struct_info.shape_values[0] is k
    assert main.body.blocks[0].bindings[0].value.args[1] is table
    roundtrip(Local)
