"""Browser tests: Debian's Chromium driven by Playwright against a real
uvicorn server on 127.0.0.1. Screenshots go to ``test-artifacts/`` at the
repository root (``SMOKE_TEST_ARTIFACTS`` overrides it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from smoke_ui.server import create_app
from smoke_ui.serving import ServerThread

from smoke_core import AgentErrorInfo, ToolContext, ToolPresentation, ToolResult, create_agent, tool
from smoke_core.plugin import MemoryStore
from smoke_core.testing import ScriptedProvider

from .conftest import wait_healthy

# one xdist worker takes the whole module: Chromium starts once
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

ARTIFACTS = Path(os.environ.get("SMOKE_TEST_ARTIFACTS") or Path(__file__).resolve().parents[3] / "test-artifacts")
WAIT_MS = 30_000


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


@pytest.mark.integration  # the demo needs the tool plugins: the `tests` session runs it
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
                assert tool_card.locator('[data-testid="tool-icon"]').get_attribute("data-emoji") == expected["icon"]
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
            icon = write_card.locator('[data-testid="tool-icon"]')
            assert icon.get_attribute("data-emoji") == "📝" and icon.inner_text() == ""  # drawn, not a glyph
            assert icon.locator("svg").get_attribute("data-icon") == "edit"
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


# ---------------------------------------------------------------- what is approved is what runs


@tool(presentation={"label": "Run command", "icon": "💻", "tone": "warning", "group": "terminal"}, group="terminal")
def run_command(command: str, ctx: ToolContext) -> str:
    """Run a shell command (the tests deny every call)."""
    raise AssertionError(f"the test denies run_command; it ran {command!r}")


@tool(read_only=True, presentation={"label": "Progress", "icon": "⏳", "tone": "info"})
def noisy(ctx: ToolContext) -> str:
    """Print a progress bar the way terminals do."""
    ctx.emit_output("progress 50%\rdone \x1b[2K\n")
    return "finished\x1b]0;owned\x07"


ESC_SPOOF = "touch X;\x1bM\x1bE  $ ls -la"
LONG_SPOOF = "ls -la" + " " * 5000 + "; touch /tmp/pwned"
LONG_WORD = "echo " + "A" * 6000 + "; rm -rf ~/work"
QUESTION = "Rename \u202etxt.exe\u202c to report?"


def test_approval_and_question_cards_show_spoofs_as_what_they_are(browser: Any, tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"id": "s1", "name": "run_command", "input": {"command": ESC_SPOOF}}]},
        {"tool_calls": [{"id": "s2", "name": "run_command", "input": {"command": LONG_SPOOF}}]},
        {"tool_calls": [{"id": "s3", "name": "run_command", "input": {"command": LONG_WORD}}]},
        {"tool_calls": [{"id": "n1", "name": "noisy", "input": {}}]},
        {"tool_calls": [{"id": "q1", "name": "ask", "input": {"question": QUESTION}}]},
        "done",
    ]

    @tool(read_only=True, presentation={"label": "Ask", "icon": "❓"})
    async def ask(question: str, ctx: ToolContext) -> str:
        """Ask the user."""
        return await ctx.ask_user(question, options=["yes", "no\u200b"])

    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider(script), autoload_plugins=False,
                                               plugins=[], tools=[run_command, noisy, ask], **kw),
                     store=MemoryStore())
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        try:
            send_task(page, "spoof me")

            # 1. ESC M / ESC E would move a terminal's cursor up and hide "touch X;"
            approval = page.locator('[data-testid="approval-card"][data-tool-call-id="s1"]')
            approval.wait_for(timeout=WAIT_MS)
            value = approval.locator('[data-testid="field-value"][data-key="command"]')
            assert value.inner_text() == "touch X;⟨ESC M⟩⟨ESC E⟩··$ ls -la"
            marks = value.locator(".ctl-esc")
            assert marks.count() == 2 and "ESC M" in (marks.first.get_attribute("title") or "")
            assert value.get_attribute("data-length") == str(len(ESC_SPOOF))
            assert approval.locator('.warning[data-kind="control"]').count() == 1
            tool_input = card(page, "run_command").locator('[data-testid="tool-input"] [data-testid="field-value"]')
            assert "touch X;⟨ESC M⟩⟨ESC E⟩" in (tool_input.text_content() or "")  # the tool card too
            screenshot(page, "smoke-ui-esc-spoof.png")
            approval.locator('[data-testid="deny-button"]').click()

            # 2. 5,000 spaces would push "; touch" out of sight: the run is one visible mark
            approval = page.locator('[data-testid="approval-card"][data-tool-call-id="s2"]')
            approval.wait_for(timeout=WAIT_MS)
            value = approval.locator('[data-testid="field-value"][data-key="command"]')
            assert value.inner_text() == "ls -la⟨5,000 spaces⟩; touch /tmp/pwned"
            assert approval.get_attribute("data-input-length") == str(len(LONG_SPOOF))
            assert approval.locator('[data-testid="field-length"]').inner_text() == f"{len(LONG_SPOOF):,} characters"
            assert approval.locator('.warning[data-kind="long"]').count() == 1
            assert approval.locator('.warning[data-kind="whitespace"]').count() == 1
            assert value.locator(".ctl-ws").is_visible()
            screenshot(page, "smoke-ui-long-spoof.png")
            approval.locator('[data-testid="deny-button"]').click()

            # 3. a long value is never cut: all of it is in a scrollable box
            approval = page.locator('[data-testid="approval-card"][data-tool-call-id="s3"]')
            approval.wait_for(timeout=WAIT_MS)
            value = approval.locator('[data-testid="field-value"][data-key="command"]')
            assert value.inner_text() == LONG_WORD
            assert value.evaluate("e => e.scrollHeight > e.clientHeight && getComputedStyle(e).overflowY === 'auto'")
            value.evaluate("e => { e.scrollTop = e.scrollHeight; }")
            assert "long" in (value.get_attribute("class") or "")
            approval.locator('[data-testid="deny-button"]').click()

            # 4. a tool's output and result: \r and escape sequences are marks, not cursor moves
            noisy_card = page.locator('[data-testid="tool-card"][data-tool-name="noisy"][data-state="done"]')
            noisy_card.wait_for(timeout=WAIT_MS)
            assert noisy_card.locator('[data-testid="tool-result"]').inner_text() == "finished⟨ESC ]0;owned BEL⟩"
            output = noisy_card.locator('[data-testid="tool-output"]').text_content() or ""
            assert output == "progress 50%\\rdone ⟨ESC [2K⟩\n"

            # 5. the question: bidi overrides and zero-width characters are shown
            question = page.locator('[data-testid="question-card"]')
            question.wait_for(timeout=WAIT_MS)
            text = question.locator('[data-testid="question-text"]')
            assert text.inner_text() == "Rename ⟨U+202E⟩txt.exe⟨U+202C⟩ to report?"
            assert text.locator(".ctl-bidi").count() == 2
            options = question.locator('[data-testid="question-option"]')
            assert options.all_inner_texts() == ["yes", "no⟨U+200B⟩"]
            screenshot(page, "smoke-ui-question-bidi.png")
            options.nth(0).click()
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
            results = [r for r in app.state.ui.hub.subscribe(0)[0]]
            assert results  # the run went through
            assert page.js_errors == []
        finally:
            page.close()


# ---------------------------------------------------------------- markdown and XSS


MARKDOWN = (
    "Plan:\n\n1. read\n2. fix\n\n```python\ndef median(values):\n    return sorted(values)\n```\n\n"
    "Docs: [python](https://docs.python.org/3/) and [bad](javascript:alert(1)).\n\n"
    "<img src=x onerror=\"window.__xss='text'; alert('text')\"> <script>window.__xss='script'</script> "
    "![tracker](https://evil.example/t.png?secret=1)"
)


@tool(read_only=True, presentation={"label": "Fetch", "icon": "🌐", "tone": "info"})
def fetch(ctx: ToolContext) -> ToolResult:
    """Return a hostile page."""
    ctx.emit_output("<img src=x onerror=\"window.__xss='output'; alert('output')\">\n")
    return ToolResult(
        content=[{"type": "text", "text": "<script>window.__xss='result'</script><img src=x onerror=alert(2)>"}],
        presentation=ToolPresentation(badge="🔒 sandboxed"),
    )


def test_markdown_renders_and_html_from_the_model_or_a_tool_is_only_text(browser: Any, tmp_path: Path) -> None:
    script = [
        {"text": MARKDOWN, "tool_calls": [{"id": "f1", "name": "fetch", "input": {}}]},
        "**Done.** See `median()`.",
    ]
    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider(script, chunk_size=7),
                                               autoload_plugins=False, plugins=[], tools=[fetch], **kw),
                     store=MemoryStore())
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        dialogs: list[str] = []
        requests: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: requests.append(r.url))
        try:
            send_task(page, "render")
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
            message = page.locator('[data-testid="assistant-message"].md').first
            message.wait_for(timeout=WAIT_MS)
            # Markdown: a list, a highlighted code block, a link that opens in a new tab
            assert message.locator("ol li").all_inner_texts() == ["read", "fix"]
            code = message.locator("pre code.language-python")
            assert "def median(values):" in code.inner_text()
            assert code.locator(".tok-k").first.inner_text() == "def"
            assert code.locator(".tok-k").first.evaluate("e => getComputedStyle(e).color") != \
                code.evaluate("e => getComputedStyle(e).color")  # highlighted
            link = message.locator("a", has_text="python")
            assert link.get_attribute("href") == "https://docs.python.org/3/"
            assert link.get_attribute("target") == "_blank"
            assert link.get_attribute("rel") == "noopener noreferrer"
            assert message.locator('a[href^="javascript"]').count() == 0
            assert message.locator("a", has_text="🖼 tracker").count() == 1  # an image is a link, not a fetch
            # the payloads are visible as text and did nothing
            text = message.inner_text()
            assert "<img src=x onerror=" in text and "<script>window.__xss='script'</script>" in text
            fetch_card = card(page, "fetch")
            assert "<img src=x onerror=" in fetch_card.locator('[data-testid="tool-output"]').text_content()
            assert fetch_card.locator('[data-testid="tool-result"]').inner_text() == \
                "<script>window.__xss='result'</script><img src=x onerror=alert(2)>"
            assert fetch_card.locator('[data-testid="tool-badge"]').inner_text() == "🔒 sandboxed"
            final = page.locator('[data-testid="final-message"]')
            assert final.locator("strong").inner_text() == "Done." and final.locator("code").inner_text() == "median()"
            assert page.locator('[data-testid="log"] img, [data-testid="log"] script').count() == 0
            assert page.evaluate("window.__xss") is None
            assert dialogs == []
            assert not [u for u in requests if "evil.example" in u or u.endswith("/x")]
            screenshot(page, "smoke-ui-markdown.png")
            # the transcript renders the same way
            page.locator('[data-testid="session-item"]').first.click()
            transcript = page.locator('[data-testid="transcript-body"]')
            transcript.locator("pre code.language-python").wait_for(timeout=WAIT_MS)
            assert "<script>window.__xss='script'</script>" in transcript.inner_text()
            assert page.locator("[data-testid=transcript] img, [data-testid=transcript] script").count() == 0
            assert page.evaluate("window.__xss") is None and dialogs == []
            assert page.js_errors == []
        finally:
            page.close()


# ---------------------------------------------------------------- diffs


@tool(kind="edit", permission_key="path", presentation={"label": "Edit file", "icon": "📝", "tone": "warning"})
def edit_file(path: str, old_string: str, new_string: str, ctx: ToolContext) -> str:
    """Replace old_string with new_string."""
    target = ctx.workspace.resolve(path, write=True)
    target.write_text(target.read_text().replace(old_string, new_string, 1))
    return f"edited {path}"


@tool(kind="edit", permission_key="path", presentation={"label": "Write file", "icon": "✍️", "tone": "warning"})
def write_file(path: str, content: str, ctx: ToolContext) -> str:
    """Write a file."""
    ctx.workspace.resolve(path, write=True).write_text(content)
    return f"wrote {path}"


def test_edit_approvals_show_a_coloured_diff(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "core.py").write_text("def median(values):\n    values = list(values)\n    return values\n")
    script = [
        {"tool_calls": [{"id": "e1", "name": "edit_file", "input": {
            "path": "core.py", "old_string": "values = list(values)", "new_string": "values = sorted(values)"}}]},
        {"tool_calls": [{"id": "w1", "name": "write_file", "input": {"path": "NOTES.md", "content": "one\ntwo\n"}}]},
        "edited",
    ]
    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider(script), autoload_plugins=False,
                                               plugins=[], tools=[edit_file, write_file], **kw),
                     store=MemoryStore())
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        try:
            send_task(page, "fix median")
            approval = page.locator('[data-testid="approval-card"][data-tool-call-id="e1"]')
            approval.wait_for(timeout=WAIT_MS)
            assert approval.get_attribute("data-view") == "diff"
            diff = approval.locator('[data-testid="diff"]')
            assert diff.locator('[data-testid="diff-del"]').all_inner_texts() == ["-    values = list(values)"]
            assert diff.locator('[data-testid="diff-add"]').all_inner_texts() == ["+    values = sorted(values)"]
            assert diff.locator('[data-testid="diff-hunk"]').inner_text() == "@@ -1,3 +1,3 @@"
            add_colour = diff.locator('[data-testid="diff-add"]').evaluate("e => getComputedStyle(e).color")
            del_colour = diff.locator('[data-testid="diff-del"]').evaluate("e => getComputedStyle(e).color")
            assert add_colour != del_colour
            assert approval.locator('[data-testid="diff-stats"]').inner_text() == "+1 -1"
            assert "{" not in approval.locator('[data-testid="diff-view"]').inner_text()  # not the JSON input
            assert approval.locator('[data-testid="exact-input"]').count() == 1  # the raw input one click away
            screenshot(page, "smoke-ui-diff.png")
            approval.locator('[data-testid="approve-button"]').click()

            approval = page.locator('[data-testid="approval-card"][data-tool-call-id="w1"]')
            approval.wait_for(timeout=WAIT_MS)
            assert approval.locator('[data-testid="diff-add"]').all_inner_texts() == ["+one", "+two"]
            assert approval.locator('[data-testid="diff-note"]').inner_text() == "creates a new file"
            approval.locator('[data-testid="approve-button"]').click()
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
            assert page.js_errors == []
        finally:
            page.close()
    assert "sorted(values)" in (tmp_path / "core.py").read_text()


# ---------------------------------------------------------------- keyboard, sessions, usage


@tool(read_only=True, presentation={"label": "Meter", "icon": "💲"})
def meter(ctx: ToolContext) -> str:
    """Report a run's cost the way a pricing plugin will."""
    ctx.emit("usage.updated", {"usage": {"input_tokens": 1200, "output_tokens": 34, "cost_usd": 0.0123}})
    return "metered"


