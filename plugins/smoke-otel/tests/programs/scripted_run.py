"""A small program the process-level tests run: one scripted agent run with
the *installed* plugins (smoke-otel comes in through its entry point, as for
a user), configured only by the environment. Prints a JSON report.

    python scripted_run.py [--app-provider] [--bugfix] [--no-otel] [--help-only]

--app-provider  set a global TracerProvider (in-memory exporter) first, like
                an application that configured OpenTelemetry itself, and
                report the spans it got
--bugfix        the scripted bug-fix run of tests/test_e2e.py (needs the tool
                plugins) instead of a two-step run
--no-otel       load every installed plugin except smoke-otel (as if it were
                not installed)
--help-only     run `smoke --help` instead of an agent
--in-span NAME  start the run inside an application span NAME (needs --app-provider)
--hard-exit     end with os._exit after agent.aclose(): no atexit flush, so
                whatever arrived was flushed by the close_agent hook
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

OLD = '    values = list(values)\n    if not values:\n        raise ValueError("median() of an empty sequence")'
NEW = OLD.replace("list(values)", "sorted(values)")


def bugfix_turns() -> list[Any]:
    test_cmd = f"{shlex.quote(sys.executable)} -m unittest discover -s tests"
    return [
        {"tool_calls": [{"name": "grep", "input": {"pattern": "def median"}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "stats/core.py"}}]},
        {"tool_calls": [{"name": "run_test", "input": {"command": test_cmd}}]},
        {"tool_calls": [{"name": "edit_file", "input": {"path": "stats/core.py", "old_string": OLD,
                                                        "new_string": NEW}}]},
        {"tool_calls": [{"name": "run_test", "input": {"command": test_cmd}}]},
        {"tool_calls": [{"name": "finish_task", "input": {"summary": "median() sorts its input now"}}]},
    ]


async def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app-provider", action="store_true")
    ap.add_argument("--bugfix", action="store_true")
    ap.add_argument("--no-otel", action="store_true")
    ap.add_argument("--help-only", action="store_true")
    ap.add_argument("--in-span")
    ap.add_argument("--hard-exit", action="store_true")
    args = ap.parse_args()
    report: dict[str, Any] = {}

    if args.no_otel:
        import os
        from importlib.metadata import entry_points

        names = [ep.name for ep in entry_points(group="smoke") if ep.name != "otel"]
        os.environ["SMOKE_LOAD_PLUGINS"] = ",".join(names) or "none-at-all"

    if args.help_only:
        import contextlib
        import io

        from smoke_core.cli import cli

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cli.main(["--help"], prog_name="smoke", standalone_mode=False)
        report["help"] = out.getvalue()
        report["otel_modules"] = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
        return report

    exporter = None
    if args.app_provider:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        provider = TracerProvider()
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    with tempfile.TemporaryDirectory() as tmp:
        if args.bugfix:
            from smoke_core.demo import copy_sample_project

            ws = copy_sample_project(Path(tmp) / "project")
            provider_obj = ScriptedProvider(bugfix_turns())
        else:
            ws = Path(tmp)
            provider_obj = ScriptedProvider([
                {"tool_calls": [{"name": "probe", "input": {"what": "disk"}}],
                 "usage": {"input_tokens": 30, "output_tokens": 7}},
                {"text": "all good", "usage": {"input_tokens": 40, "output_tokens": 3}},
            ])
        from smoke_core import tool

        @tool(read_only=True)
        def probe(what: str) -> str:
            """Probe something."""
            return f"{what}: ok"

        agent = create_agent(ws, provider=provider_obj, session_id="ses_e2e",
                             tools=None if args.bugfix else [probe])
        if args.bugfix:
            agent.on("permission.required", lambda e: agent.resolve_permission(e.data["tool_call_id"], "allow"))
        warnings: list[str] = []
        agent.on("run.warning", lambda e: warnings.append(e.data["error"]["message"]))
        if args.in_span:
            from opentelemetry import trace

            with trace.get_tracer("app").start_as_current_span(args.in_span) as span:
                result = await agent.run("Fix median()" if args.bugfix else "check the disk")
                ctx = span.get_span_context()
                report["app_span"] = {"trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}"}
        else:
            result = await agent.run("Fix median()" if args.bugfix else "check the disk")
        await agent.aclose()
        report.update(status=result.status, error=result.error.code if result.error else None, run_id=result.run_id,
                      warnings=warnings, plugins=sorted(str(getattr(p, "__name__", p))
                                                        for p in agent.plugin_manager.get_plugins()))
        if args.bugfix:
            report["fixed"] = NEW.split("\n")[0].strip() in (ws / "stats" / "core.py").read_text()
    report["otel_modules"] = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
    if exporter is not None:
        report["app_spans"] = [
            {"name": s.name, "trace_id": f"{s.context.trace_id:032x}", "span_id": f"{s.context.span_id:016x}",
             "parent": f"{s.parent.span_id:016x}" if s.parent else None}
            for s in exporter.get_finished_spans()
        ]
    return report


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())), flush=True)
    if "--hard-exit" in sys.argv:
        import os

        os._exit(0)
