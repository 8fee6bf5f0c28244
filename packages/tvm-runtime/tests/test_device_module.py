"""Host programs of GPU modules (tvm.runtime.device_module): argument checks, shape binding,
launch dimensions, workspaces and the one-file format, with a recording fake device."""

import numpy as np
import pytest
from tvm.runtime import KernelError, ModuleLoadError, tensor
from tvm.runtime.device_module import (
    DEVICE_MODULE_VERSION, DeviceModule, DevicePtr, HostProgramError,
    load_device_module_payload,
)
from tvm.runtime.int_expr import evaluate


def c(v):
    """A literal of the run-time expression format (tvm.runtime.int_expr)."""
    return v


def var(name):
    return ["var", name]


class Recording(DeviceModule):
    """Tensors on the CPU; launches are recorded instead of run."""

    type_key = "fake"
    device_type = 1
    device_name = "cpu"
    file_suffix = "fakemod"

    def __init__(self, payload):
        super().__init__(payload)
        self.launches = []
        self.freed = []

    def launch(self, dev, kernel, args, grid, block):
        self.launches.append((kernel, args, grid, block))

    def release_workspace(self, dev, handle):
        self.freed.append(handle)
        super().release_workspace(dev, handle)


KERNEL = {"name": "k", "params": [{"name": "A", "kind": "handle", "dtype": "float32"},
                                  {"name": "n", "kind": "scalar", "dtype": "int32"}],
          "launch_params": ["blockIdx.x", "threadIdx.x"]}


def _payload(body, params=None, kernels=(KERNEL,)):
    params = params if params is not None else [
        {"name": "A", "kind": "tensor", "dtype": "float32", "shape": [var("n"), c(4)],
         "data": "A"},
        {"name": "B", "kind": "tensor", "dtype": "float32",
         "shape": [["mul", var("n"), c(2)]], "data": "B"},
    ]
    return {"format": "fake", "version": DEVICE_MODULE_VERSION, "target": "fake",
            "kernels": list(kernels),
            "functions": [{"name": "f", "params": params, "body": body}]}


LAUNCH = ["launch", "k", [var("A"), var("n")],
          [["floordiv", ["add", var("n"), c(63)], c(64)], c(64)]]


def _args(n=5):
    return (tensor(np.zeros((n, 4), "float32")), tensor(np.zeros((2 * n,), "float32")))


def test_launch_dimensions_and_arguments_come_from_the_shapes():
    mod = Recording(_payload(LAUNCH))
    a, b = _args(100)
    mod["f"](a, b)
    ((kernel, args, grid, block),) = mod.launches
    assert kernel == "k" and grid == (2, 1, 1) and block == (64, 1, 1)
    assert args == [DevicePtr(a.data_ptr, 0), 100]


def test_shape_checks_say_what_was_expected():
    mod = Recording(_payload(LAUNCH))
    a, _ = _args(5)
    with pytest.raises(KernelError, match=r"f: argument B has shape\[0\] = 7, expected 10"):
        mod["f"](a, tensor(np.zeros(7, "float32")))
    with pytest.raises(KernelError, match=r"f: argument A has shape\[1\] = 3, expected 4"):
        mod["f"](tensor(np.zeros((5, 3), "float32")), tensor(np.zeros(10, "float32")))
    with pytest.raises(KernelError, match=r"argument A has ndim = 1, expected 2"):
        mod["f"](tensor(np.zeros(5, "float32")), tensor(np.zeros(10, "float32")))
    with pytest.raises(KernelError, match=r"argument B has dtype int32, expected float32"):
        mod["f"](a, tensor(np.zeros(10, "int32")))
    with pytest.raises(TypeError, match=r"f: expected 2 arguments \(A, B\), got 3"):
        mod["f"](a, a, a)
    with pytest.raises(TypeError, match="expects a tvm.runtime.Tensor on the cpu device, got "
                                        "a numpy array"):
        mod["f"](np.zeros((5, 4), "float32"), tensor(np.zeros(10, "float32")))
    strided = tensor(np.zeros((5, 8), "float32")).create_view((5, 4))  # compact view: fine
    mod["f"](strided, tensor(np.zeros(10, "float32")))
    assert mod.launches[-1][0] == "k"


