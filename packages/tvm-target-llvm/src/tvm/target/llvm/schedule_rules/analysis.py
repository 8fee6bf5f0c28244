"""Structural analysis of blocks: what a block computes, read from its IR alone.

The rules never look at names.  :func:`analyze_block` reads a block's iteration variables,
its store and its loads and returns a :class:`BlockInfo`; :func:`match_contraction` decides
whether a reduction is a sum of products of two operands (matmul, batch matmul, dense,
conv2d of any layout, depthwise or grouped) and assigns the iteration variables their
roles in a register-blocked micro-kernel.

Index expressions are read as linear forms ``sum(coef * var) + rest`` over the block's
iteration variables (:func:`linear_form`); an index that is not linear in them (``k // 8``)
counts as a non-contiguous use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tvm.ffi import structural_equal
from tvm.ir.op import Op
from tvm.tir.expr import (
    Add, BufferLoad, Call, Cast, FloatImm, FloorDiv, IntImm, IterVarType, Max, Min, Mul, PrimExpr,
    Select, Sub, Var,
)
from tvm.tir.stmt import BufferStore
from tvm.tir.stmt_functor import post_order_visit, uses_var

__all__ = [
    "BlockInfo", "Access", "Contraction", "analyze_block", "match_contraction",
    "contraction_candidates", "linear_form", "is_padding_like",
]


def linear_form(expr: PrimExpr, ivars: list[Var]) -> Optional[tuple[dict[int, int], bool]]:
    """``({index of var: coefficient}, has_rest)`` if ``expr`` is linear in ``ivars`` with
    constant coefficients (``has_rest``: a term free of them remains); ``None`` otherwise."""
    ids = {id(v): k for k, v in enumerate(ivars)}

    def go(e: PrimExpr, scale: int, out: dict[int, int]) -> Optional[bool]:
        if isinstance(e, Var):
            k = ids.get(id(e))
            if k is None:
                return True
            out[k] = out.get(k, 0) + scale
            return False
        if isinstance(e, IntImm):
            return e.value != 0
        if isinstance(e, Add):
            a, b = go(e.a, scale, out), go(e.b, scale, out)
            return None if a is None or b is None else a or b
        if isinstance(e, Sub):
            a, b = go(e.a, scale, out), go(e.b, -scale, out)
            return None if a is None or b is None else a or b
        if isinstance(e, Mul):
            for c, x in ((e.a, e.b), (e.b, e.a)):
                if isinstance(c, IntImm):
                    return go(x, scale * c.value, out)
        if isinstance(e, Cast):
            return go(e.value, scale, out)
        if isinstance(e, FloorDiv) and isinstance(e.b, IntImm) and e.b.value == 1:
            return go(e.a, scale, out)  # ``c // 1 * 1 + rc`` of a depthwise legalization
        if not uses_var(e, lambda v: id(v) in ids):
            return True
        return None

    out: dict[int, int] = {}
    rest = go(expr, 1, out)
    if rest is None:
        return None
    return {k: c for k, c in out.items() if c != 0}, rest


@dataclass
class Access:
    """One buffer access of a block: the load (or store), per index its linear form over
    the iteration variables (``None`` when not linear) and the variables it uses."""

    load: Any  # BufferLoad or BufferStore
    forms: list[Optional[dict[int, int]]]
    vars_in: list[set[int]]

    @property
    def buffer(self) -> Any:
        return self.load.buffer

    def uses(self, k: int) -> bool:
        """Whether iteration variable ``k`` appears in any index."""
        return any(k in used for used in self.vars_in)

    def contiguous_in(self, k: int) -> bool:
        """Variable ``k`` appears only in the last index, linearly with coefficient 1."""
        if not self.forms or self.forms[-1] is None or self.forms[-1].get(k) != 1:
            return False
        return not any(k in used for used in self.vars_in[:-1])


@dataclass
class BlockInfo:
    """What a block computes (see :func:`analyze_block`)."""

    sref: Any
    name: str
    ivars: list[Var]
    kinds: list[str]            # "S" (data-parallel) or "R" (reduction) per variable
    extents: list[Optional[int]]  # constant extents (None when symbolic)
    store: Optional[BufferStore]
    write: Optional[Access]
    loads: list[Access]
    reducer: Optional[str]      # "sum" / "max" / "min" for a simple reduction, else None
    update: Optional[PrimExpr]  # the value combined into the output (reductions)
    trivial_binding: bool
    dtype: str = "float32"

    @property
    def is_spatial(self) -> bool:
        return all(k == "S" for k in self.kinds) and self.sref.block.init is None

    @property
    def is_reduction(self) -> bool:
        return "R" in self.kinds

    @property
    def spatial(self) -> list[int]:
        return [k for k, t in enumerate(self.kinds) if t == "S"]

    @property
    def reduce(self) -> list[int]:
        return [k for k, t in enumerate(self.kinds) if t == "R"]

    def out_position(self, k: int) -> Optional[int]:
        """The output dimension indexed by exactly variable ``k``, if any."""
        if self.write is None:
            return None
        for d, f in enumerate(self.write.forms):
            if f == {k: 1} and not _has_rest(self.write.load.indices[d], self.ivars):
                return d
        return None


def _has_rest(expr: PrimExpr, ivars: list[Var]) -> bool:
    form = linear_form(expr, ivars)
    return form is None or form[1]


def _access(node: Any, ivars: list[Var]) -> Access:
    ids = {id(v): k for k, v in enumerate(ivars)}
    forms: list[Optional[dict[int, int]]] = []
    vars_in: list[set[int]] = []
    for idx in node.indices:
        form = linear_form(idx, ivars)
        forms.append(None if form is None else form[0])
        used: set[int] = set()
        post_order_visit(idx, lambda n, u=used: u.add(ids[id(n)])
                         if isinstance(n, Var) and id(n) in ids else None)
        vars_in.append(used)
    return Access(node, forms, vars_in)


def _loads(expr: PrimExpr) -> list[BufferLoad]:
    out: list[BufferLoad] = []
    post_order_visit(expr, lambda n: out.append(n) if isinstance(n, BufferLoad) else None)
    return out


def _match_update(store: BufferStore) -> tuple[Optional[str], Optional[PrimExpr]]:
    """``("sum", rhs)`` for ``C[i] = C[i] + rhs``; ``"max"``/``"min"`` likewise."""
    value = store.value

    def is_self(e: Any) -> bool:
        return isinstance(e, BufferLoad) and e.buffer is store.buffer and \
            len(e.indices) == len(store.indices) and \
            all(a is b or structural_equal(a, b, map_free_vars=False)
                for a, b in zip(e.indices, store.indices))

    for cls, name in ((Add, "sum"), (Max, "max"), (Min, "min")):
        if isinstance(value, cls):
            if is_self(value.a):
                return name, value.b
            if is_self(value.b):
                return name, value.a
    return None, None


def analyze_block(sch: Any, block_rv: Any) -> BlockInfo:
    """The :class:`BlockInfo` of a block of ``sch``."""
    from tvm.tir.schedule import analysis as A

    sref = sch.get_sref(block_rv)
    block = sref.block
    ivars = [iv.var for iv in block.iter_vars]
    kinds = []
    for iv in block.iter_vars:
        if iv.iter_type == IterVarType.DATA_PAR:
            kinds.append("S")
        elif iv.iter_type == IterVarType.COMM_REDUCE:
            kinds.append("R")
        else:
            kinds.append("O")
    extents = [iv.dom.extent.value if isinstance(iv.dom.extent, IntImm) else None
               for iv in block.iter_vars]
    store = block.body if isinstance(block.body, BufferStore) else None
    write = _access(store, ivars) if store is not None else None
    reducer, update = (None, None)
    loads: list[Access] = []
    if store is not None:
        if "R" in kinds:
            reducer, update = _match_update(store)
        source = update if update is not None else store.value
        loads = [_access(ld, ivars) for ld in _loads(source)]
    dtype = store.buffer.dtype if store is not None else "float32"
    return BlockInfo(sref, block.name_hint, ivars, kinds, extents, store, write, loads,
                     reducer, update, A.is_trivial_binding(sref), dtype)


def is_padding_like(info: BlockInfo) -> bool:
    """A spatial block whose value selects between a load and a constant by a condition on
    its indices (``pad[...] = if_then_else(in bounds, X[...], 0)``)."""
    if not info.is_spatial or info.store is None:
        return False
    found = False

    def visit(n: Any) -> None:
        nonlocal found
        if isinstance(n, Select) or (isinstance(n, Call) and isinstance(n.op, Op)
                                      and n.op.name == "tir.if_then_else"):
            found = True

    post_order_visit(info.store.value, visit)
    return found


@dataclass
class Contraction:
    """Roles of a sum-of-products reduction ``C[...] += X[...] * Y[...]``.

    ``vec`` is the data-parallel variable vectorized in the micro-kernel (the output's last
    index, contiguous or absent in each operand); ``row`` the variable unrolled next to it
    (its operand is broadcast to the vector lanes); ``shared`` the data-parallel variables
    used by both operands (batch, depthwise channel), ``vec_group`` / ``row_group`` those of
    only the vector-side / broadcast-side operand, ``reduce`` the reduction variables.
    """

    vec: int
    row: Optional[int]
    shared: list[int]
    vec_group: list[int]
    row_group: list[int]
    reduce: list[int]
    operands: list[Access]
    pack: list[int]  # operands reading ``vec`` in another dimension than the last
    transpose_output: bool = False  # ``vec`` is not the output's last index
    #: ``vec`` appears in a condition of the product (an inlined padding
    #: ``if_then_else(0 <= w + rw - 1 < W, X[...], 0)``): the lanes would need a mask each,
    #: so the vectorizer leaves such a loop scalar
    guarded: bool = False
    #: the output variable just outside ``vec`` (the image height of a 1x1 convolution)
    #: when every operand reads the two as one contiguous run (``X[n, c, h, w]`` with
    #: ``w`` spanning the whole row): the kernel may fuse them into one vector variable
    fusable: Optional[int] = None


def _product_factors(e: PrimExpr) -> list[PrimExpr]:
    while isinstance(e, Cast):
        e = e.value
    if isinstance(e, Mul):
        return _product_factors(e.a) + _product_factors(e.b)
    return [e]


def match_contraction(info: BlockInfo, vec: Optional[int] = None) -> Optional[Contraction]:
    """The :class:`Contraction` of a sum-of-products reduction block, or ``None``.

    ``vec`` picks the vectorized variable: by default the one of the output's last index;
    another output variable gives a contraction with ``transpose_output`` (the kernel
    accumulates in a copy of the output with that variable last, see
    :func:`contraction_candidates`).
    """
    operands = _contraction_operands(info)
    if operands is None:
        return None
    last = info.write.forms[-1] if info.write.forms else None  # type: ignore[union-attr]
    if not last:
        return None
    default = next(iter(last))
    vec = default if vec is None else vec
    if info.kinds[vec] != "S" or info.out_position(vec) is None:
        return None
    pack: list[int] = []
    for n, op in enumerate(operands):
        if op.contiguous_in(vec) or not op.uses(vec):
            continue
        if not _packable(op, vec, info):
            return None
        pack.append(n)
    if (pack or vec != default) and all(op.uses(vec) for op in operands):
        return None  # nothing to broadcast: packing would not pay
    spatial = info.spatial
    in_ops = {k: [n for n, op in enumerate(operands) if op.uses(k)] for k in spatial}
    shared = [k for k in spatial if len(in_ops[k]) >= 2 and k != vec]
    vec_side = [n for n, op in enumerate(operands) if op.uses(vec)]
    vec_group = [k for k in spatial if k != vec and k not in shared
                 and in_ops[k] and all(n in vec_side for n in in_ops[k])]
    row_group = [k for k in spatial if k != vec and k not in shared and k not in vec_group]
    row = _pick_row(info, row_group, vec_group, shared)
    return Contraction(vec, row, shared, vec_group, row_group, info.reduce, operands, pack,
                       transpose_output=vec != default,
                       guarded=vec in _condition_vars(info),
                       fusable=_fusable_outer(info, vec, operands, vec_group, row))


def _fusable_outer(info: BlockInfo, vec: int, operands: list[Access], vec_group: list[int],
                   row: Optional[int]) -> Optional[int]:
    """The output variable indexing the dimension before ``vec``'s when it and ``vec``
    index the last two dimensions of the output and of every operand reading them, with
    coefficient 1, the rest of those indices iteration variables of extent 1 only, and
    ``vec`` spanning the whole last dimension: ``(outer, vec)`` then walk one contiguous
    run of memory."""
    pos = info.out_position(vec)
    out = info.write
    if pos is None or out is None or pos != len(out.forms) - 1 or pos == 0:
        return None
    outer_form = out.forms[pos - 1]
    if not outer_form or len(outer_form) != 1:
        return None
    outer = next(iter(outer_form))
    if outer != vec - 1 or outer not in vec_group or outer == row or \
            info.out_position(outer) != pos - 1:
        return None
    ext = info.extents[vec]
    if ext is None or info.extents[outer] is None:
        return None

    def exact(op: Access, d: int, k: int) -> bool:
        form = op.forms[d]
        return form is not None and form.get(k) == 1 and \
            all(info.extents[j] == 1 for j in form if j != k) and \
            not _has_rest(op.load.indices[d], info.ivars)

    for op in [out, *[o for o in operands if o.uses(vec) or o.uses(outer)]]:
        nd = len(op.forms)
        if nd < 2 or not exact(op, nd - 1, vec) or not exact(op, nd - 2, outer):
            return None
        if any(vec in used or outer in used for used in op.vars_in[:nd - 2]):
            return None
        last = op.buffer.shape[-1]
        if not isinstance(last, IntImm) or last.value != ext:
            return None
    return outer


def _condition_vars(info: BlockInfo) -> set[int]:
    """Iteration variables used in a condition (``if_then_else``, ``Select``) of the
    block's update."""
    ids = {id(v): k for k, v in enumerate(info.ivars)}
    conds: list[PrimExpr] = []

    def visit(n: Any) -> None:
        if isinstance(n, Select):
            conds.append(n.condition)
        elif isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "tir.if_then_else":
            conds.append(n.args[0])

    if info.update is not None:
        post_order_visit(info.update, visit)
    out: set[int] = set()
    for c in conds:
        post_order_visit(c, lambda n: out.add(ids[id(n)])
                         if isinstance(n, Var) and id(n) in ids else None)
    return out


