"""tvm.ffi: the small core every tvm package stands on.

Objects with declared fields, structural equality and hashing, JSON serialisation, the
global function registry, the pluggy plugin host, DLPack structures and error types.
"""

from .error import PluginError, RegistryError, SerializationError, TVMError
from .object import (
    FieldInfo,
    Object,
    def_field,
    get_object_type,
    ignore_field,
    list_object_types,
    object_fields,
    register_object,
    register_repr,
    tree_field,
)
from .serialization import from_json, register_json_value, to_json
from .structural import (
    StructuralMismatch,
    assert_structural_equal,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
)

__version__ = "0.1.0"
