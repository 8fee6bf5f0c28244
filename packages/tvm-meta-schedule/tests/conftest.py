"""The tuner's tests build, measure or target llvm kernels: where tvm-target-llvm is not
installed (``nox -s "tests(tvm-meta-schedule)"`` installs only the declared dependencies),
they are skipped, with the reason."""

from __future__ import annotations

import importlib.util

import pytest

def _has(module: str) -> bool:
    try:  # find_spec raises when a parent package (tvm.target) is missing too
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


_LLVM = _has("tvm.target.llvm")


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook signature
    if _LLVM:
        return
    skip = pytest.mark.skip(reason="needs tvm-target-llvm (the tuner's tests tune llvm "
                                   "kernels); installed in nox -s all")
    for item in items:
        item.add_marker(skip)
