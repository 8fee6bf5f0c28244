"""The ``qemu`` runner: cross-compiled kernels executed under qemu-user.

A :class:`QemuRunner` is a :class:`tvm.runtime.runner.ProcessRunner` whose launcher is
``qemu-<arch> -L <sysroot> -cpu <cpu>`` and whose runner server is built by the triple's
cross compiler (:func:`.module.find_c_compiler`, the one ``export_library`` links with).
The qemu CPU follows the target: riscv64 with ``+v`` gets ``rv64,v=true,vlen=<vlen>``
(``vlen=``, else the ``+zvlNb`` the target promises, else 128), aarch64 ``max`` (every extension qemu knows);
``cpu=`` overrides it.  Registered by the llvm plugin as the runner ``qemu``::

    runner = tvm.runtime.runner.create_runner("qemu", target="llvm -mtriple=aarch64-linux-gnu")
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from tvm.ir.target import Target
from tvm.runtime.runner import ProcessRunner, RunnerUnavailableError

from .llvm_target import LLVMTargetOptions

__all__ = ["QemuRunner", "qemu_arch"]

#: LLVM triple architecture -> qemu-user binary suffix
_QEMU_ARCH = {"aarch64": "aarch64", "arm64": "aarch64", "riscv64": "riscv64",
              "x86_64": "x86_64", "i386": "i386", "i686": "i386", "ppc64le": "ppc64le",
              "s390x": "s390x", "arm": "arm", "armv7": "arm", "thumbv7": "arm"}


def qemu_arch(triple: str) -> str:
    """The qemu-user name of ``triple``'s architecture (``aarch64``, ``riscv64``, ...)."""
    arch = triple.split("-")[0]
    if arch in _QEMU_ARCH:
        return _QEMU_ARCH[arch]
    if arch.startswith(("armv", "thumbv")):
        return "arm"
    raise ValueError(f"qemu runner: no qemu-user emulator known for triple {triple!r}")


def _features(opts: LLVMTargetOptions) -> set[str]:
    return {f.strip() for f in opts.features.split(",") if f.strip()}


def _default_cpu(arch: str, opts: LLVMTargetOptions, vlen: int | None) -> str | None:
    if arch == "riscv64":
        feats = _features(opts)
        if "+v" in feats and "-v" not in feats:
            # +zvlNb promises VLEN >= N (code may rely on it); V alone promises 128
            zvl = max([128, *(int(f[4:-1]) for f in feats
                              if f.startswith("+zvl") and f.endswith("b") and f[4:-1].isdigit())])
            if vlen is not None and vlen < zvl:
                raise ValueError(f"qemu runner: the target needs VLEN >= {zvl} (+zvl{zvl}b), "
                                 f"vlen={vlen} is shorter")
            return f"rv64,v=true,vlen={vlen or zvl}"
        if vlen is not None:
            raise ValueError("qemu runner: vlen= needs a riscv64 target with +v")
        return "rv64"
    if vlen is not None:
        raise ValueError(f"qemu runner: vlen= applies to riscv64 targets, not {opts.triple}")
    if arch == "aarch64":
        return "max"
    return None


def _sysroot(triple: str, arch: str) -> str | None:
    """The target's libraries for qemu's ``-L``: ``/usr/<triple>`` or
    ``/usr/<arch>-linux-gnu`` (Debian's cross libc); None leaves it to qemu
    (``QEMU_LD_PREFIX``)."""
    for cand in (f"/usr/{triple}", f"/usr/{triple.split('-')[0]}-linux-gnu",
                 f"/usr/{arch}-linux-gnu"):
        if os.path.isdir(cand):
            return cand
    return None


class QemuRunner(ProcessRunner):
    """Runs kernels built for ``target`` (an llvm Target or its string) under qemu-user.

    ``vlen``: the RISC-V vector length in bits (with ``+v``); ``cpu``: the qemu ``-cpu``
    value (overrides the one derived from the target); ``sysroot``: qemu's ``-L`` (default
    ``/usr/<triple>``, where Debian's ``libc6-dev-<arch>-cross`` puts the target's libc);
    ``qemu``: the emulator binary; ``cc``: the cross compiler of the runner server;
    ``num_threads`` and ``timeout`` as for :class:`ProcessRunner`.
    """

    name = "qemu"

    def __init__(self, target: Target | str | None = None, *, triple: str | None = None,
                 vlen: int | None = None, cpu: str | None = None, sysroot: str | None = None,
                 qemu: str | None = None, cc: str | None = None, num_threads: int = 1,
                 timeout: float = 600.0, extra_args: tuple[str, ...] = ()) -> None:
        if target is None and triple is None:
            raise TypeError("QemuRunner needs target= (an llvm Target) or triple=")
        if target is None:
            target = f"llvm -mtriple={triple}"
        opts = LLVMTargetOptions.from_target(target)
        arch = qemu_arch(opts.triple)
        self.options = opts
        self.arch = arch
        self.qemu = qemu or f"qemu-{arch}"
        self.cpu = cpu or _default_cpu(arch, opts, vlen)
        self.sysroot = sysroot or _sysroot(opts.triple, arch)
        launcher = [self.qemu]
        if self.sysroot:
            launcher += ["-L", self.sysroot]
        if self.cpu:
            launcher += ["-cpu", self.cpu]
        launcher += list(extra_args)
        super().__init__(launcher=launcher, cc=cc, triple=opts.triple,
                         num_threads=num_threads, timeout=timeout)

    def describe(self) -> str:
        cpu = f", -cpu {self.cpu}" if self.cpu else ""
        return f"qemu runner ({self.triple}{cpu})"

    def install_hint(self) -> str:
        return (f"install qemu-user (Debian/Ubuntu: apt-get install qemu-user) or pass "
                f"qemu='/path/to/qemu-{self.arch}'")

    def server_path(self) -> Any:
        from .module import find_c_compiler

        try:
            cc = find_c_compiler(self.cc, self.triple)
        except RuntimeError as err:
            raise RunnerUnavailableError(f"{self.describe()}: {err}") from None
        self.cc = cc
        return super().server_path()

    def check_available(self) -> None:
        if shutil.which(self.qemu) is None:
            raise RunnerUnavailableError(
                f"{self.describe()}: the emulator {self.qemu!r} is not on PATH; "
                f"{self.install_hint()}")
