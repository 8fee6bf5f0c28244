"""LLVM IR -> optimised IR and object code, in this process or in worker processes.

A kernel module is generated as one LLVM module or, when it is big, as several parts
(:func:`tvm.target.llvm.build.codegen_parts`).  :func:`compile_parts` verifies,
optimises and compiles each part to object code; the JIT loads the objects, export links
them.  With several parts and several CPUs the parts go to worker processes — this file
run as a script, which imports nothing but llvmlite — because llvmlite serialises every
LLVM call of one process under one lock, so threads would compile one part at a time.
Each worker compiles a part in its own LLVM context and answers with the optimised text
and the object code; the leak of each run of LLVM's pass pipeline through llvmlite (see
:data:`_COMPILED`) stays in the worker, which is replaced after :data:`_WORKER_JOBS` jobs.

The messages between the two are a JSON header and binary blobs, each length-prefixed;
no pickle, so nothing a worker answers can run code here.  A worker that dies (an LLVM
fatal error) is reported as a RuntimeError naming the module and part, and replaced.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import hashlib
import json
import os
import struct
import subprocess
import sys
import threading
from typing import Any, BinaryIO

import llvmlite.binding as llvm

__all__ = ["MachineSpec", "CompiledPart", "init_llvm", "optimize_module", "compile_ir",
           "compile_parts", "default_jobs"]


def init_llvm(all_targets: bool = False) -> None:
    """Initialise LLVM's native target, assembly printer and parser (and every other
    target's when code is for another architecture)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    if all_targets:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()


