"""Whole models through from_exported_program: ResNet-18, MobileNetV2, a BERT-style encoder
(fused and manual attention) and LSTM / GRU classifiers, each exported once with a dynamic
batch (1 to 8) and matching eager within 1e-4 at batch 1, 3 and 8 from that one artifact."""

from __future__ import annotations

import numpy as np
import pytest
from torch.export import Dim

import torch_testing as tt
from torch_models import dynamic_batch_shapes, make_model

# small inputs keep the builds and runs short: 64x64 images, 16-token sequences
SIZES = {"image": 64, "seq": 16}


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "bert", "bert_manual", "lstm",
                                  "gru"])
def test_model_dynamic_batch_matches_eager(name):
    model, args = make_model(name, batch=2, **SIZES)
    batch = Dim("batch", min=1, max=8)
    vm = tt.build(tt.export(model, args, dynamic_batch_shapes(name, batch)))
    for b in (1, 3, 8):
        _, case = make_model(name, batch=b, **SIZES)
        got, want = tt.run(vm, case), tt.eager(model, case)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_batch_outside_the_dim_range_is_rejected():
    """The artifact's memory is planned for batch <= 8; a larger batch is an error, not an
    overrun."""
    model, args = make_model("bert", batch=2, **SIZES)
    vm = tt.build(tt.export(model, args, dynamic_batch_shapes("bert", Dim("b", min=1, max=8))))
    _, big = make_model("bert", batch=9, **SIZES)
    with pytest.raises(Exception):
        tt.run(vm, big)
