"""Converters of random operators: ``rand``/``randn``/``randint`` (and ``*_like``),
``uniform``, ``normal``, ``bernoulli``, ``exponential``, ``cauchy``, ``log_normal``,
``geometric``, ``multinomial``, training-mode ``rrelu`` and the dropouts.

Every sample comes from the ``relax.random`` ops (Philox, computed per element from a seed),
with a fresh seed per call site and per run from ``vm.builtin.random_seed``
(:func:`tvm.relax.op.random.fresh_seed`): two runs of the compiled function draw different
numbers, as torch does; :func:`tvm.runtime.vm.manual_seed` makes runs reproducible
(``torch.manual_seed`` is not followed).  Other distributions are transforms of uniform
samples computed in float32 (float64 for float64 outputs).  An explicit ``torch.Generator``
argument is not supported.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Optional

import numpy as np

from tvm.ffi.dtype import to_numpy_dtype
from tvm.tir.expr import IntImm, PrimExpr

from ... import op as _op
from ...op import random as _random
from .common import NodeContext, converter
from .ops_tensor import _check_layout

_FLOATS = ("float16", "bfloat16", "float32", "float64")


# -- helpers ----------------------------------------------------------------------------------
def _no_generator(ctx: NodeContext, index: Optional[int] = None) -> None:
    gen = ctx.kwargs.get("generator")
    if gen is None and index is not None:
        gen = ctx.arg(index)
    if gen is not None:
        raise ctx.unsupported("an explicit torch.Generator (the compiled program draws from "
                              "its own seeds; see tvm.runtime.vm.manual_seed)")


def seed(ctx: NodeContext) -> Any:
    """A fresh run-time seed for one random op of this node (call sites numbered per import,
    so importing a program twice gives the same module)."""
    streams = getattr(ctx.importer, "_random_streams", None)
    if streams is None:
        streams = itertools.count()
        ctx.importer._random_streams = streams
    return _random.fresh_seed(ctx.bb, next(streams))


def _compute_dtype(dtype: str) -> str:
    return "float64" if dtype == "float64" else "float32"


def uniform(ctx: NodeContext, shape: list, dtype: str, low: float = 0.0,
            high: float = 1.0) -> Any:
    """Samples of U[low, high) of ``shape`` and float ``dtype``."""
    return ctx.emit(_random.uniform(seed(ctx), shape, dtype, float(low), float(high)))


def _float_out(ctx: NodeContext) -> str:
    dtype = ctx.out_dtype()
    if dtype not in _FLOATS:
        raise ctx.unsupported(f"dtype {dtype} (random floats need a floating-point dtype)")
    return dtype


def _number(ctx: NodeContext, value: Any, name: str) -> float:
    if isinstance(value, PrimExpr) and not isinstance(value, IntImm):
        raise ctx.unsupported(f"a symbolic {name}")
    if hasattr(value, "struct_info"):
        raise ctx.unsupported(f"{name} given as a tensor")
    return float(value.value if isinstance(value, IntImm) else value)


def _int(ctx: NodeContext, value: Any, name: str) -> int:
    if isinstance(value, PrimExpr) and not isinstance(value, IntImm):
        raise ctx.unsupported(f"a symbolic {name}")
    if hasattr(value, "struct_info"):
        raise ctx.unsupported(f"{name} given as a tensor")
    return int(value.value if isinstance(value, IntImm) else value)


# -- rand / randn / randint -------------------------------------------------------------------
@converter("aten.rand.default", "aten.rand.generator", "aten.rand_like.default",
           "aten.randn.default", "aten.randn.generator", "aten.randn_like.default")
def _rand(ctx: NodeContext) -> Any:
    """U[0, 1) (``rand``) or N(0, 1) (``randn``) samples of the output's shape and dtype."""
    _check_layout(ctx)
    _no_generator(ctx, 1 if ctx.op.endswith(".generator") else None)
    dtype = _float_out(ctx)
    shape = ctx.out_shape()
    if ctx.op.startswith("aten.randn"):
        return _random.normal(seed(ctx), shape, dtype, 0.0, 1.0)
    return _random.uniform(seed(ctx), shape, dtype, 0.0, 1.0)


@converter("aten.randint.default", "aten.randint.low", "aten.randint.generator",
           "aten.randint.low_generator", "aten.randint_like.default",
           "aten.randint_like.low_dtype")
