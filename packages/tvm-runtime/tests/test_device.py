from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tvm.runtime as rt
from tvm.runtime.device import DEVICE_TYPE_NAMES, CPUDeviceAPI, DeviceAPI


def test_factories_and_str():
    assert str(rt.cpu(0)) == "cpu(0)"
    assert repr(rt.cuda(1)) == "cuda(1)"
    assert rt.opencl(2).device_type == 4 and rt.opencl(2).index == 2
    assert rt.metal().device_type == 8
    assert rt.cuda(3).device_id == 3


@pytest.mark.parametrize(
    "spec,index,expected",
    [
        ("cpu", None, rt.cpu(0)),
        ("cuda", 1, rt.cuda(1)),
        ("cuda:1", None, rt.cuda(1)),
        ("CUDA:2", None, rt.cuda(2)),
        ("cuda(3)", None, rt.cuda(3)),
        ("opencl", None, rt.opencl(0)),
        ("llvm", None, rt.cpu(0)),
        ("gpu:0", None, rt.cuda(0)),
        (2, 1, rt.cuda(1)),
        (rt.metal(1), None, rt.metal(1)),
    ],
)
def test_device_parsing(spec, index, expected):
    assert rt.device(spec, index) == expected


def test_device_parse_errors():
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        rt.device("tpu")
    with pytest.raises(ValueError, match="cannot parse"):
        rt.device("cuda:x")
    with pytest.raises(ValueError, match="given twice"):
        rt.device("cuda:1", 2)
    with pytest.raises(TypeError, match="expected a device name"):
        rt.device(1.5)
    with pytest.raises(ValueError, match="index must be >= 0"):
        rt.cuda(-1)
    with pytest.raises(TypeError, match="index must be an int"):
        rt.Device(1, "0")
    with pytest.raises(TypeError, match="device_type must be an int"):
        rt.Device("cuda", 0)


def test_equality_hash_pickle():
    assert rt.cuda(0) == rt.device("cuda")
    assert rt.cuda(0) != rt.cuda(1) and rt.cuda(0) != rt.opencl(0)
    assert len({rt.cuda(0), rt.device("cuda:0"), rt.cpu(0)}) == 2
    assert pickle.loads(pickle.dumps(rt.opencl(3))) == rt.opencl(3)
    assert rt.cpu(0).__dlpack_device__() == (1, 0)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(DEVICE_TYPE_NAMES)), st.integers(0, 64))
def test_str_parses_back(dev_type, index):
    dev = rt.Device(dev_type, index)
    assert rt.device(str(dev)) == dev
    assert rt.device(f"{dev.type_name}:{index}") == dev


def test_cpu_device_api_is_builtin():
    dev = rt.cpu(0)
    assert dev.exist
    assert isinstance(dev.api, CPUDeviceAPI)
    dev.sync()
    assert "num_cores" in dev.attributes


@pytest.mark.parametrize(
    "dev,dist",
    [
        (rt.cuda(0), "tvm-target-cuda"),
        (rt.opencl(1), "tvm-target-opencl"),
        (rt.metal(0), "tvm-target-metal"),
    ],
)
def test_missing_device_api_names_distribution(dev, dist):
    # whichever GPU plugins this environment has installed, none serves the device here
    from tvm.ffi.plugin import blocked_plugins, list_plugins

    with blocked_plugins([p.name for p in list_plugins() if "tvm_device_api" in p.hooks]):
        _check_missing_device_api(dev, dist)


def _check_missing_device_api(dev, dist):
    assert not dev.exist
    with pytest.raises(rt.DeviceUnavailableError) as info:
        dev.sync()
    msg = str(info.value)
    assert str(dev) in msg and dist in msg
    with pytest.raises(rt.DeviceUnavailableError, match=dist):
        rt.empty((2,), "float32", dev)


def test_unknown_device_type_error_mentions_hook():
    with pytest.raises(rt.DeviceUnavailableError, match="tvm_device_api"):
        rt.Device(99, 0).api


def test_cpu_device_api_alloc_free():
    api = rt.cpu(0).api
    ptr = api.alloc(rt.cpu(0), 100, 128)
    assert ptr % 128 == 0
    api.free(rt.cpu(0), ptr)
    with pytest.raises(ValueError, match="was not allocated"):
        api.free(rt.cpu(0), ptr)


def test_device_api_is_abstract():
    with pytest.raises(TypeError):
        DeviceAPI()  # type: ignore[abstract]
