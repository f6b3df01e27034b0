"""The door for provider authors (DESIGN §7).

Everything a provider adapter needs is importable from here: the contract
(:class:`Provider`, :class:`ModelRequest`, the stream events, :class:`Usage`,
:class:`RetryPolicy`, :data:`ApiKey`) and, for JSON-over-HTTP APIs,
:class:`HTTPProvider` with its public override points, the bounds of a
response (:class:`ResponseLimits`) and the failure classifiers
(``http_error``, ``in_band_error``, ``transport_error``, ``redirect_error``,
``rejected_tool_call``); and a model's limits (:func:`model_facts` →
:class:`ModelFacts`: context window, maximum output).

A provider turns a :class:`ModelRequest` into an async stream of neutral
events: :class:`TextDelta`, :class:`ThoughtDelta`, :class:`ToolCallRequest`,
:class:`UsageReport` and one final :class:`Finished`, and when it helps
:class:`Progress` (work that shows no text yet) and :class:`ProviderNotice`
(a fallback or a problem a person should hear of: a ``run.warning``). It raises
:class:`~smoke_core.plugin.AgentError` with a classified code on failure; the
loop owns retries (:class:`RetryPolicy`), so adapters only classify. ``httpx``
is imported only when a request is made.
"""

from __future__ import annotations

from .base.errors import AgentError, AgentErrorInfo
from .wire.http_errors import (
    TOOL_CALL_REJECTED_CODES,
    context_overflow,
    http_error,
    in_band_error,
    redirect_error,
    rejected_tool_call,
    transport_error,
)
from .wire.http_limits import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_PROGRESS_TIMEOUT,
    DEFAULT_RESPONSE_TIMEOUT,
    ResponseLimits,
)
from .wire.http_provider import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
    TRANSPORT_SETTINGS,
    HTTPProvider,
    shared_ssl_context,
)
from .wire.model_facts import DEFAULT_CONTEXT_WINDOW, ModelFacts, default_max_tokens, model_facts
from .wire.types import (
    ApiKey,
    Finished,
    ModelRequest,
    Progress,
    Provider,
    ProviderEvent,
    ProviderFactory,
    ProviderNotice,
    ProviderRegistry,
    ProviderSpec,
    RetryPolicy,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    Usage,
    UsageReport,
    classify_http_status,
    parse_retry_after,
    resolve_api_key,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_PROGRESS_TIMEOUT",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_RESPONSE_TIMEOUT",
    "TOOL_CALL_REJECTED_CODES",
    "TRANSPORT_SETTINGS",
    "AgentError",
    "AgentErrorInfo",
    "ApiKey",
    "Finished",
    "HTTPProvider",
    "ModelFacts",
    "ModelRequest",
    "Progress",
    "Provider",
    "ProviderEvent",
    "ProviderFactory",
    "ProviderNotice",
    "ProviderRegistry",
    "ProviderSpec",
    "ResponseLimits",
    "RetryPolicy",
    "TextDelta",
    "ThoughtDelta",
    "ToolCallRequest",
    "Usage",
    "UsageReport",
    "classify_http_status",
    "context_overflow",
    "default_max_tokens",
    "http_error",
    "in_band_error",
    "model_facts",
    "parse_retry_after",
    "redirect_error",
    "rejected_tool_call",
    "resolve_api_key",
    "shared_ssl_context",
    "transport_error",
]
