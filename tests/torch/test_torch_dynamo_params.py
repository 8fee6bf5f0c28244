"""torch.compile(backend="tvm") with module weights baked into the build (freeze_params):
numerics, the weights as constants of the built module, weights changed after compiling,
model instances with different weights, the switch back to weights as inputs."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

from tvm.relax.frontend.torch import dynamo

TOL = dict(rtol=1e-4, atol=1e-5)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    dynamo.clear_cache()
    yield
    torch._dynamo.reset()


class ConvNet(torch.nn.Module):
    """conv + batch norm (parameters and buffers) + linear."""

    def __init__(self, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 4)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2.0)
        self.eval()

    def forward(self, x):
        return self.fc(self.bn(self.conv(x)).relu().mean((2, 3)))


N_WEIGHTS = 2 + 4 + 2  # conv w/b, bn weight/bias/running_mean/running_var, fc w/b


def recording_backend():
    """The tvm backend, and the list of the CompiledGraphs it returns."""
    graphs = []

    def backend(gm, example_inputs, **kwargs):
        out = dynamo.tvm_backend(gm, example_inputs, **kwargs)
        graphs.append(out)
        return out

    return backend, graphs


def compile_graphs(model, options=None):
    """``torch.compile(model)`` and the list the CompiledGraphs it makes are put in."""
    backend, graphs = recording_backend()
    return torch.compile(model, backend=backend, options=options), graphs


def x_input():
    return torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(1))


def test_weights_are_constants_of_the_build():
    model = ConvNet()
    x = x_input()
    frozen, graphs = compile_graphs(model)
    with torch.no_grad():
        torch.testing.assert_close(frozen(x), model(x), **TOL)
    (graph,) = graphs
    assert len(graph.weight_pos) == N_WEIGHTS and len(graph.run_pos) == 1
    main = graph.executable.lowered_mod["main"]
    assert len(main.params) == 1  # x only: the weights are constants
    torch._dynamo.reset()
    unfrozen, graphs = compile_graphs(model, {"freeze_params": False})
    with torch.no_grad():
        torch.testing.assert_close(unfrozen(x), model(x), **TOL)
    assert graphs[0].frozen is None
    assert len(graphs[0].executable.lowered_mod["main"].params) == 1 + N_WEIGHTS


def test_in_place_weight_changes_are_followed():
    model = ConvNet()
    x = x_input()
    compiled, graphs = compile_graphs(model)
    with torch.no_grad():
        compiled(x)
    # an optimizer step (autograd on: eager, as the backend is inference-only)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    model.train()
    model(torch.randn(4, 3, 8, 8)).square().sum().backward()
    opt.step()
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), **TOL)
        model.load_state_dict(ConvNet(seed=7).state_dict())
        torch.testing.assert_close(compiled(x), model(x), **TOL)
        model.fc.bias.copy_(torch.full((4,), 3.0))  # in place through the parameter
        torch.testing.assert_close(compiled(x), model(x), **TOL)
    assert len(graphs) == 1 and graphs[0].frozen is not None  # still baked
    assert dynamo.cache_info()["builds"] == 4


def test_same_values_reuse_the_build():
    model = ConvNet()
    x = x_input()
    compiled, _ = compile_graphs(model)
    with torch.no_grad():
        compiled(x)
        model.load_state_dict(ConvNet().state_dict())  # versions bumped, values equal
        torch.testing.assert_close(compiled(x), model(x), **TOL)
    assert dynamo.cache_info()["builds"] == 1


def test_writes_through_data_need_reload_weights():
    model = ConvNet()
    x = x_input()
    compiled, _ = compile_graphs(model)
    with torch.no_grad():
        compiled(x)
        model.conv.weight.data.copy_(torch.randn_like(model.conv.weight))  # no version bump
        dynamo.reload_weights()
        torch.testing.assert_close(compiled(x), model(x), **TOL)
        model.fc.weight.data = torch.randn_like(model.fc.weight)  # another data pointer
        torch.testing.assert_close(compiled(x), model(x), **TOL)
    assert dynamo.cache_info()["builds"] == 3


def test_weights_made_under_inference_mode():
    with torch.inference_mode():
        model = ConvNet()  # inference tensors: no version counter
    x = x_input()
    compiled, graphs = compile_graphs(model)
    with torch.inference_mode():
        torch.testing.assert_close(compiled(x), model(x), **TOL)
        model.fc.bias.add_(1.0)
        dynamo.reload_weights()
        torch.testing.assert_close(compiled(x), model(x), **TOL)
    assert graphs[0].frozen is not None and dynamo.cache_info()["builds"] == 2


def test_instances_with_different_weights():
    a, b = ConvNet(seed=1), ConvNet(seed=2)
    x = x_input()
    backend, graphs = recording_backend()
    ca = torch.compile(a, backend=backend)
    cb = torch.compile(b, backend=backend)  # the same backend: dynamo shares a's graph
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(ca(x), a(x), **TOL)
            torch.testing.assert_close(cb(x), b(x), **TOL)
    assert dynamo.cache_info()["builds"] == 2  # one per instance, kept while alternating
    assert len(graphs) == 1 and graphs[0].refreezes == 1
    # a new compilation of the same graph for another instance: a build of its own
    torch._dynamo.reset()
    c = ConvNet(seed=3)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(c, backend="tvm")(x), c(x), **TOL)
        d = ConvNet(seed=3)  # same values as c: the cached build
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(d, backend="tvm")(x), d(x), **TOL)
    info = dynamo.cache_info()
    assert info["builds"] == 3 and info["hits"] == 1


def test_instances_with_equal_weights_share_a_build(monkeypatch):
    from tvm.relax.frontend.torch import dynamo_weights

    hashed = []
    digest = dynamo_weights.weights_digest
    monkeypatch.setattr(dynamo_weights, "weights_digest",
                        lambda ts: hashed.append(len(ts)) or digest(ts))
    a, b = ConvNet(seed=1), ConvNet(seed=1)
    backend, graphs = recording_backend()
    ca, cb = torch.compile(a, backend=backend), torch.compile(b, backend=backend)
    x = x_input()
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(ca(x), a(x), **TOL)
            torch.testing.assert_close(cb(x), b(x), **TOL)
    assert len(graphs) == 1 and graphs[0].refreezes == 0
    assert dynamo.cache_info()["builds"] == 1
    assert len(hashed) == 2  # a's weights at compile time, b's at its first call: no more


def test_weights_that_keep_changing_become_inputs(monkeypatch):
    monkeypatch.setattr(dynamo, "_MAX_REFREEZES", 1)
    model = ConvNet()
    x = x_input()
    compiled, graphs = compile_graphs(model)
    with torch.no_grad():
        compiled(x)
        model.fc.bias.add_(1.0)
        torch.testing.assert_close(compiled(x), model(x), **TOL)
        model.fc.bias.add_(1.0)
        with pytest.warns(UserWarning, match="run-time inputs"):
            torch.testing.assert_close(compiled(x), model(x), **TOL)
        (graph,) = graphs
        assert graph.frozen is None
        assert len(graph.executable.lowered_mod["main"].params) == 1 + N_WEIGHTS
        model.fc.bias.add_(1.0)  # now read at each call: no rebuild
        torch.testing.assert_close(compiled(x), model(x), **TOL)
    assert dynamo.cache_info()["builds"] == 3


def test_only_module_state_is_baked():
    weight = torch.randn(8, 4)
    torch._dynamo.mark_static_address(weight)  # static, but not a module's: an input
    model = torch.nn.Linear(4, 8).eval()

    def f(x, w):
        return model(x) + x @ w.t()

    compiled, graphs = compile_graphs(f)
    x = torch.randn(3, 4)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, weight), f(x, weight), **TOL)
        weight.mul_(2.0)
        torch.testing.assert_close(compiled(x, weight), f(x, weight), **TOL)
    (graph,) = graphs
    assert len(graph.weight_pos) == 2  # model.weight, model.bias
    assert len(graph.executable.lowered_mod["main"].params) == 2  # x, w
    assert dynamo.cache_info()["builds"] == 1


class LstmNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.fc = torch.nn.Linear(16, 4)
        self.eval()

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


def test_lstm_with_dynamo_allow_rnn_is_one_graph():
    # dynamo graph-breaks on nn.LSTM/GRU/RNN unless allow_rnn is set (torch's default off)
    model = LstmNet()
    x = torch.randn(1, 6, 8)
    with torch._dynamo.config.patch(allow_rnn=True), torch.no_grad():
        compiled, graphs = compile_graphs(model)
        torch.testing.assert_close(compiled(x), model(x), **TOL)
    (graph,) = graphs
    assert len(graph.weight_pos) == 4 * 2 + 2 and len(graph.run_pos) == 1
