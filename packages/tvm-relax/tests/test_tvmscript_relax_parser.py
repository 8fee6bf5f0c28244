"""Parsing Relax TVMScript: ``@R.function`` and ``@I.ir_module`` build the same IR as the
BlockBuilder, with StructInfo inferred for every binding."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax, tir
from tvm.ffi import assert_structural_equal
from tvm.ir import IRModule
from tvm.relax import (
    DataflowBlock, DataflowVar, Function, If, MatchCast, ObjectStructInfo, PrimStructInfo,
    ShapeStructInfo, TensorStructInfo, TupleStructInfo, Var,
)
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T

# A symbolic variable defined at module level, usable in any signature.
batch = tir.Var("batch", "int64")


@R.function
def walkthrough(a: R.Tensor((128, 256), "float32"), b: R.Tensor((256, 512), "float32"),
                bias: R.Tensor((512,), "float32")) -> R.Tensor((128, 512), "float32"):
    with R.dataflow():
        lv = R.matmul(a, b)
        out = R.add(lv, bias)
        R.output(out)
    return out


def test_walkthrough_equals_block_builder() -> None:
    a = Var("a", TensorStructInfo([128, 256], "float32"))
    b = Var("b", TensorStructInfo([256, 512], "float32"))
    bias = Var("bias", TensorStructInfo([512], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("walkthrough", [a, b, bias]):
        with bb.dataflow():
            lv = bb.emit(relax.op.matmul(a, b))
            out = bb.emit_output(relax.op.add(lv, bias))
        bb.emit_func_output(out)
    assert_structural_equal(walkthrough, bb.get()["walkthrough"])


def test_walkthrough_bindings_and_struct_info() -> None:
    func = walkthrough
    assert isinstance(func, Function)
    assert func.attrs["global_symbol"] == "walkthrough"
    (block,) = func.body.blocks
    assert isinstance(block, DataflowBlock)
    lv, out = (b.var for b in block.bindings)
    assert isinstance(lv, DataflowVar) and lv.name_hint == "lv"
    assert type(out) is Var and out.name_hint == "out"
    assert [v.value for v in lv.struct_info.shape_values] == [128, 512]
    assert func.body.body is out
    assert func.ret_struct_info.dtype == "float32"
    assert func.span is not None and func.span.line > 1


def test_symbolic_dims_from_signature_strings() -> None:
    @R.function
    def f(x: R.Tensor(("n", "m"), "float32"), y: R.Tensor(("m",), "float32")):
        n = T.int64()
        m = T.int64()
        z: R.Tensor((n, m), "float32") = R.add(x, y)
        return z

    n, m = f.params[0].struct_info.shape_values
    assert isinstance(n, tir.Var) and n.name == "n" and n.dtype == "int64"
    assert f.params[1].struct_info.shape_values[0] is m
    z = f.body.blocks[0].bindings[0].var
    assert z.struct_info.shape_values == (n, m)
    assert f.ret_struct_info.shape_values == (n, m)


def test_symbolic_expression_strings_and_module_level_var() -> None:
    @R.function
    def f(x: R.Tensor((batch, "n"), "float32"),
          y: R.Tensor((batch, "n * 2"), "float32")) -> R.Tensor((batch, "n * 2"), "float32"):
        return y

    b0, n = f.params[0].struct_info.shape_values
    assert b0 is batch
    b1, n2 = f.params[1].struct_info.shape_values
    assert b1 is batch and isinstance(n2, tir.Mul) and n2.a is n


def test_tensor_tuple_shape_object_prim_annotations() -> None:
    @R.function
    def f(a: R.Tensor(ndim=2, dtype="float16"), b: R.Tuple(R.Tensor((2,), "int32"), R.Object),
          c: R.Shape([3, "k"]), d: R.Shape(ndim=2), e: R.Object, g: R.Prim("int64"),
          h: R.Prim(value="k"), t: R.Tensor, s: R.Shape):
        return a

    sinfos = [p.struct_info for p in f.params]
    assert sinfos[0].ndim == 2 and sinfos[0].shape is None and sinfos[0].dtype == "float16"
    assert isinstance(sinfos[1], TupleStructInfo)
    assert isinstance(sinfos[1].fields[1], ObjectStructInfo)
    assert isinstance(sinfos[2], ShapeStructInfo) and sinfos[2].values[1].name == "k"
    assert sinfos[3].ndim == 2 and sinfos[3].values is None
    assert isinstance(sinfos[4], ObjectStructInfo)
    assert isinstance(sinfos[5], PrimStructInfo) and sinfos[5].value is None
    assert sinfos[6].value is sinfos[2].values[1]  # the same `k`
    assert sinfos[7].ndim == -1 and sinfos[7].is_unknown_dtype
    assert sinfos[8].ndim == -1


def test_match_cast_defines_symbolic_vars() -> None:
    @R.function
    def f(x: R.Tensor(ndim=1, dtype="float32")):
        m = T.int64()
        y = R.match_cast(x, R.Tensor((m,), "float32"))
        z = R.add(y, y)
        return z

    mc = f.body.blocks[0].bindings[0]
    assert isinstance(mc, MatchCast)
    (m,) = mc.struct_info.shape_values
    assert mc.var.struct_info.shape_values == (m,)
    # m is defined inside the function only: the return StructInfo forgets it
    assert f.ret_struct_info.ndim == 1 and f.ret_struct_info.shape is None


def test_constants_shape_prim_value_and_tuples() -> None:
    @R.function
    def f(x: R.Tensor((2, 3), "float32")):
        c = R.const(1.5, "float32")
        k = R.const([[1, 2, 3], [4, 5, 6]], "int32")
        big = R.const(np.arange(6, dtype="float32").reshape(2, 3))
        s = R.shape([2, 3])
        p = R.prim_value(7)
        t = (x, c, k)
        u = t[0]
        v = R.add(u, big)
        return (v, s, p, R.str("hi"), R.dtype("float16"))

    b = {bd.var.name_hint: bd.value for bd in f.body.blocks[0].bindings}
    assert b["c"].data.dtype == np.float32 and float(b["c"].data) == 1.5
    assert b["k"].data.tolist() == [[1, 2, 3], [4, 5, 6]] and b["k"].data.dtype == np.int32
    assert isinstance(b["s"], relax.ShapeExpr)
    assert b["p"].value.dtype == "int64" and b["p"].value.value == 7
    assert isinstance(b["t"], relax.Tuple) and isinstance(b["u"], relax.TupleGetItem)
    ret = f.ret_struct_info
    assert isinstance(ret, TupleStructInfo) and len(ret.fields) == 5


def test_if_else_builds_if_with_seq_branches() -> None:
    @R.function
    def f(c: R.Prim("bool"), x: R.Tensor((4,), "float32")):
        if c:
            y = R.add(x, x)
            z = R.multiply(y, y)
        else:
            z = R.nn.relu(x)
        return z

    binding = f.body.blocks[0].bindings[0]
    assert isinstance(binding.value, If) and binding.var.name_hint == "z"
    then, other = binding.value.true_branch, binding.value.false_branch
    assert isinstance(then, relax.SeqExpr) and isinstance(other, relax.SeqExpr)
    assert [b.var.name_hint for b in then.blocks[0].bindings] == ["y", "lv"]
    assert binding.var.struct_info.shape_values[0].value == 4


def test_if_on_tensor_condition_and_final_if_return() -> None:
    @R.function
    def f(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        if c:
            return R.add(x, x)
        else:
            return x

    binding = f.body.blocks[0].bindings[0]
    assert isinstance(binding.value, If)
    assert f.body.body is binding.var


def test_operators_keyword_attrs_and_namespaces() -> None:
    @R.function
    def f(x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32")):
        with R.dataflow():
            y = R.nn.conv2d(x, w, padding=(1, 1))
            z = R.nn.softmax(y, axis=1)
            r = R.image.resize2d(z, (16, 16))
            s = R.sum(r, axis=[2, 3])
            R.output(s)
        return s

    calls = [b.value for b in f.body.blocks[0].bindings]
    assert [c.op.name for c in calls] == ["relax.nn.conv2d", "relax.nn.softmax",
                                          "relax.image.resize2d", "relax.sum"]
    assert calls[1].attrs.axis == 1
    assert [v.value for v in f.ret_struct_info.shape_values] == [1, 4]


def test_new_operators_appear_without_parser_changes() -> None:
    from tvm.relax.op.base import make_call, register_op
    from tvm.relax.op._elementwise import infer_unary

    @register_op("relax.test_script.twice", inputs=("x",), infer=lambda c, ctx: infer_unary(c, ctx))
    def twice(x):
        return make_call("relax.test_script.twice", [x])

    @R.function
    def f(x: R.Tensor((4,), "float32")):
        y = R.test_script.twice(x)
        return y

    call = f.body.blocks[0].bindings[0].value
    assert call.op.name == "relax.test_script.twice"
    assert "test_script" in dir(R)


def test_nested_calls_are_normalised() -> None:
    @R.function
    def f(x: R.Tensor((4,), "float32")):
        y = R.add(R.multiply(x, x), x)
        return R.nn.relu(y)

    names = [b.var.name_hint for b in f.body.blocks[0].bindings]
    assert names == ["lv", "y", "lv1"]
    assert f.body.body is f.body.blocks[0].bindings[-1].var


def test_annotation_may_be_less_specific() -> None:
    @R.function
    def f(x: R.Tensor((4,), "float32")):
        y: R.Tensor(ndim=1) = R.add(x, x)
        z: R.Object = y
        return z

    y, z = (b.var for b in f.body.blocks[0].bindings)
    assert y.struct_info.shape is None and y.struct_info.is_unknown_dtype
    assert isinstance(z.struct_info, ObjectStructInfo)


def test_func_attr_private_and_impure() -> None:
    @R.function(private=True, pure=False)
    def f(x: R.Tensor((4,), "float32")):
        R.func_attr({"num_input": 1})
        y = R.call_packed("my.print", x, sinfo_args=R.Tuple())  # noqa: F841
        return x

    assert "global_symbol" not in f.attrs and f.attrs["num_input"] == 1
    assert not f.is_pure
    call = f.body.blocks[0].bindings[0].value
    assert isinstance(call.op, relax.ExternFunc) and call.op.global_symbol == "my.print"


def test_tuple_unpacking() -> None:
    @R.function
    def f(x: R.Tensor((4, 6), "float32")):
        a, b = R.split(x, 2, axis=1)
        return R.add(a, b)

    names = [bd.var.name_hint for bd in f.body.blocks[0].bindings]
    assert names[:3] == ["a_b", "a", "b"]
    assert [v.value for v in f.ret_struct_info.shape_values] == [4, 3]


def test_parse_text_bare_def() -> None:
    func = R.parse(
        "def main(x: R.Tensor((2,), 'float32')):\n"
        "    y = R.exp(x)\n"
        "    return y\n"
    )
    assert isinstance(func, Function) and func.attrs["global_symbol"] == "main"


# ---------------------------------------------------------------------------------------
# modules


@I.ir_module
class Legal:
    I.module_attrs({"name": "legal"})

    @T.prim_func(private=True)
    def add(x: T.Buffer((T.int64(4),), "float32"), y: T.Buffer((T.int64(4),), "float32"),
            z: T.Buffer((T.int64(4),), "float32")):
        for i in range(T.int64(4)):
            with T.block("z"):
                vi = T.axis.spatial(T.int64(4), i)
                z[vi] = x[vi] + y[vi]

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Legal
        with R.dataflow():
            a = R.call_tir(cls.add, (x, x), out_sinfo=R.Tensor((4,), "float32"))
            b = R.call_tir(add, (a, x), out_sinfo=R.Tensor((4,), "float32"))  # noqa: F821
            c = R.call_tir(Legal.add, (b, x), out_sinfo=R.Tensor((4,), "float32"))
            R.output(c)
        return c


def test_ir_module_with_prim_func_and_call_tir() -> None:
    assert isinstance(Legal, IRModule)
    assert Legal.attrs["name"] == "legal"
    gv = Legal.get_global_var("add")
    calls = [b.value for b in Legal["main"].body.blocks[0].bindings]
    for call in calls:
        assert call.op.name == "relax.call_tir"
        assert call.args[0].name_hint == "add"
    assert calls[0].args[0] is gv  # the module's own GlobalVar
    assert "global_symbol" not in Legal["add"].attrs


@I.ir_module
class Calls:
    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        y = cls.double(x)  # noqa: F821 - forward reference, return annotated
        z = helper(y)  # noqa: F821 - forward reference without annotation: parsed first
        return z

    @R.function
    def double(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        return R.add(x, x)

    @R.function(private=True)
    def helper(x: R.Tensor(("m",), "float32")):
        return R.exp(x)

    @R.function
    def countdown(x: R.Tensor((), "int64"), stop: R.Prim("bool")) -> R.Tensor((), "int64"):
        if stop:
            r = x
        else:
            y = R.subtract(x, R.const(1, "int64"))
            r = countdown(y, stop)  # noqa: F821
        return r


def test_calls_between_functions_forward_and_recursive() -> None:
    main = Calls["main"]
    y, z = (b.var for b in main.body.blocks[0].bindings)
    n = main.params[0].struct_info.shape_values[0]
    assert y.struct_info.shape_values == (n,)   # the callee's n bound to the caller's
    assert z.struct_info.shape_values == (n,)
    assert main.body.blocks[0].bindings[0].value.op is Calls.get_global_var("double")
    rec = Calls["countdown"].body.blocks[0].bindings[0].value
    assert isinstance(rec, If)
    assert "global_symbol" not in Calls["helper"].attrs


def test_module_parse_from_text_and_decorator_options() -> None:
    text = '''
@I.ir_module(check_well_formed=False)
class Mod:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        return x
'''
    mod = I.parse(text)
    assert isinstance(mod, IRModule) and list(mod.functions)[0].name_hint == "main"
    assert isinstance(R.parse(text), IRModule)


def test_metadata_reference_with_env() -> None:
    data = relax.const(np.arange(40, dtype="float32"))
    func = R.parse(
        "@R.function\n"
        "def main(x: R.Tensor((40,), 'float32')):\n"
        "    y = R.add(x, metadata['relax.expr.Constant'][0])\n"
        "    return y\n",
        env={"metadata": {"relax.expr.Constant": [data]}},
    )
    assert func.body.blocks[0].bindings[0].value.args[1] is data


def test_builder_functions_usable_outside_scripts() -> None:
    sinfo = R.Tensor(("n", 4), "float32")
    assert isinstance(sinfo, TensorStructInfo) and sinfo.shape_values[0].name == "n"
    assert R.Shape(ndim=3).ndim == 3
    assert isinstance(R.const(1, "int8"), relax.Constant)
    with pytest.raises(RuntimeError, match="inside an @R.function"):
        with R.dataflow():
            pass
