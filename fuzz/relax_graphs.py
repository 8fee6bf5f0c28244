"""Differential testing of random well-typed Relax graphs (in the style of NNSmith).

A case is a DAG over a menu of operators, each with a numpy reference: inputs first, then
nodes that refer to earlier values; every value no node uses is an output.  The oracle builds
the graph for llvm, runs it on the VM and compares with numpy; it then builds the same graph
with the inputs as constants through ``FoldConstant`` (the compile-time evaluators) and
compares that with the run-time result, since the project promises one semantics.  An
integer division by zero and a ``take`` index out of range must raise the documented error
on both paths.

Values carry a bound on their magnitude, so an operator is only applied where no float
overflows and no integer wraps, and a flag saying whether the value is bit-exact (computed
only by operators without rounding), so comparisons, ``where`` conditions and float-to-int
casts only see values on which a rounding difference cannot flip a decision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from fuzz.common import Failure, describe

MAX_BOUND = 1.0e4  # largest magnitude a float value may reach
MAX_INT_BOUND = 1 << 20  # largest magnitude an int32 value may reach


@dataclass
class Val:
    """What the generator knows of a value: shape, dtype, magnitude bound, exactness."""

    shape: tuple[int, ...]
    dtype: str
    bound: float
    exact: bool
    nonneg: bool = False


# -- the operator menu ----------------------------------------------------------------------

@dataclass
class OpDef:
    """One operator: how to apply it in Relax and in numpy, and how it transforms a Val."""

    relax: Callable[..., Any]
    numpy: Callable[..., Any]


def _r(name: str) -> Callable[..., Any]:
    def make(*args: Any, **attrs: Any) -> Any:
        from tvm.relax import op

        fn = op
        for part in name.split("."):
            fn = getattr(fn, part)
        return fn(*args, **attrs)
    return make


def _np_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_sigmoid(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-x.astype("float64")))).astype(x.dtype)


UNARY = {  # name -> (numpy, result bound from bound, exact, nonneg)
    "abs": (np.abs, lambda b: b, True, True),
    "negative": (np.negative, lambda b: b, True, False),
    "nn.relu": (lambda x: np.maximum(x, 0).astype(x.dtype), lambda b: b, True, True),
    "exp": (np.exp, lambda b: math.exp(min(b, 50.0)), False, True),
    "tanh": (np.tanh, lambda b: 1.0, False, False),
    "sigmoid": (_np_sigmoid, lambda b: 1.0, False, True),
    "sin": (np.sin, lambda b: 1.0, False, False),
    "cos": (np.cos, lambda b: 1.0, False, False),
    "square": (np.square, lambda b: b * b, False, True),
    "sqrt": (np.sqrt, lambda b: math.sqrt(b), False, True),
}
BINARY = {  # name -> (numpy, bound of result from the two bounds, exact, dtypes)
    "add": (np.add, lambda a, b: a + b, False, ("float32", "int32")),
    "subtract": (np.subtract, lambda a, b: a + b, False, ("float32", "int32")),
    "multiply": (np.multiply, lambda a, b: a * b, False, ("float32", "int32")),
    "maximum": (np.maximum, max, True, ("float32", "int32")),
    "minimum": (np.minimum, max, True, ("float32", "int32")),
    "floor_divide": (np.floor_divide, lambda a, b: a, True, ("int32",)),
    "floor_mod": (np.mod, lambda a, b: b, True, ("int32",)),
}
REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}


# -- generation -----------------------------------------------------------------------------

_dims = st.integers(1, 5)


def _shape(draw: Any, rank: int | None = None) -> tuple[int, ...]:
    rank = draw(st.integers(1, 3)) if rank is None else rank
    return tuple(draw(_dims) for _ in range(rank))


def _broadcast_partner(draw: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: trailing dims kept or set to 1."""
    keep = draw(st.integers(0, len(shape)))
    tail = shape[len(shape) - keep:]
    return tuple(1 if draw(st.booleans()) else d for d in tail) or (1,)


