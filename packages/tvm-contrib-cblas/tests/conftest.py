"""Fixtures of the cblas tests: the plugin, whether or not the distribution is installed."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _cblas_plugin():
    from tvm.contrib.cblas.plugin import ensure_registered

    ensure_registered()
