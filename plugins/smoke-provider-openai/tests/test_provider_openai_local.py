"""Local model servers (issue 32): what a llama.cpp, Ollama or vLLM server
says about itself, tool calls a small model writes as JSON text, the three
tool-call modes, finish reasons, context sizes and progress — each against
a real HTTP server on 127.0.0.1 (a small Starlette app: tests/local_server.py)
where the reply must be exact. What is llama.cpp's own behaviour is tested
against a real llama-server in tests/realmodel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import smoke_provider_openai
from smoke_provider_openai import make_provider
from smoke_provider_openai._inline import InlineToolParser

from smoke_core import create_agent, tool
from smoke_core.plugin import user_message
from smoke_core.providers import Finished, ModelRequest, RetryPolicy, TextDelta, ToolCallRequest
from smoke_core.testing import collect_events

from .local_server import LocalModelServer, chunk, llama_models, llama_props, text_stream

FAST = RetryPolicy(base_delay=0.001, max_delay=0.01)
TOOLS = [
    {"name": "read_file", "description": "Read a file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                      "required": ["path"]}},
    {"name": "lookup", "description": "Look a key up.",
     "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}},
]
READ = json.dumps({"name": "read_file", "arguments": {"path": "notes.txt"}})


@tool
def read_file(path: str) -> str:
    """Read a text file."""
    return f"contents of {path}: the answer is 42"


def _agent(tmp_path: Path, server: LocalModelServer, preset: str = "llamacpp", **kwargs: Any) -> Any:
    kwargs.setdefault("tools", [read_file])
    # the long-standing ways to say these (the settings keys of the same names are tested on their own)
    if "tool_calls" in kwargs:
        kwargs.setdefault("provider_options", {})["tool_calls"] = kwargs.pop("tool_calls")
    if "max_tokens" in kwargs:
        kwargs.setdefault("model_settings", {})["max_tokens"] = kwargs.pop("max_tokens")
    return create_agent(tmp_path, provider=preset, model="qwen", base_url=server.url, plugins=[smoke_provider_openai],
                        autoload_plugins=False, auto_approve=True, retry=FAST, **kwargs)


async def _run(agent: Any, task: str = "what does notes.txt say?") -> tuple[Any, list[Any]]:
    events: list[Any] = []
    agent.on_any(events.append)
    try:
        result = await agent.run(task)
    finally:
        await agent.aclose()
    return result, events


def _warnings(events: list[Any], code: str) -> list[dict[str, Any]]:
    return [e.data["error"] for e in events if e.type == "run.warning" and e.data["error"]["code"] == code]


# ---------------------------------------------------------------- 1. calls written as JSON text


def parse(text: str, *, strict: bool = False, pieces: int = 3) -> tuple[str, list[tuple[str, Any]]]:
    parser = InlineToolParser(tools=TOOLS, strict=strict)
    size = max(1, len(text) // pieces)
    shown = "".join(parser.feed(text[i : i + size]) for i in range(0, len(text), size))
    rest, calls = parser.finish()
    return shown + rest, [(c.name, c.arguments) for c in calls]


@pytest.mark.parametrize("strict", [False, True])
def test_bare_and_fenced_json_calls_of_exposed_tools(strict: bool) -> None:
    assert parse(READ, strict=strict) == ("", [("read_file", {"path": "notes.txt"})])
    two = json.dumps([{"name": "lookup", "arguments": {"key": "a"}}, {"name": "read_file", "arguments": {"path": "b"}}])
    assert parse(f"Looking.\n{two}\n", strict=strict) == ("Looking.\n\n", [("lookup", {"key": "a"}),
                                                                           ("read_file", {"path": "b"})])
    fenced = f"I will read it:\n```json\n{READ}\n```\n"
    assert parse(fenced, strict=strict) == ("I will read it:\n\n", [("read_file", {"path": "notes.txt"})])
    # Llama 3 writes "parameters"; OpenAI-style arguments as a JSON string are read too
    llama = json.dumps({"name": "lookup", "parameters": {"key": "z"}})
    assert parse(llama, strict=strict)[1] == [("lookup", {"key": "z"})]


@pytest.mark.parametrize("strict", [False, True])
def test_json_that_names_no_exposed_tool_or_does_not_validate_is_text(strict: bool) -> None:
    for text in (json.dumps({"name": "delete_everything", "arguments": {}}),       # not an exposed tool
                 json.dumps({"name": "read_file", "arguments": {"path": 3}}),      # path must be a string
                 json.dumps({"name": "read_file", "arguments": {}}),              # path is required
                 '{"a": 1, "b": [1, 2]}',                                          # data
                 "Use it like this: {\"name\": \"read_file\"} and so on.",         # mid-line, not a call
                 "[link](http://x) and {unbalanced"):
        assert parse(text, strict=strict) == (text, []), text


def test_strict_mode_keeps_a_tagged_call_of_an_unknown_tool_as_text() -> None:
    text = '<tool_call>{"name": "nope", "arguments": {}}</tool_call>'
    assert parse(text, strict=True) == (text, [])


def test_the_same_call_twice_runs_once_and_marks_the_reply_as_looping() -> None:
    parser = InlineToolParser(tools=TOOLS)
    parser.feed(f"{READ}\n{READ}\n")
    assert parser.repeated
    assert [c.name for c in parser.finish()[1]] == ["read_file"]


@pytest.mark.slow
async def test_native_mode_runs_a_call_the_model_wrote_as_bare_json(tmp_path: Path) -> None:
    # flaw 1: Qwen2.5-Coder-0.5B writes its call as JSON text with tools offered natively
    replies = [text_stream(READ), text_stream("It says the answer is 42.")]
    with LocalModelServer(chat=replies, props=llama_props(), models=llama_models()) as server:
        result, events = await _run(_agent(tmp_path, server, tool_calls="native"))
    assert result.status == "completed" and result.text == "It says the answer is 42."
    started = [e.data for e in events if e.type == "tool.started"]
    assert [(s["tool_name"], s["input"]) for s in started] == [("read_file", {"path": "notes.txt"})]
    assert "tools" in server.chat_bodies[0]  # native: the tools went in the tools field
    assert not any(e.type == "text.delta" and "{" in e.data["text"] for e in events)  # the call is not shown as text


async def test_a_looping_reply_is_cut_off_at_the_repeated_call() -> None:
    looping = [chunk(f"{READ}\n") for _ in range(50)] + [chunk(finish="length"), "[DONE]"]
    with LocalModelServer(chat=[looping], interval=0.002) as server:
        provider = make_provider("llamacpp", model="qwen", base_url=server.url, tool_calls="native")
        try:
            events = await collect_events(provider, ModelRequest(model="qwen", messages=[user_message("go")],
                                                                 tools=TOOLS))
        finally:
            await provider.aclose()
    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert [(c.name, c.arguments) for c in calls] == [("read_file", {"path": "notes.txt"})]
    assert isinstance(events[-1], Finished) and events[-1].reason == "tool_calls"


# ---------------------------------------------------------------- 2. what the server says about itself


async def test_auto_goes_inline_when_props_says_the_template_takes_no_tools(tmp_path: Path) -> None:
    # flaw 2: llama-server drops `tools` for a template without tool support and answers 200
    replies = [text_stream(f"<tool_call>{READ}</tool_call>"), text_stream("Done: 42.")]
    with LocalModelServer(chat=replies, props=llama_props(supports_tools=False), models=llama_models()) as server:
        result, events = await _run(_agent(tmp_path, server))
    assert result.status == "completed"
    fallback = _warnings(events, "provider_fallback")
    assert len(fallback) == 1 and "has no tool support" in fallback[0]["message"]
    assert all("tools" not in body and "# Tools" in body["messages"][0]["content"] for body in server.chat_bodies)
    assert [e.data["tool_name"] for e in events if e.type == "tool.started"] == ["read_file"]


async def test_native_chosen_with_a_template_without_tools_warns_and_stays_native(tmp_path: Path) -> None:
    with LocalModelServer(chat=[text_stream("I cannot see any tools.")], props=llama_props(supports_tools=False),
                          models=llama_models()) as server:
        result, events = await _run(_agent(tmp_path, server, tool_calls="native"))
    assert result.status == "completed" and "tools" in server.chat_bodies[0]
    [warning] = _warnings(events, "provider_error")
    assert "choose tool_calls: inline or constrained" in warning["message"]


async def test_ollama_capabilities_without_tools(tmp_path: Path) -> None:
    show = {"capabilities": ["completion"], "model_info": {"llama.context_length": 8192}}
    with LocalModelServer(chat=[text_stream("Plain answer.")], show=show, models={"data": []}) as server:
        result, events = await _run(_agent(tmp_path, server, preset="ollama"))
    assert result.status == "completed" and len(_warnings(events, "provider_fallback")) == 1
    assert [r.body for r in server.requests if r.path == "/api/show"] == [{"model": "qwen"}]
    assert "tools" not in server.chat_bodies[0]


@pytest.mark.parametrize(("props", "said"), [
    (b"<html><body>welcome</body></html>", "is not JSON"),
    ({"hello": "world"}, "not as llama.cpp's llama-server does"),
    ((500, {"error": "boom"}), "answered HTTP 500"),
])
async def test_an_odd_props_is_one_clear_warning_and_nothing_is_read(tmp_path: Path, props: Any, said: str) -> None:
    with LocalModelServer(chat=[text_stream("ok")], props=props, models={"data": []}) as server:
        result, events = await _run(_agent(tmp_path, server))
    assert result.status == "completed"
    problems = [w for w in _warnings(events, "provider_error") if "/props" in w["message"]]
    assert len(problems) == 1 and said in problems[0]["message"]
    assert "tools" in server.chat_bodies[0]  # nothing was concluded from it: auto stays native


async def test_what_the_server_said_is_cached_per_url(tmp_path: Path) -> None:
    with LocalModelServer(chat=[text_stream("ok")], props=llama_props(), models=llama_models()) as server:
        for _ in range(2):
            result, _ = await _run(_agent(tmp_path, server))
            assert result.status == "completed"
    assert [r.path for r in server.requests].count("/props") == 1


# ---------------------------------------------------------------- 3. finish_reason "length"


async def test_length_is_a_warning_and_a_continuation_then_a_failed_run(tmp_path: Path) -> None:
    cut = text_stream("Once upon a time there was a", finish="length")
    with LocalModelServer(chat=[cut, text_stream(" princess. The end.")], props=llama_props(),
                          models=llama_models()) as server:
        result, events = await _run(_agent(tmp_path, server, max_tokens=8))
    assert result.status == "completed" and result.text == " princess. The end."
    [warning] = _warnings(events, "output_truncated")
    assert "max_tokens=8" in warning["message"]
    second = server.chat_bodies[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "Once upon a time there was a"}
    assert "cut off" in second[-1]["content"]
    with LocalModelServer(chat=[cut], props=llama_props(), models=llama_models()) as server:
        result, events = await _run(_agent(tmp_path, server, max_tokens=8))
    assert result.status == "failed" and result.error is not None and result.error.code == "output_truncated"
    assert len(server.chat_bodies) == 3 and len(_warnings(events, "output_truncated")) == 2


# ---------------------------------------------------------------- 4. max_tokens and progress


async def test_a_default_max_tokens_from_the_served_context(tmp_path: Path) -> None:
    with LocalModelServer(chat=[text_stream("ok")], props=llama_props(n_ctx=16384), models=llama_models()) as server:
        agent = _agent(tmp_path, server)
        result, _ = await _run(agent)
    assert result.status == "completed"
    assert server.chat_bodies[0]["max_tokens"] == 4096  # a quarter of the 16,384 the server serves
    with LocalModelServer(chat=[text_stream("ok")], props=llama_props(), models=llama_models()) as server:
        result, _ = await _run(_agent(tmp_path, server, max_tokens=77))
    assert server.chat_bodies[0]["max_tokens"] == 77  # what the person chose wins


async def test_progress_events_while_tool_call_arguments_stream(tmp_path: Path) -> None:
    content = "x" * 2000
    args = json.dumps({"path": "big.txt", "content": content})
    first = [chunk(tool_calls=[{"index": 0, "id": "call_1", "type": "function",
                                "function": {"name": "read_file", "arguments": ""}}])]
    first += [chunk(tool_calls=[{"index": 0, "function": {"arguments": args[i : i + 50]}}])
              for i in range(0, len(args), 50)]
    first += [chunk(finish="tool_calls"), "[DONE]"]
    with LocalModelServer(chat=[first, text_stream("ok")], props=llama_props(), models=llama_models()) as server:
        result, events = await _run(_agent(tmp_path, server, tool_calls="native"))
    progress = [e.data for e in events if e.type == "model.progress" and e.data["kind"] == "tool_arguments"]
    assert len(progress) >= 7 and progress[-1]["tool_name"] == "read_file"
    assert [p["done"] for p in progress] == sorted(p["done"] for p in progress)
    assert result.status == "completed"


@pytest.mark.slow
async def test_prompt_progress_counts_as_progress_and_is_asked_for(tmp_path: Path) -> None:
    # flaw 9: the server reads a long prompt for longer than progress_timeout, saying so as it goes
    reading: list[Any] = []
    for n in range(0, 6001, 1000):  # 2.8 s of reading, 0.4 s between reports
        reading += [chunk(prompt_progress={"total": 6000, "cache": 0, "processed": n, "time_ms": n}), {"sleep": 0.4}]
    with LocalModelServer(chat=[[*reading, *text_stream("read it all")]], props=llama_props(),
                          models=llama_models()) as server:
        agent = _agent(tmp_path, server, provider_options={"progress_timeout": 1.5})
        result, events = await _run(agent)
    assert result.status == "completed" and result.text == "read it all"
    assert server.chat_bodies[0]["return_progress"] is True
    done = [e.data["done"] for e in events if e.type == "model.progress" and e.data["kind"] == "prompt"]
    assert done == list(range(0, 6001, 1000))
    assert make_provider("llamacpp", model="m").limits.progress_timeout >= 1800
    assert make_provider("openai", model="m", api_key="k").limits.progress_timeout == 300


# ---------------------------------------------------------------- 5. context size and overflow


async def test_the_served_context_not_the_training_context_found_by_alias() -> None:
    with LocalModelServer(props=llama_props(n_ctx=16384), models=llama_models(n_ctx=16384, n_ctx_train=32768)) as s:
        provider = make_provider("llamacpp", model="qwen", base_url=s.url)
        await provider.fetch_model_facts()
        await provider.aclose()
    assert provider.model_facts().context_window == 16384 and provider.model_facts().source == "server"
    # no /props (another server), a models list by path: matched by alias, else the one llama.cpp model
    listing = {"data": [{"id": "/m/qwen.gguf", "aliases": ["coder"], "owned_by": "llamacpp",
                         "meta": {"n_ctx": 8192, "n_ctx_train": 32768}}]}
    for name in ("coder", "qwen", "anything"):
        with LocalModelServer(models=listing) as s:
            provider = make_provider("vllm", model=name, base_url=s.url)
            await provider.fetch_model_facts()
            await provider.aclose()
        assert provider.context_window == 8192, name


async def test_a_context_overflow_is_compacted_and_tried_once_more(tmp_path: Path) -> None:
    overflow = (400, {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 5000,
                                "n_ctx": 4096, "message": "request (5000 tokens) exceeds the available context "
                                                          "size (4096 tokens), try increasing it"}})
    history = []
    for i in range(4):
        history += [{"role": "assistant", "content": [{"type": "tool_call", "id": f"c{i}", "name": "read_file",
                                                       "input": {"path": f"f{i}"}}]},
                    {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": f"c{i}",
                                                  "content": [{"type": "text", "text": "x" * 3000}]}]}]
    from smoke_core.plugin import MemoryStore

    store = MemoryStore()
    store.append("s1", user_message("read the files"))
    for message in history:
        store.append("s1", message)
    summary = text_stream("- read f0..f3; each held x characters")
    # the server says it serves 32k (so no compaction is due) but a slot holds only 4k
    with LocalModelServer(chat=[overflow, summary, text_stream("All read.")], props=llama_props(n_ctx=32768),
                          models=llama_models(n_ctx=32768)) as server:
        agent = _agent(tmp_path, server, store=store, session_id="s1")
        result, events = await _run(agent, "now summarise them")
    assert result.status == "completed" and result.text == "All read."
    [warning] = _warnings(events, "provider_context_overflow")
    assert warning["details"]["n_ctx"] == 4096 and warning["details"]["n_prompt_tokens"] == 5000
    assert [e.type for e in events if e.type.startswith("compaction.")] == ["compaction.started",
                                                                            "compaction.completed"]
    assert len(server.chat_bodies) == 3 and len(server.chat_bodies[2]["messages"]) < len(
        server.chat_bodies[0]["messages"])
    # a second overflow (nothing more to compact) fails the run with it
    with LocalModelServer(chat=[overflow], props=llama_props(), models=llama_models()) as server:
        result, _ = await _run(_agent(tmp_path, server))
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "provider_context_overflow" and "no earlier history" in (result.error.hint or "")


# ---------------------------------------------------------------- 6. the settings from the command line


@pytest.mark.slow
def test_smoke_run_flags_reach_the_request(tmp_path: Path) -> None:
    with LocalModelServer(chat=[text_stream("hi")], props=llama_props(), models=llama_models()) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "smoke_core.cli", "run", "--provider", "llamacpp", "--base-url", server.url,
             "--model", "qwen", "--tool-calls", "inline", "--temperature", "0.2", "--top-p", "0.9", "--seed", "7",
             "--max-tokens", "99", "--context-window", "5000", "--json", "say hi"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={**os.environ, "SMOKE_LOAD_PLUGINS": "provider_openai"},
        )
    assert proc.returncode == 0, proc.stderr
    body = server.chat_bodies[0]
    assert (body["temperature"], body["top_p"], body["seed"], body["max_tokens"]) == (0.2, 0.9, 7, 99)
    types = [json.loads(line)["type"] for line in proc.stdout.splitlines()]
    assert types[0] == "run.started" and types[-1] == "run.completed"
    proc = subprocess.run([sys.executable, "-m", "smoke_core.cli", "run", "--tool-calls", "xml", "x"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "'xml' is not one of" in proc.stderr


def test_settings_keys_from_a_file_reach_the_provider(tmp_path: Path) -> None:
    (tmp_path / ".smoke").mkdir()
    (tmp_path / ".smoke" / "config.yaml").write_text("tool_calls: constrained\ncontext_window: 6000\n"
                                                     "temperature: 0\nseed: 3\n")
    agent = create_agent(tmp_path, provider="llamacpp", model="m", plugins=[smoke_provider_openai],
                         autoload_plugins=False)
    assert agent.provider.tool_call_mode() == "constrained"
    assert agent.provider.model_facts().context_window == 6000
    assert agent.model_settings == {"temperature": 0, "seed": 3}


# ---------------------------------------------------------------- 7. the system prompt


async def test_the_system_prompt_names_only_exposed_tools(tmp_path: Path) -> None:
    @tool
    def run_command(command: str) -> str:
        """Run a command."""
        return "ran"

    with LocalModelServer(chat=[text_stream("ok")], props=llama_props(), models=llama_models()) as server:
        result, _ = await _run(_agent(tmp_path, server, tools=[read_file, run_command], tool_calls="native"))
    assert result.status == "completed"
    system = server.chat_bodies[0]["messages"][0]["content"]
    for absent in ("finish_task", "ask_user", "glob", "grep", "edit_file", "apply_patch", "list,"):
        assert absent not in system, absent
    assert "read the relevant files" in system and "run the tests" in system


# ---------------------------------------------------------------- 8. fallbacks and refusals


async def test_a_refusal_of_tools_is_a_run_warning_and_the_calls_go_inline(tmp_path: Path) -> None:
    refused = (500, {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}})
    with LocalModelServer(chat=[refused, text_stream(f"<tool_call>{READ}</tool_call>"), text_stream("42.")],
                          props=llama_props(), models=llama_models()) as server:
        result, events = await _run(_agent(tmp_path, server))
    assert result.status == "completed" and result.text == "42."
    [fallback] = _warnings(events, "provider_fallback")
    assert "tools param requires --jinja flag" in fallback["message"]
    assert [("tools" in b) for b in server.chat_bodies] == [True, False, False]


async def test_an_unrelated_error_that_mentions_tools_is_not_a_refusal(tmp_path: Path) -> None:
    grammar = (400, {"error": {"code": 400, "message": "Cannot use custom grammar constraints with tools.",
                               "type": "invalid_request_error"}})
    with LocalModelServer(chat=[grammar], props=llama_props(), models=llama_models()) as server:
        agent = _agent(tmp_path, server, model_settings={"grammar": 'root ::= "hi"'})
        result, events = await _run(agent)
    assert result.status == "failed" and result.error is not None and result.error.code == "provider_error"
    assert not _warnings(events, "provider_fallback") and len(server.chat_bodies) == 1
    assert agent.provider.tool_call_mode() == "auto"


# ---------------------------------------------------------------- constrained mode


async def test_constrained_mode_sends_a_grammar_of_the_tools_and_reads_the_call(tmp_path: Path) -> None:
    from smoke_provider_openai._gbnf import tool_grammar

    with LocalModelServer(chat=[text_stream(READ), text_stream("The answer is 42.")], props=llama_props(),
                          models=llama_models()) as server:
        result, _ = await _run(_agent(tmp_path, server, tool_calls="constrained"))
    assert result.status == "completed" and result.text == "The answer is 42."
    first, second = server.chat_bodies
    # the reply to the task must be a call; after the result, text or a call
    assert "tools" not in first and first["grammar"] == tool_grammar([read_file.provider_schema()], text=False)
    assert second["grammar"] == tool_grammar([read_file.provider_schema()])
    assert "reply with only a JSON object" in first["messages"][0]["content"]
    # the call is told with its result, not shown as the model's own text
    assert [m["role"] for m in second["messages"]] == ["system", "user"]
    assert 'You called read_file {"path": "notes.txt"}. It returned:' in second["messages"][1]["content"]


async def test_constrained_mode_on_a_server_without_grammars_uses_a_json_schema() -> None:
    from smoke_provider_openai._constrained import reply_schema

    reply = text_stream(json.dumps("A \"quoted\" answer \u00e9 \U0001f600 over\nlines"), per=3)
    with LocalModelServer(chat=[reply, text_stream(json.dumps({"name": "lookup", "arguments": {"key": "k"}}))]) as s:
        provider = make_provider("vllm", model="qwen", base_url=s.url, tool_calls="constrained", call_first=False)
        request = ModelRequest(model="qwen", messages=[user_message("go")], tools=TOOLS)
        try:
            text_events = await collect_events(provider, request)
            call_events = await collect_events(provider, request)
        finally:
            await provider.aclose()
    assert "".join(e.text for e in text_events if isinstance(e, TextDelta)) == 'A "quoted" answer é 😀 over\nlines'
    assert [(e.name, e.arguments) for e in call_events if isinstance(e, ToolCallRequest)] == [("lookup", {"key": "k"})]
    body = s.chat_bodies[0]
    assert body["response_format"]["json_schema"]["schema"] == reply_schema(TOOLS) and "grammar" not in body


async def test_a_grammar_the_server_rejects_is_one_warning_and_the_calls_go_inline(tmp_path: Path) -> None:
    rejected = (400, {"error": {"code": 400, "message": "Failed to initialize samplers: failed to parse grammar",
                                "type": "invalid_request_error"}})
    with LocalModelServer(chat=[rejected, text_stream("fine")], props=llama_props(), models=llama_models()) as server:
        agent = _agent(tmp_path, server, tool_calls="constrained")
        result, events = await _run(agent)
    assert result.status == "completed" and result.text == "fine"
    [fallback] = _warnings(events, "provider_fallback")
    assert "rejected the schema" in fallback["message"] and "failed to parse grammar" in fallback["message"]
    assert "grammar" in server.chat_bodies[0] and "grammar" not in server.chat_bodies[1]
    assert agent.provider.tool_call_mode() == "inline"


def test_a_constrained_reply_streams_text_and_holds_a_call() -> None:
    from smoke_provider_openai._constrained import ConstrainedReply

    reply = ConstrainedReply(TOOLS, json_text=True)
    shown = "".join(reply.feed(piece) for piece in ['  "Hel', 'lo \\', 'u00e9\\', 'n!"'])
    assert shown == "Hello é\n!" and reply.finish() == ("", [])
    reply = ConstrainedReply(TOOLS)
    assert reply.feed('{"name": "lookup", ') == "" and reply.pending_chars > 0
    reply.feed('"arguments": {"key": 1}}')
    _, [call] = reply.finish()  # an invalid call of an exposed tool goes to the loop, which tells the model
    assert (call.name, call.arguments) == ("lookup", {"key": 1})
    reply = ConstrainedReply(TOOLS)
    assert reply.feed("Plain text, no JSON.") == "Plain text, no JSON." and reply.finish() == ("", [])


# ---------------------------------------------------------------- issue 31: a vLLM-style 8k model


@pytest.mark.parametrize("reported", [8192, None])
async def test_a_server_reporting_max_model_len_8192_makes_compaction_start_by_8k(
        tmp_path: Path, reported: int | None) -> None:
    """vLLM's ``/v1/models`` says ``max_model_len``; a history of ~9,000 tokens is
    compacted before the first call when the server serves 8,192 — and not when
    the server says nothing (then the default window applies)."""
    from smoke_core.plugin import MemoryStore

    store = MemoryStore()
    store.append("s1", user_message("read the files"))
    for i in range(4):
        store.append("s1", {"role": "assistant", "content": [{"type": "tool_call", "id": f"c{i}", "name": "read_file",
                                                              "input": {"path": f"f{i}"}}]})
        store.append("s1", {"role": "tool", "content": [{"type": "tool_result", "tool_call_id": f"c{i}",
                                                         "content": [{"type": "text", "text": "word " * 1800}]}]})
    entry: dict[str, Any] = {"id": "qwen", "object": "model", "owned_by": "vllm"}
    if reported is not None:
        entry["max_model_len"] = reported
    summary = text_stream("- read f0..f3; each was the same word")
    with LocalModelServer(chat=[summary, text_stream("All read.")], models={"object": "list", "data": [entry]}) as s:
        agent = _agent(tmp_path, s, preset="vllm", store=store, session_id="s1")
        result, events = await _run(agent, "now summarise them")
        window = agent.context_window
    assert result.status == "completed"
    compacted = [e.type for e in events if e.type.startswith("compaction.")]
    if reported is None:
        assert window > 8192 and compacted == [] and len(s.chat_bodies) == 1
    else:
        assert window == 8192
        assert compacted == ["compaction.started", "compaction.completed"]
        # a summary request first, then the task on a history holding the summary and less than was stored
        task_request = json.dumps(s.chat_bodies[1]["messages"])
        assert "each was the same word" in task_request and "now summarise them" in task_request
        assert task_request.count("word ") < 4 * 1800


@pytest.mark.parametrize("trusted", [True, False])
def test_price_as_is_a_settings_key_a_repository_may_not_set(tmp_path: Path, trusted: bool) -> None:
    """issue 31 item 4: ``price_as`` from settings; an untrusted folder's files may not
    set it (budgets count with it: a repository could make its runs look cheap)."""
    (tmp_path / ".smoke").mkdir()
    (tmp_path / ".smoke" / "config.yaml").write_text("price_as: anthropic\n")
    agent = create_agent(tmp_path, provider="vllm", model="claude-sonnet-4-5", plugins=[smoke_provider_openai],
                         autoload_plugins=False, trust_workspace=trusted)
    assert agent.provider.price_as == ("anthropic" if trusted else None)
