"""Where telemetry goes: the application's providers, or providers Smoke
builds from the standard ``OTEL_*`` variables — never both.

- An application that set a global ``TracerProvider`` / ``MeterProvider``
  keeps it: Smoke configures nothing for that signal and its spans go there.
- Otherwise, when the environment asks for export (``OTEL_TRACES_EXPORTER`` /
  ``OTEL_METRICS_EXPORTER`` set to something other than ``none``, or an
  ``OTEL_EXPORTER_OTLP_*ENDPOINT``), Smoke builds the SDK provider, sets it
  as the global one (the application's other instrumentation uses it too)
  and flushes it when an agent is closed and at exit.
- ``SMOKE_TRACE_CONSOLE=1`` (``smoke run --trace-console``) adds the span
  tree printer on stderr.
- ``OTEL_SDK_DISABLED=true``: nothing is configured.

Configuration happens once per process, on the first run.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("smoke")

TRACE_CONSOLE_ENV = "SMOKE_TRACE_CONSOLE"
_TRUE = frozenset({"1", "true", "yes", "on"})
#: set by ``--trace-console`` (``_cli``): the same as ``SMOKE_TRACE_CONSOLE=1``
console_requested = False


@dataclass
class Setup:
    """What :func:`configure_from_environment` did."""

    #: providers Smoke built (flushed by ``close_agent``)
    owned: list[Any] = field(default_factory=list)
    #: problems a person should hear about (reported as ``run.warning``)
    problems: list[str] = field(default_factory=list)
    #: one line per signal saying where it goes (for ``smoke plugins``-style reports and tests)
    notes: list[str] = field(default_factory=list)


def _flag(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() in _TRUE


def _exporter_names(environ: Mapping[str, str], signal: str) -> list[str]:
    """The exporters the environment asks for, for ``signal`` (traces | metrics)."""
    raw = environ.get(f"OTEL_{signal.upper()}_EXPORTER")
    if raw is not None:
        names = [n.strip().lower() for n in raw.split(",") if n.strip()]
        return [] if names == ["none"] or not names else [n for n in names if n != "none"]
    endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    return ["otlp"] if any(environ.get(e) for e in endpoints) else []


def _protocol(environ: Mapping[str, str], signal: str) -> str:
    value = environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL"
    )
    return (value or "http/protobuf").strip().lower()


def _entry_point(group: str, name: str) -> Any:
    from importlib.metadata import entry_points

    for ep in entry_points(group=group, name=name):
        return ep.load()
    return None


_OTLP_ENTRY_POINTS = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}
_OTLP_PACKAGES = {"http/protobuf": "opentelemetry-exporter-otlp-proto-http",
                  "grpc": "opentelemetry-exporter-otlp-proto-grpc"}


def _make_exporter(name: str, signal: str, environ: Mapping[str, str], problems: list[str]) -> Any:
    group = f"opentelemetry_{signal}_exporter"
    if name == "console":
        if signal == "traces":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            return ConsoleSpanExporter(out=sys.stderr)  # stdout may be `smoke run --json`'s event stream
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter(out=sys.stderr)
    if name == "otlp":
        protocol = _protocol(environ, signal)
        ep_name = _OTLP_ENTRY_POINTS.get(protocol)
        if ep_name is None:
            problems.append(
                f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported by smoke-otel, so {signal} are not "
                f"exported; use http/protobuf (the default) or grpc"
            )
            return None
        cls = _entry_point(group, ep_name)
        if cls is None:
            problems.append(
                f"OTLP over {protocol} needs {_OTLP_PACKAGES[protocol]}, which is not installed, so {signal} "
                f"are not exported: pip install {_OTLP_PACKAGES[protocol]}"
            )
            return None
        return cls()
    cls = _entry_point(group, name)
    if cls is None:
        problems.append(
            f"OTEL_{signal.upper()}_EXPORTER names {name!r}, but no installed package provides that exporter "
            f"(entry point group {group}), so {signal} are not sent there; use otlp, console or none, or install "
            f"the exporter's package"
        )
        return None
    return cls()


def _resource() -> Any:
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win; "smoke" only replaces the SDK's placeholder
        resource = resource.merge(Resource({SERVICE_NAME: "smoke"}))
    return resource


def tracer_provider_is_set() -> bool:
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def meter_provider_is_set() -> bool:
    from opentelemetry import metrics

    provider = metrics.get_meter_provider()
    # the API's proxy class is private; it is what get_meter_provider returns until one is set
    return not isinstance(provider, metrics.NoOpMeterProvider) and type(provider).__name__ != "_ProxyMeterProvider"


def configure_from_environment(environ: Mapping[str, str] | None = None) -> Setup:
    """Set the global providers from the environment where the application did not."""
    env = os.environ if environ is None else environ
    setup = Setup()
    if _flag(env, "OTEL_SDK_DISABLED"):
        setup.notes.append("OTEL_SDK_DISABLED is set: smoke-otel configures nothing")
        return setup
    console = console_requested or _flag(env, TRACE_CONSOLE_ENV)

    if tracer_provider_is_set():
        setup.notes.append("traces: the application's TracerProvider")
        if console:
            setup.problems.append(
                f"{TRACE_CONSOLE_ENV} / --trace-console is ignored: the application configured its own "
                f"TracerProvider, and smoke-otel does not change it (add a console exporter there)"
            )
    else:
        exporters = [e for e in (_make_exporter(n, "traces", env, setup.problems)
                                 for n in _exporter_names(env, "traces")) if e is not None]
        if exporters or console:
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

            provider = TracerProvider(resource=_resource())
            for exporter in exporters:
                provider.add_span_processor(BatchSpanProcessor(exporter))
            if console:
                from ._console import SpanTreePrinter

                provider.add_span_processor(SimpleSpanProcessor(SpanTreePrinter(sys.stderr)))
            trace.set_tracer_provider(provider)
            setup.owned.append(provider)
            names = [type(e).__name__ for e in exporters] + (["span tree on stderr"] if console else [])
            setup.notes.append(f"traces: {', '.join(names)}")

    if meter_provider_is_set():
        setup.notes.append("metrics: the application's MeterProvider")
    else:
        exporters = [e for e in (_make_exporter(n, "metrics", env, setup.problems)
                                 for n in _exporter_names(env, "metrics")) if e is not None]
        if exporters:
            from opentelemetry import metrics
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

            meter_provider = MeterProvider(
                resource=_resource(), metric_readers=[PeriodicExportingMetricReader(e) for e in exporters]
            )
            metrics.set_meter_provider(meter_provider)
            setup.owned.append(meter_provider)
            setup.notes.append(f"metrics: {', '.join(type(e).__name__ for e in exporters)}")
    for problem in setup.problems:
        log.warning("smoke-otel: %s", problem)
    return setup


def header_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the OTLP header variables (``x-honeycomb-team=KEY``,
    ``Authorization=Bearer TOKEN``): backend credentials Smoke must redact."""
    env = os.environ if environ is None else environ
    out = []
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                 "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"):
        for item in env.get(name, "").split(","):
            _, sep, value = item.partition("=")
            if sep:
                from urllib.parse import unquote

                value = unquote(value.strip())
                out.append(value)
                # "Bearer abc" / "Basic abc": the token alone, too
                if " " in value:
                    out.append(value.split(None, 1)[1])
    return out
