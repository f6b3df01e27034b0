"""web_search through its plugin point: the Brave, Tavily and SearXNG adapters
against local servers that answer in each API's shape, and the settings
mistakes that end in one clear message."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from smoke_tools_web._search import ENTRY_POINT_GROUP, provider_names

BRAVE = {"web": {"results": [
    {"title": "Python docs", "url": "https://docs.python.org/3/", "description": "The   official\ndocumentation"},
    {"title": "PEP 8", "url": "https://peps.python.org/pep-0008/", "description": "Style guide"},
]}}
TAVILY = {"query": "q", "results": [{"title": "Tavily hit", "url": "https://example.org/t", "content": "from tavily",
                                     "score": 0.9}]}
SEARXNG = {"query": "q", "results": [{"title": "Searx hit", "url": "https://example.org/s", "content": "from searx"},
                                     {"title": "no url"}]}


@pytest.fixture
def engines(make_server, route):
    js = {"Content-Type": "application/json"}
    return make_server({
        "/res/v1/web/search": route(200, json.dumps(BRAVE).encode(), js),
        "/search": route(200, json.dumps(SEARXNG).encode(), js),
        "/tavily/search": route(200, json.dumps(TAVILY).encode(), js),
    })


def test_the_three_adapters_are_entry_points():
    assert {"brave", "tavily", "searxng"} <= set(provider_names())
    assert ENTRY_POINT_GROUP == "smoke.web_search"


def test_web_search_is_absent_until_a_provider_is_set(workspace):
    import smoke_tools_web

    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    plain = create_agent(workspace, provider=ScriptedProvider([]), plugins=[smoke_tools_web], autoload_plugins=False)
    assert "web_search" not in plain.tools and "web_fetch" in plain.tools
    configured = create_agent(workspace, provider=ScriptedProvider([]), plugins=[smoke_tools_web],
                              autoload_plugins=False, web_search={"provider": "searxng", "url": "http://x"})
    assert configured.tools["web_search"].kind == "fetch"


def test_brave(engines, call, monkeypatch):
    monkeypatch.setenv("BRAVE_API_KEY", "brave-key-1")
    out = call(("web_search", {"query": "python   docs", "max_results": 5}),
               web_search={"provider": "brave", "url": engines.url("")})
    assert not out.is_error, out.text
    assert "2 result(s) from brave for 'python docs'" in out.text
    assert "1. [Python docs](https://docs.python.org/3/)\n   The official documentation" in out.text
    assert "<<<web content" in out.text and "untrusted" in out.text
    query = parse_qs(urlsplit(engines.hits[-1]).query)
    assert query == {"q": ["python docs"], "count": ["5"]}
    assert engines.headers_seen[-1]["x-subscription-token"] == "brave-key-1"


def test_tavily(engines, call, monkeypatch):
    monkeypatch.setenv("MY_TAVILY", "tvly-2")
    out = call(("web_search", {"query": "widgets"}),
               web_search={"provider": "tavily", "url": engines.url("/tavily"), "api_key_env": "MY_TAVILY"})
    assert "1. [Tavily hit](https://example.org/t)\n   from tavily" in out.text
    assert json.loads(engines.bodies[-1]) == {"query": "widgets", "max_results": 8}
    assert engines.headers_seen[-1]["authorization"] == "Bearer tvly-2"


def test_searxng(engines, call):
    out = call(("web_search", {"query": "widgets"}), web_search={"provider": "searxng", "url": engines.url("")})
    assert "1 result(s) from searxng" in out.text and "[Searx hit](https://example.org/s)" in out.text
    assert parse_qs(urlsplit(engines.hits[-1]).query) == {"q": ["widgets"], "format": ["json"]}


def test_a_search_adapter_without_its_key_is_one_clear_message(engines, call):
    out = call(("web_search", {"query": "x"}), web_search={"provider": "brave", "url": engines.url("")})
    assert out.is_error
    assert out.text.startswith("web_search uses Brave Search, which needs an API key in the environment variable "
                               "BRAVE_API_KEY (none is set)")
    assert engines.hits == []
    tavily = call(("web_search", {"query": "x"}), web_search={"provider": "tavily"})
    assert "TAVILY_API_KEY (none is set)" in tavily.text


def test_searxng_without_its_url_and_an_unknown_provider(call):
    out = call(("web_search", {"query": "x"}), web_search={"provider": "searxng"})
    assert out.is_error and "searxng, which needs the instance's address: set web_search.url" in out.text
    unknown = call(("web_search", {"query": "x"}), web_search={"provider": "gooogle"})
    assert "no search provider named 'gooogle' is installed (installed: brave, searxng, tavily" in unknown.text


def test_provider_errors_are_clear(make_server, route, call, monkeypatch):
    monkeypatch.setenv("BRAVE_API_KEY", "k")
    bad = make_server({"/res/v1/web/search": route(401, b"{}", {"Content-Type": "application/json"}),
                       "/search": route(403, b"forbidden", {"Content-Type": "text/plain"})})
    brave = call(("web_search", {"query": "x"}), web_search={"provider": "brave", "url": bad.url("")})
    assert "Brave Search refused the request (HTTP 401): check the API key" in brave.text
    searx = call(("web_search", {"query": "x"}), web_search={"provider": "searxng", "url": bad.url("")})
    assert "SearXNG answers 403 when `json` is not in search.formats" in searx.text


def test_bad_search_arguments(engines, call):
    out = call(("web_search", {"query": "   "}), ("web_search", {"query": "x", "max_results": 99}),
               web_search={"provider": "searxng", "url": engines.url("")})
    empty, many = out.texts
    assert "query is empty" in empty
    assert "max_results must be a whole number from 1 to 20; got 99" in many
    assert engines.hits == []


def test_a_programmers_provider_object(call):
    from smoke_tools_web._search import SearchHit

    class Mine:
        name = "mine"

        async def search(self, query: str, *, max_results: int) -> list[SearchHit]:
            return [SearchHit("Mine", f"https://mine.example/{query}", "mine")]

    out = call(("web_search", {"query": "abc"}), web_search_provider=Mine())
    assert "[Mine](https://mine.example/abc)" in out.text


def test_the_web_search_setting_is_checked(workspace):
    import smoke_tools_web

    from smoke_core import create_agent
    from smoke_core.settings import SettingsError
    from smoke_core.testing import ScriptedProvider

    with pytest.raises((SettingsError, ValueError)) as caught:
        create_agent(workspace, provider=ScriptedProvider([]), plugins=[smoke_tools_web], autoload_plugins=False,
                     web_search={"provider": "brave", "apikey": "x"})
    assert "apikey" in str(caught.value)


def test_a_repository_may_not_choose_the_search_endpoint(workspace, monkeypatch):
    """An untrusted folder's .smoke/config.yaml naming a search endpoint is not used."""
    import smoke_tools_web

    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    (workspace / ".smoke").mkdir()
    (workspace / ".smoke" / "config.yaml").write_text("web_search: {provider: searxng, url: 'http://attacker'}\n")
    agent = create_agent(workspace, provider=ScriptedProvider([]), plugins=[smoke_tools_web], autoload_plugins=False,
                         trust_workspace=False)
    assert "web_search" not in agent.tools
