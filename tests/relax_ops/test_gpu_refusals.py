"""The table of expected refusals (gpu_refusals.py) names tests that exist, on targets the
suite runs, with a reason each."""

import importlib

from gpu_refusals import REFUSED
from relax_op_harness import TARGETS


def test_every_refusal_names_an_existing_test(relax_target):
    for r in (r for r in REFUSED if r.target == relax_target):
        assert r.target in TARGETS and r.target != "llvm", r
        assert r.reason and r.error, r
        module, _, rest = r.test.partition("::")
        func = rest.partition("[")[0]
        mod = importlib.import_module(module.removesuffix(".py"))
        assert callable(getattr(mod, func, None)), f"{r.test}: no test {func} in {module}"
