"""Names from the OpenTelemetry GenAI semantic conventions, the versions they
come from, and Smoke's own attributes (namespace ``smoke.``).

Two sets of names, chosen with ``OTEL_SEMCONV_STABILITY_OPT_IN`` (the
variable the GenAI instrumentations share; a comma-separated list):

- **latest** (the default, and ``gen_ai_latest_experimental``):
  **semantic-conventions-genai v0.1.0**, the first release of
  ``open-telemetry/semantic-conventions-genai`` (it depends on
  semantic-conventions v1.45.0). Model calls are timed on
  ``gen_ai.client.inference.duration``; tokens are counted on the counters
  ``gen_ai.client.inference.usage.{input,output,cache_read.input,
  cache_write.input,reasoning.output}_tokens`` (by ``gen_ai.token.modality``)
  and distributed on the histograms
  ``gen_ai.client.inference.operation.{input,output}_tokens``; an agent
  invocation records ``gen_ai.invoke_agent.inference_calls`` and
  ``.tool_calls``; spans carry ``gen_ai.usage.cache_write.input_tokens``.
- **legacy** (``gen_ai_legacy``): **semantic-conventions v1.41.0**, the
  names Smoke emitted before: ``gen_ai.client.operation.duration``,
  ``gen_ai.client.token.usage`` (by ``gen_ai.token.type``),
  ``gen_ai.usage.cache_creation.input_tokens``; no call-count histograms.
  For dashboards that have not moved yet; when both values are listed the
  latest names win.

No ``opentelemetry`` import here: this module is read by the cheap part of
the plugin too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: the release of open-telemetry/semantic-conventions-genai the latest names come from
GENAI_SEMCONV_VERSION = "0.1.0"
#: the semantic-conventions release it depends on (the schema URL of the latest names)
GENAI_BASE_SEMCONV_VERSION = "1.45.0"
#: the semantic-conventions release of the legacy names
LEGACY_SEMCONV_VERSION = "1.41.0"
OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
OPT_IN_LATEST = "gen_ai_latest_experimental"
OPT_IN_LEGACY = "gen_ai_legacy"
SEMCONV_VERSION = GENAI_SEMCONV_VERSION
SCHEMA_URL = f"https://opentelemetry.io/schemas/{GENAI_BASE_SEMCONV_VERSION}"

# ---------------------------------------------------------------- operations
OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"

# ---------------------------------------------------------------- gen_ai.*
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_WRITE = "gen_ai.usage.cache_write.input_tokens"
USAGE_CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"  # legacy (v1.41.0)
USAGE_REASONING = "gen_ai.usage.reasoning.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"  # legacy (v1.41.0)
TOKEN_MODALITY = "gen_ai.token.modality"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
# opt-in content
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
# request settings (from the agent's model_settings)
REQUEST_SETTINGS = {
    "max_tokens": ("gen_ai.request.max_tokens", int),
    "temperature": ("gen_ai.request.temperature", float),
    "top_p": ("gen_ai.request.top_p", float),
    "top_k": ("gen_ai.request.top_k", int),  # v0.1.0: int (v1.41.0: double)
    "seed": ("gen_ai.request.seed", int),
    "frequency_penalty": ("gen_ai.request.frequency_penalty", float),
    "presence_penalty": ("gen_ai.request.presence_penalty", float),
}
STOP_SEQUENCES = "gen_ai.request.stop_sequences"

# ---------------------------------------------------------------- other conventions
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
MCP_METHOD_NAME = "mcp.method.name"

# ---------------------------------------------------------------- Smoke's own
RUN_ID = "smoke.run.id"
RUN_DEPTH = "smoke.run.depth"
RUN_STATUS = "smoke.run.status"
RUN_STEPS = "smoke.run.steps"
COST_USD = "smoke.usage.cost_usd"
MODEL_ATTEMPTS = "smoke.model_call.attempts"
TOOL_OUTCOME = "smoke.tool.outcome"
TOOL_BLOCKED_BY = "smoke.tool.blocked_by"
MCP_SERVER = "smoke.mcp.server"
MCP_TOOL = "smoke.mcp.tool"
EVENT_RETRY = "smoke.retry"
EVENT_WARNING = "smoke.warning"
EVENT_PERMISSION_REQUIRED = "smoke.permission.required"
EVENT_PERMISSION_RESOLVED = "smoke.permission.resolved"
RETRY_ATTEMPT = "smoke.retry.attempt"
RETRY_DELAY_MS = "smoke.retry.delay_ms"
ERROR_MESSAGE = "smoke.error.message"
PERMISSION_DECISION = "smoke.permission.decision"
#: command hooks (plugin smoke-hooks): one ``execute_hook {event}`` span per hook run
OP_EXECUTE_HOOK = "execute_hook"
HOOK_EVENT = "smoke.hook.event"
HOOK_SOURCE = "smoke.hook.source"
HOOK_COMMAND = "smoke.hook.command"
HOOK_DECISION = "smoke.hook.decision"
HOOK_EXIT_CODE = "smoke.hook.exit_code"

# ---------------------------------------------------------------- metrics
# latest (semantic-conventions-genai v0.1.0)
METRIC_INFERENCE_DURATION = "gen_ai.client.inference.duration"
METRIC_USAGE_INPUT = "gen_ai.client.inference.usage.input_tokens"
METRIC_USAGE_OUTPUT = "gen_ai.client.inference.usage.output_tokens"
METRIC_USAGE_CACHE_READ = "gen_ai.client.inference.usage.cache_read.input_tokens"
METRIC_USAGE_CACHE_WRITE = "gen_ai.client.inference.usage.cache_write.input_tokens"
METRIC_USAGE_REASONING = "gen_ai.client.inference.usage.reasoning.output_tokens"
METRIC_OPERATION_INPUT_TOKENS = "gen_ai.client.inference.operation.input_tokens"
METRIC_OPERATION_OUTPUT_TOKENS = "gen_ai.client.inference.operation.output_tokens"
METRIC_INFERENCE_CALLS = "gen_ai.invoke_agent.inference_calls"
METRIC_TOOL_CALLS = "gen_ai.invoke_agent.tool_calls"
# legacy (semantic-conventions v1.41.0)
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"
# both
METRIC_TOOL_DURATION = "gen_ai.execute_tool.duration"
METRIC_AGENT_DURATION = "gen_ai.invoke_agent.duration"
METRIC_WARNINGS = "smoke.warnings"
METRIC_FAILURES = "smoke.failures"
#: the bucket boundaries the conventions advise for the two client histograms
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
CALL_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

#: Smoke provider names -> ``gen_ai.provider.name`` well-known values; any
#: other provider keeps its Smoke name (the conventions allow custom values)
PROVIDER_NAMES = {
    "openai": "openai",
    "anthropic": "anthropic",
    "groq": "groq",
    "deepseek": "deepseek",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "gemini": "gcp.gemini",
    "perplexity": "perplexity",
    "cohere": "cohere",
}

#: ``smoke.tool.outcome`` by error code (no error = ``ok``; anything else = ``error``)
TOOL_OUTCOMES = {
    "tool_blocked": "blocked",
    "hook_failed": "blocked",
    "permission_denied": "denied",
    "tool_invalid_input": "invalid_input",
    "tool_not_found": "not_found",
    "tool_cancelled": "cancelled",
}


@dataclass(frozen=True, slots=True)
class Names:
    """Which convention names this process emits (see the module docstring)."""

    mode: str
    version: str
    schema_url: str
    #: the span attribute for tokens written to a provider cache
    cache_write_attr: str

    @property
    def latest(self) -> bool:
        return self.mode == "latest"


LATEST = Names("latest", f"semantic-conventions-genai v{GENAI_SEMCONV_VERSION}", SCHEMA_URL, USAGE_CACHE_WRITE)
LEGACY = Names("legacy", f"semantic-conventions v{LEGACY_SEMCONV_VERSION}",
               f"https://opentelemetry.io/schemas/{LEGACY_SEMCONV_VERSION}", USAGE_CACHE_CREATION)


def names_from_env(environ: dict[str, str] | None = None) -> Names:
    """The names ``OTEL_SEMCONV_STABILITY_OPT_IN`` asks for: the latest unless it
    lists ``gen_ai_legacy`` without ``gen_ai_latest_experimental``. Other
    categories in the list (``http``, ``database``...) are not ours and are ignored."""
    raw = (os.environ if environ is None else environ).get(OPT_IN_ENV, "")
    values = {v.strip().lower() for v in raw.split(",") if v.strip()}
    if OPT_IN_LEGACY in values and OPT_IN_LATEST not in values:
        return LEGACY
    return LATEST
