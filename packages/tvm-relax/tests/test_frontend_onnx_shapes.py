"""ONNX importer vs ONNX's own shape information, without compiling anything.

For every case of the official node suite that the importer accepts, the StructInfo of the
imported ``main`` must give each output the shape and dtype of the expected output array.
A second test checks a hand-written graph against ``onnx.shape_inference``.
Skipped without the ``onnx`` package.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from tvm import relax, tir  # noqa: E402
from tvm.relax.frontend.onnx import OpNotImplemented, from_onnx  # noqa: E402


def _cases():
    try:
        from onnx.backend.test.case.node import collect_testcases
    except ImportError:  # pragma: no cover
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [c for c in collect_testcases() if c.model is not None and c.data_sets]


def _array(value):
    if isinstance(value, list):  # a sequence
        return [_array(v) for v in value]
    if isinstance(value, onnx.TensorProto):
        from onnx import numpy_helper

        return numpy_helper.to_array(value)
    return np.asarray(value)


def _static(sinfo):
    return tuple(int(d.value) if isinstance(d, tir.IntImm) else None for d in sinfo.shape_values)


def _output_sinfos(main, n_outputs):
    # the returned value's StructInfo inside the body: it keeps the symbolic dimensions
    # that data-dependent operators (NonZero, Unique, ...) bind there
    ret = main.body.body.struct_info
    if n_outputs > 1 and isinstance(ret, relax.TupleStructInfo):
        return list(ret.fields)
    return [ret]


def _mismatch(s, e):
    """What differs between output StructInfo ``s`` and expected value ``e`` (or None)."""
    if isinstance(e, list):  # a sequence: a tuple, compared field by field
        if not isinstance(s, relax.TupleStructInfo) or len(s.fields) != len(e):
            return f"{s} for a sequence of {len(e)}"
        for k, (f, x) in enumerate(zip(s.fields, e)):
            diff = _mismatch(f, x)
            if diff is not None:
                return f"element {k}: {diff}"
        return None
    if not isinstance(s, relax.TensorStructInfo) or s.shape_values is None:
        return "no shape"
    # the node suite's inputs are static: a symbolic output dimension is one bound at run
    # time by a data-dependent operator
    if len(_static(s)) != e.ndim or any(d is not None and d != x
                                        for d, x in zip(_static(s), e.shape)):
        return f"shape {_static(s)} != {e.shape}"
    if s.dtype != str(e.dtype):
        return f"dtype {s.dtype} != {e.dtype}"
    return None


def test_imported_output_shapes_match_node_suite():
    checked, mismatches = 0, []
    for case in _cases():
        try:
            mod = from_onnx(case.model)
        except OpNotImplemented:
            continue
        except Exception as err:  # noqa: BLE001 - listed below
            mismatches.append(f"{case.name}: import raised {type(err).__name__}: {err}"[:300])
            continue
        expected = [_array(o) for o in case.data_sets[0][1]]
        sinfos = _output_sinfos(mod["main"], len(case.model.graph.output))
        if len(sinfos) != len(expected):
            mismatches.append(f"{case.name}: {len(sinfos)} outputs, expected {len(expected)}")
            continue
        for i, (s, e) in enumerate(zip(sinfos, expected)):
            diff = _mismatch(s, e)
            if diff is not None:
                mismatches.append(f"{case.name}: output {i} {diff}")
        checked += 1
    assert checked > 300, f"only {checked} node cases imported"
    assert not mismatches, "\n".join(mismatches[:40])


def test_symbolic_shapes_match_onnx_shape_inference():
    from onnx import TensorProto, helper, shape_inference

    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["t", "w"], ["m"]),
        helper.make_node("ReduceSum", ["m", "axes"], ["r"], keepdims=1),
        helper.make_node("Concat", ["m", "r"], ["c"], axis=1),
        helper.make_node("Flatten", ["c"], ["y"], axis=1),
    ]
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 6], np.ones(24, np.float32))
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4, "s"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    inferred = shape_inference.infer_shapes(model)
    dims = inferred.graph.output[0].type.tensor_type.shape.dim
    main = from_onnx(model)["main"]
    ours = main.ret_struct_info.shape_values
    assert len(ours) == len(dims) == 2
    n = main.params[0].struct_info.shape_values[0]
    assert dims[0].dim_param == "n" and ours[0] is n
    # (s + 1) * 6 elements per row: onnx leaves it unknown, we keep it symbolic
    s = main.params[0].struct_info.shape_values[2]
    analyzer = __import__("tvm.arith", fromlist=["Analyzer"]).Analyzer()
    assert analyzer.can_prove_equal(ours[1], (s + 1) * 6)


def test_every_unknown_dim_is_its_own_variable():
    """Two dims written ``?`` (an exporter's "unknown") are two variables, so height and
    width may differ at run time; dims sharing a real name stay one variable."""
    from onnx import TensorProto, helper
    from tvm.relax.frontend.onnx import from_onnx

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Add", ["y", "z"], ["out"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "?", "?"]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 1, None])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    params = from_onnx(model)["main"].params
    x_dims = params[0].struct_info.shape_values
    z_dims = params[1].struct_info.shape_values
    assert x_dims[0] is z_dims[0]  # "batch" is one variable
    assert x_dims[1] is not x_dims[2]  # each "?" its own
    assert z_dims[2] is not x_dims[2]  # so is an unnamed dim
