"""nn converters end to end: convolution, pooling, normalization, attention, resizing,
shuffles and recurrences exported, imported, built for llvm and compared with eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

from torch_testing import check


def _flat(value):
    if isinstance(value, (list, tuple)):
        return tuple(t for v in value for t in _flat(v))
    return (value,)


class Fn(nn.Module):
    """``fn(*args)`` with its (nested) outputs flattened into one tuple."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return _flat(self.fn(*args))


def _r(*shape):
    return torch.randn(*shape)


X3, X4, X5 = _r(2, 4, 11), _r(2, 4, 9, 9), _r(2, 4, 5, 6, 7)

CASES = {
    "conv": (lambda x1, x2, x3, w1, w2, w3, t1, t2, t3: (
        F.conv1d(x1, w1, stride=2, padding=2),
        F.conv2d(x2, w2, stride=2, padding=1, dilation=2, groups=2),
        F.conv2d(x2, w2, padding="same", groups=2),
        F.conv3d(x3, w3, padding=1),
        F.conv_transpose1d(x1, t1, stride=3, padding=1, output_padding=2, dilation=2),
        F.conv_transpose2d(x2, t2, stride=2, padding=1, output_padding=1, groups=2),
        F.conv_transpose3d(x3, t3, stride=2)),
        [X3, X4, X5, _r(5, 4, 3), _r(6, 2, 3, 3), _r(3, 4, 3, 3, 3), _r(4, 3, 3),
         _r(4, 3, 3, 3), _r(4, 2, 2, 2, 2)]),
    "max_pool": (lambda x1, x2, x3, unbatched: (
        F.max_pool1d(x1, 3, 2, 1, ceil_mode=True, return_indices=True),
        F.max_pool2d(x2, 3, 2, 1, ceil_mode=True),
        F.max_pool2d(x2, 3, 2, 1, dilation=2, return_indices=True),
        F.max_pool3d(x3, 2, return_indices=True),
        F.max_pool2d(unbatched, 2)), [X3, X4, X5, X4[0]]),
    "avg_pool": (lambda x1, x2, x3: (
        F.avg_pool1d(x1, 4, 3, 2, ceil_mode=True),
        F.avg_pool2d(x2, 3, 2, 1, ceil_mode=True, count_include_pad=True),
        F.avg_pool2d(x2, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        F.avg_pool2d(x2, 3, 2, 1, ceil_mode=True, divisor_override=5),
        F.avg_pool3d(x3, 2, padding=1, count_include_pad=False)), [X3, X4, X5]),
    "adaptive": (lambda x1, x2, x3: (
        F.adaptive_avg_pool1d(x1, 4), F.adaptive_avg_pool2d(x2, (4, 3)),
        F.adaptive_avg_pool3d(x3, 2), F.adaptive_max_pool1d(x1, 5),
        F.adaptive_max_pool2d(x2, 3, return_indices=True),
        F.adaptive_max_pool2d(x2, (4, 5), return_indices=True),
        F.adaptive_max_pool3d(x3, (2, 4, 3), return_indices=True)), [X3, X4, X5]),
    "norm": (lambda x, x1, m, v, w, b, w2, b2, w9: (
        F.batch_norm(x, m, v, w, b, False, 0.1, 1e-3),
        F.layer_norm(x, (9, 9), w2, b2), F.layer_norm(x, (9,)),
        torch.native_layer_norm(x, (9,), None, None, 1e-5),
        F.group_norm(x, 2, w, b), F.group_norm(x1, 4),
        torch.native_group_norm(x, w, b, 2, 4, 81, 2, 1e-5),
        F.instance_norm(x), F.rms_norm(x, (9,), w9), F.rms_norm(x, (9, 9), eps=1e-3)),
        [X4, X3, _r(4), torch.rand(4) + 0.5, _r(4), _r(4), _r(9, 9), _r(9, 9), _r(9)]),
    "attention": (lambda q, k, v, bm, fm, q3, k3, v3, q5, k5, v5, m5, qg: (
        F.scaled_dot_product_attention(q, k, v),
        F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
        F.scaled_dot_product_attention(q, k, v, attn_mask=bm),
        F.scaled_dot_product_attention(q, k, v, attn_mask=fm),
        F.scaled_dot_product_attention(q3, k3, v3),
        F.scaled_dot_product_attention(q5, k5, v5, attn_mask=m5),
        F.scaled_dot_product_attention(qg, k, v, enable_gqa=True)),
        [_r(2, 3, 5, 8), _r(2, 3, 7, 8), _r(2, 3, 7, 4), torch.rand(5, 7) > 0.5,
         _r(2, 1, 5, 7), _r(2, 5, 8), _r(2, 7, 8), _r(2, 7, 4), _r(2, 2, 3, 5, 8),
         _r(2, 2, 3, 7, 8), _r(2, 2, 3, 7, 4), torch.rand(3, 5, 7) > 0.3, _r(2, 6, 5, 8)]),
    "masked_rows": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                    [_r(1, 2, 3, 4), _r(1, 2, 5, 4), _r(1, 2, 5, 4),
                     torch.tensor([[True] * 5, [False] * 5, [True, False] * 2 + [True]])]),
    "resize": (lambda x1, x2, x3: (
        F.interpolate(x2, scale_factor=2, mode="nearest"),
        F.interpolate(x2, size=(5, 13), mode="nearest"),
        F.interpolate(x2, scale_factor=2, mode="bilinear"),
        F.interpolate(x2, size=(5, 13), mode="bilinear", align_corners=True),
        F.interpolate(x2, size=(5, 13), mode="bicubic"),
        F.interpolate(x2, scale_factor=2, mode="bicubic", align_corners=True),
        F.interpolate(x1, size=17, mode="linear"),
        F.interpolate(x1, scale_factor=3, mode="nearest"),
        F.interpolate(x3, scale_factor=2, mode="trilinear"),
        F.interpolate(x3, size=(3, 8, 9), mode="nearest"),
        F.interpolate(x2, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)),
        [X3, X4, X5]),
    "resize_inexact_scale": (lambda x1, x2: (
        F.interpolate(x2, scale_factor=1.7, mode="nearest"),
        F.interpolate(x2, scale_factor=(1.7, 0.6), mode="bilinear"),
        F.interpolate(x2, scale_factor=1.3, mode="bicubic"),
        F.interpolate(x1, scale_factor=2.3, mode="linear")), [X3, X4]),
    "shuffle": (lambda x: (F.pixel_shuffle(x, 2), F.pixel_unshuffle(x, 3),
                           F.channel_shuffle(x, 2)), [X4]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_nn_ops_match_eager(name):
    torch.manual_seed(0)
    fn, args = CASES[name]
    check(Fn(fn), args, rtol=1e-4, atol=1e-4)


def test_conv_bn_pool_dynamic_batch():
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, groups=4),
                          nn.AdaptiveAvgPool2d(2), nn.Upsample(scale_factor=2))
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    batch = Dim("batch", min=1, max=8)
    check(model, [_r(2, 3, 12, 12)], rtol=1e-4, atol=1e-4,
          dynamic_shapes=({0: batch},), more_args=[[_r(1, 3, 12, 12)], [_r(8, 3, 12, 12)]])


