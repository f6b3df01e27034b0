"""With the other plugins (the ``tests`` session): a third-party Claude Code
hook blocking the real ``run_command``; ``/review`` from
``.claude/commands`` in the web UI (Chromium through Playwright) and in an
editor (a real ACP client); hook runs as OpenTelemetry spans."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import call, dedent, smoke_env, write_yaml

pytestmark = pytest.mark.integration

#: what a team already has for Claude Code: block grep in favour of rg
VALIDATOR = dedent(f"""
    #!{sys.executable}
    import json
    import re
    import sys

    _RULES = [(r"^grep\\b(?!.*\\|)", "Use 'rg' (ripgrep) instead of 'grep' for better performance and features")]

    def main():
        try:
            data = json.load(sys.stdin)
        except json.JSONDecodeError as e:
            print(f"Error: Invalid JSON input: {{e}}", file=sys.stderr)
            sys.exit(1)
        if data.get("tool_name") != "Bash":
            sys.exit(0)
        command = data.get("tool_input", {{}}).get("command", "")
        issues = [message for pattern, message in _RULES if re.search(pattern, command)]
        if issues:
            for message in issues:
                print(f"• {{message}}", file=sys.stderr)
            sys.exit(2)

    if __name__ == "__main__":
        main()
""")
CLAUDE_SETTINGS = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
    {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/bash_validator.py"}]}]}}


def _claude_project(workspace: Path) -> None:
    hook = workspace / ".claude" / "hooks" / "bash_validator.py"
    hook.parent.mkdir(parents=True)
    hook.write_text(VALIDATOR)
    hook.chmod(0o755)
    (workspace / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS))
    (workspace / "notes.txt").write_text("a needle in a haystack\n")


async def _grep_run(workspace: Path) -> tuple[Any, str]:
    terminal = pytest.importorskip("smoke_tools_terminal")
    import smoke_hooks

    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    provider = ScriptedProvider([call("run_command", command="grep needle notes.txt > found.txt"), "done"])
    agent = create_agent(workspace, provider=provider, autoload_plugins=False, plugins=[smoke_hooks, terminal],
                         trust_workspace=None, auto_approve=True, sandbox={"mode": "off"})
    result = await agent.run("find the needle")
    block = provider.requests[1].messages[-1]["content"][0]
    return result, "\n".join(c["text"] for c in block["content"])


async def test_a_claude_code_validator_blocks_run_command_with_its_own_message(workspace):
    from smoke_core.settings import trust_folder, user_settings_path

    _claude_project(workspace)
    write_yaml(user_settings_path(), {"hooks_compat": ["claude"]})
    trust_folder(workspace)
    result, seen = await _grep_run(workspace)
    assert result.status == "completed"
    assert "Use 'rg' (ripgrep) instead of 'grep' for better performance and features" in seen
    assert not (workspace / "found.txt").exists()  # the command never ran


async def test_the_same_file_in_an_untrusted_folder_runs_nothing(workspace):
    from smoke_core.settings import user_settings_path

    _claude_project(workspace)
    write_yaml(user_settings_path(), {"hooks_compat": ["claude"]})
    result, seen = await _grep_run(workspace)
    assert result.status == "completed" and "rg" not in seen
    assert (workspace / "found.txt").read_text() == "a needle in a haystack\n"


async def test_without_hooks_compat_the_file_runs_nothing(workspace):
    from smoke_core.settings import trust_folder

    _claude_project(workspace)
    trust_folder(workspace)
    result, seen = await _grep_run(workspace)
    assert result.status == "completed" and "rg" not in seen
    assert (workspace / "found.txt").exists()


# ---------------------------------------------------------------- /review in the web UI and in an editor

REVIEW = dedent("""
    ---
    description: Review a change for bugs
    argument-hint: "[what]"
    ---
    Review $ARGUMENTS for bugs. List each with file and line.