def test_keyboard_sessions_and_cost(browser: Any, tmp_path: Path) -> None:
    scripts = [
        [{"tool_calls": [{"id": "m1", "name": "meter", "input": {}},
                         {"id": "w1", "name": "write_note", "input": {"text": "x"}}]}, "unreachable"],
        ["second done"],
    ]

    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(tmp_path, provider=ScriptedProvider(scripts.pop(0) if scripts else ["extra"]),
                            autoload_plugins=False, plugins=[], tools=[meter, write_note], store=store,
                            session_id=session_id)

    app = create_app(factory, store=MemoryStore(), fresh_session_per_run=True)
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        try:
            from playwright.sync_api import expect

            box = page.locator('[data-testid="task-input"]')
            box.click()
            box.type("first line")
            box.press("Shift+Enter")  # a new line, not a send
            box.type("second line")
            assert box.input_value() == "first line\nsecond line"
            assert app.state.ui.status == "idle"
            box.press("Enter")  # sends
            page.wait_for_selector('[data-testid="approval-card"]:not(.resolved)', timeout=WAIT_MS)
            assert page.locator('[data-testid="user-message"]').first.inner_text() == "first line\nsecond line"
            assert box.input_value() == ""
            usage = page.locator('[data-testid="usage"]')
            expect(usage).to_contain_text("$0.0123", timeout=WAIT_MS)  # cost shown when usage carries cost_usd
            assert "1,234 tokens (in 1,200 · out 34)" in usage.inner_text()

            page.keyboard.press("Escape")  # Esc stops the run
            page.wait_for_selector('[data-testid="interrupted-note"]', timeout=WAIT_MS)
            page.wait_for_selector('[data-testid="run-status"].status-interrupted', timeout=WAIT_MS)

            box.type("another task")
            box.press("Enter")
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)

            # rename, then delete, from the session list
            items = page.locator('[data-testid="session-item"]')
            expect(items).to_have_count(2, timeout=WAIT_MS)
            first_id = items.filter(has_text="first line").get_attribute("data-session-id")
            first = page.locator(f'[data-testid="session-item"][data-session-id="{first_id}"]')
            first.hover()
            first.locator('[data-testid="rename-session"]').click()
            name = first.locator('[data-testid="rename-input"]')
            name.fill("Median fix")
            name.press("Enter")
            expect(page.locator('[data-testid="session-title"]', has_text="Median fix")).to_have_count(1,
                                                                                                       timeout=WAIT_MS)
            assert "Median fix" in {s.title for s in app.state.ui.store.list_sessions()}
            doomed_id = items.filter(has_text="another task").get_attribute("data-session-id")
            doomed = page.locator(f'[data-testid="session-item"][data-session-id="{doomed_id}"]')
            doomed.hover()
            doomed.locator('[data-testid="delete-session"]').click()
            doomed.locator('[data-testid="confirm-delete"]').click()
            expect(page.locator('[data-testid="session-item"]')).to_have_count(1, timeout=WAIT_MS)
            assert [s.title for s in app.state.ui.store.list_sessions()] == ["Median fix"]
            screenshot(page, "smoke-ui-sessions.png")
            assert page.js_errors == []
        finally:
            page.close()


