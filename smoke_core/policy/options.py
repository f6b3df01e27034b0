"""``AgentOptions``: the settings an agent was created with, as plugins see them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..tools.workspace import Workspace
from .sandbox.settings import SandboxSettings


@dataclass(slots=True)
class Guards:
    """Thresholds of the run guards (DESIGN §4). Set one to 0 to turn it off."""

    repeated_error: int = 3
    hard_stop: int = 5
    empty_responses: int = 3
    #: the same tool with the same input failing this many times in a row:
    #: the model is warned; once more and the run fails (``run_repeated_error``)
    repeated_tool_error: int = 3
    #: how deep subagents may nest (a subagent's own subagents are depth 2)
    subagent_depth: int = 2
    #: replies cut off at ``max_tokens`` in a row before the run fails (``output_truncated``);
    #: each one before is a ``run.warning`` and a request to continue
    truncated_replies: int = 3
    #: how many times ``before_run_end`` hooks may make one run go on (Claude Code's Stop cap)
    stop_continuations: int = 8


@dataclass(slots=True, frozen=True)
class Budget:
    """A run's spending limits (settings ``max_cost_usd``, ``max_input_tokens``,
    ``max_output_tokens``); None = no limit. Checked before each model call
    (with the request's estimate) and after it; a run that would pass one
    stops with ``run_budget_exceeded``."""

    max_cost_usd: float | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None

    @property
    def active(self) -> bool:
        return self.max_cost_usd is not None or self.max_input_tokens is not None or self.max_output_tokens is not None

    def describe(self) -> str:
        parts = []
        if self.max_cost_usd is not None:
            parts.append(f"max_cost_usd ${self.max_cost_usd:g}")
        if self.max_input_tokens is not None:
            parts.append(f"max_input_tokens {self.max_input_tokens:,}")
        if self.max_output_tokens is not None:
            parts.append(f"max_output_tokens {self.max_output_tokens:,}")
        return ", ".join(parts) or "no budget"


@dataclass(slots=True)
class AgentOptions:
    workspace: Workspace
    provider_name: str | None = None
    model: str | None = None
    permission: Any = "ask-default"
    auto_approve: bool = False
    user_id: str | None = None
    session_id: str | None = None
    max_steps: int = 50
    #: False when the workspace's own files (``.smoke/config.yaml``, ``.mcp.json``,
    #: skills, git config) come from a folder the person has not trusted.
    workspace_trusted: bool = True
    #: the effective ``sandbox:`` settings (smoke_core.sandbox.SandboxSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    #: control files added by managed settings (``control_files``), besides the built-in list
    #: (smoke_core.plugin.ControlFiles)
    control_files: tuple[str, ...] = ()
    #: keyword arguments of ``create_agent`` that core does not use itself
    #: (``mcp_servers``, ``skills_dir``, ...), for plugins to read.
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``match_rule(tool_name, value)``: the permission rule that decides a call of
    #: that tool whose rule value is ``value`` (a ``PermissionRule``, or None when no
    #: rule does) -- for a tool that meets a new value during a call (web_fetch's
    #: redirects to another host). None when the agent has no permission gate.
    match_rule: Callable[[str, str], Any] | None = None
    #: the run's spending limits (``max_cost_usd``, ``max_input_tokens``, ``max_output_tokens``)
    budget: Budget = field(default_factory=Budget)
    #: ``fallback_models`` as ``(label, provider)`` pairs, in order: they take a request the
    #: model could not answer (overloaded, unavailable, a 5xx after its retries)
    fallbacks: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        """An extra option by name (``options.get("mcp_servers")``)."""
        return self.extra.get(name, default)
