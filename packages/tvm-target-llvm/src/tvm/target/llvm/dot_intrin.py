"""Integer dot-product tensor intrinsics per ISA: the micro-kernel step of int8 matmuls and
convolutions (``sch.tensorize(loop, name)``, hook ``tvm_tir_register_tensor_intrins``).

Every intrinsic computes one step of ``C[j] += sum_k int32(A[k]) * int32(B[j * G + k])`` for
``L`` int32 lanes ``j`` and ``G`` reduction values ``k`` per lane: ``A`` holds ``G`` values
of the broadcast operand (an activation row), ``B`` the ``L x G`` weights of the step laid
out lane by lane (the schedule packs the weight as ``P[n // NT, .., k // G, n % NT * G +
k % G]`` once, at compile time for a constant), ``C`` ``L`` accumulators.

========================  ==  =  ===========  ==============================================
name                      L   G  operands     instruction
========================  ==  =  ===========  ==============================================
dot_16x4_u8s8_avx512vnni  16  4  u8 x s8      ``vpdpbusd zmm`` (AVX512-VNNI)
dot_8x4_u8s8_avxvnni      8   4  u8 x s8      ``{vex} vpdpbusd ymm`` (AVX-VNNI, or VNNI+VL)
dot_16x2_<ab>_avx512bw    16  2  any 8-bit    ``vpmaddwd zmm`` on operands widened to int16
dot_8x2_<ab>_avx2         8   2  any 8-bit    ``vpmaddwd ymm`` on operands widened to int16
dot_4x4_s8s8_sdot         4   4  s8 x s8      ``sdot v.4s`` (AArch64 +dotprod)
dot_4x4_u8u8_udot         4   4  u8 x u8      ``udot v.4s`` (AArch64 +dotprod)
dot_4x4_u8s8_usdot        4   4  u8 x s8      ``usdot v.4s`` (AArch64 +i8mm)
dot_8x1_<ab>_neon         8   1  any 8-bit    ``smlal``/``umlal`` on operands widened to int16
========================  ==  =  ===========  ==============================================

(``<ab>`` is ``u8s8``, ``s8s8``, ``u8u8`` or ``s8u8``: activation, then weight.)

Why AVX2 and AVX-512 without VNNI widen to int16 instead of using ``vpmaddubsw``:
``vpmaddubsw`` adds two u8 x s8 products into an int16 *with saturation*, and
``255 * 127 + 255 * 127 = 64770`` (or ``255 * -128 * 2``) does not fit, so u8 x s8 data
with large values (any real activation above 128 against weights above 64) gives wrong
sums.  Exact ways to keep ``vpmaddubsw`` (7-bit weights, or splitting the activations into
7-bit and high-bit halves) either restrict the model or need two ``vpmaddubsw`` plus two
``vpmaddwd`` per 32 products.  Widening both operands to int16 (``vpmovzxbw`` /
``vpmovsxbw``) and multiplying pairs with ``vpmaddwd`` (int16 x int16 pairs summed into int32,
exact) needs the same two multiply instructions per 32 products as the saturating
``vpmaddubsw`` + ``vpmaddwd``-by-ones pair, and handles signed activations as well, so it is
what these targets use: exact for every int8/uint8 input, no compensation terms.

VNNI's ``vpdpbusd`` (u8 x s8, four products summed into int32 without saturation) and the
AArch64 dot products are exact as they are.  Signed activations on a VNNI target use the
int16 path (there is no s8 x s8 ``vpdpbusd``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Optional

from tvm import tir
from tvm.tir.buffer import decl_buffer
from tvm.tir.expr import (
    Broadcast, BufferLoad, Cast, IntImm, IterVar, IterVarType, PrimExpr, Ramp, Range, StringImm,
    Var,
)
from tvm.tir.function import PrimFunc
from tvm.tir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For

__all__ = ["DotIntrin", "DOT_INTRINS", "dot_intrin", "dot_intrin_defs", "pick_dot_intrin",
           "register_dot_intrins"]

_SHORT = {"uint8": "u8", "int8": "s8"}
_PAIRS = (("uint8", "int8"), ("int8", "int8"), ("uint8", "uint8"), ("int8", "uint8"))


@dataclass(frozen=True)
class DotIntrin:
    """One integer dot-product intrinsic: ``lanes`` int32 accumulators, ``group`` products
    summed into each per step, ``a_dtype`` x ``b_dtype`` operands, made by ``kind`` (how
    :func:`_impl_value` spells it) and needing the LLVM features ``features`` (all of)."""

    name: str
    lanes: int
    group: int
    a_dtype: str
    b_dtype: str
    kind: str
    features: tuple[str, ...]
    arch: str  # "x86" or "aarch64"

    @property
    def weight_bytes(self) -> int:
        """Bytes of ``B`` per step (one packed weight vector)."""
        return self.lanes * self.group


def _table() -> list[DotIntrin]:
    out = [
        DotIntrin("dot_16x4_u8s8_avx512vnni", 16, 4, "uint8", "int8", "vpdpbusd512",
                  ("avx512vnni", "avx512f"), "x86"),
        DotIntrin("dot_8x4_u8s8_avxvnni", 8, 4, "uint8", "int8", "vpdpbusd256",
                  ("avxvnni",), "x86"),
        DotIntrin("dot_4x4_s8s8_sdot", 4, 4, "int8", "int8", "sdot", ("dotprod",), "aarch64"),
        DotIntrin("dot_4x4_u8u8_udot", 4, 4, "uint8", "uint8", "udot", ("dotprod",),
                  "aarch64"),
        DotIntrin("dot_4x4_u8s8_usdot", 4, 4, "uint8", "int8", "usdot", ("i8mm",), "aarch64"),
    ]
    for a, b in _PAIRS:
        ab = _SHORT[a] + _SHORT[b]
        out.append(DotIntrin(f"dot_16x2_{ab}_avx512bw", 16, 2, a, b, "pmaddwd512",
                             ("avx512bw",), "x86"))
        out.append(DotIntrin(f"dot_8x2_{ab}_avx2", 8, 2, a, b, "pmaddwd256", ("avx2",), "x86"))
        out.append(DotIntrin(f"dot_8x1_{ab}_neon", 8, 1, a, b, "mlal", ("neon",), "aarch64"))
    return out


#: every integer dot-product intrinsic, by name
DOT_INTRINS: dict[str, DotIntrin] = {d.name: d for d in _table()}

#: preference order per architecture: the first whose features the target has and whose
#: operand dtypes match is used
_PREFERENCE = {
    "x86": ("vpdpbusd512", "vpdpbusd256", "pmaddwd512", "pmaddwd256"),
    "aarch64": ("sdot", "udot", "usdot", "mlal"),
}


def pick_dot_intrin(arch: str, features: set[str] | frozenset[str], a_dtype: str,
                    b_dtype: str, index_dtype: str = "int64") -> Optional[str]:
    """The name of the intrinsic for ``a_dtype`` x ``b_dtype`` products on a CPU of
    ``arch`` (``"x86"`` / ``"aarch64"``) with LLVM ``features``, registered for loops of
    ``index_dtype``; None when the target has none."""
    kinds = _PREFERENCE.get(arch, ())
    for kind in kinds:
        for d in DOT_INTRINS.values():
            if d.kind == kind and d.a_dtype == a_dtype and d.b_dtype == b_dtype and \
                    all(f in features for f in d.features):
                return intrin_name(d, index_dtype)
    return None


def intrin_name(d: DotIntrin, index_dtype: str) -> str:
    """The registered name of ``d`` for loops of ``index_dtype`` (the plain name for int32,
    ``<name>_i64`` for int64: legalized Relax operators index in int64)."""
    return d.name if index_dtype == "int32" else f"{d.name}_i64"


def dot_intrin(name: str) -> DotIntrin:
    """The :class:`DotIntrin` a registered name stands for (either index dtype)."""
    return DOT_INTRINS[name.removesuffix("_i64")]


# -- desc and impl ------------------------------------------------------------------------------
def _ramp(base: int, lanes: int, dtype: str) -> Ramp:
    return Ramp(IntImm(dtype, base), IntImm(dtype, 1), lanes)


def _call(dtype: str, intrin: str, *args: PrimExpr) -> PrimExpr:
    return tir.call_intrin(dtype, "tir.call_llvm_pure_intrin", StringImm(intrin), *args)


def _reinterpret(dtype: str, value: PrimExpr) -> PrimExpr:
    return tir.call_intrin(dtype, "tir.reinterpret", value)


def _impl_value(d: DotIntrin, A: Any, B: Any, C: Any, idx: str) -> PrimExpr:
    """The new value of ``C[0:L]`` in the implementation of ``d``."""
    L, G = d.lanes, d.group
    acc = BufferLoad(C, (_ramp(0, L, idx),))
    a = BufferLoad(A, (_ramp(0, G, idx),)) if G > 1 else BufferLoad(A, (IntImm(idx, 0),))
    b = BufferLoad(B, (_ramp(0, L * G, idx),))
    if d.kind in ("vpdpbusd512", "vpdpbusd256"):
        # four activation bytes as one int32, in every lane; the weights as L int32 words
        bits = 512 if d.kind == "vpdpbusd512" else 256
        lanes = f"int32x{L}"
        a32 = _reinterpret(lanes, Broadcast(_reinterpret("int32", a), L))
        return _call(lanes, f"llvm.x86.avx512.vpdpbusd.{bits}", acc, a32,
                     _reinterpret(lanes, b))
    if d.kind in ("pmaddwd256", "pmaddwd512"):
        # (a0, a1) widened to two int16 in every int32 lane, times the widened weight pairs:
        # the byte pair repeated (vpbroadcastw), then widened (vpmovzxbw / vpmovsxbw)
        w16 = Cast(f"int16x{2 * L}", b)
        pair = Broadcast(_reinterpret("uint16", a if d.a_dtype == "uint8" else
                                      _reinterpret("uint8x2", a)), L)
        a16 = Cast(f"int16x{2 * L}", _reinterpret(f"{d.a_dtype}x{2 * L}", pair))
        name = "llvm.x86.avx2.pmadd.wd" if d.kind == "pmaddwd256" else \
            "llvm.x86.avx512.pmaddw.d.512"
        return acc + _call(f"int32x{L}", name, a16, w16)
    if d.kind in ("sdot", "udot", "usdot"):
        # the four activation bytes repeated in every lane, the weights as 16 bytes
        signed_a = d.a_dtype == "int8"
        a8 = _reinterpret(f"{'int8' if signed_a else 'uint8'}x16",
                          Broadcast(_reinterpret("int32", a), L))
        name = {"sdot": "llvm.aarch64.neon.sdot.v4i32.v16i8",
                "udot": "llvm.aarch64.neon.udot.v4i32.v16i8",
                "usdot": "llvm.aarch64.neon.usdot.v4i32.v16i8"}[d.kind]
        return _call(f"int32x{L}", name, acc, a8, b)
    if d.kind == "mlal":
        # one activation value times L weights, widened to int16 products in int32
        # (LLVM selects smull/smlal, umlal... from the widening multiply-add)
        w = Cast(f"int32x{L}", Cast(f"int16x{L}", b))
        x = Broadcast(Cast("int32", Cast("int16", a)), L)
        return acc + x * w
    raise ValueError(f"unknown dot-product kind {d.kind!r}")


def _funcs(d: DotIntrin, idx: str) -> tuple[PrimFunc, PrimFunc]:
    """(desc, impl) of ``d`` with loops and indices of dtype ``idx``."""
    L, G = d.lanes, d.group

    def params() -> tuple[list[Var], dict, tuple]:
        A = decl_buffer((IntImm(idx, G),), d.a_dtype, "A")
        B = decl_buffer((IntImm(idx, L * G),), d.b_dtype, "B")
        C = decl_buffer((IntImm(idx, L),), "int32", "C")
        ps = [Var("a", "handle"), Var("b", "handle"), Var("c", "handle")]
        return ps, dict(zip(ps, (A, B, C))), (A, B, C)

    def regions(A: Any, B: Any, C: Any) -> tuple[tuple, tuple]:
        full = [BufferRegion.full_region(x) for x in (C, A, B)]
        return tuple(full), (full[0],)

    def root(body: Any, A: Any, B: Any, C: Any) -> BlockRealize:
        reads, writes = regions(A, B, C)
        return BlockRealize((), IntImm("bool", 1), Block((), reads, writes, "root", body))

    # desc: for j, k: C[j] = C[j] + int32(A[k]) * int32(B[j * G + k])
    ps, bmap, (A, B, C) = params()
    j, k = Var("j", idx), Var("k", idx)
    vj, vk = Var("vj", idx), Var("vk", idx)
    value = BufferLoad(C, (vj,)) + Cast("int32", BufferLoad(A, (vk,))) * \
        Cast("int32", BufferLoad(B, (vj * IntImm(idx, G) + vk,)))
    block = Block(
        (IterVar(Range(IntImm(idx, 0), IntImm(idx, L)), vj, IterVarType.DATA_PAR),
         IterVar(Range(IntImm(idx, 0), IntImm(idx, G)), vk, IterVarType.COMM_REDUCE)),
        (BufferRegion(C, (Range(vj, IntImm(idx, 1)),)),
         BufferRegion(A, (Range(vk, IntImm(idx, 1)),)),
         BufferRegion(B, (Range(vj * IntImm(idx, G) + vk, IntImm(idx, 1)),))),
        (BufferRegion(C, (Range(vj, IntImm(idx, 1)),)),),
        "update", BufferStore(C, value, (vj,)))
    body = BlockRealize((j, k), IntImm("bool", 1), block)
    body = For(j, IntImm(idx, 0), IntImm(idx, L), body=For(k, IntImm(idx, 0), IntImm(idx, G),
                                                            body=body))
    desc = PrimFunc(ps, root(body, A, B, C), buffer_map=bmap)

    # impl: one vector statement
    ps, bmap, (A, B, C) = params()
    store = BufferStore(C, _impl_value(d, A, B, C, idx), (_ramp(0, L, idx),))
    impl = PrimFunc(ps, root(store, A, B, C), buffer_map=bmap)
    return desc, impl


@functools.lru_cache(maxsize=None)
def dot_intrin_defs() -> tuple[Any, ...]:
    """A :class:`~tvm.tir.tensor_intrin.TensorIntrinDef` per intrinsic and index dtype."""
    from tvm.tir.tensor_intrin import TensorIntrinDef

    out = []
    for d in DOT_INTRINS.values():
        for idx in ("int32", "int64"):
            desc, impl = _funcs(d, idx)
            out.append(TensorIntrinDef(intrin_name(d, idx), desc, impl))
    return tuple(out)


def register_dot_intrins(register: Callable[[Any], None]) -> None:
    """``register(TensorIntrinDef)`` for each intrinsic (the plugin hook's body)."""
    for entry in dot_intrin_defs():
        register(entry)
