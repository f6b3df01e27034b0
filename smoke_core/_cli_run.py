"""What ``smoke run``, ``smoke demo`` and ``smoke sessions`` do (the click
commands themselves are in ``_commands``, which imports nothing heavy).

Exit status: 0 completed, 1 failed, 2 usage error, 130 interrupted.

Why this module is long: the terminal front end (rendering events with rich,
the approval and question prompts, trust offers) and ``smoke run`` /
``demo`` / ``sessions`` share the rendering; it is loaded only when a
command runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import click

from .display import DEFAULT_SPACE_RUN, hidden_characters, length_note, visible

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


# ---------------------------------------------------------------- terminal rendering


class TerminalUI:
    """Renders events with rich and answers pauses at the terminal.

    ``approve``: "ask" (prompt) or "deny" (no terminal: refuse with a message
    saying how to allow). ``yes``: ``--yes`` was given, so the gate already
    allows what it may (``auto_approve``); what still asks was sent to a
    person by a rule or by managed settings.
    """

    def __init__(self, agent: Any, *, approve: str, label: str | None = None, stderr: bool = False,
                 yes: bool = False) -> None:
        from rich.console import Console

        self.agent = agent
        self.approve = approve
        self.yes = yes
        self._remember_scope: str | None = None
        self.console = Console(highlight=False, soft_wrap=True, stderr=stderr)
        self.presentations = agent.get_tool_presentations()
        self.label = label
        self._status: Any = None
        self._inline = False
        self._tool_t0: dict[str, float] = {}
        self._phase = "understand"
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Future[Any]] = set()

    # -- spinner
    def _spin(self, text: str) -> None:
        if not self.console.is_terminal:
            return
        if self._status is None:
            self._status = self.console.status(text, spinner="dots")
            self._status.start()
        else:
            self._status.update(text)

    def _stop_spin(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _end_inline(self) -> None:
        if self._inline:
            self.console.print()
            self._inline = False

    # -- events
    def handle(self, event: Any) -> None:
        t, d = event.type, event.data
        c = self.console
        if t == "run.started":
            head = f"[bold]smoke[/bold] · {d.get('provider')} · {d.get('model')}"
            if self.label:
                head += f"\n[magenta]{self.label}[/magenta]"
            c.print(head)
            c.print(f"[dim]task:[/dim] {d.get('task')}")
        elif t == "step.started":
            self._spin(f"thinking… (step {d['step']}, phase {self._phase})")
        elif t == "text.delta":
            self._stop_spin()
            c.print(_plain(d["text"]), end="", markup=False)
            self._inline = True
        elif t == "text.thought":
            self._stop_spin()
            c.print(f"[dim italic]{_show(d['text'])}[/dim italic]", end="")
            self._inline = True
        elif t == "text.end":
            self._end_inline()
        elif t == "text.discarded":
            self._end_inline()
            c.print("[yellow]↺ the partial reply above was discarded; retrying[/yellow]")
        elif t == "tool.started":
            self._stop_spin()
            self._end_inline()
            self._tool_t0[d["tool_call_id"]] = time.perf_counter()
            p = d.get("presentation") or {}
            c.print(f"{p.get('icon') or '•'} [bold]{_esc(p.get('label') or d['tool_name'])}[/bold] "
                    f"[dim]{_esc(visible(_summary(d['tool_name'], d.get('input') or {})))}[/dim]")
        elif t == "tool.output":
            text = d.get("text", "")
            for line in text.rstrip("\n").splitlines()[-5:]:
                c.print(f"  [dim]│ {_show(line[:200])}[/dim]")
        elif t == "tool.completed":
            p = d.get("presentation") or {}
            ms = d.get("duration_ms") or 0
            text = " ".join(b.get("text", "") for b in d.get("content", []) if b.get("type") == "text")
            first = next((ln for ln in text.splitlines() if ln.strip()), "")[:160]
            if d.get("is_error"):
                c.print(f"  [red]✗ {_show(first or 'error')}[/red] [dim]({ms:.0f} ms)[/dim]")
            else:
                tone = {"success": "green", "warning": "yellow", "error": "red"}.get(p.get("tone") or "", "green")
                c.print(f"  [{tone}]✓[/{tone}] [dim]{_show(first)} ({ms:.0f} ms)[/dim]")
        elif t == "phase.changed":
            self._phase = d["phase"]
            c.print(f"[cyan]── phase: {d['phase']}[/cyan]")
        elif t == "todo.updated":
            marks = {"completed": "[green]✔[/green]", "in_progress": "[yellow]▶[/yellow]", "cancelled": "[dim]✗[/dim]"}
            for todo in d.get("todos", []):
                c.print(f"  {marks.get(todo.get('status'), '○')} {_show(todo.get('content', ''))}")
        elif t == "run.warning":
            self._stop_spin()
            err = d.get("error") or {}
            retry = f" (retry in {d['retry_in_ms']} ms)" if d.get("retry_in_ms") is not None else ""
            c.print(f"[yellow]⚠ {_esc(err.get('message', ''))}{retry}[/yellow]")
        elif t == "compaction.completed":
            c.print(f"[dim]context compacted: {d['messages_before']} → {d['messages_after']} messages[/dim]")
        elif t in ("run.completed", "run.failed", "run.interrupted"):
            self._stop_spin()
            self._end_inline()
            u = d.get("usage") or {}
            tokens = f"{u.get('input_tokens', 0)} in / {u.get('output_tokens', 0)} out tokens, {d.get('steps', 0)} steps"
            if t == "run.completed":
                c.print(f"\n[bold green]✔ completed[/bold green] · {tokens}")
                if d.get("text"):
                    c.print(_show(d["text"]))
            elif t == "run.failed":
                err = d.get("error") or {}
                c.print(f"\n[bold red]✗ failed[/bold red] [{err.get('code')}] {_esc(err.get('message', ''))} · {tokens}")
                if err.get("hint"):
                    c.print(f"[dim]hint: {_esc(err['hint'])}[/dim]")
            else:
                c.print(f"\n[bold yellow]■ interrupted[/bold yellow] · {tokens}")
        elif t == "permission.required":
            self._stop_spin()
            self._end_inline()
            self._spawn(self._ask_permission(d))
        elif t == "ask_user.required":
            self._stop_spin()
            self._end_inline()
            self._spawn(self._ask_question(d))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)  # keep a reference until done
        task.add_done_callback(self._tasks.discard)

    async def _ask_permission(self, d: dict[str, Any]) -> None:
        call_id = d["tool_call_id"]
        c = self.console
        if self.approve == "deny":
            why = f" ({_esc(d['reason'])})" if d.get("reason") else ""
            if self.yes:
                how = "--yes does not answer calls that a rule sends to a person; run at a terminal to answer."
            else:
                how = "Run with --yes to allow such calls."
            c.print(f"[yellow]⚠ {_esc(d.get('tool_name'))} needs approval{why} and no terminal is attached: "
                    f"denied. {how}[/yellow]")
            self.agent.resolve_permission(call_id, "deny")
            return
        async with self._lock:
            c.print(f"[bold yellow]? approval needed[/bold yellow] ({_esc(d.get('kind'))}: "
                    f"{_esc(visible(d.get('tool_name', '')))})")
            if d.get("reason"):
                c.print(f"  [dim]{_esc(visible(d['reason']))}[/dim]")
            for line in _approval_warnings(d):
                c.print(f"  [bold red]⚠ {_esc(line)}[/bold red]")
            what = _describe_request(d)
            if what:
                c.print(what)
            is_tool = d.get("kind") == "tool"
            question = ("  allow once [y] / allow for this run [a] / always [A] / deny [n] " if is_tool
                        else "  allow once [y] / allow for this run [a] / deny [n] ")
            choices = {"y": "allow", "Y": "allow", "a": "allow_run", "n": "deny", "N": "deny"}
            if is_tool:
                choices["A"] = "allow_always"
            answer = await _in_daemon_thread(_prompt, question, choices)
            remember = None
            if answer == "allow_always":
                remember = await self._remember_where()
        if answer == "allow_always":
            try:
                rule = self.agent.resolve_permission(call_id, answer, remember=remember)
            except (ValueError, OSError) as exc:
                c.print(f"  [red]could not remember the rule ({_esc(exc)}); allowed once[/red]")
                self.agent.resolve_permission(call_id, "allow")
                return
            c.print(f"  [dim]→ allow always: rule {_esc(visible(rule.text))} written to {_esc(rule.origin)} "
                    f"(`smoke permissions` lists rules)[/dim]")
            return
        self.agent.resolve_permission(call_id, answer)
        c.print(f"  [dim]→ {answer}[/dim]")

    async def _remember_where(self) -> str:
        """Where "always" rules go: asked once per run. An untrusted folder's
        own settings files are not read, so its rules go to the user settings."""
        if self._remember_scope is not None:
            return self._remember_scope
        c = self.console
        if not self.agent.options.workspace_trusted:
            c.print("  [dim]this folder is not trusted (`smoke trust`), so its .smoke/config.local.yaml is not read: "
                    "the rule goes to your user settings, with the folder's full path[/dim]")
            self._remember_scope = "user"
        else:
            answer = await _in_daemon_thread(
                _prompt, "  remember for this folder (.smoke/config.local.yaml) [l] or in your user settings [u]? ",
                {"l": "local", "L": "local", "u": "user", "U": "user"}, "local",
            )
            self._remember_scope = answer
        return self._remember_scope

    async def _ask_question(self, d: dict[str, Any]) -> None:
        c = self.console
        call_id = d["tool_call_id"]
        if self.approve != "ask":
            c.print(f"[yellow]? {_show(d.get('question', ''))} — no terminal attached; answered with no answer[/yellow]")
            self.agent.respond(call_id, "(no answer: nobody is at the terminal; decide yourself and say what you chose)")
            return
        async with self._lock:
            c.print(f"[bold cyan]? {_show(d.get('question', ''))}[/bold cyan]")
            options = d.get("options") or []
            for i, opt in enumerate(options, 1):
                c.print(f"  {i}. {_show(str(opt))}")
            text = await _in_daemon_thread(_read_line, "  answer: ")
            if text.strip().isdigit() and options and 1 <= int(text) <= len(options):
                text = str(options[int(text) - 1])
        self.agent.respond(call_id, text)


async def _in_daemon_thread(fn: Any, *args: Any) -> Any:
    """Run a blocking prompt in a daemon thread: unlike asyncio.to_thread, an
    abort (Ctrl-C) does not have to wait for the person to press Enter."""
    import threading

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def target() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to the waiting coroutine
            loop.call_soon_threadsafe(deliver, None, exc)
        else:
            loop.call_soon_threadsafe(deliver, result, None)

    threading.Thread(target=target, daemon=True, name="smoke-prompt").start()
    return await future


def _prompt(question: str, choices: dict[str, str], default: str = "deny") -> str:
    """Ask until one of ``choices`` (case-sensitive first letters) is typed; empty = ``default``."""
    while True:
        answer = _read_line(question).strip()[:1]
        if answer in choices:
            return choices[answer]
        if answer == "":
            return default


def _read_line(prompt: str) -> str:
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else ""


def _plain(text: Any) -> str:
    """Model or tool text for the terminal: control characters shown, never obeyed."""
    return visible(str(text), space_run=0, keep_tabs=True)


def _show(text: Any) -> str:
    return _esc(_plain(text))


def _esc(text: Any) -> str:
    from rich.markup import escape

    return escape(str(text))


def _summary(tool_name: str, input: dict[str, Any]) -> str:
    for key in ("command", "path", "pattern", "question", "rev", "message", "skill_id", "summary"):
        value = input.get(key)
        if isinstance(value, str):
            value = value.replace("\n", " ")
            return value[:100] + ("…" if len(value) > 100 else "")
    text = json.dumps(input, ensure_ascii=False)
    return text[:100] + ("…" if len(text) > 100 else "")


def _approval_warnings(d: dict[str, Any]) -> list[str]:
    """Warnings shown above an approval: hidden characters, long inputs."""
    out: list[str] = []
    inp = d.get("input") or {}
    texts = [str(v) for v in inp.values() if isinstance(v, str)] if isinstance(inp, dict) else [str(inp)]
    hidden = sum(hidden_characters(t) for t in texts) + hidden_characters(str(d.get("tool_name", "")))
    if hidden:
        out.append(f"the input holds {hidden} control or invisible character(s), shown marked (␛ = ESC, ␍ = CR, "
                   f"⟨…⟩ = invisible): what runs is exactly what is shown")
    spaces = [t for t in texts if " " * DEFAULT_SPACE_RUN in t]
    if spaces:
        out.append("the input holds long runs of spaces, shown as ⟨N spaces⟩")
    for t in texts:
        note = length_note(t)
        if note:
            out.append(note)
            break
    return out


def _describe_request(d: dict[str, Any]) -> str:
    """What a person needs to see to decide: the command, or the diff —
    whole, with control characters made visible (nothing is cut)."""
    import difflib

    inp = d.get("input") or {}
    name = d.get("tool_name", "")
    if "command" in inp:
        command = str(inp["command"])
        return f"  [bold]$ {_esc(visible(command))}[/bold]\n  [dim]({len(command):,} characters)[/dim]"
    if name == "edit_file" and "old_string" in inp:
        diff = difflib.unified_diff(
            str(inp.get("old_string", "")).splitlines(), str(inp.get("new_string", "")).splitlines(),
            fromfile=f"a/{inp.get('path')}", tofile=f"b/{inp.get('path')}", lineterm="",
        )
        return "\n".join(_color_diff_line(line) for line in diff)
    if name == "apply_patch" and "patch" in inp:
        return "\n".join(_color_diff_line(line) for line in str(inp["patch"]).splitlines())
    if name == "write_file":
        content = str(inp.get("content", ""))
        lines = content.splitlines()
        body = "\n".join(f"[green]+{_esc(visible(line, space_run=_CONTENT_SPACE_RUN))}[/green]" for line in lines)
        return f"  write {_esc(visible(str(inp.get('path'))))} ({len(content):,} characters)\n{body}"
    if inp:
        return "  " + _esc(visible(json.dumps(inp, ensure_ascii=False)))
    return ""


#: in file contents indentation is normal: only very long space runs are marked
_CONTENT_SPACE_RUN = 80


def _color_diff_line(line: str) -> str:
    line = visible(line, space_run=_CONTENT_SPACE_RUN)
    if line.startswith("+") and not line.startswith("+++"):
        return f"[green]{_esc(line)}[/green]"
    if line.startswith("-") and not line.startswith("---"):
        return f"[red]{_esc(line)}[/red]"
    return _esc(line)


# ---------------------------------------------------------------- running


def _run_agent(agent: Any, task: str, *, as_json: bool, approve: str, label: str | None = None,
               yes: bool = False) -> int:
    """Run ``task`` with rendering or JSON lines; returns the exit status."""

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, agent.abort)
        except (NotImplementedError, RuntimeError):  # not the main thread
            pass
        if as_json:
            out = sys.stdout

            def write(event: Any) -> None:
                out.write(json.dumps(event.to_dict(), ensure_ascii=False, default=str) + "\n")
                out.flush()

            agent.on_any(write)
            if approve != "ask":
                ui = TerminalUI(agent, approve=approve, stderr=True, yes=yes)
                agent.on("permission.required", lambda e: ui._spawn(ui._ask_permission(e.data)))
                agent.on("ask_user.required", lambda e: ui._spawn(ui._ask_question(e.data)))
        else:
            ui = TerminalUI(agent, approve=approve, label=label, yes=yes)
            agent.on_any(ui.handle)
        try:
            return await agent.run(task)
        finally:
            try:
                loop.remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError):
                pass
            await agent.aclose()

    result = asyncio.run(main())
    return {"completed": EXIT_OK, "failed": EXIT_FAILED, "interrupted": EXIT_INTERRUPTED}[result.status]


def _approve_mode(as_json: bool) -> str:
    """``--yes`` is not an answering mode: it is ``auto_approve=True`` for the
    gate, which then allows what it may; what still asks (an *ask* rule,
    managed settings) is put to the person, or denied without a terminal."""
    if as_json:  # stdout is a JSON stream for scripts: never prompt on it
        return "deny"
    return "ask" if _interactive() else "deny"


def _fail(message: str) -> None:
    """One message and exit status 2: a person's mistake never ends in a traceback."""
    click.echo(f"smoke: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _open_store(workspace: Path, *, new_session: bool = False) -> Any:
    from ._cli_sessions import open_cli_store

    return open_cli_store(workspace, new_session=new_session)


def run_impl(task: str, workspace: str, provider: str | None, model: str | None, base_url: str | None,
                session: str | None, yes: bool, as_json: bool, max_steps: int | None) -> None:
    """Run TASK with a model in the workspace."""
    from ._agent import new_session_id
    from ._config import ConfigError, NoProviderError, detect_provider
    from ._factory import _warn_once, create_agent
    from ._plugins import collect_providers, create_plugin_manager
    from .settings import choose_provider, collect_setting_specs, resolve_settings

    if not task.strip():
        _fail('TASK is empty: say what the agent should do, e.g. smoke run "fix the failing test"')
    ws = Path(workspace).resolve()
    flags: dict[str, Any] = {"provider": provider, "model": model, "base_url": base_url, "max_steps": max_steps,
                             "auto_approve": True if yes else None}
    flags = {k: v for k, v in flags.items() if v is not None}
    try:
        pm = create_plugin_manager()
        specs = collect_setting_specs(pm)
        resolved = resolve_settings(ws, code=flags, code_origin="flag", trust=None, specs=specs)
        if resolved.ignored and not as_json and _interactive():
            resolved = _offer_trust(ws, resolved, flags, specs)
        registry = collect_providers(pm)
        chosen, chosen_model, chosen_url = choose_provider(resolved, registry.names())
        for warning in resolved.warnings:
            _warn_once(warning)  # create_agent below says each only once too
        note = None
        if chosen is None:
            found = detect_provider(registry.specs())
            if found is None:
                raise NoProviderError(sorted({s.env_var for s in registry.specs() if s.env_var}))
            chosen, env_var = found
            note = f"using provider {chosen} (found {env_var})"
    except NoProviderError as exc:
        _fail(f"{exc}\n  To try Smoke without a key, run: smoke demo")
    except ConfigError as exc:
        _fail(str(exc))
    store = _open_store(ws, new_session=session is None)
    try:
        agent = create_agent(
            ws, provider=chosen, model=chosen_model, base_url=chosen_url, store=store,
            session_id=session or new_session_id(), max_steps=max_steps, auto_approve=True if yes else None,
            trust_workspace=resolved.trusted,
        )
    except (ValueError, TypeError, FileNotFoundError, NotADirectoryError) as exc:
        store.close()
        _fail(str(exc))
    if note and not as_json:
        click.echo(f"smoke: {note}", err=True)
    try:
        code = _run_agent(agent, task, as_json=as_json, approve=_approve_mode(as_json), yes=yes)
    finally:
        store.close()
    if not as_json:
        click.echo(f"session: {agent.session_id} (continue with --session {agent.session_id})", err=True)
    sys.exit(code)


def _offer_trust(ws: Path, resolved: Any, flags: dict[str, Any], specs: Any) -> Any:
    """At a terminal, offer once per folder to trust it when its own settings were ignored."""
    from rich.console import Console

    from .settings import mark_trust_offered, resolve_settings, trust_folder, trust_offered

    if trust_offered(ws):
        return resolved
    mark_trust_offered(ws)
    c = Console(highlight=False, soft_wrap=True)
    c.print(f"[bold yellow]⚠ this folder is not trusted:[/bold yellow] {_esc(visible(str(ws)))}")
    for path, keys in resolved.ignored.items():
        c.print(f"  {_esc(visible(path))} sets {_esc(visible(', '.join(keys)))} — ignored while it is not trusted")
    c.print("  [dim]Trust it only if you know where it comes from: a trusted folder's settings may choose the "
            "model endpoint (your API key goes there), loosen approvals and start MCP servers.[/dim]")
    answer = _prompt("  trust this folder? [y/N] ", {"y": "yes", "Y": "yes", "n": "no", "N": "no"}, "no")
    if answer != "yes":
        c.print(f"  [dim]not trusted; you will not be asked again here (`smoke trust {_esc(str(ws))}` "
                f"trusts it later)[/dim]")
        return resolved
    path = trust_folder(ws)
    c.print(f"  [green]trusted[/green] (saved in {_esc(str(path))}; `smoke trust --revoke` undoes it)")
    return resolve_settings(ws, code=flags, code_origin="flag", trust=True, specs=specs)


def demo_impl(yes: bool, as_json: bool, workspace: str | None) -> None:
    """Watch a simulated model fix a real bug with the real harness (offline, no key)."""
    import subprocess

    from ._config import ConfigError
    from .demo import DEMO_TASK, SIMULATION_LABEL, create_demo_agent

    # approvals go through the gate (auto_approve), so an ask rule still asks
    auto = yes or not _interactive()
    if auto and not yes and not as_json:
        click.echo("smoke demo: no terminal attached, so approvals are granted automatically (use --yes to say so).", err=True)
    try:
        agent, project = create_demo_agent(workspace, auto_approve=auto)
    except (RuntimeError, ConfigError) as exc:
        click.echo(f"smoke demo: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    if not as_json:
        click.echo(f"sample project copied to {project}")
    code = _run_agent(agent, DEMO_TASK, as_json=as_json, approve=_approve_mode(as_json), label=SIMULATION_LABEL,
                      yes=auto)
    if not as_json:
        proc = subprocess.run(
            [sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=project,
            capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        verdict = "pass" if proc.returncode == 0 else "FAIL"
        click.echo(f"\nsample project tests after the run: {verdict} ({proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''})")
        click.echo(f"the project is at {project}")
    sys.exit(code)


def sessions_list_impl(workspace: Path) -> None:
    db = workspace / ".smoke" / "sessions.db"
    if not db.exists():
        click.echo(f"no sessions yet in {db}")
        return
    store = _open_store(workspace)
    try:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"Sessions in {db}")
        for col in ("session", "messages", "updated", "title"):
            table.add_column(col)
        for info in store.list_sessions():
            table.add_row(info.session_id, str(info.message_count),
                          time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated_at)), (info.title or "")[:60])
        Console().print(table)
    finally:
        store.close()


def sessions_show_impl(workspace: Path, session_id: str) -> None:
    """Print the transcript of SESSION_ID."""
    store = _open_store(workspace)
    try:
        messages = store.load(session_id)
    finally:
        store.close()
    if not messages:
        click.echo(f"no session {session_id!r} in {workspace / '.smoke' / 'sessions.db'}; `smoke sessions` lists them", err=True)
        sys.exit(EXIT_USAGE)
    for m in messages:
        for b in m["content"]:
            kind = b.get("type")
            if kind == "text":
                click.echo(f"[{m['role']}] {b['text']}")
            elif kind == "thinking":
                click.echo(f"[{m['role']} thinking] {b.get('text', '')}")
            elif kind == "tool_call":
                click.echo(f"[{m['role']} → {b['name']}] {json.dumps(b.get('input', {}), ensure_ascii=False)}")
            elif kind == "tool_result":
                text = " ".join(c.get("text", "") for c in b.get("content", []) if c.get("type") == "text")
                flag = " (error)" if b.get("is_error") else ""
                click.echo(f"[result{flag}] {text[:500]}")