@pytest.mark.parametrize("make", [
    lambda: nn.LSTM(4, 6, num_layers=2, batch_first=True),
    lambda: nn.LSTM(4, 6, bidirectional=True, proj_size=3, batch_first=True),
    lambda: nn.GRU(4, 6, num_layers=2, bidirectional=True, batch_first=True),
    lambda: nn.RNN(4, 6, nonlinearity="relu", bias=False, batch_first=True),
], ids=["lstm2", "lstm_bi_proj", "gru_bi2", "rnn_relu"])
def test_recurrent_dynamic_batch(make):
    """Initial states passed in (no zeros op needed), the batch a Dim."""
    torch.manual_seed(0)
    rnn = make().eval()
    layers = rnn.num_layers * (2 if rnn.bidirectional else 1)
    hsize = rnn.proj_size or rnn.hidden_size if isinstance(rnn, nn.LSTM) else rnn.hidden_size

    lstm = isinstance(rnn, nn.LSTM)

    def states(b):
        h = _r(layers, b, hsize)
        return [h, _r(layers, b, rnn.hidden_size)] if lstm else [h]

    model = Fn(lambda x, *hx: rnn(x, tuple(hx) if lstm else hx[0]))
    batch = Dim("batch", min=1, max=8)
    shapes = ({0: batch},) + ({1: batch},) * (2 if lstm else 1)
    check(model, [_r(3, 5, 4), *states(3)], rtol=1e-4, atol=1e-4, dynamic_shapes=(shapes,),
          more_args=[[_r(1, 5, 4), *states(1)], [_r(8, 5, 4), *states(8)]])
