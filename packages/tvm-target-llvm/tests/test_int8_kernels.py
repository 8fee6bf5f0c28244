"""Integer kernels: the int8 schedule rule and the dot-product tensor intrinsics per ISA.

* which intrinsic each target gets (VNNI, AVX-VNNI, AVX-512BW / AVX2 ``vpmaddwd``, NEON
  ``sdot`` / ``udot`` / ``usdot`` / ``smlal``) and which shapes fall back;
* numbers: qnn dense / matmul / conv2d (NHWC and NCHW, padded, strided, zero points) equal
  to a numpy int64 reference for random int8/uint8 data including the extremes
  (255 x 127 pairs overflow ``vpmaddubsw``'s int16 sums), run on this machine for the ISAs
  it has and under qemu-aarch64 for the NEON dot products;
* instructions: the hot loop of the generated assembly holds the ISA's dot product
  (``vpdpbusd`` for cascadelake / icelake-server, ``{vex} vpdpbusd`` for alderlake,
  ``vpmaddwd`` and no ``vpmulld`` for haswell, ``sdot`` / ``usdot`` / ``smlal`` for
  aarch64), checked on assembly only, so on any host.
"""

from __future__ import annotations

import re

import int8_workloads as wl
import numpy as np
import pytest
from isa_checks import parse_llvm_asm
from tvm import tir
from tvm.target.llvm.dot_intrin import DOT_INTRINS, dot_intrin, intrin_name, pick_dot_intrin
from tvm.target.llvm.host_cpu import host_has_feature, host_triple
from tvm.target.llvm.schedule_rules import cpu_info, explain_default_schedule, schedule_prim_func
from tvm.tir import TensorIntrin

AARCH64 = "llvm -mtriple=aarch64-linux-gnu"
#: target -> the LLVM features the host needs to run its code
HOST_RUNNABLE = {
    "llvm -mcpu=cascadelake": ("avx512vnni", "avx512bw", "avx512vl"),
    "llvm -mcpu=alderlake": ("avxvnni", "avx2"),
    "llvm -mcpu=skylake-avx512": ("avx512bw", "avx512vl"),
    "llvm -mcpu=haswell": ("avx2", "fma"),
}
EXPECTED_INTRIN = {
    ("llvm -mcpu=cascadelake", "uint8"): "dot_16x4_u8s8_avx512vnni",
    ("llvm -mcpu=icelake-server", "uint8"): "dot_16x4_u8s8_avx512vnni",
    ("llvm -mcpu=cascadelake", "int8"): "dot_16x2_s8s8_avx512bw",
    ("llvm -mcpu=alderlake", "uint8"): "dot_8x4_u8s8_avxvnni",
    ("llvm -mcpu=skylake-avx512", "uint8"): "dot_16x2_u8s8_avx512bw",
    ("llvm -mcpu=haswell", "uint8"): "dot_8x2_u8s8_avx2",
    ("llvm -mcpu=haswell", "int8"): "dot_8x2_s8s8_avx2",
    (f"{AARCH64} -mcpu=cortex-a76", "int8"): "dot_4x4_s8s8_sdot",
    (f"{AARCH64} -mcpu=cortex-a76", "uint8"): "dot_8x1_u8s8_neon",
    (f"{AARCH64} -mcpu=neoverse-n2", "uint8"): "dot_4x4_u8s8_usdot",
    (f"{AARCH64} -mcpu=cortex-a72", "int8"): "dot_8x1_s8s8_neon",
}
#: the integer multiply-adds a hot loop is scored by
_INT_MAC = re.compile(r"^(\{vex\}\s*)?v?p(dpbusd|dpwssd|maddwd|maddubsw|mulld)\b|"
                      r"^([su]dot|usdot|[su]mlal2?|mla)\s")


def _runnable(target: str) -> bool:
    if target == "llvm":  # the host itself
        return True
    if not host_triple().startswith("x86_64"):
        return False
    return all(host_has_feature(f) for f in HOST_RUNNABLE[target])


def need_host(target: str) -> None:
    if not _runnable(target):
        pytest.skip(f"this machine cannot run code for {target}")


