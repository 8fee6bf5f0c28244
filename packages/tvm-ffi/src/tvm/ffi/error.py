"""Error types shared by every tvm package."""

from __future__ import annotations

__all__ = ["TVMError", "SerializationError", "RegistryError", "PluginError"]


class TVMError(Exception):
    """Base of the errors raised by tvm packages."""


class SerializationError(TVMError, ValueError):
    """Malformed or unknown content met while (de)serialising an object graph."""


class RegistryError(TVMError, KeyError):
    """A global-function registry misuse: a missing name or a duplicate registration."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class PluginError(TVMError, RuntimeError):
    """A plugin could not be loaded, or nothing installed provides what was asked for."""
