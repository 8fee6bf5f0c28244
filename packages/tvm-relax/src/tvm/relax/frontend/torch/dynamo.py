"""``torch.compile(model, backend="tvm")``: a TorchDynamo backend built on this frontend.

Dynamo hands the backend one FX graph per captured region (a graph break, such as a
``print`` or a data-dependent Python branch, splits a function into several, each compiled
here separately, with Python running between them).  Each graph is re-exported with
``torch.export`` (sizes dynamo made symbolic -- ``dynamic=True`` or
``torch._dynamo.mark_dynamic`` -- stay symbolic, as ``Dim.AUTO``), imported with
:func:`~tvm.relax.frontend.torch.from_exported_program`, built with ``relax.build`` and run
on the Relax VM; tensors cross in both directions through DLPack without copies (a
non-contiguous input is made contiguous first).

Options (``torch.compile(..., options={...})``):

``target``
    compilation target (default ``"llvm"``); inputs must live on its device.
``opt_level``
    the PassContext optimization level (default 3).
``tuning_records``
    a ``tvmc tune`` / meta-schedule work dir whose records replace the default schedules
    (needs ``tvm-meta-schedule``).
``fallback``
    when True, a graph that cannot be exported or imported runs eagerly (with a warning)
    instead of raising; default False.
``freeze_params``
    bake the parameters and buffers of the traced modules into the build as constants
    (default True; see "Weights" below); False passes them at every call instead.

Weights: dynamo lifts a module's parameters and buffers to graph inputs.  With
``freeze_params`` (the default) the backend recognises them (dynamo's static-input mark on
an nn-module source, see :mod:`.dynamo_weights`) and binds their values into the Relax
function as constants, so the build folds batch norms into convolutions, folds constants
and prepacks conv/matmul weights at compile time, as ``from_exported_program`` does for an
exported module.  Each call checks, cheaply, that the graph's weight inputs are the baked
tensors, unchanged (identity, version counter, data pointer): an optimizer step,
``load_state_dict``, an in-place write under ``no_grad`` or ``p.data = t`` makes the next
call rebuild with the new values (re-binding the imported module: no new export), or reuse
the build when the values are equal.  Instances of one module class share dynamo's graph;
each gets builds of its own (a few are kept per graph).  After ``_MAX_REFREEZES`` new sets
of values (changes or instances) in one graph, the graph is rebuilt once more with weights
as run-time inputs (with a warning).  A write that bypasses torch's version counter --
through ``p.data`` (``p.data.copy_(w)``), a numpy or DLPack view, or in place to a weight
created under ``torch.inference_mode`` (an inference tensor has no counter) -- is not seen
by that check: call :func:`reload_weights` after it, and the next call of every compiled graph
compares its weights' contents with the baked ones.

Recurrent modules: dynamo does not trace ``nn.LSTM``/``nn.GRU``/``nn.RNN`` unless
``torch._dynamo.config.allow_rnn = True`` (off by default in torch 2.13): without it the
module call is a graph break (when it comes first in ``forward``, the whole frame runs
eagerly and no graph reaches this backend); with it, the module is captured in the graph
and imported like any other (``aten.lstm`` ...).

The backend is inference-only: when autograd is on and an input requires grad (parameters
always do), the graph runs eagerly with a warning -- wrap calls in ``torch.no_grad()`` or
``torch.inference_mode()``.  A graph that mutates its inputs also runs eagerly (with a
warning), since the compiled function would not write the mutation back.

Builds are cached in-process, keyed by the graph's code, its input dtypes and (static or
symbolic) shapes, the options and, with baked weights, a content hash of the weights
(computed once per set of values), so a recompilation of the same graph
(``torch._dynamo.reset()``, another model instance with the same weights, or any instance
with ``freeze_params=False``) reuses the executable, and instances with different weights
never share one.  A symbolic Python int that no input shape carries, or a size that
``torch.export`` specializes, is baked into the build:
each distinct value gets its own (cached) build.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from .common import TorchImportError
from .dynamo_weights import FrozenWeights, weight_positions

__all__ = ["tvm_backend", "register", "cache_info", "clear_cache", "reload_weights"]

_DEFAULTS = {"target": "llvm", "opt_level": 3, "tuning_records": None, "fallback": False,
             "freeze_params": True}

#: new weight values one compiled graph rebuilds for before it takes its weights as inputs
_MAX_REFREEZES = 3
#: weight sets (model instances sharing one dynamo graph) whose builds a graph keeps
_MAX_WEIGHT_SETS = 4

_LOCK = threading.Lock()
_CACHE: dict[Any, "_Build"] = {}
_STATS = {"builds": 0, "hits": 0}
_RELOADS = itertools.count(1)  # reload_weights() generations
_RELOAD_GEN = [0]


def reload_weights() -> None:
    """Make the next call of every compiled graph compare the contents of its baked weights
    with their live values (and rebuild where they differ): for writes torch's version
    counter does not see, such as ``param.data.copy_(w)``."""
    _RELOAD_GEN[0] = next(_RELOADS)


def cache_info() -> dict[str, int]:
    """``{"builds": n, "hits": n, "size": n}``: compilations done, cache hits, entries."""
    with _LOCK:
        return {**_STATS, "size": len(_CACHE)}


def clear_cache() -> None:
    """Forget every cached build (and reset the counters)."""
    with _LOCK:
        _CACHE.clear()
        _STATS.update(builds=0, hits=0)


@dataclass(frozen=True)
class _Input:
    """One placeholder of the dynamo graph.

    ``kind`` is ``"tensor"`` (``dtype``, ``dims``: ints for static sizes, symbol names for
    symbolic ones, None for a size that is an expression of symbols), ``"size"`` (a SymInt
    read from tensor ``source = (k, d)``: dimension d of the k-th tensor input), ``"scalar"``
    (a 0-d tensor read only with ``.item()``, fixed per build by its value) or ``"baked"``
    (any other value, fixed per build).
    """

    kind: str
    dtype: str = ""
    dims: tuple = ()
    source: Optional[tuple[int, int]] = None


@dataclass
class _Build:
    vm: Any
    device: Any
    n_out: int
    executable: Any = None


@dataclass
class _WeightSet:
    """Baked weight values (their ``digest``), the builds made with them (variant -> build)
    and the watchers of the tensors that hold them (one per model instance)."""

    digest: str
    watchers: list
    builds: dict = field(default_factory=dict)
    keys: set = field(default_factory=set)  # its entries in _CACHE


def _torch() -> Any:
    import torch

    return torch


def _sym_name(value: Any) -> Optional[str]:
    expr = getattr(getattr(value, "node", None), "expr", None)
    if expr is not None and getattr(expr, "is_Symbol", False):
        return str(expr)
    return None


def _is_sym(value: Any) -> bool:
    return type(value).__name__ in ("SymInt", "SymFloat", "SymBool")


def _describe_inputs(gm: Any, example_inputs: Sequence[Any]) -> list[_Input]:
    torch = _torch()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise TorchImportError(
            f"tvm backend: the graph has {len(placeholders)} inputs but dynamo passed "
            f"{len(example_inputs)} example values")
    specs: list[_Input] = []
    where: dict[str, tuple[int, int]] = {}  # symbol -> (tensor input, dim) carrying it
    n_tensors = 0
    for node, example in zip(placeholders, example_inputs):
        val = node.meta.get("example_value", example)
        if isinstance(example, torch.Tensor) and _only_item(node, example):
            # a Python float dynamo passes as a 0-d tensor and reads back with .item():
            # baked (a build per value) -- traced, .item() would be a data-dependent value
            specs.append(_Input("scalar", str(example.dtype)))
        elif isinstance(example, torch.Tensor):
            dims = []
            for d, size in enumerate(val.shape if isinstance(val, torch.Tensor)
                                     else example.shape):
                if isinstance(size, int):
                    dims.append(size)
                    continue
                name = _sym_name(size)
                dims.append(name)
                if name is not None:
                    where.setdefault(name, (n_tensors, d))
            specs.append(_Input("tensor", str(example.dtype), tuple(dims)))
            n_tensors += 1
        else:
            specs.append(_Input("baked", source=None, dims=(_sym_name(val) or "",)))
    out = []
    for spec in specs:
        if spec.kind == "baked" and spec.dims[0] in where:
            out.append(_Input("size", source=where[spec.dims[0]]))
        else:
            out.append(spec)
    return out


def _only_item(node: Any, example: Any) -> bool:
    users = list(node.users)
    return example.dim() == 0 and bool(users) and all(
        u.op == "call_method" and u.target == "item" for u in users)


class _ItemOnly:
    """Stands for a 0-d tensor the graph only reads with ``.item()``: a baked value."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def item(self) -> Any:
        return self.value


