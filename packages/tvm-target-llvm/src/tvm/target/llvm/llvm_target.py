"""What the llvm Target asks for: triple, CPU, features, optimisation level, cores.

Target attributes (``llvm -mtriple=... -mcpu=... -mattr=+avx2,-fma -num-cores=4
-opt-level=3``):

``mtriple``   the LLVM target triple (default: the running process's).
``mcpu``      the CPU to tune and select instructions for; ``native`` or unset on the host
              means the host CPU *with its detected features*; unset for another triple means
              ``generic``.
``mattr``     feature overrides appended after the CPU's (``+avx512f``, ``-fma``).
``num-cores`` the number of tasks parallel loops are split into (unset: the runtime's
              thread count at run time).
``opt-level`` 0-3, the LLVM pipeline level (default 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm

from .host_cpu import host_cpu_features, host_cpu_name, host_triple, init_llvm

__all__ = ["LLVMTargetOptions", "create_target_machine", "optimize_module"]


def _attr(target: Any, name: str) -> Any:
    if target is None or isinstance(target, str):
        return None
    attrs = getattr(target, "attrs", None) or {}
    return attrs.get(name)


def _parse_string(text: str) -> dict[str, Any]:
    parts = text.split()
    if not parts or parts[0] != "llvm":
        raise ValueError(f"not an llvm target string: {text!r}")
    out: dict[str, Any] = {}
    for tok in parts[1:]:
        key, _, value = tok.lstrip("-").partition("=")
        out[key] = value.split(",") if key == "mattr" else value
    return out


@dataclass(frozen=True)
class LLVMTargetOptions:
    """Resolved code generation options for one llvm target."""

    triple: str
    cpu: str
    features: str
    opt_level: int = 3
    num_cores: int = 0
    target_str: str = "llvm"

    @property
    def is_host(self) -> bool:
        """Whether code for this target runs on this machine (same architecture)."""
        return self.triple.split("-")[0] == host_triple().split("-")[0]

    @property
    def is_elf(self) -> bool:
        return not any(os in self.triple for os in ("darwin", "macos", "ios", "windows", "wasm"))

    @classmethod
    def from_target(cls, target: Any = None) -> LLVMTargetOptions:
        """Options of a :class:`tvm.ir.target.Target` (or an ``"llvm ..."`` string, or None)."""
        init_llvm()
        if isinstance(target, str):
            attrs = _parse_string(target)
            get = attrs.get
        else:
            def get(name: str) -> Any:
                return _attr(target, name)
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
        for attr in mattr:
            attr = attr.strip()
            if not attr:
                continue
            if attr[0] not in "+-":
                raise ValueError(f"llvm target: -mattr entries look like +avx2 or -fma, got {attr!r}")
            features.append(attr)
        opt = get("opt-level")
        opt_level = 3 if opt in (None, "") else int(opt)
        if not 0 <= opt_level <= 3:
            raise ValueError(f"llvm target: -opt-level must be 0..3, got {opt_level}")
        cores = get("num-cores")
        num_cores = 0 if cores in (None, "") else int(cores)
        if num_cores < 0:
            raise ValueError(f"llvm target: -num-cores must be >= 0, got {num_cores}")
        text = target if isinstance(target, str) else (str(target) if target is not None else "llvm")
        return cls(triple, cpu, ",".join(features), opt_level, num_cores, text)


def create_target_machine(opts: LLVMTargetOptions, *, pic: bool = False,
                          jit: bool = False) -> llvm.TargetMachine:
    """An LLVM target machine for ``opts`` (position-independent for shared objects)."""
    init_llvm()
    if not opts.is_host:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
    try:
        target = llvm.Target.from_triple(opts.triple)
    except RuntimeError as err:
        raise ValueError(f"llvm target: LLVM does not support triple {opts.triple!r}: {err}") \
            from None
    return target.create_target_machine(
        cpu=opts.cpu, features=opts.features, opt=opts.opt_level,
        reloc="pic" if pic else "default",
        codemodel="jitdefault" if jit else "default", jit=jit,
    )


def optimize_module(module: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int) -> None:
    """Run LLVM's standard pipeline at ``opt_level`` (vectorisers on from level 2)."""
    if opt_level <= 0:
        return
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = opt_level >= 2
    pto.slp_vectorization = opt_level >= 2
    pto.loop_unrolling = opt_level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)
