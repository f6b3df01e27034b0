"""The Anthropic Messages API provider for Smoke (``provider="anthropic"``).

Importing this module is cheap: ``httpx`` and ``httpx-sse`` are imported on
the first model call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smoke_core import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    from smoke_core.plugin import Agent

    from ._provider import AnthropicProvider

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "ENV_VAR",
    "AnthropicProvider",
    "close_agent",
    "make_provider",
    "register_providers",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-sonnet-4-5"
ENV_VAR = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"


def make_provider(**kwargs: Any) -> AnthropicProvider:
    """Build the provider. ``kwargs``: ``model``, ``api_key`` (string or
    ``callable(provider, user_id)``), ``base_url``, ``user_id``,
    ``idle_timeout``, ``connect_timeout``, ``request_timeout``, ``headers``,
    ``anthropic_version``."""
    import os

    from ._provider import AnthropicProvider

    base_url = kwargs.pop("base_url", None) or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    model = kwargs.pop("model", None) or DEFAULT_MODEL
    return AnthropicProvider(model=model, base_url=base_url, env_var=ENV_VAR, **kwargs)


@hookimpl
def register_providers(register: Callable[..., None]) -> None:
    register(
        "anthropic",
        make_provider,
        env_var=ENV_VAR,
        description="Anthropic Messages API (Claude)",
        default_model=DEFAULT_MODEL,
    )


@hookimpl
async def close_agent(agent: Agent) -> None:
    """Close the HTTP client of the agent's provider when it is ours."""
    provider = agent.provider
    if type(provider).__module__ == f"{__name__}._provider":
        await provider.aclose()  # type: ignore[attr-defined]


def __getattr__(name: str) -> Any:
    if name == "AnthropicProvider":
        from ._provider import AnthropicProvider

        return AnthropicProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
