"""What an MCP server asks of Smoke, against the real test server (a
subprocess speaking MCP over stdio, on both protocol generations):
elicitation through the ask_user pause, sampling through the agent's own
model after a person approved it, roots, clientInfo."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import smoke_mcp

from smoke_core import create_agent, hookimpl
from smoke_core.plugin import FormError
from smoke_core.testing import ScriptedProvider

HERE = Path(__file__).parent
TEST_SERVER = str(HERE / "smoke_mcp_test_server.py")
PROTOCOLS = ["auto", "legacy"]  # auto negotiates 2026-07-28 with this server; legacy is the 2025 handshake


def _server(protocol: str = "auto", **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [TEST_SERVER], "trusted": True, "protocol": protocol, **extra}


def _call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": f"t__{tool}", "input": args}]}


class Recorder:
    def __init__(self, agent: Any) -> None:
        self.events: list[Any] = []
        agent.on_any(self.events.append)

    def of(self, type: str) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.type == type]

    def result(self, tool: str) -> dict[str, Any]:
        return next(d for d in self.of("tool.completed") if d["tool_name"] == f"t__{tool}")

    def text(self, tool: str) -> str:
        return "".join(b.get("text", "") for b in self.result(tool)["content"])

    def warnings(self) -> list[str]:
        return [d["error"]["message"] for d in self.of("run.warning")]


def _agent(tmp_path: Path, turns: list[Any], protocol: str = "auto", *, plugins: tuple[Any, ...] = (),
           server: dict[str, Any] | None = None, **kw: Any) -> tuple[Any, ScriptedProvider]:
    provider = ScriptedProvider(turns)
    if "auto_approve" not in kw:
        kw.setdefault("permission", "allow-all")  # the server's tools run without asking: what is asked is the server's
    agent = create_agent(tmp_path, provider=provider, autoload_plugins=False, plugins=[smoke_mcp, *plugins],
                         mcp_servers={"t": server or _server(protocol)}, **kw)
    return agent, provider


# ---------------------------------------------------------------- elicitation


@pytest.mark.slow
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_form_reaches_the_person_through_ask_user_and_defaults_are_applied(tmp_path: Path,
                                                                                     protocol: str) -> None:
    agent, _ = _agent(tmp_path, [_call("order_pizza"), "ordered"], protocol)
    rec = Recorder(agent)
    agent.on("ask_user.required", lambda e: agent.respond_form(e.data["tool_call_id"], {"name": "Ann"}))
    async with agent:
        result = await agent.run("order a pizza")
    assert result.status == "completed"
    asked = rec.of("ask_user.required")
    assert len(asked) == 1 and asked[0]["question"] == "MCP server 't' asks: Which pizza do you want?"
    form = asked[0]["form"]
    assert form["required"] == ["name"] and form["properties"]["size"]["enum"] == ["small", "large"]
    # the person typed only the name: the schema's defaults fill in the rest, checked by the server's own model
    assert rec.text("order_pizza") == 'ordered {"extra_cheese": false, "name": "Ann", "size": "large", "slices": 8}'
    assert rec.of("ask_user.response")[0]["action"] == "accept"


@pytest.mark.slow
async def test_a_declined_form_and_a_form_nobody_can_answer(tmp_path: Path) -> None:
    agent, _ = _agent(tmp_path, [_call("order_pizza"), "no pizza"])
    rec = Recorder(agent)
    agent.on("ask_user.required", lambda e: agent.respond_form(e.data["tool_call_id"], None))
    async with agent:
        await agent.run("order a pizza")
    assert rec.text("order_pizza") == "no order (decline)"

    # the Python API without a listener for questions: nobody can answer, so the form is declined at once
    alone = create_agent(tmp_path, provider=ScriptedProvider([_call("order_pizza"), "none"]), autoload_plugins=False,
                         plugins=[smoke_mcp], mcp_servers={"t": _server()}, permission="allow-all")
    results: list[Any] = []
    alone.on("tool.completed", results.append)
    async with alone:
        result = await alone.run("order a pizza")
    assert result.status == "completed"
    assert "no order (decline)" in json.dumps(results[0].data["content"])


@pytest.mark.slow
async def test_an_answer_that_does_not_fit_the_form_is_refused_and_can_be_given_again(tmp_path: Path) -> None:
    agent, _ = _agent(tmp_path, [_call("order_pizza"), "ordered"])
    rec = Recorder(agent)
    problems: list[str] = []

    def answer(event: Any) -> None:
        call_id = event.data["tool_call_id"]
        try:
            agent.respond_form(call_id, {"name": "Bo", "slices": 99, "size": "huge"})
        except FormError as exc:
            problems.append(str(exc))
            agent.respond_form(call_id, {"name": "Bo", "slices": 6.0})  # 6.0 is the whole number 6

    agent.on("ask_user.required", answer)
    async with agent:
        await agent.run("order a pizza")
    assert problems and "'Slices' (slices) must be at most 12" in problems[0]
    assert "'Size' (size) must be one of 'small', 'large'" in problems[0]
    assert rec.text("order_pizza") == 'ordered {"extra_cheese": false, "name": "Bo", "size": "large", "slices": 6}'


@pytest.mark.slow
async def test_a_form_smoke_cannot_show_is_declined_with_one_message_and_the_run_goes_on(tmp_path: Path) -> None:
    agent, _ = _agent(tmp_path, [_call("ask_bad_form"), "went on"], "legacy")
    rec = Recorder(agent)
    agent.on("ask_user.required", lambda e: pytest.fail("a form that cannot be shown must not be asked"))
    async with agent:
        result = await agent.run("go")
    assert result.status == "completed" and result.text == "went on"
    assert rec.text("ask_bad_form") == "bad form: decline"
    warning = next(w for w in rec.warnings() if "form" in w)
    assert "MCP server 't'" in warning and "field 'address' is of type 'object'" in warning


# ---------------------------------------------------------------- sampling


class SeenByHooks:
    def __init__(self) -> None:
        self.requests: list[list[dict[str, Any]]] = []

    @hookimpl
    def before_model_call(self, messages: list[dict[str, Any]], system: str | None) -> None:
        self.requests.append(list(messages))


@pytest.mark.slow
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_sampling_runs_on_the_agents_model_after_a_person_approves(tmp_path: Path, protocol: str) -> None:
    hooks = SeenByHooks()
    turns = [_call("summarise_with_client", text="the quick brown fox"),
             {"text": "a fox jumps over", "usage": {"input_tokens": 40, "output_tokens": 5}},
             {"text": "done", "usage": {"input_tokens": 10, "output_tokens": 1}}]
    agent, provider = _agent(tmp_path, turns, protocol, plugins=(hooks,), permission="allow-all")
    rec = Recorder(agent)
    agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], "allow"))
    async with agent:
        result = await agent.run("summarise")
    asked = rec.of("permission.required")
    # allow-all does not answer it: only a person's answer lets a server use the model
    assert [d["kind"] for d in asked] == ["mcp_sampling"]
    assert asked[0]["input"]["messages"] == [{"role": "user", "text": "Summarise: the quick brown fox"}]
    assert asked[0]["input"]["max_tokens"] == 200 and "five words" in asked[0]["input"]["system_prompt"]
    assert rec.text("summarise_with_client") == "summary from scripted-model: a fox jumps over"
    # the sampling call went through the run's hooks, on the agent's own provider, and is counted
    sampled = provider.requests[1]
    assert sampled.tools == [] and sampled.system == "You summarise in five words." and sampled.settings["max_tokens"] == 200
    assert hooks.requests[1] == [{"role": "user", "content": [{"type": "text", "text": "Summarise: the quick brown fox"}]}]
    steps = [d["step_usage"] for d in rec.of("usage.updated")]
    assert len(steps) == 3 and (steps[1]["input_tokens"], steps[1]["output_tokens"]) == (40, 5)
    assert result.usage.input_tokens == sum(s["input_tokens"] for s in steps)
    # its text is the server's, not the agent's answer: never streamed as the run's text
    assert all("a fox jumps" not in d["text"] for d in rec.of("text.delta"))
    assert result.text == "done"


@pytest.mark.slow
async def test_sampling_refused_by_the_person_by_the_settings_and_above_the_limits(tmp_path: Path) -> None:
    agent, provider = _agent(tmp_path, [_call("summarise_with_client", text="x"), "went on"], auto_approve=True)
    rec = Recorder(agent)
    agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], "deny"))
    async with agent:
        result = await agent.run("summarise")
    assert result.status == "completed" and result.text == "went on"
    assert [d["kind"] for d in rec.of("permission.required")] == ["mcp_sampling"]
    assert rec.result("summarise_with_client")["is_error"] and "declined" in rec.text("summarise_with_client")
    assert len(provider.requests) == 2  # the model was never called for the server

    # mcp.sampling: deny: the capability is not even offered, nobody is asked
    denied, provider2 = _agent(tmp_path, [_call("summarise_with_client", text="x"), "went on"], mcp={"sampling": "deny"})
    rec2 = Recorder(denied)
    async with denied:
        await denied.run("summarise")
    assert rec2.of("permission.required") == [] and rec2.result("summarise_with_client")["is_error"]
    assert "sampling" in rec2.text("summarise_with_client").lower() and len(provider2.requests) == 2

    # a request above the run's limit: one message naming the server and the setting; nothing is asked
    big, provider3 = _agent(tmp_path, [_call("summarise_with_client", text="x"), "went on"],
                            server=_server(env={"SAMPLE_MAX_TOKENS": "100000"}), mcp={"sampling_max_tokens": 1000})
    rec3 = Recorder(big)
    async with big:
        await big.run("summarise")
    assert rec3.of("permission.required") == [] and len(provider3.requests) == 2
    warning = next(w for w in rec3.warnings() if "tokens" in w)
    assert "MCP server 't' asked the model for up to 100000 tokens, above this run's limit of 1000" in warning
    assert "mcp.sampling_max_tokens" in warning


# ---------------------------------------------------------------- roots and who Smoke is


@pytest.mark.slow
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_server_sees_the_workspace_as_roots_and_smoke_as_the_client(tmp_path: Path, protocol: str) -> None:
    from smoke_core import __version__

    agent, _ = _agent(tmp_path, [{"tool_calls": [{"name": "t__my_roots", "input": {}},
                                                 {"name": "t__client_info", "input": {}}]}, "ok"], protocol)
    rec = Recorder(agent)
    async with agent:
        await agent.run("roots?")
    assert json.loads(rec.text("my_roots")) == [tmp_path.resolve().as_uri()]
    info = json.loads(rec.text("client_info"))
    assert info["client_info"]["name"] == "smoke" and info["client_info"]["version"] == __version__
    assert info["protocol"] == ("2025-11-25" if protocol == "legacy" else "2026-07-28")
    assert {"elicitation", "roots", "sampling"} <= set(info["capabilities"])


@pytest.mark.slow
async def test_set_roots_tells_the_server_and_it_lists_them_again(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    agent, _ = _agent(tmp_path, [_call("my_roots"), "listed", _call("roots_after_change"), "changed"], "legacy")
    rec = Recorder(agent)
    async with agent:
        await agent.run("roots?")
        assert json.loads(rec.text("my_roots")) == [tmp_path.resolve().as_uri()]
        told = await smoke_mcp.set_roots(agent, [a, b])
        assert told == 1
        await agent.run("roots again?")
    assert json.loads(rec.text("roots_after_change")) == [a.resolve().as_uri(), b.resolve().as_uri()]


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["open it", "decline"])
async def test_a_url_is_opened_only_when_the_person_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           answer: str) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys; open({str(opened)!r}, 'a').write(sys.argv[1])")
    monkeypatch.setenv("BROWSER", f"{sys.executable} {browser} %s")
    agent, _ = _agent(tmp_path, [_call("open_page"), "ok"], "legacy")
    rec = Recorder(agent)
    agent.on("ask_user.required", lambda e: agent.respond(e.data["tool_call_id"], answer))
    async with agent:
        await agent.run("sign")
    asked = rec.of("ask_user.required")
    assert asked[0]["options"] == ["open it", "decline"]
    assert "https://sign.example.invalid/doc?id=7" in asked[0]["question"] and "the server's" in asked[0]["question"]
    if answer == "open it":
        assert rec.text("open_page") == "page: accept"
        assert opened.read_text() == "https://sign.example.invalid/doc?id=7"
    else:
        assert rec.text("open_page") == "page: decline" and not opened.exists()
