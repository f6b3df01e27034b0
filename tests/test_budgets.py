"""Run budgets: max_cost_usd, max_input_tokens, max_output_tokens stop a run
with run_budget_exceeded at the right step (a scripted provider whose usage
is known), count subagents, follow the settings layers (tighter only from an
untrusted folder, final from managed), and refuse a budget of -1 or "lots"."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from smoke_core import create_agent, tool
from smoke_core.settings import SettingsError
from smoke_core.testing import ScriptedProvider


@tool(read_only=True)
def noop() -> str:
    """Does nothing."""
    return "ok"


def step(cost: float | None = None, tokens_in: int = 100, tokens_out: int = 10) -> dict[str, Any]:
    usage: dict[str, Any] = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    if cost is not None:
        usage["cost_usd"] = cost
    return {"tool_calls": [{"name": "noop", "input": {}}], "usage": usage}


def run(workspace: Path, turns: list[Any], **kwargs: Any) -> tuple[Any, ScriptedProvider, list[Any]]:
    provider = ScriptedProvider(turns)
    agent = create_agent(workspace, provider=provider, tools=[noop], autoload_plugins=False, **kwargs)
    events: list[Any] = []
    agent.on_any(events.append)
    return agent.run_sync("go"), provider, events


def test_the_cost_budget_stops_the_run_after_the_call_that_passed_it(workspace):
    result, provider, events = run(workspace, [step(0.02)] * 10, max_cost_usd=0.05)
    assert result.status == "failed" and result.error.code == "run_budget_exceeded"
    assert provider.calls == 3  # $0.02, $0.04, then $0.06 > $0.05
    assert result.error.message == "the run stopped at step 3: it has spent $0.0600, over its max_cost_usd of $0.05"
    assert result.error.details["used"] == {"cost_usd": 0.06}
    assert [e.type for e in events][-1] == "run.failed"


def test_once_the_budget_is_spent_the_next_call_is_not_made(workspace):
    # exactly at the limit after two calls: the third is refused before it is sent
    result, provider, _ = run(workspace, [step(0.025)] * 10, max_cost_usd=0.05, max_output_tokens=20)
    assert provider.calls == 2
    assert result.error.code == "run_budget_exceeded"
    assert result.error.message == ("the run stopped before step 3: it has used 20 output tokens, its "
                                    "max_output_tokens is 20")


def test_the_input_token_budget_is_checked_with_the_requests_estimate(workspace):
    from smoke_core.run.budget import estimate_input

    result, provider, _ = run(workspace, [step(tokens_in=5000)] * 10, max_input_tokens=7000)
    # the second request's estimate (a few hundred tokens) fits; the 5,000 it reports bring the run to 10,000
    assert result.error.code == "run_budget_exceeded" and provider.calls == 2
    assert result.error.message == ("the run stopped at step 2: it has used 10,000 input tokens, over its "
                                    "max_input_tokens of 7,000")
    big, provider, _ = run(workspace, [step(tokens_in=10)] * 10, max_input_tokens=25)
    assert provider.calls == 0  # the first request's own estimate passes 25: nothing is sent
    estimate = big.error.details["estimate"]["input_tokens"]
    assert estimate > 25 and big.error.message == (
        f"the run stopped before step 1: its next request (about {estimate:,} input tokens) would bring it to "
        f"{estimate:,}, over its max_input_tokens of 25")
    assert estimate_input is not None


def test_an_unpriced_model_is_said_once_and_its_tokens_still_count(workspace):
    result, _, events = run(workspace, [step(None)] * 3 + ["done"], max_cost_usd=0.01)
    assert result.status == "completed"
    warnings = [e for e in events if e.type == "run.warning" and e.data["error"]["code"] == "run_budget_exceeded"]
    assert len(warnings) == 1 and "max_cost_usd does not count its calls" in warnings[0].data["error"]["message"]


def test_a_subagents_spending_counts_against_the_parents_budget(workspace):
    @tool(read_only=True)
    async def delegate(ctx: Any = None) -> str:
        """Run a subagent."""
        result = await ctx.run_subagent("sub", name="helper")
        return f"{result.status}: {result.error.code if result.error else ''}"

    def turn(request: Any) -> Any:
        first = request.messages[0]["content"][0]["text"]
        if first == "sub":
            return step(0.02)
        return {"tool_calls": [{"name": "delegate", "input": {}}], "usage": {"input_tokens": 1, "output_tokens": 1,
                                                                             "cost_usd": 0.03}}

    provider = ScriptedProvider([turn] * 10)
    agent = create_agent(workspace, provider=provider, tools=[noop, delegate], autoload_plugins=False,
                         max_cost_usd=0.06)
    result = agent.run_sync("go")
    # parent $0.03, then the subagent: $0.02 (0.05 in all), $0.02 -> 0.07 > 0.06: the subagent stops
    subagent_results = [b for m in result.messages for b in (m.get("content") or [])
                        if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert "failed: run_budget_exceeded" in subagent_results[0]["content"][0]["text"]
    assert result.status == "failed" and result.error.code == "run_budget_exceeded"


@pytest.mark.parametrize("value, words", [(-1, "got -1"), ("lots", "got 'lots'"), (0, "got 0"), (True, "got True")])
def test_a_bad_budget_is_one_clear_message(workspace, value, words):
    with pytest.raises(SettingsError) as info:
        create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, max_cost_usd=value)
    message = str(info.value)
    assert message.startswith("create_agent(): max_cost_usd: expected a positive number of US dollars") and words in message
    assert "\n" not in message


def test_a_bad_budget_in_the_environment(workspace, monkeypatch):
    monkeypatch.setenv("SMOKE_MAX_COST_USD", "lots")
    with pytest.raises(SettingsError) as info:
        create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False)
    assert str(info.value) == ("environment variable SMOKE_MAX_COST_USD: expected a positive number of US dollars "
                               "such as 0.50, got 'lots'")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_an_untrusted_folder_may_only_tighten_and_managed_is_final(workspace, tmp_path, monkeypatch):
    from smoke_core.settings import user_settings_path

    write(user_settings_path(), "max_cost_usd: 1.0\nmax_output_tokens: 500\n")
    write(workspace / ".smoke" / "config.yaml", "max_cost_usd: 5.0\nmax_output_tokens: 100\n")
    agent = create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, trust_workspace=False)
    assert agent.options.budget.max_cost_usd == 1.0  # looser: ignored
    assert agent.options.budget.max_output_tokens == 100  # tighter: applied
    assert any("max_cost_usd (above the limit of 1.0)" in w for w in agent.settings.warnings)

    managed = tmp_path / "managed.yaml"
    write(managed, "max_cost_usd: 0.25\n")
    monkeypatch.setenv("SMOKE_MANAGED_SETTINGS", str(managed))
    agent = create_agent(workspace, provider=ScriptedProvider([]), autoload_plugins=False, max_cost_usd=10)
    assert agent.options.budget.max_cost_usd == 0.25  # create_agent cannot raise a managed budget


def test_cost_in_a_chat_shows_the_last_run_against_the_budget(workspace):
    from smoke_core.run.slash import BUILTIN_COMMANDS

    provider = ScriptedProvider([{"text": "hi", "usage": {"input_tokens": 300, "output_tokens": 20,
                                                          "cost_usd": 0.004}}])
    agent = create_agent(workspace, provider=provider, autoload_plugins=False, max_cost_usd=0.5,
                         max_output_tokens=1000)
    agent.run_sync("hello")
    said: list[str] = []

    class Chat:
        usage = agent.last_usage.to_dict()

        def __init__(self) -> None:
            self.agent = agent

        def say(self, text: str) -> None:
            said.append(text)

    [cost] = [c for c in BUILTIN_COMMANDS if c.name == "cost"]
    cost.handler("", Chat())
    assert said[0].splitlines()[1] == "budget per run (last run): $0.0040 / $0.5 · 20 / 1,000 output tokens"
