"""The virtual machine: runs an :class:`~.executable.Executable` on a device.

::

    vm = VirtualMachine(ex, tvm.runtime.cpu())
    out = vm["main"](x, w, b)              # numpy arrays or Tensors in, Tensors out
    print(vm.profile("main", x, w, b))     # time per kernel (.table(), .csv(), .json())
    print(vm.time_evaluator("main", number=10, repeat=3)(x, w, b))

Each bytecode function is compiled once, when the VM is made, into a list of closures (one
per instruction, operands and callees resolved): running it is
``while pc >= 0: pc = code[pc](regs, heap)``.  Kernels are called straight through their
packed C entry point; storage comes from a :class:`~.memory.StoragePool`.  Checks
(``check_tensor_info``, ``match_shape``) raise :class:`VMError` naming the parameter, what
was expected and what was given.  A VM is not meant to be run from several threads at once.

``VirtualMachine(ex, max_steps=N)`` (or ``TVM_VM_MAX_STEPS=N``) bounds the instructions one
call may execute, nested VM calls included: a program that does not end (a recursive Relax
function whose exit is never taken) stops with a :class:`VMStepLimitError` naming the
function, the instruction and the count.  Without a limit the loop above runs unchanged.
"""

from __future__ import annotations

import ctypes
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tvm.ffi.dlpack import ArgTypeCode, TVMValue
from tvm.ffi.dtype import parse_dtype
from tvm.ffi.error import TVMError
from tvm.ffi.knobs import VM_MAX_STEPS
from tvm.ffi.registry import get_global_func

from ..device import DEVICE_TYPE_NAMES, Device, DeviceAPI, cpu
from ..device import device as _as_device
from ..error import KernelError, clear_last_error, get_last_error
from ..packed_func import PackedCFunc
from ..tensor import Tensor, from_dlpack
from ..tensor import tensor as _make_tensor
from .builtins import ShapeTuple, get_builtin
from ..int_expr import compile_expr, format_expr
from .bytecode import format_instruction, heap_var
from .executable import Executable
from .memory import StoragePool
from .profiler import BenchmarkResult, CallRecorder, ProfileReport

__all__ = ["VirtualMachine", "VMError", "VMStepLimitError"]

_CPU = 1
_K_TENSOR = int(ArgTypeCode.kDLTensorHandle)
_K_INT = int(ArgTypeCode.kInt)
_K_FLOAT = int(ArgTypeCode.kFloat)
_K_NULL = int(ArgTypeCode.kNull)
_K_HANDLE = int(ArgTypeCode.kOpaqueHandle)


class VMError(TVMError, ValueError):
    """A VM check failed (wrong input shape/dtype/kind) or the program cannot run."""


class VMStepLimitError(VMError):
    """A VM call executed more instructions than the VM's ``max_steps`` allows."""


def _is_internal_failure(err: Exception, ins: dict) -> bool:
    """Whether ``err``, raised while executing ``ins``, is the VM's own failure on operands
    it cannot use (a register that holds no storage, a shape division by zero, a builtin
    given the wrong values: a program altered after it was compiled), reported as a
    :class:`VMError`.  TVM's own errors, memory and recursion limits, and what a called
    global or VM function raises pass through unchanged."""
    if isinstance(err, (TVMError, MemoryError, RecursionError)):
        return False
    return ins.get("op") != "call" or str(ins.get("func", "")).startswith("vm.builtin.")


class _Function:
    __slots__ = ("name", "params", "num_regs", "heap_size", "code", "record")

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.name: str = record["name"]
        self.params: list[str] = list(record["params"])
        self.num_regs: int = record["num_regs"]
        self.heap_size: int = record["heap_size"]
        self.code: list[Callable[[list, list], int]] = []


