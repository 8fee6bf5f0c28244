"""Random converters end to end: the dtype and shape torch gives, and the distributions'
moments and ranges checked on large samples with fixed tolerances (the values cannot equal
torch's: the compiled program draws from its own Philox generator); fresh numbers per run,
reproducible runs after tvm.runtime.vm.manual_seed; the dropout family's masks and scales,
training-mode rrelu and attention dropout."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.export import Dim

from torch_testing import build, eager, export, run
from tvm.relax.frontend.torch import OpNotSupported

from tvm.runtime.vm import manual_seed

N = 40_000  # samples per moment check: the standard error of a mean is ~0.5% of sigma


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _draw(fn, args, runs: int = 1):
    """Build ``fn`` once and return its outputs for ``runs`` runs (and eager's for dtypes)."""
    model = Fn(fn)
    vm = build(export(model, args))
    want = eager(model, args)
    outs = [run(vm, args) for _ in range(runs)]
    for got in outs:
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
    return outs


def _moments(x: np.ndarray, mean: float, std: float, tol: float = 0.03) -> None:
    x = x.astype(np.float64)
    assert abs(x.mean() - mean) < tol * std, (x.mean(), mean)
    assert abs(x.std() - std) < tol * std, (x.std(), std)


X = torch.zeros(N)


def test_rand_randn_moments_fresh_and_reproducible():
    def fn(x):
        return (torch.rand(x.shape[0], 2), torch.randn_like(x, dtype=torch.float64),
                torch.rand_like(x, dtype=torch.float16))
    (u, z, h), (u2, _, _) = _draw(fn, [X], runs=2)
    assert u.min() >= 0 and u.max() < 1 and h.min() >= 0 and h.max() < 1
    _moments(u, 0.5, math.sqrt(1 / 12))
    _moments(h, 0.5, math.sqrt(1 / 12))
    _moments(z, 0.0, 1.0)
    assert abs(np.mean(z ** 4) - 3) < 0.15
    assert not np.array_equal(u, u2)
    assert not np.array_equal(u[:, 0], u[:, 1])
    vm = build(export(Fn(fn), [X]))
    manual_seed(7)
    a = run(vm, [X])
    manual_seed(7)
    b = run(vm, [X])
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p, q)


def test_randint_ranges_and_dtypes():
    def fn(x):
        return (torch.randint(10, (x.shape[0],)), torch.randint(-3, 4, (N,), dtype=torch.int8),
                torch.randint_like(x, 2, 5), torch.randint(0, 2**40, (N,)))
    ((a, b, c, d),) = _draw(fn, [X])
    assert set(np.unique(a)) == set(range(10)) and set(np.unique(b)) == set(range(-3, 4))
    assert c.dtype == np.float32 and set(np.unique(c)) == {2.0, 3.0, 4.0}
    _moments(a, 4.5, math.sqrt(99 / 12))
    _moments(d / 2.0**40, 0.5, math.sqrt(1 / 12))


def test_randn_symbolic_size():
    model = Fn(lambda x: torch.randn(x.shape[0], 3) + x[:, None])
    vm = build(export(model, [torch.zeros(8)], dynamic_shapes=(({0: Dim("n")},),)))
    out = run(vm, [torch.zeros(N)])[0]
    assert out.shape == (N, 3)
    _moments(out, 0.0, 1.0)


def test_uniform_normal_overloads():
    mean = torch.linspace(-5, 5, N)
    std = torch.full((N,), 2.0)
    def fn(m, s):
        return (torch.empty_like(m).uniform_(-2, 6), torch.normal(m, s) - m,
                torch.normal(3.0, s) - 3.0, torch.normal(m, 0.5) - m,
                torch.normal(1.0, 4.0, (N,)), torch.empty_like(m).normal_(-1, 0.25))
    ((u, a, b, c, d, e),) = _draw(fn, [mean, std])
    assert u.min() >= -2 and u.max() < 6
    _moments(u, 2.0, 8 / math.sqrt(12))
    _moments(a, 0.0, 2.0)
    _moments(b, 0.0, 2.0)
    _moments(c, 0.0, 0.5)
    _moments(d, 1.0, 4.0)
    _moments(e, -1.0, 0.25)


def test_exponential_cauchy_log_normal_geometric():
    def fn(x):
        return (x.clone().exponential_(2.0), x.clone().cauchy_(1.0, 3.0),
                x.clone().log_normal_(0.5, 0.75), x.clone().geometric_(0.25),
                x.double().exponential_())
    ((e, c, ln, g, e64),) = _draw(fn, [X])
    assert e.min() >= 0 and np.isfinite(e).all()
    _moments(e, 0.5, 0.5)
    _moments(e64, 1.0, 1.0)
    q25, q50, q75 = np.quantile(c, [0.25, 0.5, 0.75])  # median 1, quartiles 1 -+ 3
    assert abs(q50 - 1) < 0.1 and abs(q25 + 2) < 0.15 and abs(q75 - 4) < 0.15
    assert ln.min() > 0
    _moments(np.log(ln), 0.5, 0.75)
    assert g.min() == 1 and np.all(g == np.round(g))
    _moments(g, 4.0, math.sqrt(0.75) / 0.25)