def _randint(ctx: NodeContext) -> Any:
    """Integers uniform on [low, high) (low default 0) of the output's shape and dtype."""
    _check_layout(ctx)
    op = ctx.op
    if op.startswith("aten.randint_like"):
        low, high = (0, ctx.arg(1, "high")) if op.endswith(".default") else (
            ctx.arg(1, "low"), ctx.arg(2, "high"))
    elif ".low" in op:
        low, high = ctx.arg(0, "low"), ctx.arg(1, "high")
        _no_generator(ctx, 3 if op.endswith("generator") else None)
    else:
        low, high = 0, ctx.arg(0, "high")
        _no_generator(ctx, 2 if op.endswith("generator") else None)
    low, high = _int(ctx, low, "low"), _int(ctx, high, "high")
    if high <= low:
        raise ctx.error(f"random_ expects 'from' ({low}) to be less than 'to' ({high})")
    return _random.randint(seed(ctx), ctx.out_shape(), ctx.out_dtype(), low, high)


# -- distributions of a tensor's shape --------------------------------------------------------
@converter("aten.uniform.default")
def _uniform(ctx: NodeContext) -> Any:
    """uniform(self, from=0, to=1): U[from, to) shaped like ``self``."""
    _no_generator(ctx, 3)
    low = _number(ctx, ctx.arg(1, "from", 0.0), "from")
    high = _number(ctx, ctx.arg(2, "to", 1.0), "to")
    if low > high:
        raise ctx.error(f"uniform_ expects to return a [from, to) range, but found "
                        f"from={low} > to={high}")
    return _random.uniform(seed(ctx), ctx.out_shape(), _float_out(ctx), low, high)


def _standard_normal(ctx: NodeContext, dtype: str, mean: float = 0.0, std: float = 1.0) -> Any:
    if std < 0:
        raise ctx.error(f"normal expects std >= 0.0, but found std {std}")
    return _random.normal(seed(ctx), ctx.out_shape(), dtype, mean, std)


@converter("aten.normal.float_float", "aten.normal_functional.default")
def _normal_numbers(ctx: NodeContext) -> Any:
    """normal(mean: float, std: float, size) / normal_functional(self, mean=0, std=1)."""
    _check_layout(ctx)
    if ctx.op == "aten.normal.float_float":
        _no_generator(ctx, 3)
        mean, std = ctx.arg(0, "mean", 0.0), ctx.arg(1, "std", 1.0)
    else:
        _no_generator(ctx, 3)
        mean, std = ctx.arg(1, "mean", 0.0), ctx.arg(2, "std", 1.0)
    return _standard_normal(ctx, _float_out(ctx), _number(ctx, mean, "mean"),
                            _number(ctx, std, "std"))


@converter("aten.normal.Tensor_Tensor", "aten.normal.Tensor_float", "aten.normal.float_Tensor")
def _normal_tensors(ctx: NodeContext) -> Any:
    """normal(mean, std) with a tensor mean and/or std: ``mean + std * N(0, 1)`` of their
    broadcast shape."""
    _no_generator(ctx, 2)
    dtype = _float_out(ctx)
    z = ctx.emit(_standard_normal(ctx, dtype))
    mean, std = ctx.arg(0, "mean"), ctx.arg(1, "std", 1.0)
    mean = ctx.astype(ctx.importer.to_expr(mean, dtype), dtype)
    std = ctx.astype(ctx.importer.to_expr(std, dtype), dtype)
    return _op.add(mean, _op.multiply(std, z))


def _from_uniform(ctx: NodeContext, fn: Any) -> Any:
    """``fn(u)`` of U[0, 1) samples ``u`` in the compute dtype, cast to the output dtype."""
    dtype = ctx.out_dtype()
    comp = _compute_dtype(dtype)
    u = uniform(ctx, ctx.out_shape(), comp)
    return ctx.astype(fn(u, comp), dtype)


