"""The walkthrough and ResNet-18 (the BlockBuilder network of tests/test_relax_gpu_resnet.py)
built for ``vulkan`` (the target kind's defaults, and ``tvm.target.vulkan.device_target()``:
the device's limits and subgroup size) and for ``llvm``, each timed with ``VirtualMachine.time_evaluator``::

    python benchmarks/vulkan_models.py [--repeats 5]

On a machine without a GPU, ``vulkan`` runs on lavapipe (Mesa's Vulkan on the CPU), so the
numbers say what the Vulkan path costs there, not what a GPU would do.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _models() -> dict:
    from test_relax_gpu_resnet import resnet18_blockbuilder
    from walkthrough_model import Walkthrough, walkthrough_inputs

    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype("float32")
    return {"walkthrough": (Walkthrough, walkthrough_inputs()),
            "resnet18 (width 8, 32x32)": (resnet18_blockbuilder(), [x])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    from tvm import relax
    from tvm.target.vulkan import device_target
    from tvm.target.vulkan.plugin import ensure_registered

    import tvm.runtime as rt

    ensure_registered()
    dev = rt.vulkan(0)
    print(f"vulkan device: {dev.api.attributes(dev)['name']}; device target: "
          f"{device_target(0)!r}")
    for name, (mod, inputs) in _models().items():
        row = [name]
        outs = []
        for label, target, device in (("vulkan", "vulkan", dev),
                                      ("vulkan device_target", device_target(0), dev),
                                      ("llvm", "llvm", rt.cpu())):
            vm = relax.VirtualMachine(relax.build(mod, target=target), device)
            outs.append(vm["main"](*inputs).numpy())
            res = vm.time_evaluator("main", number=1, repeat=args.repeats)(*inputs)
            row.append(f"{label} {res.median * 1e3:.2f} ms")
        diff = max(np.abs(o - outs[-1]).max() for o in outs[:-1])
        row.append(f"max |vulkan - llvm| {diff:.2e}")
        print(" | ".join(row))


if __name__ == "__main__":
    main()