""")
CHROMIUM = os.environ.get("SMOKE_CHROMIUM", "/usr/bin/chromium")


def _review(workspace: Path) -> None:
    path = workspace / ".claude" / "commands" / "review.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(REVIEW)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_review_is_a_slash_command_in_the_web_ui(workspace):
    pytest.importorskip("smoke_ui")
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    import httpx
    import smoke_hooks
    from smoke_ui.server import create_app
    from smoke_ui.serving import ServerThread

    from smoke_core import create_agent
    from smoke_core.plugin import MemoryStore
    from smoke_core.testing import ScriptedProvider

    _review(workspace)
    got: list[str] = []

    def reply(request: Any) -> str:
        last = [m for m in request.messages if m["role"] == "user"][-1]
        got.append(last["content"][0]["text"])
        return "no bugs found"

    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(workspace, provider=ScriptedProvider([reply] * 5), store=store, session_id=session_id,
                            autoload_plugins=False, plugins=[smoke_hooks])

    app = create_app(factory, store=MemoryStore(), workspace=workspace)
    with ServerThread(app) as server, sync_api.sync_playwright() as pw:
        for _ in range(100):
            try:
                if httpx.get(server.url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{server.url}/?token={app.state.ui.token}")
            page.wait_for_selector("body[data-ready=true]", timeout=30_000)
            page.wait_for_selector('[data-testid="connection"].ok', timeout=30_000)
            page.fill('[data-testid="task-input"]', "/rev")
            page.locator('[data-testid="task-input"]').dispatch_event("input")
            hint = page.wait_for_selector('[data-testid="command-hint"]', timeout=30_000)
            assert "/review [what]" in hint.inner_text() and "Review a change for bugs" in hint.inner_text()
            page.fill('[data-testid="task-input"]', "/review the parser")
            page.click('[data-testid="send-button"]')
            page.wait_for_selector('[data-testid="final-message"]', timeout=30_000)
            user = page.inner_text('[data-testid="user-message"]')
            assert "Review the parser for bugs. List each with file and line." in user
            assert got == ["Review the parser for bugs. List each with file and line."]
            page.fill('[data-testid="task-input"]', "/nosuch")
            page.click('[data-testid="send-button"]')
            error = page.wait_for_selector('[data-testid="error-card"]', timeout=30_000)
            assert "unknown command /nosuch" in error.inner_text()
            assert errors == []
        finally:
            browser.close()


@pytest.mark.slow
async def test_review_is_a_slash_command_in_an_editor(workspace, tmp_path):
    pytest.importorskip("smoke_acp")
    from acp import PROTOCOL_VERSION
    from acp.client.connection import ClientSideConnection
    from acp.schema import ClientCapabilities, RequestPermissionResponse, TextContentBlock

    _review(workspace)

    class Editor:
        def __init__(self) -> None:
            self.updates: list[Any] = []
            self.changed = asyncio.Event()

        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            self.updates.append(update)
            self.changed.set()

        async def request_permission(self, **kwargs: Any) -> RequestPermissionResponse:
            raise AssertionError("no permission is asked in this test")

        def of(self, kind: str) -> list[Any]:
            return [u for u in self.updates if u.session_update == kind]

    env = smoke_env(tmp_path, SMOKE_LOAD_PLUGINS="acp,hooks,echo_scripted",
                    HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
                    XDG_STATE_HOME=str(tmp_path / "home" / ".state"),
                    SMOKE_MANAGED_SETTINGS=str(tmp_path / "no-managed.yaml"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "smoke_core.cli", "acp", "--provider", "echo-scripted", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, cwd=workspace, env=env,
        limit=16 * 1024 * 1024)
    editor = Editor()
    assert proc.stdin is not None and proc.stdout is not None
    conn = ClientSideConnection(editor, proc.stdin, proc.stdout)
    try:
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION,
                                               client_capabilities=ClientCapabilities()), 60)
        session = await asyncio.wait_for(conn.new_session(cwd=str(workspace), mcp_servers=[]), 60)

        async def offered() -> list[Any]:
            while not editor.of("available_commands_update"):
                editor.changed.clear()
                await editor.changed.wait()
            return editor.of("available_commands_update")[0].available_commands

        commands = await asyncio.wait_for(offered(), 60)
        review = next(c for c in commands if c.name == "review")
        assert review.description == "Review a change for bugs (.claude/commands)"
        assert review.input is not None and review.input.root.hint == "[what]"
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[
            TextContentBlock(type="text", text="/review the parser")]), 60)
        assert answer.stop_reason == "end_turn"
        said = "".join(u.content.text for u in editor.of("agent_message_chunk"))
        assert "the model got: Review the parser for bugs. List each with file and line." in said
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


# ---------------------------------------------------------------- OpenTelemetry


async def test_hook_runs_are_spans(workspace, tmp_path):
    pytest.importorskip("smoke_otel")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode
    from smoke_otel import OtelPlugin

    from .conftest import Hooks, config, make_agent

    hooks = Hooks(tmp_path / "hooks")
    good = hooks.script("good", {"PreToolUse": {"exit": 2, "stderr": "no"}})
    bad = hooks.script("bad", {"PostToolUse": {"exit": 7, "stderr": "broken"}})
    tp = TracerProvider()
    exporter = InMemorySpanExporter()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    from opentelemetry.sdk.metrics import MeterProvider

    plugin = OtelPlugin(tracer_provider=tp, meter_provider=MeterProvider())
    agent, _ = make_agent(workspace, [call("run_command", command="ls"), call("read_file", path="a"), "ok"],
                          plugins=[plugin], permission="allow-all",
                          hooks={**config("PreToolUse", command=good, matcher="Bash"),
                                 **config("PostToolUse", command=bad, matcher="Read")})
    (workspace / "a").write_text("x")
    await agent.run("go")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    pre, post, root = spans["execute_hook PreToolUse"], spans["execute_hook PostToolUse"], spans["invoke_agent smoke"]
    assert pre.attributes["smoke.hook.decision"] == "block" and pre.attributes["smoke.hook.exit_code"] == 2
    assert pre.attributes["smoke.hook.source"] == "create_agent(hooks=...) PreToolUse[0].hooks[0]"
    assert pre.context.trace_id == root.context.trace_id and pre.end_time - pre.start_time > 0
    assert post.status.status_code is StatusCode.ERROR and post.attributes["error.type"] == "hook_failed"


# ---------------------------------------------------------------- the first-party tools' Claude shapes


def test_the_first_party_tools_declare_their_claude_shape_with_fields_they_have(workspace):
    plugins = [pytest.importorskip(m) for m in ("smoke_tools_filesystem", "smoke_tools_search", "smoke_tools_terminal",
                                                "smoke_tools_agent")]
    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    agent = create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, plugins=plugins)
    declared = {}
    for name, tool in agent.tools.items():
        dialect = tool.annotations.claude
        if dialect is None:
            continue
        declared[name] = dialect.name
        properties = tool.input_schema.get("properties", {})
        missing = [f for f in dialect.input.values() if f not in properties]
        assert not missing, f"{name} maps Claude fields to {missing}, which its schema does not have"
        assert set(dialect.paths) <= set(dialect.input), name
    assert declared == {"run_command": "Bash", "read_file": "Read", "write_file": "Write", "edit_file": "Edit",
                        "apply_patch": "apply_patch", "glob": "Glob", "grep": "Grep", "todo_write": "TodoWrite",
                        "task": "Task"}
