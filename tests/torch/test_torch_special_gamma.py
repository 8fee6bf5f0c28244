"""Gamma-family converters end to end against torch: lgamma, digamma, polygamma, zeta,
igamma/igammac, erfcx, ndtri, log_ndtr, mvlgamma, nextafter and frexp, on random values and
on the edges (poles, zeros of both signs, inf, NaN, subnormals).

The float32 results are compared with torch's float64 values rounded to float32 (eager
float32 loses digits near the poles, where these kernels reduce the argument exactly)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from torch_testing import build, export, run

NAN, INF = math.nan, math.inf


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _compare(fn, args, rtol=1e-4, atol=1e-5):
    """Our build of ``fn`` on ``args`` against torch's float64 evaluation."""
    got = run(build(export(Fn(fn), args)), args)
    with torch.no_grad():
        want = fn(*[a.double() if a.is_floating_point() else a for a in args])
    want = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(got, want):
        w = w.to(args[0].dtype).numpy() if w.is_floating_point() else w.numpy()
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


_rng = np.random.default_rng(0)
EDGES = [0.0, -0.0, 1.0, 2.0, -1.0, -3.0, -2.5, 0.5, 1e-30, 1e10, -1e10, INF, -INF, NAN,
         1.4616321, 30.0, 171.5]


def _values(lo=-9.0, hi=9.0, n=200, dtype=torch.float32):
    vals = np.concatenate([_rng.uniform(lo, hi, n), _rng.uniform(0, 60, n // 4), EDGES])
    return torch.tensor(vals, dtype=dtype)


def _unary_all(x):
    return (torch.lgamma(x), torch.digamma(x), torch.special.erfcx(x), torch.polygamma(0, x),
            torch.polygamma(2, x), torch.special.polygamma(3, x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_unary(dtype):
    x = torch.cat([_values(dtype=dtype), torch.tensor([-30.0, 1e20, 3.0, 26.0], dtype=dtype)])
    _compare(_unary_all, [x])


def test_trigamma():
    """torch's trigamma is finite (sin(pi x) rounded) at the poles; there it is inf here."""
    x = _values()
    pole = (x <= 0) & (x == x.floor()) & x.isfinite()
    got = run(build(export(Fn(lambda t: torch.polygamma(1, t)), [x])), [x])[0]
    assert np.isposinf(got[pole.numpy()]).all()
    x = x[~pole]
    _compare(lambda t: torch.polygamma(1, t), [x])


def test_ndtri_and_log_ndtr():
    p = torch.tensor(np.concatenate([_rng.uniform(0, 1, 200), [0, 1, -0.1, 1.1, 0.5, 1e-30,
                                                              1e-5, 0.99999, NAN]]),
                     dtype=torch.float32)
    _compare(torch.special.ndtri, [p])
    _compare(torch.special.log_ndtr, [_values()])


def test_mvlgamma():
    x = torch.tensor(_rng.uniform(2.0, 9.0, (4, 5)), dtype=torch.float32)
    _compare(lambda t: torch.mvlgamma(t, 3), [x])


def test_zeta():
    s = np.concatenate([_rng.uniform(1.0, 8.0, 150), np.round(_rng.uniform(1, 6, 50)),
                        [1, 0.5, 2, 2, 2.5, 3, NAN, 2]])
    q = np.concatenate([_rng.uniform(0.0, 20.0, 150), _rng.uniform(-5.5, 3.0, 50),
                        [1, 1, -2, -2.5, -2.5, -3.5, 1, NAN]])
    _compare(torch.special.zeta, [torch.tensor(s, dtype=torch.float32),
                                  torch.tensor(q, dtype=torch.float32)])
    _compare(lambda x: torch.special.zeta(x, 2.0), [torch.tensor([1.5, 2.0, 4.0, 0.5])])


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac])
def test_incomplete_gamma(fn):
    a = np.concatenate([_rng.uniform(0, 2, 60), _rng.uniform(0, 80, 140),
                        [0, 0, 1, 1, -1, 1, INF, 2, 1, NAN]])
    x = np.concatenate([_rng.uniform(0, 4, 60), _rng.uniform(0, 100, 140),
                        [1, 0, 0, INF, 1, -1, 1, INF, NAN, 1]])
    _compare(fn, [torch.tensor(a, dtype=torch.float32), torch.tensor(x, dtype=torch.float32)])


def test_nextafter():
    a = torch.tensor([0.0, -0.0, 1.0, 1.0, -2.5, INF, -INF, NAN, 1.0, 3.4028235e38, 1e-45])
    b = torch.tensor([1.0, -1.0, 2.0, 0.0, -2.5, 0.0, 0.0, 1.0, NAN, INF, 0.0])
    got = run(build(export(Fn(torch.nextafter), [a, b])), [a, b])[0]
    np.testing.assert_array_equal(got, torch.nextafter(a, b).numpy())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_frexp(dtype):
    x = torch.tensor([0.0, -0.0, 1.0, -3.0, 0.75, 1e-40, -1e-310, 6e-8, 65504.0, 1e30,
                      INF, -INF, NAN, 123.456], dtype=torch.float64).to(dtype)
    got = run(build(export(Fn(torch.frexp), [x])), [x])
    want = torch.frexp(x)
    np.testing.assert_array_equal(got[0], want.mantissa.numpy())
    np.testing.assert_array_equal(got[1], want.exponent.numpy())
