"""Complex tensors and torch.fft end to end against torch eager: complex values are compared
whole (real and imaginary parts), over every norm mode and n/s/dim padding and truncation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from torch_testing import build, export, run

FFT_ARGS = [{}, {"norm": "ortho"}, {"norm": "forward"}, {"norm": "backward"}]


class Fn(torch.nn.Module):
    def __init__(self, fns):
        super().__init__()
        self.fns = fns

    def forward(self, *xs):
        return tuple(fn(*xs) for fn in self.fns)


def _eager(model, args):
    with torch.no_grad():
        return [o.resolve_conj().resolve_neg().numpy() for o in model(*args)]


def _check(fns, args, rtol=1e-4, atol=1e-5):
    model = Fn(fns)
    got, want = run(build(export(model, args)), args), _eager(model, args)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=str(i))


def _variants(fn, dims_kw):
    out = []
    for norm in ("backward", "ortho", "forward"):
        for kw in dims_kw:
            out.append(lambda x, fn=fn, kw=kw, norm=norm: fn(x, norm=norm, **kw))
    return out


def test_one_dimensional_ffts_of_a_real_input():
    x = torch.randn(3, 6, 7)
    fns = []
    for fn in (torch.fft.fft, torch.fft.ifft, torch.fft.rfft, torch.fft.ihfft):
        fns += _variants(fn, [{}, {"n": 10, "dim": 1}, {"n": 4}, {"dim": 0}])
    for fn in (torch.fft.irfft, torch.fft.hfft):  # real -> complex by promotion, then c2r
        fns += _variants(fn, [{}, {"n": 7}, {"n": 12, "dim": 1}, {"n": 1}])
    _check(fns, [x])


def test_multi_dimensional_ffts():
    x = torch.randn(2, 5, 6)
    fns = []
    for fn in (torch.fft.fft2, torch.fft.ifft2, torch.fft.rfft2, torch.fft.irfft2,
               torch.fft.hfft2, torch.fft.ihfft2):
        fns += _variants(fn, [{}, {"s": (3, 8)}])
    for fn in (torch.fft.fftn, torch.fft.ifftn, torch.fft.rfftn, torch.fft.irfftn,
               torch.fft.hfftn, torch.fft.ihfftn):
        fns += _variants(fn, [{}, {"s": (4,), "dim": (0,)}, {"dim": (0, 2)}])
    _check(fns, [x])


def test_complex_inputs_and_outputs_keep_the_complex_dtype():
    z = torch.randn(4, 5, dtype=torch.complex64)
    fns = [
        lambda z: torch.fft.ifft(z),
        lambda z: torch.fft.fftn(z, s=(3, 9), norm="ortho"),
        lambda z: torch.fft.irfft(z, n=8),
        lambda z: torch.fft.hfft(z),
        lambda z: z.conj().resolve_conj(),
        lambda z: z + z * z,
        lambda z: z - 2 * z,
        lambda z: torch.abs(z),
        lambda z: torch.angle(z),
        lambda z: torch.view_as_real(z),
        lambda z: z.real + 1,
        lambda z: z.imag * 2,
        lambda z: z[1:3, ::2],
        lambda z: torch.nn.functional.pad(z, (1, 2)),
        lambda z: z.to(torch.complex128),
        lambda z: z.t().reshape(2, 10)[1],
        lambda z: torch.cat([z, z.flip(0)], 1).unsqueeze(0),
        lambda z: torch.stack(z.unbind(1)[:2]).permute(1, 0).unsqueeze(1).squeeze(),
    ]
    _check(fns, [z])


def test_construction_and_casts_with_special_values():
    a = torch.tensor([0.0, -0.0, 1.5, -2.0, math.inf, -math.inf, math.nan, 1e30])
    b = torch.tensor([1.0, -1.0, 0.0, math.pi, -0.5, 2.0, 0.25, -1e-30])
    fns = [
        lambda a, b: torch.complex(a, b),
        lambda a, b: torch.complex(a[:, None], b),
        lambda a, b: torch.polar(a.abs(), b),
        lambda a, b: torch.view_as_complex(torch.stack([a, b], -1)),
        lambda a, b: a.to(torch.complex64),
        lambda a, b: a.to(torch.complex128),
        lambda a, b: torch.angle(a),
        lambda a, b: a.double().to(torch.cdouble) * 3,
    ]
    _check(fns, [a, b])


def test_symbolic_batch():
    from torch.export import Dim

    model = Fn([lambda x, y: torch.fft.rfft(x, norm="ortho"),
                lambda x, y: torch.fft.ifft(torch.complex(x, y), dim=-1),
                lambda x, y: torch.polar(x.abs(), y)])
    args = [torch.randn(3, 6), torch.randn(3, 6)]
    batch = Dim("batch", max=64)
    vm = build(export(model, args, dynamic_shapes=(({0: batch}, {0: batch}),)))
    for n in (3, 5):
        case = [torch.randn(n, 6), torch.randn(n, 6)]
        for g, w in zip(run(vm, case), _eager(model, case)):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_complex32_is_unsupported():
    from tvm.relax.frontend.torch import OpNotSupported, from_exported_program

    ep = export(Fn([lambda x: x.to(torch.complex32).abs()]), [torch.randn(3)])
    with pytest.raises(OpNotSupported, match="complex32"):
        from_exported_program(ep)
