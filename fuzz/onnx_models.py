"""Mutated ONNX models against ``from_onnx``, ``relax.build`` and onnxruntime.

A case names one of the small valid models below and lists mutations: protobuf field
changes (an attribute's value, a tensor's dims or dtype, a node's input name or op type) and
raw byte flips or a truncation of the serialized model.  Oracle: the bytes do not parse as
a ModelProto (onnx's own parser refuses them), or ``from_onnx`` raises ``OnnxImportError``
(``OpNotImplemented`` included) or ``MemoryError``, or the module builds for llvm and runs on
the VM, where a ``KernelError``/``VMError`` (a checked index, a shape mismatch) is a clean
answer too.  When onnxruntime accepts and runs the same mutated model, our outputs must
match its outputs.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from fuzz.common import Failure, describe


def _mlp() -> Any:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype("float32"), "w")
    b = numpy_helper.from_array(rng.standard_normal((3,)).astype("float32"), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "b"], ["h2"], name="add"),
             helper.make_node("Relu", ["h2"], ["h3"], name="relu"),
             helper.make_node("Softmax", ["h3"], ["y"], name="sm", axis=-1)]
    return helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w, b])


def _conv() -> Any:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((2, 1, 3, 3)).astype("float32"), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1],
                              strides=[1, 1], kernel_shape=[3, 3]),
             helper.make_node("MaxPool", ["c"], ["p"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["y"], name="flat", axis=1)]
    return helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w])


def _tensor_ops() -> Any:
    from onnx import TensorProto, helper, numpy_helper

    idx = numpy_helper.from_array(np.array([2, 0, 1], dtype="int64"), "idx")
    shape = numpy_helper.from_array(np.array([3, 2, 2], dtype="int64"), "shape")
    nodes = [helper.make_node("Gather", ["x", "idx"], ["g"], name="gather", axis=0),
             helper.make_node("Reshape", ["g", "shape"], ["r"], name="reshape"),
             helper.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[2, 0, 1]),
             helper.make_node("Concat", ["t", "t"], ["y"], name="concat", axis=1)]
    return helper.make_graph(
        nodes, "tensor_ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, 2])], [idx, shape])


def _reduce_cast() -> Any:
    from onnx import TensorProto, helper, numpy_helper

    lo = numpy_helper.from_array(np.array(-0.5, dtype="float32"), "lo")
    hi = numpy_helper.from_array(np.array(0.5, dtype="float32"), "hi")
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[1], keepdims=1),
             helper.make_node("Sub", ["x", "m"], ["d"], name="sub"),
             helper.make_node("Clip", ["d", "lo", "hi"], ["c"], name="clip"),
             helper.make_node("Greater", ["c", "lo"], ["gt"], name="gt"),
             helper.make_node("Where", ["gt", "c", "x"], ["w"], name="where"),
             helper.make_node("Cast", ["w"], ["y"], name="cast", to=TensorProto.INT32)]
    return helper.make_graph(
        nodes, "reduce_cast", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [3, 5])], [lo, hi])


#: the seed models (kept fixed: the corpus names them and replays mutations on them)
MODELS: dict[str, Callable[[], Any]] = {
    "mlp": _mlp, "conv": _conv, "tensor_ops": _tensor_ops, "reduce_cast": _reduce_cast}
_OPSET = 13


def base_model(name: str) -> Any:
    """The seed model ``name`` as an ``onnx.ModelProto``."""
    from onnx import helper

    model = helper.make_model(MODELS[name](), opset_imports=[helper.make_opsetid("", _OPSET)])
    model.ir_version = 8
    return model


_OP_TYPES = ["Relu", "Abs", "Add", "MatMul", "Softmax", "Gather", "Reshape", "Transpose",
             "Concat", "Identity", "Sub", "Where", "Cast", "Flatten", "MaxPool", "Conv",
             "Squeeze", "Unsqueeze", "ReduceSum", "Expand", "Tile", "Slice", "Split", "Nonexistent"]
_INTS = st.sampled_from([-3, -2, -1, 0, 1, 2, 3, 5, 7, 64, 2 ** 31 - 1, -(2 ** 31), 2 ** 40])


def _mutation() -> st.SearchStrategy[list[Any]]:
    pick = st.integers(0, 63)  # an index, taken modulo the number of candidates
    return st.one_of(
        st.tuples(st.just("attr_int"), pick, pick, _INTS),
        st.tuples(st.just("attr_ints"), pick, pick, st.lists(_INTS, max_size=5)),
        st.tuples(st.just("attr_float"), pick, pick,
                  st.sampled_from([0.0, -1.0, 1e30, float("nan"), float("inf")])),
        st.tuples(st.just("drop_attr"), pick, pick),
        st.tuples(st.just("value_dim"), pick, pick, _INTS),
        st.tuples(st.just("value_rank"), pick, st.integers(0, 5)),
        st.tuples(st.just("value_dtype"), pick, st.integers(0, 26)),
        st.tuples(st.just("init_dims"), pick, st.lists(_INTS, max_size=4)),
        st.tuples(st.just("init_dtype"), pick, st.integers(0, 26)),
        st.tuples(st.just("init_value"), pick, pick, _INTS),
        st.tuples(st.just("input_name"), pick, pick, pick),
        st.tuples(st.just("drop_input"), pick, pick),
        st.tuples(st.just("op_type"), pick, st.sampled_from(_OP_TYPES)),
        st.tuples(st.just("opset"), st.sampled_from([1, 6, 10, 11, 13, 18, 22, 99])),
        st.tuples(st.just("flip"), st.integers(0, 4095), st.integers(1, 255)),
        st.tuples(st.just("truncate"), st.integers(0, 4095)),
    ).map(list)


def cases() -> st.SearchStrategy[dict[str, Any]]:
    """A seed model and one to three mutations."""
    return st.fixed_dictionaries({
        "model": st.sampled_from(sorted(MODELS)),
        "mutations": st.lists(_mutation(), min_size=1, max_size=3),
        "seed": st.integers(0, 2 ** 31 - 1)})


def _apply_proto(model: Any, m: list[Any]) -> None:
    g = model.graph
    kind = m[0]
    if kind in ("attr_int", "attr_ints", "attr_float", "drop_attr"):
        node = g.node[m[1] % len(g.node)]
        if not node.attribute:
            return
        attr = node.attribute[m[2] % len(node.attribute)]
        if kind == "drop_attr":
            node.attribute.remove(attr)
        elif kind == "attr_int":
            attr.i = int(np.clip(m[3], -(2 ** 63), 2 ** 63 - 1))
        elif kind == "attr_ints":
            del attr.ints[:]
            attr.ints.extend(m[3])
        else:
            attr.f = m[3]
    elif kind in ("value_dim", "value_rank", "value_dtype"):
        values = list(g.input) + list(g.output)
        vi = values[m[1] % len(values)].type.tensor_type
        if kind == "value_dtype":
            vi.elem_type = m[2]
        elif kind == "value_rank":
            dims = [d.dim_value for d in vi.shape.dim]
            del vi.shape.dim[:]
            for k in range(m[2]):
                vi.shape.dim.add().dim_value = dims[k] if k < len(dims) else 2
        elif vi.shape.dim:
            vi.shape.dim[m[2] % len(vi.shape.dim)].dim_value = m[3]
    elif kind in ("init_dims", "init_dtype", "init_value"):
        if not g.initializer:
            return
        init = g.initializer[m[1] % len(g.initializer)]
        if kind == "init_dims":
            del init.dims[:]
            init.dims.extend(m[2])
        elif kind == "init_dtype":
            init.data_type = m[2]
        else:
            from onnx import numpy_helper

            try:
                arr = numpy_helper.to_array(init).copy()
            except (ValueError, TypeError):
                return  # an earlier mutation made it unreadable (a bad shape or dtype)
            if arr.size:
                flat = arr.reshape(-1)
                flat[m[2] % arr.size] = np.asarray(m[3]).astype(arr.dtype)
                init.CopyFrom(numpy_helper.from_array(flat.reshape(arr.shape), init.name))
    elif kind in ("input_name", "drop_input"):
        node = g.node[m[1] % len(g.node)]
        if not node.input:
            return
        k = m[2] % len(node.input)
        if kind == "drop_input":
            del node.input[k]
            return
        names = ([i.name for i in g.input] + [i.name for i in g.initializer]
                 + [o for n in g.node for o in n.output] + ["", "missing"])
        node.input[k] = names[m[3] % len(names)]
    elif kind == "op_type":
        g.node[m[1] % len(g.node)].op_type = m[2]
    elif kind == "opset":
        model.opset_import[0].version = m[1]


def mutated_bytes(case: dict[str, Any]) -> bytes:
    """The serialized model after the case's mutations (byte ones after the field ones)."""
    model = base_model(case["model"])
    for m in case["mutations"]:
        if m[0] not in ("flip", "truncate"):
            _apply_proto(model, m)
    data = bytearray(model.SerializeToString())
    for m in case["mutations"]:
        if m[0] == "flip" and data:
            data[m[1] % len(data)] ^= m[2]
        elif m[0] == "truncate":
            del data[m[1] % (len(data) + 1):]
    return bytes(data)