def test_symbolic_dimensions_bind_once_and_are_checked_after():
    params = [{"name": "A", "kind": "tensor", "dtype": "float32", "shape": [var("n")],
               "data": "A"},
              {"name": "B", "kind": "tensor", "dtype": "float32", "shape": [var("n")],
               "data": "B"}]
    mod = Recording(_payload(["nop"], params))
    with pytest.raises(KernelError, match=r"f: argument B has shape\[0\] = 4, but n = 3 from "
                                          r"argument A"):
        mod["f"](tensor(np.zeros(3, "float32")), tensor(np.zeros(4, "float32")))


def test_scalars_are_converted_and_checked():
    params = [{"name": "x", "kind": "scalar", "dtype": "int8", "var": "x"},
              {"name": "y", "kind": "scalar", "dtype": "float32", "var": "y"}]
    body = ["launch", "k", [["cast", "handle", c(0)], var("x")], [var("x"), ["cast", "int32",
                                                                             var("y")]]]
    mod = Recording(_payload(body, params))
    mod["f"](300, 2.5)  # int8 wraps like C
    assert mod.launches[-1][2:] == ((44, 1, 1), (2, 1, 1))
    with pytest.raises(TypeError, match=r"argument x expects an integer \(int8\), got float"):
        mod["f"](1.5, 2.0)
    with pytest.raises(TypeError, match=r"argument y expects a float \(float32\), got str"):
        mod["f"](1, "2")


def test_statements_let_assert_if_for_and_empty_launches():
    body = ["let", "m", ["mul", var("n"), c(2)],
            ["assert", ["gt", var("m"), c(2)], "f: m = %lld is too small", [var("m")],
             ["seq", [["for", "i", c(0), c(2), ["if", ["eq", var("i"), c(1)], LAUNCH, None]],
                      ["if", ["lt", var("m"), c(0)], LAUNCH, ["nop"]],
                      ["launch", "k", [var("A"), var("n")], [c(0), c(64)]]]]]]
    mod = Recording(_payload(body))
    mod["f"](*_args(5))
    assert len(mod.launches) == 1  # the zero-sized launch is skipped
    with pytest.raises(KernelError, match="f: m = 2 is too small"):
        mod["f"](*_args(1))


def test_workspaces_are_allocated_and_freed_around_their_use():
    body = ["alloc", "W", "float32", ["mul", var("n"), c(4)],
            ["launch", "k", [var("W"), var("n")], [c(1), c(1)]]]
    mod = Recording(_payload(body))
    mod["f"](*_args(3))
    ((_, (ws, _), _, _),) = mod.launches
    assert isinstance(ws, DevicePtr) and mod.freed == [ws.handle]


@pytest.mark.parametrize("expr, expected", [
    (["div", c(-7), c(2)], -3), (["mod", c(-7), c(2)], -1),
    (["floordiv", c(-7), c(2)], -4), (["floormod", c(-7), c(2)], 1),
    (["cast", "uint8", c(-1)], 255), (["cast", "int32", -2.7], -2),
    (["select", ["and", ["ge", c(3), c(3)], ["not", ["ne", c(1), c(1)]]], c(1), c(2)], 1),
    (["or", ["lt", c(2), c(1)], ["le", c(1), c(1)]], True),
    (["min", c(3), ["max", c(1), c(2)]], 2),
    (["div", 1.0, 4.0], 0.25),
])
def test_expression_semantics_follow_tir(expr, expected):
    assert evaluate(expr, {}) == expected


def test_malformed_programs_are_reported():
    def launch_over(extent):
        return Recording(_payload(["launch", "k", [var("A"), var("n")], [extent, c(1)]]))

    with pytest.raises(HostProgramError, match="unknown expression operator 'pow'"):
        launch_over(["pow", c(1), c(2)])["f"](*_args())
    with pytest.raises(HostProgramError, match="'missing', which is not bound"):
        launch_over(var("missing"))["f"](*_args())
    with pytest.raises(KernelError, match="division by zero"):
        launch_over(["floordiv", c(1), c(0)])["f"](*_args())
    mod = Recording(_payload(["jump", 3]))
    with pytest.raises(HostProgramError, match="unknown host-program statement 'jump'"):
        mod["f"](*_args())


