"""``tvm.driver.tvmc.listing`` and the option parsers of ``tvmc``: no compiler needed."""

from __future__ import annotations

import pytest
from tvm.driver.tvmc.listing import kernel_source, loops, split_functions
from tvm.driver.tvmc.model import OptionError, parse_input_dtypes, parse_input_shapes

ASM = """\
\t.text
\t.type\tk,@function
k:
\tcmpl\t$4, %edx
\tjne\t.LBB0_9
\txorl\t%eax, %eax
.LBB0_1:
\txorl\t%ecx, %ecx
.LBB0_2:
\tvfmadd231ps\t(%rdx), %zmm2, %zmm1
\tincq\t%rcx
\tcmpq\t$64, %rcx
\tjne\t.LBB0_2
\tincq\t%rax
\tcmpq\t$8, %rax
\tjne\t.LBB0_1
\tretq
.LBB0_9:
\tcallq\treport_error
\tretq
.Lfunc_end0:
\t.size\tk, .Lfunc_end0-k
"""

LL = """\
define i32 @k(ptr %a) {
entry:
  br i1 %c, label %for.i.body, label %fail

fail:
  ret i32 -1

for.i.body:
  %i = phi i64 [ 0, %entry ], [ %i1, %for.i.body ]
  %i1 = add i64 %i, 1
  %d = icmp eq i64 %i1, 8
  br i1 %d, label %done, label %for.i.body

done:
  ret i32 0
}
"""


def test_asm_outermost_loop_holds_the_inner_one():
    found = loops(split_functions(ASM, "asm")["k"], "asm")
    assert len(found) == 1
    assert found[0].startswith(".LBB0_1:") and "vfmadd231ps" in found[0]
    assert "report_error" not in found[0] and "cmpl\t$4" not in found[0]


def test_ll_loop_is_found_from_its_back_edge_not_text_order():
    found = loops(split_functions(LL, "ll")["k"], "ll")
    assert found == ["\n".join(LL.splitlines()[7:12])]


def test_kernel_source_prefers_compute_functions_and_names_kernels():
    c = ("static int32_t k_compute_(float* a) {\n  for (;;) {}\n}\n"
         "int32_t k(void* args, int32_t* codes, int32_t n) {\n  return k_compute_(0);\n}\n")
    assert kernel_source(c, "c", "k").startswith("static int32_t k_compute_")
    assert "return k_compute_" in kernel_source(c, "c", "k", hot=False)
    with pytest.raises(ValueError, match="kernels: k$"):
        kernel_source(c, "c", "other")


def test_parse_input_shapes():
    assert parse_input_shapes("x:[1,3,224,224] mask:[n,?]") == {
        "x": [1, 3, 224, 224], "mask": ["n", None]}
    assert parse_input_shapes("a:[2, 3];b:[]") == {"a": [2, 3], "b": []}
    assert parse_input_shapes(None) == {}
    for bad in ("x", "x:[1,-2]", "x:[1,2.5]", "x:[1] x:[2]", ":[1]"):
        with pytest.raises(OptionError):
            parse_input_shapes(bad)


def test_parse_input_dtypes():
    assert parse_input_dtypes("float16") == "float16"
    assert parse_input_dtypes("x:float16 ids:int64") == {"x": "float16", "ids": "int64"}
    with pytest.raises(OptionError):
        parse_input_dtypes("x:float16 ids:")
