"""Every operator's declared numpy semantics (``FNumpyEval``) agrees with its legalized TIR.

The test is parametrized over the registry: each op that declares an evaluator must have a
sample call below (a new evaluator without one fails ``test_every_evaluator_has_a_case``).
The legalized side is FoldConstant's compiled route (``evaluator="compile"``, which never falls
back to numpy), the other the numpy route; both fold the same call of constants.
"""

import numpy as np
import pytest
from graph_pass_testing import op_names, requires_host_jit

from tvm import relax
from tvm.ir.op import Op
from tvm.relax import op
from tvm.relax.op.special_bessel import POLYNOMIAL_OPS
from tvm.relax.transform import FoldConstant
from tvm.relax.transform.numpy_eval import evaluate_with_numpy, get_numpy_evaluator

rng = np.random.default_rng(2026)


def c(a):
    return relax.const(np.asarray(a))


def normal(*shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


def uniform(lo, hi, *shape):
    return rng.uniform(lo, hi, shape).astype("float32")


def ints(lo, hi, *shape, dtype="int32"):
    return rng.integers(lo, hi, shape).astype(dtype)


def nonzero_ints(*shape):
    v = ints(-9, 9, *shape)
    return np.where(v == 0, 3, v).astype("int32")


def bools(*shape):
    return rng.integers(0, 2, shape).astype(bool)


_UNARY_DOMAIN = {
    "log": lambda: uniform(0.1, 4, 3, 4), "sqrt": lambda: uniform(0.1, 4, 3, 4),
    "rsqrt": lambda: uniform(0.1, 4, 3, 4), "asin": lambda: uniform(-0.9, 0.9, 3, 4),
    "acos": lambda: uniform(-0.9, 0.9, 3, 4), "atanh": lambda: uniform(-0.9, 0.9, 3, 4),
    "acosh": lambda: uniform(1.1, 4, 3, 4), "bitwise_not": lambda: ints(-50, 50, 3, 4),
    "logical_not": lambda: bools(3, 4),
    "isnan": lambda: np.array([[0.5, np.nan, np.inf, -np.inf]], "float32"),
    "isinf": lambda: np.array([[0.5, np.nan, np.inf, -np.inf]], "float32"),
    "isfinite": lambda: np.array([[0.5, np.nan, np.inf, -np.inf]], "float32"),
}
_BINARY_INPUTS = {
    "divide": lambda: (ints(-20, 20, 3, 4), nonzero_ints(4)),
    "floor_divide": lambda: (ints(-20, 20, 3, 4), nonzero_ints(4)),
    "mod": lambda: (ints(-20, 20, 3, 4), nonzero_ints(4)),
    "floor_mod": lambda: (ints(-20, 20, 3, 4), nonzero_ints(4)),
    "power": lambda: (uniform(0.5, 2, 3, 4), uniform(-2, 2, 4)),
    "left_shift": lambda: (ints(0, 100, 3, 4), ints(0, 8, 4)),
    "right_shift": lambda: (ints(-100, 100, 3, 4), ints(0, 8, 4)),
}
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _BINARY_INPUTS[_name] = lambda: (ints(-100, 100, 3, 4), ints(-100, 100, 4))
for _name in ("logical_and", "logical_or", "logical_xor"):
    _BINARY_INPUTS[_name] = lambda: (bools(3, 4), bools(4))

_X4 = normal(1, 4, 6, 6)
_E8M0_IN = np.concatenate([normal(12) * 1e3, np.array(
    [0.0, -0.0, 1.0, 1.5, 1.75, 3.0, -6.0, 2.0**-127, 2.0**-130, np.inf, -np.inf, np.nan,
     3.0e38, np.finfo(np.float32).max, 1.25, 1.5 * 2.0**-127], "float32")])


def _case_table():
    from tvm.relax.op.binary import BINARY_OPS
    from tvm.relax.op.unary import NUMPY_UNARY

    cases = {}
    for name in NUMPY_UNARY:
        make = _UNARY_DOMAIN.get(name, lambda: normal(3, 4))
        cases[f"relax.{name}"] = lambda name=name, make=make: getattr(op, name)(c(make()))
    for name in BINARY_OPS:
        make = _BINARY_INPUTS.get(name, lambda: (normal(3, 4), normal(4)))
        cases[f"relax.{name}"] = lambda name=name, make=make: getattr(op, name)(
            *(c(v) for v in make()))
    cases.update({
        "relax.divide.float": lambda: op.divide(c(normal(3, 4)), c(uniform(0.5, 2, 4))),
        "relax.astype": lambda: op.astype(c(uniform(-100, 100, 3, 4)), "int32"),
        "relax.clip": lambda: op.clip(c(normal(3, 4)), -0.5, 0.7),
        "relax.where": lambda: op.where(c(bools(3, 4)), c(normal(3, 4)), c(normal(4))),
        "relax.matmul": lambda: op.matmul(c(normal(2, 3, 5)), c(normal(5, 4))),
        "relax.reshape": lambda: op.reshape(c(normal(2, 6)), [3, 4]),
        "relax.squeeze": lambda: op.squeeze(c(normal(3, 1, 4)), [1]),
        "relax.expand_dims": lambda: op.expand_dims(c(normal(3, 4)), [0, 2]),
        "relax.flatten": lambda: op.flatten(c(normal(2, 3, 4))),
        "relax.broadcast_to": lambda: op.broadcast_to(c(normal(1, 4)), [3, 4]),
        "relax.permute_dims": lambda: op.permute_dims(c(normal(2, 3, 4)), [2, 0, 1]),
        "relax.tile": lambda: op.tile(c(normal(2, 3)), [2, 1, 3]),
        "relax.concat": lambda: op.concat([c(normal(2, 3)), c(normal(1, 3))], axis=0),
        "relax.split": lambda: op.split(c(normal(6, 4)), [1, 4], axis=0),
        "relax.strided_slice": lambda: op.strided_slice(
            c(_X4), axes=[2, 3], begin=[1, 0], end=[5, 6], strides=[2, 3]),
        "relax.take": lambda: op.take(c(_X4), c(np.array([3, -1, 0], "int64")), axis=1),
        "relax.nn.softmax": lambda: op.nn.softmax(c(_X4), axis=1),
        "relax.nn.log_softmax": lambda: op.nn.log_softmax(c(_X4), axis=-1),
        "relax.nn.relu": lambda: op.nn.relu(c(normal(3, 4))),
        "relax.nn.silu": lambda: op.nn.silu(c(normal(3, 4))),
        "relax.nn.gelu": lambda: op.nn.gelu(c(normal(3, 4))),
        "relax.nn.gelu_tanh": lambda: op.nn.gelu_tanh(c(normal(3, 4))),
        "relax.nn.conv2d": lambda: op.nn.conv2d(c(normal(1, 2, 5, 5)), c(normal(4, 2, 3, 3)),
                                                padding=1, strides=2),
        "relax.nn.conv2d.nhwc": lambda: op.nn.conv2d(
            c(normal(1, 6, 6, 4)), c(normal(3, 3, 4, 2)), padding=1, strides=2,
            data_layout="NHWC", kernel_layout="HWIO"),
        "relax.nn.conv2d.groups": lambda: op.nn.conv2d(
            c(normal(1, 4, 5, 5)), c(normal(4, 2, 3, 3)), groups=2, dilation=2),
        "relax.nn.batch_norm": lambda: op.nn.batch_norm(
            c(_X4), *[c(uniform(0.5, 1.5, 4)) for _ in range(4)]),
        "relax.nn.max_pool2d": lambda: op.nn.max_pool2d(c(_X4), 3, 2, padding=1),
        "relax.nn.avg_pool2d": lambda: op.nn.avg_pool2d(c(_X4), 2, 2, padding=1,
                                                        count_include_pad=False),
        "relax.nn.avg_pool2d.include_pad": lambda: op.nn.avg_pool2d(
            c(_X4), 3, 1, padding=1, count_include_pad=True),
        "relax.nn.max_pool_with_indices": lambda: op.nn.max_pool_with_indices(
            c(ints(0, 4, 2, 3, 5, 6).astype("float32")), [3, 2], [2, 2], [1, 0, 1, 1],
            ceil_mode=True),
        "relax.nn.max_pool_with_indices.3d_col_major": lambda: op.nn.max_pool_with_indices(
            c(ints(-3, 3, 1, 2, 4, 5, 3, dtype="int8")), [2, 3, 2], [1, 2, 1], [0, 1, 1, 1, 1, 0],
            dilation=[2, 1, 1], storage_order=1),
        "relax.bitcast": lambda: op.bitcast(c(normal(3, 4)), "int32"),
        "relax.bitcast.to_float": lambda: op.bitcast(c(ints(0, 2**14, 3, 4, dtype="uint16")),
                                                     "float16"),
        "relax.cast_e8m0": lambda: op.cast_e8m0(c(_E8M0_IN), "up", True),
        "relax.cast_e8m0.down": lambda: op.cast_e8m0(c(_E8M0_IN), "down", False),
        "relax.cast_e8m0.nearest": lambda: op.cast_e8m0(c(_E8M0_IN), "nearest", True),
        "relax.cast_e8m0.nearest_nosat": lambda: op.cast_e8m0(c(_E8M0_IN), "nearest", False),
        "relax.nn.col2im": lambda: op.nn.col2im(
            c(normal(2, 2 * 6, 15)), [5, 6], [2, 3], dilations=[2, 1], pads=[1, 0, 1, 1],
            strides=[1, 2]),
        "relax.nn.col2im.3d": lambda: op.nn.col2im(
            c(normal(1, 3 * 2, 45)), [3, 4, 3], [1, 2, 1], strides=[2, 1, 2], pads=1),
        "relax.vision.deform_conv2d": lambda: op.vision.deform_conv2d(
            c(normal(1, 4, 5, 5)), c(uniform(-2, 2, 1, 2 * 2 * 9, 3, 3)),
            c(normal(4, 2, 3, 3)), c(uniform(0, 1, 1, 2 * 9, 3, 3)), strides=2, padding=1,
            groups=2, offset_groups=2),
        "relax.vision.deform_conv2d.nomask": lambda: op.vision.deform_conv2d(
            c(normal(2, 2, 4, 5)), c(uniform(-1.5, 1.5, 2, 2 * 4, 4, 3)),
            c(normal(3, 2, 2, 2)), padding=[1, 0, 0, 0], dilation=[1, 2]),
    })
    cases.update(_qnn_cases())
    from tvm.relax.op.special_bessel import SPECIAL_UNARY_OPS

    for name in SPECIAL_UNARY_OPS:
        cases[f"relax.{name}"] = lambda name=name: getattr(op, name)(c(uniform(-12, 12, 3, 4)))
    for name in POLYNOMIAL_OPS:
        cases[f"relax.{name}"] = lambda name=name: getattr(op, name)(
            c(uniform(-1.5, 1.5, 3, 4)), c(ints(-1, 12, 4).astype("float32")))
    for name in ("sum", "mean", "max", "min", "prod", "variance", "std"):
        cases[f"relax.{name}"] = lambda name=name: getattr(op, name)(
            c(uniform(0.5, 1.5, 2, 3, 4)), axis=[0, 2], keepdims=name == "mean")
    from tvm.relax.op.special import SPECIAL_BINARY, SPECIAL_UNARY

    for name in SPECIAL_UNARY:
        cases[f"relax.{name}"] = lambda name=name: getattr(op, name)(
            c(uniform(0.05, 0.95, 3, 4) if name == "ndtri" else uniform(-6, 6, 3, 4)))
    for name in SPECIAL_BINARY:
        cases[f"relax.{name}"] = lambda name=name: getattr(op, name)(
            c(uniform(1.5, 6, 3, 4)), c(uniform(0.5, 8, 4)))
    cases["relax.polygamma"] = lambda: op.polygamma(c(uniform(-6, 6, 3, 4)), 2)
    return cases


def _qnn_cases():
    """Quantized ops: int8/uint8 inputs, per-tensor and per-channel parameters."""
    qnn = op.qnn
    i8 = lambda *shape: ints(-128, 128, *shape, dtype="int8")  # noqa: E731
    u8 = lambda *shape: ints(0, 256, *shape, dtype="uint8")  # noqa: E731
    return {
        "relax.qnn.quantize": lambda: qnn.quantize(
            c(normal(2, 3, 4) * 20), [0.1, 0.25, 0.05], [1, -3, 0], axis=1),
        "relax.qnn.quantize.uint8": lambda: qnn.quantize(
            c(np.arange(-6, 6, dtype="float32").reshape(3, 4) * 0.5), 1.0, 128,
            out_dtype="uint8"),
        "relax.qnn.dequantize": lambda: qnn.dequantize(c(u8(3, 4)), [0.5, 0.1, 0.3, 0.2],
                                                       [128, 120, 0, 255], axis=-1),
        "relax.qnn.requantize": lambda: qnn.requantize(
            c(ints(-40000, 40000, 2, 3, 4)), [0.001, 0.0007, 0.0003], 0, 0.05, -2, axis=1),
        "relax.qnn.requantize.relu": lambda: qnn.requantize(
            c(i8(3, 4)),
            0.5, 3, 0.25, 128, out_dtype="uint8", out_min=128),
        "relax.qnn.conv2d": lambda: qnn.conv2d(
            c(u8(1, 4, 5, 5)), c(i8(6, 2, 3, 3)), 130, [0, 1, -2, 3, 0, 5], strides=2,
            padding=1, groups=2),
        "relax.qnn.conv2d.nhwc": lambda: qnn.conv2d(
            c(i8(1, 5, 5, 3)), c(i8(3, 3, 3, 4)), -5, 0, padding=(1, 0, 0, 1),
            data_layout="NHWC", kernel_layout="HWIO"),
        "relax.qnn.matmul": lambda: qnn.matmul(c(u8(2, 3, 7)), c(i8(7, 5)), 100,
                                               [1, 2, 3, 4, 5]),
        "relax.qnn.matmul.dense": lambda: qnn.dense(c(i8(3, 7)), c(i8(4, 7)), -3, 0),
        "relax.qnn.add": lambda: qnn.add(c(i8(3, 4)), c(u8(4)), 0.05, -3, 0.1, 128, 0.12, 5),
        "relax.qnn.multiply": lambda: qnn.multiply(c(u8(3, 4)), c(u8(3, 1)), 0.02, 100, 0.03,
                                                   120, 0.01, 128, out_dtype="uint8"),
        "relax.qnn.concat": lambda: qnn.concat([c(i8(2, 3)), c(i8(2, 2)), c(i8(2, 1))],
                                               [0.1, 0.2, 0.3], [0, 3, 1], 0.2, 3, axis=1),
    }


CASES = _case_table()
_RECURRENCES = set(POLYNOMIAL_OPS)


def _registered():
    return sorted(n for n in Op.list_ops("relax.") if get_numpy_evaluator(n) is not None)


# ops whose numpy reference another test checks (creation ops without tensor inputs are
# never folded)
_CHECKED_ELSEWHERE = {  # op -> the test comparing its kernel with the numpy reference
    "relax.random.uniform": "test_op_random.py", "relax.random.normal": "test_op_random.py",
    "relax.random.randint": "test_op_random.py",
    # storage views lowered to VM builtins, not kernels: the reference is checked on its own
    "relax.view_as_real": "test_op_complex.py", "relax.view_as_complex": "test_op_complex.py",
}


def test_every_evaluator_has_a_case():
    missing = [n for n in _registered() if n not in CASES and n not in _CHECKED_ELSEWHERE]
    assert not missing, f"add sample calls for the numpy evaluators of {missing}"


def _fold(call, evaluator):
    bb = relax.BlockBuilder()
    with bb.function("main", []):
        with bb.dataflow():
            gv = bb.emit_output(call)
        bb.emit_func_output(gv)
    out = FoldConstant(evaluator=evaluator)(bb.get())
    assert set(op_names(out)) <= {"Constant", "Tuple"}, (evaluator, op_names(out))
    body = out["main"].body
    value = body.blocks[0].bindings[-1].value if body.blocks and body.blocks[0].bindings \
        else body.body
    return _values(value)


def _values(expr):
    if isinstance(expr, relax.Tuple):
        return [_values(f) for f in expr.fields]
    assert isinstance(expr, relax.Constant), type(expr)
    return [expr.data]


@requires_host_jit
@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_semantics_agree_with_the_legalized_op(name):
    call = CASES[name]()
    ours = _fold(call, "numpy")
    legalized = _fold(call, "compile")
    assert len(_flat(ours)) == len(_flat(legalized))
    for a, b in zip(_flat(ours), _flat(legalized)):
        assert a.dtype == b.dtype and a.shape == b.shape
        a, b = a.astype("float64"), b.astype("float64")
        atol = 1e-5
        if name.removeprefix("relax.") in _RECURRENCES:
            # a three-term recurrence near a root cancels terms as large as the degree's
            # envelope (the column, one degree per column): float32 rounding, contracted into
            # FMAs or not, is relative to that envelope, not to the small result
            atol = np.maximum(atol, 16 * np.finfo(np.float32).eps
                              * np.nanmax(np.abs(b), axis=0, keepdims=True))
        close = np.isclose(a, b, rtol=1e-5, atol=0, equal_nan=True) | (np.abs(a - b) <= atol)
        assert close.all(), (name, a[~close], b[~close])


def _flat(values):
    out = []
    for v in values:
        out.extend(_flat(v) if isinstance(v, list) else [v])
    return out


def test_object_arrays_of_symbolic_values_evaluate():
    """Shape computations on values known up to symbolic dimensions (frontends' import-time
    folding) run through the same evaluators."""
    from tvm import tir

    n = tir.Var("n", "int64")
    shape = np.array([n, 4, 8], dtype=object)
    bb = relax.BlockBuilder()
    with bb.function("main", []):
        call = bb.normalize(op.concat([c(np.zeros(3, "int64")), c(np.zeros(2, "int64"))]))
        bb.emit_func_output(relax.const(0))
    value = evaluate_with_numpy(call, [(shape, np.array([2, 3], dtype=object))], symbolic=True)
    assert value.dtype == object and value[0] is n and list(value[1:]) == [4, 8, 2, 3]
