"""Done-when of issue 16, item 1: a local OpenAI-compatible server that
refuses ``tools`` (HTTP 400) and a model that answers in Hermes
``<tool_call>`` text fix the demo project's bug in ``auto`` mode, with the
real tool plugins and smoke-provider-openai (the ``tests`` nox session)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

fs = pytest.importorskip("smoke_tools_filesystem")
search = pytest.importorskip("smoke_tools_search")
terminal = pytest.importorskip("smoke_tools_terminal")
agent_tools = pytest.importorskip("smoke_tools_agent")
smoke_provider_openai = pytest.importorskip("smoke_provider_openai")

from smoke_core import create_agent  # noqa: E402
from smoke_core.demo import copy_sample_project  # noqa: E402
from smoke_core.providers import RetryPolicy  # noqa: E402
from smoke_core.testing import FakeProviderServer, RecordedRequest, Reply  # noqa: E402

pytestmark = pytest.mark.integration


TEST_CMD = f"{shlex.quote(sys.executable)} -m unittest discover -s tests"


def unittest_passes(project: Path) -> bool:
    return subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=project,
                          capture_output=True).returncode == 0


def hermes(text: str, name: str, arguments: dict[str, Any]) -> str:
    return f"{text}\n<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def sse_text(text: str) -> Reply:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {"id": "c", "object": "chat.completion.chunk", "model": "hermes",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(data)}\n\n".encode()

    pieces = [text[i:i + 9] for i in range(0, len(text), 9)]  # calls split across deltas
    return Reply.sse([chunk({"role": "assistant", "content": ""}), *[chunk({"content": p}) for p in pieces],
                      chunk({}, "stop"), b"data: [DONE]\n\n"])


@pytest.mark.slow
async def test_hermes_text_model_behind_a_server_refusing_tools_fixes_the_bug(tmp_path: Path) -> None:
    project = copy_sample_project(tmp_path / "project")
    assert not unittest_passes(project)
    old = '    values = list(values)\n    if not values:\n        raise ValueError("median() of an empty sequence")'
    new = old.replace("list(values)", "sorted(values)")
    answers = [
        hermes("I will find median() first.", "grep", {"pattern": "def median"}),
        hermes("Found it; reading the file.", "read_file", {"path": "stats/core.py"}),
        hermes("Running the tests to see the failure.", "run_test", {"command": TEST_CMD}),
        hermes("median() does not sort its input; fixing.", "edit_file",
               {"path": "stats/core.py", "old_string": old, "new_string": new}),
        hermes("Checking the fix.", "run_test", {"command": TEST_CMD}),
        hermes("Done.", "finish_task", {"summary": "median() sorts its input now"}),
    ]
    seen: list[RecordedRequest] = []

    def model(request: RecordedRequest) -> Reply:
        if request.method == "GET":  # /v1/models and /props before the run: this server says nothing
            return Reply.json({"error": "not found"}, status=404)
        body = request.json
        if "tools" in body:  # a vLLM started without a tool parser
            return Reply.json({"object": "error", "type": "BadRequestError", "code": 400,
                               "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                                          "--tool-call-parser to be set"}, status=400)
        seen.append(request)
        return sse_text(answers[len(seen) - 1])

    async with FakeProviderServer([model] * (len(answers) + 3)) as server:
        agent = create_agent(project, provider="openai-compatible", base_url=server.url + "/v1", model="hermes-3",
                             plugins=[fs, search, terminal, agent_tools, smoke_provider_openai],
                             autoload_plugins=False, auto_approve=True,
                             retry=RetryPolicy(base_delay=0.001, max_delay=0.01))
        assert agent.provider.tool_call_mode() == "auto"
        try:
            result = await agent.run("Fix median()")
        finally:
            await agent.aclose()

    assert result.status == "completed", result.error
    assert result.text == "median() sorts its input now"
    assert "sorted(values)" in (project / "stats" / "core.py").read_text()
    assert unittest_passes(project)
    posts = [r for r in server.requests if r.method == "POST"]
    assert len(posts) == len(answers) + 1  # one refused native request, then inline only
    system = seen[0].json["messages"][0]
    assert system["role"] == "system" and "<tools>" in system["content"] and '"name": "edit_file"' in system["content"]

    def last_user_text(i: int) -> str:
        return str(seen[i].json["messages"][-1]["content"])

    assert "stats/core.py" in last_user_text(1)                       # grep's result reached the model
    assert "FAILED" in last_user_text(3)                              # the tests failed before
    assert "OK" in last_user_text(5) and "FAILED" not in last_user_text(5)   # and pass after
