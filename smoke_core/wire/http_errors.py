"""Failure classification shared by HTTP provider adapters (DESIGN §5).

Used by smoke-provider-openai and smoke-provider-anthropic, and by any
third-party adapter speaking HTTP: error bodies, in-band stream errors and
transport exceptions become classified :class:`~smoke_core.plugin.AgentError`s.
``httpx`` is imported only inside :func:`transport_error` (core does not
depend on it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..base.errors import AgentError
from .types import classify_http_status, parse_retry_after

# In-band error codes/types (string form) → the HTTP status they stand for.
_CODE_STATUS = {
    "rate_limit_exceeded": 429,
    "rate_limit_error": 429,
    "rate_limited": 429,
    "too_many_requests": 429,
    "invalid_api_key": 401,
    "authentication_error": 401,
    "unauthorized": 401,
    "permission_denied": 403,
    "permission_error": 403,
    "server_error": 500,
    "internal_error": 500,
    "internal_server_error": 500,
    "api_error": 500,
    "service_unavailable": 503,
    "overloaded": 529,
    "overloaded_error": 529,
    "bad_gateway": 502,
    "invalid_request_error": 400,
    "context_length_exceeded": 400,
    "not_found_error": 404,
    "model_not_found": 404,
}
_TIMEOUT_CODES = {"timeout", "timeout_error", "request_timeout"}

#: error codes that say "the model's tool call was invalid" (Groq validates calls server-side)
TOOL_CALL_REJECTED_CODES = frozenset({"tool_use_failed"})
# What a JSON parser says about the model's unparsable tool-call arguments (vLLM, SGLang and
# other Python servers answer 400 with json's message; Rust-based ones with serde's).
_JSON_PARSE_MESSAGE = re.compile(
    r"^(Expecting (value|property name enclosed in double quotes|',' delimiter|':' delimiter)"
    r"|Unterminated string starting at|Invalid control character at|Invalid \\escape|Extra data"
    r"|EOF while parsing|trailing characters at line|key must be a string at line)"
    r"|JSONDecodeError|is not valid JSON",
)


# What servers say when the prompt does not fit the context they serve (llama.cpp's
# exceed_context_size_error, OpenAI's and vLLM's "maximum context length", Anthropic's
# "prompt is too long"); matched on these words only, never on any 400.
_OVERFLOW_TYPES = frozenset({"exceed_context_size_error", "context_length_exceeded"})
_OVERFLOW_MESSAGE = re.compile(
    r"exceeds the available context size|maximum context length is \d+|prompt is too long"
    r"|context_length_exceeded|input (?:is )?too long for (?:the )?(?:requested )?model", re.I,
)
_NUMBERS = (
    (re.compile(r"\((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"), ("n_prompt_tokens", "n_ctx")),
    (re.compile(r"maximum context length is (\d+) tokens.*?(?:requested|resulted in) (\d+) tokens", re.S),
     ("n_ctx", "n_prompt_tokens")),
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+)"), ("n_prompt_tokens", "n_ctx")),
)


def context_overflow(
    err: Mapping[str, Any], message: str, *, provider: str, status: int | None
) -> AgentError | None:
    """``provider_context_overflow`` when the error says the prompt is longer
    than the context the server serves (``details``: ``n_ctx`` and
    ``n_prompt_tokens`` where the server says them), else None. The run
    answers it by compacting the history and trying once more."""
    kinds = {str(err.get(k)).lower() for k in ("type", "code") if err.get(k) is not None}
    if status not in (None, 400, 413, 422) or not (kinds & _OVERFLOW_TYPES or _OVERFLOW_MESSAGE.search(message)):
        return None
    details: dict[str, Any] = {"provider": provider}
    if status is not None:
        details["status"] = status
    for key in ("n_ctx", "n_prompt_tokens"):
        if isinstance(err.get(key), int) and not isinstance(err.get(key), bool):
            details[key] = err[key]
    for pattern, names in _NUMBERS:
        match = pattern.search(message)
        if match:
            for name, value in zip(names, match.groups(), strict=True):
                details.setdefault(name, int(value))
            break
    size = f" ({details['n_prompt_tokens']:,} tokens; the server serves {details['n_ctx']:,})" if {
        "n_ctx", "n_prompt_tokens"} <= set(details) else ""
    return AgentError.from_code(
        "provider_context_overflow", f"the prompt is longer than the context {provider} serves{size}: {message}",
        details=details,
    )


def retry_after_from(headers: Mapping[str, str]) -> float | None:
    """``retry-after-ms`` (OpenAI) wins over ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    return parse_retry_after(headers.get("retry-after"))