def _graph_digest(gm: Any) -> str:
    """The graph's code, its submodules' code and the bytes of the tensors it reads with
    get_attr: two graphs with the same digest compute the same function."""
    torch = _torch()
    h = hashlib.blake2b(digest_size=20)
    for name, mod in sorted(gm.named_modules()):
        code = getattr(mod, "code", None)
        h.update(f"{name}\n{code if code is not None else type(mod).__name__}\n".encode())
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        obj: Any = gm
        for part in str(node.target).split("."):
            obj = getattr(obj, part, None)
        if isinstance(obj, torch.Tensor):
            t = obj.detach().cpu().contiguous()
            h.update(f"{node.target}{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _options_key(options: dict[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in options.items()))


def _wrapper(gm: Any, specs: list[_Input], baked: dict[int, Any], slots: list[int]) -> Any:
    """The ``torch.nn.Module`` torch.export traces: the graph's tensor inputs as named
    positional parameters (torch.export's guards do not follow ``*args``), sizes read from
    them, baked values fixed, and the graph outputs the compiled function computes."""
    torch = _torch()

    def call(self: Any, *tensors: Any) -> tuple:
        args: list[Any] = []
        k = 0
        for i, spec in enumerate(specs):
            if spec.kind == "tensor":
                args.append(tensors[k])
                k += 1
            elif spec.kind == "size":
                t, d = spec.source
                args.append(tensors[t].size(d))
            else:
                args.append(baked[i])
        out = self.graph(*args)
        out = out if isinstance(out, (list, tuple)) else (out,)
        return tuple(out[j] for j in slots)

    names = [f"x{k}" for k in range(sum(s.kind == "tensor" for s in specs))]
    scope: dict[str, Any] = {"call": call}
    params = ", ".join(["self", *names])
    exec(f"def forward({params}):\n    return call(self, {', '.join(names)})\n", scope)

    class GraphWrapper(torch.nn.Module):
        forward = scope["forward"]

        def __init__(self) -> None:
            super().__init__()
            self.graph = gm

    return GraphWrapper()


class CompiledGraph:
    """The callable the backend returns for one dynamo graph: looks up (or builds) the
    executable for the call's baked values and specialized sizes, then runs it on the VM.

    ``weight_pos`` are the graph inputs that are module weights; while ``frozen`` holds
    their values, builds take them as constants and calls pass only the other tensors
    (``run_pos``).  Model instances that share the graph (dynamo compiles a module class's
    ``forward`` once for all of them) each get a weight set of their own, up to
    ``_MAX_WEIGHT_SETS``; a call picks the set whose tensors it passes.
    """

    def __init__(self, gm: Any, example_inputs: Sequence[Any], options: dict[str, Any]):
        torch = _torch()
        from tvm.ir.target import as_target
        from tvm.runtime import Device

        self.gm = gm
        self.options = options
        self.target = as_target(options["target"])
        self.device = Device(self.target.device_type, 0)
        self.specs = _describe_inputs(gm, example_inputs)
        self.tensor_pos = [i for i, s in enumerate(self.specs) if s.kind == "tensor"]
        self.baked_pos = [i for i, s in enumerate(self.specs) if s.kind in ("baked", "scalar")]
        self.digest = _graph_digest(gm)
        self._plan_outputs()
        #: (tensor input, dim) pairs dynamo made symbolic but torch.export specialized
        self.specialized: list[tuple[int, int]] = []
        self._builds: dict[tuple, Any] = {}
        self._eager_reason: Optional[str] = None
        example = [self._materialize(x) for x in example_inputs]
        self.weight_pos: list[int] = []
        if options["freeze_params"]:
            self.weight_pos = [i for i in weight_positions(gm, example_inputs)
                               if self.specs[i].kind == "tensor"
                               and all(isinstance(d, int) for d in self.specs[i].dims)]
        self._run_frozen = [i for i in self.tensor_pos if i not in set(self.weight_pos)]
        self.frozen: Optional[FrozenWeights] = None
        self.refreezes = 0  # new weight values seen after the first
        self._sets: list[_WeightSet] = []  # most recently used first
        self._imported: dict[tuple, Any] = {}  # variant -> imported module, weights unbound
        if self.weight_pos:
            first = FrozenWeights(self.weight_pos, example, _RELOAD_GEN[0])
            self._activate(_WeightSet(first.digest, [first]), first)
        self._build(example, self._variant(example), first=True)
        del torch

    @property
    def run_pos(self) -> list[int]:
        """The graph inputs a call passes to the VM."""
        return self.tensor_pos if self.frozen is None else self._run_frozen

    @property
    def executable(self) -> Any:
        """The executable of the latest build (for inspection)."""
        return next(reversed(self._builds.values())).executable if self._builds else None

    # -- outputs ----------------------------------------------------------------------------
    def _plan_outputs(self) -> None:
        """Which graph outputs the compiled function computes (``slots``); the others are
        constants or graph inputs, returned as they are."""
        out_node = next(n for n in self.gm.graph.nodes if n.op == "output")
        values = out_node.args[0]
        self.out_is_seq = isinstance(values, (list, tuple))
        values = list(values) if self.out_is_seq else [values]
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        self.out_plan: list[tuple[str, Any]] = []
        self.slots: list[int] = []
        for j, v in enumerate(values):
            if not hasattr(v, "op"):
                self.out_plan.append(("const", v))
            elif v.op == "placeholder":
                self.out_plan.append(("input", placeholders.index(v)))
            else:
                self.out_plan.append(("computed", len(self.slots)))
                self.slots.append(j)

    # -- variants ---------------------------------------------------------------------------
    def _materialize(self, x: Any) -> Any:
        """A real value for an example input (dynamo may pass fake tensors)."""
        torch = _torch()
        if isinstance(x, torch.Tensor) and type(x).__name__ == "FakeTensor":
            from torch.fx.experimental.symbolic_shapes import guarding_hint_or_throw as hint_int

            return torch.zeros([hint_int(s) for s in x.shape], dtype=x.dtype)
        if _is_sym(x):
            from torch.fx.experimental.symbolic_shapes import guarding_hint_or_throw as hint_int

            return hint_int(x)
        return x

    def _variant(self, args: Sequence[Any]) -> tuple:
        baked = tuple((i, _hashable(self._baked_value(i, args[i]))) for i in self.baked_pos)
        sizes = tuple(int(args[self.tensor_pos[t]].shape[d]) for t, d in self.specialized)
        return baked + sizes

    def _baked_value(self, i: int, value: Any) -> Any:
        return value.item() if self.specs[i].kind == "scalar" else value

    def _build(self, args: Sequence[Any], variant: tuple, first: bool = False) -> Any:
        frozen = None if self.frozen is None else (tuple(self.frozen.positions),
                                                   self.frozen.digest)
        key = (self.digest, tuple(self.specs), variant, _options_key(self.options), frozen)
        with _LOCK:
            cached = _CACHE.get(key)
            if cached is not None:
                _STATS["hits"] += 1
        if cached is None:
            cached = self._compile(args, variant)
            if cached is None:
                return None
            with _LOCK:
                _CACHE[key] = cached
                _STATS["builds"] += 1
        if frozen is not None:
            self._sets[0].keys.add(key)
        self._builds[variant] = cached
        return cached

    def _compile(self, args: Sequence[Any], variant: tuple) -> Optional[_Build]:
        from tvm import relax

        mod = self._imported.get(variant)
        if mod is None:
            mod = self._import(args)
            if mod is None:
                return None
            if self.weight_pos:  # kept to re-bind changed weights without a new export
                self._imported[variant] = mod
        if self.frozen is not None:
            mod = self._bind_weights(mod, args)
        with self._build_context():
            ex = relax.build(mod, target=self.target)
        vm = relax.VirtualMachine(ex, self.device)
        return _Build(vm, self.device, len(self.slots), ex)

    def _bind_weights(self, mod: Any, args: Sequence[Any]) -> Any:
        """``mod`` with the weight inputs of ``main`` (its parameters follow the graph's
        tensor inputs in order) bound to the values in ``args``."""
        from tvm.relax.vm import bind_params

        params = mod["main"].params
        arrays = FrozenWeights.arrays(args, self.frozen.positions)
        names = {params[self.tensor_pos.index(i)].name_hint: a
                 for i, a in zip(self.frozen.positions, arrays)}
        return bind_params(mod, names)

    def _import(self, args: Sequence[Any]) -> Any:
        """Export the graph (every tensor input a user input) and import it."""
        torch = _torch()

        from .importer import decomposition_table, from_exported_program

        tensors = [args[i].detach().contiguous() for i in self.tensor_pos]
        baked = {i: _ItemOnly(self._baked_value(i, args[i])) if self.specs[i].kind == "scalar"
                 else args[i] for i in self.baked_pos}
        module = _wrapper(self.gm, self.specs, baked, self.slots)
        dynamic = tuple(
            {d: torch.export.Dim.AUTO for d, size in enumerate(self.specs[i].dims)
             if not isinstance(size, int)} or None
            for i in self.tensor_pos)
        try:
            # outside dynamo's tracing context: export would reuse its fake mode and
            # shape environment, and with them guards on the frame's own inputs
            with torch._guards.tracing(None), torch.no_grad():
                ep = torch.export.export(module, tuple(tensors), dynamic_shapes=dynamic,
                                         strict=False)
                # functionalized (core ATen): input mutations show in the signature only now
                ep = ep.run_decompositions(decomposition_table())
        except Exception as err:  # noqa: BLE001 - reported with the graph's name
            return self._cannot(f"torch.export failed: {type(err).__name__}: "
                                f"{_first_line(err)}", err)
        mutated = [f"{s.kind.name.lower()} {s.target}" for s in ep.graph_signature.output_specs
                   if s.kind.name != "USER_OUTPUT"]
        if mutated:
            return self._cannot(f"the graph mutates {', '.join(mutated)} (the compiled "
                                "function would not write it back)", None, always=True)
        self._record_specialized(ep)
        try:
            return from_exported_program(ep, run_decompositions=False)
        except TorchImportError as err:
            return self._cannot(str(err), err)

    def _record_specialized(self, ep: Any) -> None:
        user = [n for n in ep.graph.nodes if n.op == "placeholder"
                and n.name in {s.arg.name for s in ep.graph_signature.input_specs
                               if s.kind.name == "USER_INPUT"}]
        found = []
        for t, node in enumerate(user):
            dims = self.specs[self.tensor_pos[t]].dims
            shape = node.meta["val"].shape
            for d, size in enumerate(dims):
                if not isinstance(size, int) and isinstance(shape[d], int):
                    found.append((t, d))
        if found and not self.specialized:
            self.specialized = found

    def _build_context(self) -> Any:
        from tvm.ir.transform import PassContext

        stack = contextlib.ExitStack()
        stack.enter_context(PassContext(opt_level=int(self.options["opt_level"])))
        stack.enter_context(self.target)
        records = self.options.get("tuning_records")
        if records:
            from tvm.driver.tvmc.compiler import tuning_database

            stack.enter_context(tuning_database(str(records)).applied(self.target))
        return stack

    def _cannot(self, reason: str, err: Optional[BaseException],
                always: bool = False) -> None:
        message = f"tvm backend: graph {self.gm.__class__.__name__} cannot be compiled: {reason}"
        if not (always or self.options["fallback"]):
            raise TorchImportError(
                message + "; pass options={'fallback': True} to torch.compile to run such "
                "graphs eagerly") from err
        warnings.warn(message + "; running it eagerly", stacklevel=4)
        self._eager_reason = reason
        return None

    # -- weights ----------------------------------------------------------------------------
    def _activate(self, ws: _WeightSet, watcher: FrozenWeights) -> None:
        """Make ``ws`` the weight set of the next builds and runs, ``watcher`` the tensors
        checked at the next call (dropping the least recently used sets beyond
        ``_MAX_WEIGHT_SETS``)."""
        if ws in self._sets:
            self._sets.remove(ws)
        self._sets.insert(0, ws)
        for old in self._sets[_MAX_WEIGHT_SETS:]:
            self._drop(old)
        self.frozen, self._builds = watcher, ws.builds

    def _drop(self, ws: _WeightSet) -> None:
        with _LOCK:  # builds with stale constants are of no use to anyone
            for key in ws.keys:
                _CACHE.pop(key, None)
        self._sets.remove(ws)

    def _weights_current(self, args: Sequence[Any]) -> bool:
        return self.frozen.checked == _RELOAD_GEN[0] and self.frozen.current(args)

    def _select_weights(self, args: Sequence[Any]) -> None:
        """The call's weights are not the ones checked last: activate the set whose
        tensors they are, or whose values they have, else a new set (the next lookup
        builds), or stop baking after ``_MAX_REFREEZES`` new sets of values."""
        gen = _RELOAD_GEN[0]
        for ws in self._sets:
            watcher = next((w for w in ws.watchers if w.current(args)), None)
            if watcher is None:
                continue
            if watcher.checked == gen or not watcher.content_changed(args):
                watcher.checked = gen
                self._activate(ws, watcher)
                return
            break  # written behind the version counter (reload_weights): new values
        fresh = FrozenWeights(self.weight_pos, args, gen)
        match = next((ws for ws in self._sets if ws.digest == fresh.digest), None)
        for ws in list(self._sets):  # the same instance's older values, freed tensors
            ws.watchers = [w for w in ws.watchers if w.alive and not w.same_tensors(fresh)]
            if not ws.watchers and ws is not match:
                self._drop(ws)
        if match is not None:  # other tensors (or versions), the same values
            match.watchers.append(fresh)
            self._activate(match, fresh)
            return
        self.refreezes += 1
        if self.refreezes > _MAX_REFREEZES:
            warnings.warn(
                f"tvm backend: graph {self.gm.__class__.__name__} has seen "
                f"{self.refreezes + 1} different sets of weight values; rebuilding it with "
                "its weights as run-time inputs (no more rebuilds for new weights, but no "
                "weight prepacking or folding: pass options={'freeze_params': False} to "
                "start that way)", stacklevel=3)
            for ws in list(self._sets):
                self._drop(ws)
            self.frozen, self._builds = None, {}
            return
        self._activate(_WeightSet(fresh.digest, [fresh]), fresh)

    # -- calls ------------------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        if self._eager_reason is not None:
            return self.gm(*args)
        if self.frozen is not None and not self._weights_current(args):
            self._select_weights(args)
        variant = self._variant(args)
        build = self._builds.get(variant)
        if build is None:
            build = self._build(args, variant)
            if build is None:
                return self.gm(*args)
        result = build.vm["main"](*[self._to_tvm(args[i]) for i in self.run_pos])
        computed = list(result) if isinstance(result, (list, tuple)) else [result]
        outs = []
        for kind, value in self.out_plan:
            if kind == "const":
                outs.append(value)
            elif kind == "input":
                outs.append(args[value])
            else:
                outs.append(_to_torch(computed[value]))
        return tuple(outs) if self.out_is_seq else outs[0]

    def _to_tvm(self, t: Any) -> Any:
        import tvm.runtime

        dev = t.__dlpack_device__()
        if (int(dev[0]), int(dev[1])) != (self.device.device_type, self.device.index):
            raise ValueError(f"tvm backend: an input is on torch device {t.device}, the "
                             f"target {self.target} runs on {self.device}")
        t = t.detach()
        if not t.is_contiguous():
            t = t.contiguous()
        return tvm.runtime.from_dlpack(t)


def _to_torch(value: Any) -> Any:
    """A VM result as torch values: tensors through DLPack (no copy), sizes as ints."""
    torch = _torch()
    if isinstance(value, (bool, int)):
        return value
    if hasattr(value, "__dlpack__"):
        try:
            return torch.from_dlpack(value)
        except BufferError:  # a read-only array (a constant result): torch needs a copy
            return torch.from_numpy(value.numpy().copy())
    if isinstance(value, (list, tuple)):
        return type(value)(_to_torch(v) for v in value)
    return int(value)


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return (text.splitlines()[0] if text else "")[:300]


def tvm_backend(gm: Any, example_inputs: Sequence[Any], *, options: Optional[dict] = None,
                mode: Optional[str] = None) -> Callable[..., Any]:
    """The ``"tvm"`` backend of ``torch.compile``: compiles dynamo graph ``gm`` (see the
    module docstring for ``options``); ``mode`` is accepted and ignored."""
    torch = _torch()
    opts = dict(_DEFAULTS)
    unknown = sorted(set(options or {}) - set(_DEFAULTS))
    if unknown:
        raise ValueError(f"tvm backend: unknown option(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(_DEFAULTS))}")
    opts.update(options or {})
    if torch.is_grad_enabled() and any(
            isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
        warnings.warn(
            "tvm backend: inference only, but autograd is enabled and an input requires "
            "grad; running this graph eagerly (call the model under torch.no_grad() or "
            "torch.inference_mode() to compile it)", stacklevel=2)
        return gm.forward
    compiled = CompiledGraph(gm, example_inputs, opts)
    if compiled._eager_reason is not None:
        return gm.forward
    return compiled


def register(name: str = "tvm") -> None:
    """Make ``torch.compile(..., backend=name)`` use :func:`tvm_backend`.

    torch 2.13 ships a backend of its own named ``"tvm"`` (for Apache TVM's Relay, which
    cannot be installed next to this package: both are the ``tvm`` package), and a built-in
    backend shadows an entry point of the same name, so the name is claimed here, in
    torch's registry, after its built-in backends are loaded.  Importing this module calls
    ``register()``; without the import, the ``torch_dynamo_backends`` entry point
    ``"tvm_relax"`` reaches the same backend (and loading it registers ``"tvm"`` too).
    """
    from torch._dynamo.backends import registry

    registry._lazy_import()  # load torch's built-in backends first, or theirs would win
    if registry._COMPILER_FNS.get(name) is tvm_backend:
        return
    tvm_backend._tags = ()  # type: ignore[attr-defined]
    registry._BACKENDS[name] = None
    registry._COMPILER_FNS[name] = tvm_backend


register()
