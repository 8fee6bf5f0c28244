"""Writing small ``.tflite`` models from code, for tests and benchmarks.

:class:`ModelBuilder` collects tensors, constant buffers and operators of one subgraph and
serialises them with the ``tflite`` package's generated flatbuffer builder functions.
Options are given as ``(table name, {field: value})`` with the schema's CamelCase field
names (``("Conv2DOptions", {"Padding": 0, "StrideH": 2})``); list values become vectors.
Weights come from the builder's seeded generator, so a model is the same on every run.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import flatbuffers
import numpy as np
import tflite

_TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "bool": 6,
          "int16": 7, "int8": 9, "float64": 10}


class ModelBuilder:
    """One-subgraph TFLite model under construction."""

    def __init__(self, seed: int = 0, name: str = "main", legacy_opcodes: bool = False):
        self.legacy_opcodes = legacy_opcodes  # only deprecated_builtin_code, as old files
        self.rng = np.random.default_rng(seed)
        self.name = name
        self.tensors: list[dict[str, Any]] = []
        self.buffers: list[bytes] = [b""]  # buffer 0: the empty sentinel
        self.opcodes: list[tuple[int, int, str]] = []  # (builtin code, version, custom code)
        self.ops: list[dict[str, Any]] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.children: list[ModelBuilder] = []  # subgraphs 1, 2, ... (IF/WHILE bodies)

    def subgraph(self, name: str) -> "ModelBuilder":
        """A further subgraph (index ``len(children)`` + 1) sharing this model's buffers,
        operator codes and generator; give it tensors, operators, inputs and outputs."""
        sub = ModelBuilder(name=name, legacy_opcodes=self.legacy_opcodes)
        sub.rng, sub.buffers, sub.opcodes = self.rng, self.buffers, self.opcodes
        self.children.append(sub)
        return sub

    # -- tensors ---------------------------------------------------------------------------
    def tensor(self, shape: Sequence[int], dtype: str = "float32", name: Optional[str] = None,
               signature: Optional[Sequence[int]] = None, buffer: int = 0,
               quant: Optional[tuple[Sequence[float], Sequence[int], int]] = None,
               variable: bool = False) -> int:
        """A tensor of ``shape`` (``signature``: its shape_signature, -1 for unknown);
        ``quant`` = (scales, zero points, quantized dimension); ``variable``: a state
        tensor (an RNN's), kept by the interpreter across calls."""
        self.tensors.append(dict(shape=[int(d) for d in shape], dtype=dtype,
                                 name=name or f"t{len(self.tensors)}", buffer=buffer,
                                 signature=None if signature is None else list(signature),
                                 quant=quant, variable=variable))
        return len(self.tensors) - 1

    def input(self, shape: Sequence[int], dtype: str = "float32", name: Optional[str] = None,
              signature: Optional[Sequence[int]] = None) -> int:
        t = self.tensor(shape, dtype, name or f"input{len(self.inputs)}", signature)
        self.inputs.append(t)
        return t

    def const(self, value: Any, dtype: Optional[str] = None, name: Optional[str] = None,
              quant: Optional[tuple] = None) -> int:
        """A constant tensor holding ``value`` (little-endian bytes in a new buffer)."""
        arr = np.asarray(value, dtype=dtype) if dtype else np.asarray(value)
        if arr.dtype == np.float64 and dtype is None:
            arr = arr.astype(np.float32)
        if arr.dtype == np.int64 and dtype is None:
            arr = arr.astype(np.int32)
        self.buffers.append(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
        return self.tensor(arr.shape, str(arr.dtype), name or f"c{len(self.tensors)}",
                           buffer=len(self.buffers) - 1, quant=quant)

    def weights(self, shape: Sequence[int], scale: float = 0.5) -> int:
        """A float32 constant of seeded normal values."""
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32))

    # -- operators -------------------------------------------------------------------------
    def _opcode(self, builtin: str, version: int, custom: str = "") -> int:
        code = getattr(tflite.BuiltinOperator, builtin)
        key = (code, version, custom)
        if key not in self.opcodes:
            self.opcodes.append(key)
        return self.opcodes.index(key)

    def op(self, builtin: str, inputs: Sequence[int], outputs: Sequence[int],
           options: Optional[tuple[str, dict[str, Any]]] = None, version: int = 1,
           custom_code: str = "", custom_options: Optional[dict[str, Any]] = None) -> list[int]:
        """Append operator ``builtin`` (``"CUSTOM"`` with ``custom_code`` and
        ``custom_options``, written as a flexbuffer map); -1 in ``inputs`` is an omitted
        optional input.  Returns ``outputs``."""
        custom = b""
        if custom_options is not None:
            from flatbuffers import flexbuffers

            custom = bytes(flexbuffers.Dumps(custom_options))
        self.ops.append(dict(opcode=self._opcode(builtin, version, custom_code),
                             inputs=list(inputs), outputs=list(outputs), options=options,
                             custom=custom))
        return list(outputs)

    def unary(self, builtin: str, x: int, out_shape: Optional[Sequence[int]] = None,
              out_dtype: str = "float32", **kw: Any) -> int:
        """An operator with one output of ``out_shape`` (default: ``x``'s shape)."""
        y = self.tensor(self.tensors[x]["shape"] if out_shape is None else out_shape, out_dtype)
        self.op(builtin, [x], [y], **kw)
        return y

    def output(self, *tensors: int) -> None:
        self.outputs.extend(tensors)

    # -- serialisation ---------------------------------------------------------------------
    def build(self, external_buffers: bool = False) -> bytes:
        """The model's bytes; ``external_buffers`` stores the constant data after the
        flatbuffer (``Buffer.offset``/``size``, as converters do for models over 2 GB)."""
        if not external_buffers:
            return self._build(None)
        probe = self._build([2] * len(self.buffers))  # same size: the fields are fixed width
        offsets, pos = [], -(-len(probe) // 16) * 16
        for data in self.buffers:
            offsets.append(pos if data else 0)
            pos = -(-(pos + len(data)) // 16) * 16
        head = self._build(offsets)
        assert len(head) == len(probe)
        out = bytearray(head)
        for data, off in zip(self.buffers, offsets):
            if data:
                out.extend(b"\0" * (off - len(out)))
                out.extend(data)
        return bytes(out)

    def _build(self, offsets: Optional[list[int]]) -> bytes:
        b = flatbuffers.Builder(1024)
        buffers = [self._buffer(b, data, None if offsets is None else offsets[k])
                   for k, data in enumerate(self.buffers)]
        subgraphs = [sg._subgraph(b) for sg in [self, *self.children]]
        codes = []
        for code, version, custom in self.opcodes:
            custom_s = b.CreateString(custom) if custom else None
            tflite.OperatorCodeStart(b)
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            if not self.legacy_opcodes:
                tflite.OperatorCodeAddBuiltinCode(b, code)
            tflite.OperatorCodeAddVersion(b, version)
            if custom_s is not None:
                tflite.OperatorCodeAddCustomCode(b, custom_s)
            codes.append(tflite.OperatorCodeEnd(b))
        codes_v = _vector(b, tflite.ModelStartOperatorCodesVector, codes, b.PrependUOffsetTRelative)
        subs_v = _vector(b, tflite.ModelStartSubgraphsVector, subgraphs, b.PrependUOffsetTRelative)
        bufs_v = _vector(b, tflite.ModelStartBuffersVector, buffers, b.PrependUOffsetTRelative)
        desc = b.CreateString("tests/tflite/model_builder.py")
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, codes_v)
        tflite.ModelAddSubgraphs(b, subs_v)
        tflite.ModelAddBuffers(b, bufs_v)
        tflite.ModelAddDescription(b, desc)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def _subgraph(self, b: flatbuffers.Builder) -> int:
        tensors = [self._tensor(b, t) for t in self.tensors]
        ops = [self._operator(b, o) for o in self.ops]
        name = b.CreateString(self.name)
        sub_tensors = _vector(b, tflite.SubGraphStartTensorsVector, tensors, b.PrependUOffsetTRelative)
        sub_in = _vector(b, tflite.SubGraphStartInputsVector, self.inputs, b.PrependInt32)
        sub_out = _vector(b, tflite.SubGraphStartOutputsVector, self.outputs, b.PrependInt32)
        sub_ops = _vector(b, tflite.SubGraphStartOperatorsVector, ops, b.PrependUOffsetTRelative)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, sub_tensors)
        tflite.SubGraphAddInputs(b, sub_in)
        tflite.SubGraphAddOutputs(b, sub_out)
        tflite.SubGraphAddOperators(b, sub_ops)
        tflite.SubGraphAddName(b, name)
        return tflite.SubGraphEnd(b)

    def _buffer(self, b: flatbuffers.Builder, data: bytes, offset: Optional[int] = None) -> int:
        if offset is not None and data:
            tflite.BufferStart(b)
            tflite.BufferAddOffset(b, offset)
            tflite.BufferAddSize(b, len(data))
            return tflite.BufferEnd(b)
        vec = None
        if data:
            b.StartVector(1, len(data), 16)  # aligned, as the converter writes them
            b.head -= len(data)
            b.Bytes[b.head:b.head + len(data)] = data
            vec = b.EndVector()
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        return tflite.BufferEnd(b)

    def _tensor(self, b: flatbuffers.Builder, t: dict[str, Any]) -> int:
        name = b.CreateString(t["name"])
        shape = _vector(b, tflite.TensorStartShapeVector, t["shape"], b.PrependInt32)
        sig = (None if t["signature"] is None else
               _vector(b, tflite.TensorStartShapeSignatureVector, t["signature"], b.PrependInt32))
        quant = None
        if t["quant"] is not None:
            scales, zps, dim = t["quant"]
            sv = _vector(b, tflite.QuantizationParametersStartScaleVector, list(scales),
                         b.PrependFloat32)
            zv = _vector(b, tflite.QuantizationParametersStartZeroPointVector, list(zps),
                         b.PrependInt64)
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, sv)
            tflite.QuantizationParametersAddZeroPoint(b, zv)
            tflite.QuantizationParametersAddQuantizedDimension(b, dim)
            quant = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        if sig is not None:
            tflite.TensorAddShapeSignature(b, sig)
        tflite.TensorAddType(b, _TYPES[t["dtype"]])
        tflite.TensorAddBuffer(b, t["buffer"])
        tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        if t["variable"]:
            tflite.TensorAddIsVariable(b, True)
        return tflite.TensorEnd(b)

    def _operator(self, b: flatbuffers.Builder, o: dict[str, Any]) -> int:
        opts = None
        if o["options"] is not None:
            table, fields = o["options"]
            vectors = {k: _vector(b, getattr(tflite, f"{table}Start{k}Vector"), v, b.PrependInt32)
                       for k, v in fields.items() if isinstance(v, (list, tuple))}
            getattr(tflite, f"{table}Start")(b)
            for k, v in fields.items():
                getattr(tflite, f"{table}Add{k}")(b, vectors.get(k, v))
            opts = getattr(tflite, f"{table}End")(b)
        ins = _vector(b, tflite.OperatorStartInputsVector, o["inputs"], b.PrependInt32)
        outs = _vector(b, tflite.OperatorStartOutputsVector, o["outputs"], b.PrependInt32)
        custom = (_vector(b, tflite.OperatorStartCustomOptionsVector, list(o["custom"]),
                          b.PrependUint8) if o["custom"] else None)
        tflite.OperatorStart(b)
        if custom is not None:
            tflite.OperatorAddCustomOptions(b, custom)
        tflite.OperatorAddOpcodeIndex(b, o["opcode"])
        tflite.OperatorAddInputs(b, ins)
        tflite.OperatorAddOutputs(b, outs)
        if opts is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, o["options"][0]))
            tflite.OperatorAddBuiltinOptions(b, opts)
        return tflite.OperatorEnd(b)


