"""Benchmark 7 — OpenTelemetry overhead (smoke-otel).

The loop of benchmark 2 (a fake model calling one no-op, read-only async
tool until the last step), at 200 steps, in µs per step:

- smoke: the plain loop, no plugin.
- smoke-otel: with smoke-otel's ``OtelPlugin`` exporting to the SDK's
  in-memory span exporter (``SimpleSpanProcessor``) and an in-memory metric
  reader: per step one ``chat`` and one ``execute_tool`` span and four
  histogram records (semantic-conventions-genai v0.1.0: inference duration,
  the two per-call token histograms, tool duration; the usage counters are
  summed and added every 32 calls), content capture off.
- smoke-otel-batch-processor: the same with a ``BatchSpanProcessor`` (what an
  OTLP set-up uses: spans queued, exported by a background thread).
- smoke-otel-no-exemplars: the first variant with the meter provider's
  exemplar filter off (``OTEL_METRICS_EXEMPLAR_FILTER=always_off``): the
  SDK's default (``trace_based``) offers every record made under a sampled
  span to an exemplar reservoir, which the floor below never does.
- smoke-otel-noop-providers: the plugin following the run with the API's
  no-op tracer and meter providers: the plugin's own work (and the hook
  dispatch it causes), without the SDK's.
- smoke-otel-unconfigured: the plugin installed but no provider configured
  anywhere: it follows no run, so this is what installing it costs when
  nothing is exported.
- sdk-floor: no Smoke at all — the same two spans (same attributes) and
  four metric records per step made directly with the SDK: the cost
  OpenTelemetry itself puts on any instrumentation of this loop.
- sdk-floor-in-context: the floor doing what smoke-otel's documented
  behaviour needs on top: the run's span is the current context for the
  whole loop (so the SDK's default ``trace_based`` exemplar filter offers
  every histogram record to a reservoir, as it does in a run), and each
  ``chat`` / ``execute_tool`` span is made the current context while it
  runs (so spans made inside a tool or by an HTTP client nest under it).
  This is the lowest the OpenTelemetry Python SDK lets any instrumentation
  with that behaviour go.
- pydantic-ai / pydantic-ai-instrumented: ``FunctionModel`` + a no-op tool,
  plain and with ``agent.instrument = InstrumentationSettings(...)`` on the same
  in-memory SDK providers (``include_content=False``, like smoke-otel's default).

The three Smoke variants and the floor run in one process with their
repetitions interleaved, so a busy machine slows them alike; pydantic-ai runs in its own
processes. Median of the repetitions.

    python bench/bench_otel.py [--only smoke|pydantic-ai] [--reps 7] [--peer-reps 3]
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

STEPS = 200
TARGET_RATIO = 1.5
SMOKE_VARIANTS = ("smoke", "smoke-otel", "smoke-otel-batch-processor", "smoke-otel-no-exemplars",
                  "smoke-otel-noop-providers", "smoke-otel-unconfigured")


def sdk_providers(batch: bool = False, exemplars: bool = True) -> tuple[Any, Any, Any]:
    from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    tp = TracerProvider()
    exporter = InMemorySpanExporter()
    # BatchSpanProcessor: what an OTLP set-up uses (spans queued, exported by a background thread)
    tp.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    extra: dict[str, Any] = {} if exemplars else {"exemplar_filter": AlwaysOffExemplarFilter()}
    return tp, MeterProvider(metric_readers=[InMemoryMetricReader()], **extra), exporter


# ---------------------------------------------------------------- Smoke


def smoke_run(ws: str, variant: str, tool: Any, tracer: Any = None) -> tuple[float, int]:
    from bench_loop import smoke_turns

    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    plugins: list[Any] = []
    exporter = None
    tp = None
    if variant in ("smoke-otel", "smoke-otel-batch-processor", "smoke-otel-no-exemplars"):
        from smoke_otel import OtelPlugin

        tp, mp, exporter = sdk_providers(batch=variant == "smoke-otel-batch-processor",
                                         exemplars=variant != "smoke-otel-no-exemplars")
        plugins = [OtelPlugin(tracer_provider=tp, meter_provider=mp)]
    elif variant == "smoke-otel-noop-providers":
        from opentelemetry.metrics import NoOpMeterProvider
        from opentelemetry.trace import NoOpTracerProvider
        from smoke_otel import OtelPlugin

        plugins = [OtelPlugin(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())]
    elif variant == "smoke-otel-unconfigured":
        from smoke_otel import OtelPlugin

        plugins = [OtelPlugin()]  # global providers: none is configured in this process
    agent = create_agent(ws, provider=ScriptedProvider(smoke_turns(STEPS), copy_requests=False),
                         autoload_plugins=False, plugins=plugins, tools=[tool], max_steps=STEPS + 1)
    gc.collect()
    if tracer is not None:  # opcode_counts: the run alone
        sys.settrace(tracer)
    t0 = time.perf_counter()
    try:
        result = asyncio.run(agent.run("go"))
    finally:
        sys.settrace(None)
    dt = time.perf_counter() - t0
    assert result.status == "completed" and result.steps == STEPS, (result.status, result.steps, result.error)
    if tp is not None:
        tp.force_flush()  # after the timing: the batch processor's queue
        tp.shutdown()
    spans = len(exporter.get_finished_spans()) if exporter is not None else 0
    if exporter is not None:
        assert spans == 2 * STEPS, spans  # STEPS chat + (STEPS - 1) tool + 1 invoke_agent
    return dt, spans


def sdk_floor(in_context: bool = False) -> Any:
    """A function timing one pass of the bare SDK work smoke-otel asks for
    over STEPS steps (seconds). ``in_context``: the run's span current for
    the whole pass and each span current while it runs (smoke-otel's
    documented behaviour)."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from smoke_otel._telemetry import Telemetry

    tp, mp, exporter = sdk_providers()
    tel = Telemetry(tp, mp)
    root = tel.tracer.start_span("invoke_agent smoke")
    ctx = trace.set_span_in_context(root)
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted",
            "gen_ai.request.model": "scripted-model"}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "noop", "gen_ai.tool.type": "function",
            "gen_ai.tool.description": "Does nothing."}
    tmetric = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "noop", "gen_ai.tool.type": "function"}

    attach, detach, in_span = otel_context.attach, otel_context.detach, trace.set_span_in_context

    def one() -> float:
        exporter.clear()
        gc.collect()
        run_token = attach(ctx) if in_context else None
        t0 = time.perf_counter()
        for i in range(STEPS):
            s = tel.tracer.start_span("chat scripted-model", context=ctx, kind=trace.SpanKind.CLIENT, attributes=chat)
            token = attach(in_span(s, ctx)) if in_context else None
            s.set_attributes({"gen_ai.usage.input_tokens": 1, "gen_ai.usage.output_tokens": 1,
                              "gen_ai.response.finish_reasons": ("tool_calls",)})
            s.end()
            if token is not None:
                detach(token)
            tel.operation_duration.record(0.001, chat)
            tel.operation_input_tokens.record(1, chat)
            tel.operation_output_tokens.record(1, chat)
            t = tel.tracer.start_span("execute_tool noop", context=ctx, kind=trace.SpanKind.INTERNAL,
                                      attributes={**tool, "gen_ai.tool.call.id": f"call_{i}"})
            token = attach(in_span(t, ctx)) if in_context else None
            t.set_attributes({"smoke.tool.outcome": "ok"})
            t.end()
            if token is not None:
                detach(token)
            tel.tool_duration.record(0.001, tmetric)
        dt = time.perf_counter() - t0
        if run_token is not None:
            detach(run_token)
        return dt

    return one