# ---------------------------------------------------------------- a page opened mid-run


@tool(read_only=True, presentation={"label": "Build", "icon": "🏗️"})
async def build(ctx: ToolContext) -> str:
    """Print some output, then ask."""
    for line in ("step 1\n", "step 2\n", "step 3\n"):
        ctx.emit_output(line)
    return "built, answer: " + await ctx.ask_user("Deploy now?", options=["yes", "no"])


def test_a_page_opened_mid_run_sees_the_output_so_far_and_can_answer(browser: Any, tmp_path: Path) -> None:
    script = [{"text": "Building *now*.", "tool_calls": [{"id": "b1", "name": "build", "input": {}}]}, "Deployed."]
    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider(script, chunk_size=3),
                                               autoload_plugins=False, plugins=[], tools=[build], **kw),
                     store=MemoryStore())
    with ServerThread(app) as server:
        wait_healthy(server.url)
        first = open_page(browser, server, app)
        try:
            send_task(first, "build it")
            first.wait_for_selector('[data-testid="question-card"]', timeout=WAIT_MS)
            late = open_page(browser, server, app)  # replays from the coalesced log
            try:
                late_card = card(late, "build")
                late_card.locator('[data-testid="question-card"]').wait_for(timeout=WAIT_MS)
                expected = "step 1\nstep 2\nstep 3\n"
                assert late_card.locator('[data-testid="tool-output"]').text_content() == expected
                assert card(first, "build").locator('[data-testid="tool-output"]').text_content() == expected
                message = late.locator('[data-testid="assistant-message"]')
                assert message.locator("em").inner_text() == "now"  # the text.end replay carries the Markdown
                late.locator('[data-testid="question-option"]', has_text="yes").click()
                late.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
                first.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
                assert first.locator('[data-testid="question-answer"]').inner_text() == "Answer: yes"
                assert late.js_errors == [] and first.js_errors == []
            finally:
                late.close()
        finally:
            first.close()


