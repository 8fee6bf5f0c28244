"""Per-operator suite: one small float32 model per builtin (and per option / fused
activation; cases_nn_math.py, cases_tensor.py), imported with from_tflite, built for llvm,
run on the VM and compared with LiteRT's builtin kernels (rtol 1e-5)."""

from __future__ import annotations

import cases_nn_math  # noqa: F401 - registers its cases
import cases_tensor  # noqa: F401 - registers its cases
import numpy as np
import pytest
from model_builder import run_litert, run_relax
from op_cases import CASES, COVERED_ELSEWHERE

from tvm.relax.frontend.tflite import supported_ops


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_matches_litert(name: str) -> None:
    model, inputs = CASES[name]()
    data = model.build()
    expected = run_litert(data, inputs)
    got = run_relax(data, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        if g.dtype == np.bool_ or np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_every_supported_builtin_has_a_case() -> None:
    covered = {name.split("-")[0] for name in CASES} | COVERED_ELSEWHERE
    assert sorted(set(supported_ops()) - covered) == []


#: cases whose inputs all lead with a batch axis: rerun with it declared -1 and fed batch 3
SYMBOLIC_BATCH = [
    "CONV_2D-pad0-s2", "CONV_2D-pad1-s1", "CONV_2D-grouped", "DEPTHWISE_CONV_2D-valid-s2-m2",
    "FULLY_CONNECTED-keep_num_dims-relu", "AVERAGE_POOL_2D-same", "MAX_POOL_2D-valid",
    "L2_POOL_2D-same", "SOFTMAX-beta", "LOG_SOFTMAX", "HARD_SWISH", "PRELU",
    "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "RESIZE_BILINEAR-8x9-align0-half1",
    "RESIZE_NEAREST_NEIGHBOR-3x3-align1-half0", "MEAN-keep", "SUM-neg-axis",
    "ARG_MAX-int32", "PAD", "MIRROR_PAD-symmetric", "CONCATENATION", "SPLIT",
    "STRIDED_SLICE-ellipsis", "STRIDED_SLICE-new-axis", "GATHER", "TILE", "SHAPE",
    "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "CAST-float-int32", "ADD", "LOGISTIC", "TRANSPOSE",
    "EXPAND_DIMS", "PACK", "UNPACK", "CUMSUM", "TOPK_V2", "CONV_3D-same-s2-relu",
]


@pytest.mark.parametrize("name", SYMBOLIC_BATCH)
def test_operator_with_symbolic_batch_matches_litert(name: str) -> None:
    model, inputs = CASES[name]()
    for t in model.inputs:
        shape = model.tensors[t]["shape"]
        model.tensors[t]["signature"] = [-1] + shape[1:]
    data = model.build()
    inputs = [np.concatenate([x] * 3, axis=0) for x in inputs]
    expected = run_litert(data, inputs)
    got = run_relax(data, inputs)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
