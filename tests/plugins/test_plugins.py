"""Real, pip-installed plugin distributions (nox session "plugins").

Needs ``tests/plugins/tvm-testplugin-acme`` and ``tests/plugins/tvm-testplugin-broken``
installed next to tvm-ffi and tvm-ir.  Checks discovery through the ``tvm`` entry-point
group, listing, failure isolation and blocking with ``TVM_DISABLE_PLUGINS``.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

for _dist in ("tvm-testplugin-acme", "tvm-testplugin-broken"):
    try:
        metadata.distribution(_dist)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{_dist} is not installed (run `nox -s plugins`)", allow_module_level=True)

from tvm.ffi import PluginLoadWarning, format_plugin_table, list_plugins, reload_plugins  # noqa: E402
from tvm.ir import Target, UnknownTargetKindError, list_target_kinds  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_plugins(monkeypatch):
    """Load the installed plugins afresh for every test (and restore afterwards)."""
    monkeypatch.delenv("TVM_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("TVM_TRACE_PLUGINS", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginLoadWarning)
        reload_plugins()
    yield
    monkeypatch.delenv("TVM_DISABLE_PLUGINS", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginLoadWarning)
        reload_plugins()


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_target_kind_from_entry_point():
    t = Target("acme -foo=baz -cores=8 -mattr=+dot,+mma")
    assert t.kind_name == "acme" and t.foo == "baz" and t.cores == 8
    assert t.mattr == ("+dot", "+mma") and t.fast is False
    assert t.keys == ("acme", "npu") and t.device_type == 12
    assert t.kind.package == "tvm-testplugin-acme"
    assert str(t) == "acme -cores=8 -foo=baz -mattr=+dot,+mma"
    assert "acme" in list_target_kinds() and "acme" in Target.list_kinds()


def test_acme_attribute_errors_name_kind_and_attr():
    with pytest.raises(ValueError, match="'acme': attribute 'cores' expects int, got str 'many'"):
        Target("acme -cores=many")
    with pytest.raises(ValueError, match="'acme' has no attribute 'fo'; did you mean 'foo'"):
        Target("acme -fo=1")


def test_listing_shows_loaded_and_failed_plugins():
    plugins = {p.name: p for p in list_plugins()}
    acme = plugins["acme"]
    assert acme.status == "loaded"
    assert acme.distribution == "tvm-testplugin-acme" and acme.version == "0.3.1"
    assert acme.module == "tvm_testplugin_acme"
    assert "tvm_register_target_kinds" in acme.hooks
    broken = plugins["broken"]
    assert broken.status == "failed"
    assert broken.distribution == "tvm-testplugin-broken" and broken.version == "0.0.1"
    assert "ImportError" in broken.error and "broken on purpose" in broken.error
    table = format_plugin_table()
    assert "tvm-testplugin-acme" in table and "failed" in table and "broken on purpose" in table


def test_broken_plugin_warns_with_its_name_and_others_still_load():
    with pytest.warns(
        PluginLoadWarning, match="'broken' \\(tvm-testplugin-broken 0.0.1\\) failed to load"
    ):
        reload_plugins()
    assert Target("acme").foo == "bar"  # isolation: acme is unaffected


def test_disable_plugins_blocks_acme_in_subprocess():
    result = _run(
        """
        import warnings
        warnings.simplefilter("ignore")
        from tvm.ffi import list_plugins
        from tvm.ir import Target, UnknownTargetKindError
        status = {p.name: p.status for p in list_plugins()}
        print("STATUS", status["acme"], status["broken"])
        try:
            Target("acme -foo=baz")
        except UnknownTargetKindError as err:
            print("ERROR", err)
        else:
            print("NO ERROR")
        """,
        TVM_DISABLE_PLUGINS="acme",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "STATUS blocked failed" in out
    assert "ERROR unknown target kind 'acme'" in out
    assert "disabled by TVM_DISABLE_PLUGINS" in out


def test_plugin_pass_found_by_name_without_importing_it():
    result = _run(
        """
        import sys
        from tvm.ir import IRModule
        from tvm.ir.transform import get_pass, list_passes, pass_table
        assert "acme.Annotate" in list_passes()
        assert pass_table()["acme.Annotate"].distribution == "tvm-testplugin-acme"
        assert "tvm_testplugin_acme.passes" not in sys.modules
        mod = get_pass("acme.Annotate")(IRModule())
        print("ANNOTATED", mod.attrs["acme.annotated"])
        """
    )
    assert result.returncode == 0, result.stderr
    assert "ANNOTATED True" in result.stdout


def test_disable_broken_plugin_silences_its_warning():
    result = _run(
        """
        import warnings
        warnings.simplefilter("error")  # any PluginLoadWarning would fail the run
        from tvm.ffi import list_plugins
        from tvm.ir import Target
        print({p.name: p.status for p in list_plugins()}["broken"], Target("acme").cores)
        """,
        TVM_DISABLE_PLUGINS="broken",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["blocked", "4"]


def test_trace_plugins_shows_target_kind_hook():
    result = _run(
        """
        import warnings
        warnings.simplefilter("ignore")
        from tvm.ir import Target
        Target("acme")
        """,
        TVM_TRACE_PLUGINS="1",
    )
    assert result.returncode == 0, result.stderr
    assert "[tvm-plugin] calling tvm_register_target_kinds" in result.stderr
    assert "loaded plugin 'acme'" in result.stderr


def test_unknown_kind_lists_installed_kinds(monkeypatch):
    # a kind no installed plugin provides, whichever target plugins are installed
    import tvm.ir.target as target_mod

    monkeypatch.setitem(target_mod.KNOWN_TARGET_DISTRIBUTIONS, "vendorgpu", "tvm-target-vendor")
    with pytest.raises(UnknownTargetKindError) as info:
        Target("vendorgpu")
    msg = str(info.value)
    assert "acme" in msg and "pip install tvm-target-vendor" in msg
