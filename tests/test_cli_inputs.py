"""The first hour at the command line (issue 20, the CLI parts of 15):
mistakes are one message and exit 2, never a traceback; crashes leave a
report; the demo never overwrites a person's files; messages use the
interface's words; `smoke providers` / `smoke tools` say what is there; no
empty sessions; images, typed output, cost and `--no-stream` from the
command line."""

from __future__ import annotations

import base64
import json
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .test_chat import chat_env
from .test_cli import Pty, clean_env, smoke

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# ------------------------------------------------------------ bad inputs: one message, exit 2


def _config(text: str) -> Callable[[Path], None]:
    def make(ws: Path) -> None:
        (ws / ".smoke").mkdir(exist_ok=True)
        (ws / ".smoke" / "config.yaml").write_text(text)

    return make


def _user_config(text: str) -> Callable[[Path], None]:
    def make(ws: Path) -> None:
        path = ws.parent / "home" / ".config" / "smoke" / "config.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    return make


def _file(name: str, data: bytes | str) -> Callable[[Path], None]:
    def make(ws: Path) -> None:
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)

    return make


def _nothing(ws: Path) -> None:
    pass


def _core_only(setup: Callable[[Path], None]) -> Callable[[Path], dict[str, str]]:
    """``setup``, run with no plugin loaded (as in the `core` session, where none is installed)."""

    def make(ws: Path) -> dict[str, str]:
        setup(ws)
        return {"SMOKE_LOAD_PLUGINS": ""}

    return make


def _needs(module: str, dist: str) -> tuple[pytest.MarkDecorator, ...]:
    return (pytest.mark.integration, pytest.mark.skipif(not has(module), reason=f"needs {dist}"))


