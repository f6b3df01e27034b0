"""Real hook scripts (Python, run as subprocesses) driven by real runs with a
scripted model. Every test is kept away from the person's real settings,
home folder and installed plugins.

``hook-input.schema.json`` is a JSON Schema of the stdin object per event,
written from Claude Code's hooks reference (see its ``description``).
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from smoke_core import ToolError, create_agent, tool
from smoke_core.plugin import ClaudeDialect, ToolContext
from smoke_core.testing import Pty, ScriptedProvider, isolate_settings  # noqa: F401 (Pty: for the tests)

HERE = Path(__file__).resolve().parent
SCHEMA = json.loads((HERE / "hook-input.schema.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    isolate_settings(monkeypatch, home / "settings")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SMOKE_LOAD_PLUGINS", "")
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLAUDE_PROJECT_DIR", "SMOKE_PROJECT_DIR"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def home() -> Path:
    return Path(os.environ["HOME"])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def validate_stdin(data: dict[str, Any]) -> None:
    """Fails when ``data`` is not a stdin object of Claude Code's contract."""
    import jsonschema

    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)


# ---------------------------------------------------------------- test tools (the shapes of the real ones)


@tool(name="run_command", permission_key="command", kind="execute")
def run_command(command: str, timeout_ms: int = 1000) -> str:
    """Run a command (a test stand-in that only reports what it was given)."""
    return f"ran: {command}"


run_command.annotations.claude = ClaudeDialect(name="Bash", input={"command": "command", "timeout": "timeout_ms"})


