"""The provider contract (DESIGN §7): the request, the stream events, usage,
retries, the registry. Public through :mod:`smoke_core.providers`."""

from __future__ import annotations

import email.utils
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..base.errors import AgentError, AgentErrorInfo
from ..base.messages import Message


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    #: US dollars, when the model's price is known (``genai-prices``); None = unknown
    cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage) -> None:
        """Add ``other``; the cost stays known only while every part of it is."""
        had = self.total_tokens > 0 or self.cost_usd is not None
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.reasoning_tokens += other.reasoning_tokens
        if other.cost_usd is None:
            if other.total_tokens:
                self.cost_usd = None
        elif not had:
            self.cost_usd = other.cost_usd
        elif self.cost_usd is not None:
            self.cost_usd += other.cost_usd

    def to_dict(self) -> dict[str, int | float | None]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 8),
        }


@dataclass(slots=True)
class ModelRequest:
    """What a provider is asked: neutral messages, tool schemas (name,
    description, input_schema — never a presentation), the system prompt and
    settings (``max_tokens``, ``temperature``, ...)."""

    model: str
    messages: list[Message]
    tools: list[dict[str, Any]]
    system: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    user_id: str | None = None


# ------------------------------------------------------------------ stream events


@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ThoughtDelta:
    text: str
    signature: str | None = None


@dataclass(slots=True)
class ToolCallRequest:
    """A complete tool call. ``arguments`` is the raw JSON text when the
    provider streamed it (the loop parses it and feeds malformed JSON back as
    ``tool_invalid_input``), or an already-parsed dict."""

    id: str
    name: str
    arguments: str | dict[str, Any]


@dataclass(slots=True)
class UsageReport:
    usage: Usage


@dataclass(slots=True)
class Finished:
    reason: str  # "stop" | "tool_calls" | "length" | "content_filter" | provider-specific
    #: the model that answered, as the provider names it (may differ from the one asked), and its response id
    model: str | None = None
    response_id: str | None = None


@dataclass(slots=True)
class Progress:
    """Work the model does that shows no text yet, so a run is seen to be
    alive: ``kind`` ``"prompt"`` (the server reading the prompt: ``done`` of
    ``total`` tokens, as llama.cpp's ``prompt_progress`` says) or
    ``"tool_arguments"`` (a tool call's arguments streaming: ``done``
    characters so far, ``name`` the tool when known). It counts as progress
    for ``progress_timeout``; the loop emits it as ``model.progress``."""

    kind: str
    done: int
    total: int | None = None
    name: str | None = None


@dataclass(slots=True)
class ProviderNotice:
    """Something a person should know that does not stop the call: the
    provider fell back to another way of doing what was asked
    (``provider_fallback``: tool calls go inline), or could not read what the
    server says about itself. ``code`` is an error code; the loop emits the
    notice as ``run.warning`` (severity warning)."""

    code: str
    message: str
    hint: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


ProviderEvent = TextDelta | ThoughtDelta | ToolCallRequest | UsageReport | Finished | Progress | ProviderNotice


@runtime_checkable
class Provider(Protocol):
    """Implement ``stream``; ``name`` and ``model`` identify the provider. A
    provider whose model cannot take images sets ``supports_images = False``
    (absent means it can): a task with images is then refused before any call."""

    name: str
    model: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]: ...


ProviderFactory = Callable[..., Provider]


@dataclass(slots=True)
class ProviderSpec:
    name: str
    factory: ProviderFactory
    env_var: str | None = None
    description: str = ""
    default_model: str | None = None
    source: str = "<unknown>"


class ProviderRegistry:
    """Provider factories by name, filled through ``register_providers``."""

    def __init__(self) -> None:
        self._specs: dict[str, ProviderSpec] = {}

    def register(
        self,
        name: str,
        factory: ProviderFactory,
        *,
        env_var: str | None = None,
        description: str = "",
        default_model: str | None = None,
        source: str = "<unknown>",
    ) -> None:
        if name in self._specs:
            raise ValueError(
                f"cannot register provider {name!r} twice: already provided by {self._specs[name].source}, "
                f"registered again by {source}"
            )
        self._specs[name] = ProviderSpec(name, factory, env_var, description, default_model, source)

    def get(self, name: str) -> ProviderSpec | None:
        return self._specs.get(name)

    def names(self) -> list[str]:
        return sorted(self._specs)

    def specs(self) -> list[ProviderSpec]:
        return [self._specs[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._specs


# ------------------------------------------------------------------ keys and retries


ApiKey = str | Callable[[str, str | None], str | None] | None


def resolve_api_key(api_key: ApiKey, provider: str, user_id: str | None, env_var: str | None) -> str | None:
    """``api_key`` as given (a string, or ``callable(provider, user_id)``), else the env variable."""
    if callable(api_key):
        value = api_key(provider, user_id)
        if value:
            return value
    elif api_key:
        return api_key
    if env_var:
        return os.environ.get(env_var) or None
    return None


@dataclass(slots=True)
class RetryPolicy:
    """Capped exponential backoff with full jitter for retryable provider errors.

    ``max_retries=0`` disables retries. ``Retry-After`` (given by adapters
    in ``details["retry_after"]`` as seconds) is honoured up to ``max_delay``.
    """

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 20.0
    jitter: bool = True

    def delay(self, attempt: int, info: AgentErrorInfo, rand: Callable[[], float]) -> float:
        retry_after = info.details.get("retry_after") if info.details else None
        if isinstance(retry_after, (int, float)) and retry_after >= 0:
            return min(float(retry_after), float(self.max_delay))
        cap: float = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return cap * rand() if self.jitter else cap


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if parsed is None:
        return None
    return max(0.0, parsed.timestamp() - (time.time() if now is None else now))


def classify_http_status(
    status: int,
    message: str,
    *,
    provider: str,
    env_var: str | None = None,
    retry_after: float | None = None,
    details: dict[str, Any] | None = None,
) -> AgentError:
    """Map an HTTP error status to a classified :class:`AgentError` (DESIGN §5)."""
    info_details = {"status": status, "provider": provider, **(details or {})}
    if status in (401, 403):
        key_hint = f"Set {env_var} or pass api_key=." if env_var else "Pass a valid api_key=."
        return AgentError.from_code(
            "provider_auth", f"{provider} refused the credentials (HTTP {status}): {message}",
            hint=key_hint, details=info_details,
        )
    if status == 429:
        if retry_after is not None:
            info_details["retry_after"] = retry_after
        return AgentError.from_code(
            "provider_rate_limited", f"{provider} rate limit hit (HTTP 429): {message}", details=info_details
        )
    if status in (408, 409, 529) or 500 <= status < 600:
        if retry_after is not None:
            info_details["retry_after"] = retry_after
        return AgentError.from_code("provider_unavailable", f"{provider} is unavailable (HTTP {status}): {message}", details=info_details)
    return AgentError.from_code(
        "provider_error", f"{provider} rejected the request (HTTP {status}): {message}", details=info_details
    )
