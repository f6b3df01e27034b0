"""Smoke tool group ``web``: ``web_fetch`` and ``web_search``.

``web_fetch(url, prompt?, offset?)`` reads a page (HTML → Markdown, PDF,
text) from a public address: every hop's resolved address is checked
(loopback, private, link-local, multicast and cloud metadata addresses are
refused unless a rule names the host) and the connection goes to the address
checked. ``web_search(query)`` asks the search provider the ``web_search``
setting names (Brave, Tavily, SearXNG or one a package adds); it exists only
when one is set. Both are ``kind: fetch``, open-world, and ask by default.
The tool modules (httpx, BeautifulSoup, markdownify, pypdf) are imported when
an agent is created, not when the plugin loads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smoke_core import hookimpl

__all__ = ["TOOL_NAMES", "register_settings", "register_tools"]

TOOL_NAMES: tuple[str, ...] = ("web_fetch", "web_search")


@hookimpl
def register_tools(register: Callable[..., Any], options: Any) -> None:
    """Register web_fetch (always) and web_search (when a search provider is set) in the group ``web``."""
    from ._tools import GROUP, build_tools

    for definition in build_tools(options):
        register(definition, group=GROUP)


@hookimpl
def register_settings(register: Callable[..., Any]) -> None:
    from typing import Annotated
    from typing import Any as AnyType

    from pydantic import Field, PositiveFloat, PositiveInt

    from ._settings import WebSearchSetting

    # trusted_only everywhere: a repository may not choose a search endpoint, nor loosen the caps
    register("web_search", WebSearchSetting, default=None, trusted_only=True,
             description="The search provider web_search uses: {provider: brave|tavily|searxng|<installed>, "
                         "url?, api_key_env?}. Unset: no web_search tool.")
    register("web_fetch_max_bytes", PositiveInt, default=None, trusted_only=True,
             description="Bytes of a page web_fetch downloads at most (after decompression); default 5000000.")
    register("web_fetch_max_chars", PositiveInt, default=None, trusted_only=True,
             description="Characters of a page's text one web_fetch call shows the model; default 40000.")
    register("web_fetch_timeout_s", PositiveFloat, default=None, trusted_only=True,
             description="Seconds one web_fetch (every redirect, DNS and the body) may take; default 30.")
    register("web_fetch_max_redirects", Annotated[int, Field(ge=0, le=20)], default=None, trusted_only=True,
             description="Redirects web_fetch follows at most; default 5.")
    register("web_resolver", AnyType, default=None, code_only=True,
             description="create_agent only: async (host, port) -> [address, ...], the name lookup web_fetch "
                         "uses instead of the system's (every address it gives is checked).")
    register("web_search_provider", AnyType, default=None, code_only=True,
             description="create_agent only: a search provider object (name, async search(query, *, "
                         "max_results)) web_search uses instead of the web_search setting.")
