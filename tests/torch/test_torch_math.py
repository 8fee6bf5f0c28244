"""Math converters end to end against torch eager: promotion, NaN and signed zeros,
integer division, reductions with symbolic sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.export import Dim

from torch_testing import build, check, eager, export, run

NAN, INF = math.nan, math.inf


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _same_bits(model: torch.nn.Module, args: list) -> None:
    """Equal values, NaN where eager has NaN, and the same sign on every zero."""
    got, want = run(build(export(model, args)), args), eager(model, args)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        number = ~np.isnan(w)  # a NaN's sign bit is not specified
        np.testing.assert_array_equal(np.signbit(g[number]), np.signbit(w[number]))
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0, equal_nan=True)


SPECIAL = torch.tensor([NAN, -0.0, 0.0, 1.0, -2.5, INF, -INF, 7.0])
OTHER = torch.tensor([1.0, 0.0, -0.0, NAN, 3.0, -INF, 2.0, 7.0])


@pytest.mark.parametrize("fn", [
    torch.maximum, torch.minimum, torch.fmax, torch.fmin,
    lambda a, b: torch.clamp(a, min=b),
    lambda a, b: torch.where(a > b, a, b),
])
def test_binary_nan_and_signed_zero(fn):
    _same_bits(Fn(fn), [SPECIAL, OTHER])


@pytest.mark.parametrize("fn", [
    torch.relu, torch.neg, torch.abs, torch.sign,
    lambda x: torch.clamp(x, -1.0, 2.0), lambda x: torch.clamp(x, min=0.0),
    torch.nn.functional.relu6, torch.nn.functional.hardtanh,
    lambda x: torch.nn.functional.leaky_relu(x, 0.1),
    lambda x: torch.nan_to_num(x, nan=3.0),
    lambda x: x.amax(), lambda x: x.amin(), lambda x: torch.max(x), lambda x: x.sum(),
    torch.signbit, torch.isnan, torch.isinf, torch.isfinite,
])
def test_unary_nan_and_signed_zero(fn):
    _same_bits(Fn(fn), [SPECIAL])


def test_argmax_and_max_dim_pick_the_nan():
    x = torch.tensor([[1.0, NAN, 3.0, NAN], [2.0, 5.0, 5.0, -1.0]])
    check(Fn(lambda t: (t.argmax(1), t.argmin(1), *torch.max(t, 1), *torch.min(t, 1))), [x])


ints = torch.tensor([7, -7, 7, -7, 0, 5, -9])
divs = torch.tensor([2, 2, -2, -2, 3, 5, 4])


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_integer_division_rounding(mode):
    check(Fn(lambda a, b: torch.div(a, b, rounding_mode=mode)), [ints, divs])


@pytest.mark.parametrize("fn", [torch.remainder, torch.fmod, torch.floor_divide])
def test_integer_remainders_with_negatives(fn):
    check(Fn(fn), [ints, divs])


def test_float_floor_division_matches_python():
    a = torch.tensor([5.0, -5.0, 1.0, -1.0, 0.0, -0.0, 7.5, 3.0])
    b = torch.tensor([0.1, 0.1, -0.3, 0.0, -3.0, 2.0, -2.5, INF])
    _same_bits(Fn(lambda x, y: torch.div(x, y, rounding_mode="floor")), [a, b])
    _same_bits(Fn(torch.remainder), [a, b])


@pytest.mark.parametrize("fn, args", [
    (lambda x: x + 2.5, [torch.arange(5)]),
    (lambda x: x * 0.5, [torch.arange(5, dtype=torch.int32)]),
    (lambda x, y: x + y, [torch.arange(5, dtype=torch.int32), torch.tensor(2**40)]),
    (lambda x, y: x - y, [torch.arange(5, dtype=torch.uint8), torch.arange(5, dtype=torch.int8)]),
    (lambda x, y: x + y, [torch.tensor([True, False, True]), torch.tensor([True, False, False])]),
    (lambda x, y: x * y, [torch.tensor([True, False, True]), torch.tensor([True, True, False])]),
    (lambda x: x + 3, [torch.tensor([True, False])]),
    (lambda x: x / 3, [torch.arange(5)]),
    (lambda x: torch.exp(x), [torch.arange(5)]),
    (lambda x: x.sum(), [torch.tensor([True, True, False])]),
    (lambda x: torch.cumsum(x, 0), [torch.tensor([True, True, False])]),
    (lambda x: x.pow(2), [torch.arange(-3, 4)]),
    (lambda x: x ** 0.5, [torch.arange(0, 4)]),
    (lambda x: 2 ** x, [torch.arange(0, 4)]),
    (lambda x, y: torch.where(x > 0, x, y), [torch.randn(5), torch.arange(5)]),
    (lambda x: torch.clamp(x, 0.5, 2.5), [torch.arange(5)]),
    (lambda x, y: x & y, [torch.arange(8, dtype=torch.int16), torch.tensor(6)]),
    (lambda x, y: x << y, [torch.tensor([1, -3, 5, 1]), torch.tensor([1, 2, 64, 70])]),
    (lambda x, y: x >> y, [torch.tensor([-8, 8, -8, 3]), torch.tensor([1, 2, 64, 80])]),
    (lambda x, y: torch.logical_xor(x, y), [torch.tensor([0.0, NAN, 2.0]), torch.arange(3)]),
])
def test_type_promotion_matches_eager(fn, args):
    check(Fn(fn), args)


@pytest.mark.parametrize("fn", [
    lambda x: x.var(1, correction=0), lambda x: x.std(0), lambda x: torch.var_mean(x, 1),
    lambda x: torch.std_mean(x, (0, 1), keepdim=True), lambda x: x.mean(1, keepdim=True),
    lambda x: torch.logsumexp(x, 1), lambda x: torch.linalg.vector_norm(x, 3, dim=1),
    lambda x: torch.cumprod(x, 0), lambda x: x.prod(1), lambda x: x.argmax(),
])
def test_reductions_with_symbolic_batch(fn):
    batch = Dim("batch", min=2, max=16)
    check(Fn(fn), [torch.randn(4, 5)], dynamic_shapes={"xs": ({0: batch},)},
          more_args=[[torch.randn(2, 5)], [torch.randn(9, 5)]], rtol=1e-4)


def test_logsumexp_with_infinities():
    x = torch.tensor([[-INF, -INF], [INF, 1.0], [1.0, 2.0]])
    check(Fn(lambda t: torch.logsumexp(t, 1)), [x])


def test_logcumsumexp_is_stable():
    x = torch.tensor([[-1000.0, 0.0, -INF, INF, INF, 3.0], [1.0, 1.0, -INF, 2.0, NAN, 0.0]])
    check(Fn(lambda t: (torch.logcumsumexp(t, 1), torch.logcumsumexp(t, 0))), [x])


def test_var_with_too_few_elements_is_nan_or_inf():
    check(Fn(lambda t: (t.var(0), t.var(0, correction=2))), [torch.randn(1, 3)])


def test_matmul_family_alpha_beta():
    m, a, b = torch.randn(3, 5), torch.randn(3, 4), torch.randn(4, 5)
    m[0, 0] = NAN  # beta=0 ignores the input entirely
    check(Fn(lambda m, a, b: (torch.addmm(m, a, b, beta=0, alpha=2),
                              torch.addmm(m, a, b, beta=0.5, alpha=-1))), [m, a, b], rtol=1e-4)
    bm, b1, b2 = torch.randn(2, 3, 5), torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    check(Fn(lambda m, m2, x, y: (torch.baddbmm(m, x, y, beta=2, alpha=0.5),
                                  torch.addbmm(m2, x, y))), [bm, bm[0], b1, b2], rtol=1e-4)
    v, mat, vec = torch.randn(3), torch.randn(3, 4), torch.randn(4)
    check(Fn(lambda v, m, w: (torch.addmv(v, m, w, alpha=3), torch.mv(m, w), torch.dot(w, w),
                              torch.outer(v, w), torch.addr(m, v, w, beta=2))),
          [v, mat, vec], rtol=1e-4)


def test_linear_and_einsum_with_symbolic_batch():
    lin = torch.nn.Linear(6, 3)
    model = Fn(lambda x: torch.einsum("bi,bj->bij", lin(x), x).sum(-1))
    batch = Dim("batch", min=1, max=8)
    check(model, [torch.randn(4, 6)], dynamic_shapes={"xs": ({0: batch},)},
          more_args=[[torch.randn(1, 6)], [torch.randn(8, 6)]], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn", [
    torch.erfinv, torch.erfc, torch.expm1, torch.log1p,
    torch.exp2, torch.log2, torch.log10, torch.frac, torch.trunc,
    lambda x: torch.round(x, decimals=2), lambda x: torch.round(x, decimals=-1),
])
def test_unary_math(fn):
    x = torch.tensor([-0.999, -0.5, -1e-4, 0.0, 3e-5, 0.25, 0.7, 0.9999, 1.0, -1.0, 1.5])
    x = torch.cat([x, torch.linspace(-0.99, 0.99, 41)])
    check(Fn(fn), [x], rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("fn", [
    torch.nn.functional.elu, torch.nn.functional.selu, lambda x: torch.nn.functional.celu(x, 0.5),
    torch.nn.functional.mish, torch.nn.functional.hardswish, torch.nn.functional.hardsigmoid,
    lambda x: torch.nn.functional.softplus(x, beta=2, threshold=3),
    torch.nn.functional.softsign, torch.nn.functional.logsigmoid,
    lambda x: torch.nn.functional.threshold(x, 0.5, -3.0),
    lambda x: torch.nn.functional.glu(x, 0), torch.nn.functional.silu,
    lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
])
def test_activations(fn):
    check(Fn(fn), [torch.linspace(-25, 25, 64).reshape(8, 8)], rtol=1e-5, atol=1e-6)


def test_prelu_per_channel():
    prelu = torch.nn.PReLU(3, init=0.1)
    with torch.no_grad():
        prelu.weight.copy_(torch.tensor([0.1, -0.5, 2.0]))
    check(prelu, [torch.randn(2, 3, 4)])


def test_softmax_dtype_and_scalar():
    x = torch.randn(3, 4)
    check(Fn(lambda t, d, s: (torch.softmax(t, 1, dtype=torch.float64), torch.log_softmax(d, 0),
                              torch.softmax(s, 0), torch.log_softmax(t, -1))),
          [x, x.double(), torch.tensor(0.5)])