def _run(workload: tuple, target: str, seed: int = 0) -> None:
    import tvm.runtime

    func, make_args, reference = workload
    args = make_args(np.random.default_rng(seed))
    expected = reference(*args)
    lib = tir.build(schedule_prim_func(func, target), target=target)
    out = tvm.runtime.tensor(np.zeros(expected.shape, "int32"))
    lib(*[tvm.runtime.tensor(a) for a in args], out)
    np.testing.assert_array_equal(out.numpy(), expected)


def _anchor(func: tir.PrimFunc, target: str) -> str:
    explained = explain_default_schedule(func, target)
    return explained.get("qmatmul_acc") or explained["qconv_acc"]


# -- the registry and the choice ------------------------------------------------------------------
def test_every_intrinsic_is_registered_for_both_index_dtypes():
    for d in DOT_INTRINS.values():
        for idx in ("int32", "int64"):
            intrin = TensorIntrin.get(intrin_name(d, idx))
            bufs = [intrin.desc.buffer_map[p] for p in intrin.desc.params]
            assert [b.dtype for b in bufs] == [d.a_dtype, d.b_dtype, "int32"]
            assert [int(b.shape[0]) for b in bufs] == [d.group, d.lanes * d.group, d.lanes]
            assert bufs[0].shape[0].dtype == idx


@pytest.mark.parametrize("key", sorted(EXPECTED_INTRIN), ids=lambda k: f"{k[0]}-{k[1]}")
def test_the_target_features_pick_the_intrinsic(key):
    target, adt = key
    cpu = cpu_info(target)
    name = pick_dot_intrin(cpu.arch, cpu.features, adt, "int8")
    assert dot_intrin(name).name == EXPECTED_INTRIN[key]
    func, _, _ = wl.dense(4, 64, 64, adt)
    assert _anchor(func, target) == f"int8 dot product ({EXPECTED_INTRIN[key]})"


def test_a_cpu_without_a_vector_dot_product_has_none():
    assert pick_dot_intrin("x86", frozenset({"sse4.2"}), "uint8", "int8") is None
    func, _, _ = wl.dense(4, 64, 64)
    assert _anchor(func, "llvm -mcpu=nehalem") == "contraction"


@pytest.mark.parametrize("shape", [(4, 64, 62), (4, 24, 64), (4, 8, 64)],
                         ids=["k-not-multiple-of-4", "n-not-multiple-of-16", "tiny-n"])
def test_shapes_that_do_not_fit_fall_back_to_the_contraction_rule(shape):
    target = "llvm -mcpu=cascadelake"
    work = wl.dense(*shape)
    assert _anchor(work[0], target) == "contraction"
    asm = tir.build(schedule_prim_func(work[0], target), target=target).get_source("asm")
    assert "vpdpbusd" not in asm
    if _runnable(target):
        _run(work, target)


# -- numbers ------------------------------------------------------------------------------------
#: the x86 targets whose code this host can run (chosen at collection, so that a host
#: without AVX-512 VNNI runs the others instead of skipping: CI forbids skips); the
#: instruction tests above compile every target whatever the host
X86_TARGETS = [t for t in sorted(HOST_RUNNABLE) if _runnable(t)] or ["llvm"]


@pytest.mark.parametrize("target", X86_TARGETS)
@pytest.mark.parametrize("case", [
    dict(m=1, n=256, k=256, za=128, zb=3),
    dict(m=16, n=64, k=128, za=0, zb=0),
    dict(m=12, n=96, k=64, za=7, zb=(1, 2, 3, 4) * 24),
    dict(m=5, n=32, k=36, adt="int8", za=3, zb=0),
], ids=["gemv-zero-points", "plain", "per-channel-zb", "int8-activations"])
def test_dense_equals_numpy(target, case):
    _run(wl.dense(**case), target)


@pytest.mark.parametrize("target", X86_TARGETS)
def test_batched_matmul_equals_numpy(target):
    _run(wl.matmul(3, 8, 32, 64, za=128), target)


