"""Reference architectures for the PyTorch frontend's model tests and benchmarks, written out
here (torchvision is not a dependency): ResNet-18, MobileNetV2, a BERT-style encoder and an
LSTM/GRU sequence classifier.  Weights are seeded random; ``make_model(name)`` returns a model
in eval mode with non-trivial batch-norm statistics and an example input."""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn


# -- ResNet-18 --------------------------------------------------------------------------------
class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        skip = x if self.downsample is None else self.downsample(x)
        return F.relu(y + skip)


class ResNet18(nn.Module):
    """torchvision's resnet18 layout: a 7x7 stem, four stages of two basic blocks."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths, layers, cin = (64, 128, 256, 512), [], 64
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
            cin = w
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# -- MobileNetV2 ------------------------------------------------------------------------------
def _conv_bn(cin: int, cout: int, k: int, stride: int, groups: int = 1,
             act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups,
                                         bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [_conv_bn(cin, hidden, 1, 1)]
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden),
                   _conv_bn(hidden, cout, 1, 1, act=False)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    """torchvision's mobilenet_v2 (width 1.0): inverted residuals with depthwise convs."""

    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [_conv_bn(3, 32, 3, 2)]
        cin = 32
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(_conv_bn(cin, 1280, 1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


# -- BERT-style encoder -----------------------------------------------------------------------
class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, fused: bool):
        super().__init__()
        self.heads, self.fused = heads, fused
        self.query, self.key, self.value = (nn.Linear(dim, dim) for _ in range(3))
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, h, d // h).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        if self.fused:
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:  # the manual form older BERT code uses
            scores = q @ k.transpose(-1, -2) / math.sqrt(d // h) + mask
            ctx = torch.softmax(scores, dim=-1) @ v
        return self.out(ctx.transpose(1, 2).reshape(b, s, d))


class EncoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, ffn: int, fused: bool):
        super().__init__()
        self.attention = SelfAttention(dim, heads, fused)
        self.norm1 = nn.LayerNorm(dim, eps=1e-12)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn), nn.GELU(), nn.Linear(ffn, dim))
        self.norm2 = nn.LayerNorm(dim, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.dropout(self.attention(x, mask)))
        return self.norm2(x + self.dropout(self.ffn(x)))


class BertEncoder(nn.Module):
    """Token + position + segment embeddings, post-norm encoder layers (multi-head attention,
    GELU FFN) and a tanh pooler over the first token; ``attention_mask`` (B, S) of 1/0."""

    def __init__(self, vocab: int = 1000, dim: int = 128, layers: int = 2, heads: int = 4,
                 ffn: int = 512, max_len: int = 128, fused: bool = True):
        super().__init__()
        self.word = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_len, dim)
        self.segment = nn.Embedding(2, dim)
        self.norm = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads, ffn, fused) for _ in range(layers))
        self.pooler = nn.Linear(dim, dim)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        s = input_ids.shape[1]
        positions = torch.arange(s, device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.position(positions) + self.segment(
            torch.zeros_like(input_ids))
        x = self.norm(x)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


# -- recurrent sequence model -----------------------------------------------------------------
class RecurrentClassifier(nn.Module):
    """Embedding, a 2-layer LSTM (or a bidirectional GRU), a linear head on the last step."""

    def __init__(self, kind: str = "lstm", vocab: int = 500, dim: int = 64, hidden: int = 128,
                 classes: int = 10):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        if kind == "lstm":
            self.rnn: nn.Module = nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
            width = hidden
        else:
            self.rnn = nn.GRU(dim, hidden, batch_first=True, bidirectional=True)
            width = 2 * hidden
        self.head = nn.Linear(width, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.embed(tokens))
        return self.head(out[:, -1])


# -- factory ----------------------------------------------------------------------------------
def _randomize_bn(model: nn.Module) -> nn.Module:
    """Running statistics and affine parameters away from the identity, so a batch norm that
    is imported wrong shows."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(c, generator=gen) * 0.1)
    return model


def make_model(name: str, batch: int = 1, image: int = 64, seq: int = 32
               ) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A seeded model in eval mode and an example input for it."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(2)
    if name in ("resnet18", "mobilenet_v2"):
        model = _randomize_bn(ResNet18() if name == "resnet18" else MobileNetV2())
        return model.eval(), (torch.randn(batch, 3, image, image, generator=gen),)
    if name in ("bert", "bert_manual"):
        model = BertEncoder(fused=name == "bert")
        ids = torch.randint(0, 1000, (batch, seq), generator=gen)
        mask = torch.ones(batch, seq, dtype=torch.int64)
        mask[:, seq * 3 // 4:] = 0  # padded tail
        return model.eval(), (ids, mask)
    if name in ("lstm", "gru"):
        model = RecurrentClassifier(name)
        return model.eval(), (torch.randint(0, 500, (batch, seq), generator=gen),)
    raise ValueError(f"unknown model {name!r}; one of {', '.join(MODELS)}")


MODELS: dict[str, Callable] = {name: make_model for name in (
    "resnet18", "mobilenet_v2", "bert", "bert_manual", "lstm", "gru")}


def dynamic_batch_shapes(name: str, batch: torch.export.Dim) -> dict:
    """``dynamic_shapes`` marking axis 0 of every input of model ``name`` as ``batch``."""
    if name.startswith("bert"):
        return {"input_ids": {0: batch}, "attention_mask": {0: batch}}
    if name in ("lstm", "gru"):
        return {"tokens": {0: batch}}
    return {"x": {0: batch}}
