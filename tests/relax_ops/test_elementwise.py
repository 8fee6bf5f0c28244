"""Elementwise operators legalized and run on each target of the suite (conftest.py),
against numpy."""

import math

import numpy as np
import pytest
from relax_op_harness import run_op

from tvm import relax, tir
from tvm.relax import op

rng = np.random.default_rng(7)
n = tir.Var("n", "int64")
SHAPE = (2, 3, 4)


def _erf(x):
    return np.vectorize(math.erf)(x).astype(x.dtype)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


FLOAT_UNARY = {
    "exp": (np.exp, (-3, 3)),
    "log": (np.log, (0.1, 5)),
    "sqrt": (np.sqrt, (0, 5)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 5)),
    "sin": (np.sin, (-3, 3)),
    "cos": (np.cos, (-3, 3)),
    "tan": (np.tan, (-1, 1)),
    "tanh": (np.tanh, (-3, 3)),
    "asin": (np.arcsin, (-0.99, 0.99)),
    "acos": (np.arccos, (-0.99, 0.99)),
    "atan": (np.arctan, (-5, 5)),
    "sinh": (np.sinh, (-3, 3)),
    "cosh": (np.cosh, (-3, 3)),
    "asinh": (np.arcsinh, (-5, 5)),
    "acosh": (np.arccosh, (1, 5)),
    "atanh": (np.arctanh, (-0.99, 0.99)),
    "sigmoid": (_sigmoid, (-5, 5)),
    "erf": (_erf, (-2, 2)),
    "abs": (np.abs, (-3, 3)),
    "negative": (np.negative, (-3, 3)),
    "sign": (np.sign, (-3, 3)),
    "square": (np.square, (-3, 3)),
    "floor": (np.floor, (-3, 3)),
    "ceil": (np.ceil, (-3, 3)),
    "trunc": (np.trunc, (-3, 3)),
}


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_float_unary(name):
    ref, (lo, hi) = FLOAT_UNARY[name]
    x = rng.uniform(lo, hi, SHAPE).astype("float32")
    np.testing.assert_allclose(run_op(getattr(op, name), [x]), ref(x), rtol=1e-5, atol=1e-6)


def test_round_is_half_to_even_and_sign_of_zero():
    x = np.array([-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 2.6], "float32")
    np.testing.assert_array_equal(run_op(op.round, [x]), np.round(x))
    np.testing.assert_array_equal(run_op(op.sign, [x]), np.sign(x))


@pytest.mark.parametrize("name,ref", [
    ("abs", np.abs), ("negative", np.negative), ("sign", np.sign), ("square", np.square),
    ("bitwise_not", np.invert), ("floor", lambda x: x), ("round", lambda x: x),
])
def test_int_unary(name, ref):
    x = rng.integers(-50, 50, SHAPE).astype("int32")
    np.testing.assert_array_equal(run_op(getattr(op, name), [x]), ref(x))


def test_predicates_and_logical_not():
    x = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 3.0], "float32")
    for name, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
        np.testing.assert_array_equal(run_op(getattr(op, name), [x]), ref(x))
    b = np.array([True, False, True])
    np.testing.assert_array_equal(run_op(op.logical_not, [b]), ~b)
    i = np.array([0, 2, -1], "int32")
    np.testing.assert_array_equal(run_op(op.logical_not, [i]), i == 0)


@pytest.mark.parametrize("name,ref", [
    ("relu", lambda x: np.maximum(x, 0)),
    ("silu", lambda x: x * _sigmoid(x)),
    ("gelu", lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    ("gelu_tanh", lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
])
def test_activations(name, ref):
    x = rng.uniform(-4, 4, SHAPE).astype("float32")
    np.testing.assert_allclose(run_op(getattr(op.nn, name), [x]), ref(x), rtol=1e-5, atol=1e-6)


FLOAT_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "floor_divide": np.floor_divide, "mod": np.fmod, "floor_mod": np.mod, "power": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal,
    "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
    "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
def test_float_binary_broadcast(name):
    a = rng.uniform(0.5, 3, (2, 1, 4)).astype("float32")
    b = rng.uniform(0.5, 3, (3, 1)).astype("float32")
    b[0, 0] = a[0, 0, 0]  # one equal pair for the comparisons
    np.testing.assert_allclose(run_op(getattr(op, name), [a, b]), FLOAT_BINARY[name](a, b),
                               rtol=1e-5, atol=1e-6)


INT_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": lambda a, b: np.trunc(a / b).astype(a.dtype), "floor_divide": np.floor_divide,
    "mod": np.fmod, "floor_mod": np.mod, "power": lambda a, b: np.power(a, np.abs(b) % 4),
    "maximum": np.maximum, "minimum": np.minimum, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "left_shift": np.left_shift,
    "right_shift": np.right_shift, "less": np.less, "equal": np.equal,
}


@pytest.mark.parametrize("name", sorted(INT_BINARY))
def test_int_binary(name):
    a = rng.integers(-20, 20, (3, 4)).astype("int32")
    b = rng.integers(1, 6, (4,)).astype("int32") * np.array([1, -1, 1, -1], "int32")
    if name in ("left_shift", "right_shift"):
        b = np.abs(b)
    if name == "power":
        b = np.abs(b) % 4
    np.testing.assert_array_equal(run_op(getattr(op, name), [a, b]), INT_BINARY[name](a, b))


@pytest.mark.parametrize("name,ref", [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                                      ("logical_xor", np.logical_xor)])
def test_logical(name, ref):
    a = np.array([[True, False], [True, True]])
    b = np.array([False, True])
    np.testing.assert_array_equal(run_op(getattr(op, name), [a, b]), ref(a, b))
    i = np.array([0, 3, -1], "int32")
    np.testing.assert_array_equal(run_op(getattr(op, name), [i, i[::-1]]), ref(i, i[::-1]))


def test_binary_with_a_scalar_and_symbolic_shape():
    x = rng.random((5, 3)).astype("float32")
    out = run_op(lambda t: op.multiply(t, relax.PrimValue(tir.FloatImm("float32", 2.5))), [x],
                 shapes=[[n, 3]])
    np.testing.assert_allclose(out, x * 2.5, rtol=1e-6)
    y = rng.random((1, 3)).astype("float32")
    np.testing.assert_allclose(run_op(op.add, [x, y], shapes=[[n, 3], None]), x + y)


def test_where_clip_astype():
    c = rng.random((3, 1)) > 0.5
    a = rng.random((3, 4)).astype("float32")
    b = rng.random((4,)).astype("float32")
    np.testing.assert_array_equal(run_op(op.where, [c, a, b]), np.where(c, a, b))
    x = rng.uniform(-2, 2, (3, 4)).astype("float32")
    np.testing.assert_array_equal(run_op(lambda t: op.clip(t, -0.5, 1.0), [x]), np.clip(x, -0.5, 1.0))
    np.testing.assert_array_equal(run_op(lambda t: op.clip(t, max=0.0), [x]), np.minimum(x, 0.0))
    np.testing.assert_array_equal(run_op(lambda t: op.astype(t, "int32"), [x]), x.astype("int32"))
    np.testing.assert_array_equal(run_op(lambda t: op.astype(t, "bool"), [x]), x.astype("bool"))


def test_astype_to_float16():
    i = rng.integers(-5, 5, (4,)).astype("int64")
    np.testing.assert_array_equal(run_op(lambda t: op.astype(t, "float16"), [i]), i.astype("float16"))
