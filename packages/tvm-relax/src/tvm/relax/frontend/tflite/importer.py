"""TFLite subgraph walk: tensors, constant buffers, symbolic batch, operator dispatch.

:func:`from_tflite` turns subgraph 0 of a ``.tflite`` model into an IRModule whose
``"main"`` takes the subgraph's inputs in order and returns its outputs (a Tuple when there
are several).  Every binding emitted for an operator carries a
:class:`~tvm.ir.span.Span` named after the operator's first output tensor.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from tvm import tir
from tvm.ffi.dtype import to_numpy_dtype
from tvm.ir.module import IRModule
from tvm.ir.span import SourceName, Span
from tvm.tir.expr import IntImm

from ...block_builder import BlockBuilder
from ...expr import Constant, Expr, TupleGetItem, Var
from ...struct_info import TensorStructInfo, TupleStructInfo
from .. import sanitize_name
from ..dataflow_split import split_dataflow_at_if
from .common import (
    CONVERTERS, CUSTOM_CONVERTERS, OpContext, OpNotImplemented, TFLiteImportError,
    default_options, dequantize_array, qnn_params, tflite_dtype,
)
from .model import ModelInfo, SubgraphInfo, TensorInfo, read_model

__all__ = ["from_tflite", "supported_ops", "TFLiteImporter"]

_NOT_GIVEN: Any = object()
#: operators whose integer tensors may carry quantization parameters
_QUANT_AWARE = {"QUANTIZE", "DEQUANTIZE"}
#: operators whose LiteRT integer kernels compute on the stored integers, ignoring the
#: scales (the converter gives their operands one scale and zero point): they run on the
#: integers as they are
_RAW_INTEGER = {"CAST", "NEG", "MAXIMUM", "MINIMUM", "SELECT", "SELECT_V2", "FLOOR_DIV",
                "FLOOR_MOD", "ONE_HOT", "MATRIX_DIAG", "MATRIX_SET_DIAG", "SCATTER_ND",
                "SPARSE_TO_DENSE"}
#: a full-integer model's constant weights at these input positions stay integer behind a
#: ``relax.qnn.dequantize``, so that QDQToInteger sees their quantization (other quantized
#: constants, such as int32 biases, are dequantized at import)
_QDQ_WEIGHTS = {"CONV_2D": 1, "DEPTHWISE_CONV_2D": 1, "FULLY_CONNECTED": 1,
                "TRANSPOSE_CONV": 1, "CONV_3D": 1}
#: ... and so do all constant 8-bit operands of these (QDQToInteger's rules want every
#: operand dequantized)
_QDQ_OPERANDS = {"ADD", "MUL", "CONCATENATION", "BATCH_MATMUL"}
#: dynamic-range ("hybrid") quantization: these operators take float activations and int8
#: constant weights (at these input positions), which are dequantized once, at import
_HYBRID_WEIGHTS = {
    "FULLY_CONNECTED": (1,), "CONV_2D": (1,), "DEPTHWISE_CONV_2D": (1,), "TRANSPOSE_CONV": (1,),
    "BATCH_MATMUL": (1,), "EMBEDDING_LOOKUP": (1,), "UNIDIRECTIONAL_SEQUENCE_RNN": (1, 2),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": (1, 2, 3, 4, 5, 6, 7, 8, 16),
}


def _require_tflite() -> Any:
    try:
        import tflite
    except ImportError as err:  # pragma: no cover - exercised without the extra
        raise ImportError(
            "the TFLite frontend needs the 'tflite' package: pip install 'tvm-relax[tflite]'"
        ) from err
    return tflite


def _load_converters() -> None:
    from . import ops_control, ops_detection, ops_math, ops_nn, ops_rnn, ops_tensor  # noqa: F401


def supported_ops() -> list[str]:
    """The TFLite builtin operators that have a converter."""
    _load_converters()
    return sorted(CONVERTERS)


class TFLiteImporter:
    """Converts one subgraph of a parsed model, emitting through a BlockBuilder."""

    def __init__(self, model: ModelInfo, shape_dict: Optional[dict[str, Any]] = None,
                 dtype_dict: Union[None, str, dict[str, str]] = None):
        self.model = model
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dtype_dict
        self.bb = BlockBuilder()
        self.values: dict[int, Expr] = {}
        self.sym_vars: dict[str, tir.Var] = {}
        self.subgraph: Optional[SubgraphInfo] = model.subgraphs[0] if model.subgraphs else None
        self.subgraph_desc = "0"
        self._source = SourceName("tflite")
        # with the model's own input shapes and dtypes, every tensor's must hold as declared
        self._check_shapes = self.shapes_as_declared = not self.shape_dict
        self._check_dtypes = not self.dtype_dict
        self._active: list[int] = []  # subgraphs being converted (IF branches nest)

    # -- tensors ---------------------------------------------------------------------------
    def tensor(self, index: int) -> TensorInfo:
        return self.subgraph.tensors[index]

    def tensor_dtype(self, index: int) -> str:
        t = self.tensor(index)
        return tflite_dtype(t.type, f"tensor {index} ({t.name!r})")

    def tensor_shape(self, index: int) -> list[int]:
        return list(self.tensor(index).shape)

    def _sym(self, name: str) -> tir.Var:
        if name not in self.sym_vars:
            self.sym_vars[name] = tir.Var(sanitize_name(name, "n"), "int64")
        return self.sym_vars[name]

    def _input_sinfo(self, index: int) -> TensorStructInfo:
        t = self.tensor(index)
        if isinstance(self.dtype_dict, str):
            dtype = self.dtype_dict
        elif self.dtype_dict and t.name in self.dtype_dict:
            dtype = self.dtype_dict[t.name]
        else:
            dtype = self.tensor_dtype(index)
        given = self.shape_dict.get(t.name, _NOT_GIVEN)
        if given is not _NOT_GIVEN:
            if not isinstance(given, (list, tuple)):
                raise TFLiteImportError(
                    f"graph input {t.name!r}: shape_dict entry {given!r} is not a shape "
                    "(a list of ints, str or None)")
            dims = list(given)
        else:
            dims = list(t.shape_signature if t.shape_signature is not None else t.shape)
            if t.shape_signature is not None and len(t.shape_signature) != len(t.shape):
                raise TFLiteImportError(
                    f"graph input {t.name!r}: shape_signature {t.shape_signature} and shape "
                    f"{t.shape} differ in rank")
        shape: list[Any] = []
        for i, d in enumerate(dims):
            if isinstance(d, str):
                shape.append(self._sym(d))
            elif d is None or int(d) < 0:
                shape.append(self._sym("batch" if i == 0 else f"{t.name}_dim{i}"))
            else:
                shape.append(int(d))
        return TensorStructInfo(shape, dtype)

    def _constant(self, index: int) -> Optional[Constant]:
        t = self.tensor(index)
        data = self.model.buffers[t.buffer] if 0 < t.buffer < len(self.model.buffers) else None
        if data is None:
            return None
        where = f"tensor {index} ({t.name!r})"
        if t.sparse:
            raise OpNotImplemented(f"{where}: sparse constant tensors are not supported")
        dtype = self.tensor_dtype(index)
        npdt = np.dtype(to_numpy_dtype(dtype))
        count = int(np.prod(t.shape, dtype=np.int64)) if t.shape else 1
        if len(data) != count * npdt.itemsize:
            raise TFLiteImportError(
                f"{where}: buffer {t.buffer} holds {len(data)} bytes, but shape {t.shape} of "
                f"{dtype} needs {count * npdt.itemsize}")
        array = np.frombuffer(data, dtype=npdt.newbyteorder("<")).astype(npdt).reshape(t.shape)
        return Constant(array)

    # -- subgraph --------------------------------------------------------------------------
    def import_subgraph(self, index: int = 0) -> IRModule:
        if not self.model.subgraphs:
            raise TFLiteImportError("the model has no subgraphs")
        self.subgraph = sg = self.model.subgraphs[index]
        self.subgraph_desc = f"{index}" + (f" {sg.name!r}" if sg.name else "")
        self._source = SourceName(sg.name or "tflite")
        for k in list(sg.inputs) + list(sg.outputs):
            if not 0 <= k < len(sg.tensors):
                raise TFLiteImportError(f"subgraph {self.subgraph_desc}: tensor index {k} is "
                                        f"out of range ({len(sg.tensors)} tensors)")
        names = [self.tensor(k).name for k in sg.inputs]
        for what, given in (("shape_dict", self.shape_dict), ("dtype_dict", self.dtype_dict)):
            unknown = sorted(set(given) - set(names)) if isinstance(given, dict) else []
            if unknown:
                raise TFLiteImportError(f"{what} names {unknown}, which are not inputs of "
                                        f"subgraph {self.subgraph_desc} (inputs: {names})")
        params = []
        for k in sg.inputs:
            t = self.tensor(k)
            if t.is_variable:
                raise OpNotImplemented(f"input tensor {t.name!r} is a variable (state)")
            var = Var(sanitize_name(t.name, "input"), self._input_sinfo(k))
            self.values[k] = var
            params.append(var)
        self._active = [index]
        with self.bb.function("main", params):
            with self.bb.dataflow():
                for i, op in enumerate(sg.operators):
                    self._convert(i, op)
                outputs = []
                for k in sg.outputs:
                    value = self._value(k, "subgraph output")
                    outputs.append(self.bb.emit_output(value, sanitize_name(
                        self.tensor(k).name, "out")))
            self.bb.emit_func_output(outputs[0] if len(outputs) == 1 else outputs)
        # a Relax If (from a TFLite IF with a run-time condition) must not sit in a
        # dataflow block: cut the blocks around it
        return split_dataflow_at_if(self.bb.get())

    def run_subgraph(self, index: int, inputs: list[Expr], where: str) -> list[Expr]:
        """Convert subgraph ``index`` inline, its inputs bound to ``inputs``; returns its
        outputs (how IF inlines its branches)."""
        if not 0 <= index < len(self.model.subgraphs):
            raise TFLiteImportError(f"{where}: subgraph {index} does not exist (the model has "
                                    f"{len(self.model.subgraphs)})")
        if index in self._active:
            raise OpNotImplemented(f"{where}: subgraph {index} calls itself (recursion)")
        sg = self.model.subgraphs[index]
        if len(inputs) != len(sg.inputs):
            raise TFLiteImportError(f"{where}: subgraph {index} takes {len(sg.inputs)} inputs, "
                                    f"given {len(inputs)}")
        saved = (self.subgraph, self.subgraph_desc, self.values)
        self.subgraph = sg
        self.subgraph_desc = f"{index}" + (f" {sg.name!r}" if sg.name else "")
        self.values = dict(zip(sg.inputs, inputs))
        self._active.append(index)
        try:
            for i, op in enumerate(sg.operators):
                self._convert(i, op)
            return [self._value(k, f"subgraph {self.subgraph_desc} output") for k in sg.outputs]
        finally:
            self._active.pop()
            self.subgraph, self.subgraph_desc, self.values = saved

    def _value(self, k: int, what: str) -> Expr:
        if k not in self.values:
            if not 0 <= k < len(self.subgraph.tensors):
                raise TFLiteImportError(f"{what}: tensor index {k} is out of range")
            c = self._constant(k)
            if c is None:
                t = self.tensor(k)
                raise TFLiteImportError(
                    f"{what}: tensor {k} ({t.name!r}) is neither an input, a constant nor "
                    "produced by an earlier operator")
            self.values[k] = c
        return self.values[k]

    def _convert(self, index: int, op: Any) -> None:
        conv, code, where = self._lookup(index, op)
        inputs, state = self._inputs(conv, op, where)
        dequantized = self._hybrid_weights(code.name, op, inputs)
        qdq_out: list[int] = []
        if code.name in _RAW_INTEGER:
            dequantized |= {k for k in op.inputs + op.outputs if self._quantized(k)}
        elif code.name not in _QUANT_AWARE:
            dequantized |= self._dequantize_inputs(code.name, op, inputs, state | dequantized)
            qdq_out = [k for k in op.outputs if self._quantized(k)]
        self._check_tensors(op, code.name, where, state | dequantized | set(qdq_out))
        options = self._options(conv, op, where)
        name = code.custom_code if code.name == "CUSTOM" else code.name
        ctx = OpContext(self, op, name, code.version, index, inputs, op.outputs, options,
                        custom=code.name == "CUSTOM")
        out_name = self.tensor(op.outputs[0]).name if op.outputs else f"{code.name}_{index}"
        span = Span(self._source, index + 1, 1, name=out_name)
        try:
            with self.bb.spanned(span):
                result = conv.impl(ctx)
                if qdq_out:
                    result = self._quantize_outputs(ctx, result)
                self._bind_outputs(ctx, result)
        except TFLiteImportError:
            raise
        except Exception as err:  # noqa: BLE001 - re-raised with the operator named
            raise TFLiteImportError(f"{where}: {type(err).__name__}: {err}") from err

    def _lookup(self, index: int, op: Any) -> tuple[Any, Any, str]:
        """The operator's converter, opcode and description (for errors)."""
        if not 0 <= op.opcode < len(self.model.opcodes):
            raise TFLiteImportError(f"operator {index} of subgraph {self.subgraph_desc}: "
                                    f"opcode index {op.opcode} is out of range")
        code = self.model.opcodes[op.opcode]
        where = (f"TFLite {code.name} (operator {index} of subgraph {self.subgraph_desc}, "
                 f"version {code.version})")
        if code.name == "CUSTOM":
            conv = CUSTOM_CONVERTERS.get(code.custom_code)
            if conv is None:
                raise OpNotImplemented(
                    f"TFLite custom operator {code.custom_code!r} (operator {index} of "
                    f"subgraph {self.subgraph_desc}) is not supported")
            where = (f"TFLite custom {code.custom_code} (operator {index} of subgraph "
                     f"{self.subgraph_desc}, version {code.version})")
        else:
            conv = CONVERTERS.get(code.name)
        if conv is None:
            raise OpNotImplemented(f"{where}: builtin operator {code.name} is not supported")
        if code.version > conv.max_version:
            raise OpNotImplemented(
                f"{where}: version {code.version} is not supported (the importer implements "
                f"{code.name} versions 1 to {conv.max_version})")
        return conv, code, where

    def _inputs(self, conv: Any, op: Any, where: str) -> tuple[list[Any], set[int]]:
        """The operator's input values (None for an omitted one) and the ids of the state
        tensors among them, given as their initial value."""
        inputs: list[Any] = []
        state: set[int] = set()
        for p, k in enumerate(op.inputs):
            if (p in conv.state_inputs and 0 <= k < len(self.subgraph.tensors)
                    and self.tensor(k).is_variable and k not in self.values):
                inputs.append(self._constant(k))  # its initial value; None: zeros
                state.add(k)
            else:
                inputs.append(None if k < 0 else self._value(k, where))
        return inputs, state

    def _check_tensors(self, op: Any, name: str, where: str, allowed: set[int]) -> None:
        """Refuse variable and quantized tensors (but those in ``allowed``)."""
        for k in op.inputs + op.outputs:
            if k < 0 or not 0 <= k < len(self.subgraph.tensors) or k in allowed:
                continue
            t = self.tensor(k)
            if t.is_variable:
                raise OpNotImplemented(f"{where}: variable tensor {t.name!r} is not supported")
            if (t.quant is not None and name not in _QUANT_AWARE
                    and self.tensor_dtype(k) not in ("float32", "float16", "float64")):
                raise OpNotImplemented(
                    f"{where}: quantized tensor {t.name!r} ({self.tensor_dtype(k)} with "
                    "scale/zero point) is not supported (quantized tensors are int8, uint8, "
                    "int16 or int32)")

    def _options(self, conv: Any, op: Any, where: str) -> Any:
        """The operator's options table, typed (schema defaults when it has none)."""
        import tflite

        if conv.options is None:
            return None
        expected = getattr(tflite.BuiltinOptions, conv.options)
        if op.options_type == 0 or op.options is None:
            return default_options(conv.options)
        if op.options_type != expected:
            raise TFLiteImportError(f"{where}: options of type {op.options_type}, expected "
                                    f"{conv.options} ({expected})")
        options = getattr(tflite, conv.options)()
        options.Init(op.options.Bytes, op.options.Pos)
        return options

    def _hybrid_weights(self, name: str, op: Any, inputs: list[Any]) -> set[int]:
        """Dequantize (in ``inputs``) the int8/uint8 constant weights of a dynamic-range
        quantized operator: one whose outputs are float32.  Returns their tensor ids."""
        done: set[int] = set()
        positions = _HYBRID_WEIGHTS.get(name, ())
        if not positions or not all(self.tensor_dtype(k) == "float32" for k in op.outputs):
            return done
        for p in positions:
            if p >= len(op.inputs) or op.inputs[p] < 0 or not isinstance(inputs[p], Constant):
                continue
            k = op.inputs[p]
            t = self.tensor(k)
            if t.quant is not None and self.tensor_dtype(k) in ("int8", "uint8"):
                inputs[p] = Constant(dequantize_array(inputs[p].data, t.quant))
                done.add(k)
        return done

    # -- full-integer models: each operator as dequantize -> float op -> quantize ----------
    def _quantized(self, k: int) -> bool:
        """Whether tensor ``k`` is an integer tensor with quantization parameters."""
        if not 0 <= k < len(self.subgraph.tensors):
            return False
        t = self.tensor(k)
        return t.quant is not None and self.tensor_dtype(k) in (
            "int8", "uint8", "int16", "int32")

    def _dequantize_inputs(self, name: str, op: Any, inputs: list[Any],
                           skip: set[int]) -> set[int]:
        """Replace (in ``inputs``) the quantized inputs of a full-integer operator by their
        real values: ``relax.qnn.dequantize`` of activations and weights, float constants for
        the other quantized constants.  Returns their tensor ids.  QDQToInteger later turns
        the dequantize -> float op -> quantize chains it knows into integer operators."""
        from ...op import qnn

        done: set[int] = set()
        for p, k in enumerate(op.inputs):
            if k in skip or inputs[p] is None or not self._quantized(k):
                continue
            t = self.tensor(k)
            value = inputs[p]
            integer_operand = (name in _QDQ_OPERANDS or _QDQ_WEIGHTS.get(name) == p) and \
                self.tensor_dtype(k) in ("int8", "uint8")
            if isinstance(value, Constant) and not integer_operand:
                inputs[p] = Constant(dequantize_array(np.asarray(value.data), t.quant))
            else:
                inputs[p] = self.bb.emit(qnn.dequantize(value, *qnn_params(t.quant)),
                                         sanitize_name(t.name, "dq") + "_dq")
            done.add(k)
        return done

    def _quantize_outputs(self, ctx: OpContext, result: Any) -> list[Expr]:
        """The converter's float results quantized to the quantized output tensors."""
        from ...op import qnn

        out = []
        for k, value in zip(ctx.output_ids, self._results(ctx, result)):
            if self._quantized(k):
                if not isinstance(value, (Var, Constant)):
                    value = self.bb.emit(value)
                if value.struct_info.dtype.startswith("float"):
                    value = qnn.quantize(value, *qnn_params(self.tensor(k).quant),
                                         self.tensor_dtype(k))
            out.append(value)
        return out

    def _results(self, ctx: OpContext, result: Any) -> list[Expr]:
        """A converter's result as one value per output: a list as it is, a single
        expression emitted once (a tuple-valued one split into its fields)."""
        if isinstance(result, (list, tuple)):
            return list(result)
        if not isinstance(result, (Var, Constant)):
            name = sanitize_name(self.tensor(ctx.output_ids[0]).name) if ctx.output_ids else ""
            result = self.bb.emit(result, name)
        if isinstance(result.struct_info, TupleStructInfo):
            return [TupleGetItem(result, i) for i in range(len(result.struct_info.fields))]
        return [result]

    def _bind_outputs(self, ctx: OpContext, result: Any) -> None:
        results = self._results(ctx, result)
        if len(results) != ctx.num_outputs:
            raise ctx.error(f"produced {len(results)} outputs, the model declares "
                            f"{ctx.num_outputs}")
        for k, value in zip(ctx.output_ids, results):
            t = self.tensor(k)
            if not isinstance(value, (Var, Constant)):
                value = self.bb.emit(value, sanitize_name(t.name))
            self._check_output(ctx, k, value)
            self.values[k] = value

    def _check_output(self, ctx: OpContext, k: int, value: Expr) -> None:
        """The converted value must have the tensor's dtype and (static) shape."""
        t = self.tensor(k)
        sinfo = value.struct_info
        dtype = self.tensor_dtype(k)
        if not isinstance(sinfo, TensorStructInfo):
            raise ctx.error(f"output {t.name!r} is not a tensor")
        if sinfo.dtype != dtype and self._check_dtypes:
            raise ctx.error(f"output {t.name!r} converted to {sinfo.dtype}, the model says "
                            f"{dtype}")
        if sinfo.shape_values is None or not t.shape or not self._check_shapes:
            return
        got = [int(d.value) if isinstance(d, IntImm) else None for d in sinfo.shape_values]
        sig = t.shape_signature or t.shape
        if len(got) != len(t.shape) and not (len(t.shape) == 0 and got == []):
            raise ctx.error(f"output {t.name!r} converted to rank {len(got)}, the model "
                            f"declares shape {t.shape}")
        for g, d, s in zip(got, t.shape, sig):
            if g is not None and s >= 0 and g != d:
                raise ctx.error(f"output {t.name!r} converted to shape {got}, the model "
                                f"declares {t.shape}")


