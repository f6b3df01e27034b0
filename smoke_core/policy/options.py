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
    #: how many times ``before_run_end`` hooks may make one run go on (Claude Code's Stop cap)
    stop_continuations: int = 8


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
    #: keyword arguments of ``create_agent`` that core does not use itself
    #: (``mcp_servers``, ``skills_dir``, ...), for plugins to read.
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``match_rule(tool_name, value)``: the permission rule that decides a call of
    #: that tool whose rule value is ``value`` (a ``PermissionRule``, or None when no
    #: rule does) -- for a tool that meets a new value during a call (web_fetch's
    #: redirects to another host). None when the agent has no permission gate.
    match_rule: Callable[[str, str], Any] | None = None

    def get(self, name: str, default: Any = None) -> Any:
        """An extra option by name (``options.get("mcp_servers")``)."""
        return self.extra.get(name, default)