def opcode_counts() -> dict[str, int]:
    """Python bytecode instructions executed per step (``sys.settrace`` with
    opcode events): a deterministic split of the cost that a busy machine
    does not blur (C work, such as dict copies, is not counted)."""
    from bench_loop import _smoke_tool

    count = [0]

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            count[0] += 1
        return tracer

    tool = _smoke_tool()
    out: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as ws:
        for variant in ("smoke", "smoke-otel-unconfigured", "smoke-otel-noop-providers", "smoke-otel",
                        "smoke-otel-no-exemplars"):
            smoke_run(ws, variant, tool)
            count[0] = 0
            smoke_run(ws, variant, tool, tracer)
            out[variant] = round(count[0] / STEPS)
    for name, in_context in (("sdk-floor", False), ("sdk-floor-in-context", True)):
        one = sdk_floor(in_context)
        one()
        count[0] = 0
        sys.settrace(tracer)
        try:
            one()
        finally:
            sys.settrace(None)
        out[name] = round(count[0] / STEPS)
    return out


def profile_otel(top: int = 12) -> list[dict[str, Any]]:
    """cProfile of one smoke-otel run: where the time goes (profiler overhead included)."""
    import cProfile
    import pstats

    from bench_loop import _smoke_tool

    tool = _smoke_tool()
    with tempfile.TemporaryDirectory() as ws:
        smoke_run(ws, "smoke-otel", tool)
        prof = cProfile.Profile()
        prof.enable()
        smoke_run(ws, "smoke-otel", tool)
        prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    by_area: dict[str, float] = {}
    total = 0.0
    for (file, _line, _func), (_cc, _ncalls, tottime, _cum, _callers) in stats.items():
        area = ("opentelemetry SDK/API" if "/opentelemetry/" in file else
                "smoke_otel" if "/smoke_otel/" in file else
                "smoke_core" if "/smoke_core/" in file else "other (asyncio, pydantic, gc, ...)")
        by_area[area] = by_area.get(area, 0.0) + tottime
        total += tottime
    return [{"area": k, "own_ms": round(v * 1000, 1), "share": round(v / total, 3)}
            for k, v in sorted(by_area.items(), key=lambda kv: -kv[1])][:top]


