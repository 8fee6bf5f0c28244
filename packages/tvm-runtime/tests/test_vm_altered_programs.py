"""VM programs altered after compilation (what fuzz/executables.py does to a re-sealed
file): malformed fields are refused at load with BytecodeError / ModuleLoadError, and
operands the structural checks cannot judge fail at run time with a VMError naming the
instruction, never with a bare TypeError, AttributeError or ZeroDivisionError."""

from __future__ import annotations

import copy
import json
import struct

import numpy as np
import pytest

import tvm.runtime
from tvm.runtime.error import ModuleLoadError
from tvm.runtime.vm import BytecodeError, Executable, VirtualMachine, VMError
from tvm.runtime.vm.bytecode import validate_function


def _program():
    """main(x: f32[4]) -> a fresh f32[4] tensor (no kernel needed)."""
    code = [
        {"op": "check_tensor_info", "arg": ["reg", 0], "ndim": 1, "dtype": "float32",
         "ctx": "main: parameter x"},
        {"op": "match_shape", "arg": ["reg", 0], "dims": [["imm", 4]], "ctx": "main: x"},
        {"op": "alloc_storage", "dst": 1, "size": 16, "device": 0, "scope": "global"},
        {"op": "alloc_tensor", "dst": 2, "storage": ["reg", 1], "offset": 0,
         "shape": ["shape", [4]], "dtype": "float32"},
        {"op": "ret", "value": ["reg", 2]},
    ]
    return {"functions": [{"name": "main", "params": ["x"], "num_regs": 3, "heap_size": 0,
                           "code": code}], "target": "c"}


def _fn(**change):
    fn = copy.deepcopy(_program()["functions"][0])
    fn.update(change)
    return fn


def _with_instruction(pc, **fields):
    prog = _program()
    prog["functions"][0]["code"][pc].update(fields)
    return prog


def test_the_unaltered_program_runs():
    vm = VirtualMachine(Executable(_program(), []), tvm.runtime.cpu())
    assert vm["main"](np.zeros(4, "float32")).shape == (4,)


@pytest.mark.parametrize("change", [
    {"code": [{"op": "call", "dst": None, "func": "f", "args": None},
              {"op": "ret", "value": ["reg", 0]}]},
    {"code": [{"op": "match_shape", "arg": ["reg", 0], "dims": [["imm"]], "ctx": ""},
              {"op": "ret", "value": ["reg", 0]}]},
    {"code": [{"op": "match_shape", "arg": ["reg", 0], "dims": 3, "ctx": ""},
              {"op": "ret", "value": ["reg", 0]}]},
    {"num_regs": 2 ** 63 - 1},
    {"heap_size": -1},
])
def test_malformed_fields_are_bytecode_errors(change):
    with pytest.raises(BytecodeError, match="VM function 'main'"):
        validate_function(_fn(**change), 0)


def _blob(program, data=b""):
    text = json.dumps(program).encode()
    head = struct.pack("<8sII", b"TVMVMPRG", 3, len(text)) + text
    return head + b"\0" * (-len(head) % 64) + data


@pytest.mark.parametrize("constants", [
    1.5,
    [{"dtype": "float32", "shape": [1], "offset": -64, "nbytes": 4}],
    [{"dtype": "float32", "shape": [-1], "offset": 0, "nbytes": -4}],
])
def test_bad_constant_tables_are_module_load_errors(constants):
    program = dict(_program(), constants=constants)
    with pytest.raises(ModuleLoadError):
        Executable.from_program_bytes(_blob(program, b"\0" * 64))


@pytest.mark.parametrize("pc,fields,message", [
    (3, {"storage": ["reg", 0]}, "AttributeError"),  # a tensor where a storage belongs
    (3, {"dtype": ""}, "cannot be prepared"),
    (2, {"size": ["floordiv", 16, 0]}, "ZeroDivisionError"),
])
def test_unusable_operands_are_vm_errors_naming_the_instruction(pc, fields, message):
    exe = Executable(_with_instruction(pc, **fields), [])
    with pytest.raises(VMError, match=f"VM function @main, instruction {pc}: .*{message}"):
        # preparing the program (at construction) or running it
        VirtualMachine(exe, tvm.runtime.cpu())["main"](np.zeros(4, "float32"))


def test_errors_of_a_called_global_keep_their_type():
    from tvm.ffi.registry import register_func

    @register_func("testing.fuzz_raises_key_error", override=True)
    def _raise(x):
        raise KeyError("mine")

    prog = _program()
    prog["functions"][0]["code"].insert(
        4, {"op": "call", "dst": None, "func": "testing.fuzz_raises_key_error",
            "args": [["reg", 0]]})
    vm = VirtualMachine(Executable(prog, []), tvm.runtime.cpu())
    with pytest.raises(KeyError, match="mine"):
        vm["main"](np.zeros(4, "float32"))
