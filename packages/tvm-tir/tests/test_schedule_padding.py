"""materialize_padding: before/after, preconditions, trace replay, numbers."""

from __future__ import annotations

import pytest
from schedule_block_util import check_numbers, check_replay
from schedule_util import assert_func_equal, needs_llvm, script_module
from tvm import tir
from tvm.tir import ScheduleError
from tvm.tir.schedule.primitive.padding import padded_loads

T = script_module()


@T.prim_func
def conv1d(X: T.Buffer((2, 10), "float32"), W: T.Buffer((3,), "float32"),
           Y: T.Buffer((2, 10), "float32")):
    for n, x, r in T.grid(2, 10, 3):
        with T.block("Y"):
            vn, vx, vr = T.axis.remap("SSR", [n, x, r])
            with T.init():
                Y[vn, vx] = T.float32(0.0)
            Y[vn, vx] = Y[vn, vx] + T.if_then_else(
                vx + vr - 1 >= 0 and vx + vr - 1 < 10, X[vn, vx + vr - 1],
                T.float32(0.0)) * W[vr]


@T.prim_func
def conv1d_padded(X: T.Buffer((2, 10), "float32"), W: T.Buffer((3,), "float32"),
                  Y: T.Buffer((2, 10), "float32")):
    X_pad = T.alloc_buffer((2, 12))
    for ax0, ax1 in T.grid(2, 12):
        with T.block("X_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(X[0:2, 0:10])
            T.writes(X_pad[v0, v1])
            X_pad[v0, v1] = T.if_then_else(v1 >= 1 and v1 < 11, X[v0, v1 - 1], T.float32(0.0))
    for n, x, r in T.grid(2, 10, 3):
        with T.block("Y"):
            vn, vx, vr = T.axis.remap("SSR", [n, x, r])
            T.reads(W[vr], X_pad[vn, vr + vx])
            T.writes(Y[vn, vx])
            with T.init():
                Y[vn, vx] = T.float32(0.0)
            Y[vn, vx] = Y[vn, vx] + X_pad[vn, vr + vx] * W[vr]


@T.prim_func
def guarded_by_other(X: T.Buffer((10,), "float32"), Y: T.Buffer((10,), "float32")):
    for x in range(10):
        with T.block("Y"):
            vx = T.axis.spatial(10, x)
            Y[vx] = T.if_then_else(vx < 5, X[vx], T.float32(0.0))


@T.prim_func
def rewritten_in_nest(X: T.Buffer((10,), "float32"), Y: T.Buffer((10,), "float32")):
    T.func_attr({"global_symbol": "main"})
    B = T.alloc_buffer((10,))
    for x in range(10):
        with T.block("B"):
            vx = T.axis.spatial(10, x)
            B[vx] = X[vx]
        for r in range(3):
            with T.block("Y"):
                vy, vr = T.axis.remap("SR", [x, r])
                with T.init():
                    Y[vy] = T.float32(0.0)
                Y[vy] = Y[vy] + T.if_then_else(vy + vr - 1 >= 0 and vy + vr - 1 < 10,
                                               B[vy + vr - 1], T.float32(0.0))


def test_padding_becomes_a_padded_copy_before_the_nest():
    sch = tir.Schedule(conv1d, debug_mask="all")
    y = sch.get_block("Y")
    (pad,) = padded_loads(sch.get(y))
    assert (pad.lo, pad.hi) == ([0, 1], [0, 1])
    x_pad = sch.materialize_padding(y, 0)
    assert sch.get(x_pad).name_hint == "X_pad"
    assert_func_equal(sch, conv1d_padded)
    assert not padded_loads(sch.get(y))


def test_materialize_padding_replays_from_json_and_text():
    sch = tir.Schedule(conv1d)
    sch.materialize_padding(sch.get_block("Y"), 0)
    assert "materialize_padding(b0, read_buffer_index=0)" in str(sch.trace)
    check_replay(sch, conv1d)


@needs_llvm
def test_materialize_padding_keeps_the_numbers():
    sch = tir.Schedule(conv1d)
    sch.materialize_padding(sch.get_block("Y"), 0)
    check_numbers(conv1d, sch)


def test_preconditions():
    sch = tir.Schedule(conv1d)
    y = sch.get_block("Y")
    with pytest.raises(ScheduleError, match="materialize_padding: .*the block reads 'W' "
                       "without a padding check"):
        sch.materialize_padding(y, 1)
    with pytest.raises(ScheduleError, match="read_buffer_index 5 is out of range"):
        sch.materialize_padding(y, 5)
    other = tir.Schedule(guarded_by_other)
    with pytest.raises(ScheduleError, match="without a padding check"):
        # a check that is no bound of the load against the buffer's shape
        other.materialize_padding(other.get_block("Y"), 0)
    nest = tir.Schedule(rewritten_in_nest)
    yb = nest.get_block("Y")
    index = [r.buffer.name for r in nest.get(yb).reads].index("B")
    with pytest.raises(ScheduleError, match="block 'B' writes 'B' in the loop nest"):
        nest.materialize_padding(yb, index)
    assert len(sch.trace) == 1 and len(nest.trace) == 1  # failed calls leave no trace


@T.prim_func
def qconv1d(X: T.Buffer((2, 10), "uint8"), W: T.Buffer((3,), "int8"),
            Y: T.Buffer((2, 10), "int32")):
    # a quantized convolution: the padding holds the input zero point, 7
    for n, x, r in T.grid(2, 10, 3):
        with T.block("Y"):
            vn, vx, vr = T.axis.remap("SSR", [n, x, r])
            with T.init():
                Y[vn, vx] = 0
            Y[vn, vx] = Y[vn, vx] + T.if_then_else(
                vx + vr - 1 >= 0 and vx + vr - 1 < 10, T.Cast("int32", X[vn, vx + vr - 1]),
                7) * T.Cast("int32", W[vr])


@T.prim_func
def qconv1d_padded(X: T.Buffer((2, 10), "uint8"), W: T.Buffer((3,), "int8"),
                   Y: T.Buffer((2, 10), "int32")):
    X_pad = T.alloc_buffer((2, 12), "uint8")
    for ax0, ax1 in T.grid(2, 12):
        with T.block("X_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(X[0:2, 0:10])
            T.writes(X_pad[v0, v1])
            X_pad[v0, v1] = T.if_then_else(v1 >= 1 and v1 < 11, X[v0, v1 - 1], T.uint8(7))
    for n, x, r in T.grid(2, 10, 3):
        with T.block("Y"):
            vn, vx, vr = T.axis.remap("SSR", [n, x, r])
            T.reads(W[vr], X_pad[vn, vr + vx])
            T.writes(Y[vn, vx])
            with T.init():
                Y[vn, vx] = 0
            Y[vn, vx] = Y[vn, vx] + T.Cast("int32", X_pad[vn, vr + vx]) * T.Cast("int32", W[vr])


@T.prim_func
def qconv1d_out_of_range(X: T.Buffer((10,), "uint8"), Y: T.Buffer((10,), "int32")):
    for x, r in T.grid(10, 3):
        with T.block("Y"):
            vx, vr = T.axis.remap("SR", [x, r])
            with T.init():
                Y[vx] = 0
            Y[vx] = Y[vx] + T.if_then_else(vx + vr - 1 >= 0 and vx + vr - 1 < 10,
                                           T.Cast("int32", X[vx + vr - 1]), -1)


@T.prim_func
def two_fallbacks(X: T.Buffer((10,), "float32"), Y: T.Buffer((10,), "float32")):
    for x, r in T.grid(10, 3):
        with T.block("Y"):
            vx, vr = T.axis.remap("SR", [x, r])
            with T.init():
                Y[vx] = T.float32(0.0)
            Y[vx] = Y[vx] + T.if_then_else(vx + vr - 1 >= 0 and vx + vr - 1 < 10,
                                           X[vx + vr - 1], T.float32(0.0)) * \
                T.if_then_else(vx + vr - 1 >= 0 and vx + vr - 1 < 10, X[vx + vr - 1],
                               T.float32(1.0))


def test_a_cast_load_padded_with_the_zero_point_becomes_a_padded_copy():
    sch = tir.Schedule(qconv1d)
    (pad,) = padded_loads(sch.get(sch.get_block("Y")))
    assert pad.cast == "int32" and pad.value.dtype == "uint8" and pad.value.value == 7
    sch.materialize_padding(sch.get_block("Y"), 0)
    assert_func_equal(sch, qconv1d_padded)
    check_replay(sch, qconv1d)


@needs_llvm
def test_the_zero_point_padding_keeps_the_numbers():
    import numpy as np
    from schedule_util import run

    sch = tir.Schedule(qconv1d)
    sch.materialize_padding(sch.get_block("Y"), 0)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (2, 10)).astype("uint8")
    w = rng.integers(-128, 128, (3,)).astype("int8")
    outs = []
    for func in (qconv1d, sch.mod["main"]):
        y = np.zeros((2, 10), "int32")
        run(func.with_attr("global_symbol", "main"), x, w, y)
        outs.append(y)
    xp = np.pad(x.astype(np.int64), ((0, 0), (1, 1)), constant_values=7)
    expected = sum(xp[:, r:r + 10] * w[r] for r in range(3))
    np.testing.assert_array_equal(outs[0], expected)
    np.testing.assert_array_equal(outs[1], expected)


def test_a_fallback_the_copy_cannot_hold_is_refused():
    # -1 is no uint8 value: the cast load is not matched
    bad = tir.Schedule(qconv1d_out_of_range)
    assert not padded_loads(bad.get(bad.get_block("Y")))
    sch = tir.Schedule(two_fallbacks)
    with pytest.raises(ScheduleError, match="pads 'X' with several values"):
        sch.materialize_padding(sch.get_block("Y"), 0)
