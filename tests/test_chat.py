"""``smoke chat``: slash commands from the hook (in-process), and the REPL
itself through a real pseudo-terminal and through a pipe."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from smoke_core import create_agent, hookimpl
from smoke_core.cli.chat import PROMPT
from smoke_core.run.slash import RESERVED, collect_slash_commands
from smoke_core.testing import ScriptedProvider

from .test_cli import Pty, clean_env, smoke

# ------------------------------------------------------------ the hook, in-process


class Commands:
    """A plugin adding slash commands, one of them per agent (like MCP prompts)."""

    def __init__(self) -> None:
        self.seen_agents: list[object] = []

    @hookimpl
    def register_slash_commands(self, register, agent):
        self.seen_agents.append(agent)

        def shout(args, chat):
            return args.upper()

        async def later(args, chat):
            chat.say("said later")

        register("shout", shout, description="upper-case  the\nrest", usage="/shout TEXT")
        register("later", later)
        register(f"ws_{agent.workspace.root.name}", shout)  # depends on the agent it is asked for
        register("help", shout)  # core's name: not taken
        register("clear", shout)


class Clash:
    @hookimpl
    def register_slash_commands(self, register):
        register("shout", lambda args, chat: None)


class Broken:
    @hookimpl
    def register_slash_commands(self, register):
        raise RuntimeError("no commands today")


def test_plugins_add_slash_commands_per_agent_and_core_keeps_its_names(tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    plugin = Commands()
    # pluggy calls the last registered first: Commands registers before Clash
    agent = create_agent(ws, provider=ScriptedProvider([]), plugins=[Clash(), plugin, Broken()],
                         autoload_plugins=False)
    commands, problems = collect_slash_commands(agent)
    assert plugin.seen_agents == [agent]
    assert {"help", "clear", "compact", "model", "tools", "cost", "plan", "rewind", "undo", "exit", "quit"} \
        == RESERVED <= set(commands)
    assert commands["help"].source.startswith("smoke-core:")  # core's, not the plugin's
    shout = commands["shout"]
    assert shout.usage == "/shout TEXT" and shout.description == "upper-case the rest"
    assert shout.handler("hey", None) == "HEY"
    assert "ws_proj" in commands and "later" in commands
    text = "\n".join(problems)
    assert "/help from" in text and "one of core's commands" in text
    assert "/clear from" in text
    assert "/shout from" in text and "already offers it" in text  # the first registration stays
    assert "could not add its slash commands (RuntimeError: no commands today)" in text


def test_a_bad_command_name_is_refused_with_the_plugin_named(tmp_path):
    class BadName:
        @hookimpl
        def register_slash_commands(self, register):
            register("has space", lambda args, chat: None)

    agent = create_agent(tmp_path, provider=ScriptedProvider([]), plugins=[BadName()], autoload_plugins=False)
    commands, problems = collect_slash_commands(agent)
    assert "has space" not in commands
    assert any("'has space'" in p and "letters, digits" in p for p in problems)


# ------------------------------------------------------------ the REPL


def write_chat_provider_plugin(root: Path) -> Path:
    """A plugin distribution adding provider `chat-scripted`: its turns come
    from $SMOKE_TEST_TURNS, its usage is priced as OpenAI's gpt-4o-mini."""
    info = root / "smoke_chat_scripted-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: smoke-chat-scripted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[smoke]\nchat_scripted = smoke_chat_scripted\n")
    (root / "smoke_chat_scripted.py").write_text(textwrap.dedent(
        """
        import json, os
        from smoke_core import hookimpl

        def _texts(message):
            out = []
            for b in message["content"]:
                if b.get("type") == "text":
                    out.append(b["text"])
                for c in b.get("content", []):
                    if c.get("type") == "text":
                        out.append(c["text"])
            return " ".join(out)

        def _special(turn):
            if turn == "ECHO_LAST_RESULT":
                return lambda request: "the answer was: " + _texts(request.messages[-1])
            if turn == "SAY_PARTS":
                def parts(request):
                    first = next(m for m in request.messages if m["role"] == "user")
                    kinds = [b["type"] if b["type"] != "image" else b.get("mime_type", "image") for b in first["content"]]
                    return "parts: " + ", ".join(kinds)
                return parts
            if turn == "RECALL":
                def recall(request):
                    said = [_texts(m) for m in request.messages if m["role"] == "user"]
                    return "you said before: " + " | ".join(said)
                return recall
            return turn

        _queue = []

        def _next(request):
            # one script for the process: an agent made by /clear or /model goes on with it
            if not _queue:
                return "(no turn left)"
            turn = _special(_queue.pop(0))
            return turn(request) if callable(turn) else turn

        @hookimpl
        def register_providers(register):
            def factory(**kw):
                from smoke_core.testing import ScriptedProvider
                if not _queue and not getattr(factory, "loaded", False):
                    _queue.extend(json.loads(os.environ["SMOKE_TEST_TURNS"]))
                    factory.loaded = True
                provider = ScriptedProvider([_next] * 50, model=kw.get("model") or "gpt-4o-mini",
                                            delay=float(os.environ.get("SMOKE_TEST_DELAY", "0")))
                provider.price_as = "openai"
                return provider
            register("chat-scripted", factory, default_model="gpt-4o-mini")

        @hookimpl
        def register_slash_commands(register, agent):
            # asked again after each turn: a command may follow what the agent has now
            n = len(agent.store.load(agent.session_id)) if agent.session_id else 0
            register(f"seen_{n}", lambda args, chat: chat.say(f"the session holds {n} messages"))
            register("ask", lambda args, chat: "please answer: " + args, description="send a question")
        """
    ))
    return root