@dataclasses.dataclass(frozen=True)
class MachineSpec:
    """What an LLVM target machine is made of (the part of the llvm target's options that
    code generation needs; plain data, so it crosses to a worker as JSON)."""

    triple: str
    cpu: str
    features: str
    opt_level: int = 3
    abi: str = ""
    #: code for another architecture than this machine's (all LLVM targets are needed)
    cross: bool = False

    def target_machine(self, *, pic: bool = False, jit: bool = False) -> llvm.TargetMachine:
        """The target machine (position-independent for shared objects; the JIT's code
        model for code MCJIT loads)."""
        init_llvm(self.cross)
        try:
            target = llvm.Target.from_triple(self.triple)
        except RuntimeError as err:
            raise ValueError(f"llvm target: LLVM does not support triple {self.triple!r}: "
                             f"{err}") from None
        return target.create_target_machine(
            cpu=self.cpu, features=self.features, opt=self.opt_level,
            reloc="pic" if pic else "default",
            codemodel="jitdefault" if jit else "default", jit=jit, abiname=self.abi,
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


@dataclasses.dataclass(frozen=True)
class CompiledPart:
    """One module part: its optimised LLVM IR and its object code."""

    ir: str
    obj: bytes


def compile_ir(text: str, spec: MachineSpec, name: str, *, pic: bool = False,
               optimize: bool = True) -> CompiledPart:
    """``text`` verified, optimised (unless ``optimize`` is false: it already is) and
    compiled to object code: for the JIT, or position-independent (``pic``) to link into a
    shared library.  Invalid IR raises RuntimeError naming ``name``."""
    init_llvm(spec.cross)
    context = llvm.create_context()
    try:
        mod = llvm.parse_assembly(text, context=context)
    except RuntimeError as err:
        raise RuntimeError(f"llvm codegen produced IR that does not parse for {name}: "
                           f"{err}") from None
    mod.name = name
    try:
        mod.verify()
    except RuntimeError as err:
        raise RuntimeError(f"llvm codegen produced invalid IR for {name}: {err}") from None
    if optimize:
        optimize_module(mod, spec.target_machine(jit=True), spec.opt_level)
        text = str(mod)
    obj = spec.target_machine(pic=pic, jit=not pic).emit_object(mod)
    del mod
    return CompiledPart(text, obj)


# -- messages ------------------------------------------------------------------------------

def _write(stream: BinaryIO, header: dict[str, Any], blobs: list[bytes]) -> None:
    head = json.dumps(header).encode("utf-8")
    stream.write(struct.pack("<II", len(head), len(blobs)) + head)
    for blob in blobs:
        stream.write(struct.pack("<Q", len(blob)))
        stream.write(blob)
    stream.flush()


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise EOFError
    return data


def _read(stream: BinaryIO) -> tuple[dict[str, Any], list[bytes]]:
    """A message; EOFError at the end of the stream (or a message cut short)."""
    n_head, n_blobs = struct.unpack("<II", _read_exact(stream, 8))
    header = json.loads(_read_exact(stream, n_head).decode("utf-8"))
    blobs = [_read_exact(stream, struct.unpack("<Q", _read_exact(stream, 8))[0])
             for _ in range(n_blobs)]
    return header, blobs


def _worker_main() -> int:
    """Compile the parts asked for on stdin until it closes."""
    inp = sys.stdin.buffer
    # the messages go to a copy of stdout; anything else written to stdout, from Python or
    # from LLVM's C++, goes to stderr
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while True:
        try:
            header, blobs = _read(inp)
        except EOFError:
            return 0
        try:
            part = compile_ir(blobs[0].decode("utf-8"), MachineSpec(**header["spec"]),
                              header["name"], pic=header["pic"], optimize=header["optimize"])
        except (RuntimeError, ValueError) as err:
            _write(out, {"error": str(err)}, [])
        else:
            _write(out, {}, [part.ir.encode("utf-8"), part.obj])


# -- workers -------------------------------------------------------------------------------

#: jobs a worker runs before it is replaced (each pipeline run leaks a little native memory)
_WORKER_JOBS = 64
_MAX_DEFAULT_JOBS = 8


def default_jobs() -> int:
    """The CPUs this process may run on, at most 8."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    return max(1, min(count, _MAX_DEFAULT_JOBS))


class _Worker:
    """One worker process and its message pipes."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # the worker imports the llvmlite this process imported
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.jobs = 0

    def compile(self, text: str, spec: MachineSpec, name: str, pic: bool,
                optimize: bool) -> CompiledPart:
        header = {"spec": dataclasses.asdict(spec), "name": name, "pic": pic,
                  "optimize": optimize}
        self.jobs += 1
        try:
            _write(self.proc.stdin, header, [text.encode("utf-8")])
            answer, blobs = _read(self.proc.stdout)
        except (EOFError, OSError, ValueError):
            self.close()
            code = self.proc.returncode
            how = f"was killed by signal {-code}" if code and code < 0 else f"exited ({code})"
            raise RuntimeError(
                f"the LLVM worker process compiling {name} {how}: LLVM failed on it (set "
                "TVM_LLVM_JOBS=1 to compile in this process and see LLVM's message)"
            ) from None
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return CompiledPart(blobs[0].decode("utf-8"), blobs[1])

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and self.jobs < _WORKER_JOBS

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _NoWorkers(RuntimeError):
    """No worker process could be started (the parts are then compiled here)."""


class _Slot:
    """A place for one worker: started when first used, replaced when it died or ran its
    share of jobs; one thread at a time uses it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.worker: _Worker | None = None

    def compile(self, text: str, spec: MachineSpec, name: str, pic: bool,
                optimize: bool) -> CompiledPart:
        with self.lock:
            if self.worker is not None and not self.worker.alive:
                self.worker.close()
                self.worker = None
            if self.worker is None:
                try:
                    self.worker = _Worker()
                except (OSError, ValueError) as err:  # no interpreter to start, no processes
                    raise _NoWorkers(str(err)) from err
            return self.worker.compile(text, spec, name, pic, optimize)

    def close(self) -> None:
        with self.lock:
            if self.worker is not None:
                self.worker.close()
                self.worker = None


class _Pool:
    """``size`` worker slots, kept for later builds."""

    def __init__(self, size: int) -> None:
        self.pid = os.getpid()
        self.slots = [_Slot() for _ in range(size)]

    def close(self) -> None:
        for slot in self.slots:
            slot.close()


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _get_pool(size: int) -> _Pool:
    """The process's pool of ``size`` workers (a new one after a fork: the workers and pipes
    of the parent are not this process's to use)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid() or len(_pool.slots) < size:
            if _pool is not None and _pool.pid == os.getpid():
                _pool.close()
            _pool = _Pool(size)
        return _pool


@atexit.register
def _close_pool() -> None:
    if _pool is not None and _pool.pid == os.getpid():
        _pool.close()


# -- parts -----------------------------------------------------------------------------------

#: compiled parts by (spec, module name, pic, digest of the input IR), most recent last
_COMPILED: collections.OrderedDict[tuple[Any, ...], CompiledPart] = collections.OrderedDict()
_COMPILED_MAX = 256
_COMPILED_MAX_BYTES = 256 << 20  # a big model's IR is tens of MB
_compiled_lock = threading.Lock()


def _cache_key(text: str, spec: MachineSpec, name: str, pic: bool) -> tuple[Any, ...]:
    return (spec, name, pic, hashlib.sha256(text.encode("utf-8")).digest())


def _remember(key: tuple[Any, ...], part: CompiledPart) -> CompiledPart:
    with _compiled_lock:
        _COMPILED[key] = part
        total = sum(len(p.ir) + len(p.obj) for p in _COMPILED.values())
        while len(_COMPILED) > 1 and (len(_COMPILED) > _COMPILED_MAX
                                      or total > _COMPILED_MAX_BYTES):
            old = _COMPILED.popitem(last=False)[1]
            total -= len(old.ir) + len(old.obj)
    return part


def compile_parts(parts: list[str], spec: MachineSpec, name: str, *, pic: bool = False,
                  optimize: bool = True, jobs: int = 1) -> list[CompiledPart]:
    """Each of ``parts`` (LLVM IR texts of module ``name``) compiled by :func:`compile_ir`,
    in up to ``jobs`` worker processes when there are several parts (in this process
    otherwise).

    The same input gives the part it gave before (the last 256 are kept, 256 MiB at most):
    rebuilding a model — a test suite, a tuning loop, a service — costs neither the
    pipeline's time again nor, in this process, its native memory leak (every run of the
    LLVM pipeline through llvmlite 0.50 leaks: ``LLVMPY_CreatePassBuilder`` allocates
    instrumentation callbacks no one deletes, ~170 KiB per small module at -O3).
    """
    keys = [_cache_key(text, spec, name, pic) for text in parts]
    out: list[CompiledPart | None] = []
    with _compiled_lock:
        for key in keys:
            found = _COMPILED.get(key)
            if found is not None:
                _COMPILED.move_to_end(key)
            out.append(found)
    todo = [i for i, part in enumerate(out) if part is None]
    jobs = min(jobs, len(todo))
    if jobs <= 1:
        for i in todo:
            out[i] = _remember(keys[i], compile_ir(parts[i], spec, _part_name(name, i, parts),
                                                   pic=pic, optimize=optimize))
        return out  # type: ignore[return-value]
    pool = _get_pool(jobs)
    pending = iter(todo)
    take = threading.Lock()
    errors: list[BaseException] = []

    def run(slot: _Slot) -> None:
        while not errors:
            with take:
                i = next(pending, None)
            if i is None:
                return
            try:
                out[i] = _remember(keys[i], slot.compile(
                    parts[i], spec, _part_name(name, i, parts), pic, optimize))
            except BaseException as err:  # reported below, in the calling thread
                errors.append(err)

    threads = [threading.Thread(target=run, args=(slot,), name=f"llvm-part-{k}", daemon=True)
               for k, slot in enumerate(pool.slots[:jobs])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if any(isinstance(err, _NoWorkers) for err in errors):
        return compile_parts(parts, spec, name, pic=pic, optimize=optimize, jobs=1)
    if errors:
        raise errors[0]
    return out  # type: ignore[return-value]


def _part_name(name: str, index: int, parts: list[str]) -> str:
    return name if len(parts) == 1 else f"{name} (part {index} of {len(parts)})"


if __name__ == "__main__":
    sys.exit(_worker_main())
