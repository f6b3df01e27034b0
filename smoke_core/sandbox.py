"""The OS sandbox for commands the agent runs (DESIGN §9, docs/sandbox.md).

This module holds :class:`SandboxSettings` (the ``sandbox:`` settings key,
settable only by trusted layers); the bubblewrap backend lives here too.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SandboxMode = Literal["auto", "required", "off"]


class SandboxSettings(BaseModel):
    """``sandbox:`` in settings and ``create_agent(sandbox=...)``.

    ``mode``: ``auto`` (bubblewrap when present, else unsandboxed with a
    warning), ``required`` (refuse to run commands without it), ``off``.
    ``network``: allow network inside the sandbox. ``deny_read``: extra
    folders masked inside the sandbox (besides ``~/.ssh`` and the like).
    ``allow_write``: extra writable paths besides the workspace. ``env``:
    names of extra environment variables passed in (provider keys only when
    named here). ``mcp``: sandbox MCP stdio servers by default.
    """

    model_config = ConfigDict(extra="forbid")

    mode: SandboxMode = "auto"
    network: bool = False
    deny_read: list[str] = Field(default_factory=list)
    allow_write: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    mcp: bool = False
