"""The settings model: one typed :class:`Settings`, the layers and who may set
each key (:func:`field_policy`: the trust table of docs/security.md is
generated from it).

Layers, in increasing precedence: **user** (``~/.config/smoke/config.yaml``),
**project** (``<workspace>/.smoke/config.yaml``), **local**
(``.smoke/config.local.yaml``), **environment** (``SMOKE_*``), **code**
(``create_agent(...)`` or the CLI's flags), and above them **managed**
(``/etc/smoke/managed.yaml``): final, and fail-closed when unreadable. An
untrusted workspace's files may only set what cannot hurt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
)

from ..rules import PERMISSION_MODES
from ..sandbox.settings import SandboxSettings

if TYPE_CHECKING:
    pass



Layer = Literal["managed", "user", "project", "local", "environment", "code"]
#: Every layer, lowest precedence first (managed is applied last: it is final).
LAYERS: tuple[Layer, ...] = ("user", "project", "local", "environment", "code", "managed")
#: What ``create_agent(setting_sources=...)`` may name (managed is always read).
SETTING_SOURCES: tuple[str, ...] = ("user", "project", "local", "environment")
#: Layers that come from the workspace itself, limited when it is not trusted.
WORKSPACE_LAYERS = frozenset({"project", "local"})

DEFAULT_MAX_STEPS = 50
DEFAULT_PERMISSION = "ask-default"

_ALL = ("managed", "user", "project", "local", "environment", "code")
_FILES_AND_CODE = ("managed", "user", "project", "local", "code")


# ---------------------------------------------------------------- the model


@dataclass(frozen=True)
class FieldPolicy:
    """Who may set a key: ``layers`` that may set it at all, and what an
    untrusted workspace's project / local file may do with it: ``"yes"``,
    ``"no"``, ``"tighter"`` (only a stricter value than the layers below),
    ``"deny_ask"`` (only deny and ask rules)."""

    layers: tuple[str, ...]
    untrusted: Literal["yes", "no", "tighter", "deny_ask"]
    expected: str
    env: str | None = None
    description: str = ""


def _policy(expected: str, *, layers: tuple[str, ...] = _FILES_AND_CODE, untrusted: str = "no",
            env: str | None = None, description: str = "") -> dict[str, Any]:
    return {"smoke": {"layers": list(layers), "untrusted": untrusted, "expected": expected, "env": env,
                      "description": description}}


PositiveInt = Annotated[StrictInt, Field(gt=0)]
PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]
#: the run budgets (issue 33): settable in every layer, only tighter from an untrusted folder
BUDGET_KEYS = ("max_cost_usd", "max_input_tokens", "max_output_tokens")


class PermissionRules(BaseModel):
    """``permissions: {allow: [...], ask: [...], deny: [...]}``."""

    model_config = ConfigDict(extra="forbid")

    allow: list[StrictStr] = Field(default_factory=list)
    ask: list[StrictStr] = Field(default_factory=list)
    deny: list[StrictStr] = Field(default_factory=list)


class Settings(BaseModel):
    """Every core settings key. ``None`` means "not set in this layer"."""

    model_config = ConfigDict(extra="forbid")

    provider: StrictStr | None = Field(None, json_schema_extra=_policy(
        "a provider name such as 'openai'", layers=_ALL, env="SMOKE_PROVIDER",
        description="the model provider (`openai`, `anthropic`, `nvidia`, ...)"))
    model: StrictStr | None = Field(None, json_schema_extra=_policy(
        "a model name, or provider:model", layers=_ALL, untrusted="yes", env="SMOKE_MODEL",
        description="the model, or `provider:model`"))
    base_url: StrictStr | None = Field(None, json_schema_extra=_policy(
        "an http:// or https:// URL", layers=_ALL, env="SMOKE_BASE_URL",
        description="the provider's endpoint (the API key is sent there)"))
    permission: Literal["ask-default", "accept-edits", "plan", "allow-all", "deny-all"] | None = Field(None, json_schema_extra=_policy(
        f"one of {', '.join(PERMISSION_MODES)}", layers=_ALL, untrusted="tighter", env="SMOKE_PERMISSION",
        description="the permission mode"))
    auto_approve: StrictBool | list[StrictStr] | None = Field(None, json_schema_extra=_policy(
        "true, false, or a list of rules such as ['run_command(pytest *)']",
        description="`true` turns every ask of the mode into allow; a list is allow rules"))
    max_steps: PositiveInt | None = Field(None, json_schema_extra=_policy(
        "a positive integer", layers=_ALL, untrusted="tighter", env="SMOKE_MAX_STEPS",
        description=f"stop a run after this many steps (default {DEFAULT_MAX_STEPS})"))
    max_cost_usd: PositiveNumber | None = Field(None, json_schema_extra=_policy(
        "a positive number of US dollars such as 0.50", layers=_ALL, untrusted="tighter", env="SMOKE_MAX_COST_USD",
        description="stop a run before it would spend more than this (`run_budget_exceeded`; "
                    "`smoke batch`: for the whole batch)"))
    max_input_tokens: PositiveInt | None = Field(None, json_schema_extra=_policy(
        "a positive integer", layers=_ALL, untrusted="tighter", env="SMOKE_MAX_INPUT_TOKENS",
        description="stop a run before its input (prompt) tokens would pass this"))
    max_output_tokens: PositiveInt | None = Field(None, json_schema_extra=_policy(
        "a positive integer", layers=_ALL, untrusted="tighter", env="SMOKE_MAX_OUTPUT_TOKENS",
        description="stop a run once its output (completion) tokens pass this"))
    fallback_models: list[StrictStr] | None = Field(None, json_schema_extra=_policy(
        "a list of models such as ['anthropic:claude-sonnet-4-5', 'gpt-4.1']",
        description="models that take a request the model could not answer (overloaded, unavailable, a 5xx "
                    "after its retries), in order: `provider:model` or a model of the same provider"))
    permissions: PermissionRules | None = Field(None, json_schema_extra=_policy(
        "a mapping with allow / ask / deny lists of rules", untrusted="deny_ask",
        description="declarative rules `{allow, ask, deny}`"))
    sandbox: SandboxSettings | None = Field(None, json_schema_extra=_policy(
        "a mapping (mode, network, deny_read, allow_write, env, mcp)",
        description="the OS sandbox for commands (docs/sandbox.md)"))
    instructions: StrictStr | None = Field(None, json_schema_extra=_policy(
        "text", untrusted="yes", description="text added to the system prompt (text only: it runs nothing)"))
    store: StrictStr | None = Field(None, json_schema_extra=_policy(
        "a store URL", layers=_FILES_AND_CODE,
        description="where sessions are kept: a SQLite path, `sqlite:///path.db` or `postgresql://...` "
                    "(plugin smoke-store-postgres); `SMOKE_STORE_URL` wins over the files"))
    stream: StrictBool | None = Field(None, json_schema_extra=_policy(
        "true or false", layers=_ALL, untrusted="yes",
        description="`false` asks the provider for whole replies instead of a stream (default true)"))
    checkpoints: StrictBool | None = Field(None, json_schema_extra=_policy(
        "true or false", description="record the workspace before each turn and each mutating tool call, for "
                                     "`smoke rewind` (default true; docs/cli.md#smoke-rewind)"))
    checkpoint_keep: PositiveInt | None = Field(None, json_schema_extra=_policy(
        "a positive integer", description="checkpoints kept per session; older ones are pruned (default 100)"))
    checkpoint_max_age_days: PositiveInt | None = Field(None, json_schema_extra=_policy(
        "a positive integer", description="checkpoints older than this many days are pruned (default 30)"))
    checkpoint_max_file_bytes: PositiveInt | None = Field(None, json_schema_extra=_policy(
        "a positive integer", description="a file larger than this is not recorded (default 10 MiB)"))
    trusted_folders: list[StrictStr] | None = Field(None, json_schema_extra=_policy(
        "a list of folder paths", layers=("managed", "user"),
        description="folders whose own settings are honoured (`smoke trust`)"))
    plugin_options: dict[StrictStr, dict[StrictStr, Any]] | None = Field(None, json_schema_extra=_policy(
        "a mapping {plugin: {option: value}}", description="options for plugins, by plugin name"))
    managed_rules_only: StrictBool | None = Field(None, json_schema_extra=_policy(
        "true or false", layers=("managed",),
        description="only managed allow rules apply (deny / ask rules from every layer still do)"))
    control_files: list[StrictStr] | None = Field(None, json_schema_extra=_policy(
        "a list of workspace paths or globs such as 'deploy/**'", layers=("managed",),
        description="more control files: a file tool's write to one always asks a person "
                    "(docs/security.md, Control files)"))
    # the model call (issue 32): `smoke run` flags of the same names
    tool_calls: Literal["native", "inline", "constrained", "auto"] | None = Field(None, json_schema_extra=_policy(
        "one of native, inline, constrained, auto", untrusted="yes",
        description="how tool calls travel (OpenAI-compatible providers): `native` (the API's tools), `inline` "
                    "(described in the prompt, read from the text), `constrained` (inline, the reply held to a "
                    "schema of the tools by the server), `auto` (native until the server refuses tools)"))
    context_window: Annotated[StrictInt, Field(ge=1000)] | None = Field(None, json_schema_extra=_policy(
        "a whole number of tokens, at least 1000", untrusted="yes",
        description="the model's context window (default: what the server or the price list says, else 128,000)"))
    price_as: StrictStr | None = Field(None, json_schema_extra=_policy(
        "a genai-prices provider id such as 'openai' or 'anthropic'",
        description="price the model as this provider's model of the same name (a gateway or a local server "
                    "serving a known model); budgets count with it, so a repository's files may not set it"))
    max_tokens: PositiveInt | None = Field(None, json_schema_extra=_policy(
        "a positive integer", untrusted="yes",
        description="the most tokens one reply may have (local servers: a quarter of the context, at most 8192)"))
    temperature: Annotated[StrictFloat | StrictInt, Field(ge=0, le=2)] | None = Field(None, json_schema_extra=_policy(
        "a number from 0 to 2", untrusted="yes", description="sampling temperature (the model's default if unset)"))
    top_p: Annotated[StrictFloat | StrictInt, Field(gt=0, le=1)] | None = Field(None, json_schema_extra=_policy(
        "a number above 0, at most 1", untrusted="yes", description="nucleus sampling (the model's default if unset)"))
    seed: StrictInt | None = Field(None, json_schema_extra=_policy(
        "an integer", untrusted="yes", description="the sampling seed, for repeatable replies where the server "
                                                   "honours it"))

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @field_validator("max_cost_usd", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        if isinstance(value, (bool, str)):  # not `true`, not "lots", not "0.5" in quotes
            raise ValueError("a number is needed, not text or true/false")
        return value

    @field_validator("control_files")
    @classmethod
    def _workspace_globs(cls, value: list[str] | None) -> list[str] | None:
        for item in value or ():
            if not item.strip() or item.strip().startswith(("~", "../")) or "/../" in item:
                raise ValueError(f"{item!r} is not a path inside the workspace (write e.g. 'deploy/**' or '*.tf')")
        return value

    @field_validator("provider", "model")
    @classmethod
    def _not_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty")
        return value


SETTING_KEYS: tuple[str, ...] = tuple(Settings.model_fields)


def field_policy(key: str) -> FieldPolicy:
    """Who may set the core key ``key`` (from the model's field metadata)."""
    extra = Settings.model_fields[key].json_schema_extra
    assert isinstance(extra, dict)
    data = extra["smoke"]
    assert isinstance(data, dict)
    return FieldPolicy(tuple(data["layers"]), data["untrusted"], data["expected"], data["env"],  # type: ignore[arg-type]
                       data["description"])  # type: ignore[arg-type]


ENV_VARS: dict[str, str] = {p.env: k for k in SETTING_KEYS if (p := field_policy(k)).env}


def render_trust_table() -> str:
    """The markdown table of who may set what (docs/security.md embeds it; a test checks)."""
    head = ("| key | user | project / local (trusted) | project / local (untrusted) | environment "
            "| `create_agent` / flags | managed |\n|---|---|---|---|---|---|---|")
    words = {"yes": "yes", "no": "ignored", "tighter": "only tighter", "deny_ask": "deny / ask rules only"}
    rows = [head]
    for key in SETTING_KEYS:
        p = field_policy(key)
        def may(layer: str, p: FieldPolicy = p) -> str:
            return "yes" if layer in p.layers else "—"
        untrusted = words[p.untrusted] if "project" in p.layers else "—"
        env = f"`{p.env}`" if p.env else "—"
        rows.append(f"| `{key}` | {may('user')} | {may('project')} | {untrusted} | {env} | {may('code')} "
                    f"| {may('managed')} |")
    rows.append("| plugin keys | yes | yes | only keys declared `trusted_only=False` | — | yes | yes |")
    return "\n".join(rows)