# ---------------------------------------------------------------- "always allow"


@tool(name="run_command", kind="execute", permission_key="command",
      presentation={"label": "Run command", "icon": "💻", "tone": "warning", "group": "terminal"}, group="terminal")
def real_run_command(command: str, ctx: ToolContext) -> str:
    """Run a command in the workspace (a real process; no shell)."""
    import shlex
    import subprocess

    done = subprocess.run(shlex.split(command), cwd=ctx.workspace.root, capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


# quoted, so it is one simple command (a rule can cover it) holding markup and terminal escapes
SPOOF_COMMAND = "echo \"<b>bold</b> <img src=x onerror=window.__xss=1>\x1b[2J\x1bM\""


def test_always_allow_writes_the_rule_shown_and_the_next_run_does_not_ask(browser: Any, tmp_path: Path) -> None:
    import yaml

    from smoke_core.settings import user_settings_path

    scripts = [
        [
            {"tool_calls": [{"id": "a1", "name": "run_command", "input": {"command": SPOOF_COMMAND}}]},
            {"tool_calls": [{"id": "a2", "name": "run_command", "input": {"command": "echo always-ok"}}]},
            "first run done",
        ],
        [
            # a call id a hostile provider could pick: still an ordinary card
            {"tool_calls": [{"id": "__proto__", "name": "run_command", "input": {"command": "echo always-ok"}}]},
            {"tool_calls": [{"id": "b2", "name": "run_command", "input": {"command": "echo other"}}]},
            "second run done",
        ],
    ]

    def factory(*, session_id: str, store: Any) -> Any:  # a new agent per run: it reads the settings files afresh
        return create_agent(tmp_path, provider=ScriptedProvider(scripts.pop(0)), autoload_plugins=False, plugins=[],
                            tools=[real_run_command], store=store, session_id=session_id)

    local = tmp_path / ".smoke" / "config.local.yaml"
    app = create_app(factory, store=MemoryStore(), fresh_session_per_run=True)
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        try:
            send_task(page, "run things")
            # 1. the rule is shown exactly, as text, control characters made visible
            approval = page.locator('[data-testid="approval-card"][data-tool-call-id="a1"]')
            approval.wait_for(timeout=WAIT_MS)
            rule = approval.locator('[data-testid="always-rule"]')
            # the rule is the exact argv, shell-quoted (its glob characters match only themselves)
            assert rule.inner_text() == ("run_command(echo '<b>bold</b> <img src=x onerror=window.__xss=1>"
                                         "⟨ESC [2J⟩⟨ESC M⟩')")
            assert rule.locator(".ctl-esc").count() == 2 and rule.locator("b, img").count() == 0
            assert rule.get_attribute("data-scope") == "local"
            assert approval.locator('[data-testid="always-scope-local"]').is_checked()
            assert approval.locator('[data-testid="always-file"]').inner_text() == str(local)
            # the other choice: the person's settings file (same rule: a command is no path)
            approval.locator('[data-testid="always-scope-user"]').check()
            assert approval.locator('[data-testid="always-file"]').inner_text() == str(user_settings_path())
            assert rule.get_attribute("data-scope") == "user"
            approval.locator('[data-testid="always-scope-local"]').check()
            screenshot(page, "smoke-ui-always.png")
            approval.locator('[data-testid="deny-button"]').click()
            approval.locator('[data-testid="approval-decision"]').wait_for(timeout=WAIT_MS)

            # 2. the file cannot be written: the card says so, and the call still waits
            local.parent.mkdir()
            local.mkdir()
            approval = page.locator('[data-testid="approval-card"][data-tool-call-id="a2"]')
            approval.wait_for(timeout=WAIT_MS)
            assert approval.locator('[data-testid="always-rule"]').inner_text() == "run_command(echo always-ok)"
            approval.locator('[data-testid="always-button"]').click()
            problem = approval.locator('[data-testid="approval-error"]')
            problem.wait_for(state="visible", timeout=WAIT_MS)
            assert "could not write the rule to" in problem.inner_text()
            assert "still waiting" in problem.inner_text()
            assert problem.get_attribute("data-status") == "422"
            assert approval.locator('[data-testid="always-button"]').is_enabled()
            assert page.locator('[data-testid="error-card"]').count() == 0  # on the card, not elsewhere

            # 3. fixed: "always" allows the call and writes the rule
            local.rmdir()
            approval.locator('[data-testid="always-button"]').click()
            approval.locator('[data-testid="approval-decision"]').wait_for(timeout=WAIT_MS)
            assert approval.locator('[data-testid="approval-decision"]').inner_text() == "Always allowed"
            assert approval.locator('[data-testid="remembered-rule"]').inner_text() == "run_command(echo always-ok)"
            assert approval.locator('[data-testid="remembered-file"]').inner_text() == str(local)
            assert approval.locator('[data-testid="approval-error"]').count() == 0
            page.wait_for_selector('[data-testid="tool-card"][data-tool-call-id="a2"][data-state="done"]',
                                   timeout=WAIT_MS)
            assert "always-ok" in card_by_id(page, "a2").locator('[data-testid="tool-result"]').inner_text()
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
            assert yaml.safe_load(local.read_text()) == {"permissions": {"allow": ["run_command(echo always-ok)"]}}

            # 4. the next run (a new agent) runs the same command without asking; another command still asks
            send_task(page, "run them again")
            approval = page.locator('[data-testid="approval-card"][data-tool-call-id="b2"]')
            approval.wait_for(timeout=WAIT_MS)
            done = card_by_id(page, "__proto__")
            assert done.get_attribute("data-state") == "done"
            assert "always-ok" in done.locator('[data-testid="tool-result"]').inner_text()
            assert done.locator('[data-testid="approval-card"]').count() == 0  # never asked
            approval.locator('[data-testid="deny-button"]').click()
            page.wait_for_selector('[data-testid="final-message"]:has-text("second run done")', timeout=WAIT_MS)
            assert page.evaluate("window.__xss") is None and dialogs == []
            assert page.js_errors == []
        finally:
            page.close()


def card_by_id(page: Any, call_id: str) -> Any:
    return page.locator(f'[data-testid="tool-card"][data-tool-call-id="{call_id}"]')


# ---------------------------------------------------------------- subagents


@tool(read_only=True, kind="read", permission_key="path", presentation={"label": "Read file", "icon": "📄"})
def read_file(path: str, ctx: ToolContext) -> str:
    """Read a file."""
    return ctx.workspace.resolve(path).read_text()


@tool(name="write_file", kind="edit", permission_key="path", presentation={"label": "Write file", "icon": "✍️"})
def child_write_file(path: str, content: str, ctx: ToolContext) -> str:
    """Write a file."""
    ctx.workspace.resolve(path, write=True).write_text(content)
    return f"wrote {path}"


@tool(name="task", read_only=True, kind="other", group="agent",
      presentation={"label": "Task", "icon": "🤖", "tone": "info", "group": "agent"})
async def task_tool(description: str, prompt: str, ctx: ToolContext, agent: str = "explorer") -> str:
    """Delegate to a subagent, as smoke-tools-agent's task tool does (through ctx.run_subagent)."""
    tools = {"explorer": ["read_file"], "editor": ["read_file", "write_file"]}[agent]
    result = await ctx.run_subagent(prompt, tools=tools)
    return result.text or f"(the subagent ended {result.status})"


HOSTILE = "<img src=x onerror=window.__xss=1>"
TURN_USAGE = {"input_tokens": 1000, "output_tokens": 100}


def test_subagent_cards_nest_inside_their_task_cards(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "b.py").write_text("B = 2\n")

    def task(call_id: str, prompt: str, agent: str) -> dict[str, Any]:
        return {"id": call_id, "name": "task", "input": {"description": prompt, "prompt": prompt, "agent": agent}}

    def read(call_id: str, path: str) -> dict[str, Any]:
        return {"id": call_id, "name": "read_file", "input": {"path": path}}

    script: dict[str, list[Any]] = {
        "tidy up": [
            {"text": "I will delegate three parts.",
             "tool_calls": [task("t1", "where is A?", "explorer"), task("t2", "where is B?", "explorer"),
                            task("t3", "write c.txt", "editor")]},
            {"text": "All three parts are done."},
        ],
        "where is A?": [{"text": f"Looking for A {HOSTILE}", "tool_calls": [read("ra", "a.py")]},
                        {"text": "A is in a.py"}],
        "where is B?": [{"text": "Looking for B", "tool_calls": [read("rb", "b.py")]}, {"text": "B is in b.py"}],
        "write c.txt": [{"tool_calls": [{"id": "wc", "name": "write_file", "input": {"path": "c.txt", "content": "c\n"}}]},
                        {"text": "c.txt written"}],
    }
    for turns in script.values():
        for turn in turns:
            turn["usage"] = TURN_USAGE
    calls = sum(len(v) for v in script.values())

    def route(request: Any) -> Any:  # the subagents run at once: each conversation gets its own turns
        return script[request.messages[0]["content"][0]["text"]].pop(0)

    provider = ScriptedProvider([route] * calls, model="gpt-4o", chunk_size=6)
    provider.price_as = "openai"  # type: ignore[attr-defined]  # priced by genai-prices as OpenAI's gpt-4o
    app = create_app(lambda **kw: create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[],
                                               tools=[task_tool, read_file, child_write_file], **kw),
                     store=MemoryStore())
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app, height=1400)
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        try:
            send_task(page, "tidy up")
            # the editing subagent asks; its approval sits inside its task card and is answered there
            editor = card_by_id(page, "t3")
            approval = editor.locator('[data-testid="subagent"] [data-testid="approval-card"]')
            approval.wait_for(timeout=WAIT_MS)
            assert approval.get_attribute("data-tool-call-id") == "t3.wc"
            assert approval.get_attribute("data-view") == "diff"
            assert approval.locator('[data-testid="diff-add"]').all_inner_texts() == ["+c"]
            assert approval.locator('[data-testid="always-rule"]').inner_text() == "write_file(./c.txt)"
            screenshot(page, "smoke-ui-subagents-approval.png")
            approval.locator('[data-testid="approve-button"]').click()
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
            page.wait_for_selector('[data-testid="run-status"].status-completed', timeout=WAIT_MS)

            for call_id, tool_name, child_id, answer in (("t1", "read_file", "t1.ra", "A is in a.py"),
                                                         ("t2", "read_file", "t2.rb", "B is in b.py"),
                                                         ("t3", "write_file", "t3.wc", "c.txt written")):
                task_card = card_by_id(page, call_id)
                box = task_card.locator('[data-testid="subagent"]')
                assert box.count() == 1 and box.get_attribute("data-state") == "completed"
                assert box.get_attribute("data-parent-tool-call-id") == call_id
                child = box.locator('[data-testid="subagent-body"] > [data-testid="tool-card"]')
                assert child.count() == 1
                assert child.get_attribute("data-tool-call-id") == child_id
                assert child.get_attribute("data-tool-name") == tool_name
                assert child.get_attribute("data-state") == "done"
                assert box.locator('[data-testid="subagent-answer"]').inner_text() == answer
                assert "completed · 2 steps" in box.locator('[data-testid="subagent-status"]').inner_text()
                assert task_card.locator(':scope > [data-testid="tool-result"]').inner_text() == answer
            assert "A = 1" in card_by_id(page, "t1.ra").locator('[data-testid="tool-result"]').inner_text()
            # no child card outside a task card, and the log holds the parent's messages only
            assert page.locator('[data-testid="log"] > [data-testid="tool-card"]').count() == 3
            parent = page.locator('[data-testid="log"] > .msg.assistant').all_inner_texts()
            assert parent == ["I will delegate three parts.", "All three parts are done."]
            first = card_by_id(page, "t1").locator('[data-testid="subagent-message"]').first
            assert first.inner_text() == f"Looking for A {HOSTILE}"  # the model's HTML is text
            assert page.locator('[data-testid="log"] img').count() == 0
            # the header counts every call, the subagents' included, and prices them
            from genai_prices import Usage, calc_price

            per_call = float(calc_price(Usage(**TURN_USAGE), "gpt-4o", provider_id="openai").total_price)
            usage = page.locator('[data-testid="usage"]')
            assert usage.inner_text() == f"8,800 tokens (in 8,000 · out 800) · ${per_call * calls:.4f}"
            assert usage.get_attribute("data-cost") is not None
            assert (tmp_path / "c.txt").read_text() == "c\n"
            assert page.evaluate("window.__xss") is None and dialogs == []
            screenshot(page, "smoke-ui-subagents.png")
            assert page.js_errors == []
        finally:
            page.close()


