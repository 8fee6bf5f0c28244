"""The VM on hand-written bytecode: checks, shape binding, allocation, calls, control flow,
the executable file format and the profiler (no compiler needed; kernels from kernels.c)."""

from __future__ import annotations

import numpy as np
import pytest

import tvm.runtime
from tvm.runtime.error import ModuleLoadError
from tvm.runtime.vm import (
    BytecodeError,
    Executable,
    ShapeTuple,
    StoragePool,
    VirtualMachine,
    VMError,
    load_executable,
)
from tvm.runtime.int_expr import compile_expr, format_expr
from tvm.runtime.vm.bytecode import validate_function


def R(i):
    return ["reg", i]


def shift_program(dims=None):
    """main(x: Tensor[(n,), f32]) -> x + 1 + 2 through two add_scalar calls (symbolic n)."""
    n = ["var", 0]
    nbytes = ["mul", n, 4]
    code = [
        {"op": "check_tensor_info", "arg": R(0), "ndim": 1, "dtype": "float32",
         "ctx": "main: parameter x"},
        {"op": "match_shape", "arg": R(0), "dims": dims or [["store", 0]],
         "ctx": "main: parameter x"},
        {"op": "alloc_storage", "dst": 1, "size": nbytes, "device": 0, "scope": "global"},
        {"op": "alloc_tensor", "dst": 2, "storage": R(1), "offset": 0,
         "shape": ["shape", [n]], "dtype": "float32"},
        {"op": "call", "dst": None, "func": "add_scalar", "args": [R(0), R(2), ["imm", 1.0]]},
        {"op": "alloc_storage", "dst": 3, "size": nbytes, "device": 0, "scope": "global"},
        {"op": "alloc_tensor", "dst": 4, "storage": R(3), "offset": 0,
         "shape": ["shape", [n]], "dtype": "float32"},
        {"op": "call", "dst": None, "func": "add_scalar", "args": [R(2), R(4), ["imm", 2.0]]},
        {"op": "ret", "value": R(4)},
    ]
    return {"functions": [{"name": "main", "params": ["x"], "num_regs": 5, "heap_size": 1,
                           "heap_names": ["n"], "code": code}], "target": "c"}


@pytest.fixture
def shift_exe(kernel_module):
    return Executable(shift_program(), [], kernel_module)


def test_run_symbolic_shape_two_sizes(shift_exe):
    vm = VirtualMachine(shift_exe, tvm.runtime.cpu())
    for n in (3, 17):
        x = np.arange(n, dtype="float32")
        out = vm["main"](x)
        assert isinstance(out, tvm.runtime.Tensor)
        np.testing.assert_allclose(out.numpy(), x + 3)


def test_input_errors_name_parameter_expected_given(shift_exe):
    vm = VirtualMachine(shift_exe)
    with pytest.raises(VMError, match=r"main: parameter x has dtype float64, expected float32"):
        vm["main"](np.zeros(4))
    with pytest.raises(VMError, match=r"parameter x has ndim 2 .*expected ndim 1"):
        vm["main"](np.zeros((2, 2), "float32"))
    with pytest.raises(VMError, match=r"parameter x must be a tensor, got a tuple"):
        vm["main"]((1, 2))
    with pytest.raises(TypeError, match=r"main\(\) takes 1 argument\(s\) \(x\), got 2"):
        vm["main"](np.zeros(2, "float32"), 1)


def test_static_and_symbolic_dim_mismatch(kernel_module):
    exe = Executable(shift_program([["imm", 4]]), [], kernel_module)
    vm = VirtualMachine(exe)
    with pytest.raises(VMError, match=r"parameter x has shape\[0\] = 5, expected 4"):
        vm["main"](np.zeros(5, "float32"))


def test_assert_symbolic_expression():
    code = [
        {"op": "match_shape", "arg": R(0), "dims": [["store", 0]], "ctx": "f: parameter a"},
        {"op": "match_shape", "arg": R(1), "dims": [["assert", ["mul", ["var", 0], 2]]],
         "ctx": "f: parameter b"},
        {"op": "ret", "value": R(1)},
    ]
    exe = Executable({"functions": [{"name": "f", "params": ["a", "b"], "num_regs": 2,
                                     "heap_size": 1, "heap_names": ["n"], "code": code}]})
    vm = VirtualMachine(exe)
    vm["f"](np.zeros(3), np.zeros(6))
    with pytest.raises(VMError, match=r"parameter b has shape\[0\] = 5, expected \(n \* 2\) = 6"):
        vm["f"](np.zeros(3), np.zeros(5))