class VirtualMachine:
    """Runs ``executable`` on ``device`` (default: the device its kernels were built for).

    On a GPU (``VirtualMachine(ex, tvm.runtime.opencl())``) storage is allocated on the
    device, numpy and CPU inputs are copied there, device tensors are used as they are, and
    the results are device tensors; the bytecode itself (checks, shape arithmetic, builtins)
    runs on the host.

    ``max_steps`` bounds the instructions one call executes (nested VM calls included); when
    ``None``, ``TVM_VM_MAX_STEPS`` gives it, and unset means no limit.  It can be changed
    later through the :attr:`max_steps` property.
    """

    def __init__(self, executable: Executable, device: Device | str | None = None, *,
                 max_steps: int | None = None) -> None:
        if not isinstance(executable, Executable):
            raise TypeError(
                f"VirtualMachine expects a tvm.runtime.vm.Executable, got "
                f"{type(executable).__name__} (load one with tvm.runtime.load_module)"
            )
        if isinstance(device, (list, tuple)):
            if len(device) != 1:
                raise ValueError("VirtualMachine: only one device per VM is supported")
            device = device[0]
        self.executable = executable
        kernel_type = executable.kernel_device_type
        if device is None:
            device = cpu() if kernel_type is None else Device(kernel_type, 0)
        self.device: Device = _as_device(device)
        if kernel_type is not None and kernel_type != self.device.device_type:
            want = DEVICE_TYPE_NAMES.get(kernel_type, f"device type {kernel_type}")
            raise VMError(
                f"VirtualMachine: the executable's kernels run on {want} (built for target "
                f"{executable.target!r}), but the VM was given {self.device}; use "
                f"VirtualMachine(ex, tvm.runtime.device({want!r}))"
            )
        self.pool = StoragePool(self.device)
        self._constants = [self._place(np.asarray(c, order="C")) for c in executable.constants]
        self._index = {name: i for i, name in enumerate(executable.vm_function_names)}
        self._funcs = [_Function(rec) for rec in executable.program["functions"]]
        self._profiled: list[_Function] | None = None
        self._recorder: CallRecorder | None = None
        self.max_steps = VM_MAX_STEPS.get() if max_steps is None else max_steps
        self._steps_left = 0  # while a limited call runs: instructions it may still execute
        self._nesting = 0  # VM frames of the limited call now running
        for f in self._funcs:
            f.code = self._compile_function(f, False)

    # ------------------------------------------------------------------ public API

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self.get_function(name)

    def get_function(self, name: str) -> Callable[..., Any]:
        """A Python callable running VM function ``name``."""
        index = self._function_index(name)

        def run(*args: Any) -> Any:
            return self._invoke(index, self._convert_inputs(index, args))

        run.__name__ = name
        return run

    def invoke(self, name: str, *args: Any) -> Any:
        """Run function ``name`` on ``args``."""
        return self.get_function(name)(*args)

    @property
    def function_names(self) -> list[str]:
        return list(self._index)

    @property
    def max_steps(self) -> int | None:
        """The most instructions one call may execute (``None``: no limit)."""
        return self._max_steps

    @max_steps.setter
    def max_steps(self, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"VirtualMachine: max_steps must be a positive int or None, got "
                             f"{value!r}")
        self._max_steps = value

    def profile(self, name: str, *args: Any, repeat: int = 1, warmup: int = 1) -> ProfileReport:
        """Time every kernel, builtin and packed call of ``name`` on ``args``.

        ``warmup`` untimed runs (which also record the argument shapes) precede ``repeat``
        timed ones; rows and total are per run, averaged over the timed runs, and the rows
        plus the VM overhead add up to the total.  See :mod:`.profiler`.
        """
        index = self._function_index(name)
        inputs = self._convert_inputs(index, args)
        if self._profiled is None:
            self._recorder = CallRecorder(str(self.device), self._sync_function(),
                                          _describe_value, self.executable.kernel_source_layers)
            self._profiled = [_Function(f.record) for f in self._funcs]  # calls refer to it
            for f in self._profiled:
                f.code = self._compile_function(f, True)
        funcs = self._profiled
        return self._recorder.profile(name, lambda: self._run(funcs, index, inputs),
                                      repeat, warmup)

    def _sync_function(self) -> Callable[[], None] | None:
        """Waiting for the device without looking its API up each time; None where the API
        is synchronous (the CPU: its calls are done when they return)."""
        api = self.device.api
        if type(api).synchronize is DeviceAPI.synchronize:
            return None
        return functools.partial(api.synchronize, self.device)

    def time_evaluator(
        self, name: str, number: int = 10, repeat: int = 1, min_repeat_ms: float = 0.0,
        warmup: int = 1,
    ) -> Callable[..., BenchmarkResult]:
        """A function ``(*inputs) -> BenchmarkResult`` timing ``name``.

        Each of ``repeat`` measurements runs the function ``number`` times (more, while the
        measurement takes under ``min_repeat_ms``) and records the mean time of one run.
        """
        for what, value in (("number", number), ("repeat", repeat)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"time_evaluator: {what} must be a positive int, got {value!r}")
        index = self._function_index(name)

        def evaluate(*args: Any) -> BenchmarkResult:
            inputs = self._convert_inputs(index, args)
            sync = self._sync_function() or _no_sync
            for _ in range(warmup):
                self._invoke(index, inputs)
            sync()
            results = []
            n = number
            for _ in range(repeat):
                while True:
                    start = time.perf_counter()
                    for _ in range(n):
                        self._invoke(index, inputs)
                    sync()
                    elapsed = time.perf_counter() - start
                    if elapsed * 1e3 >= min_repeat_ms or n > 1 << 20:
                        break
                    n = max(n * 2, int(n * min_repeat_ms / max(elapsed * 1e3, 1e-3)))
                results.append(elapsed / n)
            return BenchmarkResult(tuple(results), n)

        return evaluate

    # ------------------------------------------------------------------ running

    def _function_index(self, name: str) -> int:
        index = self._index.get(name)
        if index is None:
            raise VMError(
                f"the executable has no function {name!r}; it has: {', '.join(self._index)}"
            )
        return index

    def _invoke(self, index: int, args: Sequence[Any]) -> Any:
        return self._run(self._funcs, index, args)

    def _run(self, funcs: list[_Function], index: int, args: Sequence[Any]) -> Any:
        limit = self._max_steps
        if limit is not None:
            # the count is shared by the nested and tail VM calls of one top-level call
            if self._nesting == 0:
                self._steps_left = limit
            self._nesting += 1
        try:
            while True:  # a tail call replaces the frame: a recursive loop runs in constant depth
                out = self._run_frame(funcs, index, args)
                if not isinstance(out, _TailCall):
                    return out
                index, args = out.index, out.args
        finally:
            if limit is not None:
                self._nesting -= 1

    def _run_frame(self, funcs: list[_Function], index: int, args: Sequence[Any]) -> Any:
        f = funcs[index]
        regs: list[Any] = [None] * (f.num_regs + 1)
        regs[: len(args)] = args
        heap = [0] * f.heap_size
        code = f.code
        pc = 0
        limit = self._max_steps
        try:
            if limit is None:
                while pc >= 0:
                    pc = code[pc](regs, heap)
            else:
                while pc >= 0:
                    left = self._steps_left
                    if left <= 0:
                        raise self._step_limit_error(f, pc, limit)
                    self._steps_left = left - 1
                    pc = code[pc](regs, heap)
        except VMStepLimitError:
            raise  # it names where it stopped; one note per frame of a deep recursion is noise
        except Exception as err:
            ins = f.record["code"][pc]
            text = format_instruction(ins, f.record.get("heap_names") or [])
            if _is_internal_failure(err, ins):
                raise VMError(f"VM function @{f.name}, instruction {pc}: {text}: "
                              f"{type(err).__name__}: {err}") from err
            if hasattr(err, "add_note"):
                err.add_note(f"  in VM function @{f.name}, instruction {pc}: {text}")
            raise
        return regs[-1]

    def _step_limit_error(self, f: _Function, pc: int, limit: int) -> VMStepLimitError:
        text = format_instruction(f.record["code"][pc], f.record.get("heap_names") or [])
        return VMStepLimitError(
            f"VM function @{f.name} stopped after {limit} executed instructions "
            f"(max_steps={limit}), at instruction {pc}: {text}, {self._nesting} VM call(s) "
            "deep; a recursive function that never returns? Raise max_steps (or "
            "TVM_VM_MAX_STEPS) if the program is just long"
        )

    def _convert_inputs(self, index: int, args: Sequence[Any]) -> list[Any]:
        f = self._funcs[index]
        if len(args) != len(f.params):
            names = ", ".join(f.params)
            raise TypeError(
                f"{f.name}() takes {len(f.params)} argument(s) ({names}), got {len(args)}"
            )
        return [self._convert(a, f.name, p) for a, p in zip(args, f.params)]

    def _convert(self, value: Any, fname: str, pname: str) -> Any:
        if isinstance(value, Tensor):
            return value if value.device == self.device else value.copyto(self.device)
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise TypeError(f"{fname}: parameter {pname} got a numpy array of objects")
            return self._place(np.asarray(value, order="C"))
        if isinstance(value, (bool, int, float, np.integer, np.floating, np.bool_)):
            return value.item() if isinstance(value, np.generic) else value
        if value is None:
            return None
        if isinstance(value, ShapeTuple):
            return value
        if isinstance(value, (tuple, list)):
            return tuple(self._convert(v, fname, pname) for v in value)
        if hasattr(value, "__dlpack__"):
            t = from_dlpack(value)
            return t if t.device == self.device else t.copyto(self.device)
        raise TypeError(
            f"{fname}: parameter {pname} got a {type(value).__name__}; expected a tensor "
            "(tvm.runtime.Tensor, numpy array, DLPack array), a number, a shape or a tuple"
        )

    def _place(self, arr: np.ndarray) -> Tensor:
        if self.device.device_type == _CPU:
            return Tensor._from_numpy(arr)
        return _make_tensor(arr, self.device)

    # ------------------------------------------------------------------ compiling

    def _compile_function(self, f: _Function, profile: bool) -> list[Callable]:
        code = f.record["code"]
        steps = []
        for pc, ins in enumerate(code):
            try:
                steps.append(self._compile(ins, pc, f, profile))
            except TVMError:
                raise
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as err:
                # operands the loader's structural checks let through (a dtype that does
                # not parse, a function name of the wrong type): the program is unusable
                text = format_instruction(ins, f.record.get("heap_names") or [])
                raise VMError(f"VM function @{f.name}, instruction {pc}: {text}: cannot be "
                              f"prepared: {type(err).__name__}: {err}") from err
        for pc, regs in _last_uses(code, len(f.params)).items():
            steps[pc] = _with_kills(steps[pc], tuple(regs))
        return steps

    def _getter(self, o: list, f: _Function, pc: int) -> Callable[[list, list], Any]:
        kind, v = o
        if kind == "reg":
            return lambda regs, heap: regs[v]
        if kind == "const":
            c = self._constants[v]
            return lambda regs, heap: c
        if kind in ("imm", "str", "dtype"):
            return lambda regs, heap: v
        if kind == "expr":
            fe = compile_expr(v)
            return lambda regs, heap: fe(heap)
        if kind == "shape":
            if all(isinstance(d, int) for d in v):
                shape = ShapeTuple(v)
                return lambda regs, heap: shape
            dims = [compile_expr(d) for d in v]
            return lambda regs, heap: ShapeTuple(d(heap) for d in dims)
        # a function as a value
        target = self._resolve(v, f, pc)[1]
        return lambda regs, heap: target

    def _compile(self, ins: dict, pc: int, f: _Function, profile: bool) -> Callable:
        op = ins["op"]
        nxt = pc + 1
        if op == "call":
            return self._compile_call(ins, pc, f, profile)
        if op == "check_tensor_info":
            return _check_tensor_info(self._getter(ins["arg"], f, pc), ins, nxt)
        if op == "match_shape":
            return _match_shape(self._getter(ins["arg"], f, pc), ins, nxt,
                                f.record.get("heap_names") or [])
        if op in ("check_shape_info", "check_prim_value", "check_tuple_info", "match_prim_value"):
            return _CHECKS[op](self._getter(ins["arg"], f, pc), ins, nxt,
                               f.record.get("heap_names") or [])
        if op == "alloc_storage":
            if ins["device"] != 0:
                raise VMError(
                    f"VM function @{f.name}, instruction {pc}: storage on device index "
                    f"{ins['device']}, but this VM has one device ({self.device})"
                )
            size, dst, alloc = compile_expr(ins["size"]), ins["dst"], self.pool.alloc

            def alloc_storage(regs: list, heap: list) -> int:
                regs[dst] = alloc(size(heap))
                return nxt

            return alloc_storage
        if op == "alloc_tensor":
            storage = self._getter(ins["storage"], f, pc)
            shape = self._getter(ins["shape"], f, pc)
            offset, dst, dtype = compile_expr(ins["offset"]), ins["dst"], ins["dtype"]
            parse_dtype(dtype)

            def alloc_tensor(regs: list, heap: list) -> int:
                regs[dst] = storage(regs, heap).alloc_tensor(offset(heap), shape(regs, heap), dtype)
                return nxt

            return alloc_tensor
        if op == "move":
            src, dst = self._getter(ins["src"], f, pc), ins["dst"]

            def move(regs: list, heap: list) -> int:
                regs[dst] = src(regs, heap)
                return nxt

            return move
        if op == "ret":
            value = self._getter(ins["value"], f, pc)

            def ret(regs: list, heap: list) -> int:
                regs[-1] = value(regs, heap)
                return -1

            return ret
        if op == "if":
            cond, target = self._getter(ins["cond"], f, pc), pc + ins["offset"]

            def branch(regs: list, heap: list) -> int:
                return nxt if _truth(cond(regs, heap)) else target

            return branch
        target = pc + ins["offset"]
        return lambda regs, heap: target

    def _resolve(self, name: str, f: _Function, pc: int) -> tuple[str, Any]:
        """``(kind, callee)`` for a called name: VM function, builtin, kernel or global."""
        if name in self._index:
            index = self._index[name]
            return "vm", index
        builtin = get_builtin(name)
        if builtin is not None:
            return "builtin", builtin
        lib = self.executable.kernel_lib
        if lib is not None:
            kernel = lib.get_function(name, allow_missing=True)
            if kernel is not None:
                return "kernel", kernel
        packed = get_global_func(name, allow_missing=True)
        if packed is not None:
            return "packed", packed
        raise VMError(
            f"VM function @{f.name}, instruction {pc}: calls {name!r}, which is neither a VM "
            "function, a VM builtin, a kernel of the executable's library nor a registered "
            "global function"
        )

    def _compile_call(self, ins: dict, pc: int, f: _Function, profile: bool) -> Callable:
        name, dst, nxt = ins["func"], ins["dst"], pc + 1
        kind, callee = self._resolve(name, f, pc)
        getters = [self._getter(a, f, pc) for a in ins["args"]]
        if kind == "vm" and not profile and dst is not None and _is_tail(f.record["code"], pc):
            index = callee

            def tail_call(regs: list, heap: list) -> int:
                regs[-1] = _TailCall(index, [g(regs, heap) for g in getters])
                return -1

            return tail_call
        if kind == "vm":
            funcs_ref = self._profiled if profile else self._funcs
            run_vm, index = self._run, callee

            def call(regs: list, heap: list) -> Any:
                return run_vm(funcs_ref, index, [g(regs, heap) for g in getters])
        elif kind == "kernel" and isinstance(callee, PackedCFunc):
            call = _kernel_caller(callee, getters)
        else:
            fn = callee

            def call(regs: list, heap: list) -> Any:
                return fn(*[g(regs, heap) for g in getters])

        if profile and kind != "vm":  # a VM function's own calls are timed inside it
            call = self._recorder.wrap(call, name, kind, getters)
        if dst is None:
            def step(regs: list, heap: list) -> int:
                call(regs, heap)
                return nxt
        else:
            def step(regs: list, heap: list) -> int:
                regs[dst] = call(regs, heap)
                return nxt
        return step