@pytest.mark.parametrize("target", X86_TARGETS)
@pytest.mark.parametrize("case", [
    dict(layout="NHWC", c=16, o=32, h=8, ks=3, pad=1, zx=7),
    dict(layout="NHWC", c=12, o=48, h=9, ks=5, pad=2, stride=2, zx=128),
    dict(layout="NCHW", c=16, o=32, h=8, ks=3, pad=1, zx=5),
    dict(layout="NCHW", c=8, o=16, h=10, ks=1, pad=0, zx=0),
    dict(layout="NCHW", c=16, o=16, h=7, ks=3, pad=1, zx=3, adt="int8"),
], ids=["nhwc-pad", "nhwc-stride", "nchw-pad", "nchw-1x1", "nchw-int8"])
def test_conv2d_equals_numpy(target, case):
    work = wl.conv(**case)
    assert _anchor(work[0], target).startswith("int8 dot product")
    _run(work, target)


def test_u8_s8_pairs_that_overflow_int16_are_exact():
    """255 * 127 + 255 * 127 = 64770 and 255 * -128 * 2 do not fit vpmaddubsw's int16."""
    target = "llvm -mcpu=haswell"
    need_host(target)
    import tvm.runtime

    func, _, reference = wl.dense(2, 16, 64)
    lib = tir.build(schedule_prim_func(func, target), target=target)
    x = np.full((2, 64), 255, "uint8")
    w = np.repeat(np.where(np.arange(16) % 2 == 0, 127, -128).astype("int8")[:, None], 64, 1)
    out = tvm.runtime.tensor(np.zeros((2, 16), "int32"))
    lib(tvm.runtime.tensor(x), tvm.runtime.tensor(w), out)
    np.testing.assert_array_equal(out.numpy(), reference(x, w))
    assert out.numpy()[0, 0] == 255 * 127 * 64 and out.numpy()[0, 1] == -255 * 128 * 64


# -- instructions -------------------------------------------------------------------------------
def _hot_loop(func: tir.PrimFunc, target: str) -> list[str]:
    """The instructions of the innermost loop with the most integer multiply-adds (the
    tile's reduction loop of the scheduled kernel)."""
    lib = tir.build(schedule_prim_func(func, target), target=target)
    asm = lib.get_source("asm")
    best: list[str] = []
    for name in lib.function_names:
        insns = parse_llvm_asm(asm, name)
        loops = [(i.target, i.pos) for i in insns if i.target is not None and
                 i.target <= i.pos]
        innermost = [(s, e) for s, e in loops
                     if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in loops)]
        for s, e in innermost:
            body = [i.text for i in insns if s <= i.pos <= e]
            if sum(map(bool, map(_INT_MAC.match, body))) > \
                    sum(map(bool, map(_INT_MAC.match, best))):
                best = body
    return best


@pytest.mark.parametrize("target,pattern", [
    ("llvm -mcpu=cascadelake", r"^vpdpbusd\s+.*%zmm"),
    ("llvm -mcpu=icelake-server", r"^vpdpbusd\s+.*%zmm"),
    ("llvm -mcpu=alderlake", r"^\{vex\}\s*vpdpbusd\s+.*%ymm"),
    ("llvm -mcpu=haswell", r"^vpmaddwd\s+.*%ymm"),
    ("llvm -mcpu=skylake-avx512", r"^vpmaddwd\s+.*%zmm"),
])
@pytest.mark.parametrize("workload", ["dense", "conv-nchw", "conv-nhwc"])
def test_the_hot_loop_uses_the_dot_product(target, pattern, workload):
    func = {"dense": lambda: wl.dense(8, 64, 256, za=128)[0],
            "conv-nchw": lambda: wl.conv("NCHW", 32, 32, 14, 3, 1, zx=128)[0],
            "conv-nhwc": lambda: wl.conv("NHWC", 32, 32, 14, 3, 1, zx=128)[0]}[workload]()
    loop = _hot_loop(func, target)
    dots = [t for t in loop if re.match(pattern, t)]
    assert len(dots) >= 4, loop
    assert not any(t.startswith(("vpmulld", "vpmaddubsw")) for t in loop)
    # the accumulators stay in registers: no store in the hot loop
    assert not any(t.startswith(("vmovdqu", "vmovdqa")) and t.endswith(")") for t in loop)


