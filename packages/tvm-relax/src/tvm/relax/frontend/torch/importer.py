"""``torch.export`` program walk: signature, weights, symbolic sizes, ATen dispatch, spans.

:func:`from_exported_program` turns a ``torch.export.ExportedProgram`` into an IRModule whose
``"main"`` takes the program's user inputs and returns its user outputs.  Sizes marked with
``torch.export.Dim`` become int64 shape variables (named after torch's symbols, ``s0`` ...);
a finite upper bound of their range becomes the function's ``tir_var_upper_bound``, so one
compiled artifact serves every size in range with a statically planned memory pool.  Every
binding carries a :class:`~tvm.ir.span.Span` whose ``name`` is the module path of the layer
the node came from (``layer1.0.conv1``; the node's name at the top level) and whose source
line is the line of ``forward`` that produced it, so errors and profiles name model layers.
"""

from __future__ import annotations

import re
import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

from tvm import tir
from tvm.ir.module import IRModule
from tvm.ir.span import SourceName, Span
from tvm.tir.expr import IntImm, PrimExpr

from ...block_builder import BlockBuilder
from ...expr import Constant, Expr, PrimValue, ShapeExpr, Tuple, TupleGetItem, Var
from ...struct_info import TensorStructInfo, TupleStructInfo
from .common import (
    CONVERTERS,
    NodeContext,
    OpNotSupported,
    TorchImportError,
    lookup,
    op_name,
    packet_name,
    simplify_int,
    torch_dtype_to_str,
)

__all__ = ["from_exported_program", "ExportedProgramImporter", "supported_ops",
           "decomposition_table"]

ConvertMap = dict[Union[str, Any], Callable[[NodeContext], Any]]


def _require_torch() -> Any:
    try:
        import torch
    except ImportError as err:  # pragma: no cover - exercised without the extra
        raise ImportError(
            "the PyTorch frontend needs torch: pip install 'tvm-relax[torch]'") from err
    return torch


def _load_converters() -> None:
    from . import (  # noqa: F401
        ops_create, ops_dynamic, ops_index, ops_linalg, ops_linalg_factor, ops_math, ops_nn,
        ops_nn_extra, ops_random, ops_reduce, ops_rnn, ops_special_bessel, ops_special_gamma,
        ops_stats, ops_tensor,
    )
    from . import ops_complex, ops_fft  # noqa: F401  last: they extend the converters above


def supported_ops() -> list[str]:
    """The operator names (``aten.add.Tensor``, ``aten.relu`` for every overload ...) that
    have a converter."""
    _load_converters()
    return sorted(CONVERTERS)


def decomposition_table() -> dict[Any, Any]:
    """torch.export's default decompositions minus the operators converted whole.

    An operator with a converter for its exact overload (``aten.linear.default``,
    ``aten.scaled_dot_product_attention.default``, ``aten.layer_norm.default`` ...) stays one
    call, so it reaches Relax as ``matmul``/``attention``/``layer_norm`` instead of the
    dozen primitive ATen ops torch would decompose it into.
    """
    torch = _require_torch()
    _load_converters()
    table = torch.export.default_decompositions()
    for op in list(table):
        if op_name(op) in CONVERTERS:
            del table[op]
    return table


def _sanitize(name: str, default: str = "v") -> str:
    text = re.sub(r"[^0-9A-Za-z_]", "_", name or "")
    if not text:
        return default
    return "_" + text if text[0].isdigit() else text


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


