"""ops_nn_extra converters end to end against torch eager: distances (every p), bilinear,
embedding bags, grid sampling, antialiased resize, scatter-style writes, training-mode batch
norm, chunked linear cross-entropy, hash_tensor."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from torch_testing import build, check, eager, export, run


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


P_VALUES = [0.0, 1.0, 1.5, 2.0, math.inf]


def test_cdist_pdist_dist():
    a, b = _randn(2, 4, 3), _randn(2, 5, 3, seed=1)
    a[0, 0] = b[0, 1]  # a zero distance
    check(Fn(lambda x, y: [f(p) for p in P_VALUES for f in (
        lambda p: torch.cdist(x, y, p=p), lambda p: torch.dist(x[:, :1], y, p=p),
        lambda p: F.pdist(x[0], p=p))]), [a, b], rtol=1e-4)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
def test_cdist_compute_mode(mode):
    a, b = _randn(30, 4), _randn(27, 4, seed=1)
    check(Fn(lambda x, y: torch.cdist(x, y, compute_mode=mode)), [a, b], rtol=1e-4, atol=1e-4)


def test_bilinear():
    check(Fn(lambda x, y, w, bias: F.bilinear(x, y, w, bias)),
          [_randn(6, 3), _randn(6, 4, seed=1), _randn(5, 3, 4, seed=2), _randn(5, seed=3)],
          rtol=1e-4)


@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag(last):
    weight = _randn(10, 3)
    idx = torch.tensor([1, 2, 4, 4, 3, 0, 9, 2])
    offsets = torch.tensor([0, 3, 3, 6] + ([8] if last else []))  # an empty bag
    psw = _randn(8, seed=2)
    check(Fn(lambda w, i, o: [F.embedding_bag(i, w, o, mode=mode,
                                              per_sample_weights=psw if mode == "sum" else None,
                                              include_last_offset=last, padding_idx=4)
                              for mode in ("sum", "mean", "max")]),
          [weight, idx, offsets], rtol=1e-5)


GRID_CASES = [("bilinear", "zeros", False), ("bilinear", "reflection", True),
              ("nearest", "border", True), ("nearest", "reflection", False),
              ("bicubic", "zeros", True), ("bicubic", "reflection", False)]


def test_grid_sample_2d():
    grid = _randn(2, 4, 3, 2, seed=1) * 1.3  # some points outside [-1, 1]
    check(Fn(lambda x, g: [F.grid_sample(x, g, mode=m, padding_mode=p, align_corners=a)
                           for m, p, a in GRID_CASES]),
          [_randn(2, 3, 5, 6), grid], rtol=1e-4, atol=1e-5)


def test_grid_sample_3d():
    check(Fn(lambda x, g: F.grid_sample(x, g, padding_mode="border")),
          [_randn(1, 2, 3, 4, 5), _randn(1, 2, 3, 2, 3, seed=1)], rtol=1e-4)


def test_interpolate_antialias():
    cases = [((3, 7), None, False), ((13, 4), None, True), (None, (1.7, 0.45), False)]
    check(Fn(lambda x: [F.interpolate(x, size=size, scale_factor=scale, mode="bilinear",
                                      antialias=True, align_corners=align)
                        for size, scale, align in cases]),
          [_randn(1, 2, 10, 9)], rtol=1e-4, atol=1e-5)


def test_put_and_as_strided_scatter():
    x, src = _randn(3, 4), _randn(4, seed=1)
    index = torch.tensor([0, -1, 5, 5])
    check(Fn(lambda a, s, i: (a.put(i, s, accumulate=True), a.put(i[:3], s[:3]),
                              torch.as_strided_scatter(a, s.reshape(2, 2), (2, 2), (1, 3), 1))),
          [x, src, index])


def test_max_pool_backward():
    def fn(x, g):
        out, idx = torch.ops.aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1],
                                                          True)
        return torch.ops.aten.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1],
                                                               [1, 1], True, idx)
    check(Fn(fn), [_randn(2, 3, 5, 6), _randn(2, 3, 3, 4, seed=1)])


def test_batch_norm_training():
    x = _randn(4, 3, 2, 5) * 3 + 1
    rm, rv = _randn(3, seed=1), _randn(3, seed=2).abs()
    w, b = _randn(3, seed=3), _randn(3, seed=4)
    check(Fn(lambda *a: torch.ops.aten._native_batch_norm_legit_functional(
        *a, True, 0.2, 1e-3)), [x, w, b, rm, rv], rtol=1e-4, atol=1e-5)
    check(Fn(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)), [x, w, b],
          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("weighted", [False, True])
def test_linear_cross_entropy_chunked(weighted):
    from torch.nn.modules.linear_cross_entropy import _linear_cross_entropy_batch_chunked

    cw = _randn(5, seed=3).abs() if weighted else None
    target = torch.tensor([0, 4, -100, 2, 2, 1])

    def fn(x, w, b, t):
        return _linear_cross_entropy_batch_chunked(
            x, w, t, b, cw, "mean", -100, 0.0, 2, "compact", torch.float32, True,
            False, False, False)
    check(Fn(fn), [_randn(6, 3), _randn(5, 3, seed=1), _randn(5, seed=2), target], rtol=1e-4)


def test_hash_tensor():
    x = torch.tensor([[0.0, -0.0, math.nan, 1.5], [math.inf, 2.0, -3.0, 7.0],
                      [1e30, -1e-30, 0.1, 5.0]])
    model = Fn(lambda a, i: (torch.hash_tensor(a), torch.hash_tensor(a, 1),
                             torch.hash_tensor(a, 0, keepdim=True), torch.hash_tensor(i, 0)))
    args = [x, torch.tensor([[3, -1], [5, 2], [1 << 40, 7]])]
    got, want = run(build(export(model, args)), args), eager(model, args)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.uint64 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_item_as_scalar_operand_and_as_size():
    from tvm.relax.frontend.torch import OpNotSupported, from_exported_program

    check(Fn(lambda x, t: x * t[1].item() + t[0].item()), [_randn(3), torch.tensor([2.5, 1.0])])
    ep = export(Fn(lambda x, i: torch.tensor_split(x, i)), [_randn(5, 2), torch.tensor([1, 3])])
    with pytest.raises(OpNotSupported, match="data-dependent"):
        from_exported_program(ep)
