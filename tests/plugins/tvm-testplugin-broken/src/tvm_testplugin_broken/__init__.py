"""A tvm plugin that is broken on purpose: its import fails, as a plugin whose native
SDK is missing would.  The plugin tests check that this failure is reported with the
plugin's name and does not stop the other plugins from loading."""

raise ImportError("libbroken_sdk.so: cannot open shared object file (broken on purpose)")
