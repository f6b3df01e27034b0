"""The type of the ``web_search`` settings key (validated with a pydantic
``TypeAdapter`` before the plugin sees it). Imported only by ``register_settings``."""

from __future__ import annotations

from typing import NotRequired

from pydantic import ConfigDict
from typing_extensions import TypedDict


class WebSearchSetting(TypedDict):
    """``web_search: {provider: brave, api_key_env: BRAVE_API_KEY}``. Unknown keys are errors."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    #: an entry-point name in the group ``smoke.web_search``: brave, tavily, searxng, or one a package adds
    provider: str
    #: the endpoint (SearXNG: required; Brave and Tavily: their public API by default)
    url: NotRequired[str]
    #: the environment variable holding the key (BRAVE_API_KEY / TAVILY_API_KEY by default)
    api_key_env: NotRequired[str]
