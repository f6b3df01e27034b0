"""A form in the web page: an MCP server's elicitation (the real test server
of smoke-mcp over stdio) reaches the page as a question with a form, the
person fills it in in Debian's Chromium (Playwright), a wrong answer comes
back with what is wrong, and the server gets the answer with the defaults
applied. Needs smoke-mcp too: ``integration`` (the ``tests`` session)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from smoke_ui.server import create_app
from smoke_ui.serving import ServerThread

from smoke_core import create_agent
from smoke_core.plugin import MemoryStore
from smoke_core.testing import ScriptedProvider

from .conftest import wait_healthy

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.integration, pytest.mark.xdist_group("browser"),
              pytest.mark.skipif(importlib.util.find_spec("smoke_mcp") is None, reason="needs smoke-mcp installed")]

MCP_TEST_SERVER = Path(__file__).resolve().parents[2] / "smoke-mcp" / "tests" / "smoke_mcp_test_server.py"
WAIT_MS = 30_000


def test_an_mcp_servers_form_is_filled_in_in_the_page(browser: Any, tmp_path: Path) -> None:
    import smoke_mcp
    from playwright.sync_api import expect

    def factory(*, session_id: str, store: Any) -> Any:
        turns = [{"tool_calls": [{"name": "t__order_pizza", "input": {}}]}, "Your pizza is ordered."]
        return create_agent(
            tmp_path, provider=ScriptedProvider(turns), autoload_plugins=False, plugins=[smoke_mcp],
            mcp_servers={"t": {"command": sys.executable, "args": [str(MCP_TEST_SERVER)], "trusted": True}},
            permission="allow-all", store=store, session_id=session_id,
        )

    app = create_app(factory, store=MemoryStore(), fresh_session_per_run=True)
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            page.goto(f"{server.url}/?token={app.state.ui.token}")
            page.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)
            page.fill('[data-testid="task-input"]', "order a pizza")
            page.click('[data-testid="send-button"]')
            card = page.locator('[data-testid="question-card"][data-form="true"]')
            card.wait_for(timeout=WAIT_MS)
            assert card.locator('[data-testid="question-text"]').inner_text() == \
                "MCP server 't' asks: Which pizza do you want?"
            fields = card.locator('[data-testid="form-field"]')
            assert [fields.nth(i).get_attribute("data-name") for i in range(fields.count())] == \
                ["name", "size", "slices", "extra_cheese"]
            size = card.locator('[data-testid="form-input"][data-name="size"]')
            assert size.evaluate("s => s.options[s.selectedIndex].text") == "large"  # the default, preselected
            slices = card.locator('[data-testid="form-input"][data-name="slices"]')
            assert slices.input_value() == "8"

            # a wrong answer: the server side says what is wrong, the form stays
            card.locator('[data-testid="form-input"][data-name="name"]').fill("Ann")
            slices.evaluate("s => { s.removeAttribute('max'); }")  # get past the page's own check
            slices.fill("20")
            card.locator('[data-testid="form-submit"]').click()
            problem = card.locator('[data-testid="form-problem"]')
            expect(problem).to_be_visible(timeout=WAIT_MS)
            assert "'Slices' (slices) must be at most 12" in problem.inner_text()

            slices.fill("6")
            card.locator('[data-testid="form-input"][data-name="extra_cheese"]').check()
            card.locator('[data-testid="form-submit"]').click()
            page.locator('[data-testid="final-message"]').wait_for(timeout=WAIT_MS)
            result = page.locator('[data-testid="tool-card"][data-tool-name="t__order_pizza"] [data-testid="tool-result"]')
            ordered = json.loads(result.inner_text().split("ordered ", 1)[1])
            assert ordered == {"extra_cheese": True, "name": "Ann", "size": "large", "slices": 6}
            assert "Answer:" in card.inner_text()
            assert errors == []
        finally:
            page.close()