def bench_smoke(reps: int) -> dict[str, Any]:
    from bench_loop import _smoke_tool

    tool = _smoke_tool()
    runs: dict[str, list[float]] = {v: [] for v in SMOKE_VARIANTS}
    floor_once, floor_ctx_once = sdk_floor(), sdk_floor(in_context=True)
    floor: list[float] = []
    floor_ctx: list[float] = []
    with tempfile.TemporaryDirectory() as ws:
        for variant in SMOKE_VARIANTS:  # warm-up: imports, validators
            smoke_run(ws, variant, tool)
        floor_once()
        floor_ctx_once()
        for _ in range(reps):
            for variant in SMOKE_VARIANTS:
                runs[variant].append(smoke_run(ws, variant, tool)[0])
            floor.append(floor_once())
            floor_ctx.append(floor_ctx_once())
    us = {v: round(median(r) / STEPS * 1e6, 1) for v, r in runs.items()}
    us["sdk-floor"] = round(median(floor) / STEPS * 1e6, 1)
    us["sdk-floor-in-context"] = round(median(floor_ctx) / STEPS * 1e6, 1)
    return {
        "us_per_step": us,
        "runs_s": {v: [round(x, 5) for x in r] for v, r in {**runs, "sdk-floor": floor, "sdk-floor-in-context": floor_ctx}.items()},
        "reps": reps,
        "ratio": round(us["smoke-otel"] / us["smoke"], 2),
        "ratio_batch_processor": round(us["smoke-otel-batch-processor"] / us["smoke"], 2),
        "ratio_no_exemplars": round(us["smoke-otel-no-exemplars"] / us["smoke"], 2),
        "exemplars_us": round(us["smoke-otel"] - us["smoke-otel-no-exemplars"], 1),
        "sdk_floor_ratio": round((us["smoke"] + us["sdk-floor"]) / us["smoke"], 2),
        "added_us": round(us["smoke-otel"] - us["smoke"], 1),
        "sdk_floor_in_context_ratio": round((us["smoke"] + us["sdk-floor-in-context"]) / us["smoke"], 2),
        "added_above_floor_us": round(us["smoke-otel"] - us["smoke"] - us["sdk-floor"], 1),
        "added_above_floor_in_context_us": round(us["smoke-otel"] - us["smoke"] - us["sdk-floor-in-context"], 1),
        # the plugin installed but following nothing: the core's hook dispatch for its four per-step hooks
        "hook_dispatch_us": round(us["smoke-otel-unconfigured"] - us["smoke"], 1),
        "plugin_own_us": round(us["smoke-otel-noop-providers"] - us["smoke"], 1),
        "sdk_in_run_us": round(us["smoke-otel"] - us["smoke-otel-noop-providers"], 1),
        "profile": profile_otel(),
        "opcodes_per_step": opcode_counts(),
        "versions": {d: installed_version(d) for d in ("smoke-otel", "opentelemetry-sdk")},
    }


# ---------------------------------------------------------------- pydantic-ai


