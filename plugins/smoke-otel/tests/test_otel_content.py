"""Message and tool-argument content: off unless asked for, and redacted
when recorded."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest

from smoke_core import create_agent, tool
from smoke_core.testing import ScriptedProvider

SECRET = "sk-live-0123456789abcdef"
CONTENT_KEYS = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}


@tool(read_only=True)
def fetch(url: str, token: str) -> str:
    """Fetch a URL with a token."""
    return f"fetched {url}"


def turns() -> list[Any]:
    return [
        {"tool_calls": [{"name": "fetch", "id": "f1", "input": {"url": "https://example.com", "token": SECRET}}],
         "text": "Let me fetch it."},
        {"text": "The page says hello."},
    ]


async def run_with(workspace: Any, telemetry: Any, **kwargs: Any) -> None:
    agent = create_agent(workspace, provider=ScriptedProvider(turns()), tools=[fetch], autoload_plugins=False,
                         plugins=[telemetry.plugin, *kwargs.pop("plugins", [])], system_prompt="Be brief.",
                         **kwargs)
    result = await agent.run("Grab example.com please")
    assert result.status == "completed"


def all_attributes(telemetry: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for span in telemetry.spans():
        for key, value in span.attributes.items():
            out.setdefault(key, []).append(value)
    return out


async def test_no_content_attribute_and_no_message_json_without_capture(workspace, telemetry, monkeypatch):
    """Content capture off: none of the opt-in attributes, and the messages are never turned into JSON."""
    import smoke_otel._content as content

    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    calls: list[str] = []
    for name in ("dump", "input_messages", "output_messages", "tool_definitions"):
        original = getattr(content, name)
        monkeypatch.setattr(content, name, lambda *a, _o=original, _n=name, **k: (calls.append(_n), _o(*a, **k))[1])
    await run_with(workspace, telemetry)
    assert calls == []
    opt_in = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
              "gen_ai.tool.definitions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
    assert not any(opt_in & set(span.attributes) for span in telemetry.spans())


async def test_no_content_is_recorded_by_default(workspace, telemetry, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", SECRET)
    await run_with(workspace, telemetry)
    attrs = all_attributes(telemetry)
    assert not CONTENT_KEYS & set(attrs)
    text = json.dumps({k: [str(v) for v in vs] for k, vs in attrs.items()})
    assert "example.com" not in text and "Grab" not in text and SECRET not in text


@pytest.mark.parametrize("value", ["true", "True", "span_only"])
async def test_the_environment_variable_turns_content_on_with_secrets_redacted(workspace, telemetry, monkeypatch,
                                                                              value):
    monkeypatch.setenv("MY_SERVICE_API_KEY", SECRET)  # a secret Smoke knows (a *_API_KEY variable)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    await run_with(workspace, telemetry)
    tool_span = telemetry.one("execute_tool fetch")
    arguments = json.loads(tool_span.attributes["gen_ai.tool.call.arguments"])
    assert arguments == {"url": "https://example.com", "token": "***"}
    assert tool_span.attributes["gen_ai.tool.call.result"] == '"fetched https://example.com"'
    for span in telemetry.spans():
        for v in span.attributes.values():
            assert SECRET not in str(v), span.name

    first, second = sorted(telemetry.named("chat"), key=lambda s: s.start_time)
    assert json.loads(first.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Grab example.com please"}]},
    ]
    assert json.loads(first.attributes["gen_ai.output.messages"]) == [{
        "role": "assistant", "finish_reason": "tool_call", "parts": [
            {"type": "text", "content": "Let me fetch it."},
            {"type": "tool_call", "id": "f1", "name": "fetch",
             "arguments": {"url": "https://example.com", "token": "***"}},
        ],
    }]
    history = json.loads(second.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[1]["parts"][1]["arguments"]["token"] == "***"
    assert history[2]["parts"] == [{"type": "tool_call_response", "id": "f1", "response": "fetched https://example.com"}]
    assert json.loads(second.attributes["gen_ai.output.messages"])[0]["finish_reason"] == "stop"
    root = telemetry.one("invoke_agent smoke")
    assert json.loads(root.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] == "Grab example.com please"
    definitions = json.loads(first.attributes["gen_ai.tool.definitions"])
    assert [d["name"] for d in definitions] == ["fetch"] and definitions[0]["type"] == "function"
    assert definitions[0]["parameters"]["type"] == "object"
    assert second.attributes["gen_ai.tool.definitions"] == first.attributes["gen_ai.tool.definitions"]


async def test_the_setting_turns_content_on_and_overrides_the_environment(workspace, make_telemetry, monkeypatch):
    import smoke_otel

    settings = types.SimpleNamespace(__name__="otel-settings", register_settings=smoke_otel.register_settings)
    on = make_telemetry()
    await run_with(workspace, on, plugins=[settings], otel_capture_content=True)
    assert "gen_ai.tool.call.arguments" in on.one("execute_tool fetch").attributes

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    off = make_telemetry()
    await run_with(workspace, off, plugins=[settings], otel_capture_content=False)
    assert not CONTENT_KEYS & set(all_attributes(off))


async def test_the_constructor_switch_wins(workspace, make_telemetry, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    quiet = make_telemetry(capture_content=False)
    await run_with(workspace, quiet)
    assert not CONTENT_KEYS & set(all_attributes(quiet))


async def test_an_unreadable_switch_is_reported_and_leaves_content_off(workspace, telemetry, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "maybe")
    agent = create_agent(workspace, provider=ScriptedProvider(turns()), tools=[fetch], autoload_plugins=False,
                         plugins=[telemetry.plugin])
    warnings = []
    agent.on("run.warning", lambda e: warnings.append(e.data["error"]["message"]))
    await agent.run("Grab example.com please")
    assert any("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT='maybe' is not understood" in w for w in warnings)
    assert not CONTENT_KEYS & set(all_attributes(telemetry))


async def test_a_repository_may_not_turn_content_capture_on(workspace, monkeypatch):
    """The project's own settings file, in a folder the person has not trusted, cannot switch it on."""
    import smoke_otel

    (workspace / ".smoke").mkdir()
    (workspace / ".smoke" / "config.yaml").write_text("otel_capture_content: true\notel_agent_name: repo-agent\n")
    settings = types.SimpleNamespace(__name__="otel-settings", register_settings=smoke_otel.register_settings)
    agent = create_agent(workspace, provider=ScriptedProvider(["ok"]), autoload_plugins=False, plugins=[settings],
                         trust_workspace=False)
    assert agent.options.get("otel_capture_content") is None
    assert agent.options.get("otel_agent_name") == "repo-agent"  # harmless: allowed
    trusted = create_agent(workspace, provider=ScriptedProvider(["ok"]), autoload_plugins=False, plugins=[settings],
                           trust_workspace=True)
    assert trusted.options.get("otel_capture_content") is True


def test_otlp_header_values_are_registered_as_secrets(monkeypatch):
    import smoke_otel

    from smoke_core.secrets import Redactor

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-honeycomb-team=hcteamkey123456,other=short")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Authorization=Bearer%20logfiretoken987654")
    smoke_otel.register_settings(lambda *a, **k: None)
    redactor = Redactor.from_environment()
    text = "env: hcteamkey123456 and logfiretoken987654"
    assert redactor.redact(text) == "env: *** and ***"