def chat_env(tmp_path, turns, plugins="chat_scripted,tools_terminal", **extra):
    plugdir = tmp_path / "plug"
    if not plugdir.exists():
        write_chat_provider_plugin(plugdir)
    return clean_env(tmp_path, PYTHONPATH=str(plugdir), SMOKE_LOAD_PLUGINS=plugins,
                     SMOKE_TEST_TURNS=json.dumps(turns), COLUMNS="200", TERM="xterm", **extra)


def usage(n_in, n_out):
    return {"input_tokens": n_in, "output_tokens": n_out}


@pytest.mark.slow
@pytest.mark.integration
def test_pty_chat_two_turns_an_approval_cost_history_and_exit(tmp_path):
    pytest.importorskip("smoke_tools_terminal")
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = [
        {"tool_calls": [{"name": "run_command", "input": {"command": "echo chatted > out.txt"}}],
         "usage": usage(1000, 100)},
        {"text": "ECHO", "usage": usage(1200, 50)},
        "RECALL",
    ]
    turns[1] = "ECHO_LAST_RESULT"
    env = chat_env(tmp_path, turns)
    term = Pty([sys.executable, "-m", "smoke_core.cli", "chat", "--provider", "chat-scripted"], ws, env)
    banner = term.read_until(PROMPT)
    assert "smoke chat" in banner and "chat-scripted" in banner and "gpt-4o-mini" in banner
    session = banner.split("session ", 1)[1].split()[0]

    term.send("make a file\n")
    out = term.read_until("allow once [y]")
    assert "$ echo chatted > out.txt" in out
    term.send("y\n")
    out = term.read_until(PROMPT)
    assert "the answer was:" in out
    assert (ws / "out.txt").read_text().strip() == "chatted"

    term.send("what did I say?\n")
    out = term.read_until(PROMPT)
    # the second turn saw the first: one session
    assert "you said before: make a file | what did I say?" in out.replace("\r", "")

    term.send("/cost\n")
    out = term.read_until(PROMPT)
    assert "cost of this chat so far:" in out
    assert " in / " in out and " out tokens" in out and "$" in out and "unknown price" not in out

    term.send("\x1b[A\n")  # up-arrow: the previous line (/cost) again
    out = term.read_until(PROMPT)
    assert "cost of this chat so far:" in out

    term.send("/nosuch\n")
    assert "unknown command /nosuch" in term.read_until(PROMPT)
    term.send("/exit\n")
    assert term.finish() == 0
    assert f"continue with smoke chat --continue, or --session {session}" in term.buffer

    shown = smoke("sessions", "show", session, cwd=ws, env=env).stdout
    assert "[user] make a file" in shown and "[user] what did I say?" in shown
    history = Path(env["XDG_STATE_HOME"]) / "smoke" / "chat_history"
    assert "/cost" in history.read_text() and "make a file" in history.read_text()
    assert oct(history.stat().st_mode & 0o777) == "0o600"


