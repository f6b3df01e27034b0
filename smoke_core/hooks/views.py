"""What hooks receive, as protocols (re-exported by :mod:`smoke_core.hookspecs`):
the hook reference names no class of the layers above it (the run, the CLI);
what a hook gets is a :class:`~smoke_core.plugin.RunHandle`, a
:class:`~smoke_core.Agent` and a :class:`click.Group`, and these say what of
them a hook may rely on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from ..base.messages import Message
    from ..policy.options import AgentOptions
    from ..tools.definitions import ToolDefinition
    from ..tools.workspace import Workspace


class CommandGroup(Protocol):
    """The ``smoke`` command (a :class:`click.Group`): what ``register_commands`` may use."""

    def add_command(self, cmd: Any, name: str | None = None) -> None: ...

    def command(self, *args: Any, **kwargs: Any) -> Any: ...

    def group(self, *args: Any, **kwargs: Any) -> Any: ...


class AgentView(Protocol):
    """An agent (:class:`~smoke_core.Agent`) as hooks see it."""

    options: AgentOptions
    workspace: Workspace
    session_id: str | None

    @property
    def tools(self) -> dict[str, ToolDefinition]: ...


class RunView(Protocol):
    """A run (:class:`~smoke_core.plugin.RunHandle`) as hooks see it."""

    run_id: str
    session_id: str | None
    user_id: str | None
    task: str
    options: AgentOptions
    workspace: Workspace
    cancelled: asyncio.Event
    #: the run that started this one as a subagent (the ``task`` tool); None for a top-level run
    parent: RunView | None
    #: a subagent's definition name (the ``task`` tool's agent type), else None
    agent_name: str | None
    #: ``emit(type, data)`` sends an event of this run to its listeners (``--json``, the web UI)
    emit: Callable[[str, dict[str, Any]], None]

    @property
    def step(self) -> int: ...

    @property
    def messages(self) -> list[Message]: ...

    @property
    def tools(self) -> dict[str, ToolDefinition]: ...

    @property
    def state(self) -> dict[str, Any]: ...
