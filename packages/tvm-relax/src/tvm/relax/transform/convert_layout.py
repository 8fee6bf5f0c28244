"""ConvertLayout: run convolutions and pooling in a desired data layout.

::

    mod = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"],
                                         "relax.nn.max_pool2d": ["NHWC"]})(mod)

Inside each dataflow block every tensor variable gets an *actual* layout: its value is the
original (logical) tensor with the axes permuted by ``perm`` (identity at first).

* An operator listed in ``desired_layouts`` with layout attributes (``data_layout`` /
  ``kernel_layout`` for convolutions, ``layout`` for pooling) gets its inputs converted to
  the desired layouts (``permute_dims`` inserted; constant weights are transposed right
  away) and its layout attributes changed; its output is in the desired data layout.
  ``"default"`` as a kernel layout picks ``OIHW`` for ``NCHW`` data and ``HWIO`` for ``NHWC``.
* Layout-agnostic operators propagate the layout they meet: elementwise and broadcasting
  operators (an operand of lower rank, e.g. a per-channel bias ``(C, 1, 1)``, is reshaped
  to full rank and permuted the same way; scalars and all-ones shapes are left alone),
  pooling not listed (it adopts its input's layout when that layout is valid for it),
  softmax/log_softmax and reductions (``axis`` remapped), concat (all fields to one
  layout), batch_norm (``axis`` remapped) and ``permute_dims`` (composed with the layout).
* Every other operator, and every value leaving the dataflow block, gets its inputs back
  in their original layout.

Conversions are shared (a variable converted to one layout twice is converted once) and
composed with existing transposes, so ``permute_dims`` pairs that cancel out are never
emitted: ``conv2d -> relu -> conv2d`` in NHWC needs one transpose in and one out.  Unused
bindings are removed afterwards; FoldConstant folds the transposes of weights given as
non-constant variables bound to constants.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from tvm.ffi import structural_equal
from tvm.ir.module import IRModule
from tvm.ir.op import Op
from tvm.ir.transform import PassContext, module_pass

from ..expr import (
    Call,
    Constant,
    DataflowVar,
    Expr,
    Function,
    MatchCast,
    PrimValue,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ..struct_info import TensorStructInfo
from ._graph_utils import map_relax_functions

__all__ = ["ConvertLayout", "convert_layout"]

Perm = tuple[int, ...]
_DEFAULT_KERNEL = {"NCHW": "OIHW", "NHWC": "HWIO", "NCW": "OIW", "NWC": "WIO",
                   "NCDHW": "OIDHW", "NDHWC": "DHWIO"}
_REDUCE_OPS = ("sum", "mean", "max", "min", "prod", "variance", "std")


def _identity(n: int) -> Perm:
    return tuple(range(n))


def _perm_between(src: str, dst: str) -> Perm:
    """Axes of layout ``dst`` as positions in layout ``src`` (``NCHW``->``NHWC``: 0,2,3,1)."""
    return tuple(src.index(c) for c in dst)


def _ndim(expr: Any) -> int:
    sinfo = getattr(expr, "struct_info_", None)
    return sinfo.ndim if isinstance(sinfo, TensorStructInfo) else -1


def _layout_kind(op: Op) -> Optional[str]:
    """``"conv"`` (data/kernel/out layouts), ``"pool"`` (layout/out_layout) or None."""
    attrs_type = op.get_attr("attrs_type")
    names = {info.name for info in getattr(attrs_type, "_field_infos", ())}
    if {"data_layout", "kernel_layout", "out_layout"} <= names:
        return "conv"
    if {"layout", "out_layout"} <= names:
        return "pool"
    return None


def _check_desired(desired: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    if not isinstance(desired, Mapping):
        raise TypeError(f"ConvertLayout: desired_layouts must be a dict, got {type(desired).__name__}")
    out = {}
    for name, layouts in desired.items():
        op = Op.get(name)
        kind = _layout_kind(op)
        if kind is None:
            raise ValueError(
                f"ConvertLayout: {name} has no layout attributes; only convolution and pooling "
                "operators take a desired layout (others follow their inputs)"
            )
        layouts = (layouts,) if isinstance(layouts, str) else tuple(layouts)
        want = 2 if kind == "conv" else 1
        if not 1 <= len(layouts) <= want or not all(isinstance(s, str) for s in layouts):
            raise ValueError(
                f"ConvertLayout: {name} takes {want} layout string(s) "
                f"({'data, kernel' if want == 2 else 'data'}), got {layouts!r}"
            )
        out[name] = layouts
    return out


class _LayoutConverter(ExprMutator):
    def __init__(self, mod: Optional[IRModule], desired: dict[str, tuple[str, ...]]):
        super().__init__(mod)
        self.desired = desired
        self.perm: dict[int, Perm] = {}           # id(var) -> actual layout (non-identity)
        self.fields: dict[int, list] = {}         # id(tuple var) -> per-field perms
        self.origin: dict[int, Var] = {}          # id(converted var) -> var it converts
        self.permute_of: dict[int, tuple[Var, Perm]] = {}  # logical transposes seen
        self.cache: dict[tuple[int, Perm], Var] = {}
        self.const_cache: dict[tuple[int, Perm], Constant] = {}
        self.changed = False

    # -- layouts of values ----------------------------------------------------------------------
    def perm_of(self, expr: Any) -> Perm:
        return self.perm.get(id(expr)) or _identity(max(_ndim(expr), 0))

    def _remap(self, expr: Any) -> Any:
        if isinstance(expr, Var):
            return self.var_remap.get(expr, expr)
        if isinstance(expr, Tuple):
            fields = [self._remap(f) for f in expr.fields]
            return expr if all(a is b for a, b in zip(fields, expr.fields)) else Tuple(fields)
        return expr

    def convert(self, expr: Any, target: Perm) -> Any:
        """``expr`` (remapped) in layout ``target`` (relative to its logical layout)."""
        if isinstance(expr, Constant):
            if target == _identity(expr.data.ndim):
                return expr
            key = (id(expr), target)
            if key not in self.const_cache:
                self.const_cache[key] = Constant(np.asarray(np.transpose(expr.data, target), order="C"))
            return self.const_cache[key]
        if isinstance(expr, Tuple):
            return Tuple([self.convert(f, _identity(max(_ndim(f), 0))) for f in expr.fields])
        if not isinstance(expr, Var) or _ndim(expr) < 0:
            return expr
        var = self.origin.get(id(expr), expr)
        if self.perm_of(var) == target:
            return var
        key = (id(var), target)
        if key in self.cache:
            return self.cache[key]
        source = var
        wanted = target
        transposed = self.permute_of.get(id(var))
        if transposed is not None:  # var = permute_dims(src, a): go from src directly
            src, axes = transposed
            wanted = tuple(axes[t] for t in target)
            source = self.origin.get(id(src), src)
            if self.perm_of(source) == wanted:
                self.cache[key] = source
                return source
        from ..op import permute_dims

        current = self.perm_of(source)
        new = self.builder_.emit(permute_dims(source, [current.index(t) for t in wanted]),
                                 f"{var.name_hint}_t")
        self.changed = True
        self._set_perm(new, target)
        self.origin[id(new)] = var
        self.cache[key] = new
        return new

    def logical(self, expr: Any) -> Any:
        return self.convert(expr, _identity(max(_ndim(expr), 0)))

    def _set_perm(self, var: Var, perm: Optional[Perm]) -> None:
        if perm is not None and perm != _identity(len(perm)):
            self.perm[id(var)] = perm

    # -- bindings -------------------------------------------------------------------------------
    def visit_var_binding_(self, binding: VarBinding) -> None:
        if not self.builder_.current_block_is_dataflow():
            super().visit_var_binding_(binding)
            return
        with self.builder_.spanned(binding.span):  # the transforms it inserts name its layer
            self._visit_dataflow_binding(binding)

    def _visit_dataflow_binding(self, binding: VarBinding) -> None:
        value, perm, fields = self._rewrite(binding.value)
        value = self.builder_.normalize(value)
        var = binding.var
        if not isinstance(var, DataflowVar) and (perm is not None or fields is not None):
            tmp = self.builder_.emit(value)
            self._set_perm(tmp, perm)
            if fields is not None:
                self.fields[id(tmp)] = fields
            value = self.builder_.normalize(
                self.logical(tmp) if fields is None else Tuple(
                    [self.logical(self.builder_.emit(TupleGetItem(tmp, i)))
                     if f is not None else TupleGetItem(tmp, i) for i, f in enumerate(fields)])
            )
            perm = fields = None
        new_var = var
        if not structural_equal(var.struct_info, value.struct_info):
            new_var = type(var)(var.name_hint, value.struct_info, span=var.span)
            self.var_remap[var] = new_var
        if new_var is var and value is binding.value:
            self.builder_.emit_normalized(binding)
        else:
            self.builder_.emit_normalized(VarBinding(new_var, value, span=binding.span))
        self._set_perm(new_var, perm)
        if fields is not None:
            self.fields[id(new_var)] = fields
        if isinstance(value, Call) and getattr(value.op, "name", "") == "relax.permute_dims":
            src = value.args[0]
            ndim = _ndim(src)
            if perm is None and ndim >= 0:
                axes = value.attrs.axes
                axes = tuple(reversed(range(ndim))) if axes is None else tuple(a % ndim for a in axes)
                logical_axes = tuple(self.perm_of(src)[a] for a in axes)
                self.permute_of[id(new_var)] = (src, logical_axes)

    def visit_match_cast_(self, binding: Any) -> None:
        if not self.builder_.current_block_is_dataflow():
            super().visit_match_cast_(binding)
            return
        value = self.logical(self._remap(binding.value))
        if value is binding.value:
            self.builder_.emit_normalized(binding)
        else:
            self.builder_.emit_normalized(
                MatchCast(binding.var, value, binding.struct_info, span=binding.span))

    def _rewrite(self, value: Expr) -> tuple[Expr, Optional[Perm], Optional[list]]:
        """(new value, its layout, per-field layouts of a tuple value)."""
        if isinstance(value, TupleGetItem):
            tup = self._remap(value.tuple_value)
            fields = self.fields.get(id(tup))
            new = value if tup is value.tuple_value else TupleGetItem(tup, value.index)
            return new, (fields[value.index] if fields else None), None
        if isinstance(value, Call) and isinstance(value.op, Op):
            call = Call(value.op, [self._remap(a) for a in value.args], value.attrs,
                        value.sinfo_args, span=value.span)
            handled = self._handle(call)
            if handled is not None:
                self.changed = True
                return handled
            return self._default(call, value), None, None
        if isinstance(value, Call):
            call = Call(value.op, [self._remap(a) for a in value.args], value.attrs,
                        value.sinfo_args, span=value.span)
            return self._default(call, value), None, None
        if isinstance(value, (Var, Tuple)):
            return self.logical(self._remap(value)), None, None
        return self.visit_expr(value), None, None

    def _default(self, call: Call, original: Call) -> Call:
        args = [self.logical(a) for a in call.args]
        if all(a is b for a, b in zip(args, original.args)):
            return original
        return Call(call.op, args, call.attrs, call.sinfo_args, span=call.span)

    # -- operator handlers ----------------------------------------------------------------------
    def _handle(self, call: Call) -> Optional[tuple[Expr, Optional[Perm], Optional[list]]]:
        op = call.op
        name = op.name
        kind = _layout_kind(op)
        if name in self.desired and kind is not None:
            return self._layout_op(call, kind, self.desired[name])
        if kind == "pool":
            return self._follow_pool(call)
        pattern = op.get_attr("op_pattern")
        if pattern in ("elemwise", "broadcast"):
            return self._broadcast(call)
        short = name[len("relax."):]
        if short in ("nn.softmax", "nn.log_softmax"):
            return self._axis_op(call, "axis")
        if short in _REDUCE_OPS and pattern == "reduce":
            return self._reduce(call)
        if short == "concat":
            return self._concat(call)
        if short == "nn.batch_norm":
            return self._batch_norm(call)
        if short == "permute_dims":
            return self._permute(call)
        return None

    def _layout_op(self, call: Call, kind: str, layouts: tuple[str, ...]) -> Any:
        a = call.attrs
        if kind == "conv":
            src_data, src_kernel, src_out = a.data_layout, a.kernel_layout, a.out_layout
            data = src_data if layouts[0] == "default" else layouts[0]
            kernel = layouts[1] if len(layouts) > 1 else "default"
            if kernel == "default":
                kernel = src_kernel if data == src_data else _DEFAULT_KERNEL.get(data, src_kernel)
            self._check(call, data, src_data, "data")
            self._check(call, kernel, src_kernel, "kernel")
            args = [self.convert(call.args[0], _perm_between(src_data, data)),
                    self.convert(call.args[1], _perm_between(src_kernel, kernel)),
                    *[self.logical(x) for x in call.args[2:]]]
            attrs = a.with_fields(data_layout=data, kernel_layout=kernel, out_layout=data)
        else:
            src_data, src_out = a.layout, a.out_layout
            data = src_data if layouts[0] == "default" else layouts[0]
            self._check(call, data, src_data, "data")
            args = [self.convert(call.args[0], _perm_between(src_data, data))]
            attrs = a.with_fields(layout=data, out_layout=data)
        return Call(call.op, args, attrs, call.sinfo_args, span=call.span), \
            _perm_between(src_out, data), None

    @staticmethod
    def _check(call: Call, want: str, have: str, what: str) -> None:
        if sorted(want) != sorted(have):
            raise ValueError(
                f"ConvertLayout: the desired {what} layout {want!r} of {call.op.name} is not a "
                f"permutation of its {what} layout {have!r}"
            )

    def _follow_pool(self, call: Call) -> Any:
        x = call.args[0]
        perm = self.perm.get(id(x))
        if perm is None:
            return None
        a = call.attrs
        layout = "".join(a.layout[p] for p in perm)
        if "".join(c for c in layout if c in "DHW") != "".join(c for c in a.layout if c in "DHW"):
            return None  # spatial axes out of order: not a layout pooling accepts
        attrs = a.with_fields(layout=layout, out_layout=layout)
        return Call(call.op, [x], attrs, call.sinfo_args, span=call.span), \
            _perm_between(a.out_layout, layout), None

    def _broadcast(self, call: Call) -> Any:
        ranks = [_ndim(a) for a in call.args]
        if any(not isinstance(a, (Var, Constant, PrimValue)) for a in call.args):
            return None
        permuted = [a for a in call.args if id(a) in self.perm]
        if not permuted or any(r < 0 for a, r in zip(call.args, ranks) if not isinstance(a, PrimValue)):
            return None
        target = self.perm[id(permuted[0])]
        rank = len(target)
        if max(ranks) != rank:
            return None
        args = []
        for a, r in zip(call.args, ranks):
            if isinstance(a, PrimValue) or r == rank:
                args.append(a if isinstance(a, PrimValue) else self.convert(a, target))
                continue
            low = self._low_rank_operand(a, r, rank, target)
            if low is None:
                return None
            args.append(low)
        return Call(call.op, args, call.attrs, call.sinfo_args, span=call.span), target, None

    def _low_rank_operand(self, a: Any, r: int, rank: int, target: Perm) -> Any:
        """Operand of rank ``r`` < ``rank`` broadcast against a tensor in layout ``target``."""
        sinfo = a.struct_info
        values = sinfo.shape_values
        if values is None:
            return None
        if r == 0 or all(getattr(v, "value", None) == 1 for v in values):
            return a
        full = [1] * (rank - r) + list(values)
        if isinstance(a, Constant):
            data = a.data.reshape([1] * (rank - r) + list(a.data.shape))
            return Constant(np.asarray(np.transpose(data, target), order="C"))
        from ..op import permute_dims, reshape

        source = self.logical(a)
        lifted = self.builder_.emit(reshape(source, ShapeExpr(full)))
        return self.builder_.emit(permute_dims(lifted, list(target)))

    def _axis_op(self, call: Call, field: str) -> Any:
        x = call.args[0]
        perm = self.perm.get(id(x))
        if perm is None:
            return None
        axis = getattr(call.attrs, field) % len(perm)
        attrs = call.attrs.with_fields(**{field: perm.index(axis)})
        return Call(call.op, [x], attrs, call.sinfo_args, span=call.span), perm, None

    def _reduce(self, call: Call) -> Any:
        x = call.args[0]
        perm = self.perm.get(id(x))
        if perm is None:
            return None
        n = len(perm)
        axes = call.attrs.axis
        reduced = set(range(n)) if axes is None else {int(a) % n for a in axes}
        new_axes = None if axes is None else tuple(sorted(perm.index(a) for a in reduced))
        attrs = call.attrs.with_fields(axis=new_axes)
        if call.attrs.keepdims:
            out_perm: Optional[Perm] = perm
        else:
            kept = sorted(set(range(n)) - reduced)
            out_perm = tuple(kept.index(p) for p in perm if p not in reduced)
        return Call(call.op, [x], attrs, call.sinfo_args, span=call.span), out_perm, None

    def _concat(self, call: Call) -> Any:
        tup = call.args[0]
        if not isinstance(tup, Tuple) or call.attrs.axis is None:
            return None
        permuted = [f for f in tup.fields if id(f) in self.perm]
        if not permuted:
            return None
        target = self.perm[id(permuted[0])]
        if any(_ndim(f) != len(target) for f in tup.fields):
            return None
        fields = [self.convert(f, target) for f in tup.fields]
        axis = target.index(call.attrs.axis % len(target))
        attrs = call.attrs.with_fields(axis=axis)
        return Call(call.op, [Tuple(fields)], attrs, call.sinfo_args, span=call.span), target, None

    def _batch_norm(self, call: Call) -> Any:
        x = call.args[0]
        perm = self.perm.get(id(x))
        if perm is None:
            return None
        axis = call.attrs.axis % len(perm)
        attrs = call.attrs.with_fields(axis=perm.index(axis))
        args = [x, *[self.logical(p) for p in call.args[1:]]]
        return Call(call.op, args, attrs, call.sinfo_args, span=call.span), None, [perm, None, None]

    def _permute(self, call: Call) -> Any:
        x = call.args[0]
        perm = self.perm.get(id(x))
        if perm is None:
            return None
        n = len(perm)
        axes = call.attrs.axes
        axes = tuple(reversed(range(n))) if axes is None else tuple(a % n for a in axes)
        actual = [perm.index(a) for a in axes]
        if actual == list(range(n)):
            return x, None, None
        from ..op import permute_dims

        return permute_dims(x, actual), None, None


def convert_layout(
    func: Function, desired_layouts: Mapping[str, Sequence[str]], mod: Optional[IRModule] = None
) -> Function:
    """``func`` with its layout operators in ``desired_layouts`` (see the module docstring)."""
    from .canonicalize_bindings import canonicalize_bindings
    from .dead_code_elimination import remove_unused_bindings

    converter = _LayoutConverter(mod, _check_desired(desired_layouts))
    new = converter.visit_expr(func)
    if not converter.changed:
        return func
    # conversions leave aliases (``gv = lv_t``, a transpose that became the identity)
    return remove_unused_bindings(canonicalize_bindings(new, mod), mod)


def ConvertLayout(desired_layouts: Mapping[str, Sequence[str]]) -> Any:  # noqa: N802
    """The layout conversion pass (module docstring)."""
    desired = _check_desired(desired_layouts)

    @module_pass(opt_level=0, name="ConvertLayout")
    def convert(mod: IRModule, ctx: PassContext) -> IRModule:
        return map_relax_functions(mod, lambda f, gv: convert_layout(f, desired, mod))

    return convert
