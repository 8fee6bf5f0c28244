"""Operators with data-dependent output shapes lowered to TIR kernels: ``nonzero``,
``unique`` and ``vision.non_max_suppression`` (StructInfo, the legalized program, and
numbers through relax.build on llvm against numpy references)."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax, tir
from tvm.ffi import structural_equal
from tvm.relax import TensorStructInfo, op
from tvm.relax.transform import LegalizeOps
from tvm.script import relax as R
from vm_testing import requires_llvm

import tvm.runtime

rng = np.random.default_rng(7)
n = tir.Var("n", "int64")


def tensor(shape, dtype="float32", name="x"):
    return relax.Var(name, TensorStructInfo(shape, dtype))


def module(make, params):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(make(*params))
        bb.emit_func_output(out)
    return bb.get()


def compiled(make, params):
    ex = relax.build(module(make, params), target="llvm")
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())

    def run(*inputs):
        result = vm["main"](*inputs)
        return tuple(r.numpy() for r in result) if isinstance(result, tuple) else result.numpy()

    return run


def infer(call):
    return relax.BlockBuilder().normalize(call).struct_info


# -- StructInfo and lowering -------------------------------------------------------------------
def test_non_max_suppression_struct_info():
    boxes, scores = tensor([2, n, 4], name="b"), tensor([2, 3, n], name="s")
    s = infer(op.vision.non_max_suppression(boxes, scores, 5, 0.5, 0.1, center_point_box=1))
    assert s.ndim == 2 and s.dtype == "int64" and s.shape is None
    limit = tensor([1], "int64", "m")
    assert infer(op.vision.non_max_suppression(boxes, scores, limit)).ndim == 2
    cases = [
        (tensor([2, n, 3], name="b"), scores, 1, "must be \\(batch, boxes, 4\\)"),
        (boxes, tensor([3, 3, n], name="s"), 1, "boxes has 2 batches but scores has 3"),
        (boxes, tensor([2, 3, 5], name="s"), 1, None),  # n may be 5
        (boxes, scores, tensor([1], "float32", "m"), "max_output_boxes_per_class must be an "
                                                     "integer tensor"),
        (boxes, scores, tensor([2], "int64", "m"), "must hold one value"),
        (tensor([2, n, 4], "int32", "b"), scores, 1, "boxes must have a floating-point dtype"),
    ]
    for b, sc, lim, message in cases:
        call = op.vision.non_max_suppression(b, sc, lim)
        if message is None:
            infer(call)
            continue
        with pytest.raises(relax.StructInfoError, match=message):
            infer(call)
    with pytest.raises(ValueError, match="center_point_box must be 0 or 1"):
        op.vision.non_max_suppression(boxes, scores, center_point_box=2)


@pytest.mark.parametrize("name", ["nonzero", "unique", "unique_axis", "nms"])
def test_lowered_to_tir_kernels_with_a_run_time_shape(name):
    x = tensor([n, 4])
    boxes, scores = tensor([1, 6, 4], name="b"), tensor([1, 2, 6], name="s")
    make, params, kernels = {
        "nonzero": (op.nonzero, [x], ["nonzero_count", "nonzero"]),
        "unique": (lambda x: op.unique(x, False, True, True, True), [x], ["unique",
                                                                          "unique_crop"]),
        "unique_axis": (lambda x: op.unique(x, True, axis=0), [x], ["unique", "unique_crop"]),
        "nms": (lambda b, s: op.vision.non_max_suppression(b, s, 3, 0.4), [boxes, scores],
                ["non_max_suppression", "non_max_suppression_crop"]),
    }[name]
    mod = LegalizeOps()(module(make, params))
    text = mod.script()
    for kernel in kernels:
        assert f"cls.{kernel}," in text
    # the only host step reads the number of results into a shape, bound by match_cast
    assert text.count("R.call_pure_packed") == 1 and "vm.builtin.tensor_to_shape" in text
    assert "R.match_cast" in text
    assert all(isinstance(f, tir.PrimFunc) or f is mod["main"] for f in mod.functions.values())
    assert structural_equal(R.parse(text), mod)


# -- numbers -----------------------------------------------------------------------------------
@requires_llvm
@pytest.mark.parametrize("shape,dtype", [((7,), "float32"), ((2, 3, 2), "int32"),
                                         ((3, 4), "bool")])
def test_nonzero(shape, dtype):
    run = compiled(lambda x: op.nonzero(x), [tensor(list(shape), dtype)])
    for data in (rng.integers(-1, 2, shape).astype(dtype), np.zeros(shape, dtype)):
        got = run(data)
        np.testing.assert_array_equal(got, np.array(np.nonzero(data), "int64"))
        assert got.dtype == np.int64 and got.shape[0] == len(shape)


@requires_llvm
def test_two_nonzeros_of_like_inputs_count_each():
    """Identical calls share a lowering, except one that binds a run-time size of its own:
    each nonzero counts its input."""
    x, y = tensor([2, 3], name="x"), tensor([2, 3], name="y")
    run = compiled(lambda a, b: relax.Tuple([op.nonzero(a), op.nonzero(b)]), [x, y])
    a = np.array([[1, 0, 2], [0, 0, 3]], "float32")
    for b in (np.zeros((2, 3), "float32"), np.ones((2, 3), "float32")):
        got = run(a, b)
        np.testing.assert_array_equal(got[0], np.array(np.nonzero(a), "int64"))
        np.testing.assert_array_equal(got[1], np.array(np.nonzero(b), "int64"))


@requires_llvm
@pytest.mark.parametrize("equal_nan", [True, False])
def test_unique_nan_one_group_or_each_apart(equal_nan):
    nan = np.nan
    data = np.array([2.0, nan, 1.0, nan, 2.0], "float32")
    run = compiled(lambda x: op.unique(x, True, False, True, True, equal_nan=equal_nan),
                   [tensor([5])])
    values, inverse, counts = run(data)
    if equal_nan:
        want = ([1.0, 2.0, nan], [1, 2, 0, 2, 1], [1, 2, 2])
    else:  # NaNs keep their input order
        want = ([1.0, 2.0, nan, nan], [1, 2, 0, 3, 1], [1, 2, 1, 1])
    np.testing.assert_array_equal(values, np.array(want[0], "float32"))
    np.testing.assert_array_equal(inverse, want[1])
    np.testing.assert_array_equal(counts, want[2])


def unique_reference(x, is_sorted, axis):
    """ONNX Unique with numpy: (values, first indices, inverse, counts)."""
    flat = x.reshape(-1) if axis is None else x
    kwargs = {} if axis is None else {"axis": axis}
    values, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                               return_counts=True, **kwargs)
    inverse = inverse.reshape(-1)
    if not is_sorted:  # order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values = np.take(values, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return values, first, inverse, counts


@requires_llvm
@pytest.mark.parametrize("is_sorted", [True, False])
@pytest.mark.parametrize("axis", [None, 1])
def test_unique(is_sorted, axis):
    """Symbolic rows; repeated columns for ``axis=1``; NaN (equal to NaN, sorted last) and an
    empty input for the flattened case."""
    run = compiled(lambda x: op.unique(x, is_sorted, True, True, True, axis),
                   [tensor([n, 5])])
    data = rng.integers(0, 3, (4, 5)).astype("float32")
    data[:, 3] = data[:, 1]
    inputs = [data, np.zeros((0, 5), "float32")] if axis is None else [data]
    if axis is None:
        inputs.append(np.array([[np.nan, 1, np.nan, 0, -np.inf]] * 2, "float32"))
    for x in inputs:
        got = run(x)
        for g, e in zip(got, unique_reference(x, is_sorted, axis)):
            np.testing.assert_array_equal(g, e)
            assert g.dtype == e.dtype


@requires_llvm
def test_unique_slices_of_a_3d_int_tensor_feed_later_operators():
    x = tensor([3, 4, 2], "int32")

    def make(x):
        values = relax.BlockBuilder.current().emit(op.unique(x, True, axis=1))
        return op.add(values, values)

    data = rng.integers(0, 2, (3, 4, 2)).astype("int32")
    data[:, 2] = data[:, 0]
    got = compiled(make, [x])(data)
    np.testing.assert_array_equal(got, 2 * np.unique(data, axis=1))


def nms_reference(boxes, scores, limit, iou_threshold, score_threshold, center):
    """ONNX NonMaxSuppression, written out."""
    def extent(b):
        if center:
            return b[0] - b[2] / 2, b[0] + b[2] / 2, b[1] - b[3] / 2, b[1] + b[3] / 2
        return min(b[1], b[3]), max(b[1], b[3]), min(b[0], b[2]), max(b[0], b[2])

    def suppresses(a, b):
        ax0, ax1, ay0, ay1 = extent(a)
        bx0, bx1, by0, by1 = extent(b)
        iw, ih = min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0)
        if iw <= 0 or ih <= 0:
            return False
        inter = iw * ih
        area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
        union = area_a + area_b - inter
        return inter > 0 and area_a > 0 and area_b > 0 and union > 0 and \
            inter / union > iou_threshold

    out = []
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            cand = [i for i in range(len(s)) if score_threshold is None or s[i] > score_threshold]
            cand.sort(key=lambda i: (-s[i], i))
            chosen = []
            for i in cand:
                if len(chosen) >= limit:
                    break
                if not any(suppresses(boxes[b, i], boxes[b, j]) for j in chosen):
                    chosen.append(i)
                    out.append((b, c, i))
    return np.array(out, "int64").reshape(-1, 3)


@requires_llvm
@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression(center):
    nb, nc, nbox = 2, 3, 10
    params = [tensor([nb, nbox, 4], name="b"), tensor([nb, nc, nbox], name="s"),
              tensor([1], "int64", "m"), tensor([1], name="i"), tensor([1], name="t")]
    run = compiled(lambda *a: op.vision.non_max_suppression(*a, center_point_box=center),
                   params)
    for limit, iou, threshold in [(3, 0.3, 0.2), (0, 0.5, 0.0), (100, 0.1, None), (4, 0.0, 0.5)]:
        xy = rng.uniform(0, 10, (nb, nbox, 2))
        wh = rng.uniform(1, 4, (nb, nbox, 2))
        boxes = np.concatenate([xy, wh if center else xy + wh], -1).astype("float32")
        if not center:
            boxes[..., [0, 2]] = boxes[..., [2, 0]]  # corners in either order
        scores = (rng.integers(0, 5, (nb, nc, nbox)) / 4).astype("float32")  # with ties
        t = np.array([-np.inf if threshold is None else threshold], "float32")
        got = run(boxes, scores, np.array([limit]), np.array([iou], "float32"), t)
        expected = nms_reference(boxes, scores, limit, iou, threshold, center)
        np.testing.assert_array_equal(got, expected)


# -- run-time shapes from tensors (vm.builtin.tensor_to_shape) ----------------------------------
def _shape_from(vec, what=None):
    from tvm.relax.expr import StringImm
    from tvm.relax.op import call_pure_packed
    from tvm.relax.struct_info import ShapeStructInfo

    args = [vec] + ([StringImm(what)] if what else [])
    return call_pure_packed("vm.builtin.tensor_to_shape", *args, sinfo_args=ShapeStructInfo(ndim=1))


def _sum_over_runtime_extent(what=None):
    """x (m,) reshaped to (1, k) with k read from a tensor, summed over k (symbolic)."""
    k = tir.Var("k", "int64")
    x, s = tensor([n], name="x"), tensor([1], "int64", "s")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, s]):
        shape = bb.emit(_shape_from(s, what))
        bb.match_cast(shape, relax.ShapeStructInfo([k]))
        y = bb.emit(op.reshape(x, relax.ShapeExpr([k])))
        out = bb.emit(op.sum(y, [0], False))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.runtime.cpu())
    return vm["main"]


@requires_llvm
def test_reduction_over_a_symbolic_extent_that_is_zero_at_run_time():
    """A zero-extent reduction loop never runs its init: the identity is selected instead."""
    main = _sum_over_runtime_extent()
    x = np.arange(3, dtype="float32")
    assert main(x, np.array([3], "int64")).numpy() == 3.0
    empty = np.zeros(0, "float32")
    for _ in range(2):  # not a stale value of the last call
        assert main(empty, np.array([0], "int64")).numpy() == 0.0


@requires_llvm
def test_tensor_to_shape_names_the_value_in_its_error():
    main = _sum_over_runtime_extent("node 'r': invalid shape given at run time")
    with pytest.raises(ValueError, match=r"node 'r': invalid shape given at run time \(run-time "
                                         r"shape \[-1\]\)"):
        main(np.zeros(0, "float32"), np.array([-1], "int64"))
    main = _sum_over_runtime_extent()
    with pytest.raises(ValueError, match="tensor_to_shape: negative dimension"):
        main(np.zeros(0, "float32"), np.array([-1], "int64"))