def test_the_header_shows_usage_against_the_run_budget(browser: Any, tmp_path: Path) -> None:
    turns = [{"text": "one", "usage": {"input_tokens": 1200, "output_tokens": 30, "cost_usd": 0.0125}}]

    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(tmp_path, provider=ScriptedProvider(list(turns)), autoload_plugins=False, plugins=[],
                            store=store, session_id=session_id, max_cost_usd=0.5, max_input_tokens=50_000)

    app = create_app(factory, store=MemoryStore(), workspace=tmp_path)
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        try:
            send_task(page, "go")
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
            page.wait_for_function(
                "() => document.querySelector('[data-testid=usage]').textContent.includes('$0.0125 / $0.5')",
                timeout=WAIT_MS)
            text = page.inner_text('[data-testid="usage"]')
            assert "in 1,200 / 50,000" in text and "$0.0125 / $0.5" in text
            assert page.js_errors == []
            screenshot(page, "smoke-ui-budget-header.png")
        finally:
            page.close()


# ---------------------------------------------------------------- one table of marks for every front end (issue 28)


def test_the_page_marks_every_character_of_the_shared_table_and_shows_env_whole(browser: Any, tmp_path: Path) -> None:
    from smoke_core.display import MARKED, visible

    # one character of every table entry, each between two letters
    chars = [chr(first) for first, _last, _name, _kind in MARKED]
    command = "echo " + "".join(f"a{c}" for c in chars) + "a"
    env = {"GREETING": "hi\u3164there", "LESS": "-R"}

    @tool(presentation={"label": "Run", "icon": "💻"}, kind="execute", permission_key="command")
    def run_command(command: str, env: dict[str, str] | None = None) -> str:
        """Run a command."""
        return "ran"

    script = [{"tool_calls": [{"id": "m1", "name": "run_command", "input": {"command": command, "env": env}}]},
              "done"]
    app = create_app(lambda **kw: create_agent(tmp_path, provider=ScriptedProvider(script), autoload_plugins=False,
                                               plugins=[], tools=[run_command], **kw), store=MemoryStore())
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        try:
            send_task(page, "marks")
            approval = page.locator('[data-testid="approval-card"][data-tool-call-id="m1"]')
            approval.wait_for(timeout=WAIT_MS)
            value = approval.locator('[data-testid="field-value"][data-key="command"]')
            marks = value.locator(".ctl")
            assert marks.count() == len(chars)  # every entry, none missed (the terminal marks the same ones)
            assert sum(1 for c in chars if visible(c) != c) == len(chars)
            shown = [m.get_attribute("data-ctl") for m in marks.all()]
            assert shown == [f"U+{ord(c):04X}" for c in chars]
            entries = approval.locator('[data-testid="env-entry"]')
            assert entries.all_inner_texts() == ["GREETING=hi⟨U+3164⟩there", "LESS=-R"]
            assert "approved with the command" in approval.locator('[data-testid="env-note"]').inner_text()
            assert entries.first.locator(".ctl").count() == 1
            screenshot(page, "smoke-ui-marks-and-env.png")
            approval.locator('[data-testid="deny-button"]').click()
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
            assert page.js_errors == []
        finally:
            page.close()