class _TailCall:
    """What a frame returns instead of a value when it ends by calling a VM function: the
    caller's loop runs the callee in its place."""

    __slots__ = ("index", "args")

    def __init__(self, index: int, args: list[Any]) -> None:
        self.index, self.args = index, args


def _is_tail(code: list[dict], pc: int) -> bool:
    """Whether the call at ``pc`` is in tail position: its result only moves (through gotos)
    to the function's ``ret``."""
    reg = code[pc]["dst"]
    seen: set[int] = set()
    k = pc + 1
    while 0 <= k < len(code) and k not in seen:
        seen.add(k)
        ins = code[k]
        op = ins["op"]
        if op == "move" and list(ins["src"]) == ["reg", reg]:
            reg = ins["dst"]
            k += 1
        elif op == "goto":
            k += ins["offset"]
        elif op == "ret":
            return list(ins["value"]) == ["reg", reg]
        else:
            return False
    return False


# ---------------------------------------------------------------------------- liveness

_READ_FIELDS = ("arg", "src", "storage", "cond", "value")


def _reads(ins: dict) -> list[int]:
    ops = [ins[k] for k in _READ_FIELDS if k in ins] + list(ins.get("args", ()))
    return [o[1] for o in ops if o[0] == "reg"]


def _last_uses(code: list[dict], num_params: int) -> dict[int, list[int]]:
    """``pc -> registers to drop after it`` for straight-line code (none with jumps).

    Dropping a register's reference once nothing reads it any more lets the storage pool
    reuse its memory within the same run (allocations the static plan could not share).
    """
    if any(ins["op"] in ("if", "goto") for ins in code):
        return {}
    last: dict[int, int] = {}
    for pc, ins in enumerate(code):
        if ins.get("dst") is not None:
            last.setdefault(ins["dst"], pc)
        for r in _reads(ins):
            last[r] = pc
    kills: dict[int, list[int]] = {}
    for reg, pc in last.items():
        if reg >= num_params and code[pc]["op"] != "ret":
            kills.setdefault(pc, []).append(reg)
    return kills


