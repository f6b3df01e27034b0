"""``smoke chat`` (and ``smoke run`` with no task at a terminal): a REPL on
one session — the turns stream with tool cards and approvals as in
``smoke run``, and ``/commands`` come from the ``register_slash_commands``
hook (core's own ``/help``, ``/clear``, ``/compact``, ``/model``, ``/tools``,
``/cost``, ``/exit`` included; skills offer ``/skill-id``).

Line editing and up-arrow history come from the standard library's
``readline`` (GNU readline on Linux, libedit on macOS; absent on Windows,
where the chat still works without history): no dependency to add, nothing
to import at start-up, and the history file is the familiar one-line-per-
entry kind (``$XDG_STATE_HOME/smoke/chat_history``). prompt_toolkit would
give richer editing but adds a dependency and ~100 ms of imports for what a
line prompt needs.

One event loop serves the whole chat (``asyncio.Runner``): the agent, its
provider's HTTP client and its MCP servers live across turns. The prompt is
read between turns, outside the loop; during a turn, Ctrl-C aborts the run
(``agent.abort``) and the chat goes on, and approvals are read from the
terminal without a thread, so an aborted question leaves nothing reading
behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click

from ..run.slash import ChatHostBase, SlashCommand, collect_slash_commands
from .describe import cli_words, esc
from .render import TerminalUI, is_interactive
from .run import AgentSetup, SetupError, check_key, open_session_store, prepare
from .run_io import EXIT_USAGE

PROMPT = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "
#: what /compact asks the model (the conversation so far is the context)
SUMMARY_REQUEST = (
    "Summarise our conversation so far for your own later use: what I asked for, what was decided, the files "
    "read or changed (with paths), commands run and their outcome, and what remains to do. Be concise; use "
    "bullet points."
)


# ---------------------------------------------------------------- the terminal chat


class _CompactionView:
    """What :class:`~smoke_core.run.compaction.Compactor` needs of a run, over a stored session."""

    def __init__(self, messages: list[Any], system: str | None) -> None:
        self.messages = messages
        self._system = system
        self.tool_schemas: list[dict[str, Any]] = []
        self.compaction_tally: Any = None

    def system_prompt(self) -> str | None:
        return self._system

    def emit(self, type: str, data: dict[str, Any]) -> None:
        pass


class TerminalChat(ChatHostBase):
    """A chat at a terminal: implements :class:`ChatHost` for the commands."""

    def __init__(self, setup: AgentSetup, store: Any, session_id: str, *, yes: bool) -> None:
        from rich.console import Console

        from ..wire.types import Usage

        self.setup = setup
        self.store = store
        self._session_id = session_id
        self.yes = yes
        self.tty = is_interactive()
        self.approve = "ask" if self.tty else "deny"
        self.console = Console(highlight=False, soft_wrap=True)
        self.total = Usage()
        self._agent: Any = None
        self._retired: list[tuple[Any, str]] = []
        self._commands: dict[str, SlashCommand] = {}
        self._told: set[str] = set()
        self._ended = False
        self._created: set[str] = set()
        self._history: Path | None = None

    # -- ChatHost (agent, session_id and commands from ChatHostBase)
    @property
    def usage(self) -> dict[str, Any]:
        return self.total.to_dict()

    def say(self, text: str) -> None:
        from ..base.display import visible

        self.console.print(esc(visible(str(text), space_run=0, keep_tabs=True)))

    def new_session(self) -> str:
        from ..run.history import new_session_id

        session_id = new_session_id()
        agent = self._make_agent(session_id)
        agent.session_source = "clear"  # for session_start hooks
        self._use(agent, reason="clear")
        self._session_id = session_id
        self._created.add(session_id)
        return session_id

    def switch_session(self, session_id: str) -> None:
        """The agent went on in ``session_id`` (``/rewind``, ``/undo``): the chat follows it."""
        self._session_id = session_id
        self._created.add(session_id)

    def set_model(self, spec: str) -> None:
        try:
            agent = self._make_agent(self._session_id, model=spec)
        except SetupError as exc:
            self.say(f"the model stays {self._agent.provider.model}: {exc}")
            return
        self._use(agent)
        self.say(f"now using {agent.options.provider_name} · {agent.provider.model} (same session)")

    async def compact(self, instructions: str = "") -> None:
        from ..hooks.runner import HookRunner
        from ..run.compaction import Compactor
        from ..run.history import new_session_id, repair_history
        from ..run.run_hooks import compaction_allowed

        def warn(info: Any) -> None:
            self.say(f"⚠ {info.message}")

        if not await compaction_allowed(HookRunner(self._agent.plugin_manager), None, "manual", instructions, warn,
                                        agent=self._agent):
            return
        before = repair_history(list(self.store.load(self._session_id)))
        view = _CompactionView(list(before), self._agent.system_prompt)
        # keep the last answer verbatim; everything before it becomes the summary
        compactor = Compactor(context_window=1, threshold=0.0, keep_recent=1)
        with self.console.status("summarising the conversation…", spinner="dots"):
            done = await compactor.maybe_compact(view, self._summarise)
        if not done:
            self.say("nothing to compact yet: the conversation is too short")
            return
        old = self._session_id
        session_id = new_session_id()
        for message in view.messages:
            self.store.append(session_id, message)
        agent = self._make_agent(session_id)
        agent.session_source = "compact"
        self._use(agent)
        self._session_id = session_id
        self.say(f"compacted {len(before)} → {len(view.messages)} messages; going on in session {session_id} "
                 f"(the whole conversation stays in session {old})")

    def end(self) -> None:
        self._ended = True

    # -- the agent
    def _make_agent(self, session_id: str, *, model: str | None = None) -> Any:
        agent = self.setup.create(self.store, session_id, model=model)
        problem = check_key(agent)
        if problem:
            raise SetupError(problem)
        return agent

    def _use(self, agent: Any, *, reason: str = "other") -> None:
        if self._agent is not None:
            self._retired.append((self._agent, reason))
            mode = self._agent.permission_mode  # /clear, /model, /compact keep the mode the person chose
            if isinstance(mode, str) and mode != agent.permission_mode:
                with contextlib.suppress(ValueError):
                    agent.set_permission_mode(mode)
        self._agent = agent
        self._refresh_commands()

    async def _close_retired(self) -> None:
        while self._retired:
            agent, reason = self._retired.pop()
            await agent.aclose(reason=reason)

    def _refresh_commands(self) -> None:
        self._commands, problems = collect_slash_commands(self._agent)
        for problem in problems:
            if problem not in self._told:  # once per chat, not once per turn
                self._told.add(problem)
                self.console.print(f"[yellow]⚠ {esc(problem)}[/yellow]")

    async def _summarise(self, old: list[Any]) -> str:
        """The model's summary of ``old`` (no tools); its tokens count in ``/cost``."""
        from ..base.messages import user_message
        from ..wire.pricing import price_usd
        from ..wire.types import ModelRequest, TextDelta, UsageReport

        provider = self._agent.provider
        request = ModelRequest(model=getattr(provider, "model", ""), messages=[*old, user_message(SUMMARY_REQUEST)],
                               tools=[], system=self._agent.system_prompt, settings=dict(self._agent.model_settings),
                               user_id=self._agent.options.user_id)
        parts: list[str] = []
        stream = provider.stream(request)
        try:
            async for ev in stream:
                if isinstance(ev, TextDelta):
                    parts.append(ev.text)
                elif isinstance(ev, UsageReport):
                    usage = ev.usage
                    if usage.total_tokens:
                        usage.cost_usd = price_usd(usage, model=request.model,
                                                   base_url=getattr(provider, "base_url", None),
                                                   price_as=getattr(provider, "price_as", None))
                    self.total.add(usage)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        return "".join(parts)

    # -- turns
    async def _turn(self, task: Any) -> None:
        await self._close_retired()
        agent = self._agent
        loop = asyncio.get_running_loop()
        ui = TerminalUI(agent, approve=self.approve, yes=self.yes, chat=True,
                        reader=read_terminal_line if self.tty else None)
        off = agent.on_any(ui.handle)
        try:
            loop.add_signal_handler(signal.SIGINT, agent.abort)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            pass
        try:
            result = await agent.run(task)
        except ValueError as exc:  # refused before it started (e.g. images to a model that takes none)
            self.console.print(f"[red]{esc(cli_words(exc))}[/red]")
            return
        finally:
            try:
                loop.remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
            off()
            ui.cancel_prompts()
            ui._stop_spin()
        self.total.add(result.usage)

    async def _command(self, line: str) -> Any:
        """Run ``/name args``; what to send to the model next, or None."""
        from ..run.slash import SlashCommandFailed, UnknownSlashCommand, run_slash_command

        name = line[1:].partition(" ")[0]
        command = self._commands.get(name)  # before the call: a handler may change the chat's commands
        try:
            result = await run_slash_command(self._commands, line, self)
        except UnknownSlashCommand as exc:
            self.console.print(f"[yellow]{esc(exc)} (/help lists them)[/yellow]")
            return None
        except SlashCommandFailed as exc:
            if isinstance(exc.__cause__, SetupError):
                self.console.print(f"[red]/{esc(name)}: {esc(exc.__cause__)}[/red]")
            else:
                self.console.print(f"[red]{esc(exc)}[/red]")
            return None
        if result is None or result == "" or result == []:
            return None
        if isinstance(result, (str, list)):
            return result
        source = command.source if command is not None else "?"
        self.console.print(f"[red]/{esc(name)} ({esc(source)}) returned {type(result).__name__}: "
                           f"expected None, text or a list of parts[/red]")
        return None

    # -- the loop
    def run(self) -> None:
        self._setup_history()
        with asyncio.Runner() as runner:
            try:
                self._loop(runner)
            finally:
                runner.run(self._close_retired())
                runner.run(self._agent.aclose(reason="prompt_input_exit"))
                self._save_history()

    def _loop(self, runner: asyncio.Runner) -> None:
        a = self._agent
        c = self.console
        c.print(f"[bold]smoke chat[/bold] · {esc(a.options.provider_name)} · {esc(a.provider.model)} · "
                f"session {esc(self._session_id)}")
        c.print("[dim]/help lists the commands · Ctrl-C stops a turn · /exit or Ctrl-D leaves[/dim]")
        if a.permission_mode == "plan":
            c.print("[cyan]plan mode: only read-only tools run until you approve a plan (/plan off leaves it)[/cyan]")
        while not self._ended:
            try:
                line = input(("plan " if self._agent.permission_mode == "plan" else "") + PROMPT)
            except EOFError:
                c.print()
                break
            except KeyboardInterrupt:
                c.print("\n[dim](Ctrl-C stops a turn; /exit or Ctrl-D leaves the chat)[/dim]")
                continue
            text = line.strip()
            if not text:
                continue
            task: Any = text
            try:
                if text.startswith("/") and not text.startswith("//"):
                    task = runner.run(self._command(text))
                elif text.startswith("//"):
                    task = text[1:]
                if task is not None and not self._ended:
                    runner.run(self._turn(task))
            except KeyboardInterrupt:  # Ctrl-C before the turn could take it over
                c.print("[yellow]■ stopped[/yellow]")
            self._refresh_commands()

    # -- history
    def _setup_history(self) -> None:
        if not self.tty:
            return
        try:
            import readline
        except ImportError:  # Windows: no line editing or history, the chat still works
            return
        state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
        self._history = Path(state) / "smoke" / "chat_history"
        try:
            readline.read_history_file(self._history)
        except OSError:
            pass
        readline.set_history_length(1000)
        readline.set_completer_delims(" \t\n")
        readline.set_completer(self._complete)
        if "libedit" in (readline.__doc__ or ""):
            readline.parse_and_bind("bind ^I rl_complete")
        else:
            readline.parse_and_bind("tab: complete")

    def _complete(self, text: str, state: int) -> str | None:
        if not text.startswith("/"):
            return None
        matches = sorted(f"/{name} " for name in self._commands if f"/{name}".startswith(text))
        return matches[state] if state < len(matches) else None

    def _save_history(self) -> None:
        if self._history is None:
            return
        import readline

        try:
            self._history.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(self._history)
            os.chmod(self._history, 0o600)
        except OSError as exc:
            click.echo(f"smoke: the chat history could not be saved ({exc})", err=True)

    # -- sessions left behind
    def forget_unanswered(self) -> list[str]:
        """Sessions this chat started that the model never answered in are
        deleted (no empty sessions left behind); the ones kept."""
        from .run import keep_session

        return [s for s in sorted(self._created) if keep_session(self.store, s)]


