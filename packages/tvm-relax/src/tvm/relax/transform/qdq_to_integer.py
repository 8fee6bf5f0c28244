"""QDQToInteger: dequantize -> float op -> quantize chains become integer operators.

::

    mod, report = qdq_to_integer(mod)          # or QDQToInteger(report)(mod)
    print(report)                              # which chains became integer, which not and why

    # before (an ONNX QDQ model as quantize_static writes it)
    xd = R.qnn.dequantize(xq, sx, zx)                  acc = R.qnn.conv2d(xq, Wq, zx, zw)
    wd = R.qnn.dequantize(Wq, sw, zw, axis=0)          acc = R.add(acc, bias_q)        (int32)
    y  = R.nn.conv2d(xd, wd)                     ->    yq  = R.qnn.requantize(acc, sx * sw, 0,
    y  = R.add(y, bias)    # optional                            sy, zy, axis=1, out_min=zy)
    y  = R.nn.relu(y)      # optional
    yq = R.qnn.quantize(y, sy, zy)

Rules (the table of :func:`qdq_rules`, applied by the shared rewrite driver), each rooted at a
``relax.qnn.quantize`` with a per-tensor scale:

* ``conv2d`` / ``matmul`` (a Gemm's ``permute_dims`` of the weight included) of a per-tensor
  dequantized 8-bit input and a dequantized constant 8-bit weight (per tensor or per output
  channel), then optionally a constant bias add (re-quantized to int32 at the scale
  ``sx * sw``) and a ReLU / Clip (folded into the requantize's saturation bounds): ``relax.qnn.conv2d`` /
  ``relax.qnn.matmul`` with a requantize epilogue (FuseOps fuses the bias add and the
  requantize into the kernel);
* ``add`` / ``multiply`` / ``concat`` of dequantized 8-bit tensors: ``relax.qnn.add`` /
  ``multiply`` / ``concat``;
* ReLU / Clip (ONNX's ``maximum`` / ``minimum`` by constants) of a dequantized tensor: a
  requantize saturating at the quantized bounds (as epilogue of a conv2d / matmul too);
* ``mean`` (a global average pool) of a dequantized tensor: an int32 sum and a requantize;
* reshapes, transposes, max pooling (ops that commute with a positive affine map) of one
  dequantized tensor: the op on the integer tensor, plus a requantize when the output's
  parameters differ; a ``dequantize`` directly followed by ``quantize``: a requantize.

A chain that fits no rule stays float, and the report records why (its layer, its op and the
reason), as it does for float convolutions and matmuls on dequantized inputs whose result is
not quantized.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from tvm.ir.module import IRModule
from tvm.ir.transform import PassContext, module_pass

from ..dpl import Match, RewriteRule, is_op, wildcard
from ..expr import Call, Constant, Expr, Var
from ..struct_info import TensorStructInfo

__all__ = ["QDQToInteger", "qdq_to_integer", "qdq_rules", "QDQReport", "QDQEntry"]

_INT8 = ("int8", "uint8")
_MOVEMENT = ("relax.reshape", "relax.permute_dims", "relax.flatten", "relax.squeeze",
             "relax.expand_dims", "relax.nn.max_pool2d", "relax.strided_slice", "relax.take",
             "relax.tile", "relax.repeat", "relax.flip", "relax.broadcast_to", "relax.max",
             "relax.min")
#: movement ops a convolution / matmul input may pass through after its dequantize
_INPUT_MOVEMENT = ("relax.reshape", "relax.flatten", "relax.squeeze", "relax.expand_dims",
                   "relax.permute_dims")


@dataclasses.dataclass
class QDQEntry:
    """One chain: the layer (source name or variable), its float op, whether it became
    integer, and if not why."""

    layer: str
    op: str
    integer: bool
    reason: str = ""


@dataclasses.dataclass
class QDQReport:
    """What :func:`QDQToInteger` did, chain by chain."""

    entries: list = dataclasses.field(default_factory=list)
    _examined: set = dataclasses.field(default_factory=set, repr=False)  # ids of linear vars

    @property
    def integer(self) -> list:
        return [e for e in self.entries if e.integer]

    @property
    def float(self) -> list:
        return [e for e in self.entries if not e.integer]

    def __str__(self) -> str:
        lines = [f"QDQToInteger: {len(self.integer)} chain(s) integer, {len(self.float)} float"]
        for e in self.entries:
            state = "integer" if e.integer else f"float: {e.reason}"
            lines.append(f"  {e.layer:<32} {e.op:<22} {state}")
        return "\n".join(lines)


class _NotConvertible(Exception):
    """A chain that stays float (the message is the report's reason)."""


def _op_name(expr: Any) -> str:
    return getattr(getattr(expr, "op", None), "name", "") if isinstance(expr, Call) else ""


def _layer(var_or_call: Any, fallback: str) -> str:
    span = getattr(var_or_call, "span", None)
    name = getattr(span, "name", None) if span is not None else None
    if name:
        return str(name)
    return getattr(var_or_call, "name_hint", None) or fallback


class _Chain:
    """Walks a chain backwards from a quantize through the rewriter's bindings."""

    def __init__(self, m: Match):
        self.ctx = m.ctx
        self.linear: Optional[Expr] = None  # the conv2d / matmul result, once found
        self.op = ""

    def value(self, expr: Expr) -> Expr:
        seen = 0
        while isinstance(expr, Var) and seen < 64:
            v = self.ctx.lookup(expr)
            if v is None:
                break
            expr, seen = v, seen + 1
        return expr

    def single_use(self, var: Expr, what: str) -> None:
        if isinstance(var, Var) and self.ctx.num_uses(var) != 1:
            raise _NotConvertible(f"the {what} is also used elsewhere")

    def dequantized(self, expr: Expr, what: str, per_tensor: bool = True) -> Call:
        dq = self.value(expr)
        if _op_name(dq) != "relax.qnn.dequantize":
            raise _NotConvertible(f"the {what} is not dequantized ({_op_name(dq) or 'a value'})")
        dt = getattr(dq.args[0].struct_info, "dtype", "void")
        if dt not in _INT8:
            raise _NotConvertible(f"the {what} is {dt}, not an 8-bit integer")
        if per_tensor and (len(dq.attrs.scale) != 1 or len(dq.attrs.zero_point) != 1):
            raise _NotConvertible(f"the {what} is quantized per channel")
        return dq

    def constant(self, expr: Expr) -> Optional[np.ndarray]:
        """``expr``'s value when it is computed from constants only (numpy evaluators)."""
        from .numpy_eval import evaluate_with_numpy

        v = self.value(expr)
        if isinstance(v, Constant):
            return v.data.numpy() if hasattr(v.data, "numpy") else np.asarray(v.data)
        if not isinstance(v, Call) or not _op_name(v):
            return None
        args = []
        for a in v.args:
            sinfo = getattr(a, "struct_info", None)
            if not isinstance(sinfo, TensorStructInfo):
                args.append(_leaf_value(a))
                if args[-1] is None:
                    return None
                continue
            value = self.constant(a)
            if value is None:
                return None
            args.append(value)
        try:
            return np.asarray(evaluate_with_numpy(v, args))
        except Exception:  # noqa: BLE001 - not evaluable: not a constant
            return None


def _leaf_value(expr: Any) -> Any:
    """Shape / scalar arguments as numpy-evaluator values (None if not static)."""
    from ..expr import PrimValue, ShapeExpr

    if isinstance(expr, ShapeExpr):
        vals = [getattr(v, "value", None) for v in expr.values]
        return None if any(v is None for v in vals) else tuple(int(v) for v in vals)
    if isinstance(expr, PrimValue):
        return getattr(expr.value, "value", None)
    return None


def _scalar(values: tuple) -> Any:
    return values[0]


# -- conv2d / matmul with epilogue ---------------------------------------------------------------
def _linear_chain(chain: _Chain, q: Call, src: Expr, bounds: tuple) -> tuple[Expr, str]:
    """The integer form of quantize([activation]([bias +] conv2d|matmul(dq(x), dq(W))));
    ``src`` is what the activation (peeled off, its real ``bounds``) applies to."""
    from ..op import add, qnn

    qa = q.attrs
    out_dt = qa.out_dtype
    node = chain.value(src)
    bias = None
    if _op_name(node) == "relax.add":
        lhs, rhs = node.args
        for lin, b in ((lhs, rhs), (rhs, lhs)):
            if _op_name(chain.value(lin)) in ("relax.nn.conv2d", "relax.matmul"):
                value = chain.constant(b)
                if value is None:
                    raise _NotConvertible("the value added to the convolution / matmul is not "
                                          "a constant bias")
                chain.single_use(src, "bias add's result")
                bias, src = value, lin
                node = chain.value(lin)
                break
    name = _op_name(node)
    chain.linear, chain.op = src, name
    chain.single_use(src, f"{name.removeprefix('relax.')} result")
    x_dq, x_q = _dequantized_input(chain, node.args[0])
    w_expr = node.args[1]
    transpose_b = False
    if name == "relax.matmul" and _op_name(chain.value(w_expr)) == "relax.permute_dims":
        perm = chain.value(w_expr)
        axes = perm.attrs.axes
        if axes is not None and list(axes) == [1, 0]:
            w_expr, transpose_b = perm.args[0], True
    w_node = chain.value(w_expr)
    w = (chain.constant(w_node.args[0]) if _op_name(w_node) == "relax.qnn.dequantize"
         else None)
    xa = x_dq.attrs
    sx, zx = _scalar(xa.scale), _scalar(xa.zero_point)
    if w is None:
        if name != "relax.matmul":
            raise _NotConvertible("the weight is not a constant")
        # a computed right operand (a matmul of two activations): per tensor, through
        # reshapes and transposes, which commute with the affine map
        w_dq, w_q = _dequantized_input(chain, node.args[1], "right operand")
        if node.attrs.out_dtype not in ("void", "float32"):
            raise _NotConvertible(f"the matmul accumulates in {node.attrs.out_dtype}")
        wa, out_axis = w_dq.attrs, -1
        acc_scale = np.array([np.float32(sx) * np.float32(_scalar(wa.scale))], np.float32)
        acc = qnn.matmul(x_q, w_q, zx, _scalar(wa.zero_point))
    else:
        w_dq = chain.dequantized(w_expr, "weight", per_tensor=False)
        wa = w_dq.attrs
        if name == "relax.nn.conv2d":
            ca = node.attrs
            if ca.out_dtype not in ("void", "float32"):
                raise _NotConvertible(f"the convolution accumulates in {ca.out_dtype}")
            o_axis, out_axis = ca.kernel_layout.index("O"), ca.out_layout.index("C")
        else:
            if node.attrs.out_dtype not in ("void", "float32"):
                raise _NotConvertible(f"the matmul accumulates in {node.attrs.out_dtype}")
            if w.ndim != 2 or x_dq.args[0].struct_info.ndim < 2:
                raise _NotConvertible("the matmul is not [.., M, K] x [K, N] with a 2-d "
                                      "weight")
            o_axis, out_axis = (0 if transpose_b else 1), -1
        per_channel = len(wa.scale) > 1 or len(wa.zero_point) > 1
        if per_channel and wa.axis % w.ndim != o_axis:
            raise _NotConvertible(f"the weight is quantized along axis {wa.axis}, not its "
                                  "output channels")
        channels = w.shape[o_axis]
        sw = np.broadcast_to(np.asarray(wa.scale, np.float64), (channels,))
        acc_scale = np.float32(sx) * sw.astype(np.float32)
        w_q = Constant(w)
        if name == "relax.nn.conv2d":
            ca = node.attrs
            acc = qnn.conv2d(x_q, w_q, zx, wa.zero_point, ca.strides, ca.padding, ca.dilation,
                             ca.groups, ca.data_layout, ca.kernel_layout, ca.out_layout)
        else:
            acc = qnn.matmul(x_q, w_q, zx, wa.zero_point, transpose_b=transpose_b)
    if bias is not None:
        acc = add(acc, Constant(_bias_int32(bias, acc_scale, node.struct_info.ndim, out_axis)))
    zy = _scalar(qa.zero_point)
    out_min, out_max = _quantized_bounds(bounds, qa)
    out = qnn.requantize(acc, tuple(float(s) for s in acc_scale), 0, qa.scale, zy,
                         axis=out_axis, out_dtype=out_dt, out_min=out_min, out_max=out_max)
    return out, name


def _dequantized_input(chain: _Chain, expr: Expr, what: str = "input") -> tuple[Call, Expr]:
    """The per-tensor dequantize feeding a convolution / matmul input, possibly through
    reshapes and transposes (a dense layer's flatten), and the integer value in its place
    (the same moves applied to the integer tensor: they commute with the affine map)."""
    moves = []
    node = chain.value(expr)
    while _op_name(node) in _INPUT_MOVEMENT:
        chain.single_use(node.args[0], f"{_op_name(node).removeprefix('relax.')}'s input")
        moves.append(node)
        node = chain.value(node.args[0])
    dq = chain.dequantized(node if moves else expr, what)
    value = dq.args[0]
    for move in reversed(moves):
        value = Call(move.op, [value, *move.args[1:]], move.attrs, move.sinfo_args,
                     span=move.span)
    return dq, value


def _peel_activation(chain: _Chain, src: Expr, check: bool = True) -> tuple[Expr, tuple]:
    """``src`` without the ReLU / clip / maximum / minimum by constant scalars on top, and
    the real bounds ``(lo, hi)`` (None: open) they apply."""
    lo, hi = None, None
    while True:
        node = chain.value(src)
        name = _op_name(node)
        arg, new_lo, new_hi = None, None, None
        if name == "relax.nn.relu":
            arg, new_lo = node.args[0], 0.0
        elif name == "relax.clip":
            arg, new_lo, new_hi = node.args[0], node.attrs.min, node.attrs.max
        elif name in ("relax.maximum", "relax.minimum"):
            for a, b in (node.args, node.args[::-1]):
                value = chain.constant(b) if not isinstance(chain.value(a), Constant) else None
                if value is not None and value.size == 1:
                    arg = a
                    bound = float(value.reshape(-1)[0])
                    new_lo, new_hi = (bound, None) if name == "relax.maximum" else (None, bound)
                    break
        if arg is None:
            return src, (lo, hi)
        if check:
            chain.single_use(arg, f"{name.removeprefix('relax.')}'s input")
        # the outer bound applies last: clip(clip(v, a, b), c, d) = clip(v, max(a, c), min(b, d))
        lo = new_lo if lo is None else (lo if new_lo is None else max(lo, new_lo))
        hi = new_hi if hi is None else (hi if new_hi is None else min(hi, new_hi))
        src = arg


def _quantized_bounds(bounds: tuple, qa: Any) -> tuple[Optional[int], Optional[int]]:
    """Real activation bounds as saturation bounds of the quantized output: quantize is
    monotone, so quantize(clip(v, lo, hi)) = clip(quantize(v), quantize(lo), quantize(hi))."""
    from ..topi.qnn import INT_RANGES

    lo_t, hi_t = INT_RANGES[qa.out_dtype]
    sy, zy = np.float32(_scalar(qa.scale)), _scalar(qa.zero_point)

    def q(v: float) -> int:
        return int(np.clip(np.rint(np.float32(v) / sy) + zy, lo_t, hi_t))

    lo, hi = bounds
    out_min = None if lo is None else q(lo)
    out_max = None if hi is None else q(hi)
    if out_min is not None and out_max is not None and out_min > out_max:
        raise _NotConvertible(f"the activation's bounds [{lo}, {hi}] are empty")
    return out_min, out_max


def _bias_int32(bias: np.ndarray, acc_scale: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A float bias as int32 at the accumulator's scale, shaped to broadcast like it did."""
    channels = acc_scale.size
    full = bias.reshape((1,) * (ndim - bias.ndim) + bias.shape) if bias.ndim <= ndim else None
    axis = axis % ndim
    if full is None or any(d != 1 for i, d in enumerate(full.shape) if i != axis) \
            or full.shape[axis] not in (1, channels):
        raise _NotConvertible(f"the bias of shape {list(bias.shape)} is not per output channel")
    shape = [1] * ndim
    shape[axis] = channels
    vec = np.broadcast_to(full.reshape(-1), (channels,)).astype(np.float64)
    q = np.rint(vec / acc_scale.astype(np.float64))
    if np.abs(q).max(initial=0) >= 2**31:
        raise _NotConvertible("the bias does not fit int32 at the accumulator's scale")
    return q.astype(np.int32).reshape(shape)


# -- elementwise, concat, movement, requantize ---------------------------------------------------
def _other_chain(chain: _Chain, q: Call, src: Expr) -> tuple[Expr, str]:
    from ..op import astype, nn, qnn
    from ..op import sum as sum_
    from ..topi.qnn import INT_RANGES

    qa = q.attrs
    sy, zy, out_dt = _scalar(qa.scale), _scalar(qa.zero_point), qa.out_dtype
    node = chain.value(src)
    name = _op_name(node)
    if name == "relax.qnn.dequantize":
        dq = chain.dequantized(src, "input")
        sx, zx = _scalar(dq.attrs.scale), _scalar(dq.attrs.zero_point)
        return qnn.requantize(dq.args[0], sx, zx, sy, zy, out_dtype=out_dt), "dequantize"
    chain.single_use(src, f"{name.removeprefix('relax.')} result")
    if name in ("relax.add", "relax.multiply"):
        a, b = (chain.dequantized(v, f"operand {i}") for i, v in enumerate(node.args))
        build = qnn.add if name == "relax.add" else qnn.multiply
        return build(a.args[0], b.args[0], _scalar(a.attrs.scale), _scalar(a.attrs.zero_point),
                     _scalar(b.attrs.scale), _scalar(b.attrs.zero_point), sy, zy, out_dt), name
    if name == "relax.concat":
        tup = chain.value(node.args[0])
        fields = getattr(tup, "fields", None)
        if fields is None:
            raise _NotConvertible("the concatenated tensors are not a tuple literal")
        dqs = [chain.dequantized(f, f"tensor {i}") for i, f in enumerate(fields)]
        return qnn.concat([d.args[0] for d in dqs], [_scalar(d.attrs.scale) for d in dqs],
                          [_scalar(d.attrs.zero_point) for d in dqs], sy, zy,
                          node.attrs.axis, out_dt), name
    if name == "relax.mean":
        dq = chain.dequantized(node.args[0], "input")
        sx, zx = _scalar(dq.attrs.scale), _scalar(dq.attrs.zero_point)
        shape_in = getattr(dq.args[0].struct_info, "shape_values", None)
        if shape_in is None:
            raise _NotConvertible("the mean's input shape is unknown")
        axes = node.attrs.axis
        axes = range(len(shape_in)) if axes is None else [int(a) % len(shape_in) for a in axes]
        sizes = [getattr(shape_in[a], "value", None) for a in axes]
        if None in sizes:  # the other axes (a symbolic batch) do not enter the count
            raise _NotConvertible("the mean's reduced axes are not static")
        count = int(np.prod(sizes, dtype=np.int64))
        total = sum_(astype(dq.args[0], "int32"), node.attrs.axis, node.attrs.keepdims)
        # sum(x - zx) / count at scale sx: one requantize of the int32 sum
        return qnn.requantize(total, sx / count, zx * count, sy, zy, out_dtype=out_dt), name
    if name == "relax.nn.pad":
        dq = chain.dequantized(node.args[0], "input")
        sx, zx = _scalar(dq.attrs.scale), _scalar(dq.attrs.zero_point)
        pa = node.attrs
        value = 0
        if pa.pad_mode == "constant":
            exact = float(pa.pad_value) / float(np.float32(sx)) + zx
            if abs(exact - round(exact)) > 1e-3:
                raise _NotConvertible(f"the pad value {pa.pad_value} is not a quantized value")
            value = round(exact)
        x_dt = dq.args[0].struct_info.dtype
        lo, hi = INT_RANGES[x_dt]
        if not lo <= value <= hi:
            raise _NotConvertible(f"the pad value {pa.pad_value} is outside the input's range")
        padded = nn.pad(dq.args[0], list(pa.pad_width), pa.pad_mode, float(value))
        if (sx, zx) == (sy, zy) and x_dt == out_dt:
            return padded, name
        return qnn.requantize(padded, sx, zx, sy, zy, out_dtype=out_dt), name
    if name in _MOVEMENT:
        dq = chain.dequantized(node.args[0], "input")
        sx, zx = _scalar(dq.attrs.scale), _scalar(dq.attrs.zero_point)
        moved = Call(node.op, [dq.args[0], *node.args[1:]], node.attrs, node.sinfo_args,
                     span=node.span)
        if (sx, zx) == (sy, zy) and dq.args[0].struct_info.dtype == out_dt:
            return moved, name
        return qnn.requantize(moved, sx, zx, sy, zy, out_dtype=out_dt), name
    raise _NotConvertible(f"{name.removeprefix('relax.') or 'this value'} has no integer "
                          "form in QDQToInteger")


# -- the rule table and the pass ------------------------------------------------------------------
def qdq_rules(report: Optional[QDQReport] = None) -> list[RewriteRule]:
    """The rule table of :func:`QDQToInteger` (entries go to ``report``)."""
    report = report if report is not None else QDQReport()
    root = is_op("relax.qnn.quantize")(wildcard())

    def rewrite(q: Expr, m: Match) -> Optional[Expr]:
        chain = _Chain(m)
        node = chain.value(q.args[0])
        if not _is_chain(chain, node):
            return None  # a float value entering the quantized graph: not a QDQ chain
        op = _op_name(node)
        layer = _layer(node, _layer(q.args[0], op))
        try:
            if len(q.attrs.scale) != 1 or len(q.attrs.zero_point) != 1:
                raise _NotConvertible("the output is quantized per channel")
            if q.attrs.out_dtype not in _INT8:
                raise _NotConvertible(f"the output is {q.attrs.out_dtype}, not 8-bit")
            src, bounds = _peel_activation(chain, q.args[0])
            inner = chain.value(src)
            chain.op = _op_name(inner) or op
            if _is_linear(chain, inner):
                out, op = _linear_chain(chain, q, src, bounds)
            elif bounds != (None, None) and _op_name(inner) == "relax.qnn.dequantize":
                out, op = _activation_chain(chain, q, src, bounds), op
            else:
                try:
                    out, op = _other_chain(chain, q, src)
                    out = _clamped(out, _quantized_bounds(bounds, q.attrs), q.attrs.out_dtype)
                except _NotConvertible:
                    out = _lookup_table(chain, q)
                    if out is None:
                        raise
                    op = f"{op} (table)"
        except _NotConvertible as why:
            if chain.linear is not None:
                report._examined.add(id(chain.linear))
            op = chain.op or op
            report.entries.append(QDQEntry(layer, op.removeprefix("relax."), False, str(why)))
            return None
        report.entries.append(QDQEntry(layer, op.removeprefix("relax."), True))
        return out

    return [RewriteRule(root, rewrite, "qdq-to-integer")]


def _lookup_table(chain: _Chain, q: Call) -> Optional[Expr]:
    """quantize(f(dequantize(x))) for an 8-bit ``x`` and ``f`` a graph of elementwise ops
    whose only non-constant leaf is that dequantize (other operands scalar constants): a
    256-entry table of the quantized results, computed with the ops' own numpy semantics,
    indexed by ``x`` (LOGISTIC, TANH, HARD_SWISH, GELU, EXP, ... of an integer model).
    None when the value is not of that form."""
    from ..expr import const
    from ..op import add, astype, take
    from ..topi.qnn import INT_RANGES
    from .annotate_tir_op_pattern import OpPatternKind, op_pattern_of
    from .numpy_eval import get_numpy_evaluator

    leaf: Optional[Call] = None  # the dequantize every path ends at
    codes: Optional[np.ndarray] = None  # its 256 integer values
    refs: dict[int, int] = {}  # intermediate var -> its uses inside the graph
    inner_vars: dict[int, Var] = {}
    memo: dict[int, Any] = {}

    def values_of(expr: Expr, depth: int = 0) -> Any:
        nonlocal leaf, codes
        if isinstance(expr, Var):
            refs[id(expr)] = refs.get(id(expr), 0) + 1
        node = chain.value(expr)
        if id(node) in memo:
            return memo[id(node)]
        if depth > 32:
            raise _NotConvertible("too deep")
        if _op_name(node) == "relax.qnn.dequantize":
            dq = chain.dequantized(expr, "input")
            if leaf is None:
                leaf = dq
                dtype = dq.args[0].struct_info.dtype
                lo, hi = INT_RANGES[dtype]
                codes = np.arange(lo, hi + 1).astype(dtype)
            elif (dq.args[0] is not leaf.args[0] or dq.attrs.scale != leaf.attrs.scale
                  or dq.attrs.zero_point != leaf.attrs.zero_point):
                raise _NotConvertible("two quantized inputs")
            memo[id(node)] = get_numpy_evaluator(dq.op)(dq, codes)
            return memo[id(node)]
        if (not isinstance(node, Call) or not _op_name(node)
                or op_pattern_of(node.op) > OpPatternKind.BROADCAST
                or get_numpy_evaluator(node.op) is None):
            raise _NotConvertible("not elementwise")
        if isinstance(expr, Var):
            inner_vars[id(expr)] = expr
        out_shape = getattr(node.struct_info, "shape_values", None)
        args: list[Any] = []
        for a in node.args:
            if not isinstance(getattr(a, "struct_info", None), TensorStructInfo):
                value = _leaf_value(a)
                if value is None and a is not None:
                    raise _NotConvertible("a non-constant attribute operand")
                args.append(value)
                continue
            value = chain.constant(a)
            if value is not None:
                if value.size != 1:
                    raise _NotConvertible("a constant operand that is not a scalar")
                args.append(value.reshape(()))
                continue
            shape = getattr(a.struct_info, "shape_values", None)
            if shape is None or out_shape is None or len(shape) != len(out_shape):
                raise _NotConvertible("a broadcasting operand")
            args.append(values_of(a, depth + 1))
        dtype = node.struct_info.dtype
        value = np.asarray(get_numpy_evaluator(node.op)(node, *args)).reshape(-1)
        value = value.astype(dtype) if dtype != "void" else value
        memo[id(node)] = value
        return value

    try:
        with np.errstate(all="ignore"):
            values = values_of(q.args[0])
    except _NotConvertible:
        return None
    if leaf is None or not inner_vars:
        return None
    for key, var in inner_vars.items():
        if var is not q.args[0] and chain.ctx.num_uses(var) != refs.get(key, 0):
            return None  # an intermediate value also used outside the graph
    table = np.asarray(get_numpy_evaluator(q.op)(q, values)).reshape(-1)
    if table.size != codes.size:
        return None
    x = leaf.args[0]
    index = add(astype(x, "int32"), const(np.array(-int(codes[0]), "int32")))
    return take(Constant(table.astype(q.attrs.out_dtype)), index, axis=0)


def _activation_chain(chain: _Chain, q: Call, src: Expr, bounds: tuple) -> Expr:
    """quantize(activation(dequantize(x))): a requantize with the activation's bounds."""
    from ..op import qnn

    dq = chain.dequantized(src, "input")
    qa = q.attrs
    out_min, out_max = _quantized_bounds(bounds, qa)
    return qnn.requantize(dq.args[0], _scalar(dq.attrs.scale), _scalar(dq.attrs.zero_point),
                          _scalar(qa.scale), _scalar(qa.zero_point), out_dtype=qa.out_dtype,
                          out_min=out_min, out_max=out_max)


def _clamped(out: Expr, bounds: tuple, dtype: str) -> Expr:
    """``out`` limited to integer ``bounds`` (an activation after an integer op: exact, as
    quantize is monotone)."""
    from ..expr import const
    from ..op import maximum, minimum

    lo, hi = bounds
    if lo is not None:
        out = maximum(out, const(np.array(lo, dtype)))
    if hi is not None:
        out = minimum(out, const(np.array(hi, dtype)))
    return out


_LINEAR = ("relax.nn.conv2d", "relax.matmul")


def _is_linear(chain: _Chain, node: Any) -> bool:
    """A conv2d / matmul, or a bias add on one."""
    if _op_name(node) in _LINEAR:
        return True
    return _op_name(node) == "relax.add" and any(
        _op_name(chain.value(a)) in _LINEAR for a in node.args)


def _is_chain(chain: _Chain, node: Any, depth: int = 8) -> bool:
    """Whether ``node`` is computed from dequantized values (through at most ``depth`` float
    ops): the quantize it feeds ends a QDQ chain."""
    if _op_name(node) == "relax.qnn.dequantize":
        return True
    if not isinstance(node, Call) or depth == 0:
        return False
    if getattr(getattr(node, "struct_info", None), "dtype", "float32") not in (
            "float32", "float16", "void") and _op_name(node):
        return False
    args = list(node.args)
    if args and getattr(chain.value(args[0]), "fields", None) is not None:
        args = list(chain.value(args[0]).fields) + args[1:]  # concat's tuple
    return any(_is_chain(chain, chain.value(a), depth - 1) for a in args
               if not isinstance(chain.value(a), Constant))


def _unquantized_linear(func: Any, report: QDQReport) -> None:
    """Float conv2d / matmul on dequantized inputs left behind (their output is float)."""
    from ..expr import VarBinding

    values = {}
    for block in func.body.blocks:
        for b in block.bindings:
            if isinstance(b, VarBinding):
                values[id(b.var)] = b.value
    for block in func.body.blocks:
        for b in block.bindings:
            v = getattr(b, "value", None)
            name = _op_name(v)
            if name not in ("relax.nn.conv2d", "relax.matmul"):
                continue
            data = values.get(id(v.args[0]))
            if _op_name(data) != "relax.qnn.dequantize":
                continue
            layer = _layer(v, _layer(b.var, name))
            if id(b.var) not in report._examined:
                report.entries.append(QDQEntry(layer, name.removeprefix("relax."), False,
                                               "its result is not quantized again"))


def QDQToInteger(report: Optional[QDQReport] = None) -> Any:  # noqa: N802 - pass constructor
    """The pass (module docstring); ``report`` (a :class:`QDQReport`) receives the entries."""
    from ._graph_utils import map_relax_functions
    from ..dpl import PatternRewriter

    @module_pass(opt_level=0, name="QDQToInteger")
    def qdq_to_integer_pass(mod: IRModule, ctx: PassContext) -> IRModule:
        rep = report if report is not None else QDQReport()

        def one(func: Any, gv: Any) -> Any:
            new = PatternRewriter(qdq_rules(rep), mod).rewrite_function(func)
            _unquantized_linear(new, rep)
            return new

        return map_relax_functions(mod, one)

    return qdq_to_integer_pass


def qdq_to_integer(mod: IRModule) -> tuple[IRModule, QDQReport]:
    """``QDQToInteger`` applied to ``mod``, with its report."""
    report = QDQReport()
    return QDQToInteger(report)(mod), report
