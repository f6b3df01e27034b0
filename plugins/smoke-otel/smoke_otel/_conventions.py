"""Names from the OpenTelemetry GenAI semantic conventions, the version they
come from, and Smoke's own attributes (namespace ``smoke.``).

The GenAI conventions are in *Development* status. Spans, attributes and the
two client metrics follow **Semantic Conventions v1.41.0**, the last release
of ``open-telemetry/semantic-conventions`` holding them (they have since
moved to ``open-telemetry/semantic-conventions-genai``). The tool and agent
duration histograms (``gen_ai.execute_tool.duration``,
``gen_ai.invoke_agent.duration``) come from that newer repository; v1.41.0
has no tool metric. No ``opentelemetry`` import here: this module is read by
the cheap part of the plugin too.
"""

from __future__ import annotations

SEMCONV_VERSION = "1.41.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

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
USAGE_CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING = "gen_ai.usage.reasoning.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
# opt-in content
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
# request settings (from the agent's model_settings)
REQUEST_SETTINGS = {
    "max_tokens": ("gen_ai.request.max_tokens", int),
    "temperature": ("gen_ai.request.temperature", float),
    "top_p": ("gen_ai.request.top_p", float),
    "top_k": ("gen_ai.request.top_k", float),
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
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"
METRIC_TOOL_DURATION = "gen_ai.execute_tool.duration"
METRIC_AGENT_DURATION = "gen_ai.invoke_agent.duration"
METRIC_WARNINGS = "smoke.warnings"
METRIC_FAILURES = "smoke.failures"
#: the bucket boundaries the conventions advise for the two client histograms
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
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