class ExportedProgramImporter:
    """Walks one exported program's graph, emitting Relax bindings through a BlockBuilder."""

    def __init__(self, keep_params_as_input: bool = False,
                 custom_convert_map: Optional[ConvertMap] = None):
        self.keep_params_as_input = keep_params_as_input
        self.custom = {(k if isinstance(k, str) else op_name(k)): v
                       for k, v in (custom_convert_map or {}).items()}
        self.bb = BlockBuilder()
        self.values: dict[Any, Any] = {}  # fx node -> imported value
        self.sym_vars: dict[str, tir.Var] = {}
        self.params: list[Var] = []
        self.param_values: list[np.ndarray] = []
        self._source = SourceName("torch")

    # -- program ----------------------------------------------------------------------------
    def import_program(self, ep: Any) -> IRModule:
        torch = _require_torch()
        _load_converters()
        sig = ep.graph_signature
        self._source = SourceName(type(ep).__name__)
        specs = {spec.arg.name: spec for spec in sig.input_specs}
        inputs: list[Var] = []
        weights: list[Var] = []
        nodes = list(ep.graph.nodes)
        for node in nodes:
            if node.op != "placeholder":
                continue
            spec = specs.get(node.name)
            kind = spec.kind.name if spec is not None else "USER_INPUT"
            if kind == "USER_INPUT":
                inputs.append(self._user_input(node))
            elif kind == "TOKEN":  # an effect token (see _with_effects): carries no data
                self.values[node] = EFFECT_TOKEN
            elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                tensor = self._weight(ep, spec, kind)
                var = self._weight_value(node, tensor)
                if var is not None:
                    weights.append(var)
            else:
                raise OpNotSupported(
                    f"input {node.name!r} is a {kind.lower().replace('_', ' ')}, which the "
                    "importer does not support (only tensors, parameters, buffers and "
                    "constant tensors)")
        attrs: dict[str, Any] = {}
        bounds = self._upper_bounds(ep)
        if bounds:
            attrs["tir_var_upper_bound"] = bounds
        if self.keep_params_as_input:
            attrs["num_input"] = len(inputs)
        outputs: list[Any] = []
        with self.bb.function("main", inputs + weights, attrs=attrs):
            with self.bb.dataflow():
                for index, node in enumerate(nodes):
                    if node.op in ("call_function", "call_method"):
                        self._convert(node, index)
                    elif node.op == "get_attr":
                        self.values[node] = self._get_attr(ep, node)
                    elif node.op == "output":
                        outputs = self._outputs(sig, node)
            if len(outputs) == 1 and self._single_output(ep):
                result = outputs[0]
            else:
                result = Tuple(outputs)
            self.bb.emit_func_output(result)
        mod = self.bb.get()
        if self.keep_params_as_input:
            func = mod["main"]
            mod = mod.with_function(mod.get_global_var("main"),
                                    func.with_attr("params", tuple(self.param_values)))
        del torch
        return mod

    @staticmethod
    def _single_output(ep: Any) -> bool:
        spec = getattr(getattr(ep, "call_spec", None), "out_spec", None)
        if spec is None:
            return False
        is_leaf = getattr(spec, "is_leaf", None)
        return bool(is_leaf()) if callable(is_leaf) else spec.num_children == 0

    # -- inputs and weights -----------------------------------------------------------------
    def _user_input(self, node: Any) -> Var:
        val = node.meta.get("val")
        shape = getattr(val, "shape", None)
        if shape is None:
            raise OpNotSupported(
                f"input {node.name!r} is a {type(val).__name__}, not a tensor; the importer "
                "takes tensor inputs only (torch.export specializes Python scalars: pass them "
                "as 0-d tensors to keep them inputs)")
        dims = [self._input_dim(d, node.name) for d in shape]
        dtype = torch_dtype_to_str(val.dtype, f"input {node.name!r}: ")
        var = Var(_sanitize(node.name, "input"), TensorStructInfo(dims, dtype))
        self.values[node] = var
        return var

    def _input_dim(self, dim: Any, name: str) -> Any:
        expr = self.sym_expr(dim, define=True)
        if isinstance(expr, PrimExpr) and not isinstance(expr, tir.Var):
            raise OpNotSupported(
                f"input {name!r}: dimension {dim} is an expression of other sizes; give it "
                "its own torch.export.Dim")
        return expr

    @staticmethod
    def _weight(ep: Any, spec: Any, kind: str) -> Any:
        target = spec.target
        if kind == "PARAMETER" or (kind == "BUFFER" and target in ep.state_dict):
            tensor = ep.state_dict.get(target)
        else:
            tensor = ep.constants.get(target)
        if tensor is None:
            raise TorchImportError(f"the program has no value for {kind.lower()} {target!r}")
        return tensor

    def _weight_value(self, node: Any, tensor: Any) -> Optional[Var]:
        array = tensor_to_numpy(tensor, f"weight {node.name!r}")
        if not self.keep_params_as_input:
            self.values[node] = Constant(array)
            return None
        dtype = torch_dtype_to_str(tensor.dtype, f"weight {node.name!r}: ")
        var = Var(_sanitize(node.name, "param"), TensorStructInfo(list(array.shape), dtype))
        self.values[node] = var
        self.param_values.append(array)
        return var

    def _get_attr(self, ep: Any, node: Any) -> Any:
        obj: Any = ep.graph_module
        for part in str(node.target).split("."):
            obj = getattr(obj, part)
        torch = _require_torch()
        if not isinstance(obj, torch.Tensor):
            raise OpNotSupported(f"get_attr {node.target!r} is a {type(obj).__name__}, not a "
                                 "tensor (submodules such as control-flow branches are not "
                                 "supported)")
        return Constant(tensor_to_numpy(obj, f"attribute {node.target!r}"))

    def _upper_bounds(self, ep: Any) -> dict[str, int]:
        bounds: dict[str, int] = {}
        for sym, rng in (getattr(ep, "range_constraints", None) or {}).items():
            name = str(sym)
            upper = getattr(rng, "upper", None)
            try:
                value = int(upper)
            except (TypeError, ValueError, OverflowError, AttributeError):
                continue  # unbounded (int_oo; sympy's oo raises AttributeError)
            if value < 2 ** 62 and name in self.sym_vars:
                bounds[name] = value
        return bounds

    # -- symbolic sizes ---------------------------------------------------------------------
    def sym_expr(self, value: Any, define: bool = False) -> Any:
        """An int, or the int64 PrimExpr of a torch SymInt (its sympy expression).

        ``define`` creates shape variables for new symbols (input shapes); elsewhere a
        symbol that no input defines (a data-dependent size) is an error.
        """
        if isinstance(value, (bool, np.bool_)):
            return int(value)
        if isinstance(value, (int, np.integer)):
            return int(value)
        node = getattr(value, "node", None)
        expr = getattr(node, "expr", None)
        if expr is None:
            if hasattr(node, "maybe_as_int") and node.maybe_as_int() is not None:
                return int(node.maybe_as_int())
            raise TorchImportError(f"cannot read the size {value!r}")
        return self._sympy(expr, define)

    def _sympy(self, expr: Any, define: bool) -> Any:
        import sympy

        if isinstance(expr, (sympy.Integer, int)):
            return int(expr)
        if isinstance(expr, sympy.Symbol):
            name = str(expr)
            var = self.sym_vars.get(name)
            if var is None:
                if not define:
                    raise OpNotSupported(
                        f"size {name} is data-dependent (no input shape defines it); "
                        "data-dependent output sizes are not supported")
                var = tir.Var(name, "int64")
                self.sym_vars[name] = var
            return var
        args = [self._sympy(a, define) for a in expr.args]
        kind = type(expr).__name__
        if isinstance(expr, sympy.Add):
            out = args[0]
            for a in args[1:]:
                out = out + a
        elif isinstance(expr, sympy.Mul):
            out = args[0]
            for a in args[1:]:
                out = out * a
        elif kind == "FloorDiv":
            out = tir.floordiv(_prim(args[0]), _prim(args[1]))
        elif kind in ("Mod", "PythonMod"):
            out = tir.floormod(_prim(args[0]), _prim(args[1]))
        elif kind == "Max":
            out = args[0]
            for a in args[1:]:
                out = tir.max(_prim(out), _prim(a))
        elif kind == "Min":
            out = args[0]
            for a in args[1:]:
                out = tir.min(_prim(out), _prim(a))
        elif isinstance(expr, sympy.Pow) and isinstance(args[1], int) and args[1] >= 0:
            out = 1
            for _ in range(args[1]):
                out = out * args[0]
        else:
            raise OpNotSupported(f"symbolic size {expr} ({kind}) is not supported")
        return simplify_int(out, self.bb.analyzer)

    # -- nodes ------------------------------------------------------------------------------
    def layer_of(self, node: Any) -> str:
        stack = node.meta.get("nn_module_stack") or {}
        for path, _ in reversed(list(stack.values())):
            if path and not path.startswith("_"):
                return _clean_path(path)
        return ""

    def _span(self, node: Any, index: int) -> Span:
        source, line = self._source, index + 1
        trace = node.meta.get("stack_trace") or ""
        frames = _FRAME.findall(trace)
        if frames:
            source, line = SourceName(frames[-1][0]), int(frames[-1][1])
        return Span(source, line, 1, name=self.layer_of(node) or node.name)

    def _convert(self, node: Any, index: int) -> None:
        val = node.meta.get("val")
        if _is_sym(val):
            try:  # a size computed from sizes: its symbolic expression is the value
                self.values[node] = self.sym_expr(val)
                return
            except OpNotSupported:
                pass
        name = op_name(node.target)
        if name == "with_effects.default" and name not in self.custom:
            self.values[node] = self._with_effects(node)
            return
        conv = lookup(name, self.custom)
        if conv is None:
            raise self._unsupported(node, name)
        args = tuple(self._arg(a) for a in node.args)
        kwargs = {k: self._arg(v) for k, v in node.kwargs.items()}
        ctx = NodeContext(self, node, name, args, kwargs)
        try:
            with self.bb.spanned(self._span(node, index)):
                result = conv(ctx)
                self.values[node] = self._bind(ctx, result)
        except TorchImportError:
            raise
        except Exception as err:  # noqa: BLE001 - re-raised naming the node
            raise TorchImportError(f"{ctx.where()}: {type(err).__name__}: {err}") from err

    def _with_effects(self, node: Any) -> list[Any]:
        """``with_effects(token, op, *args)``: torch.export threads a token through ops with
        side effects to order them; the result is ``(token, *op's outputs)``.

        Tokens carry no data and are not imported (a token input is no parameter, a token
        output is not returned).  The effectful ops torch emits for error checks
        (``aten._linalg_check_errors`` after a ``linalg_*_ex`` op, ``aten._assert_async``)
        are dropped: a Relax function has no way to raise at run time, so the compiled
        program returns what the unchecked op computes (NaN/inf or a partial factor, as
        the ``*_ex`` variants do, whose ``info`` output reports the failure).  Any other
        effectful op is not supported.
        """
        inner = op_name(node.args[1]) if len(node.args) > 1 else "?"
        if inner in _CHECK_OPS:
            return [EFFECT_TOKEN, None]
        layer = self.layer_of(node)
        where = f"node {node.name!r}" + (f", layer {layer!r}" if layer else "")
        raise OpNotSupported(
            f"{inner} ({where}) has side effects (torch.export wrapped it in with_effects); "
            "the importer drops only the error-check ops "
            f"({', '.join(sorted(_CHECK_OPS))}) and supports no other effectful op")

    def _unsupported(self, node: Any, name: str) -> OpNotSupported:
        packet = packet_name(name)
        others = sorted(k for k in CONVERTERS if packet_name(k) == packet and k != name)
        layer = self.layer_of(node)
        where = f"node {node.name!r}" + (f", layer {layer!r}" if layer else "")
        hint = f" (converted overloads: {', '.join(others)})" if others else ""
        return OpNotSupported(
            f"{name} ({where}) has no converter{hint}; pass "
            f"custom_convert_map={{{name!r}: fn}} to from_exported_program, where fn(ctx) "
            "returns the Relax value (see tvm.relax.frontend.torch.NodeContext)")

    def _arg(self, value: Any) -> Any:
        if hasattr(value, "op") and hasattr(value, "meta"):  # an fx Node
            if value not in self.values:
                raise TorchImportError(f"node {value.name!r} is used before it is defined")
            return self.values[value]
        if isinstance(value, (list, tuple)):
            return type(value)(self._arg(v) for v in value)
        if isinstance(value, dict):
            return {k: self._arg(v) for k, v in value.items()}
        if _is_sym(value):
            return self.sym_expr(value)
        return value

    def _bind(self, ctx: NodeContext, result: Any) -> Any:
        if isinstance(result, Expr):
            expr = self.bb.normalize(result)
            if isinstance(expr, (Var, Constant)):
                out = expr
            else:
                out = self.bb.emit(expr, _sanitize(ctx.node.name))
            self._check_result(ctx, out)
            if isinstance(out.struct_info, TupleStructInfo):
                n = len(out.struct_info.fields)
                return [self.bb.emit(TupleGetItem(out, i)) for i in range(n)]
            return out
        if isinstance(result, (list, tuple)):
            return [r if not isinstance(r, Expr) or isinstance(r, (Var, Constant))
                    else self.bb.emit(r) for r in result]
        return result

    def _check_result(self, ctx: NodeContext, out: Any) -> None:
        """The converter's result has the rank and dtype torch recorded for the node."""
        val = ctx.meta()
        sinfo = out.struct_info
        if not isinstance(sinfo, TensorStructInfo) or not hasattr(val, "shape"):
            return
        want = torch_dtype_to_str(val.dtype, f"{ctx.where()}: ")
        if sinfo.dtype != want or (sinfo.ndim >= 0 and sinfo.ndim != len(val.shape)):
            raise TorchImportError(
                f"{ctx.where()}: the converter produced {sinfo.dtype} of rank {sinfo.ndim}, "
                f"torch recorded {want} of rank {len(val.shape)}")

    def to_expr(self, value: Any, dtype: str = "float32") -> Expr:
        """A Relax tensor for an imported value: Relax exprs pass, scalars become constants
        of ``dtype``, a symbolic size becomes a 0-d int64 tensor."""
        if isinstance(value, Expr):
            return value
        if isinstance(value, PrimExpr) and not isinstance(value, IntImm):
            from ... import op as _op

            vec = self.bb.emit(_op.shape_to_tensor(ShapeExpr([value])))
            return self.bb.emit(_op.astype(_op.reshape(vec, ()), dtype))
        if isinstance(value, IntImm):
            value = int(value.value)
        if isinstance(value, (bool, int, float, np.number, np.bool_)):
            from tvm.ffi.dtype import to_numpy_dtype

            return Constant(np.asarray(value, dtype=to_numpy_dtype(dtype)))
        raise TorchImportError(f"cannot use {value!r} as a tensor")

    def _outputs(self, sig: Any, node: Any) -> list[Any]:
        values = node.args[0]
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        out: list[Any] = []
        dropped = []
        for spec, value in zip(sig.output_specs, values):
            if spec.kind.name == "TOKEN":  # an effect token: no data (see _with_effects)
                continue
            if spec.kind.name != "USER_OUTPUT":
                dropped.append(f"{spec.kind.name.lower()} {spec.target or spec.arg.name}")
                continue
            if value is None:
                raise OpNotSupported("an output of None is not supported")
            imported = self._arg(value)
            if isinstance(imported, (int, PrimExpr)):
                imported = PrimValue(tir.IntImm("int64", imported)
                                     if isinstance(imported, int) else imported)
            elif isinstance(imported, (float, bool)):
                imported = self.to_expr(imported, "float32" if isinstance(imported, float)
                                        else "bool")
            elif isinstance(imported, list):
                imported = Tuple(imported)
            out.append(self.bb.emit_output(imported, _sanitize(spec.arg.name, "out")))
        if dropped:
            warnings.warn(
                "from_exported_program: the program mutates state "
                f"({', '.join(dropped)}); the imported function is inference-only and returns "
                "the user outputs without writing the mutations back", stacklevel=3)
        return out


