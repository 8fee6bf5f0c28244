"""ONNX graph walk: inputs, initializers, symbolic dimensions, opset dispatch, folding.

:func:`from_onnx` turns an ``onnx.ModelProto`` into an IRModule whose ``"main"`` function
takes the graph inputs (unknown dimensions become int64 symbolic variables named after their
``dim_param``) and returns the graph outputs (a Tuple when there are several).  Every binding
emitted for a node, and its call, carries a :class:`~tvm.ir.span.Span` naming the node
(``node.name``, or ``<op_type>_<position>`` for an unnamed node; the source is the graph's
name): the layer names that kernels and profiles report.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from tvm import tir
from tvm.ir.module import IRModule
from tvm.ir.span import SourceName, Span
from tvm.tir.expr import IntImm, PrimExpr

from ...expr import Constant, Expr, ShapeExpr, Tuple, TupleGetItem, Var
from ...struct_info import ShapeStructInfo, TensorStructInfo, TupleStructInfo
from .. import sanitize_name as _sanitize
from ..dataflow_split import split_dataflow_at_if
from .common import (
    CONVERTERS,
    NodeContext,
    OnnxImportError,
    OpNotImplemented,
    SymValue,
    np_dtype_of,
    onnx_dtype_to_str,
    simplify_object_array,
)
from .folding import FoldScope, ImportBuilder, NotFoldable
from .ops_sequence import STRUCTURED_OPS, EmptyOptional, SeqValue, describe, is_structured

__all__ = ["from_onnx", "GraphImporter", "supported_ops"]

MIN_OPSET = 1
_FOLD_LIMIT = 1 << 22  # elements; larger results stay in the program
_REFERENCE_FOLD_LIMIT = 1 << 16  # input elements evaluated at import time by onnx.reference
_NOT_GIVEN: Any = object()  # no shape_dict entry
# DequantizeLinear of constant weights stays a relax.qnn.dequantize so that QDQToInteger sees
# the weights' quantization (relax.build's FoldConstant folds what stays float)
_NO_REFERENCE_FOLD = {"If", "Loop", "Scan", "SequenceMap", "Bernoulli", "Multinomial",
                      "Dropout", "Constant", "DequantizeLinear"}


def _empty_type() -> Any:
    from onnx import TypeProto

    return TypeProto()


def _require_onnx() -> Any:
    try:
        import onnx
    except ImportError as err:  # pragma: no cover - exercised without the extra
        raise ImportError(
            "the ONNX frontend needs the 'onnx' package: pip install 'tvm-relax[onnx]'"
        ) from err
    return onnx


def _load_converters() -> None:
    from . import (  # noqa: F401
        ops_attention, ops_control, ops_dynamic, ops_loss, ops_math, ops_misc, ops_nn, ops_quant,
        ops_reduce, ops_rnn, ops_sequence, ops_tensor,
    )


def supported_ops(domain: str = "") -> list[str]:
    """The ONNX op types (of ``domain``) that have a converter."""
    _load_converters()
    return sorted(op for (dom, op) in CONVERTERS if dom == domain)


def _initializer_array(tensor: Any) -> np.ndarray:
    """An initializer's value; one whose dims, dtype and data disagree (or that refers to
    external data that cannot be read) is an :class:`OnnxImportError` naming it."""
    from onnx import numpy_helper

    try:
        return np.asarray(numpy_helper.to_array(tensor))
    except Exception as err:  # noqa: BLE001 - onnx raises ValueError, TypeError, OSError...
        raise OnnxImportError(
            f"initializer {tensor.name!r} (dims {list(tensor.dims)}, data_type "
            f"{tensor.data_type}) cannot be read: {type(err).__name__}: {err}") from err


def _check_strings(message: Any, path: str = "model") -> None:
    """Refuse a model with a string field that is not UTF-8 (protobuf's Python runtime then
    hands out ``bytes``, which nothing downstream expects)."""
    for field, value in message.ListFields():
        if field.type == field.TYPE_STRING:
            for k, item in enumerate(value if _is_repeated(field) else [value]):
                if not isinstance(item, str):
                    where = f"{path}.{field.name}" + (f"[{k}]" if _is_repeated(field) else "")
                    raise OnnxImportError(f"{where} is not valid UTF-8 text: {item[:40]!r}")
        elif field.type == field.TYPE_MESSAGE:
            items = value if _is_repeated(field) else [value]
            for k, item in enumerate(items):
                _check_strings(item, f"{path}.{field.name}" + (
                    f"[{k}]" if _is_repeated(field) else ""))


def _is_repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf >= 5.x; older: the label
    return field.label == field.LABEL_REPEATED if repeated is None else bool(repeated)


class GraphImporter:
    """Walks one ONNX graph, emitting Relax bindings through a :class:`BlockBuilder`."""

    def __init__(
        self,
        shape_dict: Optional[dict[str, Any]] = None,
        dtype_dict: Union[None, str, dict[str, str]] = None,
        keep_params_in_input: bool = False,
        opset: Optional[int] = None,
    ):
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dtype_dict
        self.keep_params_in_input = keep_params_in_input
        self.opset_override = opset
        self.opsets: dict[str, int] = {}
        self.bb = ImportBuilder()
        self._fold_inputs: dict[int, Any] = {}
        self.values: dict[str, Any] = {}
        self.sym_vars: dict[str, tir.Var] = {}
        self.sym_owner: dict[int, Expr] = {}  # id(tir var) -> a tensor whose shape binds it
        self.params: list[Var] = []
        self._seq_inputs: list[tuple[str, Var, Optional[str]]] = []  # bound once in the function
        self.param_values: list[np.ndarray] = []
        self._schemas: dict[tuple[str, str, int], int] = {}
        self._source = SourceName("onnx")
        self._node_count = 0

    # -- model -----------------------------------------------------------------------------
    def import_model(self, model: Any) -> IRModule:
        onnx = _require_onnx()
        _load_converters()
        _check_strings(model)
        for entry in model.opset_import:
            domain = "" if entry.domain in ("", "ai.onnx") else entry.domain
            self.opsets[domain] = int(entry.version)
        if self.opset_override is not None:
            self.opsets[""] = int(self.opset_override)
        self.opsets.setdefault("", onnx.defs.onnx_opset_version())
        if self.opsets[""] < MIN_OPSET:
            raise OpNotImplemented(f"ONNX opset {self.opsets['']} is not supported")
        graph = model.graph
        self._source = SourceName(graph.name or "onnx")
        inputs, init_params = self._graph_inputs(graph)
        all_params = inputs + init_params
        attrs: dict[str, Any] = {}
        if self.keep_params_in_input:
            attrs["num_input"] = len(inputs)
        with self.bb.function("main", all_params, attrs=attrs):
            with self.bb.dataflow():
                self._bind_sequence_inputs()
                self.convert_nodes(graph.node)
                outputs = []
                for out in graph.output:
                    if out.name not in self.values:
                        raise OnnxImportError(f"graph output {out.name!r} is not produced by any node")
                    if isinstance(self.values[out.name], EmptyOptional):
                        raise OpNotImplemented(
                            f"graph output {out.name!r} is an empty optional, which has no "
                            "runtime value")
                    value = self.to_expr(self.values[out.name])
                    outputs.append(self.bb.emit_output(value, _sanitize(out.name, "out")))
            self.bb.emit_func_output(outputs[0] if len(outputs) == 1 else outputs)
        mod = split_dataflow_at_if(self.bb.get())
        if self.keep_params_in_input:
            func = mod["main"]
            mod = mod.with_function(mod.get_global_var("main"),
                                    func.with_attr("params", tuple(self.param_values)))
        return mod

    def _graph_inputs(self, graph: Any) -> tuple[list[Var], list[Var]]:
        init_names = set()
        init_params: list[Var] = []
        for tensor in graph.initializer:
            init_names.add(tensor.name)
            dtype = onnx_dtype_to_str(tensor.data_type, f"initializer {tensor.name!r}: ")
            array = _initializer_array(tensor).astype(np_dtype_of(dtype), copy=False)
            if self.keep_params_in_input:
                var = Var(_sanitize(tensor.name, "param"), TensorStructInfo(list(array.shape), dtype))
                init_params.append(var)
                self.param_values.append(array)
                self.values[tensor.name] = var
            else:
                self.values[tensor.name] = Constant(array)
        for tensor in graph.sparse_initializer:
            raise OpNotImplemented(f"sparse initializer {tensor.values.name!r} is not supported")
        inputs: list[Var] = []
        for info in graph.input:
            if info.name in init_names:
                continue
            var = self._graph_input(info)
            if var is not None:
                inputs.append(var)
        return inputs, init_params

    def _graph_input(self, info: Any) -> Optional[Var]:
        """The parameter for graph input ``info`` (None for a declared-empty optional);
        records its value.  Sequence inputs are tuples whose elements are bound later."""
        name, ttype = info.name, info.type
        kind = ttype.WhichOneof("value")
        given = self.shape_dict.get(name, _NOT_GIVEN)
        if kind == "optional_type":
            ttype = ttype.optional_type.elem_type
            kind = ttype.WhichOneof("value")
            if given is None:  # declared empty: no parameter, resolved at import time
                self.values[name] = EmptyOptional(f"graph input {name!r}")
                return None
        elif given is None:
            raise OnnxImportError(
                f"graph input {name!r}: shape_dict gives None, which declares an empty "
                f"optional, but the input is a {kind.replace('_type', '')}, not an optional")
        if kind == "sequence_type":
            sinfo, dtype = self._sequence_sinfo(name, ttype.sequence_type.elem_type, given)
            var = Var(_sanitize(name, "input"), sinfo)
            self._seq_inputs.append((name, var, dtype))
            return var
        if kind != "tensor_type":
            raise OpNotImplemented(
                f"graph input {name!r}: only tensor, sequence-of-tensor and optional inputs "
                f"are supported, got {kind}")
        var = Var(_sanitize(name, "input"), self._input_sinfo(name, ttype, given))
        self._own_dims(var.struct_info, var)
        self.values[name] = var
        return var

    def _own_dims(self, sinfo: Any, owner: Expr) -> None:
        for dim in sinfo.shape_values or ():
            if isinstance(dim, tir.Var):
                self.sym_owner.setdefault(id(dim), owner)

    def _input_dtype(self, name: str, elem_type: int) -> str:
        if isinstance(self.dtype_dict, str):
            return self.dtype_dict
        if self.dtype_dict and name in self.dtype_dict:
            return self.dtype_dict[name]
        return onnx_dtype_to_str(elem_type, f"graph input {name!r}: ")

    def _sequence_sinfo(self, name: str, elem: Any, given: Any) -> tuple[TupleStructInfo, str]:
        """A sequence input's tuple StructInfo: its length and element shapes come from
        ``shape_dict[name]`` (a list of element shapes, or an int: that many elements of
        the model's element type)."""
        if elem.WhichOneof("value") != "tensor_type":
            raise OpNotImplemented(
                f"graph input {name!r}: sequences of {elem.WhichOneof('value')} are not "
                "supported (only sequences of tensors)")
        how = (f"give its length in shape_dict, as a list of element shapes "
               f"(shape_dict[{name!r}] = [[2, 3], [4, 3]]) or a number of elements "
               f"(shape_dict[{name!r}] = 2)")
        if given is _NOT_GIVEN:
            raise OpNotImplemented(
                f"graph input {name!r} is a sequence, whose length must be known at import "
                f"time: {how}")
        dtype = self._input_dtype(name, elem.tensor_type.elem_type)
        if isinstance(given, (int, np.integer)) and not isinstance(given, bool):
            shapes: list[Any] = [_NOT_GIVEN] * int(given)
        elif isinstance(given, (list, tuple)):
            shapes = list(given)
        else:
            raise OnnxImportError(
                f"graph input {name!r}: shape_dict entry {given!r} is not valid for a "
                f"sequence; {how}")
        fields = [self._input_sinfo(f"{name}_{k}", elem,
                                    _NOT_GIVEN if shape is None else shape, dtype)
                  for k, shape in enumerate(shapes)]
        return TupleStructInfo(fields), dtype

    def _bind_sequence_inputs(self) -> None:
        for name, var, dtype in self._seq_inputs:
            elems = []
            for k, field in enumerate(var.struct_info.fields):
                elem = self.bb.emit(TupleGetItem(var, k), _sanitize(f"{name}_{k}"))
                self._own_dims(field, elem)
                elems.append(elem)
            self.values[name] = SeqValue(tuple(elems), dtype, var)

    def _sym(self, name: str) -> tir.Var:
        if name not in self.sym_vars:
            self.sym_vars[name] = tir.Var(_sanitize(name, "n"), "int64")
        return self.sym_vars[name]

    def _input_sinfo(self, name: str, ttype: Any, given: Any, dtype: Optional[str] = None
                     ) -> TensorStructInfo:
        """A tensor input's StructInfo: dtype ``dtype`` (default: from ``dtype_dict`` or the
        model), shape ``given`` (a shape_dict entry; ``_NOT_GIVEN``: the model's)."""
        if dtype is None:
            dtype = self._input_dtype(name, ttype.tensor_type.elem_type)
        if given is not _NOT_GIVEN:
            if not isinstance(given, (list, tuple)):
                raise OnnxImportError(
                    f"graph input {name!r}: shape_dict entry {given!r} is not a shape "
                    "(a list of ints, str or None)")
            shape = [
                self._sym(d) if isinstance(d, str)
                else self._sym(f"{name}_dim{i}") if d is None or (isinstance(d, int) and d < 0)
                else int(d)
                for i, d in enumerate(given)
            ]
            return TensorStructInfo(shape, dtype)
        if not ttype.tensor_type.HasField("shape"):
            raise OpNotImplemented(
                f"graph input {name!r} has unknown rank; give its shape in shape_dict"
            )
        shape: list[Any] = []
        for i, dim in enumerate(ttype.tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value >= 0:
                shape.append(int(dim.dim_value))
            elif dim.HasField("dim_param") and dim.dim_param and dim.dim_param != "?":
                shape.append(self._sym(dim.dim_param))
            else:  # unknown: a dimension of its own ("?" is how exporters write "unknown")
                shape.append(self._sym(f"{name}_dim{i}"))
        return TensorStructInfo(shape, dtype)

    # -- nodes -----------------------------------------------------------------------------
    def convert_nodes(self, nodes: Any) -> None:
        for node in nodes:
            self.convert_node(node)

    def convert_subgraph(self, graph: Any, inputs: list[Any]) -> list[Any]:
        """Inline subgraph ``graph`` with its inputs bound to ``inputs`` (values of this
        importer); outer-scope names stay visible.  Returns its output values."""
        saved = self.values
        self.values = dict(saved)
        try:
            for info, value in zip(graph.input, inputs):
                self.values[info.name] = value
            for tensor in graph.initializer:
                self.values[tensor.name] = Constant(_initializer_array(tensor))
            self.convert_nodes(graph.node)
            missing = [o.name for o in graph.output if o.name not in self.values]
            if missing:
                raise OnnxImportError(f"subgraph {graph.name!r}: outputs {missing} are not produced")
            return [self.values[o.name] for o in graph.output]
        finally:
            self.values = saved

    def _op_since_version(self, node: Any, opset: int) -> Optional[int]:
        key = (node.domain, node.op_type, opset)
        if key not in self._schemas:
            import onnx

            try:
                schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
                self._schemas[key] = schema.since_version
            except Exception:  # noqa: BLE001 - SchemaError: not defined at that opset
                self._schemas[key] = None
        return self._schemas[key]

    def convert_node(self, node: Any) -> None:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = self.opsets.get(domain)
        where = f"ONNX {node.op_type} (node {node.name!r}, opset {opset})"
        conv = CONVERTERS.get((domain, node.op_type))
        if conv is None:
            dom = f" in domain {domain!r}" if domain else ""
            raise OpNotImplemented(f"{where}: operator {node.op_type}{dom} is not supported")
        if opset is None:
            raise OpNotImplemented(f"{where}: the model imports no opset for domain {domain!r}")
        if domain == "" and self._op_since_version(node, opset) is None:
            raise OpNotImplemented(f"{where}: {node.op_type} is not defined at opset {opset}")
        if opset < conv.min_opset:
            raise OpNotImplemented(
                f"{where}: opset {opset} is not supported for {node.op_type} "
                f"(the importer supports opset {conv.min_opset} and newer)"
            )
        inputs = []
        for name in node.input:
            if name == "":
                inputs.append(None)
            elif name not in self.values:
                raise OnnxImportError(f"{where}: input {name!r} is not defined before the node")
            else:
                inputs.append(self.values[name])
        if any(is_structured(v) for v in inputs):
            if domain == "" and node.op_type == "Identity":  # a sequence / optional passes
                self.values[node.output[0]] = inputs[0]
                return
            if domain != "" or node.op_type not in STRUCTURED_OPS:
                i = next(i for i, v in enumerate(inputs) if is_structured(v))
                raise OpNotImplemented(
                    f"{where}: input {i} ({node.input[i]!r}) is {describe(inputs[i])}, but "
                    f"{node.op_type} takes tensors")
        ctx = NodeContext(self, node, inputs, opset)
        result = None
        self._node_count += 1
        span = Span(self._source, self._node_count, 1,
                    name=node.name or f"{node.op_type}_{self._node_count - 1}")
        try:
            with self.bb.spanned(span):
                if self._foldable(ctx):
                    result = self._fold(ctx, conv)
                if result is None:
                    result = self._reference_fold(ctx, opset)
                if result is None:
                    result = conv.impl(ctx)
                self._bind_outputs(ctx, result)
        except OnnxImportError:
            raise
        except Exception as err:  # noqa: BLE001 - re-raised with the node named
            raise OnnxImportError(f"{where}: {type(err).__name__}: {err}") from err

    def _foldable(self, ctx: NodeContext) -> bool:
        node = ctx.node
        return (any(v is not None for v in ctx.raw_inputs)
                and node.op_type not in _NO_REFERENCE_FOLD
                and not node.op_type.startswith("Random")
                and all(v is None or isinstance(v, (Constant, SymValue)) for v in ctx.raw_inputs))

    def _fold(self, ctx: NodeContext, conv: Any) -> Any:
        """The node's outputs computed at import time by converting it with the builder in
        folding mode (see :mod:`.folding`); None when some call cannot be evaluated."""
        scope = FoldScope(self.bb, _FOLD_LIMIT)
        self._fold_inputs = {
            id(v): scope.placeholder(v.values, v.dtype)
            for v in ctx.raw_inputs if isinstance(v, SymValue) and not v.is_static
        }
        self.bb.folding = scope
        try:
            result = conv.impl(ctx)
            outs = result if isinstance(result, (list, tuple)) else [result]
            folded = [self._folded_value(scope, o) for o in outs]
        except OnnxImportError:
            return None  # the normal conversion reports it
        except (NotFoldable, NotImplementedError):
            return None
        except Exception:  # noqa: BLE001 - not foldable: convert the node instead
            return None
        finally:
            self.bb.folding = None
            self._fold_inputs = {}
        return folded if isinstance(result, (list, tuple)) else folded[0]

    def _folded_value(self, scope: FoldScope, value: Any) -> Any:
        if value is None or isinstance(value, (np.ndarray, np.generic, SymValue, int, float)):
            return value
        if not isinstance(value, Expr):
            raise NotFoldable(f"a {type(value).__name__} result")
        expr = scope.fold(value)
        sym = scope.symbolic_value(expr)
        if sym is not None:
            return SymValue(sym, expr.struct_info.dtype)
        if isinstance(expr, Constant):
            return expr.data
        raise NotFoldable("a tuple result")

    def _reference_fold(self, ctx: NodeContext, opset: int) -> Optional[list[np.ndarray]]:
        """All inputs constant and small: evaluate the node with onnx's reference evaluator."""
        node = ctx.node
        if (not ctx.raw_inputs or node.op_type in _NO_REFERENCE_FOLD
                or node.op_type in STRUCTURED_OPS
                or node.op_type.startswith("Random") or node.domain not in ("", "ai.onnx")):
            return None
        feeds = {}
        total = 0
        for name, value in zip(node.input, ctx.raw_inputs):
            if value is None:
                continue
            array = self.const_value(value)
            if array is None:
                return None
            total += array.size
            feeds[name] = array
        if total > _REFERENCE_FOLD_LIMIT:
            return None
        try:
            from onnx import helper
            from onnx.reference import ReferenceEvaluator

            graph = helper.make_graph(
                [node], "fold",
                [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                 for n, a in feeds.items()],
                [helper.make_value_info(n, _empty_type()) for n in node.output if n])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
            outs = ReferenceEvaluator(model).run(None, feeds)
        except Exception:  # noqa: BLE001 - not foldable: convert the node instead
            return None
        results: list[Any] = []
        it = iter(outs)
        for n in node.output:
            out = next(it) if n else None
            if n and not isinstance(out, (np.ndarray, np.generic)):
                return None  # a sequence or an optional: the converter decides
            results.append(np.asarray(out) if n else None)
        if any(r is not None and (r.dtype == object or r.size > _FOLD_LIMIT) for r in results):
            return None
        return results

    def _bind_outputs(self, ctx: NodeContext, result: Any) -> None:
        names = list(ctx.node.output)
        if isinstance(result, (list, tuple)):
            results = list(result)
        else:
            if isinstance(result, Expr) and not isinstance(result, (Var, Constant)):
                result = self.bb.emit(result, _sanitize(names[0] if names else ""))
            if isinstance(result, Expr) and isinstance(result.struct_info, TupleStructInfo):
                n = len(result.struct_info.fields)
                results = [self.bb.emit(TupleGetItem(result, i), _sanitize(names[i]))
                           if i < len(names) and names[i] else None for i in range(n)]
            else:
                results = [result]
        for i, name in enumerate(names):
            if not name:
                continue
            if i >= len(results) or results[i] is None:
                raise OnnxImportError(f"{ctx.where()}: output {i} ({name!r}) was not produced")
            self.values[name] = self._store(results[i], name)

    def _store(self, value: Any, name: str) -> Any:
        if isinstance(value, SymValue):
            return SymValue(simplify_object_array(value.values, self.bb.analyzer), value.dtype) \
                if not value.is_static else Constant(value.to_numpy())
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                simplify_object_array(value, self.bb.analyzer)
                sym = SymValue(value)
                return Constant(sym.to_numpy()) if sym.is_static else sym
            return Constant(value if value.flags.c_contiguous else value.copy())
        if isinstance(value, (np.generic, int, float, bool)):
            return Constant(np.asarray(value))
        if isinstance(value, (Var, Constant, EmptyOptional)):
            return value
        if isinstance(value, SeqValue):
            if value.expr is not None:
                return value
            return SeqValue(tuple(self._store(e, f"{name}_{k}") for k, e in enumerate(value.elems)),
                            value.dtype)
        if isinstance(value, Expr):
            return self.bb.emit(value, _sanitize(name))
        raise OnnxImportError(f"converter for {name!r} produced {type(value).__name__}")

    # -- values ----------------------------------------------------------------------------
    def to_expr(self, value: Any) -> Expr:
        if isinstance(value, SeqValue):  # a Relax tuple
            if value.expr is not None:
                return value.expr
            return Tuple([self.to_expr(e) for e in value.elems])
        if isinstance(value, EmptyOptional):
            raise OpNotImplemented(f"{value.kind} is an empty optional, which has no runtime value")
        if isinstance(value, SymValue):
            if value.is_static:
                return Constant(value.to_numpy())
            placeholder = self._fold_inputs.get(id(value))
            if placeholder is not None:  # folding this node: the value is known
                return placeholder
            return self._materialize(value)
        if isinstance(value, np.ndarray):
            return Constant(value)
        return value

    def _materialize(self, value: SymValue) -> Expr:
        """A runtime tensor holding symbolic shape values (``relax.shape_to_tensor``)."""
        from ...op.call import shape_to_tensor
        from .common import R

        flat = list(value.values.reshape(-1))
        for v in flat:
            if isinstance(v, PrimExpr):
                for var in tir.free_vars(v) if hasattr(tir, "free_vars") else []:
                    if self.sym_owner.get(id(var)) is None:
                        raise OpNotImplemented(
                            f"cannot materialise symbolic value {v} as a tensor (no tensor binds {var})"
                        )
        dims = [IntImm("int64", int(v)) if not isinstance(v, PrimExpr) else
                v if v.dtype == "int64" else tir.Cast("int64", v) for v in flat]
        out = self.bb.emit(shape_to_tensor(ShapeExpr(dims)))
        shape = list(value.values.shape)
        if shape != [len(flat)]:
            out = self.bb.emit(R.reshape(out, ShapeExpr(shape)))
        if value.dtype != "int64":
            out = self.bb.emit(R.astype(out, value.dtype))
        return out

    def const_value(self, value: Any) -> Optional[np.ndarray]:
        if isinstance(value, Constant):
            return value.data
        if isinstance(value, SymValue) and value.is_static:
            return value.to_numpy()
        return None

    def known_value(self, value: Any) -> Optional[np.ndarray]:
        if isinstance(value, Constant):
            return value.data
        if isinstance(value, SymValue):
            return value.to_numpy() if value.is_static else value.values
        return None

    def _raw_sinfo(self, expr: Any) -> Any:
        sinfo = getattr(expr, "struct_info_", None)
        if sinfo is None and isinstance(expr, Expr):
            sinfo = self.bb.normalize(expr).struct_info
        return sinfo

    def sinfo_of(self, value: Any) -> Any:
        if isinstance(value, SymValue):
            return TensorStructInfo(list(value.values.shape), value.dtype)
        return self._raw_sinfo(value)

    def dtype_of(self, value: Any) -> str:
        sinfo = self.sinfo_of(value)
        if not isinstance(sinfo, TensorStructInfo):
            raise OnnxImportError(f"expected a tensor, got {type(sinfo).__name__}")
        return sinfo.dtype

    def ndim_of(self, value: Any) -> int:
        sinfo = self.sinfo_of(value)
        if isinstance(sinfo, ShapeStructInfo):
            return 1
        return sinfo.ndim if isinstance(sinfo, TensorStructInfo) else -1

    def shape_of(self, value: Any) -> Optional[list[Any]]:
        sinfo = self.sinfo_of(value)
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None:
            return None
        out: list[Any] = []
        for d in sinfo.shape_values:
            out.append(int(d.value) if isinstance(d, IntImm) else d)
        return out

    # -- attributes ------------------------------------------------------------------------
    def parse_attributes(self, node: Any) -> dict[str, Any]:
        from onnx import AttributeProto, numpy_helper

        out: dict[str, Any] = {}
        for a in node.attribute:
            t = a.type
            if t == AttributeProto.FLOAT:
                out[a.name] = float(a.f)
            elif t == AttributeProto.INT:
                out[a.name] = int(a.i)
            elif t == AttributeProto.STRING:
                out[a.name] = a.s.decode("utf-8", errors="replace")
            elif t == AttributeProto.TENSOR:
                out[a.name] = numpy_helper.to_array(a.t)
                out[a.name + "@dtype"] = int(a.t.data_type)
            elif t == AttributeProto.GRAPH:
                out[a.name] = a.g
            elif t == AttributeProto.FLOATS:
                out[a.name] = [float(v) for v in a.floats]
            elif t == AttributeProto.INTS:
                out[a.name] = [int(v) for v in a.ints]
            elif t == AttributeProto.STRINGS:
                out[a.name] = [s.decode("utf-8", errors="replace") for s in a.strings]
            elif t == AttributeProto.TENSORS:
                out[a.name] = [numpy_helper.to_array(v) for v in a.tensors]
            elif t == AttributeProto.GRAPHS:
                out[a.name] = list(a.graphs)
            elif t == AttributeProto.TYPE_PROTO:
                out[a.name] = a.tp
            elif t == AttributeProto.TYPE_PROTOS:
                out[a.name] = list(a.type_protos)
            else:
                out[a.name] = a
        return out


def from_onnx(
    model: Any,
    shape_dict: Optional[dict[str, Any]] = None,
    dtype_dict: Union[None, str, dict[str, str]] = None,
    keep_params_in_input: bool = False,
    opset: Optional[int] = None,
) -> IRModule:
    """Import an ONNX model as an IRModule with a ``"main"`` function.

    ``model``: an ``onnx.ModelProto`` or a path to a ``.onnx`` file.  ``shape_dict`` maps
    input names to shapes (ints; a str or None is a symbolic dimension) overriding the model's;
    for a sequence input (a Relax tuple parameter, whose length must be known at import time)
    it gives the length: a list of element shapes (``[[2, 3], [4, 3]]``; an element None takes
    the model's element shape) or an int (that many elements of the model's element shape);
    for an optional input None declares it empty (it is then not a parameter), otherwise the
    optional is present and the entry is that of its value.  ``dtype_dict`` maps input names
    to dtypes (or one dtype for all; for a sequence, its elements').  Unknown dimensions
    become int64 symbolic variables named after their ``dim_param`` (dims of the same name are
    one variable; an unnamed dim or one named ``?`` is a variable of its own).  Initializers become
    Constants, or, with ``keep_params_in_input``, parameters after the inputs (the function
    gets attrs ``num_input`` and ``params``, the initializer arrays in order; see
    :func:`tvm.relax.frontend.detach_params`).  ``opset`` overrides the model's default-domain
    opset.  Unsupported ops, attribute values, dtypes or opsets raise :class:`OpNotImplemented`
    naming the op type, the node and the opset.
    """
    onnx = _require_onnx()
    if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        model = onnx.load(model)
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"from_onnx: expected an onnx.ModelProto or a path, got {type(model).__name__}")
    importer = GraphImporter(shape_dict, dtype_dict, keep_params_in_input, opset)
    return importer.import_model(model)
