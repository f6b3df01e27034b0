"""Real models for the ``realmodel`` tests: llama.cpp's llama-server with
Qwen2.5-Coder-0.5B-Instruct and SmolLM2-135M-Instruct on 127.0.0.1.

The ``realmodel`` nox session builds the server and fetches the models
(noxfile.py) and names them in ``SMOKE_LLAMA_SERVER``, ``SMOKE_REALMODEL_QWEN``
and ``SMOKE_REALMODEL_SMOL``; without them every test here skips. Servers
start once per module and are stopped after it; ``SMOKE_LLAMA_THREADS``
(default 1: steady on a busy machine) sets their threads. Real output varies
between a cold and a warm prompt cache, so the tests assert what must hold
whatever the model writes (:func:`check_run`), never its exact words."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from smoke_core.demo.llama_server import LlamaServer, RealModel

#: how a run with a real small model may end besides completing: a guard, never a provider error
RUN_GUARDS = frozenset({"run_max_steps", "run_hard_stop", "run_repeated_error", "run_empty_responses",
                        "output_truncated"})


def _real(kind: str) -> RealModel:
    server, model = os.environ.get("SMOKE_LLAMA_SERVER"), os.environ.get(f"SMOKE_REALMODEL_{kind}")
    if not (server and model and Path(server).is_file() and Path(model).is_file()):
        pytest.skip("no real model: the realmodel nox session sets SMOKE_LLAMA_SERVER and SMOKE_REALMODEL_QWEN / "
                    "SMOKE_REALMODEL_SMOL (run `nox -s realmodel`)")
    return RealModel(Path(server), Path(model), "environment")


def start(kind: str, name: str, **kwargs: Any) -> LlamaServer:
    logs = Path(os.environ.get("SMOKE_REALMODEL_LOGS") or "/tmp")
    logs.mkdir(parents=True, exist_ok=True)
    kwargs.setdefault("threads", int(os.environ.get("SMOKE_LLAMA_THREADS") or 1))
    return LlamaServer(_real(kind), log_path=logs / f"llama-server-{name}.log", **kwargs).start()


@pytest.fixture(autouse=True)
def _no_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tool and provider plugins of the session are what these runs use (tests/conftest.py turns autoloading off)."""
    monkeypatch.setenv("SMOKE_LOAD_PLUGINS", "provider_openai,tools_filesystem,tools_search,tools_terminal,tools_agent")


@pytest.fixture(scope="module")
def qwen() -> Iterator[LlamaServer]:
    server = start("QWEN", "qwen", alias="qwen", ctx=8192)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def smol() -> Iterator[LlamaServer]:
    server = start("SMOL", "smol", alias="smol", ctx=4096)
    yield server
    server.stop()


def check_run(result: Any, events: list[Any], *, tool_ran: bool = True) -> None:
    """What every real run must show, whatever the model wrote."""
    types = [e.type for e in events]
    terminal = [t for t in types if t in ("run.completed", "run.failed", "run.interrupted")]
    assert terminal and len(terminal) == 1 and types[-1] == terminal[0], types[-5:]
    started = sorted(e.data["tool_call_id"] for e in events if e.type == "tool.started")
    completed = sorted(e.data["tool_call_id"] for e in events if e.type == "tool.completed")
    assert started == completed
    assert result.usage.total_tokens > 0
    if result.status != "completed":
        assert result.error is not None and result.error.code in RUN_GUARDS, result.error
        cause = (result.error.details or {}).get("cause") or {}
        assert not str(cause.get("code", "")).startswith("provider_"), cause
    if tool_ran:
        assert any(e.type == "tool.completed" and not e.data["is_error"] for e in events), "no tool call ran"