def bench_pydantic_ai(reps: int) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.usage import UsageLimits

    async def run(instrumented: bool) -> tuple[float, int]:
        calls = 0

        async def model_fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
            nonlocal calls
            calls += 1
            if calls < STEPS:
                return ModelResponse(parts=[ToolCallPart(tool_name="noop", args={}, tool_call_id=f"c{calls}")])
            return ModelResponse(parts=[TextPart("done")])

        exporter = None
        instrument: Any = False
        if instrumented:
            tp, mp, exporter = sdk_providers()
            instrument = InstrumentationSettings(tracer_provider=tp, meter_provider=mp, include_content=False)
        agent = Agent(FunctionModel(model_fn))
        agent.instrument = instrument  # pydantic-ai 2.x: a property (older releases: Agent(instrument=...))

        @agent.tool_plain
        async def noop() -> str:
            """Does nothing."""
            return "ok"

        gc.collect()
        t0 = time.perf_counter()
        result = await agent.run("go", usage_limits=UsageLimits(request_limit=None))
        dt = time.perf_counter() - t0
        assert result.output == "done" and calls == STEPS, (result.output, calls)
        return dt, len(exporter.get_finished_spans()) if exporter is not None else 0

    out: dict[str, Any] = {"version": installed_version("pydantic-ai-slim")}
    for name, instrumented in (("pydantic-ai", False), ("pydantic-ai-instrumented", True)):
        asyncio.run(run(instrumented))
        results = [asyncio.run(run(instrumented)) for _ in range(reps)]
        out[name] = {"us_per_step": round(median([r[0] for r in results]) / STEPS * 1e6, 1),
                     "spans": results[-1][1], "runs_s": [round(r[0], 4) for r in results]}
    return out


# ---------------------------------------------------------------- driver


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("smoke", "pydantic-ai"))
    ap.add_argument("--reps", type=int, default=7, help="interleaved runs per Smoke variant")
    ap.add_argument("--peer-reps", type=int, default=3, help="runs per pydantic-ai variant")
    args = ap.parse_args()
    if args.only == "smoke":
        finish(args, bench_smoke(args.reps), lambda r: str(r["us_per_step"]))
        return
    if args.only == "pydantic-ai":
        finish(args, bench_pydantic_ai(args.peer_reps), lambda r: str(r))
        return
    smoke = run_child("bench_otel.py", "--only", "smoke", "--reps", str(args.reps), timeout=600)
    if installed_version("pydantic-ai-slim"):
        peers = run_child("bench_otel.py", "--only", "pydantic-ai", "--peer-reps", str(args.peer_reps), timeout=600)
    else:
        peers = {"error": "pydantic-ai-slim is not installed"}
    us = smoke.get("us_per_step") or {}
    peer_us = (peers.get("pydantic-ai-instrumented") or {}).get("us_per_step")
    result = {
        "name": "otel",
        "steps": STEPS,
        "smoke": smoke,
        "peers": peers,
        "targets": {"ratio": TARGET_RATIO},
        "verdicts": {
            "ratio": verdict(smoke.get("ratio"), TARGET_RATIO),
            "below_pydantic_ai_instrumented": (
                verdict(us.get("smoke-otel"), peer_us) if peer_us is not None else "not measured"),
        },
    }
    if "error" in smoke:
        result["error"] = smoke["error"]
    finish(args, result, table)


def table(r: dict[str, Any]) -> str:
    s, p = r.get("smoke") or {}, r.get("peers") or {}
    us = s.get("us_per_step") or {}
    rows = [[name, us.get(name)] for name in (*SMOKE_VARIANTS, "sdk-floor", "sdk-floor-in-context")]
    for name in ("pydantic-ai", "pydantic-ai-instrumented"):
        rows.append([name, (p.get(name) or {}).get("us_per_step", p.get("error", ""))])
    head = (f"OpenTelemetry overhead at {r.get('steps')} steps (µs per step, median); smoke-otel ÷ smoke = "
            f"{s.get('ratio')} (target ≤ {TARGET_RATIO}: {r['verdicts']['ratio']}); below instrumented "
            f"pydantic-ai: {r['verdicts']['below_pydantic_ai_instrumented']}\n")
    return head + fmt_table(["variant", "µs/step"], rows)


if __name__ == "__main__":
    main()