def _vector(b: flatbuffers.Builder, start: Any, items: Sequence[Any], prepend: Any) -> int:
    start(b, len(items))
    for item in reversed(list(items)):
        prepend(item)
    return b.EndVector()


def run_litert(model: bytes, inputs: Sequence[np.ndarray], num_threads: int = 1,
               reference: bool = True) -> list[np.ndarray]:
    """The model's outputs from LiteRT's interpreter (``reference``: its builtin kernels
    without the default XNNPACK delegate)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kind = (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if reference
            else OpResolverType.AUTO)
    interp = Interpreter(model_content=model, num_threads=num_threads,
                         experimental_op_resolver_type=kind)
    details = interp.get_input_details()
    for d, x in zip(details, inputs):
        if list(d["shape"]) != list(x.shape):
            interp.resize_tensor_input(d["index"], list(x.shape))
    interp.allocate_tensors()
    for d, x in zip(details, inputs):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def run_relax(model: Any, inputs: Sequence[np.ndarray], **import_kw: Any) -> list[np.ndarray]:
    """The model's outputs through from_tflite -> relax.build(llvm) -> VirtualMachine."""
    import tvm.runtime
    from tvm import relax
    from tvm.relax.frontend.tflite import from_tflite

    mod = from_tflite(model, **import_kw)
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.runtime.cpu())
    out = vm["main"](*inputs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [o.numpy() for o in outs]
