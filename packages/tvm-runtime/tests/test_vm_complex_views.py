"""vm.builtin.view_as_real / view_as_complex: zero-copy views between complex tensors and
their (real, imaginary) pair form."""

from __future__ import annotations

import numpy as np
import pytest

import tvm.runtime
from tvm.runtime.vm.builtins import get_builtin


@pytest.mark.parametrize("dtype, part", [("complex64", "float32"), ("complex128", "float64")])
def test_round_trip_keeps_values_and_changes_dtype_and_shape(dtype, part):
    z = np.array([[1 + 2j, -0.0 - 1j], [np.inf + 0j, np.nan * 1j]], dtype=dtype)
    r = get_builtin("vm.builtin.view_as_real")(tvm.runtime.tensor(z))
    assert str(r.dtype) == part and tuple(r.shape) == (2, 2, 2)
    np.testing.assert_array_equal(r.numpy(), np.stack([z.real, z.imag], -1))
    back = get_builtin("vm.builtin.view_as_complex")(r)
    assert str(back.dtype) == dtype and tuple(back.shape) == (2, 2)
    assert back.numpy().tobytes() == z.tobytes()


def test_zero_d_complex_gets_a_pair_dimension():
    r = get_builtin("vm.builtin.view_as_real")(tvm.runtime.tensor(np.array(3 - 4j, "complex64")))
    assert tuple(r.shape) == (2,)
    np.testing.assert_array_equal(r.numpy(), [3, -4])


@pytest.mark.parametrize("name, value, match", [
    ("vm.builtin.view_as_real", np.zeros(3, "float32"), "complex64/complex128"),
    ("vm.builtin.view_as_complex", np.zeros((3, 3), "float32"), "last dimension is 2"),
    ("vm.builtin.view_as_complex", np.zeros((3, 2), "int32"), "float32/float64"),
])
def test_errors_name_what_is_expected(name, value, match):
    with pytest.raises(TypeError, match=match):
        get_builtin(name)(tvm.runtime.tensor(value))