def contraction_candidates(info: BlockInfo) -> list[Contraction]:
    """Every way to vectorize a contraction: the output's last variable first (when its
    operands read it contiguously or can be packed), then the other output variables not
    read by some operand (an output channel of an NCHW convolution: its weights are packed
    and the tile accumulates channels-last)."""
    first = match_contraction(info)
    out = [first] if first is not None else []
    for k in info.spatial:
        con = match_contraction(info, k)
        if con is not None and con.transpose_output:
            out.append(con)
    return out


def _contraction_operands(info: BlockInfo) -> Optional[list[Access]]:
    """The loads multiplied in a ``C[...] += X[...] * Y[...]`` block whose output indices
    are distinct data-parallel variables; None for anything else."""
    if info.reducer != "sum" or info.update is None or not info.trivial_binding:
        return None
    if "O" in info.kinds or info.write is None:
        return None
    factors = [f for f in _product_factors(info.update)
               if not isinstance(f, (FloatImm, IntImm))]
    operand_loads = [_loads(f) for f in factors]
    if len(factors) < 2 or any(len(ls) == 0 for ls in operand_loads):
        return None
    # each factor's main load (a padded input inlined as if_then_else still has one load)
    operands = []
    for ls in operand_loads:
        if len({id(ld.buffer) for ld in ls}) != 1:
            return None
        operands.append(_access(ls[0], info.ivars))
    if len({id(op.buffer) for op in operands}) != len(operands):
        return None  # a sum of squares or similar: a plain reduction
    if sum(1 for op in operands if any(op.uses(r) for r in info.reduce)) < 2:
        return None
    if any(f is None or len(f) != 1 or next(iter(f.values())) != 1 for f in info.write.forms):
        return None
    return operands


