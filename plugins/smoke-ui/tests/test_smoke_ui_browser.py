"""Browser tests: Debian's Chromium driven by Playwright against a real
uvicorn server on 127.0.0.1. Screenshots go to ``test-artifacts/`` at the
repository root (``SMOKE_TEST_ARTIFACTS`` overrides it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from smoke_ui.server import create_app
from smoke_ui.serving import ServerThread

from smoke_core import AgentErrorInfo, ToolContext, create_agent, tool
from smoke_core.store import MemoryStore
from smoke_core.testing import ScriptedProvider

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("SMOKE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("SMOKE_TEST_ARTIFACTS") or Path(__file__).resolve().parents[3] / "test-artifacts")
WAIT_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright; never `playwright install`)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium, or set SMOKE_CHROMIUM)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()


def wait_healthy(url: str) -> None:
    """Poll the health URL (bounded) until the server answers."""
    last: Exception | None = None
    for _ in range(100):
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError as exc:
            last = exc
    raise AssertionError(f"the server at {url} never became healthy: {last!r}")


def open_page(browser: Any, server: ServerThread, app: Any, *, height: int = 900) -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    page.goto(f"{server.url}/?token={app.state.ui.token}")
    page.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)
    page.wait_for_selector('[data-testid="connection"].ok', timeout=WAIT_MS)
    return page


def send_task(page: Any, task: str) -> None:
    page.fill('[data-testid="task-input"]', task)
    page.click('[data-testid="send-button"]')


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    return path


def card(page: Any, tool_name: str) -> Any:
    return page.locator(f'[data-testid="tool-card"][data-tool-name="{tool_name}"]').first


# ---------------------------------------------------------------- the demo


def test_demo_run_in_the_browser(browser: Any, tmp_path: Path) -> None:
    try:
        from smoke_core.demo import DEMO_TASK, SIMULATION_LABEL
    except ImportError:
        pytest.skip("smoke_core.demo is not available in this smoke-core")
    from smoke_ui._cli import demo_factory

    app = create_app(demo_factory(tmp_path, auto_approve=False), store=MemoryStore(), workspace=tmp_path,
                     demo_label=SIMULATION_LABEL, fresh_session_per_run=True)
    try:
        presentations = app.state.ui.presentations()
    except RuntimeError as exc:  # the demo needs the tool plugins
        pytest.skip(f"the demo cannot run here: {exc}")

    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app, height=1500)  # tall: the screenshot shows most of the run
        try:
            assert "simulated model" in page.inner_text('[data-testid="demo-badge"]')
            send_task(page, DEMO_TASK)
            approved: list[str] = []
            pending = '[data-testid="approval-card"]:not(.resolved)'
            for _ in range(20):
                page.wait_for_selector(f'{pending}, [data-testid="final-message"], [data-testid="error-card"]',
                                       timeout=WAIT_MS)
                if page.locator('[data-testid="final-message"], [data-testid="error-card"]').count():
                    break
                approval = page.locator(pending).first
                approved.append(approval.get_attribute("data-tool-name"))
                call_id = approval.get_attribute("data-tool-call-id")
                approval.locator('[data-testid="approve-button"]').click()
                page.wait_for_selector(
                    f'[data-testid="approval-card"].resolved[data-tool-call-id="{call_id}"]', timeout=WAIT_MS
                )
            assert page.locator('[data-testid="error-card"]').count() == 0, page.inner_text('[data-testid="log"]')
            final = page.locator('[data-testid="final-message"]')
            final.wait_for(timeout=WAIT_MS)
            assert "Fixed median()" in final.inner_text()
            page.wait_for_selector('[data-testid="run-status"].status-completed', timeout=WAIT_MS)

            assert "edit_file" in approved and "run_test" in approved
            for name in ("list_directory", "grep", "read_file", "todo_write", "run_test", "edit_file", "finish_task"):
                expected = presentations[name]
                tool_card = card(page, name)
                assert tool_card.locator('[data-testid="tool-label"]').inner_text() == expected["label"]
                assert tool_card.locator('[data-testid="tool-icon"]').inner_text() == expected["icon"]
                assert f"tone-{expected['tone']}" in (tool_card.get_attribute("class") or "")
            # the real tests really ran: the first run failed, the second passed
            test_cards = page.locator('[data-testid="tool-card"][data-tool-name="run_test"]')
            assert test_cards.count() == 2
            assert "FAILED" in test_cards.nth(0).inner_text()
            assert "OK" in test_cards.nth(1).inner_text()
            assert page.locator('[data-testid="approval-decision"]').first.inner_text() == "Allowed"
            assert "tokens" in page.inner_text('[data-testid="usage"]')
            assert page.inner_text('[data-testid="usage"]') != "0 tokens"
            page.wait_for_selector('[data-testid="session-item"]', timeout=WAIT_MS)
            assert page.js_errors == []
            shot = screenshot(page, "smoke-ui-demo.png")
            assert shot.stat().st_size > 10_000
        finally:
            page.close()
    sid = next(iter(app.state.ui.agents))
    assert "sorted(values)" in (tmp_path / sid / "stats" / "core.py").read_text()


# ---------------------------------------------------------------- scripted


@tool(presentation={"label": "Write note", "icon": "📝", "tone": "warning", "group": "notes"}, group="notes")
def write_note(text: str, ctx: ToolContext) -> str:
    """Write a note (needs approval)."""
    return f"wrote {text}"


@tool(read_only=True, presentation={"label": "Ask the user", "icon": "❓", "tone": "info", "group": "agent"},
      group="agent")
async def ask(question: str, ctx: ToolContext) -> str:
    """Ask the user a question."""
    ctx.emit("custom.future_event", {"payload": "the page must ignore this"})
    ctx.emit_output("waiting for the user\n")
    return "user said " + await ctx.ask_user(question, options=["blue", "green"])


SCRIPTS: list[list[Any]] = [
    [
        {"thought": "Let me write it down.", "text": "I'll write a note first.",
         "tool_calls": [{"id": "w1", "name": "write_note", "input": {"text": "hello"}}]},
        {"tool_calls": [{"id": "q1", "name": "ask", "input": {"question": "Which colour?"}}]},
        {"text": "You picked it. Done."},
    ],
    [{"tool_calls": [{"id": "w2", "name": "write_note", "input": {"text": "never"}}]}, "unreachable"],
    [AgentErrorInfo.from_code("provider_auth", "the API key was refused (HTTP 401)")],
]


def test_scripted_runs_cover_deny_questions_stop_and_errors(browser: Any, tmp_path: Path) -> None:
    scripts = list(SCRIPTS)

    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(
            tmp_path, provider=ScriptedProvider(scripts.pop(0) if scripts else [], chunk_size=5),
            autoload_plugins=False, plugins=[], tools=[write_note, ask], store=store, session_id=session_id,
        )

    app = create_app(factory, store=MemoryStore(), fresh_session_per_run=True)
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        try:
            # 1. deny the write, answer the question with an option button
            send_task(page, "note and ask")
            page.wait_for_selector('[data-testid="approval-card"]:not(.resolved)', timeout=WAIT_MS)
            write_card = card(page, "write_note")
            assert write_card.locator('[data-testid="tool-icon"]').inner_text() == "📝"
            assert write_card.locator('[data-testid="tool-label"]').inner_text() == "Write note"
            assert write_card.locator('[data-testid="tool-group"]').inner_text() == "notes"
            assert "tone-warning" in (write_card.get_attribute("class") or "")
            write_card.locator('[data-testid="deny-button"]').click()
            page.wait_for_selector('[data-testid="tool-card"][data-tool-name="write_note"][data-state="error"]',
                                   timeout=WAIT_MS)
            assert "denied" in write_card.locator('[data-testid="tool-result"]').inner_text().lower()
            assert write_card.locator('[data-testid="approval-decision"]').inner_text() == "Denied"

            question = page.locator('[data-testid="question-card"]')
            question.wait_for(timeout=WAIT_MS)
            assert question.locator('[data-testid="question-text"]').inner_text() == "Which colour?"
            assert question.locator('[data-testid="question-option"]').all_inner_texts() == ["blue", "green"]
            assert "waiting for the user" in card(page, "ask").locator('[data-testid="tool-output"]').inner_text()
            question.locator('[data-testid="question-option"]', has_text="green").click()
            final = page.locator('[data-testid="final-message"]')
            final.wait_for(timeout=WAIT_MS)
            assert final.inner_text() == "You picked it. Done."
            assert "user said green" in card(page, "ask").locator('[data-testid="tool-result"]').inner_text()
            assert "Let me write it down." in page.inner_text('[data-testid="reasoning"]')
            assert page.inner_text('[data-testid="run-status"]') == "completed"

            # 2. stop a run that waits for approval
            send_task(page, "write and wait")
            page.wait_for_selector('[data-testid="approval-card"]:not(.resolved)', timeout=WAIT_MS)
            page.click('[data-testid="stop-button"]')
            page.wait_for_selector('[data-testid="interrupted-note"]', timeout=WAIT_MS)
            page.wait_for_selector('[data-testid="run-status"].status-interrupted', timeout=WAIT_MS)

            # 3. a provider failure shows an error card
            send_task(page, "fail please")
            error = page.locator('[data-testid="error-card"][data-code="provider_auth"]')
            error.wait_for(timeout=WAIT_MS)
            assert "API key was refused" in error.inner_text()
            page.wait_for_selector('[data-testid="run-status"].status-failed', timeout=WAIT_MS)
            assert page.inner_text('[data-testid="run-status"]') == "failed"

            # the sessions list shows the three runs; a transcript opens on click
            from playwright.sync_api import expect

            expect(page.locator('[data-testid="session-item"]')).to_have_count(3, timeout=WAIT_MS)
            page.locator('[data-testid="session-item"]', has_text="note and ask").click()
            transcript = page.locator('[data-testid="transcript"]')
            transcript.locator('[data-testid="transcript-tool"]').first.wait_for(timeout=WAIT_MS)
            assert "You picked it. Done." in transcript.inner_text()
            assert transcript.locator('[data-testid="transcript-tool"][data-tool-name="ask"]').count() == 1
            screenshot(page, "smoke-ui-scripted-transcript.png")
            page.click('[data-testid="close-transcript"]')
            assert page.js_errors == []
        finally:
            page.close()


def test_page_without_the_token_is_refused(browser: Any, tmp_path: Path) -> None:
    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider([]), autoload_plugins=False, **kw),
                     store=MemoryStore())
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = browser.new_page()
        try:
            response = page.goto(server.url + "/")
            assert response is not None and response.status == 403
            assert "access token" in page.inner_text("body")
        finally:
            page.close()