@pytest.mark.slow
def test_pty_ctrl_c_stops_the_turn_not_the_chat(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = chat_env(tmp_path, ["never shown", "after the interruption"], plugins="chat_scripted",
                   SMOKE_TEST_DELAY="60")
    term = Pty([sys.executable, "-m", "smoke_core.cli", "chat", "--provider", "chat-scripted"], ws, env)
    term.read_until(PROMPT)
    term.send("take your time\n")
    term.read_until("thinking")  # the turn is running (the provider waits 60 s)
    os.killpg(term.proc.pid, signal.SIGINT)
    out = term.read_until(PROMPT)
    assert "interrupted" in out
    assert term.proc.poll() is None  # the chat is still there
    term.send("/exit\n")
    assert term.finish() == 0


def test_smoke_run_without_a_task_and_without_a_terminal_says_what_to_do(tmp_path):
    proc = smoke("run", cwd=tmp_path, env=chat_env(tmp_path, []), input="")
    assert proc.returncode == 2 and "TASK is missing" in proc.stderr and "smoke chat" in proc.stderr


@pytest.mark.slow
def test_pty_smoke_run_without_a_task_is_a_chat(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = chat_env(tmp_path, ["hello there"], plugins="chat_scripted")
    term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "chat-scripted"], ws, env)
    term.read_until("smoke chat")
    term.read_until(PROMPT)
    term.send("hi\n")
    assert "hello there" in term.read_until(PROMPT)
    term.send("\x04")  # Ctrl-D leaves
    assert term.finish() == 0


def test_piped_chat_clear_model_compact_and_unknown_commands(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = ["first answer", "second answer", "SUMMARY: the person said one and two", "RECALL", "RECALL"]
    env = chat_env(tmp_path, turns, plugins="chat_scripted")
    script = "\n".join([
        "one", "two", "/compact", "three", "/model", "/model chat-scripted:gpt-4o", "/tools", "/cost",
        "/clear", "//slash four", "/nope", "/exit", "never read",
    ]) + "\n"
    proc = smoke("chat", "--provider", "chat-scripted", cwd=ws, env=env, input=script)
    out = proc.stdout.replace("\r", "")
    assert proc.returncode == 0, proc.stderr + out
    assert "first answer" in out and "second answer" in out
    assert "compacted 4 → 2 messages" in out
    # after /compact the model sees the summary, not the old turns
    assert "you said before: [Summary of the earlier conversation]\nSUMMARY: the person said one and two" in out
    assert "| three" in out and "| one" not in out
    assert "model: chat-scripted · gpt-4o-mini" in out
    assert "now using chat-scripted · gpt-4o (same session)" in out
    assert "tools (* asks before it runs" in out
    assert "cost of this chat so far:" in out and "$" in out
    assert "new session" in out
    assert "you said before: /slash four" in out  # a fresh session, and // sends a leading slash
    assert "unknown command /nope" in out
    assert "never read" not in out


def test_piped_chat_leaves_no_session_the_model_never_answered(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = chat_env(tmp_path, [], plugins="chat_scripted")
    proc = smoke("chat", "--provider", "chat-scripted", cwd=ws, env=env, input="/clear\n/exit\n")
    assert proc.returncode == 0, proc.stderr
    assert "session: none kept" in proc.stderr
    listed = smoke("sessions", cwd=ws, env=env)
    assert "ses_" not in listed.stdout


def test_piped_chat_plugin_commands_follow_the_session_and_may_send_a_turn(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = chat_env(tmp_path, ["first", "RECALL"], plugins="chat_scripted")
    proc = smoke("chat", "--provider", "chat-scripted", cwd=ws, env=env,
                 input="/seen_0\none\n/seen_2\n/ask what now\n/help\n/exit\n")
    out = proc.stdout.replace("\r", "")
    assert proc.returncode == 0, proc.stderr + out
    assert "the session holds 0 messages" in out and "the session holds 2 messages" in out
    assert "you said before: one | please answer: what now" in out
    assert "/ask" in out and "send a question" in out and "(smoke-chat-scripted)" in out  # /help names the plugin



@pytest.mark.slow
@pytest.mark.integration
def test_pty_ctrl_c_at_an_approval_leaves_nothing_reading_the_terminal(tmp_path):
    pytest.importorskip("smoke_tools_terminal")
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = [{"tool_calls": [{"name": "run_command", "input": {"command": "echo never > out.txt"}}]}, "unused"]
    env = chat_env(tmp_path, turns)
    term = Pty([sys.executable, "-m", "smoke_core.cli", "chat", "--provider", "chat-scripted"], ws, env)
    term.read_until(PROMPT)
    term.send("make a file\n")
    term.read_until("allow once [y]")
    os.killpg(term.proc.pid, signal.SIGINT)
    assert "interrupted" in term.read_until(PROMPT)
    term.send("/cost\n")  # read by the chat's prompt, not by the abandoned question
    assert "cost of this chat so far:" in term.read_until(PROMPT)
    term.send("/exit\n")
    assert term.finish() == 0
    assert not (ws / "out.txt").exists()


EVERYTHING = Path(__file__).resolve().parents[1] / "plugins" / "smoke-mcp" / "tests" / "node" / "node_modules" / \
    "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def _chat_with_everything(tmp_path: Path, turns: list[object]) -> tuple[Path, dict[str, str]]:
    """A workspace and the environment of a scripted chat whose user settings
    start server-everything (trusted); skips without node or the server."""
    pytest.importorskip("smoke_mcp")
    import shutil

    if shutil.which("node") is None or not EVERYTHING.is_file():
        pytest.skip("needs node and @modelcontextprotocol/server-everything (npm ci in plugins/smoke-mcp/tests/node)")
    ws = tmp_path / "ws"
    ws.mkdir()
    env = chat_env(tmp_path, turns, plugins="chat_scripted,mcp")
    user = Path(env["XDG_CONFIG_HOME"]) / "smoke" / "config.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps({"mcp_servers": {"everything": {
        "command": "node", "args": [str(EVERYTHING), "stdio"], "trusted": True}}}))
    return ws, env


