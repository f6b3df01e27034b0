"""The pluggy markers, kept in a module of their own so that importing
``smoke_core.hookimpl`` (what every plugin module does) costs only pluggy."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "smoke"
ENTRY_POINT_GROUP = "smoke"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
