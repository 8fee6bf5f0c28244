"""The walkthrough model (R.matmul + R.add bias, 128x256 @ 256x512 + 512), shared by the
end-to-end tests that build it for the host, GPUs, cross targets and qemu."""

from __future__ import annotations

import numpy as np
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Walkthrough:
    @R.function
    def main(x: R.Tensor((128, 256), "float32"), w: R.Tensor((256, 512), "float32"),
             b: R.Tensor((512,), "float32")) -> R.Tensor((128, 512), "float32"):
        with R.dataflow():
            lv = R.matmul(x, w)
            gv = R.add(lv, b)
            R.output(gv)
        return gv


def walkthrough_inputs(seed: int = 0) -> list[np.ndarray]:
    """Random ``x, w, b`` for :class:`Walkthrough`."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s, dtype="float32") for s in ((128, 256), (256, 512), (512,))]


def walkthrough_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return x @ w + b
