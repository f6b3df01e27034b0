"""fallback_models: the same request goes to the next model after the
current one's retries, on overload / unavailability / a 5xx; never on a 429,
an auth failure or an invalid request; never after text reached the person;
a chain naming an uninstalled provider is an error at create_agent."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from smoke_core import RetryPolicy, create_agent, hookimpl
from smoke_core.plugin import AgentErrorInfo
from smoke_core.testing import ScriptedProvider

FAST = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.002)


def overloaded(status: int = 529) -> AgentErrorInfo:
    return AgentErrorInfo.from_code("provider_unavailable", f"overloaded (HTTP {status})", details={"status": status})


def backup_plugin(turns: list[Any] | dict[str, list[Any]], seen: list[ScriptedProvider]) -> Any:
    """A provider named ``backup`` whose models answer ``turns`` (or ``turns[model]``)."""

    def factory(model: str, **_: Any) -> ScriptedProvider:
        provider = ScriptedProvider(turns[model] if isinstance(turns, dict) else turns, model=model)
        provider.name = "backup"
        seen.append(provider)
        return provider

    ns = types.SimpleNamespace(__name__="backup-provider")
    ns.register_providers = hookimpl(specname="register_providers")(lambda register: register("backup", factory))
    return ns


def run(workspace: Path, primary: list[Any], backup: list[Any] | dict[str, list[Any]], **kwargs: Any) -> tuple[Any, list[Any], Any, list[Any]]:
    seen: list[ScriptedProvider] = []
    provider = ScriptedProvider(primary)
    agent = create_agent(workspace, provider=provider, autoload_plugins=False, retry=FAST,
                         plugins=[backup_plugin(backup, seen)], **kwargs)
    events: list[Any] = []
    agent.on_any(events.append)
    return agent.run_sync("go"), events, provider, seen


def test_two_overloads_then_the_fallback_answers_the_same_request(workspace):
    result, events, primary, seen = run(workspace, [overloaded(), overloaded()],
                                        [{"text": "from backup", "usage": {"input_tokens": 5, "output_tokens": 2}}],
                                        fallback_models=["backup:b-1"])
    assert result.status == "completed" and result.text == "from backup"
    assert primary.calls == 2 and seen[0].calls == 1
    assert seen[0].requests[0].messages == primary.requests[0].messages  # the same request
    assert seen[0].requests[0].model == "b-1"
    [warning] = [e for e in events if e.type == "run.warning" and e.data.get("fallback")]
    assert warning.data["fallback"] == {"from": "scripted:scripted-model", "to": "backup:b-1"}
    assert "the same request goes to the fallback model backup:b-1" in warning.data["error"]["message"]
    assert result.usage_by_model["backup:b-1"].output_tokens == 2
    assert "scripted:scripted-model" not in result.usage_by_model  # it answered nothing


def test_a_non_retryable_5xx_falls_back_at_once(workspace):
    broken = AgentErrorInfo.from_code("provider_error", "server bug (HTTP 501)", details={"status": 501})
    result, _, primary, seen = run(workspace, [broken], ["ok"], fallback_models=["backup:b-1"])
    assert result.status == "completed" and primary.calls == 1 and seen[0].calls == 1


@pytest.mark.parametrize("error", [
    AgentErrorInfo.from_code("provider_rate_limited", "slow down (HTTP 429)", details={"status": 429}),
    AgentErrorInfo.from_code("provider_auth", "bad key (HTTP 401)", details={"status": 401}),
    AgentErrorInfo.from_code("provider_error", "bad request (HTTP 400)", details={"status": 400}),
])
def test_no_fallback_on_429_auth_or_an_invalid_request(workspace, error):
    result, events, _, seen = run(workspace, [error, error], ["never"], fallback_models=["backup:b-1"])
    assert result.status == "failed" and result.error.code == error.code
    assert seen[0].calls == 0
    assert not [e for e in events if e.data.get("fallback")]


def test_no_fallback_after_text_reached_the_person(workspace):
    class Streams(ScriptedProvider):
        async def stream(self, request: Any):  # text first, then the provider gives out
            from smoke_core.plugin import AgentError
            from smoke_core.providers import TextDelta

            self.requests.append(request)
            self._calls += 1
            yield TextDelta("Half an answer")
            raise AgentError(overloaded())

    seen: list[ScriptedProvider] = []
    agent = create_agent(workspace, provider=Streams([]), autoload_plugins=False, retry=FAST,
                         plugins=[backup_plugin(["never"], seen)], fallback_models=["backup:b-1"])
    result = agent.run_sync("go")
    assert result.status == "failed" and result.error.code == "provider_unavailable"
    assert seen[0].calls == 0


def test_the_chain_is_tried_in_order_and_stays_for_the_run(workspace):
    result, events, primary, seen = run(
        workspace, [overloaded(), overloaded()],
        {"b-1": [overloaded(503), overloaded(503)], "b-2": [{"tool_calls": [{"name": "nothing", "input": {}}]}, "done"]},
        fallback_models=["backup:b-1", "backup:b-2"])
    # b-1 overloads twice, b-2 answers both steps: it stays for the rest of the run
    assert [e.data["fallback"]["to"] for e in events if e.data.get("fallback")] == ["backup:b-1", "backup:b-2"]
    assert result.status == "completed" and primary.calls == 2
    assert [p.model for p in seen] == ["b-1", "b-2"] and seen[1].calls == 2


def test_a_chain_naming_an_uninstalled_provider_is_a_clear_error(workspace):
    with pytest.raises(ValueError) as info:
        create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False,
                     fallback_models=["nosuch:model-x"])
    assert str(info.value).startswith("fallback_models: 'nosuch:model-x' names the provider 'nosuch', which is not "
                                      "installed (installed: ")


def test_a_repository_may_not_choose_fallback_models(workspace, monkeypatch):
    (workspace / ".smoke").mkdir()
    (workspace / ".smoke" / "config.yaml").write_text("fallback_models: ['nosuch:x']\n")
    agent = create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, trust_workspace=False)
    assert agent.options.fallbacks == ()
    assert any("fallback_models" in w for w in agent.settings.warnings)
