"""Convolution and pooling te computes, for any layout given as a string.

A data layout names its axes with ``N`` (batch), ``C`` (channels) and spatial letters
(``D``, ``H``, ``W``) in memory order, e.g. ``NCHW`` or ``NHWC``; a kernel layout uses ``O``
(output channels), ``I`` (input channels per group) and the same spatial letters, e.g.
``OIHW`` or ``HWIO``.  The computes index tensors through these layouts, so no transposes
are inserted.  Padding is given as (before..., after...) per spatial dimension.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from tvm import te, tir
from tvm.tir.expr import GE, LT, FloorDiv, FloorMod, IntImm, PrimExpr, Select

from ._util import cast, int64, is_float, simplify

__all__ = [
    "Layout", "conv", "conv_transpose", "pool", "adaptive_pool", "conv_out_dim", "pool_out_dim",
    "col2im",
]


class Layout:
    """Positions of named axes in a layout string (``Layout("NHWC").pos("C") == 3``)."""

    def __init__(self, text: str):
        self.text = text
        self.spatial = [c for c in text if c in "DHW"]

    def pos(self, letter: str) -> int:
        return self.text.index(letter)

    def index(self, values: dict[str, Any]) -> list:
        """Indices in layout order from ``{"N": n, "C": c, "H": h, ...}``."""
        return [values[c] for c in self.text]

    def split(self, idx: Sequence[Any]) -> dict[str, Any]:
        return dict(zip(self.text, idx))

    def dims(self, shape: Sequence[Any]) -> dict[str, Any]:
        return dict(zip(self.text, shape))


def conv_out_dim(size: Any, kernel: Any, stride: int, dilation: int, before: int, after: int) -> Any:
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def pool_out_dim(size: Any, kernel: int, stride: int, dilation: int, before: int, after: int,
                 ceil_mode: bool) -> Any:
    """Output length of a pooling window sweep; ``ceil_mode`` keeps a last partial window
    only if it starts inside the input or the leading padding (PyTorch's rule)."""
    span = size + before + after - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return span // stride + 1
    out = (span + stride - 1) // stride + 1
    n = simplify(int64(size))
    if isinstance(n, IntImm):
        out_v = simplify(int64(out))
        if isinstance(out_v, IntImm) and (out_v.value - 1) * stride >= n.value + before:
            return out_v.value - 1
    return out


def _spatial_sizes(layout: Layout, shape: Sequence[Any]) -> list:
    dims = layout.dims(shape)
    return [dims[c] for c in layout.spatial]


def conv(
    data: te.Tensor, weight: te.Tensor, strides: Sequence[int], padding: Sequence[int],
    dilation: Sequence[int], groups: int, data_layout: str, kernel_layout: str,
    out_layout: Optional[str] = None, out_dtype: Optional[str] = None,
) -> te.Tensor:
    """N-d grouped convolution (cross-correlation, like every DL framework)."""
    dl, kl = Layout(data_layout), Layout(kernel_layout)
    ol = Layout(out_layout or data_layout)
    nsp = len(dl.spatial)
    dtype = out_dtype if out_dtype and out_dtype != "void" else data.dtype
    ddims, kdims = dl.dims(data.shape), kl.dims(weight.shape)
    ksizes = [kdims[c] for c in kl.spatial]
    in_sizes = _spatial_sizes(dl, data.shape)
    out_sp = [simplify(int64(conv_out_dim(int64(s), int64(k), st, d, padding[i], padding[i + nsp])))
              for i, (s, k, st, d) in enumerate(zip(in_sizes, ksizes, strides, dilation))]
    cin_g = kdims["I"]
    cout = kdims["O"]
    cout_g = simplify(int64(cout) // groups)
    rc = te.reduce_axis((0, cin_g), name="rc")
    rs = [te.reduce_axis((0, k), name=f"r{c.lower()}") for c, k in zip(kl.spatial, ksizes)]
    out_dims = {"N": ddims["N"], "C": cout, **dict(zip(dl.spatial, out_sp))}

    def f(*idx: Any) -> PrimExpr:
        o = ol.split(idx)
        oc = o["C"]
        g = FloorDiv(oc, cout_g) if groups > 1 else None
        ic = g * int64(cin_g) + rc.var if g is not None else rc.var
        pos, inside = {}, []
        for i, c in enumerate(dl.spatial):
            p = o[c] * strides[i] + rs[i].var * dilation[i] - padding[i]
            pos[c] = p
            if padding[i] or padding[i + nsp]:
                inside += [GE(p, IntImm("int64", 0)), LT(p, int64(in_sizes[i]))]
        x = data(*dl.index({"N": o["N"], "C": ic, **pos}))
        if inside:
            x = tir.if_then_else(tir.all(*inside), x, cast(0, data.dtype))
        w = weight(*kl.index({"O": oc, "I": rc.var, **{c: r.var for c, r in zip(kl.spatial, rs)}}))
        return te.sum(cast(x, dtype) * cast(w, dtype), axis=[rc, *rs])

    return te.compute(tuple(ol.index(out_dims)), f, name="conv")


def conv_transpose(
    data: te.Tensor, weight: te.Tensor, strides: Sequence[int], padding: Sequence[int],
    output_padding: Sequence[int], dilation: Sequence[int], groups: int, data_layout: str,
    kernel_layout: str, out_layout: Optional[str] = None, out_dtype: Optional[str] = None,
) -> te.Tensor:
    """N-d grouped transposed convolution; the kernel's ``I`` axis is the data's channels
    and ``O`` the output channels per group (``IOHW``)."""
    dl, kl = Layout(data_layout), Layout(kernel_layout)
    ol = Layout(out_layout or data_layout)
    nsp = len(dl.spatial)
    dtype = out_dtype if out_dtype and out_dtype != "void" else data.dtype
    ddims, kdims = dl.dims(data.shape), kl.dims(weight.shape)
    ksizes = [kdims[c] for c in kl.spatial]
    in_sizes = _spatial_sizes(dl, data.shape)
    out_sp = [simplify((int64(s) - 1) * st - padding[i] - padding[i + nsp]
                       + d * (int64(k) - 1) + output_padding[i] + 1)
              for i, (s, k, st, d) in enumerate(zip(in_sizes, ksizes, strides, dilation))]
    cin = ddims["C"]
    cin_g = simplify(int64(cin) // groups)
    cout_g = kdims["O"]
    rc = te.reduce_axis((0, cin_g), name="rc")
    rs = [te.reduce_axis((0, k), name=f"r{c.lower()}") for c, k in zip(kl.spatial, ksizes)]
    out_dims = {"N": ddims["N"], "C": simplify(int64(cout_g) * groups),
                **dict(zip(dl.spatial, out_sp))}

    def f(*idx: Any) -> PrimExpr:
        o = ol.split(idx)
        oc = o["C"]
        if groups > 1:
            g, oc_in_g = FloorDiv(oc, int64(cout_g)), FloorMod(oc, int64(cout_g))
            ic = g * cin_g + rc.var
        else:
            oc_in_g, ic = oc, rc.var
        pos, conds = {}, []
        for i, c in enumerate(dl.spatial):
            t = o[c] + padding[i] - rs[i].var * dilation[i]
            q = FloorDiv(t, strides[i]) if strides[i] > 1 else t
            conds += [GE(t, IntImm("int64", 0)), LT(q, int64(in_sizes[i]))]
            if strides[i] > 1:
                conds.append(tir.EQ(FloorMod(t, strides[i]), IntImm("int64", 0)))
            pos[c] = q
        x = data(*dl.index({"N": o["N"], "C": ic, **pos}))
        x = tir.if_then_else(tir.all(*conds), x, cast(0, data.dtype))
        w = weight(*kl.index({"I": ic, "O": oc_in_g,
                              **{c: r.var for c, r in zip(kl.spatial, rs)}}))
        return te.sum(cast(x, dtype) * cast(w, dtype), axis=[rc, *rs])

    return te.compute(tuple(ol.index(out_dims)), f, name="conv_transpose")


def pool(
    data: te.Tensor, kind: str, pool_size: Sequence[int], strides: Sequence[int],
    padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool, count_include_pad: bool,
    layout: str, out_layout: Optional[str] = None,
) -> te.Tensor:
    """Max (``kind="max"``) or average pooling over the spatial axes of ``layout``.

    Padding never wins a max; the average divides by the number of window positions inside
    the input (or inside the padded input with ``count_include_pad``).
    """
    dl = Layout(layout)
    ol = Layout(out_layout or layout)
    nsp = len(dl.spatial)
    in_sizes = _spatial_sizes(dl, data.shape)
    out_sp = [simplify(int64(pool_out_dim(int64(s), k, st, d, padding[i], padding[i + nsp],
                                          ceil_mode)))
              for i, (s, k, st, d) in enumerate(zip(in_sizes, pool_size, strides, dilation))]
    dims = dl.dims(data.shape)
    out_shape = tuple(ol.index({**dims, **dict(zip(dl.spatial, out_sp))}))

    def window(o: dict, rs: list) -> tuple[dict, list, list]:
        pos, inside, in_padded = {}, [], []
        for i, c in enumerate(dl.spatial):
            p = o[c] * strides[i] + rs[i].var * dilation[i] - padding[i]
            pos[c] = p
            inside += [GE(p, IntImm("int64", 0)), LT(p, int64(in_sizes[i]))]
            in_padded.append(LT(p, int64(in_sizes[i]) + padding[i + nsp]))
        return pos, inside, in_padded

    def axes(tag: str) -> list:
        return [te.reduce_axis((0, k), name=f"r{tag}{c.lower()}") for c, k in zip(dl.spatial, pool_size)]

    if kind == "max":
        rs = axes("")
        low = tir.neg_infinity(data.dtype) if is_float(data.dtype) else tir.min_value(data.dtype)

        def fmax(*idx: Any) -> PrimExpr:
            o = ol.split(idx)
            pos, inside, _ = window(o, rs)
            x = data(*dl.index({**o, **pos}))
            return te.max(tir.if_then_else(tir.all(*inside), x, low), axis=rs)

        return te.compute(out_shape, fmax, name="pool_max")

    acc = "float32" if not is_float(data.dtype) else data.dtype
    rs = axes("")

    def fsum(*idx: Any) -> PrimExpr:
        o = ol.split(idx)
        pos, inside, _ = window(o, rs)
        x = data(*dl.index({**o, **pos}))
        return te.sum(tir.if_then_else(tir.all(*inside), cast(x, acc), cast(0, acc)), axis=rs)

    total = te.compute(out_shape, fsum, name="pool_sum")
    rc = axes("c")

    def fcount(*idx: Any) -> PrimExpr:
        o = ol.split(idx)
        _, inside, in_padded = window(o, rc)
        cond = tir.all(*in_padded) if count_include_pad else tir.all(*inside)
        return te.sum(Select(cond, cast(1, acc), cast(0, acc)), axis=rc)

    count = te.compute(out_shape, fcount, name="pool_count")
    return te.compute(
        out_shape,
        lambda *i: cast(tir.Div(total(*i), tir.Max(count(*i), cast(1, acc))), data.dtype),
        name="pool_avg",
    )


def adaptive_pool(
    data: te.Tensor, kind: str, output_size: Sequence[Any], layout: str,
    out_layout: Optional[str] = None,
) -> te.Tensor:
    """Adaptive max/avg pooling: output cell ``i`` of a dimension of size ``n`` pools
    ``[floor(i n / out), ceil((i + 1) n / out))``."""
    dl = Layout(layout)
    ol = Layout(out_layout or layout)
    in_sizes = [int64(s) for s in _spatial_sizes(dl, data.shape)]
    outs = [int64(s) for s in output_size]
    dims = dl.dims(data.shape)
    out_shape = tuple(ol.index({**dims, **dict(zip(dl.spatial, outs))}))
    # The longest window: ceil(n / out) + 1 positions bound every window.
    kmax = [simplify((n + o - 1) // o + 1) for n, o in zip(in_sizes, outs)]

    def bounds(o: dict) -> list:
        out = []
        for c, n, m in zip(dl.spatial, in_sizes, outs):
            start = FloorDiv(o[c] * n, m)
            end = FloorDiv((o[c] + 1) * n + m - 1, m)
            out.append((start, end))
        return out

    def reduce_body(reducer: Callable[..., Any], value: Callable[[PrimExpr, PrimExpr], PrimExpr],
                    tag: str) -> Callable[..., PrimExpr]:
        rs = [te.reduce_axis((0, k), name=f"r{tag}{c.lower()}") for c, k in zip(dl.spatial, kmax)]

        def f(*idx: Any) -> PrimExpr:
            o = ol.split(idx)
            conds, pos = [], {}
            for (start, end), c, r in zip(bounds(o), dl.spatial, rs):
                pos[c] = start + r.var
                conds.append(LT(start + r.var, end))
            inside = tir.all(*conds)
            x = data(*dl.index({**o, **{c: Select(inside, p, IntImm("int64", 0)) for c, p in pos.items()}}))
            return reducer(value(inside, x), axis=rs)

        return f

    if kind == "max":
        low = tir.neg_infinity(data.dtype) if is_float(data.dtype) else tir.min_value(data.dtype)
        return te.compute(out_shape, reduce_body(te.max, lambda c, x: Select(c, x, low), ""),
                          name="adaptive_pool_max")
    acc = data.dtype if is_float(data.dtype) else "float32"
    total = te.compute(out_shape, reduce_body(
        te.sum, lambda c, x: Select(c, cast(x, acc), cast(0, acc)), ""), name="adaptive_pool_sum")

    def favg(*idx: Any) -> PrimExpr:
        o = ol.split(idx)
        count: PrimExpr = cast(1, acc)
        for start, end in bounds(o):
            count = count * cast(end - start, acc)
        return cast(tir.Div(total(*idx), count), data.dtype)

    return te.compute(out_shape, favg, name="adaptive_pool_avg")


def col2im(
    cols: te.Tensor, image_shape: Sequence[int], block_shape: Sequence[int],
    dilations: Sequence[int], pads: Sequence[int], strides: Sequence[int],
) -> te.Tensor:
    """(N, C * prod(block), L) column blocks summed into (N, C, *image_shape) images (ONNX
    Col2Im): one reduction over the block offsets; entries in the padding are dropped."""
    nd = len(image_shape)
    n, cb = cols.shape[0], cols.shape[1]
    bsize = 1
    for b in block_shape:
        bsize *= int(b)
    grid = [(image_shape[i] + pads[i] + pads[i + nd] - dilations[i] * (block_shape[i] - 1) - 1)
            // strides[i] + 1 for i in range(nd)]
    dt = cols.dtype
    raxes = [te.reduce_axis((0, b), name=f"b{i}") for i, b in enumerate(block_shape)]

    def body(ni: Any, ci: Any, *p: Any) -> Any:
        cond = None
        lin_l = None
        lin_b = None
        for i in range(nd):
            t = p[i] + pads[i] - raxes[i] * dilations[i]
            q = tir.floordiv(t, strides[i])
            ok = tir.all(t >= 0, tir.floormod(t, strides[i]) == 0, q < grid[i])
            cond = ok if cond is None else tir.all(cond, ok)
            qc = tir.max(tir.min(q, grid[i] - 1), 0)
            lin_l = qc if lin_l is None else lin_l * grid[i] + qc
            lin_b = raxes[i] if lin_b is None else lin_b * block_shape[i] + raxes[i]
        v = cols[ni, ci * bsize + lin_b, lin_l]
        return te.sum(tir.if_then_else(cond, v, tir.const(0, dt)), axis=raxes)

    return te.compute([n, simplify(FloorDiv(int64(cb), int64(bsize))), *image_shape], body,
                      name="col2im")