@tool(name="write_file", permission_key="path", kind="edit")
def write_file(path: str, content: str, ctx: ToolContext) -> str:
    """Write a file in the workspace."""
    target = ctx.workspace.resolve(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return f"wrote {path}"


write_file.annotations.claude = ClaudeDialect(name="Write", input={"file_path": "path", "content": "content"},
                                              paths=["file_path"])


@tool(name="read_file", read_only=True, permission_key="path", kind="read")
def read_file(path: str, ctx: ToolContext) -> str:
    """Read a file in the workspace."""
    return ctx.workspace.resolve(path).read_text(encoding="utf-8")


read_file.annotations.claude = ClaudeDialect(name="Read", input={"file_path": "path"}, paths=["file_path"])


@tool(name="explode", read_only=True)
def explode(why: str) -> str:
    """Always fails."""
    raise ToolError(f"exploded: {why}")


@tool(name="task", read_only=True)
async def task(description: str, prompt: str, agent: str, ctx: ToolContext) -> str:
    """Run a subagent."""
    result = await ctx.run_subagent(prompt, tools=["read_file"])
    return result.text or "(nothing)"


task.annotations.claude = ClaudeDialect(name="Task", aliases=["Agent"],
                                        input={"description": "description", "prompt": "prompt",
                                               "subagent_type": "agent"})

TOOLS = [run_command, write_file, read_file, explode, task]


def make_agent(workspace: Path, turns: list[Any], **kw: Any) -> tuple[Any, ScriptedProvider]:
    import smoke_hooks

    provider = ScriptedProvider(turns)
    kw.setdefault("tools", TOOLS)
    agent = create_agent(workspace, provider=provider, autoload_plugins=False,
                         plugins=[smoke_hooks, *kw.pop("plugins", [])], **kw)
    return agent, provider


def call(name: str, **input: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": input}]}


# ---------------------------------------------------------------- hook scripts

_SCRIPT = '''\
#!{python}
"""A hook written the way people write them: read the event on stdin, answer."""
import json, os, signal, subprocess, sys, time

data = json.load(sys.stdin)
event = data["hook_event_name"]
with open({record!r}, "a") as f:
    f.write(json.dumps({{"stdin": data, "env": {{k: v for k, v in os.environ.items()
                                               if k.endswith("_KEY") or k.endswith("PROJECT_DIR")}}}}) + "\\n")
plans = json.load(open({plan!r}))
plan = plans.get(event, plans.get("*", {{}}))
if isinstance(plan, list):
    count_file = {record!r} + "." + event + ".n"
    n = int(open(count_file).read()) if os.path.exists(count_file) else 0
    open(count_file, "w").write(str(n + 1))
    plan = plan[min(n, len(plan) - 1)]
if plan.get("unless_active") and data.get("stop_hook_active"):
    sys.exit(0)
if plan.get("spawn"):
    child = subprocess.Popen(["sleep", "300"])
    open(plan["spawn"], "w").write(str(child.pid))
if plan.get("wait_for"):
    open(plan["touch"], "w").write("here")
    while not os.path.exists(plan["wait_for"]):
        time.sleep(0.01)
if plan.get("flood"):
    chunk = "x" * 65536
    while True:
        sys.stdout.write(chunk)
        sys.stdout.flush()
if plan.get("sleep"):
    time.sleep(plan["sleep"])
if plan.get("kill"):
    os.kill(os.getpid(), getattr(signal, plan["kill"]))
out = plan.get("stdout")
if out is not None:
    sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
if plan.get("stderr"):
    sys.stderr.write(plan["stderr"])
sys.exit(plan.get("exit", 0))
'''


class Hooks:
    """Writes hook scripts and reads what they were given."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def script(self, name: str = "hook", plans: dict[str, Any] | None = None) -> Path:
        record = self.root / f"{name}.jsonl"
        plan = self.root / f"{name}.plan.json"
        plan.write_text(json.dumps(plans or {}), encoding="utf-8")
        path = self.root / f"{name}.py"
        path.write_text(_SCRIPT.format(python=sys.executable, record=str(record), plan=str(plan)), encoding="utf-8")
        path.chmod(0o755)
        return path

    def seen(self, name: str = "hook") -> list[dict[str, Any]]:
        record = self.root / f"{name}.jsonl"
        if not record.exists():
            return []
        return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]

    def events(self, name: str = "hook") -> list[str]:
        return [r["stdin"]["hook_event_name"] for r in self.seen(name)]


@pytest.fixture
def hooks(tmp_path: Path) -> Hooks:
    return Hooks(tmp_path / "hooks")


def entry(command: str | Path, matcher: str | None = None, **handler: Any) -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": str(command), **handler}]}
    if matcher is not None:
        group["matcher"] = matcher
    return group


def config(*events: str, command: str | Path, matcher: str | None = None, **handler: Any) -> dict[str, Any]:
    return {e: [entry(command, matcher, **handler)] for e in events}


def write_yaml(path: Path, data: dict[str, Any]) -> Path:
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def answer_prompts(agent: Any, answer: str = "allow") -> list[dict[str, Any]]:
    asked: list[dict[str, Any]] = []

    def on_required(event: Any) -> None:
        asked.append(event.data)
        agent.resolve_permission(event.data["tool_call_id"], answer)

    agent.on("permission.required", on_required)
    return asked


def collect(agent: Any, *types: str) -> list[Any]:
    events: list[Any] = []
    for t in types:
        agent.on(t, events.append)
    return events


def last_result(provider: ScriptedProvider, i: int = 1) -> dict[str, Any]:
    return provider.requests[i].messages[-1]["content"][0]


def texts(block: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in block["content"])


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip()


Factory = Callable[..., Any]


# ---------------------------------------------------------------- the smoke command, in a subprocess and a pty


def write_provider_plugin(root: Path) -> Path:
    """A plugin distribution adding provider ``echo-scripted``: each reply says
    what the model got as the person's last message (``the model got: ...``)."""
    info = root / "smoke_echo_scripted-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: smoke-echo-scripted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[smoke]\necho_scripted = smoke_echo_scripted\n")
    (root / "smoke_echo_scripted.py").write_text(dedent('''
        from smoke_core import hookimpl

        def _reply(request):
            last = [m for m in request.messages if m["role"] == "user"][-1]
            text = " ".join(b.get("text", "") for b in last["content"] if b.get("type") == "text")
            return "the model got: " + text.replace("\\n", " | ")

        @hookimpl
        def register_providers(register):
            def factory(**kw):
                from smoke_core.testing import ScriptedProvider
                return ScriptedProvider([_reply] * 50, model=kw.get("model") or "echo-1")
            register("echo-scripted", factory, default_model="echo-1")
    '''))
    return root


def smoke_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    plugdir = tmp_path / "plug"
    if not plugdir.exists():
        write_provider_plugin(plugdir)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "SMOKE_LOAD_PLUGINS"}
    env.update(PYTHONPATH=str(plugdir), SMOKE_LOAD_PLUGINS="hooks,echo_scripted", COLUMNS="200", TERM="xterm",
               PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def smoke(*args: str, cwd: Path, env: dict[str, str], input: str | None = None) -> Any:
    import subprocess

    return subprocess.run([sys.executable, "-m", "smoke_core.cli", *args], cwd=cwd, env=env, input=input,
                          capture_output=True, text=True, timeout=120)
