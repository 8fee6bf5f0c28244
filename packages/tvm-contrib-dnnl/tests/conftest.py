"""Fixtures of the dnnl tests: the plugin, whether or not the distribution is installed."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _dnnl_plugin():
    from tvm.contrib.dnnl.plugin import ensure_registered

    ensure_registered()
