"""tvm.ffi: the small core every tvm package stands on.

Objects with declared fields, structural equality and hashing, JSON serialisation, the
global function registry, the pluggy plugin host, the debug-knob home (:mod:`.knobs`: every
environment variable tvm reads), DLPack structures and error types.
"""

from .dlpack import (
    ArgTypeCode,
    DLDataType,
    DLDevice,
    DLDeviceType,
    DLManagedTensor,
    DLTensor,
    TVMValue,
)
from . import knobs
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
from .plugin import (
    PluginHookWarning,
    PluginInfo,
    PluginLoadWarning,
    add_hookspecs,
    call_hook,
    format_plugin_table,
    get_plugin_info,
    get_plugin_manager,
    hookimpl,
    hookspec,
    list_plugins,
    register_plugin,
    reload_plugins,
    unregister_plugin,
)
from .registry import get_global_func, list_global_func_names, register_func, remove_global_func
from .serialization import from_json, register_json_value, to_json
from .structural import (
    StructuralMap,
    StructuralMismatch,
    assert_structural_equal,
    deep_recursion,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
)

__version__ = "0.1.0"
