"""torch.compile(backend="tvm"): graph breaks, symbolic sizes, the build cache, the
inference-only fallback, DLPack zero copy, mutation and unsupported-op handling."""

from __future__ import annotations

import importlib.metadata
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch._dynamo

from tvm.relax.frontend.torch import dynamo

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    dynamo.clear_cache()
    yield
    torch._dynamo.reset()


def counting_backend(calls):
    """The tvm backend, counting the graphs dynamo hands it."""
    def backend(gm, example_inputs, **kwargs):
        calls.append(gm)
        return dynamo.tvm_backend(gm, example_inputs, **kwargs)
    return backend


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.fc1(x) + 1.0).softmax(-1)


def test_backend_name_and_entry_point():
    from torch._dynamo.backends.registry import lookup_backend

    assert "tvm" in torch._dynamo.list_backends()
    assert lookup_backend("tvm") is dynamo.tvm_backend
    meta = tomllib.loads((ROOT / "packages/tvm-relax/pyproject.toml").read_text())
    eps = meta["project"]["entry-points"]["torch_dynamo_backends"]
    ep = importlib.metadata.EntryPoint("tvm_relax", eps["tvm_relax"], "torch_dynamo_backends")
    assert ep.load() is dynamo.tvm_backend


def test_static_model_matches_eager():
    torch.manual_seed(0)
    model = Mlp().eval()
    compiled = torch.compile(model, backend="tvm")
    x = torch.randn(3, 8)
    with torch.no_grad():
        got, want = compiled(x), model(x)
    assert isinstance(got, torch.Tensor) and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert dynamo.cache_info()["builds"] == 1


def test_graph_break_compiles_each_subgraph():
    def f(x, y):
        a = x + y
        print("graph break")  # noqa: T201 - the break under test
        if a.sum() > 0:  # data-dependent branch: another break
            return a - 1.0
        return a + a

    calls = []
    compiled = torch.compile(f, backend=counting_backend(calls))
    for sign in (1.0, -1.0):
        x, y = sign * torch.rand(4, 5) + sign, torch.rand(4, 5)
        got, want = compiled(x, y), f(x, y)
        torch.testing.assert_close(got, want)
    assert len(calls) >= 3, [gm.code for gm in calls]  # before the print, and each branch


@pytest.mark.parametrize("how", ["dynamic", "mark_dynamic"])
def test_dynamic_sizes_build_once(how):
    torch.manual_seed(0)
    model = Mlp().eval()
    compiled = torch.compile(model, backend="tvm", dynamic=True if how == "dynamic" else None)
    with torch.no_grad():
        for batch in (2, 5, 9):
            x = torch.randn(batch, 8)
            if how == "mark_dynamic":
                torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    assert dynamo.cache_info()["builds"] == 1


def test_symint_placeholders_and_size_outputs():
    def f(x, y):
        n = x.shape[0] * 2
        z = (x + y).reshape(n // 2, -1)
        return z, n

    calls = []
    compiled = torch.compile(f, backend=counting_backend(calls), dynamic=True)
    for batch in (3, 6):
        x, y = torch.randn(batch, 4), torch.randn(batch, 4)
        got, want = compiled(x, y), f(x, y)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1] and isinstance(got[1], int)
    sym_inputs = [n for gm in calls for n in gm.graph.nodes
                  if n.op == "placeholder" and isinstance(n.meta.get("example_value"),
                                                          torch.SymInt)]
    assert sym_inputs, "dynamo passed no SymInt placeholder: the case is not exercised"
    assert dynamo.cache_info()["builds"] == 1


def test_cache_reuses_builds_across_recompiles():
    torch.manual_seed(0)
    model = Mlp().eval()
    x = torch.randn(3, 8)
    unfrozen = {"freeze_params": False}
    with torch.no_grad():
        torch.compile(model, backend="tvm", options=unfrozen)(x)
        torch._dynamo.reset()
        other = Mlp().eval()  # same graph, other weights (inputs of the graph, not constants)
        got = torch.compile(other, backend="tvm", options=unfrozen)(x)
        torch.testing.assert_close(got, other(x), rtol=1e-5, atol=1e-6)
    info = dynamo.cache_info()
    assert info["builds"] == 1 and info["hits"] == 1
    with torch.no_grad():  # other options: another build
        torch._dynamo.reset()
        torch.compile(model, backend="tvm", options={**unfrozen, "opt_level": 2})(x)
    assert dynamo.cache_info()["builds"] == 2


