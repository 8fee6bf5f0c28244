"""What the llvm Target asks for: triple, CPU, features, optimisation level, cores.

Target attributes (``llvm -mtriple=... -mcpu=... -mattr=+avx2,-fma -num-cores=4
-opt-level=3``):

``mtriple``   the LLVM target triple (default: the running process's).
``mcpu``      the CPU to tune and select instructions for; ``native`` or unset on the host
              means the host CPU *with its detected features*; unset for another triple means
              ``generic``.
``mattr``     feature overrides appended after the CPU's (``+avx512f``, ``-fma``).  A
              ``riscv64`` triple starts from the RV64GC base (``+m,+a,+f,+d,+c``, what
              Linux distributions build for), so ``-mattr=+v`` means rv64gcv.
``mabi``      the calling-convention ABI (default for riscv64: ``lp64d``, the Linux one;
              ``lp64f``/``lp64`` when ``-d``/``-f`` remove the float registers).
``mattr``     feature overrides appended after the CPU's (``+avx512f``, ``-fma``).

Unknown triples, CPUs and features are refused when the Target is made, with close matches,
and a CPU or feature set LLVM cannot make code for when the options are resolved (both
through :mod:`.target_info`, which asks LLVM in a child process, so LLVM's fatal errors
never end this one).  :attr:`LLVMTargetOptions.cpu_features` are the features the code may
use; modules record them with the triple and CPU, and the runtime refuses to run them on a
machine that lacks any (``tvm.runtime.host``).
``num-cores`` the number of tasks parallel loops are split into (unset: the runtime's
              thread count at run time).
``opt-level`` 0-3, the LLVM pipeline level (default 3).
``threading`` how parallel loops are launched: ``omp`` (through libgomp's ``GOMP_parallel``,
              native threads; the default when libgomp can be loaded on this machine) or
              ``pool`` (the runtime's ``__TVMBackendParallelLaunch`` thread pool, the fallback
              when libgomp cannot be loaded).  See :mod:`.outline`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import warnings
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
from tvm.ffi.knobs import LLVM_JOBS, OMP_WAIT_POLICY
from tvm.ir.target import Target

from .host_cpu import host_cpu_features, host_cpu_name, host_triple, init_llvm
from .object_code import MachineSpec, default_jobs, optimize_module
from .target_info import subtarget_features

__all__ = ["LLVMTargetOptions", "create_target_machine", "optimize_module", "machine_spec",
           "compile_jobs", "load_libgomp",
           "THREADING_MODES"]

THREADING_MODES = ("omp", "pool")


@functools.lru_cache(maxsize=None)
def load_libgomp() -> str | None:
    """Load GNU libgomp into the process (so MCJIT resolves ``GOMP_parallel``); its name,
    or ``None`` when it cannot be found or loaded.

    When this call is what loads it and ``OMP_WAIT_POLICY`` is unset, libgomp initialises
    with the ``passive`` wait policy: idle team threads sleep instead of spinning, which
    keeps a launch cheap when the cores are shared with other work (measured: 15 us per
    2-thread launch instead of 60-100 us on a loaded 2-core machine).  Set
    ``OMP_WAIT_POLICY=active`` before the first build to let them spin.
    """
    name = ctypes.util.find_library("gomp")
    if not name:
        return None
    try:
        ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
        already = True
    except OSError:
        already = False
    set_policy = not already and not OMP_WAIT_POLICY.is_set()
    if set_policy:
        os.environ[OMP_WAIT_POLICY.name] = "passive"  # read once, when libgomp initialises
    try:
        llvm.load_library_permanently(name)
    except RuntimeError:
        return None
    finally:
        if set_policy:
            os.environ.pop(OMP_WAIT_POLICY.name, None)
    return name


def _threading_mode(value: Any, is_host: bool, is_elf: bool) -> str:
    if value in (None, ""):
        return "omp" if is_host and is_elf and load_libgomp() else "pool"
    value = str(value)
    if value not in THREADING_MODES:
        raise ValueError(
            f"llvm target: -threading must be one of {', '.join(THREADING_MODES)}, got {value!r}"
        )
    if value == "omp" and is_host and not load_libgomp():
        warnings.warn("llvm target: -threading=omp but libgomp cannot be loaded; parallel "
                      "loops use the runtime thread pool (-threading=pool)", RuntimeWarning,
                      stacklevel=3)
        return "pool"
    return value


@dataclass(frozen=True)
class LLVMTargetOptions:
    """Resolved code generation options for one llvm target."""

    triple: str
    cpu: str
    features: str
    opt_level: int = 3
    num_cores: int = 0
    target_str: str = "llvm"
    threading: str = "pool"
    abi: str = ""
    #: the CPU features the generated code may use (implied by ``cpu`` and ``features``)
    cpu_features: tuple[str, ...] = ()

    @property
    def is_host(self) -> bool:
        """Whether code for this target runs on this machine (same architecture)."""
        return self.triple.split("-")[0] == host_triple().split("-")[0]

    @property
    def is_elf(self) -> bool:
        return not any(os in self.triple for os in ("darwin", "macos", "ios", "windows", "wasm"))

    @classmethod
    def from_target(cls, target: Target | str | dict | None = None) -> LLVMTargetOptions:
        """Options of an llvm :class:`tvm.ir.target.Target` (a string or dict is parsed by
        ``Target``; None is plain ``llvm``: the host CPU)."""
        init_llvm()
        if not isinstance(target, Target):
            target = Target(target if target is not None else "llvm")
        if target.kind_name != "llvm":
            raise ValueError(f"llvm target options of a {target.kind_name!r} target: {target}")
        get = target.attrs.get
        triple = get("mtriple") or host_triple()
        mcpu = get("mcpu")
        mattr = list(get("mattr") or ())
        same_arch = triple.split("-")[0] == host_triple().split("-")[0]
        features: list[str] = []
        if mcpu in (None, "", "native") and same_arch:
            cpu = host_cpu_name()
            features = list(host_cpu_features())
        else:
            cpu = mcpu or "generic"
        if triple.startswith("riscv64"):
            features[:0] = [f for f in RISCV64_BASE_FEATURES if f not in mattr]
        features += [a.strip() for a in mattr if a.strip()]  # names checked by the Target
        if mcpu in (None, "", "native") and same_arch and not mattr:
            enabled = sorted(f[1:] for f in features if f.startswith("+"))
        else:  # a ValueError for a subtarget LLVM cannot make code for
            enabled = sorted(subtarget_features(triple, cpu, ",".join(features)))
        opt = get("opt-level")
        opt_level = 3 if opt in (None, "") else int(opt)
        if not 0 <= opt_level <= 3:
            raise ValueError(f"llvm target: -opt-level must be 0..3, got {opt_level}")
        cores = get("num-cores")
        num_cores = 0 if cores in (None, "") else int(cores)
        if num_cores < 0:
            raise ValueError(f"llvm target: -num-cores must be >= 0, got {num_cores}")
        text = str(target)
        same_os = same_arch and _os_name(triple) == _os_name(host_triple())
        is_elf = not any(k in triple for k in ("darwin", "macos", "ios", "windows", "wasm"))
        threading = _threading_mode(get("threading"), same_os, is_elf)
        abi = get("mabi") or _default_abi(triple, features)
        return cls(triple, cpu, ",".join(features), opt_level, num_cores, text, threading, abi,
                   tuple(enabled))

    @property
    def requirements(self) -> dict[str, Any]:
        """What code for these options needs of a machine: the ``triple``, ``cpu`` and
        ``features`` entries of a module's metadata (``docs/abi.md``)."""
        return {"triple": self.triple, "cpu": self.cpu, "features": list(self.cpu_features)}