def _packable(op: Access, vec: int, info: BlockInfo) -> bool:
    """``vec`` indexes exactly one whole dimension of the operand (``W[j, k]`` of a dense
    layer; ``X[n, c // 1 * 1 + rc, ...]`` with ``rc`` of extent 1 counts too): a packed
    copy ``W[j // NR, k, j % NR]`` makes it contiguous."""
    extent = info.extents[vec]
    dims = [d for d, used in enumerate(op.vars_in) if vec in used]
    if len(dims) != 1 or extent is None:
        return False
    d = dims[0]
    dim = op.buffer.shape[d]
    form = op.forms[d]
    if form is None or form.get(vec) != 1 or _has_rest(op.load.indices[d], info.ivars):
        return False
    if any(info.extents[k] != 1 for k in form if k != vec):
        return False
    return isinstance(dim, IntImm) and dim.value == extent


def _pick_row(info: BlockInfo, row_group: list[int], vec_group: list[int],
              shared: list[int]) -> Optional[int]:
    """The variable to unroll beside the vector one: preferably one only the broadcast
    operand reads (each broadcast value then feeds a vector of outputs), the innermost in
    the output's order; else the innermost other data-parallel variable of extent > 1."""
    def order(k: int) -> int:
        pos = info.out_position(k)
        return -1 if pos is None else pos

    for group in (row_group, vec_group, shared):
        cands = [k for k in group if info.extents[k] != 1]
        if cands:
            return max(cands, key=order)
    return None
