"""Finding oneDNN: ``libdnnl.so.2`` (``ldconfig -p``) and its C headers
(``oneapi/dnnl/dnnl.h`` under ``/usr/include`` or ``/usr/local/include``; Debian's
``libdnnl-dev``).  The generated code uses the oneDNN 2.x C API (``dnnl_matmul_desc_init``);
oneDNN 3 changed it, and is reported as unsupported."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import subprocess
from typing import Optional

__all__ = ["DNNLLibrary", "find_dnnl"]

_INCLUDE_DIRS = ("/usr/include", "/usr/local/include")


@dataclasses.dataclass(frozen=True)
class DNNLLibrary:
    """oneDNN: the shared library, the include directory and the version."""

    path: str
    include_dir: str
    version: tuple[int, int, int]


def _ldconfig(names: tuple[str, ...]) -> Optional[str]:
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for want in names:
        for line in out.splitlines():
            name, _, path = line.strip().partition(" => ")
            if name.split(" ")[0] == want:
                return path.strip()
    return None


@functools.lru_cache(maxsize=1)
def find_dnnl() -> tuple[Optional[DNNLLibrary], str]:
    """``(library, "")``, or ``(None, why not)``."""
    path = _ldconfig(("libdnnl.so.2", "libdnnl.so"))
    if path is None:
        return None, "libdnnl.so.2 was not found (install oneDNN: `apt-get install libdnnl-dev`)"
    for inc in _INCLUDE_DIRS:
        header = os.path.join(inc, "oneapi", "dnnl", "dnnl_version.h")
        if os.path.exists(header):
            with open(header) as f:
                text = f.read()
            parts = [re.search(rf"#define DNNL_VERSION_{k}\s+(\d+)", text) for k in
                     ("MAJOR", "MINOR", "PATCH")]
            version = tuple(int(p.group(1)) if p else 0 for p in parts)
            if version[0] != 2:
                return None, (f"oneDNN {'.'.join(map(str, version))} found ({path}); the dnnl "
                              "backend generates the oneDNN 2.x C API")
            return DNNLLibrary(path, inc, version), ""  # type: ignore[arg-type]
    return None, (f"{path} was found but not the oneDNN C headers (oneapi/dnnl/dnnl.h); "
                  "install `libdnnl-dev`")