def error_message(body: bytes | str, limit: int = 500) -> tuple[str, dict[str, Any]]:
    """The human message and the parsed ``error`` object of an error body."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
    except ValueError:
        return (text.strip()[:limit] or "(empty body)"), {}
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        message = str(err.get("message") or err.get("type") or err.get("code") or "")
        raw = (err.get("metadata") or {}).get("raw") if isinstance(err.get("metadata"), dict) else None
        if raw:
            message = f"{message}: {raw}"
        return message[:limit], err
    if isinstance(err, str):
        return err[:limit], {"message": err}
    if isinstance(data, dict) and data.get("message"):
        return str(data["message"])[:limit], {}
    return text.strip()[:limit], {}


def rejected_tool_call(
    err: Mapping[str, Any], message: str, *, provider: str, status: int | None, tools_sent: bool
) -> AgentError | None:
    """``tool_invalid_input`` when the provider refused the *model's* tool call
    (the loop tells the model and asks again), else None.

    Two forms: an error ``code`` of :data:`TOOL_CALL_REJECTED_CODES` (Groq's
    ``tool_use_failed``, in a 400 body or inside a 200 stream, with the
    model's text in ``failed_generation``), and a 400 whose message is a JSON
    parser's complaint while tools were sent (vLLM and other servers that
    parse the generated tool-call JSON). Any other error is not the model's
    mistake and stays what it was."""
    code = err.get("code")
    in_band = status is None
    if isinstance(code, str) and code.lower() in TOOL_CALL_REJECTED_CODES:
        kind = str(code)
    elif status == 400 and tools_sent and _JSON_PARSE_MESSAGE.search(message.strip()):
        kind = "unparsable_tool_call"
    else:
        return None
    failed = err.get("failed_generation")
    details: dict[str, Any] = {"provider": provider, "error_code": code, "rejected": kind, "in_band": in_band}
    if status is not None:
        details["status"] = status
    if isinstance(failed, str):
        details["failed_generation"] = failed[:4000]
    where = "inside the stream" if in_band else f"HTTP {status}"
    return AgentError.from_code(
        "tool_invalid_input",
        f"{provider} rejected the model's tool call ({where}): {message}",
        hint="The model is told what it sent and asked again; repeated rejections end the run.",
        details=details,
    )


def http_error(
    status: int, body: bytes, headers: Mapping[str, str], *, provider: str, env_var: str | None,
    tools_sent: bool = False,
) -> AgentError:
    """A classified error for an HTTP error answer (``tools_sent``: the request
    offered tools, so a JSON parser's 400 is about the model's tool call)."""
    message, err = error_message(body)
    rejected = rejected_tool_call(err, message, provider=provider, status=status, tools_sent=tools_sent)
    if rejected is not None:
        return rejected
    overflow = context_overflow(err, message, provider=provider, status=status)
    if overflow is not None:
        return overflow
    details: dict[str, Any] = {}
    for key in ("type", "code", "param"):
        if err.get(key) is not None:
            details[f"error_{key}"] = err[key]
    request_id = headers.get("x-request-id") or headers.get("request-id")
    if request_id:
        details["request_id"] = request_id
    if err.get("code") == "insufficient_quota":
        # A 429 that waiting does not fix: the account has no credit left.
        return AgentError.from_code(
            "provider_error", f"{provider} refused the request (HTTP {status}): {message}",
            hint="The account has no quota left; add credit or use another key.",
            details={"status": status, "provider": provider, **details},
        )
    return classify_http_status(
        status, message, provider=provider, env_var=env_var,
        retry_after=retry_after_from(headers), details=details,
    )


def redirect_error(status: int, headers: Mapping[str, str], *, provider: str, url: str) -> AgentError:
    """A 3xx answer to a model call: reported as a redirect (with where it
    points), never parsed as a body. Not followed: the request carries the
    key and the conversation, and the base URL is the person's to change."""
    location = headers.get("location") or "(no Location header)"
    return AgentError.from_code(
        "provider_error",
        f"{provider} answered {url} with a redirect (HTTP {status}) to {location}; Smoke does not follow "
        f"redirects for model calls",
        hint="If the new address is the right endpoint, use it as the base URL.",
        details={"status": status, "provider": provider, "url": url, "location": location},
    )


