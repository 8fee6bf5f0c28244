"""Printing Relax as TVMScript: the text form of functions, modules, expressions and
StructInfo, ``show()``, ``repr`` and the name choices that keep the text parseable."""

from __future__ import annotations

from tvm import relax, tir
from tvm.ffi import assert_structural_equal
from tvm.ir import IRModule
from tvm.relax import op
from tvm.relax.transform import LegalizeOps
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


def f32(*shape):
    return relax.TensorStructInfo(list(shape), "float32")


@R.function
def walkthrough(a: R.Tensor((128, 256), "float32"), b: R.Tensor((256, 512), "float32"),
                bias: R.Tensor((512,), "float32")) -> R.Tensor((128, 512), "float32"):
    with R.dataflow():
        lv = R.matmul(a, b)
        out = R.add(lv, bias)
        R.output(out)
    return out


WALKTHROUGH = '''\
# from tvm.script import relax as R

@R.function
def walkthrough(a: R.Tensor((128, 256), dtype="float32"), b: R.Tensor((256, 512), \
dtype="float32"), bias: R.Tensor((512,), dtype="float32")) -> R.Tensor((128, 512), \
dtype="float32"):
    with R.dataflow():
        lv: R.Tensor((128, 512), dtype="float32") = R.matmul(a, b, out_dtype="void")
        out: R.Tensor((128, 512), dtype="float32") = R.add(lv, bias)
        R.output(out)
    return out
'''


def test_function_script_show_and_repr(capsys) -> None:
    assert walkthrough.script() == WALKTHROUGH
    walkthrough.show()
    assert capsys.readouterr().out == WALKTHROUGH
    assert repr(walkthrough) == WALKTHROUGH
    assert walkthrough.script(name="other").splitlines()[3].startswith("def other(")


def walkthrough_module() -> IRModule:
    return IRModule({"main": walkthrough.with_attr("global_symbol", "main")})


def test_legalized_module_prints_call_tir_and_prim_funcs(capsys) -> None:
    mod = LegalizeOps()(walkthrough_module())
    text = mod.script()
    lines = text.splitlines()
    assert lines[:3] == ["# from tvm.script import ir as I", "# from tvm.script import relax as R",
                         "# from tvm.script import tir as T"]
    assert "class Module:" in lines
    assert "        cls = Module" in lines
    assert ('            lv: R.Tensor((128, 512), dtype="float32") = R.call_tir(cls.matmul, '
            '(a, b), out_sinfo=R.Tensor((128, 512), dtype="float32"))') in lines
    assert "    @T.prim_func(private=True)" in lines
    mod.show()
    assert capsys.readouterr().out == text
    assert repr(mod) == text


def test_module_class_name_is_used_by_cls() -> None:
    mod = LegalizeOps()(walkthrough_module())
    text = mod.script(name="MyModel")
    assert "class MyModel:" in text and "cls = MyModel" in text
    assert_structural_equal(I.parse(text), mod)


def test_module_without_relax_prints_as_before() -> None:
    @T.prim_func
    def copy(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in range(4):
            b[i] = a[i]

    mod = IRModule({"copy": copy}, {"name": "tir_only"})
    text = mod.script()
    assert text.startswith("# from tvm.script import ir as I\n# from tvm.script import tir as T\n")
    assert "R." not in text
    assert_structural_equal(I.parse(text), mod)


def test_module_attrs_and_function_attrs() -> None:
    x = relax.Var("x", f32(2))
    func = relax.Function([x], relax.SeqExpr([], x), f32(2),
                          attrs={"global_symbol": "main", "num_input": 1, "opt": [1.5, "a"]})
    mod = IRModule({"main": func}, {"name": "demo", "version": 3})
    text = mod.script()
    assert '    I.module_attrs({"name": "demo", "version": 3})' in text
    assert '        R.func_attr({"num_input": 1, "opt": [1.5, "a"]})' in text
    assert_structural_equal(I.parse(text), mod)
    # a lone function whose symbol differs from its printed name keeps it as an attribute
    entry = func.with_attr("global_symbol", "entry")
    text = entry.script(name="main")
    assert 'R.func_attr({"global_symbol": "entry", "num_input": 1' in text
    assert_structural_equal(R.parse(text), entry)


def test_names_are_unique_and_avoid_reserved_words() -> None:
    a = relax.Var("x", f32(2))
    b = relax.Var("x", f32(2))
    r = relax.Var("R", f32(2))
    n1 = tir.Var("n", "int64")
    n2 = tir.Var("n", "int64")
    p = relax.Var("p", f32(n1))
    q = relax.Var("q", f32(n2))
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b, r, p, q]):
        y = bb.emit(op.add(a, b), "x")
        z = bb.emit(op.add(p, p), "cls")
        w = bb.emit(op.add(q, q), "T")
        bb.emit_func_output((y, r, z, w))
    func = bb.get()["main"]
    text = func.script()
    assert 'def main(x: R.Tensor((2,), dtype="float32"), x_1: R.Tensor((2,), dtype="float32"), ' \
        'R_1: R.Tensor((2,), dtype="float32"), p: R.Tensor(("n",), dtype="float32"), ' \
        'q: R.Tensor(("n_1",), dtype="float32"))' in text
    assert "    x_2: R.Tensor((2,), dtype=\"float32\") = R.add(x, x_1)" in text
    assert "    n = T.int64()\n    n_1 = T.int64()\n" in text
    assert "cls_1: R.Tensor((n,)" in text and "T_1: R.Tensor((n_1,)" in text
    assert_structural_equal(R.parse(text), func)


