"""Post-training quantization on real data: a small CNN trained here on scikit-learn's
handwritten digits (1,797 8x8 images that ship inside the package), imported from
torch.export, quantized by relax.quantize (min-max calibration on 200 training images,
uint8 activations, int8 per-channel weights), built for llvm: its top-1 accuracy on the
held-out fifth is within one point of the float build's."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("sklearn.datasets")
pytest.importorskip("tvm.relax.frontend.torch")

import tvm.runtime  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.frontend.torch import from_exported_program  # noqa: E402
from tvm.relax.quantize import QuantizeConfig, quantize  # noqa: E402


def _ensure_llvm() -> None:
    from tvm.ffi.plugin import get_plugin_info, register_plugin

    if get_plugin_info("llvm") is None:
        import tvm.target.llvm.plugin as plugin

        register_plugin(plugin, "llvm", distribution="tvm-target-llvm")


def _trained_net(x: np.ndarray, y: np.ndarray) -> "torch.nn.Module":
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(32 * 16, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 10))
    opt = torch.optim.Adam(net.parameters(), 3e-3)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one summation order: the same weights on every run
    try:
        for _ in range(15):
            perm = torch.randperm(len(x))
            for i in range(0, len(x), 64):
                b = perm[i:i + 64]
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(xt[b]), yt[b]).backward()
                opt.step()
    finally:
        torch.set_num_threads(threads)
    return net.eval()


def _top1(mod, x: np.ndarray, y: np.ndarray) -> float:
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    logits = np.concatenate([vm["main"](x[i:i + 1]).numpy() for i in range(len(x))])
    return float((logits.argmax(1) == y).mean())


def test_int8_digits_classifier_loses_at_most_one_point_of_top1() -> None:
    _ensure_llvm()
    digits = datasets.load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    train, test = order[: int(0.8 * len(x))], order[int(0.8 * len(x)):]
    net = _trained_net(x[train], y[train])
    mod = from_exported_program(torch.export.export(net, (torch.from_numpy(x[:1]),)))
    calibration = [x[train][i:i + 1] for i in range(200)]
    qmod, report = quantize(mod, calibration, QuantizeConfig(calibrate="minmax"))
    assert len(report.layers) == 4 and report.cosine > 0.999, str(report)
    fp32, int8 = _top1(mod, x[test], y[test]), _top1(qmod, x[test], y[test])
    assert fp32 > 0.95, f"the float model did not train: top-1 {fp32:.3f}"
    assert fp32 - int8 <= 0.01, f"top-1 {fp32:.4f} (fp32) vs {int8:.4f} (int8)\n{report}"
