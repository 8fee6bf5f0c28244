"""MakePackedAPI: the packed signature, argument checks in TIR and their messages."""

import json

import pytest
from tvm.ir import IRModule
from tvm.tir import (
    AssertStmt, AttrStmt, Call, Cast, DeclBuffer, For, ForKind, LetStmt, PrimFunc, SizeVar,
    Var, decl_buffer,
)
from tvm.tir.stmt import BufferStore
from tvm.tir.stmt_functor import post_order_visit
from tvm.tir.transform import MakePackedAPI, make_packed_api
from tvm.tir.transform.make_packed_api import (
    COMPUTE_SCOPE, PACKED_PARAM_NAMES, StructFieldKind, packed_params,
)


def _func(scalar_n=False):
    n = SizeVar("n", "int32")
    A = decl_buffer((n, 4), "float32", "A")
    B = decl_buffer((n * 2,), "float16", "B")
    alpha = Var("alpha", "float32")
    a, b = Var("a", "handle"), Var("b", "handle")
    i = Var("i", "int32")
    body = For(i, 0, n, ForKind.SERIAL, BufferStore(A, A[i, 0] * alpha, (i, 0)))
    params = [a, b, alpha] + ([n] if scalar_n else [])
    return PrimFunc(params, body, buffer_map={a: A, b: B},
                    attrs={"global_symbol": "f", "tir.noalias": True}), body


def _collect(func, cls):
    out = []
    post_order_visit(func.body, lambda node: out.append(node) if isinstance(node, cls) else None)
    return out


def _messages(func):
    asserts = []
    stmt = func.body

    def walk(s):
        if isinstance(s, AssertStmt):
            asserts.append(s.message)
        for field in ("body", "then_case"):
            child = getattr(s, field, None)
            if child is not None and not isinstance(s, AttrStmt):
                walk(child)
        for child in getattr(s, "seq", ()):
            walk(child)

    walk(stmt)
    return asserts


def test_signature_and_attributes():
    func, body = _func()
    g = make_packed_api(func)
    assert [p.name for p in g.params] == list(PACKED_PARAM_NAMES)
    assert [p.dtype for p in g.params] == ["handle", "handle", "int32", "handle", "handle",
                                           "handle"]
    assert g.ret_type == "int32" and not g.buffer_map
    assert g.attrs["calling_conv"] == "packed" and g.attrs["global_symbol"] == "f"
    assert g.attrs["tir.noalias"] is True
    assert packed_params(g) == [
        # the body stores to A only: B is read, so a read-only array may be passed as B
        {"name": "A", "kind": "tensor", "dtype": "float32", "shape": ["n", 4], "written": True},
        {"name": "B", "kind": "tensor", "dtype": "float16", "shape": ["(n * 2)"],
         "written": False},
        {"name": "alpha", "kind": "scalar", "dtype": "float32"},
    ]
    json.loads(g.attrs["tir.packed_params"])
    scopes = _collect(g, AttrStmt)
    assert len(scopes) == 1 and scopes[0].attr_key == COMPUTE_SCOPE
    assert scopes[0].value.value == "f_compute_" and scopes[0].body is body


def test_checks_in_order_with_readable_messages():
    g = make_packed_api(_func()[0])
    msgs = _messages(g)
    assert msgs[0] == "f: expected 3 arguments, got %lld"
    assert msgs[1] == "f: argument A expects a tensor (DLTensor*, type code 7), got type code %lld"
    assert msgs[3] == "f: argument alpha expects a float for float32 (type code 2), got type code %lld"
    i_ndim = msgs.index("f: argument A has ndim = %lld, expected 2")
    i_dtype = msgs.index("f: argument A has dtype (code=%lld, bits=%lld, lanes=%lld), expected "
                         "float32 (code=2, bits=32, lanes=1)")
    i_shape = msgs.index("f: argument A has shape[1] = %lld, expected 4")
    assert i_ndim < i_dtype < i_shape
    assert "f: argument A is on device type %lld, expected 1 (cpu)" in msgs
    # B's extent n*2 is checked after every symbolic variable is bound; % is escaped
    assert msgs[-1] == "f: argument B has shape[0] = %lld, expected (n * 2) = %lld"
    assert "f: argument A has a NULL data pointer (byte_offset %lld)" in msgs


def test_struct_get_and_binding_of_symbolic_dims():
    func, _ = _func()
    n = func.buffer_map[func.params[0]].shape[0]
    g = make_packed_api(func)
    lets = [s for s in _collect(g, LetStmt) if s.var is n]
    assert len(lets) == 1 and isinstance(lets[0].value, Cast)  # int64 shape -> int32 n
    kinds = {int(c.args[2].value) for c in _collect(g, Call) if c.op.name == "tir.tvm_struct_get"}
    assert {StructFieldKind.ARR_NDIM, StructFieldKind.ARR_SHAPE, StructFieldKind.ARR_STRIDES,
            StructFieldKind.ARR_DATA, StructFieldKind.ARR_BYTE_OFFSET,
            StructFieldKind.TVM_VALUE_CONTENT} <= kinds
    decls = {d.buffer.name for d in _collect(g, DeclBuffer)}
    assert {"arg_type_ids", "A.shape", "A.strides", "B.shape"} <= decls


def test_scalar_param_used_in_shape_is_checked_not_rebound():
    func, _ = _func(scalar_n=True)
    n = func.params[3]
    g = make_packed_api(func)
    assert len([s for s in _collect(g, LetStmt) if s.var is n]) == 1
    assert "f: argument A has shape[0] = %lld, but n = %lld from argument n" in _messages(g)


def test_idempotent_and_module_pass_names_functions():
    func, _ = _func()
    g = make_packed_api(func)
    assert make_packed_api(g) is g
    nameless = func.without_attr("global_symbol")
    with pytest.raises(ValueError, match="no global_symbol"):
        make_packed_api(nameless)
    mod = MakePackedAPI()(IRModule({"kernel": nameless}))
    assert mod["kernel"].attrs["global_symbol"] == "kernel"
    assert mod["kernel"].attrs["calling_conv"] == "packed"


def test_unbindable_symbolic_extent_is_a_compile_error():
    n, m = SizeVar("n", "int32"), SizeVar("m", "int32")
    A = decl_buffer((n + m,), "float32", "A")
    a = Var("a", "handle")
    func = PrimFunc([a], BufferStore(A, 0.0, (0,)), buffer_map={a: A},
                    attrs={"global_symbol": "g"})
    with pytest.raises(ValueError, match=r"\(n \+ m\) uses n, m, which no argument binds"):
        make_packed_api(func)


def test_device_type_is_configurable():
    g = make_packed_api(_func()[0], device_type=2)
    assert "f: argument A is on device type %lld, expected 2 (cuda)" in _messages(g)
