"""Property: random small Relax modules built with the BlockBuilder print as TVMScript that
parses back to a structurally equal module, and the text is a fixed point."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm import relax, tir
from tvm.ffi import assert_structural_equal
from tvm.ir import IRModule
from tvm.relax import op
from tvm.script import ir as I
from tvm.script import relax as R

UNARY = [op.nn.relu, op.exp, op.negative, op.sigmoid, op.tanh, op.abs, op.nn.silu]
BINARY = [op.add, op.subtract, op.multiply, op.maximum, op.minimum]


@st.composite
def relax_modules(draw: st.DrawFn) -> IRModule:  # noqa: C901
    n = tir.Var("n", "int64")
    m = tir.Var("m", "int64")
    shape = draw(st.sampled_from([[2, 3], [n, 3], [n, m], [4], [n], [1, n, 2]]))
    dtype = draw(st.sampled_from(["float32", "float16"]))
    sinfo = relax.TensorStructInfo(shape, dtype)
    n_params = draw(st.integers(1, 3))
    params = [relax.Var(f"p{i}", sinfo) for i in range(n_params)]
    flag = relax.Var("flag", relax.PrimStructInfo("bool"))
    use_if = draw(st.booleans())
    use_helper = draw(st.booleans())
    all_params = params + ([flag] if use_if else [])
    bb = relax.BlockBuilder()

    if use_helper:  # a second function called from main, with its own symbolic variables
        own = {id(n): tir.Var("n", "int64"), id(m): tir.Var("m", "int64")}
        hx = relax.Var("x", relax.TensorStructInfo([own.get(id(d), d) for d in shape], dtype))
        with bb.function("helper", [hx], private=draw(st.booleans())):
            bb.emit_func_output(bb.emit(UNARY[draw(st.integers(0, len(UNARY) - 1))](hx)))

    steps = draw(st.lists(st.integers(0, 9), min_size=1, max_size=8))
    dataflow = draw(st.booleans())
    with bb.function("main", all_params):
        pool = list(params)   # values with the parameters' StructInfo
        side: list = []       # other values returned at the end

        def pick() -> relax.Var:
            return pool[draw(st.integers(0, len(pool) - 1))]

        def emit_steps() -> None:
            for step in steps:
                if step <= 2:
                    fn = UNARY[draw(st.integers(0, len(UNARY) - 1))]
                    pool.append(bb.emit(fn(pick())))
                elif step <= 4:
                    fn = BINARY[draw(st.integers(0, len(BINARY) - 1))]
                    pool.append(bb.emit(fn(pick(), pick())))
                elif step == 5:
                    scalar = relax.const(draw(st.floats(-4, 4, width=16)), dtype)
                    pool.append(bb.emit(op.multiply(pick(), scalar)))
                elif step == 6:
                    t = bb.emit(relax.Tuple([pick(), pick()]))
                    pool.append(bb.emit(relax.TupleGetItem(t, draw(st.integers(0, 1)))))
                elif step == 7:
                    side.append(bb.emit(op.sum(pick(), axis=[0], keepdims=draw(st.booleans()))))
                elif step == 8 and all(isinstance(d, int) for d in shape):
                    size = int(np.prod(shape))
                    data = np.arange(size, dtype=dtype).reshape(shape) / 7
                    pool.append(bb.emit(op.add(pick(), relax.const(data.astype(dtype)))))
                elif step == 9:  # new symbolic variables defined by a match_cast
                    dims = [tir.Var(f"k{i}", "int64") for i in range(len(shape))]
                    cast = bb.match_cast(pick(), relax.TensorStructInfo(dims, dtype))
                    side.append(bb.emit(op.shape_of(cast)))

        if dataflow:
            with bb.dataflow():
                emit_steps()
                outs = [bb.emit_output(pool[-1])] + [bb.emit_output(v) for v in side]
        else:
            emit_steps()
            outs = [pool[-1]] + side
        result = outs[0]
        if use_if:
            result = bb.emit(relax.If(flag, op.add(result, result), op.nn.relu(result)))
        if use_helper:
            result = bb.emit(relax.Call(bb.get().get_global_var("helper"), [result]))
        bb.emit_func_output(relax.Tuple([result, *outs[1:]]) if len(outs) > 1 else result)
    return bb.get()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(relax_modules())
def test_random_modules_roundtrip(mod) -> None:
    text = mod.script()
    parsed = I.parse(text)
    assert_structural_equal(mod, parsed)
    assert parsed.script() == text


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(relax_modules())
def test_random_functions_roundtrip_alone(mod) -> None:
    func = mod["main"]
    if any(isinstance(f, relax.Function) and name.name_hint != "main"
           for name, f in mod.functions.items()):
        func = mod["helper"]  # main calls it: only the callee is printable alone
    text = func.script()
    assert_structural_equal(R.parse(text), func)