@converter("aten.exponential.default")
def _exponential(ctx: NodeContext) -> Any:
    """exponential(self, lambd=1): ``-log(1 - u) / lambd``."""
    _no_generator(ctx, 2)
    lambd = _number(ctx, ctx.arg(1, "lambd", 1.0), "lambd")
    if lambd <= 0:
        raise ctx.error(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    _float_out(ctx)
    return _from_uniform(ctx, lambda u, c: _op.divide(
        _op.negative(_op.log1p(_op.negative(u))), ctx.const(lambd, c)))


@converter("aten.cauchy.default")
def _cauchy(ctx: NodeContext) -> Any:
    """cauchy(self, median=0, sigma=1): ``median + sigma * tan(pi (u - 1/2))``."""
    _no_generator(ctx, 3)
    median = _number(ctx, ctx.arg(1, "median", 0.0), "median")
    sigma = _number(ctx, ctx.arg(2, "sigma", 1.0), "sigma")
    if sigma <= 0:
        raise ctx.error(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    _float_out(ctx)
    return _from_uniform(ctx, lambda u, c: _op.add(ctx.const(median, c), _op.multiply(
        ctx.const(sigma, c), _op.tan(_op.multiply(ctx.const(math.pi, c),
                                                  _op.subtract(u, ctx.const(0.5, c)))))))


@converter("aten.log_normal.default")
def _log_normal(ctx: NodeContext) -> Any:
    """log_normal(self, mean=1, std=2): ``exp(N(mean, std**2))``."""
    _no_generator(ctx, 3)
    mean = _number(ctx, ctx.arg(1, "mean", 1.0), "mean")
    std = _number(ctx, ctx.arg(2, "std", 2.0), "std")
    if std <= 0:
        raise ctx.error(f"log_normal_ expects std > 0.0, but found std={std}")
    dtype = _float_out(ctx)
    z = ctx.emit(_random.normal(seed(ctx), ctx.out_shape(), _compute_dtype(dtype), mean, std))
    return ctx.astype(_op.exp(z), dtype)


@converter("aten.geometric.default")
def _geometric(ctx: NodeContext) -> Any:
    """geometric(self, p): trials to the first success, ``ceil(log(1 - u) / log(1 - p))``
    (at least 1)."""
    _no_generator(ctx, 2)
    p = _number(ctx, ctx.arg(1, "p"), "p")
    if not 0 < p <= 1:
        raise ctx.error(f"geometric_ expects p to be in (0, 1], but got p={p}")

    def f(u: Any, c: str) -> Any:
        if p == 1.0:
            return _op.ones_like(u)
        k = _op.ceil(_op.divide(_op.log1p(_op.negative(u)), ctx.const(math.log1p(-p), c)))
        return _op.maximum(k, ctx.const(1.0, c))

    return _from_uniform(ctx, f)


@converter("aten.bernoulli.default", "aten.bernoulli.p", "aten.bernoulli.Tensor")
def _bernoulli(ctx: NodeContext) -> Any:
    """bernoulli(self) (self holds the probabilities), bernoulli(self, p: float),
    bernoulli(self, p: Tensor): ``u < p`` as the output dtype."""
    dtype = ctx.out_dtype()
    if ctx.op == "aten.bernoulli.default":
        _no_generator(ctx, 1)
        p = ctx.tensor(0)
    else:
        _no_generator(ctx, 2)
        p = ctx.arg(1, "p", 0.5)
        if not hasattr(p, "struct_info"):
            value = _number(ctx, p, "p")
            if not 0 <= value <= 1:
                raise ctx.error(f"bernoulli_ expects p to be in [0, 1], but got p={value}")
    pdtype = ctx.dtype(p) if hasattr(p, "struct_info") else "float32"
    comp = "float64" if "float64" in (pdtype, dtype) else "float32"
    p = ctx.astype(ctx.importer.to_expr(p, comp), comp)
    u = uniform(ctx, ctx.out_shape(), comp)
    return _op.astype(_op.less(u, p), dtype)


# -- multinomial ------------------------------------------------------------------------------
@converter("aten.multinomial.default")
def _multinomial(ctx: NodeContext) -> Any:
    """multinomial(self, num_samples, replacement=False): int64 category indices drawn with
    weights ``self`` (1-d or 2-d rows).  With replacement: inverse CDF of ``u * total``;
    without: the ``num_samples`` smallest exponential races ``E / w`` (the order of a
    sequential draw)."""
    _no_generator(ctx, 3)
    w = ctx.tensor(0)
    ndim = ctx.ndim(w)
    if ndim not in (1, 2):
        raise ctx.error(f"prob_dist must be 1 or 2 dim, got {ndim}")
    n = _int(ctx, ctx.arg(1, "num_samples"), "num_samples")
    replacement = bool(ctx.arg(2, "replacement", False))
    k = ctx.shape(w)[-1]
    if n <= 0:
        raise ctx.error("cannot sample n_sample <= 0 samples")
    if not replacement and isinstance(k, int) and n > k:
        raise ctx.error("cannot sample n_sample > prob_dist.size(-1) samples without "
                        "replacement")
    comp = _compute_dtype(ctx.dtype(w))
    w = ctx.astype(w, comp)
    lead = ctx.shape(w)[:-1]
    if replacement:
        cdf = ctx.emit(_op.cumsum(w, -1))
        total = _op.max(cdf, -1, True)  # the last entry (weights are >= 0)
        u = uniform(ctx, [*lead, n], comp)
        target = _op.expand_dims(_op.multiply(u, total), -1)  # (..., n, 1)
        below = _op.less_equal(_op.expand_dims(cdf, -2), target)  # (..., n, k)
        idx = _op.sum(_op.astype(below, "int64"), -1)
        last = ctx.importer.to_expr(k - 1 if isinstance(k, int) else k - 1, "int64")
        return _op.minimum(idx, ctx.astype(last, "int64"))
    u = uniform(ctx, ctx.shape(w), comp)
    race = _op.negative(_op.log1p(_op.negative(u)))  # Exp(1)
    inf = ctx.const(float("inf"), comp)
    zero = ctx.const(0.0, comp)
    keys = _op.where(_op.greater(w, zero), _op.divide(race, w), inf)
    return _op.topk(keys, n, -1, "indices", False, "int64")


# -- rrelu ------------------------------------------------------------------------------------
@converter("aten.rrelu_with_noise_functional.default")
def _rrelu(ctx: NodeContext) -> Any:
    """rrelu_with_noise_functional(self, noise, lower=1/8, upper=1/3, training=False) ->
    (out, noise): in training each ``x <= 0`` is scaled by a slope drawn from
    U[lower, upper) (``noise`` holds the slopes, 1 elsewhere); otherwise the slope is
    (lower + upper) / 2 and ``noise`` is returned as given."""
    _no_generator(ctx, 5)
    x = ctx.tensor(0)
    noise = ctx.tensor(1)
    lower = _number(ctx, ctx.arg(2, "lower", 1.0 / 8), "lower")
    upper = _number(ctx, ctx.arg(3, "upper", 1.0 / 3), "upper")
    training = bool(ctx.arg(4, "training", False))
    dtype = ctx.dtype(x)
    if dtype not in _FLOATS:
        raise ctx.unsupported(f"input dtype {dtype} (a floating-point tensor is needed)")
    zero = ctx.const(0.0, dtype)
    if not training:
        slope = ctx.const((lower + upper) / 2, dtype)
        return [_op.where(_op.greater_equal(x, zero), x, _op.multiply(x, slope)), noise]
    if lower > upper:
        raise ctx.error(f"rrelu: lower bound {lower} is greater than upper bound {upper}")
    comp = _compute_dtype(dtype)
    slopes = ctx.astype(uniform(ctx, ctx.shape(x), comp, lower, upper), dtype)
    nonpos = _op.less_equal(x, zero)
    out = _op.where(nonpos, _op.multiply(x, slopes), x)
    new_noise = _op.where(nonpos, slopes, ctx.const(1.0, dtype))
    return [out, ctx.astype(new_noise, ctx.out_dtype(1) or dtype)]


# -- dropout ----------------------------------------------------------------------------------
_ALPHA = 1.7580993408473766  # SELU's alpha * scale: alpha dropout's saturation value


def keep_mask(ctx: NodeContext, shape: list, p: float) -> Any:
    """A bool mask of ``shape``, each entry True with probability ``1 - p``."""
    return _op.less(uniform(ctx, shape, "float32"), ctx.const(1.0 - p, "float32"))


def dropout(ctx: NodeContext, x: Any, p: float) -> tuple[Any, Any]:
    """``(x * mask / (1 - p), mask)`` with a fresh mask (zeros and an all-false mask for
    p = 1, as torch gives)."""
    if not 0 <= p <= 1:
        raise ctx.error(f"dropout probability has to be between 0 and 1, but got {p}")
    dtype = ctx.dtype(x)
    mask = ctx.emit(keep_mask(ctx, ctx.shape(x), p))
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    out = _op.multiply(_op.multiply(x, _op.astype(mask, dtype)), ctx.const(scale, dtype))
    return out, mask


@converter("aten.native_dropout.default")
def _native_dropout(ctx: NodeContext) -> Any:
    """native_dropout(input, p, train) -> (output, mask); not training: the input and an
    all-true mask."""
    x = ctx.tensor(0)
    p = _number(ctx, ctx.arg(1, "p"), "p")
    if not ctx.arg(2, "train"):
        return [x, _op.ones(ctx.shape(x), "bool")]
    out, mask = dropout(ctx, x, p)
    return [out, mask]


@converter("aten.dropout.default", "aten.feature_dropout.default", "aten.alpha_dropout.default",
           "aten.feature_alpha_dropout.default")
def _dropout(ctx: NodeContext) -> Any:
    """(input, p, train): torch's ``_dropout_impl``; ``feature_*`` drop whole channels
    (a mask of shape (N, C, 1, ...)), ``alpha_*`` keep SELU's mean and variance."""
    x = ctx.tensor(0)
    p = _number(ctx, ctx.arg(1, "p"), "p")
    if not 0 <= p <= 1:
        raise ctx.error(f"dropout probability has to be between 0 and 1, but got {p}")
    if not ctx.arg(2, "train") or p == 0:
        return x
    dtype = ctx.dtype(x)
    if p == 1:
        return _op.multiply(x, ctx.const(0.0, dtype))
    feature = "feature" in ctx.op
    alpha = "alpha" in ctx.op
    shape = ctx.shape(x)
    if feature:
        if len(shape) < 2:
            raise ctx.error("feature dropout needs an input of at least 2 dimensions "
                            "(N, C, ...)")
        shape = [shape[0], shape[1]] + [1] * (len(shape) - 2)
    noise = _op.astype(keep_mask(ctx, shape, p), dtype)
    if not alpha:
        return _op.multiply(x, _op.multiply(noise, ctx.const(1.0 / (1.0 - p), dtype)))
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    noise = ctx.emit(noise)
    b = _op.add(_op.multiply(_op.subtract(noise, ctx.const(1.0, dtype)),
                             ctx.const(_ALPHA * a, dtype)), ctx.const(_ALPHA * a * p, dtype))
    return _op.add(_op.multiply(x, _op.multiply(noise, ctx.const(a, dtype))), b)


def sdpa_dropout(ctx: NodeContext, q: Any, k: Any, v: Any, p: float) -> Any:
    """scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale,
    enable_gqa) with ``dropout_p > 0``: ``dropout(softmax(q k^T * scale + mask)) v`` on
    (..., L, E) tensors, as torch's math path computes it (a row that sees no key gives 0)."""
    dtype = ctx.dtype(q)
    qs, ks = ctx.shape(q), ctx.shape(k)
    nd = len(qs)
    mask = ctx.arg(3, "attn_mask")
    causal = bool(ctx.arg(5, "is_causal", False))
    scale = ctx.arg(6, "scale")
    if causal and mask is not None:
        raise ctx.error("attn_mask and is_causal=True together")
    if nd >= 3 and isinstance(qs[-3], int) and isinstance(ks[-3], int) and qs[-3] != ks[-3]:
        if not ctx.arg(7, "enable_gqa", False) or qs[-3] % ks[-3]:
            raise ctx.error(f"query has {qs[-3]} heads and key {ks[-3]}: grouped-query "
                            "attention needs enable_gqa=True and a multiple")
        k, v = (_op.repeat(t, qs[-3] // ks[-3], nd - 3) for t in (k, v))
    if scale is None:
        if not isinstance(qs[-1], int):
            raise ctx.unsupported("a symbolic head size without an explicit scale")
        scale = 1.0 / math.sqrt(qs[-1])
    perm = list(range(nd - 2)) + [nd - 1, nd - 2]
    scores = _op.multiply(_op.matmul(q, _op.permute_dims(k, perm)),
                          ctx.const(float(scale), dtype))
    seen = None
    if causal:
        lq, lk = qs[-2], ks[-2]
        if not (isinstance(lq, int) and isinstance(lk, int)):
            raise ctx.unsupported("is_causal with symbolic sequence lengths and dropout")
        mask = _op.tril(_op.ones([lq, lk], "bool"))
    elif mask is not None:
        mask = ctx.tensor(3, "attn_mask")
    if mask is not None and ctx.dtype(mask) == "bool":
        low = ctx.const(float(np.finfo(to_numpy_dtype(dtype)).min), dtype)
        scores = _op.where(mask, scores, low)
        seen = _op.max(_op.astype(mask, "int32"), [-1], True)
    elif mask is not None:
        scores = _op.add(scores, ctx.astype(mask, dtype))
    weights = ctx.emit(_op.nn.softmax(scores, -1))
    dropped, _ = dropout(ctx, weights, p)
    out = _op.matmul(dropped, v)
    if seen is not None:
        out = _op.where(_op.astype(seen, "bool"), out, ctx.const(0.0, dtype))
    return out
