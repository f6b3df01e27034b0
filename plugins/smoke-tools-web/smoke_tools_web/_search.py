"""web_search's plugin point and its three adapters (Brave, Tavily, SearXNG).

A search provider is any object with ``name`` and ``async search(query, *,
max_results) -> list[SearchHit]``. Providers are found by name in the
entry-point group ``smoke.web_search`` (this package declares the three
below there, as a third-party package declares its own); the value is a
factory called with the ``web_search`` setting (a dict) that returns the
provider or raises :class:`SearchConfigError` with what to set. None is the
default: web_search exists only when the setting names a provider.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import httpx

ENTRY_POINT_GROUP = "smoke.web_search"
TIMEOUT_S = 20.0


class SearchConfigError(ValueError):
    """The ``web_search`` setting cannot make a provider (a missing key, a missing url...)."""


class SearchFailed(Exception):
    """The provider was asked and gave no results page (its message says why)."""


@dataclass(slots=True, frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str = ""


@runtime_checkable
class SearchProvider(Protocol):
    name: str

    async def search(self, query: str, *, max_results: int) -> list[SearchHit]: ...


def provider_names() -> list[str]:
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def make_provider(config: Mapping[str, Any]) -> SearchProvider:
    """The provider the ``web_search`` setting names, made from it; :class:`SearchConfigError` otherwise."""
    name = str(config.get("provider") or "")
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        known = ", ".join(provider_names()) or "none"
        raise SearchConfigError(
            f"web_search: no search provider named {name!r} is installed (installed: {known}); "
            f"set web_search.provider to one of them"
        )
    try:
        factory = found[0].load()
    except Exception as exc:
        raise SearchConfigError(f"web_search: the search provider {name!r} failed to load: "
                                f"{type(exc).__name__}: {exc}") from None
    provider = factory(dict(config))
    if not isinstance(provider, SearchProvider):
        raise SearchConfigError(f"web_search: {name!r} did not make a search provider (no async search method)")
    return provider


def _key(config: Mapping[str, Any], default_env: str, provider: str, where: str) -> str:
    env = str(config.get("api_key_env") or default_env)
    key = os.environ.get(env, "").strip()
    if not key:
        raise SearchConfigError(
            f"web_search uses {provider}, which needs an API key in the environment variable {env} "
            f"(none is set); get one at {where}, export {env}=..., or choose another provider in the "
            f"web_search setting"
        )
    return key


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


async def _call(provider: str, request: httpx.Request) -> Any:
    """Send ``request``; the JSON answer, or :class:`SearchFailed` naming the trouble."""
    import httpx

    async with httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=True, follow_redirects=False) as client:
        try:
            response = await client.send(request)
        except httpx.TimeoutException:
            raise SearchFailed(f"{provider} did not answer within {TIMEOUT_S:g} s; try again later") from None
        except httpx.HTTPError as exc:
            raise SearchFailed(f"could not reach {provider} at {request.url.host}: {exc}") from None
    if response.status_code in (401, 403):
        raise SearchFailed(f"{provider} refused the request (HTTP {response.status_code}): check the API key "
                           f"or the instance's settings")
    if response.status_code == 429:
        raise SearchFailed(f"{provider} says too many requests (HTTP 429); wait before searching again")
    if response.status_code >= 400:
        raise SearchFailed(f"{provider} answered HTTP {response.status_code} {response.reason_phrase}")
    try:
        return response.json()
    except ValueError:
        raise SearchFailed(f"{provider} answered something that is not JSON "
                           f"({response.headers.get('content-type', 'no type')})") from None


class BraveSearch:
    """Brave Search API (``BRAVE_API_KEY``; ``url`` defaults to https://api.search.brave.com)."""

    name = "brave"

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.base = str(config.get("url") or "https://api.search.brave.com").rstrip("/")
        self.key = _key(config, "BRAVE_API_KEY", "Brave Search", "https://brave.com/search/api/")

    async def search(self, query: str, *, max_results: int) -> list[SearchHit]:
        import httpx

        request = httpx.Request("GET", f"{self.base}/res/v1/web/search",
                                params={"q": query, "count": min(max_results, 20)},
                                headers={"Accept": "application/json", "X-Subscription-Token": self.key})
        data = await _call("Brave Search", request)
        results = ((data or {}).get("web") or {}).get("results") or []
        return [SearchHit(_text(r.get("title")), str(r.get("url") or ""), _text(r.get("description")))
                for r in results if isinstance(r, dict) and r.get("url")][:max_results]


class TavilySearch:
    """Tavily (``TAVILY_API_KEY``; ``url`` defaults to https://api.tavily.com)."""

    name = "tavily"

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.base = str(config.get("url") or "https://api.tavily.com").rstrip("/")
        self.key = _key(config, "TAVILY_API_KEY", "Tavily", "https://tavily.com")

    async def search(self, query: str, *, max_results: int) -> list[SearchHit]:
        import httpx

        request = httpx.Request("POST", f"{self.base}/search",
                                json={"query": query, "max_results": min(max_results, 20)},
                                headers={"Authorization": f"Bearer {self.key}", "Accept": "application/json"})
        data = await _call("Tavily", request)
        results = (data or {}).get("results") or []
        return [SearchHit(_text(r.get("title")), str(r.get("url") or ""), _text(r.get("content")))
                for r in results if isinstance(r, dict) and r.get("url")][:max_results]


class SearXNGSearch:
    """A SearXNG instance (``url`` required; its ``settings.yml`` must allow ``format: json``)."""

    name = "searxng"

    def __init__(self, config: Mapping[str, Any]) -> None:
        url = str(config.get("url") or "").strip()
        if not url:
            raise SearchConfigError(
                "web_search uses searxng, which needs the instance's address: set web_search.url "
                "(e.g. http://127.0.0.1:8888) in a trusted settings file"
            )
        self.base = url.rstrip("/")
        env = config.get("api_key_env")
        self.key = os.environ.get(str(env), "").strip() if env else ""

    async def search(self, query: str, *, max_results: int) -> list[SearchHit]:
        import httpx

        headers = {"Accept": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = httpx.Request("GET", f"{self.base}/search", params={"q": query, "format": "json"}, headers=headers)
        try:
            data = await _call("SearXNG", request)
        except SearchFailed as exc:
            if "HTTP 403" in str(exc):
                raise SearchFailed(f"{exc} (SearXNG answers 403 when `json` is not in search.formats of its "
                                   f"settings.yml)") from None
            raise
        results = (data or {}).get("results") or []
        return [SearchHit(_text(r.get("title")), str(r.get("url") or ""), _text(r.get("content")))
                for r in results if isinstance(r, dict) and r.get("url")][:max_results]