def in_band_error(err: Any, *, provider: str, env_var: str | None) -> AgentError:
    """An ``{"error": {...}}`` object that arrived inside a 200 stream."""
    if not isinstance(err, dict):
        err = {"message": str(err)}
    code = err.get("code")
    etype = err.get("type")
    message = str(err.get("message") or etype or code or "unknown error")
    rejected = rejected_tool_call(err, message, provider=provider, status=None, tools_sent=True)
    if rejected is not None:
        return rejected
    overflow = context_overflow(err, message, provider=provider, status=None)
    if overflow is not None:
        return overflow
    raw = (err.get("metadata") or {}).get("raw") if isinstance(err.get("metadata"), dict) else None
    if raw:
        message = f"{message}: {raw}"
    details = {"in_band": True, "error_code": code, "error_type": etype}
    status: int | None = None
    if isinstance(code, int) or (isinstance(code, str) and code.isdigit()):
        status = int(code)
    else:
        for candidate in (code, etype):
            if isinstance(candidate, str):
                if candidate.lower() in _TIMEOUT_CODES:
                    return AgentError.from_code(
                        "provider_timeout", f"{provider} timed out mid-stream: {message}", details=details
                    )
                status = _CODE_STATUS.get(candidate.lower())
                if status:
                    break
    if status is None:
        return AgentError.from_code(
            "provider_error", f"{provider} reported an error mid-stream: {message}", details=details
        )
    return classify_http_status(status, f"{message} (sent inside the stream)", provider=provider,
                                env_var=env_var, details=details)


def transport_error(
    exc: BaseException, *, provider: str, base_url: str, phase: str, idle_timeout: float | None = None
) -> AgentError:
    """httpx exceptions → provider_timeout / provider_unavailable / provider_error."""
    import httpx

    name = type(exc).__name__
    details = {"provider": provider, "exception": name, "base_url": base_url, "phase": phase}
    if isinstance(exc, httpx.ReadTimeout) and phase == "stream":
        return AgentError.from_code(
            "provider_timeout",
            f"{provider} went silent: no bytes for {idle_timeout} s while streaming (idle timeout)",
            details={**details, "idle_timeout": idle_timeout},
        )
    if isinstance(exc, httpx.TimeoutException):
        what = "connecting to" if isinstance(exc, httpx.ConnectTimeout) else "waiting for"
        return AgentError.from_code("provider_timeout", f"timed out {what} {provider} at {base_url}", details=details)
    if isinstance(exc, httpx.ConnectError):
        return AgentError.from_code(
            "provider_unavailable",
            f"cannot connect to {provider} at {base_url}: {exc or name}",
            hint="Check that the server is running and base_url is right; the call is retried.",
            details={**details, "transport": "connect"},
        )
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return AgentError.from_code(
            "provider_unavailable",
            f"the connection to {provider} dropped {'mid-stream' if phase == 'stream' else 'before a reply'}: "
            f"{exc or name}",
            details={**details, "transport": "disconnected"},
        )
    if isinstance(exc, httpx.TransportError):
        return AgentError.from_code(
            "provider_unavailable", f"transport error talking to {provider}: {exc or name}", details=details
        )
    return AgentError.from_code("provider_error", f"HTTP error talking to {provider}: {exc or name}", details=details)
