"""Order statistics, running extremes, binning and segment reductions end to end against
torch eager: NaN placement, ties, infinities, empty segments, out-of-range values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from torch_testing import build, check, eager, export, run

NAN, INF = math.nan, math.inf


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _values(model: torch.nn.Module, args: list, *, rtol: float = 1e-6) -> list[np.ndarray]:
    """Compare every output with eager (NaN where eager has NaN); returns ours."""
    got, want = run(build(export(model, args)), args), eager(model, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6, equal_nan=True)
    return got


# distinct numbers (torch picks among tied medians with std::nth_element, unspecified)
ROWS = torch.tensor([[3.0, -1.0, 2.5, INF, 0.0],
                     [NAN, 1.0, -INF, NAN, 4.0],
                     [NAN, NAN, NAN, NAN, NAN],
                     [5.0, -2.0, NAN, 7.0, 1.5]])


def test_median_and_nanmedian_with_nan():
    check(Fn(lambda x: (*torch.median(x, 1), *torch.nanmedian(x[[0, 1, 3]], 1),
                        *torch.median(x, 0, keepdim=True))), [ROWS])
    # an all-NaN slice: NaN (its index is whatever nth_element leaves first)
    _values(Fn(lambda x: torch.nanmedian(x, 1).values), [ROWS])
    _values(Fn(lambda x: (torch.median(x), torch.nanmedian(x), torch.median(x[0]),
                          torch.nanmedian(x[1:2]))), [ROWS])


def test_kthvalue_nan_sorts_last():
    # among tied NaNs the index is whatever torch's quickselect leaves there: values only
    check(Fn(lambda x: (*torch.kthvalue(x[[0, 1, 3]], 1, 1), *torch.kthvalue(x[[0, 1, 3]], 3, 1),
                        *torch.kthvalue(x, 2, 0, keepdim=True))), [ROWS])
    _values(Fn(lambda x: (torch.kthvalue(x, 3, 1).values, torch.kthvalue(x, 5, 1).values)),
            [ROWS])


def test_mode_smallest_most_frequent_value():
    x = torch.tensor([[3.0, 1.0, 2.0, 2.0, 1.0, 3.0, 5.0],
                      [4.0, 4.0, -1.0, 4.0, -1.0, 0.0, 9.0],
                      [INF, -INF, INF, 0.0, 1.0, 2.0, 3.0]])
    check(Fn(lambda t: (*torch.mode(t, 1), *torch.mode(t, 0, keepdim=True))), [x])
    check(Fn(lambda t: torch.mode(t, 0)), [torch.tensor([[1, 2], [1, 3], [2, 3]])])


def test_cummax_cummin_ties_take_the_later_index_and_nan_sticks():
    x = torch.tensor([[1.0, 3.0, 2.0, 3.0, NAN, 5.0, NAN, 1.0],
                      [-INF, -INF, 0.0, 0.0, -1.0, INF, INF, 2.0]])
    check(Fn(lambda t: (*torch.cummax(t, 1), *torch.cummin(t, 1), *torch.cummax(t, 0))), [x])
    check(Fn(lambda t: (*torch.cummax(t, 0), *torch.cummin(t, 0))),
          [torch.tensor([2, 2, 1, 5, 5, -3])])


def test_searchsorted_sides_sorter_and_nan():
    seq = torch.tensor([1.0, 2.0, 2.0, 3.0, INF])
    values = torch.tensor([[2.0, NAN, 0.0, 5.0], [INF, -INF, 3.0, 1.0]])
    check(Fn(lambda s, v: (torch.searchsorted(s, v), torch.searchsorted(s, v, right=True),
                           torch.searchsorted(s, v, side="right", out_int32=True),
                           torch.bucketize(v, s), torch.bucketize(v, s, right=True))),
          [seq, values])
    perm = torch.tensor([3, 0, 4, 2, 1])
    shuffled = seq[perm.argsort()]
    check(Fn(lambda s, v, p: torch.searchsorted(s, v, sorter=p)),
          [shuffled, values, shuffled.argsort()])
    rows = torch.tensor([[0.0, 1.0, 2.0], [-5.0, 5.0, 10.0]])
    check(Fn(lambda s, v: torch.searchsorted(s, v)), [rows, torch.tensor([[1.5, 3.0],
                                                                          [5.0, -9.0]])])
    check(Fn(lambda s: torch.searchsorted(s, 2.0, right=True)), [seq])


def test_histc_ranges_edges_and_nan():
    x = torch.tensor([0.0, 0.5, 1.0, 9.99, 10.0, 10.5, -1.0, NAN, 3.3, 6.6])
    check(Fn(lambda t: (torch.histc(t, 4, 0, 10), torch.histc(t, 1, 0, 10),
                        torch.histc(t[:7], 7), torch.histc(t[2:3], 3))), [x])


def test_histogram_bins_weights_density():
    x = torch.tensor([0.0, 0.25, 1.0, 2.5, 2.5, 3.0, -1.0, 4.0])
    w = torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 9.0, 2.0])
    edges = torch.tensor([-1.0, 0.0, 1.0, 2.5, 4.0])
    check(Fn(lambda t, wt, e: (*torch.histogram(t, 3), *torch.histogram(t, 5, range=(0.0, 3.0)),
                               *torch.histogram(t, 4, weight=wt, density=True),
                               *torch.histogram(t, e), *torch.histogram(t, e, weight=wt),
                               *torch.histogram(t[3:5], 2))), [x, w, edges])


def test_histogramdd():
    pts = torch.tensor([[0.0, 1.0], [0.5, 2.0], [1.0, 1.0], [0.2, 3.0], [0.9, 0.0]])
    check(Fn(lambda p: torch.histogramdd(p, [2, 3]).hist), [pts])
    check(Fn(lambda p: (lambda h: (h.hist, *h.bin_edges))(torch.histogramdd(
        p, [2, 2], range=[0.0, 1.0, 0.0, 2.0], density=True))), [pts])
    e0, e1 = torch.tensor([0.0, 0.5, 1.0]), torch.tensor([0.0, 2.0, 3.0])
    check(Fn(lambda p, a, b: torch.histogramdd(p, [a, b]).hist), [pts, e0, e1])


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("initial", [None, 2.5])
def test_segment_reduce(reduce, initial):
    data = torch.tensor([1.0, 5.0, 2.0, NAN, 3.0, -4.0])
    lengths = torch.tensor([2, 0, 2, 1, 1])
    offsets = torch.tensor([0, 2, 2, 4, 5, 6])
    grid = torch.arange(12.0).reshape(2, 6) - 5.0
    glen = torch.tensor([[2, 4, 0], [3, 0, 3]])
    check(Fn(lambda d, ln, of, g, gl: (
        torch.segment_reduce(d, reduce, lengths=ln, initial=initial),
        torch.segment_reduce(d, reduce, offsets=of, initial=initial),
        torch.segment_reduce(g, reduce, lengths=gl, axis=1, initial=initial),
        torch.segment_reduce(g.T, reduce, lengths=ln[:2] + 2, axis=0, initial=initial))),
        [data, lengths, offsets, grid, glen])


def test_symbolic_length():
    from torch.export import Dim

    n = Dim("n", min=2, max=64)
    check(Fn(lambda t: (*torch.median(t, 1), torch.nanmedian(t), *torch.cummax(t, 1),
                        *torch.mode(t, 1))),
          [torch.randn(3, 7)], dynamic_shapes=(({1: n},),), more_args=[[torch.randn(3, 12)]])