# ---------------------------------------------------------------- plan mode (issue 33)


@tool(kind="edit", permission_key="path", presentation={"label": "Write", "icon": "✏️"})
def save_file(path: str, content: str, ctx: ToolContext) -> str:
    """Write a file in the workspace."""
    (Path(ctx.workspace.root) / path).write_text(content)
    return f"wrote {path}"


def test_plan_mode_in_the_browser_toggle_reject_edit_and_approve(browser: Any, tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"id": "p1", "name": "exit_plan_mode", "input": {"plan": "## Plan\n1. write `a.txt`"}}]},
        {"tool_calls": [{"id": "p2", "name": "exit_plan_mode", "input": {"plan": "## Plan\n1. write `b.txt`"}}]},
        {"tool_calls": [{"id": "w1", "name": "save_file", "input": {"path": "b.txt", "content": "hi"}}]},
        "Written.",
    ]
    provider = ScriptedProvider(script)
    app = create_app(lambda **kw: create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[],
                                               tools=[save_file], **kw), store=MemoryStore(), workspace=tmp_path)
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        try:
            toggle = page.locator('[data-testid="plan-toggle"]')
            assert toggle.get_attribute("aria-pressed") == "false"
            assert page.inner_text('[data-testid="permission-mode"]') == "mode: ask-default"
            toggle.click()
            page.wait_for_selector('[data-testid="plan-toggle"][aria-pressed="true"]', timeout=WAIT_MS)
            assert page.inner_text('[data-testid="permission-mode"]') == "mode: plan"
            send_task(page, "write a file")
            first = page.locator('[data-testid="plan-card"][data-tool-call-id="p1"]')
            first.wait_for(timeout=WAIT_MS)
            assert first.locator('[data-testid="plan-text"] h2').inner_text() == "Plan"
            assert first.locator('[data-testid="plan-text"] code').inner_text() == "a.txt"
            first.locator('[data-testid="plan-reject"]').click()
            first.locator('[data-testid="plan-reject-text"]').fill("write b.txt instead")
            first.locator('[data-testid="plan-reject-submit"]').click()
            page.wait_for_selector('[data-testid="plan-card"][data-tool-call-id="p1"][data-decision="reject"]',
                                   timeout=WAIT_MS)
            second = page.locator('[data-testid="plan-card"][data-tool-call-id="p2"]')
            second.wait_for(timeout=WAIT_MS)
            assert "rejected 1 of 3 times" in second.inner_text()
            screenshot(page, "smoke-ui-plan-card.png")
            second.locator('[data-testid="plan-edit"]').click()
            editor = second.locator('[data-testid="plan-edit-text"]')
            assert editor.input_value() == "## Plan\n1. write `b.txt`"
            editor.fill("## Plan\n1. write `b.txt` with hi")
            second.locator('[data-testid="plan-edit-approve-edits"]').click()
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
            assert second.locator('[data-testid="plan-decision"]').inner_text() == \
                "Approved as edited · mode accept-edits"
            assert page.locator('[data-testid="approval-card"]').count() == 0  # the edit ran without asking
            assert (tmp_path / "b.txt").read_text() == "hi"
            assert page.inner_text('[data-testid="permission-mode"]') == "mode: accept-edits"
            assert toggle.get_attribute("aria-pressed") == "false"
            results = [b for m in provider.requests[1].messages for b in m["content"] if b.get("type") == "tool_result"]
            assert "write b.txt instead" in results[-1]["content"][0]["text"]
            results = [b for m in provider.requests[2].messages for b in m["content"] if b.get("type") == "tool_result"]
            assert "with hi" in results[-1]["content"][0]["text"]
            assert page.js_errors == []
        finally:
            page.close()