def test_bernoulli_overloads():
    p = torch.linspace(0, 1, N)
    def fn(p):
        return (torch.bernoulli(p), torch.bernoulli(torch.zeros_like(p), 0.3),
                torch.zeros_like(p).bernoulli_(p),
                torch.bernoulli(torch.ones(N, dtype=torch.float64)), torch.bernoulli(torch.zeros(N)))
    ((a, b, c, d, z),) = _draw(fn, [p])
    assert set(np.unique(a)) <= {0.0, 1.0}
    assert a[0] == 0 and a[-1] == 1 and d.dtype == np.float64 and d.all() and not z.any()
    assert abs(a.mean() - 0.5) < 0.015 and abs(c.mean() - 0.5) < 0.015
    assert abs(b.mean() - 0.3) < 0.015
    # P(1) rises with p: the upper half of p gives about 3 times the ones of the lower half
    assert 2.5 < a[N // 2:].sum() / a[:N // 2].sum() < 3.5


def test_multinomial_with_and_without_replacement():
    w = torch.tensor([[1.0, 0.0, 3.0, 4.0], [0.0, 0.0, 5.0, 5.0]])
    def fn(w):
        return (torch.multinomial(w, 20_000, replacement=True),
                torch.multinomial(w[0], 3), torch.multinomial(w, 2))
    ((a, b, c),) = _draw(fn, [w])
    assert a.dtype == np.int64 and a.shape == (2, 20_000)
    freq = np.stack([np.bincount(r, minlength=4) / r.size for r in a])
    np.testing.assert_allclose(freq, (w / w.sum(1, keepdims=True)).numpy(), atol=0.015)
    assert sorted(b.tolist()) == [0, 2, 3]  # no repeats, never the zero weight
    assert sorted(c[1].tolist()) == [2, 3] and len(set(c[0].tolist())) == 2 and 1 not in c[0]
    vm = build(export(Fn(lambda w: torch.multinomial(w, 1)), [w[0]]))
    counts = np.bincount([int(run(vm, [w[0]])[0][0]) for _ in range(400)], minlength=4)
    assert counts[1] == 0 and counts[3] > counts[0]  # first draws follow the weights


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_dropout_mask_and_scale(p):
    x = torch.rand(N) + 0.5
    def fn(x):
        return (F.dropout(x, p, training=True), *torch.ops.aten.native_dropout(x, p, True))
    ((out, nd, mask),) = _draw(fn, [x])
    xs = x.numpy()
    for y in (out, nd):
        kept = y != 0
        if p == 1.0:
            assert not kept.any()
            continue
        np.testing.assert_allclose(y[kept], xs[kept] / (1 - p), rtol=1e-6)
        assert abs(kept.mean() - (1 - p)) < 0.015
    assert mask.dtype == np.bool_ and np.array_equal(mask, nd != 0)


def test_feature_and_alpha_dropout():
    x = torch.randn(200, 64, 3, 3)
    def fn(x):
        return (F.dropout2d(x, 0.25, training=True), F.alpha_dropout(x, 0.2, training=True),
                F.feature_alpha_dropout(x, 0.2, training=True), F.dropout(x, 0.5, training=False))
    ((d2, ad, fad, ident),) = _draw(fn, [x])
    xs = x.numpy()
    np.testing.assert_array_equal(ident, xs)
    dropped = np.all(d2 == 0, axis=(2, 3))
    assert abs(dropped.mean() - 0.25) < 0.02  # whole channels dropped ...
    np.testing.assert_allclose(d2[~dropped], xs[~dropped] / 0.75, rtol=1e-5)  # ... or kept
    for y in (ad, fad):  # alpha dropout keeps a standard normal's mean and variance
        _moments(y, 0.0, 1.0, tol=0.05)
    per_channel = fad.reshape(200, 64, 9)
    assert np.mean(np.ptp(per_channel - per_channel[..., :1], axis=-1) < 1e-6) > 0.15


def test_rrelu_training_and_eval():
    x = torch.linspace(-4, 4, N)
    def fn(x):
        return (F.rrelu(x, 0.1, 0.3, training=True), F.rrelu(x, 0.1, 0.3, training=False))
    ((tr, ev),) = _draw(fn, [x])
    xs = x.numpy()
    pos = xs > 0
    np.testing.assert_array_equal(tr[pos], xs[pos])
    slope = tr[~pos & (xs < 0)] / xs[~pos & (xs < 0)]
    assert slope.min() >= 0.1 and slope.max() < 0.3
    _moments(slope, 0.2, 0.2 / math.sqrt(12))
    np.testing.assert_allclose(ev, np.where(pos, xs, xs * 0.2), rtol=1e-6)


def test_attention_dropout():
    q = torch.randn(2, 4, 64, 8)
    k = torch.randn(2, 2, 256, 8)
    v = torch.ones(2, 2, 256, 8)
    mask = torch.ones(64, 256, dtype=torch.bool)
    mask[3] = False  # a query that sees no key gives 0
    def fn(q, k, v):
        full = F.scaled_dot_product_attention(q, k, v, mask, dropout_p=0.5, enable_gqa=True)
        causal = F.scaled_dot_product_attention(q, k[:, :1], v[:, :1], dropout_p=0.25,
                                                is_causal=True, enable_gqa=True)
        return full, causal
    ((a, c),) = _draw(fn, [q, k, v])
    # with v = 1 each output is the kept attention weight over 1 - p: mean 1
    assert np.all(a[:, :, 3] == 0)
    rows = np.delete(a, 3, axis=2)
    assert abs(rows.mean() - 1) < 0.03 and rows.std() > 0.05
    first = c[:, :, 0]  # query 0 sees key 0 alone: its weight 1 is dropped or scaled
    assert np.all(np.ptp(first, axis=-1) == 0) and set(np.unique(first)) <= {0.0, np.float32(4 / 3)}
    assert abs(c[:, :, 32:].mean() - 1) < 0.05


def test_generator_is_unsupported():
    from tvm.relax.frontend.torch import ops_random

    class Ctx:  # the part of NodeContext the check uses
        kwargs = {"generator": torch.Generator()}

        def arg(self, i, name="", default=None):
            return default

        def unsupported(self, message):
            return OpNotSupported(message)

    with pytest.raises(OpNotSupported, match="Generator"):
        ops_random._no_generator(Ctx(), 1)