def test_struct_info_and_expression_repr() -> None:
    n = tir.Var("n", "int64")
    assert repr(relax.TensorStructInfo([n, 4], "float16")) == 'R.Tensor((n, 4), dtype="float16")'
    assert repr(relax.TensorStructInfo(ndim=2, dtype=None)) == "R.Tensor(ndim=2)"
    assert repr(relax.TupleStructInfo([relax.ObjectStructInfo(), relax.ShapeStructInfo([n])])) \
        == "R.Tuple(R.Object, R.Shape([n]))"
    assert repr(relax.PrimStructInfo(value=n * 2)) == "R.Prim(value=n * 2)"
    assert repr(relax.FuncStructInfo([f32(2)], f32(2))) == \
        'R.Callable((R.Tensor((2,), dtype="float32"),), R.Tensor((2,), dtype="float32"))'
    x = relax.Var("x", f32(2))
    assert repr(op.nn.softmax(x, axis=0)) == "R.nn.softmax(x, axis=0)"
    assert repr(relax.ShapeExpr([n, 3])) == "R.shape([n, 3])"
    assert repr(relax.Tuple([x, relax.PrimValue(1)])) == "(x, R.prim_value(1))"


def test_symbolic_expressions_print_without_python_folding() -> None:
    n = tir.Var("n", "int64")
    one = tir.IntImm("int64", 1)
    x = relax.Var("x", relax.TensorStructInfo([n, tir.Add(one, tir.IntImm("int64", 2))],
                                              "float32"))
    func = relax.Function([x], relax.SeqExpr([], x), attrs={"global_symbol": "main"})
    text = func.script()
    assert 'R.Tensor(("n", T.int64(1) + T.int64(2)), dtype="float32")' in text
    assert_structural_equal(R.parse(text), func)


def test_general_call_form_for_unprintable_attrs() -> None:
    x = relax.Var("x", f32(4))
    call = relax.Call(relax.Op.get("relax.nn.softmax"), [x],
                      relax.op.nn.SoftmaxAttrs(axis=0), sinfo_args=[f32(4)])
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(call)
        bb.emit_func_output(y)
    text = bb.get()["main"].script()
    assert ('R.call_op("relax.nn.softmax", x, attrs=R.attrs("relax.attrs.SoftmaxAttrs", '
            'axis=0), sinfo_args=R.Tensor((4,), dtype="float32"))') in text
    assert_structural_equal(R.parse(text), bb.get()["main"])


def test_unfolded_constant_chain_in_a_shape_round_trips() -> None:
    # (1 * 2) * 6 in int64: the inner product prints with typed constants (Python would
    # fold bare ones), also when it is the start of a longer printed chain
    dim = tir.Mul(tir.Mul(tir.IntImm("int64", 1), tir.IntImm("int64", 2)),
                  tir.IntImm("int64", 6))
    x = relax.Var("x", relax.TensorStructInfo([dim, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(x)
    mod = bb.get()
    text = mod.script()
    assert "T.int64(1) * T.int64(2)" in text or "T.Mul(" in text, text
    assert_structural_equal(R.parse(text), mod)