class _Graph:
    def __init__(self, draw: Any) -> None:
        self.draw = draw
        self.values: list[list[Any]] = []
        self.info: list[Val] = []

    def add_input(self, shape: tuple[int, ...], dtype: str) -> int:
        bound = {"float32": 2.0, "int32": 5.0, "int64": 5.0, "bool": 1.0}[dtype]
        self.values.append(["input", list(shape), dtype])
        self.info.append(Val(shape, dtype, bound, True, dtype == "bool"))
        return len(self.values) - 1

    def add(self, op: str, args: list[int], attrs: dict[str, Any], val: Val) -> None:
        limit = MAX_BOUND if val.dtype == "float32" else MAX_INT_BOUND
        if val.bound > limit or int(np.prod(val.shape, dtype=np.int64)) > 4096:
            return
        self.values.append([op, args, attrs])
        self.info.append(val)

    def pick(self, pred: Callable[[Val], bool]) -> int | None:
        choices = [i for i, v in enumerate(self.info) if pred(v)]
        return self.draw(st.sampled_from(choices)) if choices else None

    def pick_or_new(self, pred: Callable[[Val], bool], shape: tuple[int, ...],
                    dtype: str) -> int:
        i = self.pick(pred) if self.draw(st.booleans()) else None
        return self.add_input(shape, dtype) if i is None else i

    def step(self) -> None:
        draw = self.draw
        kind = draw(st.sampled_from(["unary", "binary", "binary", "matmul", "reshape",
                                     "transpose", "concat", "reduce", "softmax", "compare",
                                     "where", "clip", "astype", "take", "expand_dims"]))
        getattr(self, "_" + kind)()

    def _take(self) -> None:
        i = self.pick(lambda v: True)
        assert i is not None
        v = self.info[i]
        axis = self.draw(st.integers(0, len(v.shape) - 1))
        k = self.draw(_dims)
        # an index input: values in [-size, size), or one out of range when "oob"
        self.values.append(["index", [k], v.shape[axis], self.draw(st.integers(0, 9)) == 0])
        self.info.append(Val((k,), "int64", float(v.shape[axis]), True))
        j = len(self.values) - 1
        shape = v.shape[:axis] + (k,) + v.shape[axis + 1:]
        self.add("take", [i, j], {"axis": axis}, Val(shape, v.dtype, v.bound, v.exact,
                                                     v.nonneg))

    def _expand_dims(self) -> None:
        i = self.pick(lambda v: len(v.shape) < 4)
        if i is None:
            return
        v = self.info[i]
        axis = self.draw(st.integers(-len(v.shape) - 1, len(v.shape)))
        shape = list(v.shape)
        shape.insert(axis % (len(v.shape) + 1), 1)
        self.add("expand_dims", [i], {"axis": axis}, Val(tuple(shape), v.dtype, v.bound,
                                                         v.exact, v.nonneg))

    def _unary(self) -> None:
        name = self.draw(st.sampled_from(sorted(UNARY)))
        _, bound, exact, nonneg = UNARY[name]
        i = self.pick(lambda v: v.dtype == "float32" and (name != "sqrt" or v.nonneg)
                      and (name != "exp" or v.bound <= 8))
        if i is not None:
            v = self.info[i]
            self.add(name, [i], {}, Val(v.shape, v.dtype, bound(v.bound),
                                        exact and v.exact, nonneg or (v.nonneg and exact)))

    def _binary(self) -> None:
        name = self.draw(st.sampled_from(sorted(BINARY)))
        _, bound, exact, dtypes = BINARY[name]
        i = self.pick(lambda v: v.dtype in dtypes)
        if i is None:
            return
        a = self.info[i]
        if self.draw(st.booleans()):
            j = self.pick(lambda v: v.dtype == a.dtype and _broadcasts(a.shape, v.shape))
        else:
            j = None
        if j is None:
            j = self.add_input(_broadcast_partner(self.draw, a.shape), a.dtype)
        b = self.info[j]
        if self.draw(st.booleans()):
            i, j, a, b = j, i, b, a
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        self.add(name, [i, j], {}, Val(shape, a.dtype, bound(a.bound, b.bound),
                                      exact and a.exact and b.exact))

    def _matmul(self) -> None:
        i = self.pick(lambda v: v.dtype == "float32" and len(v.shape) in (2, 3))
        if i is None:
            return
        a = self.info[i]
        k, n = a.shape[-1], self.draw(_dims)
        j = self.pick_or_new(lambda v: v.dtype == a.dtype and len(v.shape) == 2
                             and v.shape[0] == k, (k, n), a.dtype)
        b = self.info[j]
        shape = a.shape[:-1] + (b.shape[1],)
        self.add("matmul", [i, j], {}, Val(shape, a.dtype, a.bound * b.bound * k, False))

    def _reshape(self) -> None:
        i = self.pick(lambda v: True)
        assert i is not None
        v = self.info[i]
        size = int(np.prod(v.shape))
        shape: list[int] = []
        rest = size
        for _ in range(self.draw(st.integers(0, 2))):
            divisors = [d for d in range(1, rest + 1) if rest % d == 0]
            d = self.draw(st.sampled_from(divisors))
            shape.append(d)
            rest //= d
        shape.append(rest)
        self.add("reshape", [i], {"shape": shape}, Val(tuple(shape), v.dtype, v.bound,
                                                       v.exact, v.nonneg))

    def _transpose(self) -> None:
        i = self.pick(lambda v: len(v.shape) >= 2)
        if i is None:
            return
        v = self.info[i]
        axes = self.draw(st.permutations(range(len(v.shape))))
        shape = tuple(v.shape[a] for a in axes)
        self.add("permute_dims", [i], {"axes": list(axes)},
                 Val(shape, v.dtype, v.bound, v.exact, v.nonneg))

    def _concat(self) -> None:
        i = self.pick(lambda v: v.dtype != "bool")
        assert i is not None
        a = self.info[i]
        axis = self.draw(st.integers(0, len(a.shape) - 1))
        other = a.shape[:axis] + (self.draw(_dims),) + a.shape[axis + 1:]
        j = self.pick_or_new(lambda v: v.dtype == a.dtype and len(v.shape) == len(a.shape)
                             and all(x == y for k, (x, y) in enumerate(zip(v.shape, a.shape))
                                     if k != axis), other, a.dtype)
        b = self.info[j]
        shape = a.shape[:axis] + (a.shape[axis] + b.shape[axis],) + a.shape[axis + 1:]
        self.add("concat", [i, j], {"axis": axis},
                 Val(shape, a.dtype, max(a.bound, b.bound), a.exact and b.exact,
                     a.nonneg and b.nonneg))

    def _reduce(self) -> None:
        name = self.draw(st.sampled_from(sorted(REDUCE)))
        i = self.pick(lambda v: v.dtype == "float32" or (v.dtype == "int32"
                                                         and name != "mean"))
        if i is None:
            return
        v = self.info[i]
        axis = self.draw(st.integers(0, len(v.shape) - 1))
        keep = self.draw(st.booleans())
        shape = list(v.shape)
        if keep:
            shape[axis] = 1
        else:
            del shape[axis]
        if not shape:
            return  # keep every value a tensor of rank >= 1
        bound = v.bound * v.shape[axis] if name == "sum" else v.bound
        exact = v.exact and name in ("max", "min")
        self.add(name, [i], {"axis": [axis], "keepdims": keep},
                 Val(tuple(shape), v.dtype, bound, exact, v.nonneg))

    def _softmax(self) -> None:
        i = self.pick(lambda v: v.dtype == "float32")
        if i is not None:
            v = self.info[i]
            axis = self.draw(st.integers(-len(v.shape), len(v.shape) - 1))
            self.add("nn.softmax", [i], {"axis": axis}, Val(v.shape, v.dtype, 1.0, False, True))

    def _compare(self) -> None:
        name = self.draw(st.sampled_from(["greater", "less_equal", "equal"]))
        i = self.pick(lambda v: v.exact and v.dtype != "bool")
        if i is None:
            return
        a = self.info[i]
        j = self.pick(lambda v: v.exact and v.dtype == a.dtype
                      and _broadcasts(a.shape, v.shape))
        if j is None:
            j = self.add_input(_broadcast_partner(self.draw, a.shape), a.dtype)
        shape = tuple(np.broadcast_shapes(a.shape, self.info[j].shape))
        self.add(name, [i, j], {}, Val(shape, "bool", 1.0, True, True))

    def _where(self) -> None:
        c = self.pick(lambda v: v.dtype == "bool")
        if c is None:
            return
        cond = self.info[c]
        x = self.pick(lambda v: v.dtype != "bool" and _broadcasts(cond.shape, v.shape))
        if x is None:
            return
        a = self.info[x]
        y = self.pick_or_new(lambda v: v.dtype == a.dtype and _broadcasts(
            np.broadcast_shapes(cond.shape, a.shape), v.shape), a.shape, a.dtype)
        b = self.info[y]
        shape = tuple(np.broadcast_shapes(cond.shape, a.shape, b.shape))
        self.add("where", [c, x, y], {}, Val(shape, a.dtype, max(a.bound, b.bound),
                                             a.exact and b.exact, a.nonneg and b.nonneg))

    def _clip(self) -> None:
        i = self.pick(lambda v: v.dtype == "float32")
        if i is None:
            return
        v = self.info[i]
        lo = self.draw(st.sampled_from([-2.0, -1.0, -0.5, 0.0]))
        hi = self.draw(st.sampled_from([0.25, 0.5, 1.0, 3.0]))
        self.add("clip", [i], {"min": lo, "max": hi},
                 Val(v.shape, v.dtype, max(-lo, hi), v.exact, lo >= 0))

    def _astype(self) -> None:
        i = self.pick(lambda v: v.exact or v.dtype != "float32")
        if i is None:
            return
        v = self.info[i]
        to = self.draw(st.sampled_from([d for d in ("float32", "int32") if d != v.dtype]))
        bound = float(math.floor(v.bound)) if to == "int32" else v.bound
        exact = v.exact and (to != "float32" or v.bound < 2 ** 24)
        self.add("astype", [i], {"dtype": to}, Val(v.shape, to, bound, exact, v.nonneg))


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