def from_tflite(
    model: Any,
    shape_dict: Optional[dict[str, Any]] = None,
    dtype_dict: Union[None, str, dict[str, str]] = None,
    integer: bool = True,
) -> IRModule:
    """Import a TFLite model as an IRModule with a ``"main"`` function.

    ``model``: a path to a ``.tflite`` file, its bytes, or a parsed ``tflite.Model``.
    Subgraph 0 is imported; its input tensors become the parameters in order (a dimension
    the model's ``shape_signature`` gives as -1 becomes an int64 symbolic variable:
    ``batch`` for the first axis, ``<input>_dim<i>`` otherwise).  ``shape_dict`` maps input
    tensor names to shapes (ints; a str or None is a symbolic dimension) and ``dtype_dict``
    input names to dtypes (or one dtype for all).  Constant buffers become Constants; the
    model's NHWC layout is kept.  An unsupported builtin, custom operator, operator version
    or option raises :class:`OpNotImplemented` naming the operator, its index and the
    subgraph; a file that is not a valid model raises :class:`TFLiteImportError`.

    Quantized (full-integer) operators are imported as ``relax.qnn.dequantize`` -> float
    operator -> ``relax.qnn.quantize``; with ``integer`` (the default) ``QDQToInteger`` then
    turns the chains it knows (convolutions, dense layers, add, mul, concat, mean, pooling,
    movement, activations) into integer operators.  ``integer=False`` keeps that QDQ form
    (``relax.transform.qdq_to_integer`` reports chain by chain what becomes integer).
    """
    _require_tflite()
    _load_converters()
    info = read_model(model)
    try:
        mod = TFLiteImporter(info, shape_dict, dtype_dict).import_subgraph(0)
    except TFLiteImportError:
        raise
    except Exception as err:  # noqa: BLE001 - inconsistent records (a corrupt file)
        raise TFLiteImportError(
            f"cannot import the model: {type(err).__name__}: {err}") from err
    if integer and _has_op(mod, "relax.qnn.quantize"):
        from ...transform import DeadCodeElimination, QDQToInteger

        mod = DeadCodeElimination()(QDQToInteger()(mod))
    return mod


def _has_op(mod: IRModule, name: str) -> bool:
    """Whether a binding of ``mod`` calls operator ``name``."""
    from ...analysis import get_var2val

    return any(getattr(getattr(v, "op", None), "name", None) == name
               for v in get_var2val(mod).values())
