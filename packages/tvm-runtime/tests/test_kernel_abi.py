"""Calling hand-written kernels that follow docs/abi.md (compiled with the system cc)."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

import tvm.runtime as rt
from tvm.runtime.packed_func import PackedCFunc, install_runtime_slots
from tvm.runtime.error import TVMAPISetLastError, get_last_error
from tvm.runtime.thread_pool import TVMBackendParallelLaunch


def test_module_lists_its_functions(kernel_module):
    m = kernel_module
    assert m.type_key == "so" and m.target == "c"
    assert set(m.function_names) == {
        "add_scalar",
        "checked_div",
        "fails_silently",
        "parallel_spin",
        "nested_parallel",
        "parallel_meet",
    }
    assert "add_scalar" in m and "nope" not in m and 3 not in m
    assert m.slots == ["__TVMAPISetLastError", "__TVMBackendParallelLaunch"]
    f = m["add_scalar"]
    assert isinstance(f, PackedCFunc) and f.module is m
    assert (
        repr(f)
        == "<PackedCFunc add_scalar(A: Tensor[(n), float32], B: Tensor[(n), float32], alpha: float32)>"
    )


def test_call_with_numpy_arrays_zero_copy(kernel_module):
    a = np.arange(5, dtype="float32")
    b = np.zeros(5, dtype="float32")
    assert kernel_module["add_scalar"](a, b, 1.5) is None
    np.testing.assert_allclose(b, a + 1.5)


def test_call_with_tensors_and_keywords(kernel_module):
    a = rt.tensor(np.arange(4, dtype="float32"))
    b = rt.empty((4,), "float32")
    kernel_module["add_scalar"](a, B=b, alpha=2)
    np.testing.assert_allclose(b.numpy(), [2, 3, 4, 5])


def test_strided_argument_reaches_the_kernel_check(kernel_module):
    a = np.zeros(8, dtype="float32")[::2]
    b = np.zeros(4, dtype="float32")
    with pytest.raises(
        rt.KernelError, match=r"add_scalar: argument A has strides\[0\] = 2, expected 1"
    ):
        kernel_module["add_scalar"](a, b, 0.0)


def test_return_value_and_kernel_error(kernel_module):
    div = kernel_module["checked_div"]
    assert div(17, 5) == 3
    with pytest.raises(rt.KernelError) as info:
        div(1, 0)
    assert str(info.value) == "checked_div: argument y must be non-zero, got 0"
    assert isinstance(info.value, rt.TVMError) and isinstance(info.value, ValueError)
    assert div(-9, 3) == -3  # the previous error does not leak into later calls


def test_kernel_error_without_message(kernel_module):
    with pytest.raises(
        rt.KernelError, match=r"fails_silently: the kernel failed \(code -3\) without a message"
    ):
        kernel_module["fails_silently"]()


def test_wrong_argument_count(kernel_module):
    f = kernel_module["add_scalar"]
    with pytest.raises(
        TypeError, match=r"add_scalar\(\) takes 3 arguments \(A, B, alpha\), got 2; missing alpha"
    ):
        f(np.zeros(2, "float32"), np.zeros(2, "float32"))
    with pytest.raises(TypeError, match=r"takes 3 arguments \(A, B, alpha\), got 4"):
        f(1, 2, 3, 4)
    with pytest.raises(TypeError, match="unexpected keyword argument 'C'"):
        f(np.zeros(2, "float32"), np.zeros(2, "float32"), C=1.0)
    with pytest.raises(TypeError, match="multiple values for argument 'A'"):
        f(np.zeros(2, "float32"), np.zeros(2, "float32"), 1.0, A=1)
    with pytest.raises(TypeError, match=r"fails_silently\(\) takes 0 arguments \(\), got 1"):
        kernel_module["fails_silently"](1)


def test_early_argument_checks(kernel_module):
    f = kernel_module["add_scalar"]
    a32 = np.zeros(3, "float32")
    with pytest.raises(
        rt.KernelError, match="add_scalar: argument B has dtype float64, expected float32"
    ):
        f(a32, np.zeros(3), 1.0)
    with pytest.raises(rt.KernelError, match="argument A has ndim = 2, expected 1"):
        f(np.zeros((3, 1), "float32"), a32, 1.0)
    with pytest.raises(
        rt.KernelError,
        match=r"add_scalar: argument B has shape\[0\] = 4, but n = 3 from argument A",
    ):
        f(a32, np.zeros(4, "float32"), 1.0)
    with pytest.raises(TypeError, match="argument A expects a tensor .* got list"):
        f([1.0, 2.0], a32, 1.0)
    with pytest.raises(TypeError, match="argument alpha expects a float32 number, got str"):
        f(a32, a32, "1")
    with pytest.raises(
        rt.KernelError, match=r"nested_parallel: argument out has shape\[0\] = 5, expected 6"
    ):
        kernel_module["nested_parallel"](np.zeros(5))
    div = kernel_module["checked_div"]
    with pytest.raises(TypeError, match=r"argument x expects an integer \(int64\), got float"):
        div(1.5, 1)
    with pytest.raises(
        ValueError, match=r"argument y = 9223372036854775808 is out of range for int64"
    ):
        div(1, 2**63)
    assert div(np.int32(9), True) == 9


def test_gil_is_released_during_the_call(kernel_module):
    # A Python thread keeps running while a long kernel call is in progress.
    rt.set_num_threads(1)
    try:
        ticks = []
        stop = threading.Event()

        def ticker():
            while not stop.is_set():
                ticks.append(1)
                stop.wait(0.001)

        th = threading.Thread(target=ticker)
        th.start()
        before = len(ticks)
        kernel_module["parallel_spin"](np.zeros(1), 30_000_000, 1, -1)
        during = len(ticks) - before
        stop.set()
        th.join()
        assert during > 3
    finally:
        rt.set_num_threads(None)


def test_packed_func_without_metadata(kernel_lib):
    lib = ctypes.CDLL(str(kernel_lib))

    def lookup(name: str) -> int | None:
        try:
            return ctypes.addressof(ctypes.c_char.in_dll(lib, name))
        except ValueError:  # a slot these kernels do not use (e.g. __TVMBackendNumThreads)
            return None

    install_runtime_slots(lookup)
    div = PackedCFunc(ctypes.cast(lib.checked_div, ctypes.c_void_p).value, None, lib)
    assert div.params is None and div.name.startswith("func_0x")
    assert div(20, 4) == 5
    with pytest.raises(rt.KernelError, match="expected integer arguments"):
        div(1.0, 2)  # inferred as a float: the kernel's own check answers
    with pytest.raises(TypeError, match="cannot pass a str"):
        div("x", 1)
    with pytest.raises(TypeError, match="parameter names are unknown"):
        div(x=1, y=2)


def test_install_runtime_slots_fills_only_present_globals():
    slot = ctypes.c_void_p(0)
    filled = install_runtime_slots(
        lambda name: ctypes.addressof(slot) if name == "__TVMAPISetLastError" else None
    )
    assert filled == ["__TVMAPISetLastError"]
    assert slot.value == ctypes.cast(TVMAPISetLastError, ctypes.c_void_p).value
    assert ctypes.cast(TVMBackendParallelLaunch, ctypes.c_void_p).value


def test_set_last_error_callback_is_per_thread():
    TVMAPISetLastError(b"main thread message")
    seen = []
    th = threading.Thread(target=lambda: seen.append(get_last_error()))
    th.start()
    th.join()
    assert seen == [None]
    assert get_last_error() == "main thread message"


def test_entry_func_and_missing_function(kernel_module):
    with pytest.raises(AttributeError, match="no entry function"):
        kernel_module.entry_func
    with pytest.raises(
        rt.FunctionNotFoundError, match="has no function 'nope'; it defines: add_scalar"
    ):
        kernel_module["nope"]
    assert kernel_module.get_function("nope", allow_missing=True) is None


def test_scalar_parameter_binds_a_dimension_first(kernel_module):
    # Early checks run before the kernel: borrow any kernel's address with a synthetic meta.
    meta = {
        "name": "scaled",
        "params": [
            {"name": "A", "kind": "tensor", "dtype": "float32", "shape": ["n", 2]},
            {"name": "n", "kind": "scalar", "dtype": "int32"},
            {"name": "h", "kind": "handle", "dtype": "handle"},
        ],
    }
    f = PackedCFunc(kernel_module["fails_silently"].address, meta, kernel_module)
    with pytest.raises(
        rt.KernelError, match=r"scaled: argument A has shape\[0\] = 4, but n = 3 from argument n"
    ):
        f(np.zeros((4, 2), "float32"), 3, None)
    with pytest.raises(TypeError, match="argument h expects a handle"):
        f(np.zeros((3, 2), "float32"), 3, "ptr")
    with pytest.raises(rt.KernelError, match="code -3"):  # checks pass; the kernel runs
        f(np.zeros((3, 2), "float32"), 3, ctypes.c_void_p(16))


def test_malformed_function_metadata():
    with pytest.raises(rt.ModuleLoadError, match="scalar parameter 'x' has no dtype"):
        PackedCFunc(1, {"name": "g", "params": [{"name": "x", "kind": "scalar"}]})
    with pytest.raises(rt.ModuleLoadError, match="parameter 'x': unknown dtype"):
        PackedCFunc(1, {"name": "g", "params": [{"name": "x", "kind": "scalar", "dtype": "f32"}]})
    with pytest.raises(ValueError, match="address is NULL"):
        PackedCFunc(0, None)
