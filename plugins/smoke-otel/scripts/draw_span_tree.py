"""Draw the span tree of a real `smoke demo` run for docs/observability.md.

Runs ``smoke demo --yes`` in a child process configured only by the standard
variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a local OTLP/HTTP
receiver this script starts on 127.0.0.1), decodes the protobuf export with
opentelemetry-proto, saves the trace as JSON and draws it as a timeline,
one row per span, indented by depth.

    pip install -e "plugins/smoke-otel[docs]"     # matplotlib, opentelemetry-proto
    python plugins/smoke-otel/scripts/draw_span_tree.py            # run the demo, write both files
    python plugins/smoke-otel/scripts/draw_span_tree.py --from docs/images/otel-demo-trace.json   # redraw

Writes docs/images/otel-demo-trace.json and docs/images/otel-span-tree.png.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
IMAGES = ROOT / "docs" / "images"


# ---------------------------------------------------------------- capture


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def capture_demo_trace() -> dict[str, Any]:
    """Run the demo with OTLP export to a local receiver; the decoded trace."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    received: list[dict[str, Any]] = []
    resource: dict[str, Any] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.path == "/v1/traces":
                for rs in ExportTraceServiceRequest.FromString(body).resource_spans:
                    resource.update(_attrs(rs.resource.attributes))
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            received.append({
                                "name": s.name, "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                                "parent_span_id": s.parent_span_id.hex() or None, "kind": s.kind,
                                "start_ns": s.start_time_unix_nano, "end_ns": s.end_time_unix_nano,
                                "status": s.status.code, "attributes": _attrs(s.attributes),
                                "events": [{"name": e.name, "attributes": _attrs(e.attributes)} for e in s.events],
                            })
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}",
               OTEL_SERVICE_NAME="smoke-demo", OTEL_METRICS_EXPORTER="none")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run([sys.executable, "-m", "smoke_core.cli", "demo", "--yes", "--json",
                                   "-w", str(Path(tmp) / "project")],
                                  env=env, capture_output=True, text=True, timeout=300, check=False)
    finally:
        server.shutdown()
        server.server_close()
    if proc.returncode != 0:
        raise SystemExit(f"smoke demo failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    if not received:
        raise SystemExit("no spans arrived: is smoke-otel installed (pip install -e plugins/smoke-otel)?")
    return {"resource": resource, "spans": received,
            "note": "exported over OTLP/HTTP by `smoke demo --yes` with OTEL_EXPORTER_OTLP_ENDPOINT set; "
                    "written by plugins/smoke-otel/scripts/draw_span_tree.py"}


# ---------------------------------------------------------------- drawing


def ordered(spans: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(depth, span), parents before children, siblings by start time."""
    ids = {s["span_id"] for s in spans}
    kids: dict[str | None, list[dict[str, Any]]] = {}
    for s in spans:
        parent = s["parent_span_id"] if s["parent_span_id"] in ids else None
        kids.setdefault(parent, []).append(s)
    out: list[tuple[int, dict[str, Any]]] = []

    def walk(parent: str | None, depth: int) -> None:
        for s in sorted(kids.get(parent, []), key=lambda x: x["start_ns"]):
            out.append((depth, s))
            walk(s["span_id"], depth + 1)

    walk(None, 0)
    return out


def label(span: dict[str, Any]) -> str:
    a = span["attributes"]
    if span["name"].startswith("chat"):
        reasons = ",".join(a.get("gen_ai.response.finish_reasons") or [])
        return f"{a.get('gen_ai.usage.input_tokens')} in / {a.get('gen_ai.usage.output_tokens')} out tokens · {reasons}"
    if span["name"].startswith("execute_tool"):
        asked = " · approved" if any(e["name"] == "smoke.permission.resolved" for e in span["events"]) else ""
        return f"{a.get('smoke.tool.outcome')}{asked}"
    if span["name"].startswith("invoke_agent"):
        return (f"{a.get('smoke.run.status')} · {a.get('smoke.run.steps')} steps · "
                f"{a.get('gen_ai.usage.input_tokens')} in / {a.get('gen_ai.usage.output_tokens')} out tokens")
    return ""


def draw(trace: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = ordered(trace["spans"])
    t0 = min(s["start_ns"] for _, s in rows)
    t_end = max(s["end_ns"] for _, s in rows)
    total_ms = (t_end - t0) / 1e6
    colours = {"invoke_agent": "#4c72b0", "chat": "#dd8452", "execute_tool": "#55a868"}
    fig, ax = plt.subplots(figsize=(13, 0.42 * len(rows) + 1.6), dpi=110)
    for i, (_depth, s) in enumerate(rows):
        kind = s["name"].split(" ", 1)[0]
        start = (s["start_ns"] - t0) / 1e6
        width = max((s["end_ns"] - s["start_ns"]) / 1e6, total_ms / 400)  # keep sub-ms spans visible
        colour = "#c44e52" if s["status"] == 2 else colours.get(kind, "#8172b2")
        ax.barh(i, width, left=start, height=0.62, color=colour)
        ms = (s["end_ns"] - s["start_ns"]) / 1e6
        ax.text(start + width + total_ms * 0.006, i, f"{ms:.1f} ms · {label(s)}", va="center", fontsize=8,
                color="#333333")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([("    " * depth) + s["name"] for depth, s in rows], fontsize=9, fontfamily="monospace")
    for tick in ax.get_yticklabels():
        tick.set_horizontalalignment("left")
    ax.tick_params(axis="y", pad=max(len(("    " * d) + s["name"]) for d, s in rows) * 6.2)
    ax.invert_yaxis()
    ax.set_xlim(0, total_ms * 1.55)
    ax.set_xlabel("ms since the run started")
    service = trace.get("resource", {}).get("service.name", "")
    trace_id = rows[0][1]["trace_id"]
    ax.set_title(f"smoke demo, one trace ({len(rows)} spans) as exported over OTLP/HTTP — service.name={service}, "
                 f"trace {trace_id[:16]}…", fontsize=10, loc="left")
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    ax.legend(handles, ["invoke_agent (run)", "chat (model call)", "execute_tool (tool call)"],
              loc="lower right", fontsize=8, frameon=False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", help="draw a saved trace JSON instead of running the demo")
    ap.add_argument("--trace-out", default=str(IMAGES / "otel-demo-trace.json"))
    ap.add_argument("--png-out", default=str(IMAGES / "otel-span-tree.png"))
    args = ap.parse_args()
    if args.source:
        trace = json.loads(Path(args.source).read_text())
    else:
        trace = capture_demo_trace()
        Path(args.trace_out).write_text(json.dumps(trace, indent=1, sort_keys=True) + "\n")
        print(f"wrote {args.trace_out} ({len(trace['spans'])} spans)")
    draw(trace, Path(args.png_out))


if __name__ == "__main__":
    main()
