"""The pluggy plugin host, with entry points faked in-process."""

from __future__ import annotations

import importlib.metadata
import threading
import time
import types
import warnings

import pluggy
import pytest
import tvm.ffi
from tvm.ffi import PluginError, PluginLoadWarning, hookimpl, hookspec
from tvm.ffi import plugin as host

# ------------------------------------------------------------------ fakes


class Installed(list):
    """The fake installed entry points, plus a log of entry_points() calls."""

    calls: list[dict]


class FakeDist:
    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version
        self.metadata = {"Name": name, "Version": version}


class FakeEntryPoint:
    """Enough of importlib.metadata.EntryPoint: name, value, module, dist, load()."""

    def __init__(self, name, target, dist="tvm-target-x", version="1.2.3", group="tvm"):
        self.name = name
        self.group = group
        self.module = f"fake_plugins.{name}"
        self.value = self.module
        self.dist = None if dist is None else FakeDist(dist, version)
        self._target = target
        self.loads = 0

    def load(self):
        self.loads += 1
        if isinstance(self._target, BaseException):
            raise self._target
        if callable(self._target) and not isinstance(self._target, types.ModuleType):
            return self._target()
        return self._target


def plugin_module(name: str, **impls) -> types.ModuleType:
    """A module object whose functions are ``@hookimpl``-marked."""
    mod = types.ModuleType(f"fake_plugins.{name}")
    for hook, fn in impls.items():
        fn.__name__ = hook
        setattr(mod, hook, hookimpl(fn))
    return mod


class Specs:
    @hookspec
    def tvm_test_register(self, register):
        """Call ``register(name)`` for each target this plugin provides."""

    @hookspec(firstresult=True)
    def tvm_test_device_api(self, device_type):
        """The device API for ``device_type``, or None."""


class OtherSpecs:
    @hookspec
    def tvm_test_other(self, x):
        """A hook of another package."""


@pytest.fixture
def eps(monkeypatch):
    """A fresh plugin host whose installed entry points are the returned list."""
    for var in (host.DISABLE_ENV, host.TRACE_ENV):
        monkeypatch.delenv(var, raising=False)
    for attr, value in [
        ("_pm", None),
        ("_ready", False),
        ("_specs", []),
        ("_spec_owner", {}),
        ("_builtins", {}),
        ("_records", []),
    ]:
        monkeypatch.setattr(host, attr, value)
    installed = Installed()
    real = importlib.metadata.entry_points
    calls = []

    def fake_entry_points(**params):
        if params.get("group") != "tvm":
            return real(**params)
        calls.append(params)
        return [ep for ep in installed]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    installed.calls = calls
    return installed


def llvm_module():
    return plugin_module(
        "llvm",
        tvm_test_register=lambda register: register("llvm"),
        tvm_test_device_api=lambda device_type: "llvm-cpu-api" if device_type == 1 else None,
    )


def cuda_module():
    return plugin_module(
        "cuda",
        tvm_test_register=lambda register: register("cuda"),
        tvm_test_device_api=lambda device_type: "cuda-api" if device_type == 2 else None,
    )


def registered_targets() -> list[str]:
    names: list[str] = []
    host.get_plugin_manager().hook.tvm_test_register(register=names.append)
    return sorted(names)


# ------------------------------------------------------------------ discovery and listing


def test_discovers_and_lists_entry_points(eps):
    eps.append(FakeEntryPoint("llvm", llvm_module(), dist="tvm-target-llvm", version="0.1.0"))
    eps.append(FakeEntryPoint("cuda", cuda_module(), dist="tvm-target-cuda", version="0.2.0"))
    tvm.ffi.add_hookspecs(Specs)
    assert registered_targets() == ["cuda", "llvm"]
    hook = host.get_plugin_manager().hook
    assert hook.tvm_test_device_api(device_type=2) == "cuda-api"
    assert hook.tvm_test_device_api(device_type=1) == "llvm-cpu-api"
    infos = {p.name: p for p in tvm.ffi.list_plugins()}
    assert set(infos) == {"llvm", "cuda"}
    llvm = infos["llvm"]
    assert (llvm.distribution, llvm.version, llvm.status, llvm.error) == (
        "tvm-target-llvm",
        "0.1.0",
        "loaded",
        None,
    )
    assert llvm.module == "fake_plugins.llvm"
    assert llvm.hooks == ("tvm_test_device_api", "tvm_test_register")
    assert infos["cuda"].version == "0.2.0"