@pytest.mark.parametrize("target,adt,pattern", [
    (f"{AARCH64} -mattr=+neon,+dotprod", "int8", r"^sdot\s+v\d+\.4s"),
    (f"{AARCH64} -mcpu=cortex-a76", "int8", r"^sdot\s+v\d+\.4s"),
    (f"{AARCH64} -mcpu=neoverse-n2", "uint8", r"^usdot\s+v\d+\.4s"),
    (f"{AARCH64} -mcpu=cortex-a72", "int8", r"^smlal2?\s+v\d+\.4s"),
    (f"{AARCH64} -mcpu=cortex-a76", "uint8", r"^smlal2?\s+v\d+\.4s"),
])
def test_aarch64_dot_products_in_the_assembly(target, adt, pattern):
    loop = _hot_loop(wl.dense(8, 64, 64, adt)[0], target)
    assert sum(1 for t in loop if re.match(pattern, t)) >= 4, loop
    loop = _hot_loop(wl.conv("NHWC", 16, 32, 8, 3, 1, zx=0, adt=adt)[0], target)
    assert sum(1 for t in loop if re.match(pattern, t)) >= 4, loop


def test_the_fallback_keeps_int32_multiplies():
    loop = _hot_loop(wl.dense(8, 64, 62)[0], "llvm -mcpu=cascadelake")
    assert loop and not any("vpdpbusd" in t for t in loop)


# -- aarch64 numbers under qemu ------------------------------------------------------------------
@pytest.mark.parametrize("target,adt", [
    (f"{AARCH64} -mattr=+neon,+dotprod", "int8"),
    (f"{AARCH64} -mattr=+neon,+dotprod,+i8mm", "uint8"),
    (f"{AARCH64} -mattr=+neon", "uint8"),
], ids=["sdot", "usdot", "smlal"])
def test_aarch64_kernels_under_qemu_equal_numpy(target, adt, tmp_path):
    from tvm.runtime.runner import RunnerUnavailableError, create_runner

    runner = create_runner("qemu", target=target, timeout=180.0)
    try:
        runner.check_available()
        runner.server_path()
    except RunnerUnavailableError as err:
        pytest.skip(str(err))
    rng = np.random.default_rng(3)
    for k, (func, make_args, reference) in enumerate([
            wl.dense(6, 64, 64, adt, za=3),
            wl.conv("NHWC", 16, 32, 6, 3, 1, zx=1, adt=adt),
            wl.conv("NCHW", 16, 16, 6, 3, 1, zx=1, adt=adt)]):
        assert _anchor(func, target).startswith("int8 dot product")
        args = make_args(rng)
        expected = reference(*args)
        lib = tir.build(schedule_prim_func(func, target), target=target)
        path = str(tmp_path / f"k{k}.so")
        lib.export_library(path)
        (name,) = lib.function_names
        got = runner.run(path, name, [*args, np.zeros(expected.shape, "int32")],
                         outputs=[-1], repeat=1).output(-1)
        np.testing.assert_array_equal(got, expected)


# -- the tuner's alternatives ---------------------------------------------------------------------
def test_the_rule_offers_other_tiles_as_candidates():
    import tvm.runtime
    from tvm.ffi import structural_hash
    from tvm.target.llvm.schedule_rules.rules import Int8DotRule

    target = "llvm -mcpu=cascadelake"
    func, make_args, reference = wl.dense(16, 128, 256, za=3)
    sch = tir.Schedule(func)
    cands = Int8DotRule(cpu_info(target)).candidates(sch, sch.get_block("qmatmul_acc"))
    assert len(cands) >= 3 and len({structural_hash(c.mod) for c in cands}) == len(cands)
    assert all("Tensorize" in [i.kind.name for i in c.trace.insts] for c in cands)
    if not _runnable(target):
        return
    args = make_args(np.random.default_rng(1))
    for c in cands:
        lib = tir.build(schedule_prim_func(c.mod["main"], target), target=target)
        out = tvm.runtime.tensor(np.zeros((16, 128), "int32"))
        lib(*[tvm.runtime.tensor(a) for a in args], out)
        np.testing.assert_array_equal(out.numpy(), reference(*args))
