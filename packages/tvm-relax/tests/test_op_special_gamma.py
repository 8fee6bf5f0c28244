"""The gamma-family special ops (``relax.lgamma`` ... ``relax.nextafter``): StructInfo
inference, numpy semantics against closed forms, and the llvm kernels against the numpy
semantics on random values and edges (poles, signed zeros, inf, NaN)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tvm import relax
from tvm.relax import TensorStructInfo, op
from tvm.relax.op import special
from vm_testing import requires_llvm

import tvm.runtime

NAN, INF = math.nan, math.inf
EULER = 0.5772156649015329


def _np(name, *xs, n=0):
    return special._np_fn(name, n)(*[np.asarray(x, "float64") for x in xs])


def test_numpy_semantics_match_closed_forms():
    xs = np.array([0.3, 1.0, 2.5, 7.0, 12.5, 40.0, -0.5, -2.75])
    np.testing.assert_allclose(_np("lgamma", xs), [math.lgamma(v) for v in xs], rtol=1e-13,
                               atol=1e-13)
    assert _np("digamma", [1.0])[0] == pytest.approx(-EULER, rel=1e-14)
    assert _np("digamma", [0.5])[0] == pytest.approx(-EULER - 2 * math.log(2), rel=1e-14)
    assert _np("polygamma", [1.0], n=1)[0] == pytest.approx(math.pi ** 2 / 6, rel=1e-14)
    assert _np("polygamma", [0.5], n=1)[0] == pytest.approx(math.pi ** 2 / 2, rel=1e-14)
    # psi''(1) = -2 zeta(3); reflection: psi''(-0.5) = psi''(1.5) + 2 pi^3 ... (checked vs sum)
    assert _np("polygamma", [1.0], n=2)[0] == pytest.approx(-2 * 1.2020569031595942, rel=1e-13)
    direct = -2 * sum((-0.5 + k) ** -3 for k in range(200000))
    assert _np("polygamma", [-0.5], n=2)[0] == pytest.approx(direct, rel=1e-9)
    assert _np("zeta", [2.0], [1.0])[0] == pytest.approx(math.pi ** 2 / 6, rel=1e-14)
    assert _np("zeta", [4.0], [3.0])[0] == pytest.approx(math.pi ** 4 / 90 - 1 - 2 ** -4,
                                                         rel=1e-13)
    x = np.array([0.0, 0.7, 1.5, 3.0, 10.0])
    np.testing.assert_allclose(_np("erfcx", x), np.exp(x * x) * np.array(
        [math.erfc(v) for v in x]), rtol=1e-12)
    big = 1 / (math.sqrt(math.pi) * 300) * (1 - 1 / (2 * 300 ** 2) + 3 / (4 * 300 ** 4))
    assert _np("erfcx", [300.0])[0] == pytest.approx(big, rel=1e-12)
    assert _np("ndtri", [0.975])[0] == pytest.approx(1.959963984540054, rel=1e-8)
    x = np.array([0.1, 1.0, 2.0, 5.0, 30.0])
    np.testing.assert_allclose(_np("igamma", np.ones(5), x), 1 - np.exp(-x), rtol=1e-12)
    np.testing.assert_allclose(_np("igammac", np.full(5, 0.5), x),
                               [math.erfc(math.sqrt(v)) for v in x], rtol=1e-10)


def test_edges():
    assert np.isinf(_np("lgamma", [0.0, -3.0, INF, -INF])).all()
    assert _np("digamma", [0.0])[0] == -INF and _np("digamma", [-0.0])[0] == INF
    assert np.isnan(_np("digamma", [-2.0, NAN])).all()
    assert list(_np("polygamma", [0.0, -1.0], n=2)) == [-INF, -INF]
    np.testing.assert_array_equal(_np("zeta", [1.0, 0.5, 2.0, 2.5], [1.0, 1.0, -2.0, -2.5]),
                                  [INF, NAN, INF, NAN])
    np.testing.assert_array_equal(_np("ndtri", [0.0, 1.0, -0.5, 2.0]), [-INF, INF, NAN, NAN])
    np.testing.assert_array_equal(_np("erfcx", [INF, -INF, -30.0]), [0.0, INF, INF])
    np.testing.assert_array_equal(_np("igamma", [0, 0, 1, 1, -1], [1, 0, 0, INF, 1]),
                                  [1, NAN, 0, 1, NAN])


def _var(shape, dtype):
    return relax.Var("x", TensorStructInfo(shape, dtype))


def test_inference():
    bb = relax.BlockBuilder()
    x = _var([2, 3], "float32")
    assert bb.normalize(op.lgamma(x)).struct_info.dtype == "float32"
    sinfo = bb.normalize(op.zeta(x, _var([3], "float32"))).struct_info
    assert [int(d) for d in sinfo.shape] == [2, 3]
    with pytest.raises(Exception, match="floating-point"):
        bb.normalize(op.digamma(_var([2], "int32")))
    with pytest.raises(Exception, match="n >= 0"):
        bb.normalize(op.polygamma(x, -1))


def _build(make, *inputs):
    params = [relax.Var(f"a{k}", TensorStructInfo(v.shape, str(v.dtype)))
              for k, v in enumerate(inputs)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.runtime.cpu())
    return vm["main"](*[tvm.runtime.tensor(v) for v in inputs]).numpy()


_rng = np.random.default_rng(7)
_EDGES = [0.0, -0.0, 1.0, -1.0, -2.5, 0.5, INF, -INF, NAN, 1e-30, 1e6]


@requires_llvm
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfcx", "polygamma"])
def test_unary_kernels_match_numpy(name, dtype):
    x = np.concatenate([_rng.uniform(-8, 8, 64), _EDGES]).astype(dtype)
    if name == "polygamma":
        got, want = _build(lambda a: op.polygamma(a, 3), x), special._np_fn("polygamma", 3)(x)
    else:
        got, want = _build(getattr(op, name), x), special._np_fn(name)(x)
    assert got.dtype == want.dtype == x.dtype
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


@requires_llvm
def test_binary_kernels_match_numpy():
    s = np.concatenate([_rng.uniform(1, 6, 32), [1, 0.5, 2, INF]]).astype("float32")
    q = np.concatenate([_rng.uniform(-3, 10, 32), [1, 1, -2, 1]]).astype("float32")
    np.testing.assert_allclose(_build(op.zeta, s, q), special._np_fn("zeta")(s, q),
                               rtol=2e-5, atol=1e-6)
    p = np.concatenate([_rng.uniform(0, 1, 32), [0, 1, 2]]).astype("float32")
    np.testing.assert_allclose(_build(op.ndtri, p), special._np_fn("ndtri")(p),
                               rtol=2e-5)
    a = _rng.uniform(0, 20, (4, 1)).astype("float32")
    x = _rng.uniform(0, 25, (6,)).astype("float32")
    for name in ("igamma", "igammac"):
        np.testing.assert_allclose(_build(getattr(op, name), a, x),
                                   special._np_fn(name)(a, x), rtol=2e-5, atol=1e-6)
    a = np.array([0.0, 1.0, -1.0, INF], "float32")
    b = np.array([1.0, 0.0, -INF, 0.0], "float32")
    np.testing.assert_array_equal(_build(op.nextafter, a, b), np.nextafter(a, b))