def _os_name(triple: str) -> str:
    """The OS part of a triple, with or without a vendor (``x86_64-linux-gnu`` and
    ``x86_64-unknown-linux-gnu`` are both ``linux``)."""
    for part in triple.split("-")[1:]:
        if part.startswith(("linux", "darwin", "macos", "ios", "windows", "freebsd", "wasi")):
            return "macos" if part.startswith(("darwin", "macos")) else part.rstrip("0123456789.")
    return ""


#: the RV64GC base every riscv64 Linux target has (integer multiply, atomics, single and
#: double float, compressed instructions)
RISCV64_BASE_FEATURES = ("+m", "+a", "+f", "+d", "+c")


def _default_abi(triple: str, features: list[str]) -> str:
    """The ABI LLVM must use for ``triple`` when ``-mabi`` is unset ("" = LLVM's default).

    riscv64 Linux passes floats in FP registers (``lp64d``); LLVM's own default (``lp64``,
    soft-float) produces objects the distribution's linker refuses to mix with its libc.
    """
    if not triple.startswith("riscv64"):
        return ""
    last = {f[1:]: f[0] for f in features}  # the last +x/-x of each feature wins
    if last.get("d") == "+":
        return "lp64d"
    return "lp64f" if last.get("f") == "+" else "lp64"


def create_target_machine(opts: LLVMTargetOptions, *, pic: bool = False,
                          jit: bool = False) -> llvm.TargetMachine:
    """An LLVM target machine for ``opts`` (position-independent for shared objects)."""
    return machine_spec(opts).target_machine(pic=pic, jit=jit)


def machine_spec(opts: LLVMTargetOptions) -> MachineSpec:
    """The target-machine description of ``opts`` (what a compile worker needs)."""
    return MachineSpec(opts.triple, opts.cpu, opts.features, opts.opt_level, opts.abi,
                       cross=not opts.is_host)


def compile_jobs() -> int:
    """How many processes compile the parts of a big module: ``TVM_LLVM_JOBS``, or the
    CPUs this process may use (at most 8)."""
    return LLVM_JOBS.get() or default_jobs()