BROKEN_YAML = _config("provider: [unclosed\n")
NEEDS_OPENAI = _needs("smoke_provider_openai", "smoke-provider-openai")
NEEDS_SKILLS = _needs("smoke_skills", "smoke-skills")
NEEDS_MCP = _needs("smoke_mcp", "smoke-mcp")
NEEDS_UI = _needs("smoke_ui", "smoke-ui")
NEEDS_ACP = _needs("smoke_acp", "smoke-acp")
BAD_INPUTS = [
    # (id, args, setup, what the message says)
    ("run-empty-task", ["run", ""], _nothing, "TASK is empty"),
    ("run-no-task-no-terminal", ["run"], _nothing, "TASK is missing"),
    ("tools-missing-workspace", ["tools", "-w", "/nope/nowhere"], _nothing, "does not exist"),
    ("run-missing-workspace", ["run", "-w", "/nope/nowhere", "x"], _nothing, "does not exist"),
    ("run-max-steps-lots", ["run", "x"], _user_config("max_steps: lots\n"), "max_steps: expected a positive integer"),
    ("run-auto-approve-maybe", ["run", "x"], _user_config("auto_approve: maybe\n"), "auto_approve"),
    ("run-unknown-key", ["run", "x"], _user_config("max_step: 3\n"), "did you mean 'max_steps'"),
    # plugin keys: "unknown setting" when the plugin is not loaded (core) ...
    ("run-skills-dir-7-core", ["run", "x"], _core_only(_user_config("skills_dir: 7\n")),
     "unknown setting 'skills_dir'"),
    ("tools-mcp-servers-5-core", ["tools"], _core_only(_user_config("mcp_servers: 5\n")),
     "unknown setting 'mcp_servers'"),
    # ... and the plugin's own typed setting when it is (integration: only there is the plugin installed)
    ("run-skills-dir-7", ["run", "x"], _user_config("skills_dir: 7\n"),
     "skills_dir: expected Path | list[Path] | None (declared", NEEDS_SKILLS),
    ("tools-skills-dir-7", ["tools"], _user_config("skills_dir: 7\n"),
     "(declared by plugin smoke-skills:skills), got 7", NEEDS_SKILLS),
    ("chat-workspace-skills-dir-7", ["chat"], _config("skills_dir: 7\n"),
     "(declared by plugin smoke-skills:skills), got 7", NEEDS_SKILLS),
    ("tools-mcp-servers-5", ["tools"], _user_config("mcp_servers: 5\n"),
     "(declared by plugin smoke-mcp:mcp), got 5", NEEDS_MCP),
    ("run-mcp-servers-5", ["run", "x"], _user_config("mcp_servers: 5\n"),
     "mcp_servers: expected dict[str, MCPServerEntry] | MCPJsonDocument (declared", NEEDS_MCP),
    ("run-workspace-mcp-servers-x-5", ["run", "x"], _config("mcp_servers: {x: 5}\n"),
     "(declared by plugin smoke-mcp:mcp), got {'x': 5}", NEEDS_MCP),
    ("run-broken-yaml", ["run", "x"], BROKEN_YAML, "not valid YAML"),
    ("chat-broken-yaml", ["chat"], BROKEN_YAML, "not valid YAML"),
    ("tools-broken-yaml", ["tools"], BROKEN_YAML, "not valid YAML"),
    ("permissions-broken-yaml", ["permissions"], BROKEN_YAML, "not valid YAML"),
    ("demo-broken-yaml", ["demo", "--yes"], _user_config("provider: [unclosed\n"), "not valid YAML"),
    ("run-unknown-provider-prefix", ["run", "-m", "nosuch:foo", "x"], _nothing, "provider 'nosuch'"),
    ("run-unknown-provider", ["run", "--provider", "nope", "x"], _nothing, "unknown provider 'nope' (--provider)"),
    ("run-max-steps-zero", ["run", "--max-steps", "0", "x"], _nothing, "option --max-steps: expected a positive integer"),
    ("run-image-missing", ["run", "--provider", "demo", "--image", "nope.png", "x"], _nothing, "--image nope.png"),
    ("run-image-not-an-image", ["run", "--provider", "demo", "--image", "notes.txt", "x"],
     _file("notes.txt", "hello"), "not a PNG, JPEG, GIF or WebP image"),
    ("run-schema-missing", ["run", "--provider", "demo", "--output-schema", "nope.json", "x"], _nothing,
     "--output-schema: no file nope.json"),
    ("run-schema-not-json", ["run", "--provider", "demo", "--output-schema", "s.json", "x"],
     _file("s.json", "{type: object"), "is not valid JSON"),
    ("run-schema-invalid", ["run", "--provider", "demo", "--output-schema", "s.json", "x"],
     _file("s.json", '{"type": 5}'), "is not a valid JSON Schema"),
    ("run-no-key", ["run", "--provider", "openai", "x"], _nothing, "OPENAI_API_KEY is not set", NEEDS_OPENAI),
    ("chat-no-key", ["chat", "--provider", "openai"], _nothing, "OPENAI_API_KEY is not set", NEEDS_OPENAI),
    ("sessions-show-missing", ["sessions", "show", "nope"], _nothing, "smoke sessions"),
    ("sessions-doctor-from-missing", ["sessions", "doctor", "--from", "/nope/db"], _nothing, "is not a file"),
    ("trust-a-file", ["trust", "notes.txt"], _file("notes.txt", "x"), "is a file"),
    ("trust-missing", ["trust", "nope"], _nothing, "is not a folder"),
    ("demo-into-a-file", ["demo", "--yes", "-w", "notes.txt"], _file("notes.txt", "x"), "is a file"),
    ("demo-into-someones-folder", ["demo", "--yes", "-w", "mine"], _file("mine/README.md", "my notes"),
     "is not empty and is not a previous demo folder"),
    ("unknown-command", ["nosuchcommand"], _nothing, "No such command"),
    ("unknown-option", ["providers", "--bogus"], _nothing, "No such option"),
    ("providers-extra-argument", ["providers", "openai"], _nothing, "unexpected extra argument (openai)"),
    ("doctor-option-typo", ["doctor", "--jsn"], _nothing, "Did you mean '--json'?"),
    ("plugins-option-typo", ["plugins", "--jsn"], _nothing, "Did you mean '--json'?"),
    ("plugin-new-bad-name", ["plugin", "new", "Bad/Name"], _nothing, "is not a package name"),
    ("plugin-unknown-subcommand", ["plugin", "nosuch"], _nothing, "No such command 'nosuch'"),
    ("install-no-name", ["install"], _nothing, "name at least one package"),
    ("uninstall-no-name", ["uninstall"], _nothing, "name at least one package"),
    ("batch-missing-tasks-file", ["batch", "nope.jsonl"], _nothing, "the tasks file nope.jsonl does not exist"),
    # commands from plugins
    ("serve-port-out-of-range", ["serve", "--port", "70000"], _nothing, "70000 is not in the range", NEEDS_UI),
    ("serve-missing-workspace", ["serve", "-p", "0", "-w", "/nope/nowhere"], _nothing, "is not a folder", NEEDS_UI),
    ("serve-broken-yaml", ["serve", "-p", "0"], BROKEN_YAML, "not valid YAML", NEEDS_UI),
    ("serve-unknown-provider", ["serve", "-p", "0", "--provider", "nope"], _nothing,
     "unknown provider 'nope' (--provider)", NEEDS_UI),
    ("serve-unknown-provider-prefix", ["serve", "-p", "0", "-m", "nosuch:foo"], _nothing,
     "provider 'nosuch' (from --model nosuch:foo) is unknown", NEEDS_UI),
    ("acp-unwritable-log-file", ["acp", "--log-file", "/nope/dir/acp.log"], _nothing, "cannot write /nope/dir/acp.log",
     NEEDS_ACP),
    ("acp-bad-log-level", ["acp", "--log-level", "loud"], _nothing, "'loud' is not one of", NEEDS_ACP),
    ("mcp-unknown-subcommand", ["mcp", "nosuch"], _nothing, "No such command 'nosuch'", NEEDS_MCP),
    ("mcp-prompt-bad-argument", ["mcp", "prompt", "everything", "args-prompt", "Lyon"], _nothing,
     "'Lyon': give arguments as NAME=VALUE", NEEDS_MCP),
    ("mcp-tools-unknown-server", ["mcp", "tools", "nosuch"], _nothing, "no MCP server named 'nosuch' is configured",
     NEEDS_MCP),
    ("skills-missing-workspace", ["skills", "-w", "/nope/nowhere"], _nothing, "is not a folder", NEEDS_SKILLS),
]


