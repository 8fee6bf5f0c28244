import pytest
from tvm.ir import TargetKind, register_target_kind, unregister_target_kind


@pytest.fixture
def cpu_kind():
    kind = TargetKind(
        "testcpu",
        1,
        {
            "mcpu": (str, "generic"),
            "mattr": (list[str], None),
            "num-cores": (int, None),
            "fast-math": (bool, False),
            "opt-scale": (float, 1.0),
            "max_num_threads": (int, 64),
        },
        default_keys=("cpu",),
        package="tvm-ir-tests",
    )
    register_target_kind(kind)
    yield kind
    unregister_target_kind("testcpu")


@pytest.fixture
def gpu_kind():
    kind = TargetKind("testgpu", 2, {"arch": (str, None)}, default_keys=("gpu",))
    register_target_kind(kind)
    yield kind
    unregister_target_kind("testgpu")