async def read_terminal_line(prompt: str) -> str:
    """One line from the terminal, read in the event loop (no thread): a
    question dropped because the run was aborted leaves nothing reading
    stdin behind it for the next prompt."""
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    sys.stdout.write(prompt)
    sys.stdout.flush()
    future: asyncio.Future[bytes] = loop.create_future()

    def ready() -> None:
        if future.done():
            return
        try:
            future.set_result(os.read(fd, 65536))
        except OSError as exc:
            future.set_exception(exc)

    loop.add_reader(fd, ready)
    try:
        data = await future
    finally:
        loop.remove_reader(fd)
    text = data.decode(errors="replace")
    return text.splitlines()[0] if text.strip() else ""


def chat_impl(workspace: str, provider: str | None, model: str | None, base_url: str | None, session: str | None,
              yes: bool, max_steps: int | None, no_stream: bool, plan: bool = False, continue_: bool = False,
              resume: str | None = None, fork: str | None = None) -> None:
    """``smoke chat``."""
    from ..run.history import new_session_id
    from .run import fork_into
    from .session_pick import PickerCancelled, SessionChoiceError, choose, remember_last

    try:
        setup = prepare(workspace, provider, model, base_url, max_steps, yes, no_stream, interactive=is_interactive(),
                        plan=plan)
    except SetupError as exc:
        click.echo(f"smoke: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    store = open_session_store(setup.ws, new_session=session is None and not continue_ and resume is None)
    try:
        chosen = choose(setup.ws, store, session=session, continue_=continue_, resume=resume, fork=fork,
                        interactive=is_interactive())
        session_id = chosen.session_id or new_session_id()
        if chosen.fork_from is not None:
            fork_into(store, chosen.fork_from, session_id)
    except (SessionChoiceError, SetupError) as exc:
        store.close()
        click.echo(f"smoke: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except PickerCancelled:
        store.close()
        click.echo("smoke: no session chosen; nothing ran", err=True)
        sys.exit(130)
    chat = TerminalChat(setup, store, session_id, yes=yes)
    try:
        try:
            chat._use(chat._make_agent(session_id))
        except SetupError as exc:
            click.echo(f"smoke: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        if not store.load(session_id):
            chat._created.add(session_id)
        if setup.note:
            click.echo(f"smoke: {setup.note}", err=True)
        chat.run()
        kept = chat.forget_unanswered()
    finally:
        store.close()
    last = chat.session_id
    if last in kept or last not in chat._created:
        remember_last(setup.ws, last)
        click.echo(f"session: {last} (continue with smoke chat --continue, or --session {last})", err=True)
    else:
        click.echo("session: none kept (the model never answered in it)", err=True)