@pytest.mark.slow
@pytest.mark.parametrize("args,setup,message",
                         [pytest.param(*row[1:4], id=row[0], marks=row[4] if len(row) > 4 else ()) for row in BAD_INPUTS])
def test_a_mistake_is_one_message_and_exit_2_never_a_traceback(tmp_path, args, setup, message):
    ws = tmp_path / "ws"
    ws.mkdir()
    extra = setup(ws) or {}
    proc = smoke(*args, cwd=ws, env=clean_env(tmp_path, **extra), input="")
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output
    assert proc.returncode == 2, output
    assert message in output, output
    assert not (tmp_path / "home" / ".state" / "smoke" / "crashes").exists()  # a mistake is not a crash


@pytest.mark.integration
@pytest.mark.slow
def test_a_malformed_mcp_json_is_named_and_the_listing_goes_on(tmp_path):
    if not has("smoke_mcp"):
        pytest.skip("needs smoke-mcp")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".mcp.json").write_text('{"mcpServers": {')
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS="mcp", COLUMNS="200")
    # `smoke tools` lists and exits 0; `smoke mcp list` lists too, and its exit status 1 tells a script
    for args, status in ((["tools"], 0), (["tools", "--json"], 0), (["mcp", "list"], 1), (["mcp", "list", "--json"], 1)):
        proc = smoke(*args, cwd=ws, env=env)
        output = proc.stdout + proc.stderr
        assert "Traceback" not in output
        assert proc.returncode == status, output
        assert ".mcp.json is not valid JSON" in output, output
    assert json.loads(smoke("mcp", "list", "--json", cwd=ws, env=env).stdout) == []  # the listing, still printed
    listing = json.loads(smoke("tools", "--json", cwd=ws, env=env).stdout)
    assert any(".mcp.json is not valid JSON" in w for w in listing["warnings"])


def write_crashing_plugin(root: Path) -> Path:
    info = root / "smoke_crashing-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: smoke-crashing\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[smoke]\ncrashing = smoke_crashing\n")
    (root / "smoke_crashing.py").write_text(textwrap.dedent(
        """
        import click
        from smoke_core import hookimpl

        @hookimpl
        def register_commands(cli):
            @cli.command("boom")
            def boom():
                "Fail like a bug would."
                {}["missing key " + "sk-" + "secret0123456789abcdef"]
        """
    ))
    return root


