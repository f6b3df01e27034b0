"""Helpers for testing agents, tools and plugins (``smoke_core.testing``).

- :class:`ScriptedProvider`: a provider that plays back scripted turns and
  records every request exactly as a real provider would receive it.
- :func:`make_tool_context`: a :class:`~smoke_core.plugin.ToolContext` for
  calling a tool's ``execute`` directly in unit tests.
- :class:`Pty`: a program (``smoke chat``, ``smoke run``) on a real
  pseudo-terminal, driven by keys.
- The contract kits, pytest classes a plugin's tests subclass to run core's
  conformance tests for what the plugin implements: :class:`ToolContract`
  (tools), :class:`ProviderContract` (a provider adapter), :class:`StoreContract`
  (a session store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._scripted import ScriptedProvider, isolate_settings, make_tool_context

__all__ = [
    "FakeProviderServer", "ProviderContract", "Pty", "RecordedRequest", "Reply", "ScriptedProvider", "StoreContract",
    "ToolContract", "collect_events", "isolate_settings", "load_cassette", "make_tool_context",
]

_FROM_PROVIDER_KIT = ("FakeProviderServer", "ProviderContract", "RecordedRequest", "Reply", "collect_events",
                      "load_cassette")

def __getattr__(name: str) -> Any:
    # Contract test bases live in their own modules; re-exported here lazily.
    if name == "StoreContract":
        from ._store_contract import StoreContract

        return StoreContract
    if name == "Pty":
        from ._pty import Pty

        return Pty
    if name == "ToolContract":
        from ._tool_contract import ToolContract

        return ToolContract
    if name in _FROM_PROVIDER_KIT:
        from . import _provider_contract

        return getattr(_provider_contract, name)
    raise AttributeError(name)


if TYPE_CHECKING:  # what the lazy names are, for type checkers and the API reference
    from ._provider_contract import (
        FakeProviderServer,
        ProviderContract,
        RecordedRequest,
        Reply,
        collect_events,
        load_cassette,
    )
    from ._pty import Pty
    from ._store_contract import StoreContract
    from ._tool_contract import ToolContract