def test_payloads_are_validated():
    good = _payload(LAUNCH)
    with pytest.raises(ModuleLoadError, match="expected a 'fake' device module, got format "
                                              "'other'"):
        Recording({**good, "format": "other"})
    with pytest.raises(ModuleLoadError, match="version 99 is not supported"):
        Recording({**good, "version": 99})
    with pytest.raises(ModuleLoadError, match="version 1 was written before host programs "
                                              "took the shared expression format.*rebuild"):
        Recording({**good, "version": 1})
    bad_kernel = {**KERNEL, "launch_params": ["warpIdx.x"]}
    with pytest.raises(ModuleLoadError, match=r"kernel 'k' launches over \['warpIdx.x'\]"):
        Recording(_payload(LAUNCH, kernels=[bad_kernel]))


def test_one_file_round_trip(tmp_path):
    mod = Recording({**_payload(LAUNCH), "source": "// kernels"})
    path = tmp_path / "m.fakemod"
    mod.export_library(str(path))
    again = Recording(load_device_module_payload(str(path), "fake"))
    assert again.function_names == ["f"] and again.get_source() == "// kernels"
    with pytest.raises(ValueError, match=r"written to a \.fakemod file"):
        mod.export_library(str(tmp_path / "m.json"))
    (tmp_path / "bad.fakemod").write_text("{not json")
    with pytest.raises(ModuleLoadError, match="cannot read"):
        load_device_module_payload(str(tmp_path / "bad.fakemod"), "fake")


# -- checks in kernels: the error record --------------------------------------------------------

CHECKED = {**KERNEL, "error_record": [{"message": "never", "nargs": 0},
                                      {"message": "take: index %lld is out of range for axis 0 "
                                                  "of size %lld", "nargs": 2}]}


class FailingCheck(Recording):
    """A kernel whose second check fails with (9, 4) while ``fail`` is set."""

    fail = True

    def launch(self, dev, kernel, args, grid, block):
        super().launch(dev, kernel, args, grid, block)
        if self.fail:
            record = np.zeros(64, np.uint8)
            record[:4] = np.array([2], np.int32).view(np.uint8)
            record[8:24] = np.array([9, 4], np.int64).view(np.uint8)
            dev.api.copy_from_host(dev, args[-1].handle, 0, record)


def test_a_failed_check_in_a_kernel_raises_its_message():
    mod = FailingCheck(_payload(LAUNCH, kernels=(CHECKED,)))
    a, b = _args()
    with pytest.raises(KernelError, match="^take: index 9 is out of range for axis 0 of size 4$"):
        mod["f"](a, b)
    ((_, args, _, _),) = mod.launches
    assert len(args) == 3 and isinstance(args[-1], DevicePtr)  # the record after the params
    mod.fail = False
    mod["f"](a, b)  # the record was cleared: the next launch succeeds
    assert mod.launches[1][1][-1] == args[-1]  # one record per device, kept


def test_kernels_without_checks_take_no_record():
    mod = FailingCheck(_payload(LAUNCH))
    mod.fail = False
    mod["f"](*_args())
    assert len(mod.launches[0][1]) == 2


def test_a_check_number_the_kernel_does_not_have_is_refused():
    class Wrong(FailingCheck):
        def launch(self, dev, kernel, args, grid, block):
            dev.api.copy_from_host(dev, args[-1].handle, 0,
                                   np.array([7] + [0] * 15, np.int32).view(np.uint8))

    mod = Wrong(_payload(LAUNCH, kernels=({**CHECKED, "error_record": CHECKED["error_record"]},)))
    with pytest.raises(KernelError, match="check 7, which it does not have"):
        mod["f"](*_args())


@pytest.mark.parametrize("record", [
    "x", [{"message": 3, "nargs": 0}], [{"message": "m", "nargs": 8}],
    [{"message": "m", "nargs": True}], [{"message": "m"}],
])
def test_a_malformed_error_record_is_refused_at_load(record):
    with pytest.raises(ModuleLoadError, match="malformed error_record"):
        Recording(_payload(LAUNCH, kernels=({**KERNEL, "error_record": record},)))