@pytest.mark.slow
def test_an_unexpected_error_is_one_line_and_a_crash_report(tmp_path):
    plug = write_crashing_plugin(tmp_path / "plug")
    env = clean_env(tmp_path, PYTHONPATH=str(plug), SMOKE_LOAD_PLUGINS="crashing",
                    LEAKY_API_KEY="sk-secret0123456789abcdef")
    proc = smoke("boom", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("smoke: unexpected error (KeyError")
    assert "--debug" in lines[0]
    path = Path(lines[0].split("details in ", 1)[1].split(" (run again", 1)[0])
    assert path.parent == tmp_path / "home" / ".state" / "smoke" / "crashes"
    report = path.read_text()
    assert "Traceback" in report and "KeyError" in report and "smoke boom" in report
    assert "smoke-crashing" in report  # the installed plugins are listed
    assert "sk-secret0123456789abcdef" not in report  # secrets from the environment are masked
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    # --debug shows the traceback instead
    debug = smoke("--debug", "boom", cwd=tmp_path, env=env)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "KeyError" in debug.stderr


# ------------------------------------------------------------ smoke demo -w


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_demo_refuses_a_folder_with_someones_files_and_leaves_it_byte_identical(tmp_path):
    mine = tmp_path / "mine"
    (mine / "tests").mkdir(parents=True)
    (mine / "README.md").write_text("my own readme\n")
    (mine / "tests" / "test_core.py").write_text("def test_mine():\n    assert True\n")
    before = snapshot(mine)
    proc = smoke("demo", "--yes", "-w", str(mine), cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 2
    assert "is not empty and is not a previous demo folder" in proc.stderr
    assert "Name an empty or new folder" in proc.stderr and str(mine / "smoke-demo") in proc.stderr
    assert snapshot(mine) == before
    assert sorted(p.name for p in mine.iterdir()) == ["README.md", "tests"]


def test_demo_copies_into_an_empty_or_previous_demo_folder(tmp_path):
    from smoke_core.demo import copy_sample_project, is_previous_demo

    empty = tmp_path / "empty"
    empty.mkdir()
    project = copy_sample_project(empty)
    assert (project / "stats" / "core.py").is_file() and is_previous_demo(project)
    (project / "stats" / "core.py").write_text("changed by the last demo run\n")
    copy_sample_project(project)  # again: the sample is restored
    assert "changed" not in (project / "stats" / "core.py").read_text()


# ------------------------------------------------------------ the interface's words


@pytest.mark.integration
@pytest.mark.skipif(not has("smoke_provider_openai"), reason="needs smoke-provider-openai")
def test_an_unknown_provider_prefix_names_it_and_the_installed_ones(tmp_path):
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS="provider_openai", OPENAI_API_KEY="sk-test")
    proc = smoke("run", "-m", "nosuch:foo", "x", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert "provider 'nosuch' (from --model nosuch:foo) is unknown" in proc.stderr
    assert "Installed providers: " in proc.stderr and "openai" in proc.stderr and "nvidia" in proc.stderr
    assert "no provider given" not in proc.stderr


@pytest.mark.integration
@pytest.mark.skipif(not has("smoke_provider_openai"), reason="needs smoke-provider-openai")
def test_cli_messages_use_flags_not_keyword_arguments(tmp_path):
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS="provider_openai")
    proc = smoke("run", "--provider", "openai-compatible", "x", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert "--base-url" in proc.stderr and "base_url=" not in proc.stderr
    proc = smoke("run", "--provider", "openai", "x", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert "OPENAI_API_KEY is not set" in proc.stderr and "api_key=" not in proc.stderr
    assert not (tmp_path / ".smoke" / "sessions.db").exists() or "ses_" not in smoke(
        "sessions", cwd=tmp_path, env=env).stdout


def test_cli_words():
    from smoke_core.cli.describe import cli_words

    assert cli_words("Set OPENAI_API_KEY or pass api_key=.") == "Set OPENAI_API_KEY."
    assert cli_words("provider 'x' needs base_url= (the root)") == "provider 'x' needs --base-url (the root)"
    assert cli_words("pass provider='openai', model='a:b', or a provider object.") == (
        "pass --provider openai, --model a:b.")
    assert cli_words("create it with max_steps=5") == "create it with --max-steps 5"
    assert cli_words("default_model=x stays; so does wait...") == "default_model=x stays; so does wait..."


# ------------------------------------------------------------ finding things


@pytest.mark.integration
@pytest.mark.skipif(not has("smoke_provider_openai") or not has("smoke_provider_anthropic"),
                    reason="needs both provider plugins")
def test_smoke_providers_lists_providers_and_presets(tmp_path):
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS="provider_openai,provider_anthropic", NVIDIA_API_KEY="nv-test",
                    OLLAMA_BASE_URL="http://127.0.0.1:9/v1", COLUMNS="80")
    proc = smoke("providers", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert {"openai", "anthropic", "nvidia", "groq", "ollama", "openai-compatible", "demo"} <= set(rows)
    assert rows["openai"]["env_var"] == "OPENAI_API_KEY" and rows["openai"]["base_url"] == "https://api.openai.com/v1"
    assert rows["anthropic"]["base_url"] == "https://api.anthropic.com"
    assert rows["nvidia"]["key_set"] is True and rows["openai"]["key_set"] is False
    assert rows["ollama"]["base_url"] == "http://127.0.0.1:9/v1"  # what it would really use
    assert rows["openai-compatible"]["base_url"] is None and rows["openai-compatible"]["base_url_note"] == "set --base-url"
    assert "base_url=" not in rows["openai-compatible"]["description"]
    text = smoke("providers", cwd=tmp_path, env=env).stdout
    assert "nvidia · key NVIDIA_API_KEY (set)" in text and "https://integrate.api.nvidia.com/v1" in text
    assert max(len(line) for line in text.splitlines()) <= 80


MCP_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("cli-test")

@server.tool()
def shout(text: str) -> str:
    \"\"\"Upper-case text.\"\"\"
    return text.upper()

server.run()
"""


@pytest.mark.integration
@pytest.mark.slow
def test_smoke_tools_lists_mcp_tools_and_names_servers_it_did_not_start(tmp_path):
    if not has("smoke_mcp"):
        pytest.skip("needs smoke-mcp")
    server = tmp_path / "server.py"
    server.write_text(MCP_SERVER)
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "repo-server-started"
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": {
        "command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').close()"]}}}))
    user = tmp_path / "home" / ".config" / "smoke" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text(f"mcp_servers:\n  mine:\n    command: {sys.executable}\n    args: [{server}]\n    trusted: true\n")
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS="mcp", COLUMNS="80")
    proc = smoke("tools", "--json", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    tools = {t["name"]: t for t in listing["tools"]}
    assert tools["mine__shout"]["group"] == "mcp"
    assert [n["name"] for n in listing["not_started"]] == ["repo"]
    assert "not started yet" in listing["not_started"][0]["status"]
    assert not marker.exists()  # the repository's server never ran
    assert sorted(p.name for p in ws.iterdir()) == [".mcp.json"]  # nothing left in the workspace
    text = smoke("tools", cwd=ws, env=env).stdout
    assert "mine__shout" in text and "mcp server 'repo': not started yet" in " ".join(text.split())


# ------------------------------------------------------------ sessions that never started


@pytest.mark.integration
@pytest.mark.skipif(not has("smoke_provider_openai"), reason="needs smoke-provider-openai")
def test_a_run_refused_before_the_model_answers_leaves_no_session(tmp_path, openai_server):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS="provider_openai", OPENAI_COMPATIBLE_API_KEY="k", COLUMNS="200")
    openai_server.status = 401
    proc = smoke("run", "--provider", "openai-compatible", "--base-url", openai_server.url + "/v1", "-m", "m",
                 "hello", cwd=ws, env=env)
    assert proc.returncode == 1
    assert "provider_auth" in proc.stderr and "api_key=" not in proc.stderr
    assert "session: none kept" in proc.stderr
    assert "ses_" not in smoke("sessions", cwd=ws, env=env).stdout


# ------------------------------------------------------------ a real OpenAI-compatible server on 127.0.0.1


class OpenAIServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict]] = []
        self.status = 200
        self.httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.httpd is not None
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    state = OpenAIServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            state.requests.append((self.path, body))
            if state.status != 200 or self.path != "/v1/chat/completions":
                status = state.status if state.status != 200 else 404
                payload = json.dumps({"error": {"message": f"nothing at {self.path}"}}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
            if body.get("stream"):
                chunks = [
                    {"id": "c1", "object": "chat.completion.chunk", "model": body["model"],
                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": "streamed hello"},
                                  "finish_reason": None}]},
                    {"id": "c1", "object": "chat.completion.chunk", "model": body["model"],
                     "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    {"id": "c1", "object": "chat.completion.chunk", "model": body["model"], "choices": [],
                     "usage": usage},
                ]
                data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                payload, kind = data.encode(), "text/event-stream"
            else:
                payload = json.dumps({
                    "id": "c1", "object": "chat.completion", "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "whole hello"},
                                 "finish_reason": "stop"}],
                    "usage": usage,
                }).encode()
                kind = "application/json"
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    state.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=state.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.httpd.shutdown()
        state.httpd.server_close()
        thread.join()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not has("smoke_provider_openai"), reason="needs smoke-provider-openai")
def test_streaming_is_turned_off_by_flag_and_by_settings(tmp_path, openai_server):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS="provider_openai", COLUMNS="200")
    base = ["run", "--provider", "openai-compatible", "--base-url", openai_server.url + "/v1", "-m", "local-model"]
    proc = smoke(*base, "hello", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert openai_server.requests[-1][1]["stream"] is True and "streamed hello" in proc.stdout
    proc = smoke(*base, "--no-stream", "hello", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert openai_server.requests[-1][1]["stream"] is False and "whole hello" in proc.stdout
    user = tmp_path / "home" / ".config" / "smoke" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("stream: false\n")
    proc = smoke(*base, "hello", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert openai_server.requests[-1][1]["stream"] is False
    # an untrusted folder may turn it off too (it cannot hurt)
    user.write_text("")
    (ws / ".smoke").mkdir(exist_ok=True)
    (ws / ".smoke" / "config.yaml").write_text("stream: false\n")
    proc = smoke(*base, "hello", cwd=ws, env=env)
    assert openai_server.requests[-1][1]["stream"] is False and "ignored settings" not in proc.stderr
    # the summary line: tokens always, no price for a local server
    assert "12 in / 3 out tokens · unknown price" in proc.stderr


@pytest.mark.integration
@pytest.mark.skipif(not has("smoke_provider_openai"), reason="needs smoke-provider-openai")
def test_a_404_shows_the_url_requested_and_suggests_v1(tmp_path, openai_server):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = clean_env(tmp_path, SMOKE_LOAD_PLUGINS="provider_openai", COLUMNS="300")
    proc = smoke("run", "--provider", "openai-compatible", "--base-url", openai_server.url, "-m", "m", "hello",
                 cwd=ws, env=env)
    assert proc.returncode == 1
    out = " ".join(proc.stderr.split())
    assert f"the server answered 404 Not Found for POST {openai_server.url}/chat/completions" in out
    assert f"try --base-url {openai_server.url}/v1" in out
    assert openai_server.requests[-1][0] == "/chat/completions"
    assert "session: none kept" in proc.stderr


# ------------------------------------------------------------ images, typed output, cost


def scripted(tmp_path, turns, plugins="chat_scripted"):
    return chat_env(tmp_path, turns, plugins=plugins)


def test_run_image_reaches_the_model(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "shot.png").write_bytes(PNG_1x1)
    turns = ["SAY_PARTS"]
    proc = smoke("run", "--provider", "chat-scripted", "--image", "shot.png", "--image", "shot.png",
                 "what is this?", cwd=ws, env=scripted(tmp_path, turns))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "parts: text, image/png, image/png" in proc.stdout


def test_run_output_schema_prints_the_validated_json(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "schema.json").write_text(json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Count",
        "type": "object", "properties": {"files": {"type": "integer", "minimum": 0}, "note": {"type": "string"}},
        "required": ["files"], "additionalProperties": False,
    }))
    turns = [
        {"tool_calls": [{"name": "final_result", "input": {"files": "many"}}]},  # refused: not an integer
        {"tool_calls": [{"name": "final_result", "input": {"files": 3, "note": "ok"}}]},
    ]
    proc = smoke("run", "--provider", "chat-scripted", "--output-schema", "schema.json", "count the files",
                 cwd=ws, env=scripted(tmp_path, turns))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == {"files": 3, "note": "ok"}  # stdout is only the JSON
    assert "✔ completed" in proc.stderr and "files" in proc.stderr  # the run is shown on stderr


def test_run_output_schema_that_is_not_an_object(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "schema.json").write_text(json.dumps({"type": "array", "items": {"type": "string"}, "minItems": 2}))
    turns = [
        {"tool_calls": [{"name": "final_result", "input": {"response": ["only one"]}}]},
        {"tool_calls": [{"name": "final_result", "input": {"response": ["a", "b"]}}]},
    ]
    proc = smoke("run", "--provider", "chat-scripted", "--output-schema", "schema.json", "list two",
                 cwd=ws, env=scripted(tmp_path, turns))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == ["a", "b"]
    assert "too short" in proc.stderr  # the first attempt was refused with the schema's own words


def test_run_summary_shows_tokens_and_dollars(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = [{"text": "done", "usage": {"input_tokens": 1_000_000, "output_tokens": 1_000_000}}]
    proc = smoke("run", "--provider", "chat-scripted", "go", cwd=ws, env=scripted(tmp_path, turns))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from genai_prices import Usage, calc_price

    price = float(calc_price(Usage(input_tokens=1_000_000, output_tokens=1_000_000), "gpt-4o-mini",
                             provider_id="openai").total_price)
    assert f"✔ completed · 1 step · 1,000,000 in / 1,000,000 out tokens · ${price:.2f}" in proc.stderr


def test_usage_summary_words():
    from smoke_core.wire.pricing import usage_summary

    assert usage_summary({"input_tokens": 10, "output_tokens": 2, "cost_usd": None}) == (
        "10 in / 2 out tokens · unknown price")
    assert usage_summary({"input_tokens": 1200, "output_tokens": 30, "cache_read_tokens": 1000,
                          "cost_usd": 0.000045}) == "1,200 in / 30 out tokens (1,000 cached) · $0.000045"
    assert usage_summary({"input_tokens": 0, "output_tokens": 0, "cost_usd": None}) == "0 in / 0 out tokens"
    assert usage_summary({"input_tokens": 5, "output_tokens": 5, "cost_usd": 1.5}).endswith("· $1.50")


# ------------------------------------------------------------ subagents and the sandbox on the cards


@pytest.mark.integration
@pytest.mark.slow
def test_subagent_cards_are_nested_under_their_task_card_with_the_sandbox_badge(tmp_path):
    if not (has("smoke_tools_agent") and has("smoke_tools_terminal")):
        pytest.skip("needs smoke-tools-agent and smoke-tools-terminal")
    from smoke_core import sandbox

    ws = tmp_path / "ws"
    ws.mkdir()
    turns = [
        {"tool_calls": [{"name": "task", "input": {"description": "look around", "prompt": "run echo"}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": "echo from-the-child"}}]},  # the child
        "child says: done",                                                                   # the child ends
        "parent says: all done",
    ]
    env = scripted(tmp_path, turns, plugins="chat_scripted,tools_agent,tools_terminal")
    proc = smoke("run", "--provider", "chat-scripted", "--yes", "--transcript", "delegate", cwd=ws, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    task_line = next(i for i, ln in enumerate(lines) if "🤖 Task" in ln)
    child_card = next(i for i, ln in enumerate(lines) if "Run command" in ln)
    assert task_line < child_card
    assert lines[task_line].startswith("🤖") and lines[child_card].startswith("  ")  # nested one level
    assert any(ln.startswith("  ↳ subagent done") for ln in lines)
    assert any(ln.startswith("  child says: done") for ln in lines)
    assert proc.stdout.count("✔ completed") == 1 and "parent says: all done" in proc.stdout
    if sandbox.status().works:
        result = next(ln for ln in lines[child_card:] if "echo from-the-child" in ln and "✓" in ln)
        assert "🔒 sandboxed" in result and result.startswith("    ")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not has("smoke_tools_terminal"), reason="needs smoke-tools-terminal")
def test_pty_approval_with_output_schema_asks_on_stderr(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "schema.json").write_text('{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}')
    turns = [
        {"tool_calls": [{"name": "run_command", "input": {"command": "echo approved > out.txt"}}]},
        {"tool_calls": [{"name": "final_result", "input": {"ok": True}}]},
    ]
    env = scripted(tmp_path, turns, plugins="chat_scripted,tools_terminal")
    term = Pty([sys.executable, "-m", "smoke_core.cli", "run", "--provider", "chat-scripted", "--output-schema",
                "schema.json", "go"], ws, env)
    term.read_until("allow once [y]")
    term.send("y\n")
    assert term.finish() == 0
    assert '"ok": true' in term.buffer
    assert (ws / "out.txt").read_text().strip() == "approved"
