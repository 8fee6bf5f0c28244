"""Post-training quantization: find, calibrate, quantize (QDQ), make integer, measure.

::

    qmod, report = quantize(mod, calibration_data, QuantizeConfig(calibrate="entropy"))
    print(report)     # per layer: calibrated ranges, scales / zero points, error vs float

1. The layers are ``main``'s float ``conv2d`` / ``matmul`` bindings whose weight is a
   constant (after the default graph pipeline when ``config.fold``, which folds batch norms),
   each with its epilogue: a bias add of a constant, then a ReLU, when each is the only user
   of the value before it.
2. Calibration: ``main`` is rebuilt to also return each layer's input and epilogue output,
   built for ``llvm`` and run by the VM on every batch; :class:`~.calibrate.TensorStats`
   gathers the ranges and histograms.
3. Parameters: activations per ``config`` (:func:`~.calibrate.activation_params`), weights
   symmetric int8 per output channel (:func:`~.calibrate.weight_params`).
4. Rewrite: each calibrated tensor ``t`` is replaced by ``dequantize(quantize(t))`` for all its
   users, each weight by ``dequantize(W_int8)``; ``QDQToInteger`` then turns the chains into
   ``relax.qnn`` integer kernels.  Skipped layers stay float.
5. Report: the quantized module and the float one run on the calibration data; the final
   output's error and each layer's output error (quantized vs float) go to the report.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable, Optional

import numpy as np

from tvm.ir.module import IRModule

from ..block_builder import BlockBuilder
from ..expr import Call, Constant, DataflowVar, Function, SeqExpr, Tuple, Var, VarBinding
from ..expr_functor import ExprMutator
from ..struct_info import TensorStructInfo
from .calibrate import (TensorStats, activation_params, entropy_threshold, minmax_threshold,
                        percentile_threshold, weight_params)
from .config import QuantizeConfig
from .report import LayerReport, QuantizeReport

__all__ = ["quantize", "find_layers", "Layer"]

_LINEAR = ("relax.nn.conv2d", "relax.matmul")


class Layer:
    """A quantizable conv2d / matmul of ``main``: its binding, input, epilogue end, weight."""

    def __init__(self, index: int, name: str, op: str, var: Var, data: Var, end: Var,
                 weight: np.ndarray, axis: int):
        self.index, self.name, self.op = index, name, op
        self.var, self.data, self.end = var, data, end
        self.weight, self.axis = weight, axis

    def matches(self, key: Any) -> bool:
        if isinstance(key, int):
            return key == self.index
        return key in (self.name, self.var.name_hint)


def _op_name(expr: Any) -> str:
    return getattr(getattr(expr, "op", None), "name", "") if isinstance(expr, Call) else ""


def _bindings(func: Function) -> list:
    return [b for block in func.body.blocks for b in block.bindings]


def _vars_in(expr: Any) -> list[Var]:
    """The variables ``expr`` reads (calls, tuples, tuple items)."""
    if isinstance(expr, Var):
        return [expr]
    out: list[Var] = []
    for child in (list(getattr(expr, "args", ()) or ()) + list(getattr(expr, "fields", ()) or ())
                  + [getattr(expr, "tuple_value", None)]):
        if child is not None and not isinstance(child, Constant):
            out.extend(_vars_in(child))
    return out


def _constant(expr: Any, values: Mapping[Var, Any]) -> Optional[np.ndarray]:
    """The value of a constant, or of a transposed constant (a Gemm's weight)."""
    while isinstance(expr, Var) and expr in values:
        expr = values[expr]
    if isinstance(expr, Constant):
        data = expr.data
        return data.numpy() if hasattr(data, "numpy") else np.asarray(data)
    if _op_name(expr) == "relax.permute_dims":
        inner = _constant(expr.args[0], values)
        axes = expr.attrs.axes
        if inner is not None:
            return np.ascontiguousarray(np.transpose(inner, None if axes is None else
                                                     [int(a) for a in axes]))
    return None


def _is_constant_expr(expr: Any, values: Mapping[Var, Any]) -> bool:
    """A constant, or a call on constants only (a reshaped bias)."""
    while isinstance(expr, Var) and expr in values:
        expr = values[expr]
    if isinstance(expr, Constant):
        return True
    return isinstance(expr, Call) and bool(_op_name(expr)) and not _vars_in(expr) and any(
        isinstance(a, Constant) for a in expr.args)


def find_layers(func: Function) -> list[Layer]:
    """The conv2d / matmul bindings of ``func`` with constant weights, in order."""
    bindings = [b for b in _bindings(func) if isinstance(b, VarBinding)]
    values = {b.var: b.value for b in bindings}
    users: dict[Var, list] = {}
    for b in bindings:
        for v in _vars_in(b.value):
            users.setdefault(v, []).append(b)
    for v in _vars_in(func.body.body):
        users.setdefault(v, []).append(None)

    def only_user(var: Var) -> Optional[VarBinding]:
        u = users.get(var, [])
        return u[0] if len(u) == 1 else None

    layers: list[Layer] = []
    for b in bindings:
        name = _op_name(b.value)
        if name not in _LINEAR:
            continue
        data, w_expr = b.value.args[0], b.value.args[1]
        sinfo = getattr(data, "struct_info", None)
        w = _constant(w_expr, values)
        if not isinstance(data, Var) or not isinstance(sinfo, TensorStructInfo) \
                or sinfo.dtype != "float32" or w is None or w.dtype != np.float32:
            continue
        attrs = b.value.attrs
        if attrs.out_dtype not in ("void", "float32"):
            continue
        if name == "relax.nn.conv2d":
            axis = attrs.kernel_layout.index("O")
        elif w.ndim == 2:
            axis = 1
        else:
            continue
        end = b.var
        user = only_user(end)
        if user is not None and _op_name(user.value) == "relax.add" and any(
                _is_constant_expr(a, values) for a in user.value.args if a is not end):
            end = user.var
            user = only_user(end)
        if user is not None and _op_name(user.value) == "relax.nn.relu":
            end = user.var
        span = getattr(b.value, "span", None) or getattr(b, "span", None)
        layer = str(getattr(span, "name", "") or "") or b.var.name_hint
        layers.append(Layer(len(layers), layer, name.removeprefix("relax."), b.var, data, end,
                            w, axis))
    return layers


# -- running ----------------------------------------------------------------------------------
def _instrumented(mod: IRModule, tensors: Sequence[Var]) -> IRModule:
    """``mod`` whose ``main`` returns ``(original result, *tensors)``."""
    from ..transform.to_non_dataflow import _ToNonDataflow

    conv = _ToNonDataflow(mod)
    func = conv.visit_expr(mod["main"])
    mapped = [conv.var_remap.get(t, t) for t in tensors]
    out = BlockBuilder().normalize(Tuple([func.body.body, *mapped]))
    new = Function(func.params, SeqExpr(func.body.blocks, out), out.struct_info, func.is_pure,
                   func.attrs, span=func.span)
    return mod.with_function("main", new)


def _compile(mod: IRModule) -> Callable[..., list]:
    """A function running ``mod["main"]`` on numpy arrays; results as a flat list."""
    import tvm.runtime

    from ..vm import VirtualMachine, build

    vm = VirtualMachine(build(mod, target="llvm"), tvm.runtime.cpu())

    def flat(value: Any) -> list:
        if hasattr(value, "numpy"):
            return [value.numpy()]
        return [a for v in value for a in flat(v)]

    def run(*args: np.ndarray) -> list:
        return flat(vm["main"](*args))

    return run


def _batch_args(batch: Any, params: Sequence[Var]) -> list[np.ndarray]:
    """A calibration batch (dict by parameter name, list in parameter order, or one array)
    as the positional arguments of ``main``."""
    if isinstance(batch, Mapping):
        missing = [p.name_hint for p in params if p.name_hint not in batch]
        if missing:
            raise ValueError(f"quantize: calibration batch lacks input(s) {missing}; it has "
                             f"{sorted(batch)}")
        arrays = [batch[p.name_hint] for p in params]
    elif isinstance(batch, np.ndarray):
        arrays = [batch]
    else:
        arrays = list(batch)
    if len(arrays) != len(params):
        raise ValueError(f"quantize: main takes {len(params)} input(s), the calibration batch "
                         f"gives {len(arrays)}")
    return [np.ascontiguousarray(a, dtype=getattr(p.struct_info, "dtype", None) or None)
            for a, p in zip(arrays, params)]


def _progress(config: QuantizeConfig, total: Optional[int]) -> Callable[[int], None]:
    def report(done: int) -> None:
        if config.progress is False or (done % config.progress_every and done != total):
            return
        if callable(config.progress) and not isinstance(config.progress, bool):
            config.progress(done, total)
        elif config.progress is True or total is None or total > config.progress_every:
            of = f"/{total}" if total is not None else ""
            print(f"relax.quantize: calibrated {done}{of} batches", file=sys.stderr,
                  flush=True)

    return report


# -- the rewrite ---------------------------------------------------------------------------------
class _InsertQDQ(ExprMutator):
    """Replaces each calibrated tensor by dequantize(quantize(t)) for all its users and each
    quantized layer's weight by dequantize(W_int8)."""

    def __init__(self, mod: IRModule, qparams: Mapping[Var, tuple], weights: Mapping[Var, tuple],
                 dtype: str, names: Mapping[Var, str]):
        super().__init__(mod)
        self.qparams, self.weights, self.dtype, self.names = qparams, weights, dtype, names
        self.params_done = False

    def _qdq(self, var: Var, source: Var) -> None:
        from ..op import qnn

        scale, zp = self.qparams[source]
        bb = self.builder_
        name = self.names.get(source, "")
        q = bb.emit(qnn.quantize(var, scale, zp, out_dtype=self.dtype), name)
        dq = qnn.dequantize(q, scale, zp)
        output = (not isinstance(source, DataflowVar) and source not in self._params
                  and bb.current_block_is_dataflow())
        self.var_remap[source] = bb.emit_output(dq) if output else bb.emit(dq)

    def visit_binding(self, binding: Any) -> None:
        if not self.params_done:
            self.params_done = True
            for p in self._params:
                if p in self.qparams:
                    self._qdq(p, p)
        if binding.var in self.weights:
            self._emit_layer(binding)
        else:
            super().visit_binding(binding)
        if binding.var in self.qparams:
            self._qdq(self.var_remap.get(binding.var, binding.var), binding.var)

    def _emit_layer(self, binding: VarBinding) -> None:
        from ..op import qnn

        wq, scales, axis = self.weights[binding.var]
        call = binding.value
        wd = self.builder_.emit(qnn.dequantize(Constant(wq), scales, 0, axis=axis))
        data = self.visit_expr(call.args[0])
        new = Call(call.op, [data, wd, *call.args[2:]], call.attrs, call.sinfo_args,
                   span=call.span)
        self.builder_.emit_normalized(VarBinding(binding.var, self.builder_.normalize(new),
                                                 span=binding.span))

    def run(self, func: Function) -> Function:
        self._params = list(func.params)
        return self.visit_expr(func)


# -- the entry point -----------------------------------------------------------------------------
def quantize(mod: IRModule, calibration_data: Iterable[Any],
             config: Optional[QuantizeConfig] = None) -> tuple[IRModule, QuantizeReport]:
    """Post-training quantization of ``mod["main"]`` (module docstring).

    ``calibration_data``: an iterable of batches, each a dict (input name -> array), a list of
    arrays in ``main``'s parameter order, or one array; it is iterated twice (calibration and
    error measurement), so a one-shot iterator is first stored in a list.
    """
    from ..transform import (DeadCodeElimination, QDQReport, QDQToInteger,
                             get_default_graph_pipeline)

    config = config if config is not None else QuantizeConfig()
    if not isinstance(config, QuantizeConfig):
        raise TypeError(f"quantize: config must be a QuantizeConfig, got {type(config).__name__}")
    if "main" not in mod:
        raise ValueError("quantize: the module has no function 'main'")
    if config.fold:
        mod = get_default_graph_pipeline()(mod)
    batches = calibration_data if isinstance(calibration_data, Sequence) and not isinstance(
        calibration_data, (np.ndarray, Mapping)) else list(calibration_data)
    if not batches:
        raise ValueError("quantize: calibration_data is empty")
    func = mod["main"]
    layers = find_layers(func)
    chosen = [la for la in layers if not any(la.matches(k) for k in config.skip)]
    unknown = [k for k in config.skip if not any(la.matches(k) for la in layers)]
    if unknown:
        names = [la.name for la in layers]
        raise ValueError(f"QuantizeConfig.skip: no layer {unknown} among {names} "
                         f"(or indices 0..{len(layers) - 1})")
    tensors: list[Var] = []
    for la in chosen:
        for t in (la.data, la.end):
            if t not in tensors:
                tensors.append(t)

    # calibration
    params = list(func.params)
    run_float = _compile(_instrumented(mod, tensors))
    histogram = config.calibrate != "minmax"
    stats = {t: TensorStats(config.num_bins, histogram) for t in tensors}
    tick = _progress(config, len(batches))
    n_out = 0
    for i, batch in enumerate(batches):
        outs = run_float(*_batch_args(batch, params))
        n_out = len(outs) - len(tensors)
        for t, value in zip(tensors, outs[n_out:]):
            stats[t].update(value)
        tick(i + 1)

    ranges = {t: _activation_range(stats[t], config) for t in tensors}
    qparams = {t: activation_params(*ranges[t], config.activation_dtype) for t in tensors}
    weights = {}
    for la in chosen:
        wq, scales = weight_params(la.weight, la.axis)
        weights[la.var] = (wq, scales, la.axis)

    # rewrite: QDQ, then integer kernels
    names = {la.end: f"ptq_out{la.index}" for la in chosen}
    names.update({t: f"ptq_in{i}" for i, t in enumerate(tensors) if t not in names})
    qfunc = _InsertQDQ(mod, qparams, weights, config.activation_dtype, names).run(func)
    qdq_report = QDQReport()
    qmod = QDQToInteger(qdq_report)(mod.with_function("main", qfunc))
    qmod = DeadCodeElimination()(qmod)  # the float values the rewrite replaced

    # error on the calibration data: final output and each layer's output
    probes = _named_vars(qmod["main"], [names[la.end] for la in chosen])
    run_quant = _compile(_instrumented(qmod, probes))
    total, errors = _measure(run_float, run_quant, batches, params, tensors, n_out,
                             [(la.end, qparams[la.end]) for la in chosen])
    errors = dict(zip((la.index for la in chosen), errors))

    rows = []
    for la in layers:
        if la not in chosen:
            rows.append(LayerReport(la.index, la.name, la.op, False, "skipped"))
            continue
        wq, scales, _ = weights[la.var]
        rows.append(LayerReport(
            la.index, la.name, la.op, True, "", ranges[la.data], qparams[la.data],
            ranges[la.end], qparams[la.end], (min(scales), max(scales)),
            errors[la.index].cosine, errors[la.index].max_abs))
    report = QuantizeReport(rows, config.calibrate, config.activation_dtype, len(batches),
                            total.max_abs, total.relative, total.cosine, qdq_report)
    return qmod, report


def _activation_range(s: TensorStats, config: QuantizeConfig) -> tuple[float, float]:
    """The calibrated ``[lo, hi]`` of one tensor: its observed range clipped at the
    threshold of ``config.calibrate``."""
    if config.calibrate == "minmax":
        thr = minmax_threshold(s)
    elif config.calibrate == "percentile":
        thr = percentile_threshold(s, config.percentile)
    else:
        signed = config.activation_dtype == "int8" or s.min < 0
        thr = entropy_threshold(s, 128 if signed else 256)
    return max(s.min, -thr), min(s.max, thr)


def _measure(run_float: Callable[..., list], run_quant: Callable[..., list], batches: Sequence,
             params: Sequence[Var], tensors: Sequence[Var], n_out: int,
             probes: Sequence[tuple]) -> tuple["_Error", list["_Error"]]:
    """The final output's error and each probe's (a float tensor and the ``(scale, zp)`` of
    its quantized form, the quantized module's extra results) over ``batches``."""
    total, errors = _Error(), [_Error() for _ in probes]
    for batch in batches:
        args = _batch_args(batch, params)
        f_outs, q_outs = run_float(*args), run_quant(*args)
        q_main, q_probes = q_outs[:len(q_outs) - len(probes)], q_outs[len(q_outs) - len(probes):]
        total.add(np.concatenate([o.reshape(-1) for o in f_outs[:n_out]]),
                  np.concatenate([o.reshape(-1) for o in q_main]))
        f_by_var = dict(zip(tensors, f_outs[n_out:]))
        for err, (var, (scale, zp)), q in zip(errors, probes, q_probes):
            err.add(f_by_var[var], (q.astype(np.float64) - zp) * scale)
    return total, errors


def _named_vars(func: Function, names: Sequence[str]) -> list[Var]:
    found = {b.var.name_hint: b.var for b in _bindings(func)}
    missing = [n for n in names if n not in found]
    if missing:
        raise RuntimeError(f"quantize: the quantized module lost the probes {missing}")
    return [found[n] for n in names]


class _Error:
    """Accumulated error of quantized vs float values."""

    def __init__(self) -> None:
        self.dot = self.ff = self.qq = 0.0
        self.max_abs = 0.0
        self.max_ref = 0.0

    def add(self, ref: np.ndarray, got: np.ndarray) -> None:
        r = np.asarray(ref, np.float64).reshape(-1)
        g = np.asarray(got, np.float64).reshape(-1)
        self.dot += float(r @ g)
        self.ff += float(r @ r)
        self.qq += float(g @ g)
        if r.size:
            self.max_abs = max(self.max_abs, float(np.abs(r - g).max()))
            self.max_ref = max(self.max_ref, float(np.abs(r).max()))

    @property
    def cosine(self) -> float:
        if self.ff == 0 or self.qq == 0:
            return 1.0 if self.ff == self.qq else 0.0
        return self.dot / np.sqrt(self.ff * self.qq)

    @property
    def relative(self) -> float:
        return self.max_abs / self.max_ref if self.max_ref else 0.0
