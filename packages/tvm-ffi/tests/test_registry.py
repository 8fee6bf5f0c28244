"""The global function registry: registration, look-up, errors and thread safety."""

from __future__ import annotations

import threading

import pytest
import tvm.ffi
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tvm.ffi import (
    RegistryError,
    TVMError,
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)
from tvm.ffi import registry as registry_mod


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch):
    """Each test sees (and leaves) the registry as it was."""
    monkeypatch.setattr(registry_mod, "_funcs", dict(registry_mod._funcs))


def add_one(x):
    return x + 1


def test_register_and_call():
    assert register_func("test.add_one", add_one) is add_one
    assert get_global_func("test.add_one")(41) == 42
    assert "test.add_one" in list_global_func_names()


def test_decorator_returns_the_function():
    @register_func("test.double")
    def double(x):
        return 2 * x

    assert double(3) == 6
    assert get_global_func("test.double") is double


def test_exports_from_package():
    assert tvm.ffi.register_func is register_func
    assert tvm.ffi.get_global_func is get_global_func


def test_duplicate_names_first_registration():
    register_func("test.dup", add_one)

    def other(x):
        return x

    with pytest.raises(RegistryError) as info:
        register_func("test.dup", other)
    message = str(info.value)
    assert "'test.dup'" in message
    assert f"{__name__}.add_one" in message  # where the first one came from
    assert "test_duplicate_names_first_registration.<locals>.other" in message
    assert "override=True" in message
    assert get_global_func("test.dup") is add_one  # unchanged


def test_override_replaces():
    register_func("test.over", add_one)
    register_func("test.over", abs, override=True)
    assert get_global_func("test.over") is abs


def test_missing_name_suggests_close_matches():
    register_func("relax.op.add", add_one)
    register_func("relax.op.subtract", add_one)
    with pytest.raises(RegistryError) as info:
        get_global_func("relax.op.ad")
    message = str(info.value)
    assert "'relax.op.ad'" in message and "not registered" in message
    assert "did you mean 'relax.op.add'" in message


def test_missing_name_without_matches():
    with pytest.raises(RegistryError, match="none with a similar name"):
        get_global_func("zzz.qqq.nothing.like.it")


def test_registry_error_is_key_error_and_tvm_error():
    with pytest.raises(KeyError):
        get_global_func("test.missing")
    with pytest.raises(TVMError):
        get_global_func("test.missing")


def test_allow_missing_returns_none():
    assert get_global_func("test.missing", allow_missing=True) is None


def test_remove():
    register_func("test.rm", add_one)
    remove_global_func("test.rm")
    assert get_global_func("test.rm", allow_missing=True) is None
    with pytest.raises(RegistryError, match="'test.rm'"):
        remove_global_func("test.rm")
    register_func("test.rm", abs)  # the name is free again
    assert get_global_func("test.rm") is abs


def test_bad_arguments():
    with pytest.raises(TypeError, match="expected a callable, got int"):
        register_func("test.bad", 3)
    with pytest.raises(TypeError, match="must be a str, got int"):
        register_func(3, add_one)
    with pytest.raises(ValueError, match="non-empty"):
        register_func("", add_one)
    with pytest.raises(TypeError, match="must be a str"):
        get_global_func(None)


def test_bare_decorator_is_rejected_with_hint():
    with pytest.raises(TypeError, match=r'use @register_func\("my.func.name"\)'):

        @register_func
        def oops():
            pass


def test_origin_of_callables_without_qualname():
    import functools

    register_func("test.partial", functools.partial(add_one))
    with pytest.raises(RegistryError, match="already registered by functools.partial"):
        register_func("test.partial", add_one)


def test_concurrent_distinct_registrations():
    names = [f"test.thread.{i}" for i in range(200)]
    barrier = threading.Barrier(8)

    def work(chunk):
        barrier.wait()
        for name in chunk:
            register_func(name, add_one)

    threads = [threading.Thread(target=work, args=(names[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(names) <= set(list_global_func_names())


def test_concurrent_same_name_exactly_one_wins():
    barrier = threading.Barrier(8)
    wins, losses = [], []

    def work(i):
        def f():
            return i

        barrier.wait()
        try:
            register_func("test.race", f)
            wins.append(i)
        except RegistryError:
            losses.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(losses) == 7
    assert get_global_func("test.race")() == wins[0]


_names = st.text(alphabet="abcxyz._", min_size=1, max_size=12)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_names, unique=True, max_size=12))
def test_list_matches_registered_set(names):
    before = set(list_global_func_names())
    fresh = [n for n in names if n not in before]
    for n in fresh:
        register_func(n, add_one)
    assert list_global_func_names() == sorted(before | set(fresh))
    for n in fresh:
        remove_global_func(n)
    assert set(list_global_func_names()) == before
