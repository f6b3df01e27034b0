"""Benchmark 2 — loop overhead.

A fake model that always calls one no-op, read-only async tool until the last
step, where it answers with text. Wall time of the whole run divided by the
number of steps (model calls), in microseconds, at 25, 200 and 400 steps;
median of several runs, each on a fresh agent (creation not timed).

- Smoke: ``smoke_core.testing.ScriptedProvider(copy_requests=False)`` (the
  default deep-copies every request for test assertions, which is test
  machinery, not loop cost), ``autoload_plugins=False``; without hooks, and
  with four hook plugins (one each for before_model_call, after_model_call,
  before_tool_call, after_tool_call, all no-ops).
- pydantic-ai: ``FunctionModel`` + ``@agent.tool_plain`` no-op,
  ``UsageLimits(request_limit=None)``.
- openai-agents: a ``Model`` subclass returning ``ResponseFunctionToolCall``
  items, ``Runner.run(max_turns=...)``, tracing disabled.
- llm: a ``llm.Model`` subclass with ``supports_tools``, run through
  ``model.conversation(chain_limit=...).chain(..., tools=[noop])`` (llm validates nothing
  and has no hooks: it is the floor, not a like-for-like peer).

Each framework runs in its own process.

    python bench/bench_loop.py [--only smoke|smoke-hooks|pydantic-ai|openai-agents|llm] [--reps 5]
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import finish, fmt_table, installed_version, median, parser, run_child, verdict

STEPS = (25, 200, 400)
TARGET_NO_HOOKS = 60.0
TARGET_HOOKS = 100.0
TARGET_RATIO = 1.3
FRAMEWORKS = ("smoke", "smoke-hooks", "pydantic-ai", "openai-agents", "llm")
DIST = {"smoke": "smoke-core", "smoke-hooks": "smoke-core", "pydantic-ai": "pydantic-ai-slim",
        "openai-agents": "openai-agents", "llm": "llm"}


# ---------------------------------------------------------------- Smoke


def _smoke_tool() -> Any:
    from smoke_core import (  # the app door: also in 0.1
        ToolAnnotations,
        ToolDefinition,
        ToolPresentation,
    )

    async def noop(input: dict[str, Any], ctx: Any) -> str:
        return "ok"

    return ToolDefinition(
        name="noop", description="Does nothing.", input_schema={"type": "object", "properties": {}},
        annotations=ToolAnnotations(read_only_hint=True), presentation=ToolPresentation(label="noop", icon="⚪"),
        execute=noop,
    )


def hook_plugins() -> list[Any]:
    """Four plugins, one lifecycle hook each, all no-ops."""
    import types

    from smoke_core import hookimpl

    def before_model_call(messages: Any, tools: Any) -> None:
        return None

    def after_model_call(response: Any, usage: Any) -> None:
        return None

    def before_tool_call(tool_name: str, input: Any) -> None:
        return None

    def after_tool_call(tool_name: str, result: Any) -> None:
        return None

    out = []
    for fn in (before_model_call, after_model_call, before_tool_call, after_tool_call):
        ns = types.SimpleNamespace(**{fn.__name__: hookimpl(fn)})
        ns.__name__ = f"bench_{fn.__name__}"
        out.append(ns)
    return out


def smoke_turns(steps: int) -> list[Any]:
    call = {"tool_calls": [{"name": "noop", "input": {}}], "usage": {"input_tokens": 1, "output_tokens": 1}}
    return [call] * (steps - 1) + [{"text": "done", "usage": {"input_tokens": 1, "output_tokens": 1}}]


def smoke_agent(ws: str, steps: int, hooks: bool, tool: Any, *, delay: float = 0.0) -> Any:
    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    provider = ScriptedProvider(smoke_turns(steps), copy_requests=False, delay=delay)
    return create_agent(
        ws, provider=provider, autoload_plugins=False, plugins=hook_plugins() if hooks else [], tools=[tool],
        max_steps=steps + 1,
    )


async def smoke_run(ws: str, steps: int, hooks: bool, tool: Any) -> float:
    agent = smoke_agent(ws, steps, hooks, tool)
    gc.collect()
    t0 = time.perf_counter()
    result = await agent.run("go")
    dt = time.perf_counter() - t0
    assert result.status == "completed" and result.steps == steps, (result.status, result.steps, result.error)
    return dt


def bench_smoke(hooks: bool, reps: int) -> dict[int, list[float]]:
    tool = _smoke_tool()
    out: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory() as ws:
        asyncio.run(smoke_run(ws, 25, hooks, tool))  # warm-up (imports, schema validator)
        for steps in STEPS:
            out[steps] = [asyncio.run(smoke_run(ws, steps, hooks, tool)) for _ in range(reps)]
    return out


def profile_smoke(hooks: bool, steps: int = 200, top: int = 12) -> list[dict[str, Any]]:
    """cProfile of one Smoke run: the functions with the most own time (profiler overhead included)."""
    import cProfile
    import pstats

    tool = _smoke_tool()
    with tempfile.TemporaryDirectory() as ws:
        asyncio.run(smoke_run(ws, 25, hooks, tool))
        agent = smoke_agent(ws, steps, hooks, tool)
        prof = cProfile.Profile()
        prof.enable()
        asyncio.run(agent.run("go"))
        prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.values()) or 1.0
    rows = []
    for (file, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.items():
        short = file
        for marker in ("/smoke_core/", "/site-packages/", "/lib/python3"):
            if marker in file:
                short = file[file.index(marker) + 1:]
                break
        rows.append({"function": f"{short}:{line}({func})", "calls": ncalls,
                     "own_ms": round(tottime * 1000, 2), "cumulative_ms": round(cumtime * 1000, 2),
                     "own_share": round(tottime / total, 3)})
    rows.sort(key=lambda r: -r["own_ms"])
    return rows[:top]


# ---------------------------------------------------------------- pydantic-ai


def bench_pydantic_ai(reps: int) -> dict[int, list[float]]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    async def run(steps: int) -> float:
        calls = 0

        async def model_fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
            nonlocal calls
            calls += 1
            if calls < steps:
                return ModelResponse(parts=[ToolCallPart(tool_name="noop", args={}, tool_call_id=f"c{calls}")])
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(FunctionModel(model_fn))

        @agent.tool_plain
        async def noop() -> str:
            """Does nothing."""
            return "ok"

        gc.collect()
        t0 = time.perf_counter()
        result = await agent.run("go", usage_limits=UsageLimits(request_limit=None))
        dt = time.perf_counter() - t0
        assert result.output == "done" and calls == steps, (result.output, calls)
        return dt

    asyncio.run(run(25))
    return {s: [asyncio.run(run(s)) for _ in range(reps)] for s in STEPS}


# ---------------------------------------------------------------- openai-agents


def bench_openai_agents(reps: int) -> dict[int, list[float]]:
    from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
    from agents.models.interface import Model
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)

    class FakeModel(Model):
        def __init__(self, steps: int) -> None:
            self.steps = steps
            self.calls = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            self.calls += 1
            if self.calls < self.steps:
                item: Any = ResponseFunctionToolCall(
                    id=f"fc{self.calls}", call_id=f"c{self.calls}", name="noop", arguments="{}",
                    type="function_call", status="completed",
                )
            else:
                item = ResponseOutputMessage(
                    id="m", role="assistant", status="completed", type="message",
                    content=[ResponseOutputText(text="done", type="output_text", annotations=[])],
                )
            return ModelResponse(output=[item], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # not used by Runner.run
            raise NotImplementedError

    @function_tool
    async def noop() -> str:
        """Does nothing."""
        return "ok"

    async def run(steps: int) -> float:
        model = FakeModel(steps)
        agent = Agent(name="bench", instructions="bench", model=model, tools=[noop])
        gc.collect()
        t0 = time.perf_counter()
        result = await Runner.run(agent, "go", max_turns=steps + 1)
        dt = time.perf_counter() - t0
        assert result.final_output == "done" and model.calls == steps, (result.final_output, model.calls)
        return dt

    asyncio.run(run(25))
    return {s: [asyncio.run(run(s)) for _ in range(reps)] for s in STEPS}


# ---------------------------------------------------------------- llm


def bench_llm(reps: int) -> dict[int, list[float]]:
    import llm

    class FakeModel(llm.Model):
        model_id = "bench-fake"
        supports_tools = True
        can_stream = False

        def __init__(self, steps: int) -> None:
            self.steps = steps
            self.calls = 0

        def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
            self.calls += 1
            if self.calls < self.steps:
                response.add_tool_call(llm.ToolCall(name="noop", arguments={}, tool_call_id=f"c{self.calls}"))
                return
            yield "done"

    def noop() -> str:
        """Does nothing."""
        return "ok"

    def run(steps: int) -> float:
        model = FakeModel(steps)
        gc.collect()
        t0 = time.perf_counter()
        chain = model.conversation(chain_limit=steps + 1).chain("go", tools=[noop])
        text = chain.text()
        dt = time.perf_counter() - t0
        assert text.endswith("done") and model.calls == steps, (text[-20:], model.calls)
        return dt

    run(25)
    return {s: [run(s) for _ in range(reps)] for s in STEPS}


# ---------------------------------------------------------------- driver


def measure(framework: str, reps: int) -> dict[str, Any]:
    if framework == "smoke":
        raw = bench_smoke(False, reps)
    elif framework == "smoke-hooks":
        raw = bench_smoke(True, reps)
    elif framework == "pydantic-ai":
        raw = bench_pydantic_ai(reps)
    elif framework == "openai-agents":
        raw = bench_openai_agents(reps)
    elif framework == "llm":
        raw = bench_llm(reps)
    else:
        raise SystemExit(f"unknown framework {framework!r}; choose from {', '.join(FRAMEWORKS)}")
    per_step = {str(s): round(median(v) / s * 1e6, 1) for s, v in raw.items()}
    extra: dict[str, Any] = {}
    if framework.startswith("smoke"):
        extra["profile_200_steps"] = profile_smoke(framework == "smoke-hooks")
    return {
        **extra,
        "framework": framework,
        "version": installed_version(DIST[framework]),
        "reps": reps,
        "us_per_step": per_step,
        "ratio_400_25": round(per_step["400"] / per_step["25"], 2),
        "runs_s": {str(s): [round(x, 5) for x in v] for s, v in raw.items()},
    }


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--only", choices=FRAMEWORKS)
    ap.add_argument("--reps", type=int, default=5, help="runs per step count for Smoke")
    ap.add_argument("--peer-reps", type=int, default=3, help="runs per step count for the peers")
    args = ap.parse_args()
    if args.only:
        result = measure(args.only, args.reps)
        finish(args, result, lambda r: table({"frameworks": {r["framework"]: r}}))
        return
    frameworks: dict[str, Any] = {}
    for fw in FRAMEWORKS:
        if not installed_version(DIST[fw]):
            frameworks[fw] = {"error": f"{DIST[fw]} is not installed"}
            continue
        reps = args.reps if fw.startswith("smoke") else args.peer_reps
        frameworks[fw] = run_child("bench_loop.py", "--only", fw, "--reps", str(reps), timeout=420)
    smoke = frameworks.get("smoke", {}).get("us_per_step", {})
    hooked = frameworks.get("smoke-hooks", {}).get("us_per_step", {})
    ratio = frameworks.get("smoke", {}).get("ratio_400_25")
    ratio_h = frameworks.get("smoke-hooks", {}).get("ratio_400_25")
    result = {
        "name": "loop",
        "steps": list(STEPS),
        "frameworks": frameworks,
        "targets": {"us_per_step_200": TARGET_NO_HOOKS, "us_per_step_200_hooks": TARGET_HOOKS,
                    "ratio_400_25": TARGET_RATIO},
        "verdicts": {
            "us_per_step_200": verdict(smoke.get("200"), TARGET_NO_HOOKS),
            "us_per_step_200_hooks": verdict(hooked.get("200"), TARGET_HOOKS),
            "ratio_400_25": verdict(ratio, TARGET_RATIO),
            "ratio_400_25_hooks": verdict(ratio_h, TARGET_RATIO),
        },
    }
    finish(args, result, table)


def table(r: dict[str, Any]) -> str:
    rows = []
    for fw, d in r["frameworks"].items():
        if "error" in d:
            rows.append([fw, "", "", "", "", d["error"]])
            continue
        u = d["us_per_step"]
        rows.append([fw, u["25"], u["200"], u["400"], d["ratio_400_25"], d.get("version")])
    return "Loop overhead (µs per step, median)\n" + fmt_table(
        ["framework", "25 steps", "200 steps", "400 steps", "400/25", "version"], rows
    )


if __name__ == "__main__":
    main()
