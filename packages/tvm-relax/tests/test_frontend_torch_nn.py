"""PyTorch frontend, nn converters: which Relax operators the layers import as (the big ATen
operators stay whole) and the errors for what an inference importer rejects.  No builds."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from tvm.relax.frontend.torch import OpNotSupported, from_exported_program  # noqa: E402


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _imported(model, *args) -> str:
    ep = torch.export.export(model.eval(), args)
    return str(from_exported_program(ep))


@pytest.mark.parametrize("model, args, expect", [
    (Fn(lambda x: F.layer_norm(x, (8,))), (torch.randn(2, 8),), "nn.layer_norm"),
    (Fn(lambda x: F.group_norm(x, 2)), (torch.randn(2, 4, 3),), "nn.group_norm"),
    (Fn(lambda x: F.rms_norm(x, (8,))), (torch.randn(2, 8),), "nn.rms_norm"),
    (Fn(lambda x: F.max_pool2d(x, 2)), (torch.randn(1, 2, 4, 4),), "nn.max_pool2d"),
    (Fn(lambda x: F.adaptive_avg_pool2d(x, 1)), (torch.randn(1, 2, 4, 4),),
     "nn.adaptive_avg_pool2d"),
    (Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v)),
     (torch.randn(1, 2, 3, 4),) * 3, "nn.attention"),
    (Fn(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear")),
     (torch.randn(1, 2, 4, 4),), "image.resize2d"),
    (nn.Conv2d(2, 3, 3), (torch.randn(1, 2, 5, 5),), "nn.conv2d"),
    (nn.ConvTranspose1d(2, 3, 3), (torch.randn(1, 2, 5),), "nn.conv1d_transpose"),
    (nn.BatchNorm2d(2), (torch.randn(1, 2, 3, 3),), "nn.batch_norm"),
])
def test_layers_stay_whole(model, args, expect):
    text = _imported(model, *args)
    assert f"R.{expect}(" in text or f"relax.{expect}" in text, text


def test_max_pool_indices_only_when_read():
    plain = _imported(Fn(lambda x: F.max_pool2d(x, 2, return_indices=True)[0]),
                      torch.randn(1, 2, 4, 4))
    both = _imported(Fn(lambda x: F.max_pool2d(x, 2, return_indices=True)),
                     torch.randn(1, 2, 4, 4))
    assert "max_pool_with_indices" not in plain
    assert "max_pool_with_indices" in both


def test_lstm_imports_as_one_recurrence_per_layer_and_direction():
    text = _imported(nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True),
                     torch.randn(2, 5, 3), (torch.zeros(4, 2, 4), torch.zeros(4, 2, 4)))
    assert text.count("R.nn.recurrence(") == 2 * 2
    assert text.count("reverse=True") == 2
    assert "R.sigmoid(" not in text  # not decomposed, not unrolled


def test_gru_imports_as_recurrence_with_reset_after_the_recurrent_bias():
    text = _imported(nn.GRU(3, 4, batch_first=True), torch.randn(2, 5, 3), torch.zeros(1, 2, 4))
    assert text.count("R.nn.recurrence(") == 1
    assert "linear_before_reset=True" in text


def test_lstm_with_projections_is_unrolled():
    text = _imported(nn.LSTM(3, 4, proj_size=2, batch_first=True), torch.randn(2, 5, 3),
                     (torch.zeros(1, 2, 2), torch.zeros(1, 2, 4)))
    assert "R.nn.recurrence(" not in text
    assert text.count("R.sigmoid(") == 3 * 5  # i, f, o gates per step


def _raises(model, args, match):
    ep = torch.export.export(model, args)
    with pytest.raises(OpNotSupported, match=match):
        from_exported_program(ep)


def test_training_batch_norm_uses_batch_statistics():
    """A batch norm in training mode normalises with the batch's statistics; the running
    statistics it would update are buffer mutations, which the importer warns it drops."""
    model = nn.BatchNorm2d(2).train()
    ep = torch.export.export(model, (torch.randn(2, 2, 3, 3),))
    with pytest.warns(UserWarning, match="mutates state"):
        text = str(from_exported_program(ep))
    assert "R.variance(" in text and "R.nn.batch_norm(" not in text, text


def test_attention_dropout_draws_a_mask():
    # dropout_p > 0: explicit softmax and a random mask (ops_random), not relax.nn.attention
    model = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5))
    text = _imported(model, *(torch.randn(1, 2, 3, 4),) * 3)
    assert "R.random.uniform(" in text and "R.nn.softmax(" in text
    assert "R.nn.attention(" not in text


def test_inexact_scale_factor_imports_as_tables():
    """A scale factor that is not out / in (torch samples at dst / scale) becomes a gather or
    an interpolation matmul instead of Relax's resize."""
    text = _imported(Fn(lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear")),
                     torch.randn(1, 2, 9, 9))
    assert "resize2d" not in text and text.count("R.matmul(") == 2


def test_uneven_adaptive_max_indices_gather_windows():
    text = _imported(Fn(lambda x: F.adaptive_max_pool2d(x, 3, return_indices=True)),
                     torch.randn(1, 2, 7, 7))
    assert "R.argmax(" in text


def test_symbolic_sequence_length_fails_at_export():
    """torch.export specializes an LSTM's sequence length: a Dim on it is torch's error."""
    seq = torch.export.Dim("seq", min=2, max=16)
    with pytest.raises(Exception, match="specialized"):
        torch.export.export(nn.LSTM(3, 4, batch_first=True), (torch.randn(2, 5, 3),),
                            dynamic_shapes=({1: seq},))
