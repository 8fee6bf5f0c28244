"""Relax operators: Python builders returning :class:`~tvm.relax.Call` nodes.

Each family module declares its operators with :func:`~tvm.relax.op.base.register_op`
(name, inputs, Attrs class, StructInfo inference, later the legalization) in one place.
"""

from . import base, builtin, image, nn, qnn, random, vision
from .base import Attrs, OpSpec, get_op_spec, make_call, register_op
from .bits import BitcastAttrs, CastE8M0Attrs, bitcast, cast_e8m0
from .binary import *  # noqa: F403
from .binary import BINARY_OPS
from .call import (
    call_dps_packed, call_pure_packed, call_tir, null_value, shape_of, shape_to_tensor,
)
from .complex import COMPLEX_PARTS, view_as_complex, view_as_real
from .linear_algebra import EinsumAttrs, MatmulAttrs, einsum, matmul
from .manipulate import PermuteDimsAttrs, permute_dims, reshape
from .unary import *  # noqa: F403
from .unary import UNARY_OPS, AstypeAttrs, ClipAttrs, astype, clip
from .create import *  # noqa: F403
from .dynamic import *  # noqa: F403
from .index import *  # noqa: F403
from .movement import *  # noqa: F403
from .search import *  # noqa: F403
from .sorting import *  # noqa: F403
from .statistical import *  # noqa: F403
from .special import *  # noqa: F403
from .special_bessel import *  # noqa: F403