def _with_kills(step: Callable, regs: tuple[int, ...]) -> Callable:
    def step_and_drop(regs_: list, heap: list) -> int:
        nxt = step(regs_, heap)
        for r in regs:
            regs_[r] = None
        return nxt

    return step_and_drop


# ---------------------------------------------------------------------------- instructions


def _kernel_caller(kernel: PackedCFunc, getters: list) -> Callable[[list, list], None]:
    """Call a packed C kernel directly: no metadata checks here, the kernel checks."""
    cfunc, n, kname = kernel._func, len(getters), kernel.name
    float_params = {
        i for i, p in enumerate(kernel.params or ())
        if p.kind == "scalar" and p.dtype and parse_dtype(p.dtype)[0] in (2, 4)
    }
    values_t, codes_t = TVMValue * max(n, 1), ctypes.c_int32 * max(n, 1)
    ret, ret_code = TVMValue(), ctypes.c_int32(0)
    ret_ref, ret_code_ref = ctypes.byref(ret), ctypes.byref(ret_code)
    indexed = list(enumerate(getters))

    def call(regs: list, heap: list) -> None:
        values, codes = values_t(), codes_t()
        keep = []
        for i, g in indexed:
            v = g(regs, heap)
            if isinstance(v, Tensor):
                values[i].v_handle = v._dl_address()
                codes[i] = _K_TENSOR
                keep.append(v)
            elif isinstance(v, (bool, int, np.integer)) and i not in float_params:
                values[i].v_int64 = int(v)
                codes[i] = _K_INT
            elif isinstance(v, (int, float, np.integer, np.floating)):
                values[i].v_float64 = float(v)
                codes[i] = _K_FLOAT
            elif v is None:
                codes[i] = _K_NULL
            else:
                raise VMError(f"{kname}: argument {i} is a {type(v).__name__}, which cannot be "
                              "passed to a compiled kernel")
        clear_last_error()
        rc = cfunc(values, codes, n, ret_ref, ret_code_ref, None)
        if rc != 0:
            msg = get_last_error()
            clear_last_error()
            raise KernelError(msg or f"{kname}: the kernel failed (code {rc}) without a message")

    return call


