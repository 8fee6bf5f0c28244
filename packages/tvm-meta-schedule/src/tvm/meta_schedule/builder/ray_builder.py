"""RayBuilder: spread builds over the CPUs of a Ray cluster.

Each input is a Ray task (``num_cpus=1`` by default) that receives the IRModule and Target
as tvm.ffi JSON and builds with :class:`~.local_builder.LocalBuilder` logic on its node: in
a worker process of its own, so that a crash or a timeout there fails that input only,
with the same messages as on one machine.  The task returns the library's bytes; the
driver writes them under this builder's ``work_dir``, which :class:`~tvm.meta_schedule.
runner.RayRunner` reads to ship them to the measuring node.

``ray`` is imported only when a RayBuilder is made (the ``tvm-meta-schedule[ray]`` extra).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import weakref
from typing import Any, Callable, Optional

from ..runner.ray_runner import connect_ray, ray_error, remote_task
from .builder import Builder, BuilderInput, BuilderResult
from .local_builder import default_build, default_export, serialize_input

__all__ = ["RayBuilder"]

_NODE_BUILDERS: dict[tuple, Any] = {}


def build_to_bytes(mod_json: str, target_json: str, f_build: Callable, f_export: Callable,
                   timeout_sec: float) -> tuple[Optional[bytes], Optional[str]]:
    """On a node: build one input in a LocalBuilder worker there; ``(library bytes, None)``
    or ``(None, error message)``."""
    from .local_builder import LocalBuilder

    key = (f_build, f_export, timeout_sec)
    builder = _NODE_BUILDERS.get(key)
    if builder is None:
        # not pinned: Ray shares this node's CPUs among the build tasks, and a node that
        # also measures alternates builds with measurements (see runner/utils.py)
        builder = _NODE_BUILDERS[key] = LocalBuilder(
            max_workers=1, timeout_sec=timeout_sec, f_build=f_build, f_export=f_export,
            avoid_cores=(), work_dir=os.path.join(tempfile.gettempdir(), "tvm-ms-ray-builds"))
        # (a shared folder: Ray kills its workers without running their cleanup)
    (res,) = builder.build_serialized([(mod_json, target_json)])
    if res.error_msg is not None:
        return None, res.error_msg
    try:
        with open(res.artifact_path, "rb") as f:
            return f.read(), None
    finally:
        shutil.rmtree(os.path.dirname(res.artifact_path), ignore_errors=True)


class RayBuilder(Builder):
    """Builds inputs as Ray tasks; every failure is a result.

    ``address`` / ``init_kwargs``: for ``ray.init`` when this process is not connected
    yet.  ``timeout_sec``: seconds one build may take once it runs.  ``f_build`` /
    ``f_export``: as for :class:`~.local_builder.LocalBuilder` (they must be importable on
    the nodes).  ``num_cpus``: CPUs each build task asks Ray for; ``resources``: more
    resources it asks for (e.g. to keep builds on build nodes).
    """

    def __init__(self, *, address: Optional[str] = None,
                 init_kwargs: Optional[dict[str, Any]] = None, timeout_sec: float = 30.0,
                 f_build: Callable[[Any, Any], Any] = default_build,
                 f_export: Callable[[Any], str] = default_export, num_cpus: float = 1,
                 resources: Optional[dict[str, float]] = None) -> None:
        if isinstance(timeout_sec, bool) or not isinstance(timeout_sec, (int, float)) \
                or timeout_sec <= 0:
            raise ValueError(f"RayBuilder: timeout_sec must be a number > 0, got "
                             f"{timeout_sec!r}")
        if not callable(f_build) or not callable(f_export):
            raise TypeError("RayBuilder: f_build and f_export must be callables")
        self.timeout_sec = float(timeout_sec)
        self.f_build, self.f_export = f_build, f_export
        self.num_cpus = num_cpus
        self.resources = dict(resources or {})
        self._ray = connect_ray(address, init_kwargs)
        self.work_dir = tempfile.mkdtemp(prefix="tvm-ms-ray-build-")
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.work_dir, True)

    def close(self) -> None:
        """Remove the artifacts (the Ray connection stays)."""
        self._finalizer()

    def __enter__(self) -> RayBuilder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RayBuilder(timeout_sec={self.timeout_sec:g}, num_cpus={self.num_cpus})"

    def build(self, inputs: list[BuilderInput]) -> list[BuilderResult]:
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"RayBuilder.build takes a list of BuilderInput, got "
                            f"{type(inputs).__name__}")
        if not self._finalizer.alive:
            raise RuntimeError("RayBuilder: build() after close()")
        ray = self._ray
        task = remote_task(ray, build_to_bytes).options(num_cpus=self.num_cpus, resources=self.resources)
        results: list[Optional[BuilderResult]] = [None] * len(inputs)
        refs: dict[Any, int] = {}
        try:
            for i, inp in enumerate(inputs):
                try:
                    mod_json, target_json = serialize_input(inp)
                except Exception as err:  # noqa: BLE001
                    results[i] = BuilderResult(error_msg=f"invalid input: {err}")
                    continue
                ref = task.remote(mod_json, target_json, self.f_build, self.f_export,
                                  self.timeout_sec)
                refs[ref] = i
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    results[refs[ref]] = self._collect(ref, refs[ref])
        except BaseException:  # KeyboardInterrupt: stop what still runs on the cluster
            for ref in refs:
                ray.cancel(ref)
            raise
        return [r if r is not None else BuilderResult(error_msg="build not run")
                for r in results]

    def _collect(self, ref: Any, index: int) -> BuilderResult:
        ray = self._ray
        try:
            data, error = ray.get(ref)
        except ray.exceptions.RayError as err:
            return BuilderResult(error_msg=ray_error(ray, "building", err))
        if error is not None:
            return BuilderResult(error_msg=error)
        folder = os.path.join(self.work_dir, f"{index}-{uuid.uuid4().hex[:12]}")
        os.makedirs(folder)
        path = os.path.join(folder, "kernel.so")
        with open(path, "wb") as f:
            f.write(data)
        return BuilderResult(artifact_path=path)
