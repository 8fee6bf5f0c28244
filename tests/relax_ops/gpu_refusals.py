"""The cases of the operator suite a GPU target cannot run, and the refusal each must get.

A case listed here must fail on its target with an error matching ``error`` (the compiler's
or the run side's refusal, which names the kernel and the dtype); it is then reported as
xfailed with ``reason``.  A listed case that runs instead fails (like a strict xfail), so a
fix that makes one work also removes it from the table; ``test_gpu_refusals.py`` checks that
every entry names an existing test.  Every case not listed runs and is compared with numpy
on every target.

``test`` is ``<file>::<test function>``, optionally with ``[<other parameter ids>]`` (the
test id without the target's part) to list one parametrization only.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

_WGSL_INT8 = r"webgpu codegen: kernel \w+ uses (a value|the tensor '\w+') of dtype u?int8; WGSL"
_WGSL_INT64 = (r"webgpu codegen: kernel \w+ computes int64 values of '\w+' from int64 tensor "
               r"data; WGSL has no 64-bit integers")
_CL_FP16 = r"opencl: kernel \w+ uses float16 \(needs cl_khr_fp16\), which opencl\(0\)"
_NO_INT8 = "WGSL has no 8-bit integers (int8/uint8 tensors and values)"
_NO_FP16 = ("pocl's CPU device has no cl_khr_fp16 (an OpenCL device with it runs the case: "
            "the refusal comes from the device's extension list)")


class Refusal(NamedTuple):
    """``test`` (see the module docstring) refused on ``target``."""

    target: str
    test: str
    error: str
    reason: str


REFUSED: list[Refusal] = [
    # -- WebGPU: WGSL has no float64, no int8/int16 and no 64-bit integer arithmetic ----------
    Refusal("webgpu", "test_elementwise.py::test_int_binary[power]",
            r"webgpu codegen: kernel \w+ uses a value of dtype float64; WGSL has no 64-bit floats",
            "integer power is legalized as float64 pow (exact up to 2**53), and WGSL has no "
            "float64"),
    Refusal("webgpu", "test_linalg_reduce.py::test_matmul_out_dtype", _WGSL_INT8, _NO_INT8),
    Refusal("webgpu", "test_linalg_reduce.py::test_scan_dtype", _WGSL_INT8, _NO_INT8),
    Refusal("webgpu", "test_manipulation.py::test_creation_int8", _WGSL_INT8, _NO_INT8),
    Refusal("webgpu", "test_nn.py::test_conv2d_integer_out_dtype", _WGSL_INT8, _NO_INT8),
    Refusal("webgpu", "test_image_sort.py::test_resize2d_uint8", _WGSL_INT8, _NO_INT8),
    Refusal("webgpu", "test_data_dependent.py::test_nonzero_feeds_later_operators", _WGSL_INT64,
            "nonzero's count is an int64 sum over the int64 count tensor and the test "
            "multiplies the int64 coordinates; WGSL has no 64-bit integer arithmetic"),
    Refusal("webgpu", "test_data_dependent.py::test_nonzero_of_all_zeros_is_empty", _WGSL_INT64,
            "nonzero's count is an int64 sum over the int64 count tensor; WGSL has no 64-bit "
            "integer arithmetic"),
    # -- OpenCL on pocl -------------------------------------------------------------------------
    Refusal("opencl", "test_elementwise.py::test_astype_to_float16", _CL_FP16, _NO_FP16),
    Refusal("opencl", "test_manipulation.py::test_creation_float16", _CL_FP16, _NO_FP16),
]


def case_of(nodeid: str, target: str) -> tuple[str, Optional[str]]:
    """``(<file>::<function>, <other parameter ids> or None)`` of a test id of the suite."""
    path, _, name = nodeid.rpartition("::")
    case = f"{path.rpartition('/')[2]}::{name.partition('[')[0]}"
    ids = name.partition("[")[2].rstrip("]").split("-") if "[" in name else []
    if target in ids:
        ids.remove(target)
    return case, "-".join(ids) or None


def expected_refusal(nodeid: str, target: str) -> Optional[Refusal]:
    """The entry of :data:`REFUSED` for test ``nodeid`` run on ``target``, if any."""
    case, params = case_of(nodeid, target)
    for r in REFUSED:
        if r.target == target and r.test in (case, f"{case}[{params}]"):
            return r
    return None
