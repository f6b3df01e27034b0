"""``smoke run --trace-console``: each run's spans printed as a tree on
stderr when the run's ``invoke_agent`` span ends (spans end child-first, so
the tree is printed whole, once)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import IO, Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import StatusCode

from . import _conventions as c


def _duration(span: ReadableSpan) -> str:
    ns = (span.end_time or 0) - (span.start_time or 0)
    return f"{ns / 1e9:.2f} s" if ns >= 1e9 else f"{ns / 1e6:.1f} ms"


def describe(span: ReadableSpan) -> str:
    """One line: name, duration, and what matters most about the span."""
    a = span.attributes or {}
    bits = [span.name, _duration(span)]
    if a.get(c.USAGE_INPUT_TOKENS) is not None:
        bits.append(f"tokens {a.get(c.USAGE_INPUT_TOKENS)} in / {a.get(c.USAGE_OUTPUT_TOKENS)} out")
    reasons = a.get(c.RESPONSE_FINISH_REASONS)
    if isinstance(reasons, (list, tuple)) and reasons:
        bits.append(f"finish {','.join(str(r) for r in reasons)}")
    if a.get(c.TOOL_OUTCOME) not in (None, "ok"):
        bits.append(str(a[c.TOOL_OUTCOME]))
    if a.get(c.MODEL_ATTEMPTS):
        bits.append(f"{a[c.MODEL_ATTEMPTS]!s} attempts")
    if span.status.status_code is StatusCode.ERROR:
        bits.append(f"ERROR {a.get(c.ERROR_TYPE, '')!s}".rstrip())
    return "  ".join(bits)


def render_tree(spans: Sequence[ReadableSpan], root: ReadableSpan) -> str:
    children: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        if span.parent is not None:
            children.setdefault(span.parent.span_id, []).append(span)
    trace_id = root.context.trace_id if root.context is not None else 0
    lines = [f"trace {trace_id:032x}", describe(root)]

    def walk(span: ReadableSpan, prefix: str) -> None:
        kids = sorted(children.get(span.context.span_id if span.context else 0, []),
                      key=lambda s: s.start_time or 0)
        for i, kid in enumerate(kids):
            last = i == len(kids) - 1
            lines.append(f"{prefix}{'└─ ' if last else '├─ '}{describe(kid)}")
            walk(kid, prefix + ("   " if last else "│  "))

    walk(root, "")
    return "\n".join(lines) + "\n"


class SpanTreePrinter(SpanExporter):
    """A span exporter that prints the tree of each top-level Smoke run."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self._lock = threading.Lock()
        self._pending: dict[int, list[ReadableSpan]] = {}

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            if span.context is None:
                continue
            with self._lock:
                held = self._pending.setdefault(span.context.trace_id, [])
                held.append(span)
                attrs: dict[str, Any] = dict(span.attributes or {})
                if attrs.get(c.OPERATION_NAME) != c.OP_INVOKE_AGENT or attrs.get(c.RUN_DEPTH, 0) != 0:
                    continue
                del self._pending[span.context.trace_id]
            self.out.write(render_tree(held, span))
            self.out.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._pending.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
