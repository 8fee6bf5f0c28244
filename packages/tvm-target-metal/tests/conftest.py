"""Fixtures of the metal target tests: the plugin, whether or not it is pip-installed."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _metal_plugin():
    from tvm.target.metal.plugin import ensure_registered

    ensure_registered()
