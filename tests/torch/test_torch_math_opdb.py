"""OpInfo (op_db) samples of the elementwise, activation, reduction and matmul families:
export, import, build for llvm, compare with eager.

float32 samples where the OpInfo has them (integer samples for the bitwise ops).  A sample
whose graph needs an operator converted outside ops_math/ops_reduce/ops_linalg (views,
``full``, ``_to_copy`` ...) is skipped naming that operator, so this file tests only the
math converters.
"""

from __future__ import annotations

import re

import pytest

from torch_opdb_math import run_sample, samples
from tvm.relax.frontend.torch.common import OpNotSupported

UNARY = """abs acos acosh asin asinh atan atanh ceil cos cosh erf erfc erfinv exp exp2 expm1
floor frac isfinite isinf isnan isneginf isposinf log log10 log1p log2 logical_not bitwise_not
nan_to_num neg positive reciprocal round round.decimals_0 round.decimals_3 round.decimals_neg_3
rsqrt sgn sigmoid sign signbit sin sinc sinh sqrt square tan tanh trunc deg2rad rad2deg
logit""".split()
BINARY = """add sub mul div.no_rounding_mode div.floor_rounding div.trunc_rounding true_divide
floor_divide remainder fmod pow float_power atan2 maximum minimum fmax fmin max.binary min.binary
eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor
bitwise_left_shift bitwise_right_shift copysign hypot xlogy lerp addcmul addcdiv where clamp
clamp_min clamp_max rsub logaddexp logaddexp2 heaviside ldexp __radd__ __rsub__ __rmul__
__rdiv__ __rpow__ __rmod__ __rand__ __ror__ __rxor__ isclose special.xlog1py""".split()
ACTIVATIONS = """nn.functional.relu nn.functional.relu6 nn.functional.leaky_relu
nn.functional.elu nn.functional.celu nn.functional.selu nn.functional.gelu nn.functional.silu
nn.functional.mish nn.functional.hardswish nn.functional.hardsigmoid nn.functional.hardtanh
nn.functional.softplus nn.functional.softsign nn.functional.logsigmoid nn.functional.threshold
nn.functional.prelu nn.functional.glu nn.functional.hardshrink nn.functional.softshrink
nn.functional.tanhshrink nn.functional.softmin nn.functional.softmin.with_dtype softmax
softmax.with_dtype log_softmax log_softmax.with_dtype logsumexp""".split()
REDUCTIONS = """sum mean nansum nanmean prod amax amin aminmax max.reduction_no_dim
max.reduction_with_dim min.reduction_no_dim min.reduction_with_dim argmax argmin var
var.unbiased std std.unbiased var_mean var_mean.unbiased std_mean std_mean.unbiased any all
cumsum cumprod logcumsumexp norm norm.fro norm.inf linalg.vector_norm count_nonzero""".split()
MATMUL = """mm bmm matmul addmm addmm.decomposed baddbmm addmv addbmm addr mv dot vdot inner
nn.functional.linear outer einsum tensordot linalg.vecdot linalg.multi_dot
__rmatmul__""".split()

#: entries checked on more samples (rounding modes, promotion corners, corrections)
THOROUGH = {"div.floor_rounding", "div.trunc_rounding", "remainder", "fmod", "pow", "clamp",
            "var", "std_mean", "max.reduction_with_dim", "addmm", "matmul", "einsum",
            "softmax.with_dtype", "linalg.vector_norm", "where", "lerp", "nan_to_num"}

_MISSING = re.compile(r"^(aten\.\w+)\.\w+ \(node .*has no converter")
#: operators of other converter modules that decompositions of these entries produce
OTHER_MODULES = {"aten._to_copy", "aten.full", "aten.alias", "aten.expand", "aten.squeeze",
                 "aten.unsqueeze", "aten.view", "aten.slice", "aten.select", "aten.permute",
                 "aten.scalar_tensor", "aten.clone", "aten.cat", "aten.index", "aten.unbind",
                 "aten.split_with_sizes", "aten.empty", "aten.copy", "aten.t",
                 "aten.transpose", "aten.squeeze_copy", "aten.diagonal"}


CASES = [(name, k) for name in UNARY + BINARY + ACTIVATIONS + REDUCTIONS + MATMUL
         for k in range(3 if name in THOROUGH else 1)]


@pytest.mark.parametrize("name, k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_opdb_sample(name: str, k: int) -> None:
    found = samples(name, k + 1)
    if len(found) <= k:
        pytest.xfail(f"{name} has only {len(found)} sample(s)")
    try:
        result = run_sample(name, found[k])
    except OpNotSupported as err:
        match = _MISSING.match(str(err))
        if match and match.group(1) in OTHER_MODULES:
            pytest.xfail(f"needs {match.group(1)}, converted outside the math modules")
        raise
    if result == "export":
        pytest.xfail("torch.export rejects this sample")
