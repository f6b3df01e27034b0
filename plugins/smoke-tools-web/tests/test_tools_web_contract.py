"""smoke-tools-web against core's ToolContract, with a local page and a local
SearXNG-shaped search endpoint (reached through a rule naming 127.0.0.1)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import smoke_tools_web

from smoke_core.testing import ToolContract


class TestWebToolContract(ToolContract):
    plugin = smoke_tools_web

    @pytest.fixture(autouse=True)
    def _local_web(self, make_server: Any, route: Any) -> None:
        server = make_server({
            "/page": route(200, b"<html><body><h1>Hello</h1></body></html>", {"Content-Type": "text/html"}),
            "/search": route(200, json.dumps({"results": [{"title": "t", "url": "https://e.org/", "content": "c"}]})
                             .encode(), {"Content-Type": "application/json"}),
        })
        self.sample_inputs = {"web_fetch": {"url": server.url("/page")}, "web_search": {"query": "hello"}}
        self.agent_kwargs = {"permissions": {"allow": ["web_fetch(domain:127.0.0.1)"]},
                             "web_search": {"provider": "searxng", "url": server.url("")}}
