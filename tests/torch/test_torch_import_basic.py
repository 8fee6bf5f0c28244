"""from_exported_program end to end: a conv/bn/linear model with a dynamic batch matches
eager, and one artifact serves every batch size in the Dim's range."""

from __future__ import annotations

import torch
from torch.export import Dim

from torch_testing import check


class ConvBnLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean(dim=(2, 3))).softmax(-1) * 2 - 1


def test_dynamic_batch_matches_eager():
    torch.manual_seed(0)
    model = ConvBnLinear()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    batch = Dim("batch", min=1, max=8)
    check(model, [torch.randn(2, 3, 16, 16)], dynamic_shapes={"x": {0: batch}},
          more_args=[[torch.randn(1, 3, 16, 16)], [torch.randn(8, 3, 16, 16)]])
