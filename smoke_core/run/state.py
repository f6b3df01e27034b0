"""What one run knows while it goes: the transcript, counters, phase, the
fixed tool list — plain data shared by the run's parts (the loop, the model
caller, the tool executor), and the two ways a run ends early."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..base.errors import AgentErrorInfo
from ..base.messages import Message
from ..tools.definitions import ToolDefinition
from ..wire.types import Usage

if TYPE_CHECKING:
    from ..base.events import Event
    from ..hooks.runner import HookRunner
    from ..policy.gate import PermissionGate
    from ..policy.options import AgentOptions, Guards
    from ..policy.secrets import Redactor
    from ..tools.definitions import ToolRegistry
    from ..wire.types import Provider, RetryPolicy
    from .compaction import Compactor
    from .event_bus import EventBus
    from .pauses import PauseBroker


class RunFailed(Exception):
    """Ends the run as ``failed`` with ``info``."""

    def __init__(self, info: AgentErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info


class Interrupted(Exception):
    """Ends the run as ``interrupted`` (abort seen at a check point)."""


class ToolCallRejected(Exception):
    """The provider refused the model's tool call (it validated the call and
    found it broken): the model's mistake, not the run's end. ``feedback`` is
    what the model is told before it is asked again."""

    def __init__(self, info: AgentErrorInfo, feedback: str) -> None:
        super().__init__(info.message)
        self.info = info
        self.feedback = feedback


@dataclass(slots=True, eq=False)
class RunState:
    messages: list[Message] = field(default_factory=list)
    step: int = 0
    phase: str = "understand"
    usage: Usage = field(default_factory=Usage)
    #: guidance added by tools for the rest of the run (``add_instructions``)
    instructions: list[str] = field(default_factory=list)
    #: guidance not yet in the transcript: it joins as a message before the next model call
    pending_instructions: list[str] = field(default_factory=list)
    finish_summary: str | None = None
    # guards
    edited: bool = False
    failing_commands: int = 0
    empty_replies: int = 0
    #: (tool name, canonical input) of the last failing call and how many times in a row it failed
    last_failure: tuple[str, str] | None = None
    same_failures: int = 0
    #: tool calls the provider rejected in a row (``ToolCallRejected``)
    rejected_calls: int = 0
    #: replies cut off at max_tokens in a row (``finish_reason: length``)
    truncated_replies: int = 0
    #: the system prompt of this run (the default one built from the exposed tools), once tools are fixed
    system: str | None = None
    #: set by a part of the run that wants the loop to stop after this step's results are recorded
    stop: AgentErrorInfo | None = None
    #: how many times ``before_run_end`` made this run go on
    continuations: int = 0
    #: nested AGENTS.md files already offered (or looked for) in this run
    offered_instructions: set[str] = field(default_factory=set)
    #: the typed output asked for (``run(..., output_type=...)``), a :class:`~smoke_core.run.output.OutputSpec`
    output: Any = None
    # tools: registered during before_run, then fixed for the whole run
    run_tools: list[ToolDefinition] = field(default_factory=list)
    tools_fixed: bool = False
    tools: dict[str, ToolDefinition] = field(default_factory=dict)
    schemas: list[dict[str, Any]] = field(default_factory=list)
    presentations: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: scratch space plugins share during one run (``run.state``, ``ctx.state``)
    scratch: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunResult:
    """How a run ended. ``text`` is the final answer (or ``finish_task``'s summary)."""

    status: str  # "completed" | "failed" | "interrupted"
    text: str | None
    messages: list[Message]
    usage: Usage
    error: AgentErrorInfo | None = None
    run_id: str = ""
    session_id: str | None = None
    steps: int = 0
    events: list[Event] = field(default_factory=list, repr=False)
    #: the validated result when the run was asked for ``output_type``
    output: Any = None
    #: usage and cost of each model that answered (``provider:model``; a fallback model apart)
    usage_by_model: dict[str, Usage] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class RunDeps:
    """What a run uses of its agent, handed over when the run starts."""

    options: AgentOptions
    provider: Provider
    hooks: HookRunner
    gate: PermissionGate
    bus: EventBus
    pauses: PauseBroker
    registry: ToolRegistry
    exposed_tools: Callable[[], dict[str, ToolDefinition]]
    load_history: Callable[[], list[Message]]
    store_append: Callable[[Message], None]
    compactor: Compactor
    retry: RetryPolicy
    guards: Guards
    system_prompt: str | None
    model_settings: dict[str, Any]
    max_tool_output_chars: int
    redactor: Redactor
    #: called by a top-level run before its task is recorded, with whether the
    #: session already holds messages: the ``session_start`` source when this
    #: is the agent's first run (``startup``, ``resume``, ``clear``), else None
    start_session: Callable[[bool], str | None] = lambda has_history: None
    #: the agent's effective settings (a ResolvedSettings; None when built by hand)
    settings: Any = None
    #: ``agent.set_permission_mode`` (a plan's approval switches the mode)
    set_mode: Callable[[str], None] = lambda mode: None
