"""Old module paths (smoke-core 0.1) kept working for one release.

``from smoke_core.tools import ToolDefinition`` still works and warns
(``DeprecationWarning``) with the door to import from instead; the old paths
go away in smoke-core 0.3 (docs/compatibility.md).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

#: where a plugin or an application should import from instead
DOORS = ("smoke_core", "smoke_core.plugin", "smoke_core.providers", "smoke_core.testing", "smoke_core.settings")


def _door_for(name: str, preferred: str) -> str:
    for door in (preferred, *DOORS):
        module = importlib.import_module(door)
        if name in getattr(module, "__all__", ()):
            return door
    return ""


def moved(old: str, new: str | tuple[str, ...], preferred: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the shim left at ``old``: forwards to ``new``
    (the first of several modules that has the name) and warns."""
    targets = (new,) if isinstance(new, str) else new

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        for target in targets:
            module = importlib.import_module(target)
            if hasattr(module, name):
                value = getattr(module, name)
                break
        else:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        door = _door_for(name, preferred)
        where = f"import {name} from {door}" if door else f"{name} is internal and has no public replacement"
        warnings.warn(
            f"{old} is deprecated and will be removed in smoke-core 0.3: {where}",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__
