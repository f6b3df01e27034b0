"""Real models drive Smoke (issue 32): llama.cpp's llama-server serving
Qwen2.5-Coder-0.5B-Instruct and SmolLM2-135M-Instruct, through
``create_agent`` and ``smoke run``, in the three tool-call modes; and each
harness flaw a real model exposed, against the server whose behaviour it is.

Temperature 0 and a seed; the assertions are invariants (a real tool call
ran, every ``tool.started`` has its ``tool.completed``, one terminal event,
usage counted, a completed run or a run guard — never a provider error),
not the model's words. The servers run with one thread (steady when other
work shares the cores); each test keeps its steps and tokens few."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from smoke_core import create_agent
from smoke_core.plugin import MemoryStore, user_message
from smoke_core.policy.options import Guards
from smoke_core.providers import RetryPolicy

from .conftest import check_run, start

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]  # a real model on a CPU: seconds a test

FAST = RetryPolicy(base_delay=0.05, max_delay=0.2)
TASK = "What is the secret word in hello.txt? Use the tools."
SMALL_TOOLS = ("read_file", "list_directory")


def _guards(truncated: int) -> Guards:
    """Guards whose ``truncated_replies`` ends a run at the ``truncated``-th cut-off reply in a row."""
    guards = Guards()
    if hasattr(guards, "truncated_replies"):  # so the test also runs (and fails) on the code before issue 32
        guards.truncated_replies = truncated
    return guards


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / "hello.txt").write_text("The secret word is pelican.\n")
    return tmp_path


def _agent(ws: Path, server: Any, model: str, *, keep: tuple[str, ...] | None = SMALL_TOOLS, **kwargs: Any) -> Any:
    # the long-standing ways to say these (model_settings, provider_options): the flaw tests also run, and
    # fail, on the code before issue 32; the settings keys of the same names are tested through `smoke run`
    settings = kwargs.setdefault("model_settings", {})
    for key, default in (("temperature", 0), ("seed", 1), ("max_tokens", 256)):
        value = kwargs.pop(key, default)
        if value is not None:
            settings.setdefault(key, value)
    if "tool_calls" in kwargs:
        kwargs.setdefault("provider_options", {})["tool_calls"] = kwargs.pop("tool_calls")
    if "context_window" in kwargs:
        kwargs.setdefault("provider_options", {})["context_window"] = kwargs["context_window"]
    kwargs.setdefault("max_steps", 5)
    agent = create_agent(ws, provider="llamacpp", model=model, base_url=server.url, auto_approve=True, retry=FAST,
                         **kwargs)
    if keep is not None:  # fewer tool schemas: a shorter prompt for a CPU to read
        for name in agent.registry.names():
            if name not in keep:
                agent.registry.unregister(name)
    return agent


async def _run(agent: Any, task: str = TASK) -> tuple[Any, list[Any]]:
    events: list[Any] = []
    agent.on_any(events.append)
    try:
        result = await agent.run(task)
    finally:
        await agent.aclose()
    return result, events


def _warnings(events: list[Any], code: str) -> list[dict[str, Any]]:
    return [e.data["error"] for e in events if e.type == "run.warning" and e.data["error"]["code"] == code]


# ---------------------------------------------------------------- the three modes with Qwen


async def test_native_mode_runs_the_call_qwen_writes_as_json_text(qwen: Any, tmp_path: Path) -> None:
    # flaw 1: Qwen2.5-Coder-0.5B answers a native tools request with the call as bare JSON in content
    result, events = await _run(_agent(_workspace(tmp_path), qwen, "qwen", tool_calls="native"))
    check_run(result, events)
    reads = [e.data["input"] for e in events if e.type == "tool.started" and e.data["tool_name"] == "read_file"]
    assert reads and all(r["path"] == "hello.txt" for r in reads)


async def test_inline_mode_runs_a_tool(qwen: Any, tmp_path: Path) -> None:
    result, events = await _run(_agent(_workspace(tmp_path), qwen, "qwen", tool_calls="inline"))
    check_run(result, events)


async def test_constrained_mode_runs_a_tool_and_answers(qwen: Any, tmp_path: Path) -> None:
    result, events = await _run(_agent(_workspace(tmp_path), qwen, "qwen", tool_calls="constrained"))
    check_run(result, events)
    assert not _warnings(events, "provider_fallback")  # the server took the grammar


async def test_smoke_run_drives_the_real_model(qwen: Any, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "smoke_core.cli", "run", "--provider", "llamacpp", "--base-url", qwen.url,
         "--model", "qwen", "--tool-calls", "constrained", "--temperature", "0", "--seed", "1", "--max-tokens", "256",
         "--max-steps", "4", "--yes", "--json", TASK],
        cwd=ws, capture_output=True, text=True, timeout=900,
        env={**os.environ, "SMOKE_LOAD_PLUGINS": "provider_openai,tools_filesystem"},
    )
    assert proc.returncode in (0, 1, 3), proc.stderr  # completed, failed, stopped at --max-steps
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "run.started" and types[-1] in ("run.completed", "run.failed")
    assert sum(t.startswith("run.") and t != "run.warning" and t != "run.started" for t in types) == 1
    assert any(e["type"] == "tool.completed" and not e["data"]["is_error"] for e in events)
    assert events[-1]["data"]["usage"]["total_tokens"] > 0
    if types[-1] == "run.failed":
        assert events[-1]["data"]["error"]["code"] in ("run_max_steps", "run_hard_stop", "run_repeated_error")


async def test_constrained_mode_holds_even_smollm2_to_calls_smoke_can_run(smol: Any, tmp_path: Path) -> None:
    # a 135M model whose template takes no tools: every call it writes is one of an exposed tool, valid
    agent = _agent(_workspace(tmp_path), smol, "smol", tool_calls="constrained", max_steps=3, max_tokens=96)
    result, events = await _run(agent)
    check_run(result, events, tool_ran=False)
    completed = [e.data for e in events if e.type == "tool.completed"]
    assert completed, "no call"
    for data in completed:
        assert data["tool_name"] in SMALL_TOOLS
        assert not data["is_error"] or data["error"]["code"] == "tool_failed", data["error"]
    assert not _warnings(events, "provider_fallback")


@pytest.mark.slow
def test_the_demo_with_the_real_model(qwen: Any, tmp_path: Path) -> None:
    env = {**os.environ, "SMOKE_LLAMA_SERVER": os.environ["SMOKE_LLAMA_SERVER"],
           "SMOKE_LLAMA_MODEL": os.environ["SMOKE_REALMODEL_QWEN"], "SMOKE_LOAD_PLUGINS":
           "provider_openai,tools_filesystem,tools_search,tools_terminal,tools_agent",
           "SMOKE_LLAMA_THREADS": os.environ.get("SMOKE_LLAMA_THREADS", "1")}
    proc = subprocess.run([sys.executable, "-m", "smoke_core.cli", "demo", "--real", "--yes", "--json",
                           "-w", str(tmp_path / "demo")], capture_output=True, text=True, timeout=1500, env=env)
    assert proc.returncode in (0, 1, 3), proc.stderr  # completed, failed, stopped at its step limit
    assert "the model is the real model qwen2.5-coder-0.5b-instruct-q4_k_m" in proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["data"]["provider"] == "llamacpp"
    assert events[0]["data"]["model"] == "qwen2.5-coder-0.5b-instruct-q4_k_m"
    # a call the model wrote ran in the tool itself: it passed validation and the gate, and the tool
    # answered (a 0.5B model often edits a file that is not there: the tool's own error counts)
    ran = [e for e in events if e["type"] == "tool.completed" and (
        not e["data"]["is_error"] or e["data"]["error"]["code"] == "tool_failed")]
    assert ran, [e["data"] for e in events if e["type"] == "tool.completed"]
    starts = sorted(e["data"]["tool_call_id"] for e in events if e["type"] == "tool.started")
    assert starts == sorted(e["data"]["tool_call_id"] for e in events if e["type"] == "tool.completed")
    assert [e["type"] for e in events if e["type"] in ("run.completed", "run.failed")] == [events[-1]["type"]]
    assert events[-1]["data"]["usage"]["total_tokens"] > 0
    if events[-1]["type"] == "run.failed":
        assert events[-1]["data"]["error"]["code"] in ("run_max_steps", "run_hard_stop", "run_repeated_error",
                                                       "output_truncated")


def test_the_grammar_of_every_installed_tool_is_one_llama_cpp_takes(smol: Any, tmp_path: Path) -> None:
    from smoke_provider_openai._gbnf import tool_grammar

    agent = create_agent(tmp_path, provider="llamacpp", model="smol", base_url=smol.url)
    tools = [t.provider_schema() for t in agent.tools.values()]
    assert len(tools) >= 15
    body = {"model": "smol", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
            "grammar": tool_grammar(tools)}
    response = httpx.post(f"{smol.url}/chat/completions", json=body, timeout=300)
    assert response.status_code == 200, response.text
    body["grammar"] = "root ::= foo"  # a grammar the server rejects: what constrained mode falls back from
    assert httpx.post(f"{smol.url}/chat/completions", json=body, timeout=60).status_code == 400


# ---------------------------------------------------------------- the flaws, with SmolLM2


async def test_auto_sees_a_template_without_tool_support(smol: Any, tmp_path: Path) -> None:
    # flaw 2: SmolLM2's template takes no tools; llama-server drops them and answers 200
    agent = _agent(_workspace(tmp_path), smol, "smol", max_steps=2, max_tokens=48)
    result, events = await _run(agent)
    check_run(result, events, tool_ran=False)
    [fallback] = _warnings(events, "provider_fallback")
    assert "has no tool support" in fallback["message"]
    assert agent.provider.tool_call_mode() == "inline"


async def test_length_is_its_own_outcome(smol: Any, tmp_path: Path) -> None:
    # flaw 3: a reply cut at max_tokens is not a completed run
    agent = _agent(tmp_path, smol, "smol", keep=(), max_tokens=6, guards=_guards(2))
    result, events = await _run(agent, "Tell me a long story about a lighthouse keeper.")
    assert len(_warnings(events, "output_truncated")) == 1
    assert result.status == "failed" and result.error is not None and result.error.code == "output_truncated"
    check_run(result, events, tool_ran=False)


async def test_a_runaway_reply_is_bounded_by_the_default_max_tokens(tmp_path: Path) -> None:
    # flaw 4: with no max_tokens a request generated 9,188 tokens; now a quarter of the served context
    server = start("SMOL", "smol-1k", alias="smol", ctx=1024)
    try:
        agent = _agent(tmp_path, server, "smol", keep=(), max_tokens=None, guards=_guards(1))
        result, _ = await _run(agent, "Count from 1 to 100000, one number per line, and do not stop.")
    finally:
        server.stop()
    assert result.error is not None and result.error.code == "output_truncated"
    assert 0 < result.usage.output_tokens <= 256
    assert agent.provider.model_facts().default_max_tokens == 256


async def test_the_served_context_found_by_alias_or_as_the_one_model(tmp_path: Path) -> None:
    # flaw 5: n_ctx (what the server serves), not n_ctx_train nor 128,000; by alias, or the only model
    server = start("SMOL", "smol-ctx", alias="tiny", ctx=2048)
    try:
        for name in ("tiny", "any-name-at-all"):
            agent = create_agent(tmp_path, provider="llamacpp", model=name, base_url=server.url)
            await agent.provider.fetch_model_facts()  # what a run now does first (prepare())
            assert agent.provider.context_window == 2048, name
            await agent.aclose()
    finally:
        server.stop()


async def test_a_context_overflow_is_compacted_and_tried_again(tmp_path: Path) -> None:
    # flaw 5: llama-server's exceed_context_size_error was a provider_error and never compacted
    server = start("SMOL", "smol-overflow", alias="smol", ctx=1024)
    store = MemoryStore()
    store.append("s", user_message("Read the notes."))
    for i in range(3):
        store.append("s", {"role": "assistant", "content": [{"type": "tool_call", "id": f"c{i}", "name": "read_file",
                                                             "input": {"path": f"notes{i}.txt"}}]})
        store.append("s", {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": f"c{i}", "content": [
            {"type": "text", "text": f"note {i}: " + "the weather was mild and the sea was calm. " * 40}]}]})
    try:
        # the window is set too large on purpose, so the threshold never compacts first
        agent = _agent(tmp_path, server, "smol", keep=(), store=store, session_id="s", context_window=100_000,
                       max_tokens=16)
        result, events = await _run(agent, "In one sentence: what were the notes about?")
    finally:
        server.stop()
    [overflow] = _warnings(events, "provider_context_overflow")
    assert overflow["details"]["n_ctx"] == 1024 and overflow["details"]["n_prompt_tokens"] > 1024
    assert "compaction.completed" in [e.type for e in events]
    check_run(result, events, tool_ran=False)


def test_smoke_run_takes_the_model_flags(smol: Any, tmp_path: Path) -> None:
    # flaw 6: tool_calls, context_window, max_tokens, temperature, top_p, seed from the command line
    proc = subprocess.run(
        [sys.executable, "-m", "smoke_core.cli", "run", "--provider", "llamacpp", "--base-url", smol.url, "--model",
         "smol", "--tool-calls", "inline", "--context-window", "4096", "--max-tokens", "3", "--temperature", "0",
         "--top-p", "0.9", "--seed", "1", "--max-steps", "3", "--json", "Write a poem about the sea."],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "SMOKE_LOAD_PLUGINS": "provider_openai"},
    )
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 1, proc.stderr
    truncated = [e for e in events if e["type"] == "run.warning" and e["data"]["error"]["code"] == "output_truncated"]
    assert truncated and truncated[0]["data"]["error"]["details"]["max_tokens"] == 3
    # the third reply cut off in a row ends the run (Guards.truncated_replies), before --max-steps 3 would
    assert events[-1]["type"] == "run.failed" and events[-1]["data"]["error"]["code"] == "output_truncated"
    assert events[-1]["data"]["usage"]["output_tokens"] <= 9


async def test_the_system_prompt_names_only_the_exposed_tools(tmp_path: Path) -> None:
    # flaw 7: with tools=["filesystem", "terminal"] the prompt told the model of finish_task, ask_user, glob, grep
    from smoke_core.testing import FakeProviderServer, Reply

    def reply(request: Any) -> Reply:
        if request.method == "GET":
            return Reply.json({"error": "no such route"}, status=404)
        return Reply.sse(['data: {"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}\n\n',
                          "data: [DONE]\n\n"])

    async with FakeProviderServer([reply] * 4) as server:
        agent = create_agent(tmp_path, provider="openai-compatible", model="m", base_url=server.url,
                             tools=["filesystem", "terminal"])
        result, _ = await _run(agent, "hello")
    assert result.status == "completed"
    [body] = [r.json for r in server.requests if r.method == "POST"]
    system = body["messages"][0]["content"]
    for absent in ("finish_task", "ask_user", "glob", "grep"):
        assert absent not in system, absent
    names = {t["function"]["name"] for t in body["tools"]}
    assert "read_file" in names and "run_command" in names and "finish_task" not in names


async def test_a_refusal_of_tools_is_a_run_warning(tmp_path: Path) -> None:
    # flaw 8: llama-server without --jinja answers 500 "tools param requires --jinja flag"
    server = start("QWEN", "qwen-nojinja", alias="qwen", ctx=2048, jinja=False)  # its template takes tools
    try:
        agent = _agent(_workspace(tmp_path), server, "qwen", max_steps=2, max_tokens=48)
        result, events = await _run(agent)
    finally:
        server.stop()
    [fallback] = _warnings(events, "provider_fallback")
    assert "tools param requires --jinja flag" in fallback["message"]
    check_run(result, events, tool_ran=False)


async def test_an_error_that_mentions_tools_is_no_refusal(qwen: Any, tmp_path: Path) -> None:
    # flaw 8: "Cannot use custom grammar constraints with tools." switched the provider to inline for good
    agent = _agent(_workspace(tmp_path), qwen, "qwen", model_settings={"grammar": 'root ::= "hi"'})
    result, events = await _run(agent)
    assert result.status == "failed" and result.error is not None and result.error.code == "provider_error"
    assert "Cannot use custom grammar constraints with tools" in result.error.message
    assert not _warnings(events, "provider_fallback") and agent.provider.tool_call_mode() == "auto"


async def test_a_long_prompt_read_slowly_is_kept_alive_by_prompt_progress(tmp_path: Path) -> None:
    # flaw 9: reading a long prompt sent only keep-alives, so progress_timeout ended the call and the retry
    # started over; llama.cpp reports its progress when asked (return_progress), one batch at a time
    server = start("SMOL", "smol-batch", alias="smol", ctx=4096, batch=64)
    try:
        agent = _agent(tmp_path, server, "smol", keep=(), max_tokens=4, guards=_guards(1),
                       provider_options={"progress_timeout": 5})
        long_task = "Here are my notes. " + " ".join(f"Line {i}: the lighthouse light turned {i} times." for i in
                                                       range(220)) + "\nSay OK."
        result, events = await _run(agent, long_task)
    finally:
        server.stop()
    prompt = [e.data for e in events if e.type == "model.progress" and e.data["kind"] == "prompt"]
    assert len(prompt) >= 10 and prompt[-1]["done"] == prompt[-1]["total"] > 2000
    assert not _warnings(events, "provider_timeout")
    assert result.status == "completed" or (result.error is not None and result.error.code == "output_truncated")