def test_loading_is_lazy_and_happens_once(eps):
    ep = FakeEntryPoint("llvm", llvm_module())
    eps.append(ep)
    tvm.ffi.add_hookspecs(Specs)
    assert eps.calls == [] and ep.loads == 0  # nothing asked yet
    pm = host.get_plugin_manager()
    assert host.get_plugin_manager() is pm
    tvm.ffi.list_plugins()
    assert eps.calls == [{"group": "tvm"}]
    assert ep.loads == 1


def test_concurrent_first_use_loads_once(eps):
    def slow_module():
        time.sleep(0.05)
        return llvm_module()

    ep = FakeEntryPoint("llvm", slow_module)
    eps.append(ep)
    barrier = threading.Barrier(6)
    managers = []

    def work():
        barrier.wait()
        managers.append(host.get_plugin_manager())

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(managers) == 6 and all(m is managers[0] for m in managers)
    assert ep.loads == 1 and len(eps.calls) == 1
    assert managers[0].has_plugin("llvm")


def test_entry_point_without_distribution(eps):
    eps.append(FakeEntryPoint("anon", llvm_module(), dist=None))
    (info,) = tvm.ffi.list_plugins()
    assert (info.distribution, info.version, info.status) == ("unknown", "unknown", "loaded")


def test_format_plugin_table(eps, monkeypatch):
    monkeypatch.setenv(host.DISABLE_ENV, "cuda")
    eps.append(FakeEntryPoint("llvm", llvm_module(), dist="tvm-target-llvm", version="0.1.0"))
    eps.append(FakeEntryPoint("cuda", cuda_module(), dist="tvm-target-cuda", version="0.2.0"))
    eps.append(FakeEntryPoint("bad", ImportError("no libfoo.so"), dist="acme-npu", version="9"))
    with pytest.warns(PluginLoadWarning):
        table = tvm.ffi.format_plugin_table()
    lines = table.splitlines()
    assert lines[0].split() == ["NAME", "DISTRIBUTION", "VERSION", "STATUS", "MODULE", "DETAIL"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {"bad", "cuda", "llvm"}
    assert rows["llvm"].split()[:4] == ["llvm", "tvm-target-llvm", "0.1.0", "loaded"]
    assert "hooks: tvm_test_device_api, tvm_test_register" in rows["llvm"]
    assert "blocked by TVM_DISABLE_PLUGINS" in rows["cuda"]
    assert "ImportError: no libfoo.so" in rows["bad"]
    # columns line up
    assert len({line.index("DISTRIBUTION") for line in lines[:1]}) == 1
    assert all(line[lines[0].index("STATUS") - 1] == " " for line in lines)


def test_format_empty_table(eps):
    assert "no tvm plugins installed" in tvm.ffi.format_plugin_table()


def test_get_plugin_info(eps):
    eps.append(FakeEntryPoint("bad", ImportError("missing pycuda"), dist="tvm-target-cuda"))
    with pytest.warns(PluginLoadWarning):
        info = tvm.ffi.get_plugin_info("bad")
    assert info is not None and info.status == "failed"
    assert info.error == "ImportError: missing pycuda"
    assert tvm.ffi.get_plugin_info("nope") is None


# ------------------------------------------------------------------ blocking


def test_blocked_plugins_are_not_imported(eps, monkeypatch):
    monkeypatch.setenv(host.DISABLE_ENV, " cuda , not-installed,")
    cuda = FakeEntryPoint("cuda", cuda_module(), dist="tvm-target-cuda", version="0.2.0")
    eps.extend([FakeEntryPoint("llvm", llvm_module()), cuda])
    tvm.ffi.add_hookspecs(Specs)
    assert registered_targets() == ["llvm"]
    assert cuda.loads == 0
    assert host.get_plugin_manager().is_blocked("cuda")
    info = tvm.ffi.get_plugin_info("cuda")
    assert (info.status, info.distribution, info.version) == ("blocked", "tvm-target-cuda", "0.2.0")
    assert info.module == "fake_plugins.cuda"
    assert tvm.ffi.get_plugin_info("not-installed") is None  # only installed ones are listed


def test_reload_rereads_environment(eps, monkeypatch):
    eps.extend([FakeEntryPoint("llvm", llvm_module()), FakeEntryPoint("cuda", cuda_module())])
    tvm.ffi.add_hookspecs(Specs)
    assert registered_targets() == ["cuda", "llvm"]
    monkeypatch.setenv(host.DISABLE_ENV, "llvm")
    old = host.get_plugin_manager()
    new = tvm.ffi.reload_plugins()
    assert new is not old and new is host.get_plugin_manager()
    assert registered_targets() == ["cuda"]
    assert [(p.name, p.status) for p in tvm.ffi.list_plugins()] == [
        ("cuda", "loaded"),
        ("llvm", "blocked"),
    ]


# ------------------------------------------------------------------ failure isolation


def test_broken_plugin_warns_and_others_load(eps):
    eps.append(FakeEntryPoint("llvm", llvm_module()))
    eps.append(FakeEntryPoint("acme", ImportError("No module named 'acme_sdk'"), "acme-npu", "0.3"))
    eps.append(FakeEntryPoint("cuda", cuda_module()))
    tvm.ffi.add_hookspecs(Specs)
    with pytest.warns(PluginLoadWarning) as record:
        host.get_plugin_manager()
    messages = [str(w.message) for w in record]
    assert messages == [
        "tvm plugin 'acme' (acme-npu 0.3) failed to load: ImportError: No module named 'acme_sdk'"
    ]
    assert registered_targets() == ["cuda", "llvm"]
    statuses = {p.name: (p.status, p.error) for p in tvm.ffi.list_plugins()}
    assert statuses["acme"] == ("failed", "ImportError: No module named 'acme_sdk'")
    assert statuses["llvm"] == ("loaded", None)


def test_plugin_raising_non_import_error(eps):
    eps.append(FakeEntryPoint("boom", ZeroDivisionError("division by zero at import")))
    eps.append(FakeEntryPoint("llvm", llvm_module()))
    with pytest.warns(PluginLoadWarning, match="'boom'.*ZeroDivisionError"):
        infos = tvm.ffi.list_plugins()
    assert [(p.name, p.status) for p in infos] == [("boom", "failed"), ("llvm", "loaded")]


@pytest.mark.parametrize("error", [SystemExit(3), SystemExit("sdk missing")])
def test_plugin_raising_system_exit_at_import_is_isolated(eps, error):
    eps.append(FakeEntryPoint("quitter", error))
    eps.append(FakeEntryPoint("llvm", llvm_module()))
    tvm.ffi.add_hookspecs(Specs)
    with pytest.warns(PluginLoadWarning, match="'quitter'.*SystemExit"):
        infos = tvm.ffi.list_plugins()
    assert {p.name: p.status for p in infos} == {"quitter": "failed", "llvm": "loaded"}
    assert registered_targets() == ["llvm"]


def test_keyboard_interrupt_at_import_propagates(eps):
    eps.append(FakeEntryPoint("ctrl-c", KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        host.get_plugin_manager()


def test_invalid_hookimpl_is_rejected_without_partial_registration(eps):
    bad = plugin_module(
        "bad",
        tvm_test_register=lambda register: register("bad"),  # valid, must not stay registered
        tvm_test_device_api=lambda device, extra: None,  # arguments not in the spec
    )
    eps.extend([FakeEntryPoint("bad", bad), FakeEntryPoint("llvm", llvm_module())])
    tvm.ffi.add_hookspecs(Specs)
    with pytest.warns(PluginLoadWarning, match="'bad'.*PluginValidationError"):
        pm = host.get_plugin_manager()
    assert not pm.has_plugin("bad")
    assert registered_targets() == ["llvm"]
    assert tvm.ffi.get_plugin_info("bad").status == "failed"


def test_duplicate_entry_point_name(eps):
    eps.append(FakeEntryPoint("llvm", llvm_module(), dist="tvm-target-llvm"))
    eps.append(FakeEntryPoint("llvm", cuda_module(), dist="zz-fork-llvm", version="6.6"))
    with pytest.warns(PluginLoadWarning, match=r"'llvm' \(zz-fork-llvm 6.6\).*already registered"):
        infos = tvm.ffi.list_plugins()
    assert [(p.distribution, p.status) for p in infos] == [
        ("tvm-target-llvm", "loaded"),
        ("zz-fork-llvm", "failed"),
    ]


def test_entry_point_enumeration_failure(eps, monkeypatch):
    def broken(**params):
        raise RuntimeError("corrupt metadata")

    monkeypatch.setattr(importlib.metadata, "entry_points", broken)
    with pytest.warns(PluginLoadWarning, match="could not enumerate.*corrupt metadata"):
        assert tvm.ffi.list_plugins() == []


# ------------------------------------------------------------------ hook specs


def test_add_hookspecs_before_loading(eps):
    tvm.ffi.add_hookspecs(Specs)
    tvm.ffi.add_hookspecs(Specs)  # idempotent
    eps.append(FakeEntryPoint("llvm", llvm_module()))
    pm = host.get_plugin_manager()
    assert pm.hook.tvm_test_device_api.spec is not None
    assert pm.hook.tvm_test_device_api(device_type=1) == "llvm-cpu-api"  # firstresult


def test_add_hookspecs_after_loading(eps):
    eps.extend([FakeEntryPoint("llvm", llvm_module()), FakeEntryPoint("cuda", cuda_module())])
    pm = host.get_plugin_manager()
    assert not pm.hook.tvm_test_device_api.has_spec()
    # without the spec the hook is not firstresult: a list of the (non-None) answers
    assert pm.hook.tvm_test_device_api(device_type=2) == ["cuda-api"]
    tvm.ffi.add_hookspecs(Specs)
    tvm.ffi.add_hookspecs(Specs)  # idempotent after loading too
    assert pm.hook.tvm_test_device_api.has_spec()
    assert pm.hook.tvm_test_device_api(device_type=2) == "cuda-api"
    # and the spec survives a reload
    assert tvm.ffi.reload_plugins().hook.tvm_test_device_api(device_type=1) == "llvm-cpu-api"


def test_late_spec_evicts_only_the_mismatching_plugin(eps):
    bad = plugin_module("bad", tvm_test_device_api=lambda device, extra: "bad")
    eps.extend([FakeEntryPoint("bad", bad), FakeEntryPoint("llvm", llvm_module())])
    pm = host.get_plugin_manager()  # no spec yet: both register
    assert pm.has_plugin("bad")
    with pytest.warns(PluginLoadWarning, match="'bad'.*PluginValidationError"):
        tvm.ffi.add_hookspecs(Specs)  # must not raise into the importing package
    assert not pm.has_plugin("bad")
    assert pm.hook.tvm_test_device_api(device_type=1) == "llvm-cpu-api"
    assert tvm.ffi.get_plugin_info("bad").status == "failed"


def test_plugin_that_adds_specs_while_loading(eps):
    """A plugin importing a core package (which adds its specs) while being loaded."""

    def load():
        assert host.get_plugin_manager() is not None  # re-entrant, no deadlock
        tvm.ffi.add_hookspecs(Specs)
        return llvm_module()

    eps.append(FakeEntryPoint("llvm", load))
    pm = host.get_plugin_manager()
    assert pm.hook.tvm_test_register.has_spec()
    assert registered_targets() == ["llvm"]


def test_add_hookspecs_errors(eps):
    with pytest.raises(ValueError, match="no @tvm.ffi.hookspec functions"):
        tvm.ffi.add_hookspecs(types.ModuleType("empty"))

    class Clash:
        @hookspec
        def tvm_test_register(self, register):
            """Same hook name as Specs."""

    tvm.ffi.add_hookspecs(Specs)
    with pytest.raises(PluginError, match="'tvm_test_register'.*Clash.*already declared by.*Specs"):
        tvm.ffi.add_hookspecs(Clash)
    tvm.ffi.add_hookspecs(OtherSpecs)  # unrelated names are fine


# ------------------------------------------------------------------ built-in plugins


class CpuDeviceApi:
    @hookimpl
    def tvm_test_device_api(self, device_type):
        return "builtin-cpu" if device_type == 1 else None


def test_builtin_plugin_before_and_after_loading(eps):
    tvm.ffi.add_hookspecs(Specs)
    tvm.ffi.register_plugin(CpuDeviceApi(), "cpu", distribution="tvm-runtime", version="0.1.0")
    eps.append(FakeEntryPoint("cuda", cuda_module()))
    pm = host.get_plugin_manager()
    assert pm.hook.tvm_test_device_api(device_type=1) == "builtin-cpu"
    infos = tvm.ffi.list_plugins()
    assert [(p.name, p.distribution, p.version, p.status) for p in infos] == [
        ("cpu", "tvm-runtime", "0.1.0", "loaded"),
        ("cuda", "tvm-target-x", "1.2.3", "loaded"),
    ]
    assert infos[0].module == __name__ and infos[0].hooks == ("tvm_test_device_api",)
    # registered after loading: joins the live manager
    tvm.ffi.register_plugin(plugin_module("late", tvm_test_register=lambda register: None), "late")
    late = tvm.ffi.get_plugin_info("late")
    assert (late.distribution, late.status) == ("builtin", "loaded")
    # built-ins survive a reload
    assert tvm.ffi.reload_plugins().has_plugin("cpu")


def test_builtin_plugin_errors(eps, monkeypatch):
    tvm.ffi.register_plugin(CpuDeviceApi(), "cpu")
    with pytest.raises(PluginError, match="'cpu' is already registered"):
        tvm.ffi.register_plugin(CpuDeviceApi(), "cpu")
    with pytest.raises(TypeError, match="non-empty str"):
        tvm.ffi.register_plugin(CpuDeviceApi(), "")
    tvm.ffi.unregister_plugin("cpu")
    assert eps.calls == []  # removing a built-in does not load the entry points
    assert tvm.ffi.list_plugins() == []
    with pytest.raises(PluginError, match="no tvm plugin named 'cpu'"):
        tvm.ffi.unregister_plugin("cpu")


def test_builtin_plugin_can_be_blocked(eps, monkeypatch):
    monkeypatch.setenv(host.DISABLE_ENV, "cpu,late")
    tvm.ffi.add_hookspecs(Specs)
    tvm.ffi.register_plugin(CpuDeviceApi(), "cpu")
    assert host.get_plugin_manager().hook.tvm_test_device_api(device_type=1) is None
    assert tvm.ffi.get_plugin_info("cpu").status == "blocked"
    tvm.ffi.register_plugin(CpuDeviceApi(), "late")  # after loading: still blocked
    assert host.get_plugin_manager().hook.tvm_test_device_api(device_type=1) is None
    assert tvm.ffi.get_plugin_info("late").status == "blocked"


def test_builtin_clashing_with_entry_point(eps):
    eps.append(FakeEntryPoint("cpu", llvm_module(), dist="some-dist"))
    tvm.ffi.register_plugin(CpuDeviceApi(), "cpu", distribution="tvm-runtime", version="1")
    with pytest.warns(PluginLoadWarning, match=r"'cpu' \(some-dist 1.2.3\)"):
        infos = tvm.ffi.list_plugins()
    assert [(p.distribution, p.status) for p in infos] == [
        ("tvm-runtime", "loaded"),
        ("some-dist", "failed"),
    ]


def test_unregister_entry_point_plugin(eps):
    eps.extend([FakeEntryPoint("llvm", llvm_module()), FakeEntryPoint("cuda", cuda_module())])
    tvm.ffi.add_hookspecs(Specs)
    tvm.ffi.unregister_plugin("cuda")
    assert registered_targets() == ["llvm"]
    assert [p.name for p in tvm.ffi.list_plugins()] == ["llvm"]


# ------------------------------------------------------------------ tracing


def test_tracing_writes_hook_calls_to_stderr(eps, monkeypatch, capsys):
    monkeypatch.setenv(host.TRACE_ENV, "1")
    eps.extend([FakeEntryPoint("llvm", llvm_module()), FakeEntryPoint("cuda", cuda_module())])
    tvm.ffi.add_hookspecs(Specs)
    pm = host.get_plugin_manager()
    err = capsys.readouterr().err
    assert "[tvm-plugin] loaded plugin 'llvm' (tvm-target-x) from fake_plugins.llvm" in err
    assert pm.hook.tvm_test_device_api(device_type=2) == "cuda-api"
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "[tvm-plugin] calling tvm_test_device_api(device_type=2) on llvm, cuda",
        "[tvm-plugin] hook tvm_test_device_api(device_type=2) -> 'cuda-api'",
    ]


def test_tracing_reports_exceptions_and_long_values(eps, monkeypatch, capsys):
    monkeypatch.setenv(host.TRACE_ENV, "yes")

    def explode(register):
        raise ValueError("bad target table")

    eps.append(FakeEntryPoint("boom", plugin_module("boom", tvm_test_register=explode)))
    tvm.ffi.add_hookspecs(Specs)
    pm = host.get_plugin_manager()
    capsys.readouterr()
    with pytest.raises(ValueError, match="bad target table"):
        pm.hook.tvm_test_register(register=list(range(1000)))
    err = capsys.readouterr().err
    assert "-> raised ValueError: bad target table" in err
    assert "register=[0, 1, 2, 3, 4, 5, ...]" in err  # abbreviated arguments


def test_tracing_off_by_default(eps, capsys):
    eps.append(FakeEntryPoint("llvm", llvm_module()))
    tvm.ffi.add_hookspecs(Specs)
    host.get_plugin_manager().hook.tvm_test_device_api(device_type=1)
    assert "[tvm-plugin]" not in capsys.readouterr().err


def test_failure_is_traced_too(eps, monkeypatch, capsys):
    monkeypatch.setenv(host.TRACE_ENV, "1")
    eps.append(FakeEntryPoint("bad", ImportError("nope")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginLoadWarning)
        host.get_plugin_manager()
    assert "[tvm-plugin] tvm plugin 'bad' (tvm-target-x 1.2.3) failed to load" in (
        capsys.readouterr().err
    )


def test_markers_belong_to_the_tvm_project():
    assert isinstance(hookspec, pluggy.HookspecMarker) and hookspec.project_name == "tvm"
    assert isinstance(hookimpl, pluggy.HookimplMarker) and hookimpl.project_name == "tvm"
    assert issubclass(PluginLoadWarning, Warning)


def test_real_entry_point_objects(eps, tmp_path, monkeypatch):
    """importlib.metadata.EntryPoint itself: load() imports the module named by value."""
    (tmp_path / "tvm_fake_target_plugin.py").write_text(
        "from tvm.ffi import hookimpl\n"
        "@hookimpl\n"
        "def tvm_test_register(register):\n"
        "    register('fake')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    EntryPoint = importlib.metadata.EntryPoint
    eps.append(EntryPoint("fake", "tvm_fake_target_plugin", "tvm"))
    eps.append(EntryPoint("gone", "tvm_no_such_module_anywhere", "tvm"))
    tvm.ffi.add_hookspecs(Specs)
    with pytest.warns(PluginLoadWarning, match="'gone'.*ModuleNotFoundError"):
        assert registered_targets() == ["fake"]
    info = tvm.ffi.get_plugin_info("fake")
    assert (info.status, info.module) == ("loaded", "tvm_fake_target_plugin")
    assert tvm.ffi.get_plugin_info("gone").module == "tvm_no_such_module_anywhere"


# ------------------------------------------------------------------ hook calls (call_hook)


def _raiser(error):
    def impl(*args, **kwargs):
        raise error

    return impl


def _broken_module(name, error):
    return plugin_module(name, tvm_test_register=_raiser(error),
                         tvm_test_device_api=_raiser(error))


@pytest.mark.parametrize("error", [ValueError("bad table"), KeyError("x"), SystemExit(2),
                                   AttributeError("no attr")])
def test_call_hook_skips_a_failing_plugin_and_names_it(eps, error):
    eps.extend([FakeEntryPoint("llvm", llvm_module()),
                FakeEntryPoint("zbroken", _broken_module("zbroken", error), "broken-dist", "9"),
                FakeEntryPoint("cuda", cuda_module())])
    tvm.ffi.add_hookspecs(Specs)
    names: list[str] = []
    with pytest.warns(tvm.ffi.PluginHookWarning) as caught:
        assert tvm.ffi.call_hook("tvm_test_register", register=names.append) == []
        assert tvm.ffi.call_hook("tvm_test_device_api", device_type=1) == "llvm-cpu-api"
        assert tvm.ffi.call_hook("tvm_test_device_api", device_type=2) == "cuda-api"
    assert sorted(names) == ["cuda", "llvm"]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 3
    kind = type(error).__name__
    assert all("tvm plugin 'zbroken' (broken-dist 9) failed in hook" in m and kind in m
               for m in messages)
    assert "tvm_test_device_api(device_type=2)" in messages[2]
    assert issubclass(tvm.ffi.PluginHookWarning, PluginLoadWarning)
    info = tvm.ffi.get_plugin_info("zbroken")
    assert info.status == "loaded"
    assert [e.split(":")[0] for e in info.hook_errors] == ["tvm_test_device_api",
                                                          "tvm_test_register"]
    assert f"failed in tvm_test_device_api: {kind}" in tvm.ffi.format_plugin_table()
    assert tvm.ffi.get_plugin_info("llvm").hook_errors == ()


def test_call_hook_keyboard_interrupt_propagates(eps):
    eps.extend([FakeEntryPoint("llvm", llvm_module()),
                FakeEntryPoint("zz", _broken_module("zz", KeyboardInterrupt()))])
    tvm.ffi.add_hookspecs(Specs)
    with pytest.raises(KeyboardInterrupt):
        tvm.ffi.call_hook("tvm_test_device_api", device_type=1)


def test_call_hook_owner_failure_propagates_with_the_plugin_named(eps):
    eps.extend([FakeEntryPoint("llvm", llvm_module()),
                FakeEntryPoint("zacme", _broken_module("zacme", ValueError("bad npu")), "acme-npu")])
    tvm.ffi.add_hookspecs(Specs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the owner's failure is an error, not a warning
        with pytest.raises(ValueError, match="bad npu") as info:
            tvm.ffi.call_hook("tvm_test_device_api", device_type=12, owner="zacme")
    assert info.value.__notes__ == [
        "tvm plugin 'zacme' (acme-npu 1.2.3) failed in hook tvm_test_device_api(device_type=12)"
        ": ValueError: bad npu"
    ]
    # a plugin that is not the owner is still skipped with a warning
    with pytest.warns(tvm.ffi.PluginHookWarning, match="'zacme'"):
        assert tvm.ffi.call_hook("tvm_test_device_api", device_type=1,
                                 owner="llvm") == "llvm-cpu-api"


def test_call_hook_owner_system_exit_becomes_plugin_error(eps):
    eps.append(FakeEntryPoint("acme", _broken_module("acme", SystemExit(1))))
    tvm.ffi.add_hookspecs(Specs)
    with pytest.raises(PluginError, match=r"'acme' \(tvm-target-x 1.2.3\) failed in hook "
                       r"tvm_test_device_api\(device_type=12\): SystemExit: 1") as info:
        tvm.ffi.call_hook("tvm_test_device_api", device_type=12, owner="acme")
    assert isinstance(info.value.__cause__, SystemExit)


def test_call_hook_required_reports_why_nobody_answered(eps):
    eps.extend([FakeEntryPoint("llvm", llvm_module()),
                FakeEntryPoint("zz", _broken_module("zz", TypeError("bad options")))])
    tvm.ffi.add_hookspecs(Specs)
    # not required: nobody answers, the failure is a warning and the answer is None
    with pytest.warns(tvm.ffi.PluginHookWarning, match="'zz'.*TypeError: bad options"):
        assert tvm.ffi.call_hook("tvm_test_device_api", device_type=7) is None
    # required: the one failure is the answer (type kept, plugin in a note)
    with pytest.raises(TypeError, match="bad options") as info:
        tvm.ffi.call_hook("tvm_test_device_api", device_type=7, required=True)
    assert "tvm plugin 'zz'" in info.value.__notes__[0]
    # required but answered: the failure is only a warning
    with pytest.warns(tvm.ffi.PluginHookWarning):
        assert tvm.ffi.call_hook("tvm_test_device_api", device_type=1,
                                 required=True) == "llvm-cpu-api"


def test_call_hook_required_with_several_failures(eps):
    eps.extend([FakeEntryPoint("a1", _broken_module("a1", ValueError("one"))),
                FakeEntryPoint("a2", _broken_module("a2", SystemExit("two")))])
    tvm.ffi.add_hookspecs(Specs)
    with pytest.raises(PluginError, match="several failed") as info:
        tvm.ffi.call_hook("tvm_test_device_api", device_type=5, required=True)
    assert "'a1'" in str(info.value) and "ValueError: one" in str(info.value)
    assert "'a2'" in str(info.value) and "SystemExit: two" in str(info.value)


def test_call_hook_keeps_pluggy_order_and_tracing(eps, monkeypatch, capsys):
    monkeypatch.setenv(host.TRACE_ENV, "1")
    both = plugin_module("zboth", tvm_test_device_api=lambda device_type: "both-api")
    eps.extend([FakeEntryPoint("llvm", llvm_module()), FakeEntryPoint("zboth", both)])
    tvm.ffi.add_hookspecs(Specs)
    pm = host.get_plugin_manager()
    capsys.readouterr()
    # the last registered answers first, as with pm.hook
    assert tvm.ffi.call_hook("tvm_test_device_api", device_type=1) == "both-api"
    assert pm.hook.tvm_test_device_api(device_type=1) == "both-api"
    err = capsys.readouterr().err
    assert "[tvm-plugin] calling tvm_test_device_api(device_type=1) on zboth" in err


def test_call_hook_errors(eps):
    tvm.ffi.add_hookspecs(Specs)
    eps.append(FakeEntryPoint("llvm", llvm_module()))
    with pytest.raises(PluginError, match="no hook spec named 'tvm_test_nope'"):
        tvm.ffi.call_hook("tvm_test_nope")
    with pytest.raises(TypeError, match=r"missing hook arguments \['device_type'\]"):
        tvm.ffi.call_hook("tvm_test_device_api")


def test_call_hook_kwargs_for_gives_each_plugin_its_own_arguments(eps):
    eps.extend([FakeEntryPoint("llvm", llvm_module()), FakeEntryPoint("cuda", cuda_module())])
    tvm.ffi.add_hookspecs(Specs)
    seen: dict[str, list[str]] = {}

    def kwargs_for(plugin):
        return {"register": seen.setdefault(plugin, []).append}

    tvm.ffi.call_hook("tvm_test_register", kwargs_for=kwargs_for)
    assert seen == {"llvm": ["llvm"], "cuda": ["cuda"]}
