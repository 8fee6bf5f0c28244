"""The torch peer of the model benchmarks: an ONNX graph run node by node with torch ops.

``TorchGraph(model)`` holds the initializers as torch tensors and maps each ONNX node of the
op set the benchmark models use to the torch operator doing the same (``F.conv2d``,
``F.batch_norm``, ``torch.matmul``, ``F.layer_norm`` ...), so torch eager runs exactly the
weights and graph that onnxruntime and our compiler run.  Ops outside that set raise
``NotImplementedError`` naming the op.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pads(pads: list[int]) -> tuple[int, ...]:
    half = len(pads) // 2
    if list(pads[:half]) != list(pads[half:]):
        raise NotImplementedError(f"asymmetric pads {pads}")
    return tuple(pads[:half])


class TorchGraph:
    """Run an ONNX ``ModelProto`` with torch eager operators (see the module docstring)."""

    def __init__(self, model: Any):
        import torch
        from onnx import numpy_helper

        self.torch = torch
        graph = model.graph
        self.inputs = [i.name for i in graph.input]
        self.outputs = [o.name for o in graph.output]
        self.consts = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
                       for t in graph.initializer}
        self.nodes = []
        for node in graph.node:
            if node.op_type == "Constant":
                self.consts[node.output[0]] = torch.from_numpy(
                    numpy_helper.to_array(node.attribute[0].t).copy())
                continue
            fn = getattr(self, f"_op_{node.op_type}", None)
            if fn is None:
                raise NotImplementedError(f"torch peer: ONNX op {node.op_type} is not mapped")
            self.nodes.append((fn, list(node.input), list(node.output), _attrs(node)))

    def __call__(self, feeds: dict[str, np.ndarray]) -> list[Any]:
        env: dict[str, Any] = dict(self.consts)
        for name in self.inputs:
            env[name] = self.torch.from_numpy(feeds[name])
        for fn, ins, outs, attrs in self.nodes:
            result = fn(*[env[i] if i else None for i in ins], **attrs)
            env[outs[0]] = result
        return [env[o] for o in self.outputs]

    # -- operators -------------------------------------------------------------------------
    def _op_Conv(self, x, w, b=None, *, strides=(1, 1), pads=(0, 0, 0, 0), group=1,
                 dilations=(1, 1), kernel_shape=None):
        F = self.torch.nn.functional
        return F.conv2d(x, w, b, tuple(strides), _pads(pads), tuple(dilations), group)

    def _op_BatchNormalization(self, x, scale, bias, mean, var, *, epsilon=1e-5, momentum=0.9):
        F = self.torch.nn.functional
        return F.batch_norm(x, mean, var, scale, bias, False, 0.0, epsilon)

    def _op_Relu(self, x):
        return self.torch.relu(x)

    def _op_Clip(self, x, lo=None, hi=None):
        return self.torch.clamp(x, None if lo is None else float(lo),
                                None if hi is None else float(hi))

    def _op_MaxPool(self, x, *, kernel_shape, strides=(1, 1), pads=(0, 0, 0, 0)):
        F = self.torch.nn.functional
        return F.max_pool2d(x, tuple(kernel_shape), tuple(strides), _pads(pads))

    def _op_AveragePool(self, x, *, kernel_shape, strides=(1, 1), pads=(0, 0, 0, 0),
                        count_include_pad=0):
        F = self.torch.nn.functional
        return F.avg_pool2d(x, tuple(kernel_shape), tuple(strides), _pads(pads),
                            count_include_pad=bool(count_include_pad))

    def _op_GlobalAveragePool(self, x):
        return self.torch.mean(x, dim=(2, 3), keepdim=True)

    def _op_Flatten(self, x, *, axis=1):
        return self.torch.flatten(x, axis)

    def _op_Gemm(self, a, b, c=None, *, transA=0, transB=0, alpha=1.0, beta=1.0):
        a = a.t() if transA else a
        b = b.t() if transB else b
        y = self.torch.matmul(a, b) * alpha if alpha != 1.0 else self.torch.matmul(a, b)
        return y if c is None else y + beta * c

    def _op_MatMul(self, a, b):
        return self.torch.matmul(a, b)

    def _op_Shape(self, x):
        return self.torch.tensor(list(x.shape), dtype=self.torch.int64)

    def _op_Gather(self, data, index, *, axis=0):
        return self.torch.index_select(data, axis, index.reshape(-1)).reshape(
            (*data.shape[:axis], *index.shape, *data.shape[axis + 1:]))

    def _op_Unsqueeze(self, x, axes):
        for a in sorted(int(v) for v in axes.reshape(-1)):
            x = x.unsqueeze(a)
        return x

    def _op_Range(self, start, limit, delta):
        return self.torch.arange(int(start), int(limit), int(delta), dtype=self.torch.int64)

    def _op_Concat(self, *xs, axis=0):
        return self.torch.cat(xs, dim=axis)

    def _op_Reshape(self, x, shape):
        return x.reshape([int(v) for v in shape])

    def _op_Transpose(self, x, *, perm):
        return x.permute(*perm)

    def _binary(op: Callable) -> Callable:  # noqa: N805 - a decorator factory in the body
        def run(self, a, b):
            return op(a, b)
        return run

    _op_Add = _binary(lambda a, b: a + b)
    _op_Sub = _binary(lambda a, b: a - b)
    _op_Mul = _binary(lambda a, b: a * b)
    _op_Div = _binary(lambda a, b: a / b)

    def _op_Softmax(self, x, *, axis=-1):
        return self.torch.softmax(x, dim=axis)

    def _op_Erf(self, x):
        return self.torch.erf(x)

    def _op_Sigmoid(self, x):
        return self.torch.sigmoid(x)

    def _op_Tanh(self, x):
        return self.torch.tanh(x)

    def _op_Neg(self, x):
        return -x

    def _op_Abs(self, x):
        return self.torch.abs(x)

    def _op_LayerNormalization(self, x, gamma, beta, *, axis=-1, epsilon=1e-5):
        F = self.torch.nn.functional
        if axis != -1:
            raise NotImplementedError(f"LayerNormalization axis={axis}")
        return F.layer_norm(x, (x.shape[-1],), gamma, beta, epsilon)