# ---------------------------------------------------------------- icons and layout

LAYOUT_LABEL = "simulated model (offline demo: the model's turns are scripted; tools, files and tests are real)"


@tool(read_only=True, presentation={"label": "Look", "icon": "🔎", "tone": "info", "group": "look"}, group="look")
def look(n: int, ctx: ToolContext) -> str:
    """Look at something."""
    return "\n".join(f"line {i} of look {n}" for i in range(12))


@tool(read_only=True, presentation={"label": "Unknown icon", "icon": "🦄", "tone": "info"})
def odd(ctx: ToolContext) -> str:
    """A tool whose emoji the page does not draw."""
    return "ok"


@pytest.mark.parametrize("width", [1280, 760])
def test_icons_are_bundled_svg_and_the_label_and_badge_fit(browser: Any, tmp_path: Path, width: int) -> None:
    turns: list[Any] = [{"tool_calls": [{"id": f"l{i}", "name": "look", "input": {"n": i}}]} for i in range(8)]
    turns += [{"tool_calls": [{"id": "o1", "name": "odd", "input": {}}]}, "Looked."]

    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(tmp_path, provider=ScriptedProvider(turns), autoload_plugins=False, plugins=[],
                            tools=[look, odd], store=store, session_id=session_id)

    app = create_app(factory, store=MemoryStore(), demo_label=LAYOUT_LABEL)
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = browser.new_page(viewport={"width": width, "height": 700})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            page.goto(f"{server.url}/?token={app.state.ui.token}")
            page.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)
            send_task(page, "look around")
            page.wait_for_selector('[data-testid="final-message"]', timeout=WAIT_MS)
            page.wait_for_selector('[data-testid="run-status"].status-completed', timeout=WAIT_MS)
            # every icon is a drawing shipped with the page, none a glyph of an emoji font
            icons = page.evaluate("""() => [...document.querySelectorAll(
                '.tool-icon, .brand-icon, .button-icon, .note-icon')].map(n => {
                const svg = n.querySelector('svg'); const r = svg ? svg.getBoundingClientRect() : null;
                return {text: n.textContent, emoji: n.getAttribute('data-emoji'), icon: svg && svg.getAttribute('data-icon'),
                        w: r ? r.width : 0, h: r ? r.height : 0, paths: svg ? svg.querySelectorAll('path').length : 0};
            })""")
            assert len(icons) >= 11, icons  # brand, plan toggle, nine tool cards
            for icon in icons:
                assert icon["text"] == "" and icon["paths"] > 0 and icon["w"] >= 12 and icon["h"] >= 12, icon
            drawn = {i["emoji"]: i["icon"] for i in icons}
            assert drawn["🔎"] == "search" and drawn["🐒"] == "smoke" and drawn["🦄"] == "wrench"  # unknown: the wrench
            assert not any(i["icon"] is None for i in icons)
            # the demo badge is shown whole (not clipped), inside the window
            badge = page.evaluate("""() => { const b = document.querySelector('[data-testid=demo-badge]');
                const r = b.getBoundingClientRect();
                return {sw: b.scrollWidth, cw: b.clientWidth, sh: b.scrollHeight, ch: b.clientHeight,
                        right: r.right, left: r.left, text: b.textContent}; }""")
            assert LAYOUT_LABEL in badge["text"]
            assert badge["sw"] <= badge["cw"] + 1 and badge["sh"] <= badge["ch"] + 1, badge
            assert badge["left"] >= 0 and badge["right"] <= width, badge
            # the session label stays above the scrolled log, never over its content
            page.evaluate("() => { const l = document.querySelector('[data-testid=log]'); l.scrollTop = l.scrollHeight; }")
            boxes = page.evaluate("""() => { const s = document.querySelector('.session-line').getBoundingClientRect();
                const l = document.querySelector('[data-testid=log]');
                const r = l.getBoundingClientRect();
                return {label_bottom: s.bottom, label_top: s.top, log_top: r.top, scrolled: l.scrollTop,
                        overflow: l.scrollHeight > l.clientHeight,
                        covered: [...l.querySelectorAll('.card')].some(c => { const b = c.getBoundingClientRect();
                            const x = b.left + 4, y = Math.max(b.top, r.top) + 2;
                            if (y >= b.bottom || y > s.bottom || y < s.top) return false;
                            const hit = document.elementFromPoint(x, y);
                            return hit && !c.contains(hit); })}; }""")
            assert boxes["overflow"] and boxes["scrolled"] > 0, boxes  # there is scrolled content to overlap
            assert boxes["label_bottom"] <= boxes["log_top"] + 0.5, boxes
            assert not boxes["covered"], boxes
            assert errors == []
            shot = screenshot(page, f"smoke-ui-layout-{width}.png")
            assert shot.stat().st_size > 5_000
        finally:
            page.close()