class EffectToken:
    """The imported value of a torch.export effect token (it carries no data)."""

    def __repr__(self) -> str:
        return "EFFECT_TOKEN"


EFFECT_TOKEN = EffectToken()

# Effectful error checks dropped on import (see ExportedProgramImporter._with_effects).
_CHECK_OPS = frozenset({
    "aten._linalg_check_errors.default", "aten._assert_async.default",
    "aten._assert_async.msg", "aten._assert_scalar.default",
    "aten._functional_assert_async.msg",
})


def _prim(value: Any) -> PrimExpr:
    return tir.IntImm("int64", value) if isinstance(value, int) else value


def _is_sym(value: Any) -> bool:
    return type(value).__name__ in ("SymInt", "SymBool", "SymFloat")


def _clean_path(path: str) -> str:
    """``L['self'].layer1[0].conv1`` (dynamo's spelling) or ``layer1.0.conv1`` -> the
    dotted module path."""
    path = re.sub(r"^L\['self'\]\.?", "", path)
    path = re.sub(r"\[(?:'([^']*)'|(\d+))\]", lambda m: "." + (m.group(1) or m.group(2)), path)
    return path.strip(".")


def tensor_to_numpy(tensor: Any, what: str) -> np.ndarray:
    """A torch tensor's values as a numpy array of the matching dtype (bfloat16 and float8
    through ml_dtypes)."""
    from tvm.ffi.dtype import to_numpy_dtype

    dtype = torch_dtype_to_str(tensor.dtype, f"{what}: ")
    t = tensor.detach().cpu().resolve_conj().resolve_neg().contiguous()  # lazy conj/neg bits
    if dtype in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import torch

        bits = t.view(torch.int16 if dtype == "bfloat16" else torch.int8).numpy()
        return bits.view(to_numpy_dtype(dtype)).copy()
    return t.numpy().copy()


def from_exported_program(
    exported_program: Any,
    *,
    keep_params_as_input: bool = False,
    custom_convert_map: Optional[ConvertMap] = None,
    run_decompositions: bool = True,
) -> IRModule:
    """Import a ``torch.export.ExportedProgram`` as an IRModule with a ``"main"`` function.

    ``run_decompositions`` lowers the program to core ATen first, keeping whole the
    operators with a converter of their own (:func:`decomposition_table`).
    ``keep_params_as_input`` makes parameters and buffers function parameters after the
    user inputs (``num_input`` attribute; the values in the ``"params"`` attribute, see
    :func:`tvm.relax.frontend.detach_params`) instead of constants.  ``custom_convert_map``
    maps an operator (``torch.ops.aten.foo.default`` or ``"aten.foo.default"``, or
    ``"aten.foo"`` for every overload) to ``fn(ctx: NodeContext) -> relax value``, consulted
    before the built-in converters.
    """
    _require_torch()
    ep = exported_program
    if run_decompositions:
        ep = ep.run_decompositions(decomposition_table())
    importer = ExportedProgramImporter(keep_params_as_input, custom_convert_map)
    return importer.import_program(ep)
