"""The terminal front end shared by ``smoke run``, ``smoke demo`` and
``smoke chat``: events rendered with rich (tool cards, nested subagent
cards, diffs, summaries with cost), the approval and question prompts, and
library messages put in the command line's words.

Why this module is long: one class renders every event type and answers
every kind of pause, and the helpers it needs (what a person must see before
approving: the command or the diff, whole, with control characters made
visible) belong with it; it is loaded only when a command runs.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from ..base.display import visible
from ..wire.pricing import usage_summary
from .describe import (
    approval_warnings,
    call_summary,
    cli_words,
    describe_request,
    esc,
    not_found_hints,
    plain,
    show,
)
from .prompts import in_daemon_thread, read_line


def is_interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


# ---------------------------------------------------------------- terminal rendering



#: Lines of one burst of live command output shown (the result has all of them)
LIVE_LINES = 5


def tool_time(data: dict[str, Any]) -> str:
    """A tool card's time: what the tool itself took, and apart from it the
    time a person took to approve the call (``tool.completed``'s
    ``duration_ms`` includes that wait, ``waited_ms`` is it)."""
    total = float(data.get("duration_ms") or 0)
    waited = float(data.get("waited_ms") or 0)
    if waited <= 0:
        return f"{total:.0f} ms"
    ran = max(total - waited, 0.0)
    return f"ran {ran / 1000:.1f} s · waited {waited / 1000:.1f} s for approval"


class TerminalUI:
    """Renders events with rich and answers pauses at the terminal.

    ``approve``: "ask" (prompt) or "deny" (no terminal: refuse with a message
    saying how to allow). ``yes``: ``--yes`` was given, so the gate already
    allows what it may (``auto_approve``); what still asks was sent to a
    person by a rule or by managed settings. ``chat``: the turns of a chat
    (no header per run, a shorter summary). ``reader``: an async
    ``reader(prompt) -> line`` for the answers (default: stdin, read in a
    daemon thread).

    A subagent's events (``parent_tool_call_id``) are drawn indented under the
    ``task`` card that started them, one level per depth; its ``subagent.*``
    lifecycle is a line of that block, never the end of the run.
    """

    def __init__(self, agent: Any, *, approve: str, label: str | None = None, stderr: bool = False,
                 yes: bool = False, chat: bool = False, reader: Any = None, show_text: bool = True) -> None:
        from rich.console import Console

        self.agent = agent
        self.approve = approve
        self.yes = yes
        self.chat = chat
        self._reader = reader
        self.show_text = show_text  # False: the answer is printed elsewhere (``--print`` at a terminal)
        self._out = sys.stderr if stderr else sys.stdout
        self._remember_scope: str | None = None
        self.console = Console(highlight=False, soft_wrap=True, stderr=stderr)
        self.presentations = agent.get_tool_presentations()
        self.label = label
        self._status: Any = None
        self._inline = False
        self._streamed: list[str] = []
        self._tool_t0: dict[str, float] = {}
        self._depth: dict[str, int] = {}
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
        parent = d.get("parent_tool_call_id")
        if parent is not None:
            self._handle_nested(t, d, parent)
            return
        c = self.console
        if t == "run.started":
            self._streamed = []
            if self.chat:
                return
            head = f"[bold]smoke[/bold] · {esc(d.get('provider'))} · {esc(d.get('model'))}"
            if self.label:
                head += f"\n[magenta]{self.label}[/magenta]"
            c.print(head)
            c.print(f"[dim]task:[/dim] {show(d.get('task'))}")
        elif t == "step.started":
            self._streamed = []  # what this step streams; the final answer is the last step's text
            self._spin(f"thinking… (step {d['step']}, phase {self._phase})")
        elif t == "model.progress":  # a local model reads the prompt, or writes a tool call's arguments
            if d.get("kind") == "prompt" and d.get("total"):
                self._spin(f"reading the prompt… {d['done']:,} of {d['total']:,} tokens")
            elif d.get("kind") == "tool_arguments":
                self._spin(f"writing a call{' to ' + esc(d['tool_name']) if d.get('tool_name') else ''}… "
                           f"{d['done']:,} characters")
        elif t == "text.delta":
            self._stop_spin()
            self._streamed.append(d["text"])
            if not self.show_text:
                return
            c.print(plain(d["text"]), end="", markup=False)
            self._inline = True
        elif t == "text.thought":
            self._stop_spin()
            c.print(f"[dim italic]{show(d['text'])}[/dim italic]", end="")
            self._inline = True
        elif t == "text.end":
            self._end_inline()
        elif t == "text.discarded":
            self._end_inline()
            self._streamed = []
            c.print("[yellow]↺ the partial reply above was discarded; retrying[/yellow]")
        elif t == "phase.changed":
            self._phase = d["phase"]
            if not self.chat:
                c.print(f"[cyan]── phase: {d['phase']}[/cyan]")
        elif t == "compaction.completed":
            c.print(f"[dim]context compacted: {d['messages_before']} → {d['messages_after']} messages[/dim]")
        elif t in ("run.completed", "run.failed", "run.interrupted"):
            self._run_ended(t, d)
        elif t in ("permission.required", "ask_user.required", "plan.required"):
            self._pause(t, d, "")
        elif t == "permission.mode_changed":
            c.print(f"[cyan]── permission mode: {esc(d.get('mode'))}[/cyan]")
        else:
            self._card(t, d, "", 0)

    def _handle_nested(self, t: str, d: dict[str, Any], parent: str) -> None:
        """A subagent's event, drawn under the ``task`` card ``parent``."""
        depth = self._depth.get(parent, 0) + 1
        pad = "  " * depth
        c = self.console
        if t == "subagent.started":
            self._stop_spin()
            self._end_inline()
            c.print(f"{pad}[magenta]↳ subagent[/magenta] [dim]· {esc(d.get('model'))} · "
                    f"{len(d.get('tools') or [])} tools · up to {d.get('step_limit')} steps[/dim]")
        elif t == "subagent.completed":
            steps = int(d.get("steps") or 0)
            c.print(f"{pad}[magenta]↳ subagent done[/magenta] [dim]· {steps} step{'' if steps == 1 else 's'} · "
                    f"{usage_summary(d.get('usage'))}[/dim]")
        elif t == "subagent.failed":
            err = d.get("error") or {}
            c.print(f"{pad}[red]↳ subagent failed[/red] {esc('[' + str(err.get('code')) + ']')} "
                    f"{esc(cli_words(err.get('message', '')))}")
        elif t == "subagent.interrupted":
            c.print(f"{pad}[yellow]↳ subagent interrupted[/yellow]")
        elif t == "text.end":
            lines = [ln for ln in str(d.get("text") or "").splitlines() if ln.strip()]
            for line in lines[:6]:
                c.print(f"{pad}[dim]{show(line[:200])}[/dim]")
            if len(lines) > 6:
                c.print(f"{pad}[dim]… ({len(lines) - 6} more lines)[/dim]")
        elif t in ("permission.required", "ask_user.required"):
            self._pause(t, d, pad)
        elif t not in ("text.delta", "text.thought", "text.discarded"):
            self._card(t, d, pad, depth)

    def _card(self, t: str, d: dict[str, Any], pad: str, depth: int) -> None:
        """Tool cards, todos and warnings, at the indentation ``pad``."""
        c = self.console
        if t == "tool.started":
            self._stop_spin()
            self._end_inline()
            call_id = d["tool_call_id"]
            self._depth[call_id] = depth
            self._tool_t0[call_id] = time.perf_counter()
            p = d.get("presentation") or {}
            c.print(f"{pad}{p.get('icon') or '•'} [bold]{esc(p.get('label') or d['tool_name'])}[/bold] "
                    f"[dim]{esc(visible(call_summary(d['tool_name'], d.get('input') or {})))}[/dim]")
        elif t == "tool.output":
            lines = d.get("text", "").rstrip("\n").splitlines()
            if len(lines) > LIVE_LINES:  # the last lines of a burst, and how many were left out
                skipped = len(lines) - LIVE_LINES
                c.print(f"{pad}  [dim]│ … {skipped} line{'s' * (skipped != 1)} skipped …[/dim]")
            for line in lines[-LIVE_LINES:]:
                cut = "…" if len(line) > 200 else ""
                c.print(f"{pad}  [dim]│ {show(line[:200])}{cut}[/dim]")
        elif t == "tool.completed":
            p = d.get("presentation") or {}
            took = tool_time(d)
            text = " ".join(b.get("text", "") for b in d.get("content", []) if b.get("type") == "text")
            first = next((ln for ln in text.splitlines() if ln.strip()), "")[:160]
            badge = f" [cyan]{esc(p['badge'])}[/cyan]" if p.get("badge") else ""
            if d.get("is_error"):
                c.print(f"{pad}  [red]✗ {show(first or 'error')}[/red] [dim]({took})[/dim]{badge}")
            else:
                tone = {"success": "green", "warning": "yellow", "error": "red"}.get(p.get("tone") or "", "green")
                c.print(f"{pad}  [{tone}]✓[/{tone}] [dim]{show(first)} ({took})[/dim]{badge}")
        elif t == "todo.updated":
            marks = {"completed": "[green]✔[/green]", "in_progress": "[yellow]▶[/yellow]", "cancelled": "[dim]✗[/dim]"}
            for todo in d.get("todos", []):
                c.print(f"{pad}  {marks.get(todo.get('status'), '○')} {show(todo.get('content', ''))}")
        elif t == "run.warning":
            self._stop_spin()
            err = d.get("error") or {}
            retry = f" (retry in {d['retry_in_ms']} ms)" if d.get("retry_in_ms") is not None else ""
            c.print(f"{pad}[yellow]⚠ {esc(cli_words(err.get('message', '')))}{retry}[/yellow]")

    def _pause(self, t: str, d: dict[str, Any], pad: str) -> None:
        self._stop_spin()
        self._end_inline()
        if pad:
            self.console.print(f"{pad}[dim](asked by the subagent)[/dim]")
        if t == "permission.required":
            self._spawn(self._ask_permission(d))
        elif t == "plan.required":
            self._spawn(self._ask_plan(d))
        else:
            self._spawn(self._ask_question(d))

    def _run_ended(self, t: str, d: dict[str, Any]) -> None:
        c = self.console
        self._stop_spin()
        self._end_inline()
        steps = int(d.get("steps") or 0)
        summary = f"{steps} step{'' if steps == 1 else 's'} · {usage_summary(d.get('usage'))}"
        if t == "run.completed":
            c.print(f"\n[bold green]✔ completed[/bold green] · {summary}" if not self.chat
                    else f"[dim]· {summary}[/dim]")
            text = d.get("text")
            if text and self.show_text and str(text).strip() != "".join(self._streamed).strip():
                c.print(show(text))
        elif t == "run.failed":
            err = d.get("error") or {}
            c.print(f"\n[bold red]✗ failed[/bold red] {esc('[' + str(err.get('code')) + ']')} "
                    f"{esc(cli_words(err.get('message', '')))} · {summary}")
            for line in self._failure_hints(err):
                c.print(f"[dim]hint: {esc(line)}[/dim]")
        else:
            c.print(f"\n[bold yellow]■ interrupted[/bold yellow] · {summary}")

    def _failure_hints(self, err: dict[str, Any]) -> list[str]:
        hints = [cli_words(err["hint"])] if err.get("hint") else []
        details = err.get("details") or {}
        if details.get("status") == 404:
            hints.extend(not_found_hints(self.agent.provider))
        return [h for h in hints if h]

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)  # keep a reference until done
        task.add_done_callback(self._tasks.discard)

    def cancel_prompts(self) -> None:
        """Stop the questions still waiting for an answer (the run ended)."""
        for task in list(self._tasks):
            task.cancel()

    async def _read(self, prompt: str) -> str:
        if self._reader is not None:
            return str(await self._reader(prompt))
        return str(await in_daemon_thread(read_line, prompt, self._out))

    async def _choose(self, question: str, choices: dict[str, str], default: str = "deny") -> str:
        """Ask until one of ``choices`` (case-sensitive first letters) is typed; empty = ``default``."""
        while True:
            answer = (await self._read(question)).strip()[:1]
            if answer in choices:
                return choices[answer]
            if answer == "":
                return default

    async def _ask_permission(self, d: dict[str, Any]) -> None:
        call_id = d["tool_call_id"]
        c = self.console
        if self.approve == "deny":
            why = f" ({esc(d['reason'])})" if d.get("reason") else ""
            if self.yes:
                how = "--yes does not answer calls that a rule sends to a person; run at a terminal to answer."
            else:
                how = "Run with --yes to allow such calls."
            c.print(f"[yellow]⚠ {esc(d.get('tool_name'))} needs approval{why} and no terminal is attached: "
                    f"denied. {how}[/yellow]")
            self.agent.resolve_permission(call_id, "deny")
            return
        async with self._lock:
            c.print(f"[bold yellow]? approval needed[/bold yellow] ({esc(d.get('kind'))}: "
                    f"{esc(visible(d.get('tool_name', '')))})")
            if d.get("reason"):
                c.print(f"  [dim]{esc(visible(d['reason']))}[/dim]")
            for line in approval_warnings(d):
                c.print(f"  [bold red]⚠ {esc(line)}[/bold red]")
            what = describe_request(d)
            if what:
                c.print(what)
            always = d.get("kind") == "tool" and bool(d.get("suggested_rule"))  # none: no rule can cover it
            if always:
                c.print(f"  [dim]always [A] writes: {esc(visible(d['suggested_rule']))}[/dim]")
            question = ("  allow once [y] / allow for this run [a] / always [A] / deny [n] " if always
                        else "  allow once [y] / allow for this run [a] / deny [n] ")
            choices = {"y": "allow", "Y": "allow", "a": "allow_run", "n": "deny", "N": "deny"}
            if always:
                choices["A"] = "allow_always"
            answer = await self._choose(question, choices)
            remember = None
            if answer == "allow_always":
                remember = await self._remember_where()
        if answer == "allow_always":
            try:
                rules = self.agent.resolve_permission(call_id, answer, remember=remember) or []
            except (ValueError, OSError) as exc:
                c.print(f"  [red]could not remember the rule ({esc(exc)}); allowed once[/red]")
                self.agent.resolve_permission(call_id, "allow")
                return
            texts = ", ".join(visible(rule.text) for rule in rules)
            where = rules[0].origin if rules else "?"
            c.print(f"  [dim]→ allow always: rule{'s' if len(rules) > 1 else ''} {esc(texts)} written to "
                    f"{esc(where)} (`smoke permissions` lists rules)[/dim]")
            return
        self.agent.resolve_permission(call_id, answer)
        c.print(f"  [dim]→ {answer}[/dim]")

    async def _ask_plan(self, d: dict[str, Any]) -> None:
        """``plan.required``: the plan, then approve (in the mode the person picks), edit or reject."""
        call_id = d["tool_call_id"]
        c = self.console
        if self.approve != "ask":
            c.print("[yellow]? the agent presents a plan, and no terminal is attached to approve it: rejected[/yellow]")
            self.agent.resolve_plan(call_id, "reject", text="nobody is at the terminal to approve a plan; end your "
                                                            "turn with the plan as your final answer")
            return
        from rich.markdown import Markdown
        from rich.panel import Panel

        async with self._lock:
            done = int(d.get("rejections") or 0)
            note = f" · rejected {done} of {d.get('max_rejections')} times" if done else ""
            c.print(Panel(Markdown(visible(str(d.get("plan") or ""), keep_tabs=True)),
                          title=f"[bold cyan]plan to approve[/bold cyan]{note}", title_align="left"))
            choices = {"y": "approve", "Y": "approve", "a": "accept", "A": "accept", "e": "edit", "E": "edit",
                       "n": "reject", "N": "reject"}
            answer = ""
            while answer not in choices:
                answer = (await self._read("  approve [y] / approve and accept edits [a] / edit the plan [e] / "
                                           "reject [n] ")).strip()[:1]
            choice = choices[answer]
            if choice == "reject":
                words = await self._read("  what should change? ")
                self.agent.resolve_plan(call_id, "reject", text=words.strip())
                c.print("  [dim]→ rejected; the agent keeps planning[/dim]")
                return
            text = None
            if choice == "edit":
                text = await in_daemon_thread(_edit_text, str(d.get("plan") or ""))
                if not text or not text.strip():
                    c.print("  [dim]nothing was saved in the editor: the plan stays as it was[/dim]")
                    text = None
                choice = await self._choose("  then ask before each change [y] or accept edits [a]? ",
                                            {"y": "approve", "Y": "approve", "a": "accept", "A": "accept"}, "approve")
            mode = "accept-edits" if choice == "accept" else "ask-default"
        self.agent.resolve_plan(call_id, "edit" if text else "approve", mode=mode, text=text)
        c.print(f"  [dim]→ approved{' as edited' if text else ''}; permission mode {mode}[/dim]")

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
            answer = await self._choose(
                "  remember for this folder (.smoke/config.local.yaml) [l] or in your user settings [u]? ",
                {"l": "local", "L": "local", "u": "user", "U": "user"}, "local",
            )
            self._remember_scope = answer
        return self._remember_scope

    async def _ask_question(self, d: dict[str, Any]) -> None:
        c = self.console
        call_id = d["tool_call_id"]
        if d.get("form") is not None:  # a form (an MCP server's elicitation): declined without a person
            if self.approve != "ask":
                c.print(f"[yellow]? {show(d.get('question', ''))} — a form, and no terminal is attached: "
                        f"declined[/yellow]")
                self.agent.respond_form(call_id, None)
                return
            from .forms import ask_form

            async with self._lock:
                values = await ask_form(d, console=c, read=self._read)
            self.agent.respond_form(call_id, values)
            return
        if self.approve != "ask":
            c.print(f"[yellow]? {show(d.get('question', ''))} — no terminal attached; answered with no answer[/yellow]")
            self.agent.respond(call_id, "(no answer: nobody is at the terminal; decide yourself and say what you chose)")
            return
        async with self._lock:
            c.print(f"[bold cyan]? {show(d.get('question', ''))}[/bold cyan]")
            options = d.get("options") or []
            for i, opt in enumerate(options, 1):
                c.print(f"  {i}. {show(str(opt))}")
            text = await self._read("  answer: ")
            if text.strip().isdigit() and options and 1 <= int(text) <= len(options):
                text = str(options[int(text) - 1])
        self.agent.respond(call_id, text)


def _edit_text(text: str) -> str | None:
    """``text`` in the person's editor ($VISUAL / $EDITOR); the result, or None when nothing was saved."""
    import click

    try:
        return click.edit(text, extension=".md", require_save=True)
    except click.ClickException as exc:  # no editor could be started
        print(f"  the editor could not start ({exc.message}); set $EDITOR", file=sys.stderr)
        return None
