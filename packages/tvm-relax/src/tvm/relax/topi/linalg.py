"""Linear algebra te computes: numpy ``matmul`` and ``einsum``."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tvm import te
from tvm.tir.expr import IntImm, PrimExpr
from tvm.tir.expr_util import is_const_int

from ._util import broadcast_index, cast, int64, simplify
from .elemwise import _out_shape

__all__ = ["matmul", "einsum", "parse_einsum", "einsum_label_sizes"]


def matmul(a: te.Tensor, b: te.Tensor, out_dtype: Optional[str] = None) -> te.Tensor:
    """numpy ``matmul``: batch dimensions broadcast, 1-d operands promoted then squeezed.

    Products are accumulated in ``out_dtype`` (default: ``a``'s dtype).
    """
    dtype = out_dtype if out_dtype and out_dtype != "void" else a.dtype
    a_batch = tuple(a.shape[:-2]) if a.ndim > 1 else ()
    b_batch = tuple(b.shape[:-2]) if b.ndim > 1 else ()
    batch = _out_shape(a_batch, b_batch) if (a_batch or b_batch) else ()
    nb = len(batch)
    out_shape = list(batch)
    if a.ndim > 1:
        out_shape.append(a.shape[-2])
    if b.ndim > 1:
        out_shape.append(b.shape[-1])
    k = te.reduce_axis((0, a.shape[-1]), name="k")

    def f(*idx: Any) -> Any:
        bidx = idx[:nb]
        rest = list(idx[nb:])
        i = rest.pop(0) if a.ndim > 1 else None
        j = rest.pop(0) if b.ndim > 1 else None
        a_idx = (*broadcast_index(bidx, a_batch), i, k) if a.ndim > 1 else (k,)
        b_idx = (*broadcast_index(bidx, b_batch), k, j) if b.ndim > 1 else (k,)
        return te.sum(cast(a(*a_idx), dtype) * cast(b(*b_idx), dtype), axis=k)

    return te.compute(tuple(out_shape), f, name="T_matmul")


# -- einsum ------------------------------------------------------------------------------------
def parse_einsum(subscripts: str, ndims: Sequence[int]) -> tuple[list[list[str]], list[str]]:
    """Per operand its list of labels (one per dimension) and the output's labels.

    Letters label themselves; the dimensions an ellipsis covers get the labels ``.0``,
    ``.1``, ... aligned to the right across operands (they broadcast like numpy).  Without
    ``->`` the output is the ellipsis followed by the letters used once, sorted.
    Raises ValueError with the problem for malformed subscripts.
    """
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(terms)} operand(s), "
                         f"given {len(ndims)}")
    parsed = [_einsum_term(t, subscripts) for t in terms]
    ellipsis_dims = []
    for k, ((letters, has_ellipsis), ndim) in enumerate(zip(parsed, ndims)):
        extra = ndim - len(letters)
        if extra < 0 or (extra > 0 and not has_ellipsis):
            raise ValueError(f"einsum: operand {k} has {ndim} dimension(s) but its subscript "
                             f"{terms[k]!r} labels {len(letters)}")
        ellipsis_dims.append(extra if has_ellipsis else 0)
    width = max(ellipsis_dims, default=0)
    labels = []
    for (letters, has_ellipsis), term, extra in zip(parsed, terms, ellipsis_dims):
        if not has_ellipsis:
            labels.append(list(letters))
            continue
        before = term.index("...")
        n_before = sum(c.isalpha() for c in term[:before])
        dots = [f".{width - extra + j}" for j in range(extra)]
        labels.append([*letters[:n_before], *dots, *letters[n_before:]])
    dots_out = [f".{j}" for j in range(width)]
    if not arrow:
        counts: dict[str, int] = {}
        for letters, _ in parsed:
            for c in letters:
                counts[c] = counts.get(c, 0) + 1
        return labels, dots_out + sorted(c for c, n in counts.items() if n == 1)
    out_letters, out_ellipsis = _einsum_term(rhs, subscripts)
    if len(set(out_letters)) != len(out_letters):
        raise ValueError(f"einsum: the output {rhs!r} repeats a subscript")
    used = {c for letters, _ in parsed for c in letters}
    unknown = [c for c in out_letters if c not in used]
    if unknown:
        raise ValueError(f"einsum: output subscript(s) {', '.join(unknown)} appear in no input")
    if width and not out_ellipsis:
        raise ValueError(f"einsum: the inputs' '...' covers {width} dimension(s), so the "
                         f"output {rhs!r} needs '...' too")
    if not out_ellipsis:
        return labels, list(out_letters)
    before = rhs.index("...")
    n_before = sum(c.isalpha() for c in rhs[:before])
    return labels, [*out_letters[:n_before], *dots_out, *out_letters[n_before:]]


def _einsum_term(term: str, subscripts: str) -> tuple[str, bool]:
    has_ellipsis = "..." in term
    letters = term.replace("...", "", 1)
    bad = [c for c in letters if not c.isascii() or not c.isalpha()]
    if bad or "." in letters:
        raise ValueError(f"einsum: invalid subscript {term!r} in {subscripts!r} (letters and one "
                         "'...' allowed)")
    return letters, has_ellipsis


def einsum_label_sizes(labels: Sequence[Sequence[str]], shapes: Sequence[Sequence[Any]],
                       ) -> dict[str, Any]:
    """The size of each label: the dimensions it labels, where size 1 broadcasts.

    Raises ValueError naming the label when two constant sizes (other than 1) differ.
    """
    sizes: dict[str, Any] = {}
    for k, (term, shape) in enumerate(zip(labels, shapes)):
        for label, dim in zip(term, shape):
            old = sizes.get(label)
            if old is None or is_const_int(old, 1):
                sizes[label] = dim
            elif not is_const_int(dim, 1):
                a, b = simplify(int64(old)), simplify(int64(dim))
                if isinstance(a, IntImm) and isinstance(b, IntImm) and a.value != b.value:
                    what = "an '...' dimension" if label.startswith(".") else f"subscript {label!r}"
                    raise ValueError(f"einsum: {what} has size {a.value} and {b.value} "
                                     f"(operand {k})")
    return sizes


def einsum(subscripts: str, *operands: te.Tensor) -> te.Tensor:
    """numpy ``einsum`` (explicit or implicit output, ``...`` broadcasting, repeated
    subscripts in an operand take its diagonal); sums over the labels not in the output."""
    labels, out = parse_einsum(subscripts, [len(t.shape) for t in operands])
    sizes = einsum_label_sizes(labels, [t.shape for t in operands])
    summed = []
    for term in labels:
        for label in term:
            if label not in out and label not in summed:
                summed.append(label)
    axes = {label: te.reduce_axis((0, sizes[label]), name=f"r_{label.strip('.') or 'e'}")
            for label in summed}
    dtype = operands[0].dtype

    def f(*idx: Any) -> PrimExpr:
        env = dict(zip(out, idx))
        env.update({label: ax.var for label, ax in axes.items()})
        product = None
        for t, term in zip(operands, labels):
            index = [IntImm("int64", 0) if is_const_int(dim, 1) and not is_const_int(sizes[label], 1) else env[label]
                     for dim, label in zip(t.shape, term)]
            value = cast(t(*index), dtype)
            product = value if product is None else product * value
        if not axes:
            return product
        return te.sum(product, axis=list(axes.values()))

    return te.compute(tuple(sizes[label] for label in out), f, name="einsum")
