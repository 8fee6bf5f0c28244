"""LowerAllocation: each host allocation is annotated stack or heap, and agrees with its buffer."""

import pytest
from lowering_helpers import find_first, func_of, mod_of
from tvm.ir.transform import PassContext
from tvm.tir import (
    Allocate, BufferStore, DeclBuffer, FloatImm, For, ForKind, Var, convert, decl_buffer,
)
from tvm.tir.transform import LowerAllocation, lower_allocation


def _alloc_func(extents, dtype="float32", scope="global", annotations=None, decl_shape=None,
                decl_dtype=None, wrap_parallel=False):
    a = Var("a", "handle")
    A = decl_buffer((1,), "float32", "A")
    data = Var("T", "handle")
    T = decl_buffer(decl_shape or (extents[0],), decl_dtype or dtype, "T", data=data, scope=scope)
    store = BufferStore(T, FloatImm(T.dtype, 0.0) if "float" in T.dtype else convert(0), (0,))
    body = Allocate(data, dtype, tuple(extents), convert(True), DeclBuffer(T, store), scope,
                    annotations or {})
    if wrap_parallel:
        body = For(Var("p"), 0, 4, ForKind.PARALLEL, body)
    return func_of([a], body, {a: A})


def _storage(func):
    return find_first(func.body, Allocate).annotations.get("storage")


def test_small_constant_allocation_goes_on_the_stack():
    assert _storage(lower_allocation(_alloc_func([16]))) == "stack"  # 64 bytes


def test_large_constant_allocation_goes_on_the_heap():
    assert _storage(lower_allocation(_alloc_func([1024]))) == "heap"  # 4 KiB


def test_exactly_the_limit_is_still_stack():
    assert _storage(lower_allocation(_alloc_func([256]))) == "stack"  # 1024 bytes
    assert _storage(lower_allocation(_alloc_func([257]))) == "heap"


def test_symbolic_size_goes_on_the_heap():
    n = Var("n")
    assert _storage(lower_allocation(_alloc_func([n]))) == "heap"


def test_local_scope_is_stack_whatever_the_size():
    assert _storage(lower_allocation(_alloc_func([4096], scope="local"))) == "stack"


def test_config_option_moves_the_threshold():
    func = _alloc_func([1024])
    with PassContext(config={"tir.LowerAllocation.max_stack_bytes": 8192}):
        out = LowerAllocation()(mod_of(func))["main"]
    assert _storage(out) == "stack"
    assert _storage(lower_allocation(func, max_stack_bytes=16)) == "heap"


def test_existing_annotation_is_kept_and_checked():
    func = _alloc_func([4], annotations={"storage": "heap"})
    assert _storage(lower_allocation(func)) == "heap"
    with pytest.raises(ValueError, match="'stack' or 'heap'"):
        lower_allocation(_alloc_func([4], annotations={"storage": "register"}))


def test_device_scopes_are_not_annotated():
    assert _storage(lower_allocation(_alloc_func([4], scope="shared"))) is None


def test_allocation_inside_parallel_loop_stays_inside():
    out = lower_allocation(_alloc_func([16], wrap_parallel=True))
    assert isinstance(out.body, For) and isinstance(out.body.body, Allocate)
    assert out.body.body.annotations["storage"] == "stack"


def test_multi_dimensional_allocate_takes_flat_buffer_shape():
    out = lower_allocation(_alloc_func([4, 8], decl_shape=(32,)))
    alloc = find_first(out.body, Allocate)
    assert [e.value for e in alloc.extents] == [32]


def test_buffer_larger_than_allocation_is_an_error():
    with pytest.raises(ValueError, match="holds 4 elements"):
        lower_allocation(_alloc_func([4], decl_shape=(8,)))


def test_dtype_disagreement_is_an_error():
    with pytest.raises(ValueError, match="dtype"):
        lower_allocation(_alloc_func([4], dtype="float32", decl_dtype="int32"))


def test_function_without_allocations_is_unchanged():
    a = Var("a", "handle")
    A = decl_buffer((1,), "float32", "A")
    func = func_of([a], BufferStore(A, FloatImm("float32", 1.0), (0,)), {a: A})
    assert lower_allocation(func) is func
