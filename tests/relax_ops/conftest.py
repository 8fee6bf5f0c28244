"""Numerical tests of the Relax operators: legalized PrimFuncs built for a target vs numpy.

Every test of the folder runs once per target of :data:`relax_op_harness.TARGETS` (the
autouse fixture ``relax_target``; its id ends the test id: ``test_exp[llvm]``,
``test_exp[vulkan]``): llvm, and the GPU targets OpenCL (pocl in CI), Vulkan and WebGPU
(both on lavapipe in CI), each with the default GPU schedules.  A GPU target whose device or
driver is missing skips with the reason of ``tests/relax_gpu_util.py`` (which CI, with
``--forbid-skips``, does not allow: CI installs them).  Select targets with ``-k``:
``pytest tests/relax_ops -k vulkan``.

The cases a target cannot run are listed in :data:`gpu_refusals.REFUSED`: each must fail with
the compiler's refusal (the error text is checked) and is then reported as xfailed; one that
runs instead fails, so the table stays true.

They need the llvm target (tvm-target-llvm); without it the whole folder is skipped.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

try:
    import tvm.target.llvm.plugin as _llvm_plugin
except ImportError:  # pragma: no cover - depends on the installed distributions
    _llvm_plugin = None

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/relax_gpu_util.py

from gpu_refusals import expected_refusal  # noqa: E402
from relax_op_harness import TARGETS, use_target  # noqa: E402


def _missing(target: str) -> str | None:
    """Why ``target`` cannot run here, or None."""
    if target == "llvm":
        return None
    import relax_gpu_util as gpu

    return {"opencl": gpu.OPENCL_MISSING, "vulkan": gpu.VULKAN_MISSING,
            "webgpu": gpu.WEBGPU_MISSING}[target]


def _target_params() -> list:
    params = []
    for t in TARGETS:
        why = _missing(t) if _llvm_plugin is not None else None
        marks = [pytest.mark.skipif(why is not None, reason=f"{t}: {why}")] if why else []
        params.append(pytest.param(t, id=t, marks=marks))
    return params


@pytest.fixture(autouse=True, params=_target_params())
def relax_target(request):
    """The target the test's ``run_op`` / ``relax.build`` calls use."""
    with use_target(request.param) as target:
        yield target


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook signature
    if _llvm_plugin is None:
        skip = pytest.mark.skip(reason="tvm.target.llvm (tvm-target-llvm) is not installed")
        for item in items:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A case of :data:`gpu_refusals.REFUSED` must fail with its refusal (then: xfailed)."""
    target = pyfuncitem.callspec.params.get("relax_target") \
        if hasattr(pyfuncitem, "callspec") else None
    refusal = expected_refusal(pyfuncitem.nodeid, target) if target else None
    if refusal is None:
        return (yield)
    try:
        yield
    except Exception as err:  # noqa: BLE001 - checked against the expected refusal below
        if not re.search(refusal.error, str(err)):
            raise AssertionError(
                f"{pyfuncitem.name} should be refused on {target} with an error matching "
                f"{refusal.error!r} ({refusal.reason}), but failed otherwise") from err
        pytest.xfail(f"refused on {target}: {refusal.reason}")
    pytest.fail(f"{pyfuncitem.name} is listed in tests/relax_ops/gpu_refusals.py as refused on "
                f"{target} ({refusal.reason}) but it ran and passed: remove it from the table",
                pytrace=False)


def pytest_configure(config):  # noqa: ARG001 - pytest hook signature
    if _llvm_plugin is None:
        return
    from tvm.ffi.plugin import get_plugin_info, register_plugin

    if get_plugin_info("llvm") is None:
        register_plugin(_llvm_plugin, "llvm", distribution="tvm-target-llvm")
