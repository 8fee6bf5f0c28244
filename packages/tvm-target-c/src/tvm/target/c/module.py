"""``CModule``: a compiled ``c`` target module (a shared library plus its C source)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tvm.runtime.file_seal import write_file
from tvm.runtime.module import SharedLibraryModule

__all__ = ["CModule"]


class CModule(SharedLibraryModule):
    """Kernels compiled from generated C and loaded through tvm-runtime.

    ``get_source()`` returns the C source; ``export_library(path)`` copies the shared
    library (or writes the source when ``path`` ends in ``.c``).  The exported file loads
    with ``tvm.runtime.load_module`` alone, without the compiler packages.
    """

    type_key = "c"

    def __init__(self, lib_path: str | os.PathLike[str], source: str) -> None:
        super().__init__(lib_path)
        self.type_key = "c"
        self._sources["c"] = source

    @property
    def library_path(self) -> Path:
        """The compiled library this module was loaded from (in the kernel cache)."""
        return Path(self.path)

    def export_library(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        """Write the shared library to ``path`` (``.so``/``.dylib``/``.dll``), or the C
        source when ``path`` ends in ``.c``."""
        if kwargs:
            raise TypeError(f"CModule.export_library takes no options, got {sorted(kwargs)}")
        path = os.fspath(path)
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"export_library: directory {parent!r} does not exist")
        if path.endswith(".c"):
            write_file(path, [self.get_source("c").encode("utf-8")])
            return
        super().export_library(path)  # the sealed library, copied atomically

    def __repr__(self) -> str:
        return f"<tvm.target.c.CModule functions={self.function_names}>"