def test_kernel_error_carries_vm_location(kernel_module):
    code = [
        {"op": "call", "dst": None, "func": "add_scalar",
         "args": [R(0), R(0), ["imm", 1.0]]},
        {"op": "ret", "value": R(0)},
    ]
    exe = Executable({"functions": [{"name": "main", "params": ["x"], "num_regs": 1,
                                     "heap_size": 0, "code": code}]}, [], kernel_module)
    with pytest.raises(tvm.runtime.KernelError, match="argument A has ndim 2") as info:
        VirtualMachine(exe)["main"](np.zeros((2, 2), "float32"))
    assert any("@main, instruction 0: call add_scalar" in n for n in info.value.__notes__)


def test_if_goto_move_tuples_and_builtins():
    # f(c, a, b) = (a if c else b, shape_of(a))
    code = [
        {"op": "if", "cond": R(0), "offset": 3},
        {"op": "move", "dst": 3, "src": R(1)},
        {"op": "goto", "offset": 2},
        {"op": "move", "dst": 3, "src": R(2)},
        {"op": "call", "dst": 4, "func": "vm.builtin.shape_of", "args": [R(1)]},
        {"op": "call", "dst": 5, "func": "vm.builtin.make_tuple", "args": [R(3), R(4)]},
        {"op": "ret", "value": R(5)},
    ]
    exe = Executable({"functions": [{"name": "f", "params": ["c", "a", "b"], "num_regs": 6,
                                     "heap_size": 0, "code": code}]})
    vm = VirtualMachine(exe)
    a, b = np.ones((2, 3), "float32"), np.zeros((2, 3), "float32")
    chosen, shape = vm["f"](True, a, b)
    np.testing.assert_array_equal(chosen.numpy(), a)
    assert shape == ShapeTuple((2, 3))
    chosen, _ = vm["f"](np.array(False), a, b)
    np.testing.assert_array_equal(chosen.numpy(), b)


def test_calls_between_vm_functions_and_constants():
    const = np.arange(4, dtype="float32")
    inner = {"name": "inner", "params": [], "num_regs": 0, "heap_size": 0,
             "code": [{"op": "ret", "value": ["const", 0]}]}
    outer = {"name": "main", "params": [], "num_regs": 1, "heap_size": 0,
             "code": [{"op": "call", "dst": 0, "func": "inner", "args": []},
                      {"op": "ret", "value": R(0)}]}
    exe = Executable({"functions": [inner, outer]}, [const])
    np.testing.assert_array_equal(VirtualMachine(exe)["main"]().numpy(), const)


def test_export_and_load_round_trip(shift_exe, tmp_path):
    path = tmp_path / "model.so"
    shift_exe.export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert isinstance(loaded, Executable)
    assert loaded.as_text() == shift_exe.as_text()
    x = np.linspace(0, 1, 7, dtype="float32")
    np.testing.assert_allclose(VirtualMachine(loaded)["main"](x).numpy(), x + 3)
    # a plain library still loads as one
    plain = tvm.runtime.load_module(shift_exe.kernel_lib.path)
    assert not isinstance(plain, Executable)


def test_export_constants_without_kernels(tmp_path):
    consts = [np.arange(6, dtype="int32").reshape(2, 3), np.array(2.5, "float64")]
    fn = {"name": "main", "params": [], "num_regs": 1, "heap_size": 0,
          "code": [{"op": "call", "dst": 0, "func": "vm.builtin.make_tuple",
                    "args": [["const", 0], ["const", 1]]},
                   {"op": "ret", "value": R(0)}]}
    exe = Executable({"functions": [fn]}, consts)
    path = tmp_path / "consts.so"
    exe.export_library(path)
    loaded = load_executable(path)
    a, b = VirtualMachine(loaded)["main"]()
    np.testing.assert_array_equal(a.numpy(), consts[0])
    assert b.numpy().dtype == np.float64 and b.numpy() == 2.5


def test_load_rejects_garbage(tmp_path):
    path = tmp_path / "bad.so"
    path.write_bytes(b"x" * 10 + (1 << 40).to_bytes(8, "little") + b"TVMVMEX1")
    with pytest.raises(ModuleLoadError, match="not written by tvm"):
        load_executable(path)
    with pytest.raises(ModuleLoadError, match="trailer is corrupt"):
        load_executable(path, trusted=True)
    other = tmp_path / "other.bin"
    other.write_bytes(b"hello")
    with pytest.raises(ModuleLoadError, match="not written by tvm"):
        load_executable(other)
    with pytest.raises(ModuleLoadError, match="not a VM executable"):
        load_executable(other, trusted=True)


def test_validation_errors():
    bad = {"name": "f", "params": [], "num_regs": 1, "heap_size": 0,
           "code": [{"op": "ret", "value": R(3)}]}
    with pytest.raises(BytecodeError, match="register 3 is out of range"):
        validate_function(bad, 0)
    with pytest.raises(ModuleLoadError, match="unknown instruction"):
        Executable({"functions": [{"name": "f", "params": [], "num_regs": 0, "heap_size": 0,
                                   "code": [{"op": "jump"}]}]})
    with pytest.raises(BytecodeError, match="leaves the function"):
        validate_function({"name": "f", "params": [], "num_regs": 0, "heap_size": 0,
                           "code": [{"op": "goto", "offset": 5}]}, 0)


