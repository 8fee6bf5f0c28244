"""The plugin's passes, declared under entry-point group ``tvm.passes`` so that
``tvm.ir.transform.get_pass("acme.Annotate")`` finds them without importing this module
until then (as a vendor's lowering passes would be)."""

from tvm.ir.transform import ModulePass, module_pass


def Annotate() -> ModulePass:  # noqa: N802 - pass constructors are CamelCase
    """Mark the module as prepared for the ACME NPU (attribute ``acme.annotated``)."""
    return module_pass(lambda mod: mod.with_attr("acme.annotated", True), opt_level=0,
                       name="acme.Annotate")