@st.composite
def _graphs(draw: Any) -> dict[str, Any]:
    g = _Graph(draw)
    for _ in range(draw(st.integers(1, 2))):
        dtype = draw(st.sampled_from(["float32", "float32", "float32", "int32"]))
        g.add_input(_shape(draw), dtype)
    for _ in range(draw(st.integers(1, 7))):
        g.step()
    if len(g.values) == sum(v[0] in _INPUTS for v in g.values):
        g.add("abs" if g.info[0].dtype == "float32" else "negative", [0], {},
              Val(g.info[0].shape, g.info[0].dtype, g.info[0].bound, True))
    return {"values": g.values, "seed": draw(st.integers(0, 2 ** 31 - 1)),
            "bounds": [v.bound for v in g.info]}


def cases() -> st.SearchStrategy[dict[str, Any]]:
    """Random graphs with a seed for their input data."""
    return _graphs()


# -- evaluation -----------------------------------------------------------------------------

class _Refused(Exception):
    """The graph must fail at run time with a message containing ``args[0]``."""


def _numpy_value(op: str, args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    if op in UNARY:
        return UNARY[op][0](args[0]).astype(args[0].dtype)
    if op in BINARY:
        if op in ("floor_divide", "floor_mod") and not np.all(args[1]):
            raise _Refused("by zero")
        return BINARY[op][0](args[0], args[1]).astype(args[0].dtype)
    if op == "matmul":
        return np.matmul(args[0], args[1])
    if op == "reshape":
        return args[0].reshape(attrs["shape"])
    if op == "permute_dims":
        return np.transpose(args[0], attrs["axes"])
    if op == "concat":
        return np.concatenate(args, axis=attrs["axis"])
    if op in REDUCE:
        out = REDUCE[op](args[0], axis=tuple(attrs["axis"]), keepdims=attrs["keepdims"])
        return np.asarray(out).astype(args[0].dtype)
    if op == "nn.softmax":
        return _np_softmax(args[0], attrs["axis"]).astype(args[0].dtype)
    if op in ("greater", "less_equal", "equal"):
        return getattr(np, op)(args[0], args[1])
    if op == "where":
        return np.where(*args)
    if op == "clip":
        return np.clip(args[0], attrs["min"], attrs["max"]).astype(args[0].dtype)
    if op == "astype":
        return args[0].astype(attrs["dtype"])
    if op == "take":
        size = args[0].shape[attrs["axis"]]
        if np.any((args[1] < -size) | (args[1] >= size)):
            raise _Refused("out of range")
        return np.take(args[0], args[1], axis=attrs["axis"])
    if op == "expand_dims":
        return np.expand_dims(args[0], attrs["axis"])
    raise KeyError(op)


#: value kinds that are graph inputs: ["input", shape, dtype], ["index", shape, size, oob]
_INPUTS = ("input", "index")


def _outputs(values: list[list[Any]]) -> list[int]:
    used = {a for v in values if v[0] not in _INPUTS for a in v[1]}
    return [i for i, v in enumerate(values) if v[0] not in _INPUTS and i not in used]


def _inputs(case: dict[str, Any]) -> list[np.ndarray]:
    rng = np.random.default_rng(case["seed"])
    arrays = []
    for v in case["values"]:
        if v[0] == "index":
            idx = rng.integers(-v[2], v[2], v[1]).astype("int64")
            if v[3]:
                idx[rng.integers(0, len(idx))] = rng.choice([v[2], -v[2] - 1])
            arrays.append(idx)
        elif v[0] == "input":
            shape, dtype = v[1], v[2]
            if dtype == "float32":
                arrays.append(rng.uniform(-2, 2, shape).astype("float32"))
            elif dtype in ("int32", "int64"):
                arrays.append(rng.integers(-5, 6, shape).astype(dtype))
            else:
                arrays.append(rng.integers(0, 2, shape).astype("bool"))
    return arrays


def reference(case: dict[str, Any], inputs: list[np.ndarray]) -> list[np.ndarray] | str:
    """The outputs computed with numpy, or the text the run-time error must contain (an
    integer division by zero, an index out of range)."""
    env: list[np.ndarray] = []
    feed = iter(inputs)
    try:
        with np.errstate(all="ignore"):
            for v in case["values"]:
                if v[0] in _INPUTS:
                    env.append(next(feed))
                else:
                    env.append(_numpy_value(v[0], [env[a] for a in v[1]], v[2]))
    except _Refused as err:
        return str(err.args[0])
    return [env[i] for i in _outputs(case["values"])]


def build_module(case: dict[str, Any], constants: list[np.ndarray] | None = None) -> Any:
    """The graph as an IRModule: inputs as parameters, or as the given constants."""
    from tvm import relax

    bb = relax.BlockBuilder()
    params = [relax.Var(f"x{i}", relax.TensorStructInfo(v[1], v[2] if v[0] == "input"
                                                        else "int64"))
              for i, v in enumerate(case["values"]) if v[0] in _INPUTS]
    feed = iter(params if constants is None else [relax.const(c) for c in constants])
    with bb.function("main", params if constants is None else []):
        with bb.dataflow():
            env = []
            for v in case["values"]:
                if v[0] in _INPUTS:
                    env.append(next(feed))
                    continue
                args = [env[a] for a in v[1]]
                if v[0] == "concat":
                    call = _r("concat")(args, **v[2])
                else:
                    call = _r(v[0])(*args, **v[2])
                env.append(bb.emit(call))
            outs = [env[i] for i in _outputs(case["values"])]
            out = bb.emit_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
        bb.emit_func_output(out)
    return bb.get()


def _run(mod: Any, inputs: list[np.ndarray], what: str) -> list[np.ndarray] | Exception:
    import tvm.runtime
    from tvm import relax

    try:
        ex = relax.build(mod, target="llvm")
    except Exception as err:  # noqa: BLE001 - a well-typed graph must compile
        raise Failure("build-error", f"{what}: relax.build raised {describe(err)}") from err
    vm = relax.VirtualMachine(ex, tvm.runtime.cpu())
    try:
        out = vm["main"](*inputs)
    except Exception as err:  # noqa: BLE001 - classified by the caller
        return err
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o.numpy() for o in outs]