@pytest.mark.slow
@pytest.mark.integration
def test_piped_chat_offers_the_prompts_of_running_mcp_servers(tmp_path):
    ws, env = _chat_with_everything(tmp_path, ["hello back", "RECALL"])
    script = "hello\n/help\n/mcp__everything__args-prompt city=Lyon state=Rhône\n/mcp__everything__args-prompt\n/exit\n"
    proc = smoke("chat", "--provider", "chat-scripted", cwd=ws, env=env, input=script, timeout=180)
    out = proc.stdout.replace("\r", "")
    assert proc.returncode == 0, proc.stderr + out
    assert "/mcp__everything__args-prompt" in out  # /help lists the server's prompts after the first turn
    assert "Lyon" in out.split("you said before:", 1)[1]  # the filled-in prompt went to the model
    assert "/mcp__everything__args-prompt: the prompt 'args-prompt' of MCP server 'everything' needs city" in out


@pytest.mark.slow
@pytest.mark.integration
def test_piped_chat_reaches_the_resources_of_running_mcp_servers(tmp_path):
    # turn 1 answers with what the person's messages held (the mention's text attached before the model call);
    # turn 2 has the model read a resource (a template's instance) with read_mcp_resource, turn 3 echoes the result
    read = {"tool_calls": [{"name": "read_mcp_resource",
                            "input": {"server": "everything", "uri": "demo://resource/dynamic/text/7"}}]}
    ws, env = _chat_with_everything(tmp_path, ["RECALL", read, "ECHO_LAST_RESULT"])
    script = "summarise @everything:demo://resource/static/document/architecture.md\nread resource 7\n/exit\n"
    proc = smoke("chat", "--provider", "chat-scripted", cwd=ws, env=env, input=script, timeout=180)
    out = proc.stdout.replace("\r", "")
    assert proc.returncode == 0, proc.stderr + out
    assert "Traceback" not in proc.stderr
    # the @server:uri mention: the resource's text reached the model's request, marked as read from the server
    recalled = out.split("you said before:", 1)[1]
    assert "[resource demo://resource/static/document/architecture.md from MCP server 'everything', " \
           "text/markdown" in recalled, out
    assert "This documentation summarizes the current layout" in recalled, out
    # the model's own read: read_mcp_resource ran without asking, and its result reached the next request
    assert "the answer was:" in out, proc.stderr + out
    assert "Resource 7: This is a plaintext resource" in out.split("the answer was:", 1)[1], out
