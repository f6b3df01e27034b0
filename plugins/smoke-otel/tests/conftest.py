"""Fixtures: settings isolation, fresh in-memory SDK providers per test, and
a real OTLP/HTTP receiver on 127.0.0.1 that decodes what it gets with
opentelemetry-proto."""

from __future__ import annotations

import gzip
import http.server
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from smoke_core.testing import isolate_settings

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_settings(monkeypatch, tmp_path_factory.mktemp("settings-home"))
    # the person's own telemetry setup must not leak into the tests (nor the tests' into it)
    for name in list(os.environ):
        if name.startswith("OTEL_") or name == "SMOKE_TRACE_CONSOLE":
            monkeypatch.delenv(name)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@dataclass
class Telemetry:
    """An OtelPlugin bound to fresh SDK providers with in-memory exporters."""

    plugin: Any
    exporter: Any
    reader: Any
    tracer_provider: Any

    def spans(self) -> list[Any]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[Any]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def one(self, name: str) -> Any:
        found = [s for s in self.spans() if s.name == name]
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {[s.name for s in self.spans()]}"
        return found[0]

    def metrics(self) -> dict[str, list[Any]]:
        """Metric name -> its data points."""
        out: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data else []:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out


def make_telemetry(**kwargs: Any) -> Telemetry:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from smoke_otel import OtelPlugin

    tp = TracerProvider()
    exporter = InMemorySpanExporter()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    return Telemetry(OtelPlugin(tracer_provider=tp, meter_provider=mp, **kwargs), exporter, reader, tp)


@pytest.fixture
def telemetry() -> Telemetry:
    return make_telemetry()


@pytest.fixture(name="make_telemetry")
def _make_telemetry_fixture() -> Any:
    """``make_telemetry(capture_content=..., agent_name=...)`` for a test that needs options or two."""
    return make_telemetry


# ---------------------------------------------------------------- OTLP receiver


@dataclass
class OTLPReceiver:
    """A real OTLP/HTTP (protobuf) receiver: POST /v1/traces and /v1/metrics."""

    url: str = ""
    spans: list[tuple[Any, Any, Any]] = field(default_factory=list)  # (resource, scope, span)
    metrics: list[tuple[Any, Any]] = field(default_factory=list)  # (resource, metric)
    schema_urls: list[str] = field(default_factory=list)  # of each ScopeSpans received
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, predicate: Any, timeout: float = 20.0) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: predicate(self), timeout)

    def span_named(self, name: str) -> list[Any]:
        return [s for _, _, s in self.spans if s.name == name]

    @staticmethod
    def attrs(kvs: Any) -> dict[str, Any]:
        """OTLP protobuf KeyValues as a dict."""
        out: dict[str, Any] = {}
        for kv in kvs:
            value = kv.value
            which = value.WhichOneof("value")
            if which == "array_value":
                out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in value.array_value.values]
            else:
                out[kv.key] = getattr(value, which) if which else None
        return out


def _handler(receiver: OTLPReceiver) -> type[http.server.BaseHTTPRequestHandler]:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
        ExportMetricsServiceResponse,
    )
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            headers = {k.lower(): v for k, v in self.headers.items()}
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                reply = ExportTraceServiceResponse().SerializeToString()
                with receiver.changed:
                    receiver.requests.append((self.path, headers))
                    for rs in request.resource_spans:
                        for ss in rs.scope_spans:
                            receiver.schema_urls.append(ss.schema_url)
                            receiver.spans.extend((rs.resource, ss.scope, s) for s in ss.spans)
                    receiver.changed.notify_all()
            elif self.path == "/v1/metrics":
                mrequest = ExportMetricsServiceRequest.FromString(body)
                reply = ExportMetricsServiceResponse().SerializeToString()
                with receiver.changed:
                    receiver.requests.append((self.path, headers))
                    for rm in mrequest.resource_metrics:
                        for sm in rm.scope_metrics:
                            receiver.metrics.extend((rm.resource, m) for m in sm.metrics)
                    receiver.changed.notify_all()
            else:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    return Handler


@pytest.fixture
def otlp_receiver() -> Iterator[OTLPReceiver]:
    receiver = OTLPReceiver()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def child_env() -> Any:
    """``child_env(**extra)``: the test's environment (settings isolated, no
    OTEL_* variables) plus ``extra``, for a child Python process."""

    def make(**extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(extra)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    return make


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def scripts() -> Path:
    """tests/programs: the small programs the process-level tests run."""
    return HERE / "programs"
