"""Analyses over Relax programs: StructInfo reasoning, variables, well-formedness."""

from .struct_info_analysis import (
    BaseCheckResult,
    definable_tir_vars_in_struct_info,
    derive_call_ret_struct_info,
    erase_to_well_defined,
    get_static_shape,
    is_base_of,
    struct_info_base_check,
    struct_info_lca,
    tir_vars_in_struct_info,
)
from .var_analysis import (
    all_global_vars,
    all_vars,
    bound_vars,
    defined_symbolic_vars,
    free_symbolic_vars,
    free_vars,
    get_var2val,
)
from .well_formed import verify_well_formed, well_formed, well_formed_problems