# ---------------------------------------------------------------- rewind and fork


def test_rewind_to_a_turn_undo_it_and_fork_a_session_from_the_page(browser: Any, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_bytes(b"one\n")
    script = [
        {"tool_calls": [{"id": "w1", "name": "write_file", "input": {"path": "a.txt", "content": "two\n"}}]},
        "Done 1.",
        {"tool_calls": [{"id": "w2", "name": "write_file", "input": {"path": "a.txt", "content": "three\n"}}]},
        "Done 2.",
    ]

    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(ws, provider=ScriptedProvider(list(script)), autoload_plugins=False, plugins=[],
                            tools=[write_file], store=store, session_id=session_id, permission="allow-all")

    app = create_app(factory, store=MemoryStore(), workspace=ws)
    store = app.state.ui.store
    with ServerThread(app) as server:
        wait_healthy(server.url)
        page = open_page(browser, server, app)
        try:
            from playwright.sync_api import expect

            send_task(page, "first")
            expect(page.locator('[data-testid="final-message"]')).to_have_count(1, timeout=WAIT_MS)
            page.wait_for_selector('[data-testid="run-status"].status-completed', timeout=WAIT_MS)
            send_task(page, "second")
            expect(page.locator('[data-testid="final-message"]')).to_have_count(2, timeout=WAIT_MS)
            page.wait_for_selector('[data-testid="run-status"].status-completed', timeout=WAIT_MS)
            assert (ws / "a.txt").read_bytes() == b"three\n"
            first = app.state.ui.session_id
            history = list(store.load(first))

            # a "Rewind to here" button per turn; the second one puts back the file as it was before that turn
            buttons = page.locator('[data-testid="log"] [data-testid="rewind-turn"]')
            expect(buttons).to_have_count(2, timeout=WAIT_MS)
            buttons.nth(1).click()
            page.wait_for_selector('[data-testid="rewind-note"]', timeout=WAIT_MS)
            assert "before turn 2" in page.inner_text('[data-testid="rewind-note"]')
            assert (ws / "a.txt").read_bytes() == b"two\n"
            rewound = app.state.ui.session_id
            assert rewound != first and page.inner_text('[data-testid="session-id"]') == rewound
            assert list(store.load(rewound)) == history[:[i for i, m in enumerate(history) if m["role"] == "user"][1]]

            # undo puts it back and makes the old session current again
            page.click('[data-testid="undo-rewind"]')
            page.wait_for_selector('[data-testid="rewind-undone"]', timeout=WAIT_MS)
            assert (ws / "a.txt").read_bytes() == b"three\n"
            assert app.state.ui.session_id == first

            # fork from the session list: a new session with a copy of the history, opened
            item = page.locator(f'[data-testid="session-item"][data-session-id="{first}"]')
            item.hover()
            item.locator('[data-testid="fork-session"]').click()
            page.wait_for_selector('[data-testid="fork-note"]', timeout=WAIT_MS)
            forked = app.state.ui.session_id
            assert forked not in (first, rewound)
            assert list(store.load(forked)) == history
            expect(page.locator('[data-testid="transcript"]')).to_be_visible(timeout=WAIT_MS)
            expect(page.locator('[data-testid="transcript-body"] [data-testid="transcript-user"]')).to_have_count(
                2, timeout=WAIT_MS)
            expect(page.locator('[data-testid="session-item"]')).to_have_count(3, timeout=WAIT_MS)
            screenshot(page, "smoke-ui-rewind-fork.png")
            assert page.js_errors == []
        finally:
            page.close()
