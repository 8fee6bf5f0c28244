"""A vendor-style tvm plugin used by the repository's plugin tests.

Installed with pip, it is found through its ``[project.entry-points.tvm]`` entry and
registers the ``acme`` target kind (an imaginary NPU).  It imports tvm.ir only inside the
hook, as a real plugin should, so listing plugins stays cheap.
"""

from tvm.ffi.plugin import hookimpl

ACME_DEVICE_TYPE = 12  # DLPack kDLExtDev


@hookimpl
def tvm_register_target_kinds(register):
    from tvm.ir import TargetKind

    register(
        TargetKind(
            "acme",
            ACME_DEVICE_TYPE,
            {
                "foo": (str, "bar"),
                "cores": (int, 4),
                "mattr": (list[str], None),
                "fast": (bool, False),
            },
            default_keys=("acme", "npu"),
            package="tvm-testplugin-acme",
            doc="The imaginary ACME NPU.",
        )
    )
