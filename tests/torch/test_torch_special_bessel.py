"""torch.special's Bessel and Airy functions and orthogonal polynomials end to end against
torch eager: 0, negative and large arguments, infinities and NaN, integer inputs, float64,
degrees that are negative, non-integer, NaN or given as a Python scalar, and a dynamic
batch dimension."""

from __future__ import annotations

import math

import torch
from torch.export import Dim

from torch_testing import check

NAN, INF = math.nan, math.inf
S = torch.special

UNARY = [torch.i0, S.i0e, S.i1, S.i1e, S.bessel_j0, S.bessel_j1, S.bessel_y0, S.bessel_y1,
         S.modified_bessel_i0, S.modified_bessel_i1, S.modified_bessel_k0,
         S.modified_bessel_k1, S.scaled_modified_bessel_k0, S.scaled_modified_bessel_k1,
         S.spherical_bessel_j0, S.airy_ai]

POLYNOMIALS = [S.chebyshev_polynomial_t, S.chebyshev_polynomial_u, S.chebyshev_polynomial_v,
               S.chebyshev_polynomial_w, S.shifted_chebyshev_polynomial_t,
               S.shifted_chebyshev_polynomial_u, S.shifted_chebyshev_polynomial_v,
               S.shifted_chebyshev_polynomial_w, S.hermite_polynomial_h,
               S.hermite_polynomial_he, S.laguerre_polynomial_l, S.legendre_polynomial_p]

X = torch.tensor([NAN, -INF, -100.0, -9.0, -5.0, -2.5, -1.0, -1e-6, -0.0, 0.0, 1e-7, 0.4,
                  1.0, 2.0, 2.09, 3.0, 4.99, 5.0, 7.5, 8.0, 9.0, 30.0, 90.0, 110.0, INF])


class Many(torch.nn.Module):
    def __init__(self, fns, *consts):
        super().__init__()
        self.fns, self.consts = fns, consts

    def forward(self, *xs):
        return tuple(f(*xs, *self.consts) for f in self.fns)


def test_bessel_family_special_values_float32_and_float64():
    check(Many(UNARY), [X], rtol=1e-4, atol=1e-6)
    check(Many(UNARY), [torch.linspace(-40, 40, 97, dtype=torch.float64)], rtol=1e-9,
          atol=1e-12)


def test_bessel_integer_input_and_dynamic_batch():
    ints = torch.arange(-6, 6, dtype=torch.int64).reshape(3, 4)
    check(Many([torch.i0, S.bessel_j1, S.modified_bessel_k1]), [ints], rtol=1e-4)
    x = torch.linspace(0.1, 12, 8).reshape(2, 4)
    check(Many([S.bessel_y0, S.airy_ai]), [x], rtol=1e-4, atol=1e-6,
          dynamic_shapes=(({0: Dim("b")},),), more_args=[[torch.linspace(-3, 3, 20).reshape(5, 4)]])


def test_polynomials_broadcast_over_x_and_n():
    x = torch.tensor([[-2.0], [-1.0], [-0.7], [0.0], [0.25], [0.5], [0.9], [1.0], [1.6]])
    n = torch.tensor([-2.0, 0.0, 1.0, 2.0, 3.7, 5.0, 6.0, 7.0, 9.0, 13.0, INF, NAN])
    check(Many(POLYNOMIALS), [x, n], rtol=1e-4, atol=1e-5)


def test_polynomial_scalar_degree_and_scalar_x():
    x = torch.linspace(-1.2, 1.2, 11, dtype=torch.float64)
    check(Many(POLYNOMIALS, 4), [x], rtol=1e-9, atol=1e-9)  # n_scalar overload
    n = torch.tensor([0, 1, 2, 5, 10])
    check(Many([lambda k: S.chebyshev_polynomial_t(0.3, k),
                lambda k: S.hermite_polynomial_he(0.3, k)]), [n], rtol=1e-4)  # x_scalar
