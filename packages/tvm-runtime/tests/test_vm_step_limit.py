"""The VM's optional step limit (``max_steps`` / ``TVM_VM_MAX_STEPS``) on hand-written
bytecode: a loop that never ends stops with a VMStepLimitError naming the function, the
instruction and the count; the count is exact, shared by nested calls and reset per call."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tvm.runtime.vm import Executable, VirtualMachine, VMError, VMStepLimitError


def R(i):
    return ["reg", i]


def _spin_exe():
    # spin(c): while c: pass  (forever when c is true); returns c
    code = [
        {"op": "if", "cond": R(0), "offset": 2},
        {"op": "goto", "offset": -1},
        {"op": "ret", "value": R(0)},
    ]
    return Executable({"functions": [{"name": "spin", "params": ["c"], "num_regs": 1,
                                      "heap_size": 0, "code": code}]})


def _nested_exe():
    # main() calls inner() (returning 7) and returns 7 itself: 2 + 1 instructions, a nested
    # call; tail() returns inner()'s result: a tail call, 1 + 1 instructions, one frame deep
    inner = {"name": "inner", "params": [], "num_regs": 0, "heap_size": 0,
             "code": [{"op": "ret", "value": ["imm", 7]}]}
    outer = {"name": "main", "params": [], "num_regs": 1, "heap_size": 0,
             "code": [{"op": "call", "dst": 0, "func": "inner", "args": []},
                      {"op": "ret", "value": ["imm", 7]}]}
    tail = {"name": "tail", "params": [], "num_regs": 1, "heap_size": 0,
            "code": [{"op": "call", "dst": 0, "func": "inner", "args": []},
                     {"op": "ret", "value": R(0)}]}
    return Executable({"functions": [inner, outer, tail]})


def test_never_ending_loop_stops_with_a_clear_error():
    vm = VirtualMachine(_spin_exe(), max_steps=1000)
    with pytest.raises(VMStepLimitError) as info:
        vm["spin"](True)
    msg = str(info.value)
    assert msg.startswith("VM function @spin stopped after 1000 executed instructions "
                          "(max_steps=1000), at instruction ")
    assert "1 VM call(s) deep" in msg and "TVM_VM_MAX_STEPS" in msg
    assert isinstance(info.value, VMError)
    assert vm["spin"](False) is False  # the VM is usable again, the count starts afresh


def test_the_count_is_exact_and_reset_per_call():
    vm = VirtualMachine(_spin_exe(), max_steps=2)  # if + ret
    for _ in range(3):
        assert vm["spin"](False) is False
    vm.max_steps = 1
    with pytest.raises(VMStepLimitError, match="after 1 executed instructions.*at instruction 2: ret"):
        vm["spin"](False)


def test_nested_calls_share_the_count():
    vm = VirtualMachine(_nested_exe(), max_steps=3)
    assert vm["main"]() == 7
    vm.max_steps = 2  # the outer call and the inner ret: main's ret is one too many
    with pytest.raises(VMStepLimitError, match=r"@main stopped after 2 .*instruction 1: ret"):
        vm["main"]()
    vm.max_steps = 1
    with pytest.raises(VMStepLimitError, match=r"@inner stopped after 1 .* 2 VM call\(s\) deep"):
        vm["main"]()
    vm.max_steps = None
    assert vm["main"]() == 7


def test_a_tail_call_runs_in_the_callers_place():
    vm = VirtualMachine(_nested_exe(), max_steps=2)  # tail's call and inner's ret
    assert vm["tail"]() == 7
    vm.max_steps = 1
    with pytest.raises(VMStepLimitError, match=r"@inner stopped after 1 .* 1 VM call\(s\) deep"):
        vm["tail"]()


def test_profile_and_time_evaluator_honour_the_limit():
    vm = VirtualMachine(_spin_exe(), max_steps=50)
    with pytest.raises(VMStepLimitError):
        vm.profile("spin", True)
    with pytest.raises(VMStepLimitError):
        vm.time_evaluator("spin", number=1)(True)
    assert vm["spin"](False) is False


def test_knob_gives_the_default_and_the_argument_wins(monkeypatch):
    monkeypatch.setenv("TVM_VM_MAX_STEPS", "64")
    assert VirtualMachine(_spin_exe()).max_steps == 64
    assert VirtualMachine(_spin_exe(), max_steps=5).max_steps == 5
    with pytest.raises(VMStepLimitError, match="after 64 executed"):
        VirtualMachine(_spin_exe())["spin"](True)
    monkeypatch.delenv("TVM_VM_MAX_STEPS")
    assert VirtualMachine(_spin_exe()).max_steps is None


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "100"])
def test_bad_limits_are_rejected(bad):
    with pytest.raises(ValueError, match="max_steps must be a positive int or None"):
        VirtualMachine(_spin_exe(), max_steps=bad)
    vm = VirtualMachine(_spin_exe())
    with pytest.raises(ValueError, match="max_steps"):
        vm.max_steps = bad


def test_an_error_inside_a_limited_run_keeps_its_location_note():
    code = [{"op": "call", "dst": 1, "func": "vm.builtin.shape_of", "args": [R(0)]},
            {"op": "ret", "value": R(1)}]
    exe = Executable({"functions": [{"name": "f", "params": ["x"], "num_regs": 2,
                                     "heap_size": 0, "code": code}]})
    vm = VirtualMachine(exe, max_steps=10)
    with pytest.raises(Exception) as info:
        vm["f"](3)
    where = [str(info.value), *getattr(info.value, "__notes__", ())]
    assert any("VM function @f, instruction 0" in n for n in where)
    assert vm["f"](np.zeros((2, 5), "float32")) == (2, 5)


def _per_instruction_seconds(vm, n_steps):
    start = time.perf_counter()
    with pytest.raises(VMStepLimitError):
        vm["spin"](True)
    return (time.perf_counter() - start) / n_steps


def test_limit_overhead_is_small():
    """The limited loop costs little per instruction (the unlimited loop is the old one)."""
    n = 200_000
    limited = VirtualMachine(_spin_exe(), max_steps=n)
    t = min(_per_instruction_seconds(limited, n) for _ in range(3))
    assert t < 5e-6  # a few hundred nanoseconds on any machine the tests run on