def test_grad_enabled_falls_back_to_eager_with_warning():
    torch.manual_seed(0)
    model = Mlp()
    compiled = torch.compile(model, backend="tvm")
    x = torch.randn(3, 8)
    with pytest.warns(UserWarning, match="inference only"):
        got = compiled(x)
    assert got.grad_fn is not None  # eager autograd graph kept
    got.sum().backward()
    assert model.fc1.weight.grad is not None
    assert dynamo.cache_info()["builds"] == 0


def test_inputs_and_outputs_are_zero_copy():
    x = torch.randn(4, 3)
    graph = _one_graph(lambda a, b: a + b, torch.randn(4, 3), torch.randn(4, 3))
    tv = graph._to_tvm(x)
    assert np.from_dlpack(tv).ctypes.data == x.data_ptr()
    result = graph._builds[()].vm["main"](graph._to_tvm(x), graph._to_tvm(x))
    first = result[0]
    back = dynamo._to_torch(first)
    assert back.data_ptr() == np.from_dlpack(first).ctypes.data
    torch.testing.assert_close(back, x + x)
    # an output stays valid after later calls (its buffer is not recycled under it)
    keep = graph(x, x)[0].clone()
    again = graph(x, x)[0]
    graph(torch.zeros(4, 3), torch.zeros(4, 3))
    torch.testing.assert_close(again, keep)


def test_non_contiguous_inputs():
    torch.manual_seed(0)
    model = Mlp().eval()
    compiled = torch.compile(model, backend="tvm")
    x = torch.randn(8, 6).t()  # (6, 8), strides (1, 6)
    assert not x.is_contiguous()
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)


@torch.library.custom_op("tvm_test::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    """An operator no converter can know: defined by this test alone."""
    return x * 2.0


@_twice.register_fake
def _(x):
    return torch.empty_like(x)


def test_unsupported_op_raises_naming_it_or_falls_back():
    def f(x):
        return _twice(x) + 1.0

    x = torch.randn(5)
    with pytest.raises(Exception, match=r"tvm_test\.twice"):
        torch.compile(f, backend="tvm")(x)
    torch._dynamo.reset()
    with pytest.warns(UserWarning, match="running it eagerly"):
        got = torch.compile(f, backend="tvm", options={"fallback": True})(x)
    torch.testing.assert_close(got, f(x))


def test_input_mutation_runs_eagerly():
    def f(x):
        x.add_(1.0)
        return x + 2.0

    x, ref = torch.zeros(3), torch.zeros(3)
    with pytest.warns(UserWarning, match="mutates"):
        got = torch.compile(f, backend="tvm")(x)
    want = f(ref)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x, ref)  # the mutation happened


def test_options_checked():
    with pytest.raises(Exception, match="unknown option"):
        torch.compile(lambda x: x + 1.0, backend="tvm", options={"targt": "llvm"})(
            torch.ones(2))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="not a directory"):
        torch.compile(lambda x: x + 1.0, backend="tvm",
                      options={"tuning_records": "/nonexistent/records"})(torch.ones(2))


def test_tuning_records_applied(tmp_path):
    pytest.importorskip("tvm.meta_schedule")
    compiled = torch.compile(lambda x: x + 1.0, backend="tvm",
                             options={"tuning_records": str(tmp_path)})  # an empty database
    x = torch.ones(3)
    torch.testing.assert_close(compiled(x), x + 1.0)


def _one_graph(fn, *args):
    """The CompiledGraph the backend makes for ``fn``'s single graph."""
    graphs = []

    def backend(gm, example_inputs, **kwargs):
        out = dynamo.tvm_backend(gm, example_inputs, **kwargs)
        graphs.append(out)
        return out

    torch.compile(fn, backend=backend)(*args)
    assert len(graphs) == 1 and isinstance(graphs[0], dynamo.CompiledGraph)
    return graphs[0]


def test_outputs_match_numpy_reference():
    graph = _one_graph(lambda a, b: (a + b, a - b), torch.ones(2, 2), torch.ones(2, 2))
    a, b = torch.arange(4.0).reshape(2, 2), torch.full((2, 2), 0.5)
    s, d = graph(a, b)
    np.testing.assert_allclose(s.numpy(), a.numpy() + b.numpy())
    np.testing.assert_allclose(d.numpy(), a.numpy() - b.numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph(a, b)