def _compare(actual: list[np.ndarray], expected: list[np.ndarray], bounds: list[float],
             what: str) -> None:
    if len(actual) != len(expected):
        raise Failure("wrong-answer", f"{what}: {len(actual)} outputs, expected {len(expected)}")
    for k, (a, e, b) in enumerate(zip(actual, expected, bounds)):
        if a.shape != e.shape or a.dtype != e.dtype:
            raise Failure("wrong-answer", f"{what}: output {k} is {a.dtype}{list(a.shape)}, "
                          f"expected {e.dtype}{list(e.shape)}")
        if e.dtype.kind == "f":
            ok = np.allclose(a, e, rtol=1e-4, atol=1e-5 * max(1.0, b), equal_nan=True)
        else:
            ok = np.array_equal(a, e)
        if not ok:
            bad = np.argwhere(~np.isclose(a, e, rtol=1e-4, atol=1e-5 * max(1.0, b),
                                          equal_nan=True) if e.dtype.kind == "f" else a != e)
            idx = tuple(bad[0]) if len(bad) else ()
            raise Failure("wrong-answer", f"{what}: output {k} differs at {list(idx)}: "
                          f"{a[idx]!r} vs {e[idx]!r}")


def check(case: dict[str, Any]) -> str:
    """Build and run the graph; compare with numpy and with its constant-folded form."""
    from tvm.relax.transform import FoldConstant

    inputs = _inputs(case)
    expected = reference(case, inputs)
    bounds = [case["bounds"][i] for i in _outputs(case["values"])]
    runtime = _run(build_module(case), inputs, "runtime")
    try:
        folded_mod = FoldConstant()(build_module(case, inputs))
    except Exception as err:  # noqa: BLE001 - folding must not fail on a valid graph
        raise Failure("fold-error", f"FoldConstant raised {describe(err)}") from err
    folded = _run(folded_mod, [], "folded")
    for what, got in (("runtime", runtime), ("folded", folded)):
        if isinstance(expected, str):
            if not isinstance(got, Exception) or expected not in str(got):
                raise Failure("wrong-answer", f"{what}: gave "
                              f"{describe(got) if isinstance(got, Exception) else 'values'}, "
                              f"expected the documented error ('{expected}', as numpy)")
            continue
        if isinstance(got, Exception):
            raise Failure("unexpected-exception", f"{what}: the VM raised {describe(got)}")
        _compare(got, expected, bounds, f"{what} vs numpy")
    if isinstance(expected, str):
        return f"refused at run time ({expected})"
    assert not isinstance(runtime, Exception) and not isinstance(folded, Exception)
    _compare(folded, runtime, bounds, "folded vs runtime")
    return "same values"
