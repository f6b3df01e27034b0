"""Deprecated path (smoke-core 0.1): the names moved; import them from ``smoke_core.plugin``.

Kept for one release with a ``DeprecationWarning`` (docs/compatibility.md)."""

from smoke_core._compat import moved

__getattr__ = moved(__name__, "smoke_core._run", "smoke_core.plugin")