def test_unknown_callee_is_reported_at_construction():
    exe = Executable({"functions": [{"name": "f", "params": [], "num_regs": 0, "heap_size": 0,
                                     "code": [{"op": "call", "dst": None, "func": "nope",
                                               "args": []},
                                              {"op": "ret", "value": ["imm", None]}]}]})
    with pytest.raises(VMError, match="calls 'nope'"):
        VirtualMachine(exe)


def test_as_text_lists_instructions(shift_exe):
    text = shift_exe.as_text()
    order = [text.index(w) for w in ("check_tensor_info", "match_shape", "alloc_storage",
                                     "alloc_tensor", "call add_scalar", "ret")]
    assert order == sorted(order)
    assert "size=(n * 4)" in text


def test_profile_and_time_evaluator(shift_exe):
    vm = VirtualMachine(shift_exe)
    x = np.ones(64, "float32")
    report = vm.profile("main", x)
    row = report.row("add_scalar")
    assert row.count == 2 and row.kind == "kernel" and row.total_s > 0
    assert "add_scalar" in report.table() and "(total)" in report.table()
    result = vm.time_evaluator("main", number=3, repeat=4)(x)
    assert len(result.results) == 4 and result.min <= result.median <= result.max
    assert result.std >= 0 and "mean (ms)" in str(result)


def test_storage_pool_reuses_freed_buffers():
    pool = StoragePool(tvm.runtime.cpu())
    s = pool.alloc(1000)
    t = s.alloc_tensor(0, (10,), "float32")
    addr = t.data_ptr
    del s
    assert pool.cached_bytes == 0  # the tensor still uses the buffer
    del t
    assert pool.cached_bytes >= 1000
    s2 = pool.alloc(900)
    assert s2.alloc_tensor(0, (2,), "float32").data_ptr == addr
    assert pool.stats["hits"] == 1
    with pytest.raises(ValueError, match="needs 1004 bytes"):
        s2.alloc_tensor(4, (250,), "float32")


def test_pool_reuse_across_runs(shift_exe):
    vm = VirtualMachine(shift_exe)
    x = np.ones(16, "float32")
    vm["main"](x)
    misses = vm.pool.stats["misses"]
    for _ in range(3):
        vm["main"](x)  # the result is dropped: both storages come back to the pool
    assert vm.pool.stats["misses"] == misses
    kept = [vm["main"](x) for _ in range(3)]
    assert vm.pool.stats["misses"] == misses + 2  # only kept results need new memory
    assert len({t.data_ptr for t in kept}) == 3


@pytest.mark.parametrize("expr,heap,expected", [
    (["add", ["var", 0], 3], [4], 7),
    (["floordiv", -7, 2], [], -4),
    (["div", -7, 2], [], -3),
    (["mod", -7, 2], [], -1),
    (["select", ["lt", ["var", 0], 2], 10, 20], [1], 10),
    (["max", ["var", 0], ["var", 1]], [3, 9], 9),
])
def test_shape_expressions(expr, heap, expected):
    assert compile_expr(expr)(heap) == expected
    assert format_expr(expr, ["n", "m"])


def test_dead_registers_release_memory_within_a_run(kernel_module):
    """Unplanned allocations reuse memory once nothing reads their register any more."""
    n = ["var", 0]
    code = [{"op": "match_shape", "arg": R(0), "dims": [["store", 0]], "ctx": "x"}]
    src = 0
    for step in range(4):
        storage, tensor = 1 + 2 * step, 2 + 2 * step
        code += [
            {"op": "alloc_storage", "dst": storage, "size": ["mul", n, 4], "device": 0,
             "scope": "global"},
            {"op": "alloc_tensor", "dst": tensor, "storage": R(storage), "offset": 0,
             "shape": ["shape", [n]], "dtype": "float32"},
            {"op": "call", "dst": None, "func": "add_scalar",
             "args": [R(src), R(tensor), ["imm", 1.0]]},
        ]
        src = tensor
    code.append({"op": "ret", "value": R(src)})
    exe = Executable({"functions": [{"name": "main", "params": ["x"], "num_regs": 9,
                                     "heap_size": 1, "code": code}]}, [], kernel_module)
    vm = VirtualMachine(exe)
    out = vm["main"](np.zeros(1000, "float32"))
    np.testing.assert_array_equal(out.numpy(), np.full(1000, 4.0))
    # four allocations, but at most two buffers are alive at once: the pool served the rest
    assert vm.pool.stats["misses"] == 2 and vm.pool.stats["hits"] == 2
