"""Data-dependent output sizes end to end against torch eager: nonzero, argwhere,
nonzero_static, masked_select, unique, unique_consecutive, and later ops on the size torch
calls ``u0`` (one build run on inputs with different numbers of results)."""

from __future__ import annotations

import math

import pytest
import torch
from torch.export import Dim

from torch_testing import check

NAN = math.nan


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


X = torch.tensor([[0.0, 1.0, -2.0], [3.0, 0.0, NAN]])
SPARSE = torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 5.0]])
EMPTY_HIT = torch.zeros(2, 3)


def test_nonzero_argwhere_and_tuple_on_changing_counts():
    fn = Fn(lambda x: (torch.nonzero(x), torch.argwhere(x), *torch.nonzero(x, as_tuple=True)))
    check(fn, [X], more_args=[[SPARSE], [EMPTY_HIT], [torch.ones(2, 3)]])


@pytest.mark.parametrize("value", [0.0, 2.0])
def test_nonzero_of_a_scalar(value):
    check(Fn(torch.nonzero), [torch.tensor(value)])


def test_size_of_nonzero_used_later():
    # u0 (the count) feeds a cast, a reduction and arithmetic on the size
    fn = Fn(lambda x: torch.nonzero(x).float().sum(0) * torch.nonzero(x).shape[0])
    check(fn, [X], more_args=[[SPARSE], [EMPTY_HIT]])


@pytest.mark.parametrize("size,fill", [(2, -1), (9, -7)])
def test_nonzero_static_truncates_and_pads(size, fill):
    check(Fn(lambda x: torch.nonzero_static(x, size=size, fill_value=fill)), [X],
          more_args=[[EMPTY_HIT]])


def test_masked_select_broadcasts():
    fn = Fn(lambda x, m: (torch.masked_select(x, m), torch.masked_select(x, x > 0)))
    mask = torch.tensor([True, False, True])
    check(fn, [X, mask], more_args=[[SPARSE, torch.tensor([False, False, False])]])


class Positive(torch.nn.Module):
    def forward(self, x):
        return torch.masked_select(x, x > 0) + 1.0


def test_masked_select_with_a_symbolic_input_size():
    n = Dim("n", min=2, max=64)
    check(Positive(), [torch.tensor([1.0, -1.0, 2.0])], dynamic_shapes=({0: n},),
          more_args=[[torch.arange(-5.0, 7.0)], [-torch.ones(2)]])


def test_combinations():
    x = torch.tensor([1.0, 2.0, 3.0])
    check(Fn(lambda t: torch.combinations(t, 1)), [x])


INTS = torch.tensor([[3, 1, 3], [2, 1, 2], [3, 1, 3]])


@pytest.mark.parametrize("is_sorted", [True, False])
def test_unique_flat(is_sorted):
    # torch sorts on CPU whatever ``sorted`` says (the order is unspecified otherwise)
    fn = Fn(lambda x: (torch.unique(x, sorted=is_sorted),
                       *torch.unique(x, sorted=is_sorted, return_inverse=True,
                                     return_counts=True)))
    check(fn, [INTS], more_args=[[torch.zeros(3, 3, dtype=torch.int64)]])


def test_unique_floats_nan_distinct_and_empty():
    fn = Fn(lambda x: torch.unique(x, return_inverse=True, return_counts=True))
    check(fn, [torch.tensor([2.5, -0.0, NAN, 0.0, -1.0, NAN, 2.5])])
    check(fn, [torch.zeros(0, 3)])


@pytest.mark.parametrize("dim", [0, -1])
def test_unique_dim(dim):
    fn = Fn(lambda x: torch.unique(x, dim=dim, return_inverse=True, return_counts=True))
    check(fn, [INTS])


def test_unique_consecutive_flat_nan_distinct():
    fn = Fn(lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True))
    check(fn, [torch.tensor([[1.0, 1.0, NAN], [NAN, 2.0, 2.0]])],
          more_args=[[torch.ones(2, 3)], [torch.arange(6.0).reshape(2, 3)]])
    check(fn, [torch.zeros(0)])
    check(Fn(torch.unique_consecutive), [torch.tensor(4.0)])


@pytest.mark.parametrize("dim", [0, 1])
def test_unique_consecutive_dim(dim):
    fn = Fn(lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True,
                                               dim=dim))
    x = torch.tensor([[1, 1, 2, 1], [1, 1, 2, 1], [3, 3, 4, 1]])
    check(fn, [x], more_args=[[torch.zeros(3, 4, dtype=torch.int64)]])