def _truth(value: Any) -> bool:
    if isinstance(value, Tensor):
        flat = value.numpy().reshape(-1)
        if flat.size != 1:
            raise VMError(f"if: the condition must be a scalar, got a tensor of shape {value.shape}")
        return bool(flat[0])
    return bool(value)


def _no_sync() -> None:
    pass


def _describe_value(value: Any) -> tuple[str, str | None]:
    """A call argument as the profiler lists it, and its device (None when not a tensor)."""
    if isinstance(value, Tensor):
        return f"{value.dtype}[{', '.join(map(str, value.shape))}]", str(value.device)
    if isinstance(value, ShapeTuple):
        return f"shape({', '.join(map(str, value))})", None
    if isinstance(value, tuple):
        return f"tuple[{len(value)}]", None
    return ("None" if value is None else type(value).__name__), None


def _type_name(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"a tensor of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, ShapeTuple):
        return f"a shape {tuple(value)}"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if value is None:
        return "None"
    return f"a {type(value).__name__} ({value!r})"


def _check_tensor_info(get: Callable, ins: dict, nxt: int) -> Callable:
    ndim, dtype, ctx = ins["ndim"], ins["dtype"], ins["ctx"]

    def check_tensor_info(regs: list, heap: list) -> int:
        v = get(regs, heap)
        if not isinstance(v, Tensor):
            raise VMError(f"{ctx} must be a tensor, got {_type_name(v)}")
        if ndim >= 0 and v.ndim != ndim:
            raise VMError(f"{ctx} has ndim {v.ndim} (shape {v.shape}), expected ndim {ndim}")
        if dtype and v.dtype != dtype:
            raise VMError(f"{ctx} has dtype {v.dtype}, expected {dtype}")
        return nxt

    return check_tensor_info


def _dim_text(d: list, heap_names: Sequence[str]) -> str:
    if d[0] == "imm":
        return str(d[1])
    if d[0] == "store":
        return format_expr(heap_var(d[1]), heap_names)
    if d[0] == "assert":
        return format_expr(d[1], heap_names)
    return "_"


def _match_shape(get: Callable, ins: dict, nxt: int, heap_names: Sequence[str]) -> Callable:
    dims, ctx = ins["dims"], ins["ctx"]
    ndim = len(dims)
    static = tuple(d[1] for d in dims) if all(d[0] == "imm" for d in dims) else None
    stores = [(i, d[1]) for i, d in enumerate(dims) if d[0] == "store"]
    checks = [(i, compile_expr(d[1] if d[0] == "assert" else d[1]), d[0])
              for i, d in enumerate(dims) if d[0] in ("imm", "assert")]
    expected = "(" + ", ".join(_dim_text(d, heap_names) for d in dims) + ")"

    def fail(shape: tuple, i: int, want: int, heap: list) -> VMError:
        d = dims[i]
        what = str(want) if d[0] == "imm" else f"{_dim_text(d, heap_names)} = {want}"
        return VMError(f"{ctx} has shape[{i}] = {shape[i]}, expected {what} "
                       f"(shape {tuple(shape)} given, {expected} expected)")

    def shape_of(v: Any) -> tuple:
        if isinstance(v, Tensor):
            shape = v.shape
        elif isinstance(v, tuple):
            shape = v
        else:
            raise VMError(f"{ctx} must be a tensor or a shape, got {_type_name(v)}")
        if len(shape) != ndim:
            raise VMError(f"{ctx} has ndim {len(shape)} (shape {tuple(shape)}), expected ndim "
                          f"{ndim} {expected}")
        return shape

    if static is not None:
        def match_static(regs: list, heap: list) -> int:
            shape = shape_of(get(regs, heap))
            if shape != static:
                for i, want in enumerate(static):
                    if shape[i] != want:
                        raise fail(shape, i, want, heap)
            return nxt

        return match_static

    def match_shape(regs: list, heap: list) -> int:
        shape = shape_of(get(regs, heap))
        for i, slot in stores:
            heap[slot] = int(shape[i])
        for i, fe, _ in checks:
            want = fe(heap)
            if shape[i] != want:
                raise fail(shape, i, want, heap)
        return nxt

    return match_shape


def _check_shape_info(get: Callable, ins: dict, nxt: int, names: Sequence[str]) -> Callable:
    ndim, ctx = ins["ndim"], ins["ctx"]

    def check_shape_info(regs: list, heap: list) -> int:
        v = get(regs, heap)
        if not isinstance(v, tuple) or not all(isinstance(d, (int, np.integer)) for d in v):
            raise VMError(f"{ctx} must be a shape (a tuple of ints), got {_type_name(v)}")
        if ndim >= 0 and len(v) != ndim:
            raise VMError(f"{ctx} has {len(v)} dimension(s), expected {ndim}")
        return nxt

    return check_shape_info


def _check_prim_value(get: Callable, ins: dict, nxt: int, names: Sequence[str]) -> Callable:
    dtype, ctx = ins["dtype"], ins["ctx"]
    code = parse_dtype(dtype)[0] if dtype else None

    def check_prim_value(regs: list, heap: list) -> int:
        v = get(regs, heap)
        if not isinstance(v, (bool, int, float, np.generic)):
            raise VMError(f"{ctx} must be a scalar{f' of dtype {dtype}' if dtype else ''}, got "
                          f"{_type_name(v)}")
        if code in (0, 1) and not isinstance(v, (bool, int, np.integer)):
            raise VMError(f"{ctx} must be an integer ({dtype}), got {_type_name(v)}")
        return nxt

    return check_prim_value


def _check_tuple_info(get: Callable, ins: dict, nxt: int, names: Sequence[str]) -> Callable:
    size, ctx = ins["size"], ins["ctx"]

    def check_tuple_info(regs: list, heap: list) -> int:
        v = get(regs, heap)
        if not isinstance(v, tuple) or isinstance(v, ShapeTuple):
            raise VMError(f"{ctx} must be a tuple of {size}, got {_type_name(v)}")
        if len(v) != size:
            raise VMError(f"{ctx} has {len(v)} field(s), expected {size}")
        return nxt

    return check_tuple_info


def _match_prim_value(get: Callable, ins: dict, nxt: int, names: Sequence[str]) -> Callable:
    d, ctx = ins["dim"], ins["ctx"]
    kind = d[0]
    fe = compile_expr(d[1]) if kind in ("imm", "assert") else None

    def match_prim_value(regs: list, heap: list) -> int:
        v = get(regs, heap)
        if kind == "store":
            heap[d[1]] = int(v)
        elif fe is not None and v != fe(heap):
            raise VMError(f"{ctx} is {v}, expected {_dim_text(d, names)} = {fe(heap)}")
        return nxt

    return match_prim_value


_CHECKS = {
    "check_shape_info": _check_shape_info,
    "check_prim_value": _check_prim_value,
    "check_tuple_info": _check_tuple_info,
    "match_prim_value": _match_prim_value,
}