def _inputs(func: Any, seed: int) -> list[np.ndarray] | None:
    from tvm import relax

    rng = np.random.default_rng(seed)
    arrays = []
    for p in func.params:
        sinfo = p.struct_info
        if not isinstance(sinfo, relax.TensorStructInfo) or sinfo.shape is None:
            return None
        shape = [int(d) if isinstance(d, int) else int(d.value) if hasattr(d, "value") else 2
                 for d in sinfo.shape.values]
        if int(np.prod(shape)) > 1 << 16:
            return None
        dtype = str(sinfo.dtype)
        if dtype.startswith("float"):
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif dtype == "bool":
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 3, shape).astype(dtype))
    return arrays


def _onnxruntime(data: bytes, inputs: list[np.ndarray], names: list[str]) -> list | None:
    try:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        opts.intra_op_num_threads = 1
        sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        feeds = {i.name: a for i, a in zip(sess.get_inputs(), inputs)}
        if [i.name for i in sess.get_inputs()] != names:
            return None
        return sess.run(None, feeds)
    except Exception:  # noqa: BLE001 - onnxruntime refusing a mutated model is no verdict
        return None


def check(case: dict[str, Any]) -> str:
    """Import, build and run the mutated model; compare with onnxruntime when it runs it."""
    import onnx
    import tvm.runtime
    from google.protobuf.message import DecodeError
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.relax.frontend.onnx.common import OnnxImportError

    data = mutated_bytes(case)
    try:
        model = onnx.ModelProto.FromString(data)
    except (DecodeError, RuntimeWarning, ValueError):
        return "not a ModelProto"  # not a protobuf message: onnx's parser refuses it before we see it
    try:
        mod = from_onnx(model)
    except (OnnxImportError, MemoryError) as err:
        return f"from_onnx refused ({type(err).__name__})"
    except Exception as err:  # noqa: BLE001 - classified
        raise Failure("unexpected-exception", f"from_onnx raised {describe(err)}") from err
    inputs = _inputs(mod["main"], case["seed"])
    if inputs is None:
        return "imported; inputs not fed"  # an input we cannot feed (symbolic size too large, not a tensor)
    try:
        ex = relax.build(mod, target="llvm")
    except MemoryError:
        return "build: MemoryError"
    except Exception as err:  # noqa: BLE001 - an imported model must build
        raise Failure("build-error", f"from_onnx accepted the model but relax.build raised "
                      f"{describe(err)}") from err
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    try:
        out = vm["main"](*inputs)
    except (tvm.runtime.KernelError, tvm.runtime.vm.VMError, MemoryError) as err:
        return f"run refused ({type(err).__name__})"  # a checked index or shape, reported cleanly
    except Exception as err:  # noqa: BLE001 - classified
        raise Failure("unexpected-exception", f"the VM raised {describe(err)}") from err
    ours = [o.numpy() for o in (out if isinstance(out, (tuple, list)) else [out])]
    names = [i.name for i in model.graph.input
             if i.name not in {t.name for t in model.graph.initializer}]
    theirs = _onnxruntime(data, inputs, names)
    if theirs is None:
        return "ran; onnxruntime refused"
    if len(theirs) != len(ours):
        raise Failure("wrong-answer", f"{len(ours)} outputs, onnxruntime gives {len(theirs)}")
    for k, (a, e) in enumerate(zip(ours, theirs)):
        e = np.asarray(e)
        if a.shape != e.shape or (a.dtype != e.dtype and e.dtype != object):
            raise Failure("wrong-answer", f"output {k} is {a.dtype}{list(a.shape)}, "
                          f"onnxruntime gives {e.dtype}{list(e.shape)}")
        close = (np.allclose(a, e, rtol=1e-4, atol=1e-5, equal_nan=True)
                 if a.dtype.kind == "f" else np.array_equal(a, e))
        if not close:
            raise Failure("wrong-answer", f"output {k} differs from onnxruntime: "
                          f"{a.ravel()[:6]} vs {e.ravel()[:6]}")
    return "ran; same as onnxruntime"
