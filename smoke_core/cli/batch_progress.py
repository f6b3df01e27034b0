"""``smoke batch``: what a person sees while a batch runs — a live rich
line on a terminal (done / failed / running, tokens, cost, ETA), plain lines
otherwise (one per finished task, for logs and CI)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..batch.main import BatchSummary, Progress


def _eta(done: int, todo: int, started: float) -> str:
    if done == 0 or todo <= done:
        return "—"
    left = (time.monotonic() - started) / done * (todo - done)
    return f"{int(left // 60)}m{int(left % 60):02d}s" if left >= 60 else f"{left:.0f}s"


def _cost(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"


def _finished_line(summary: BatchSummary) -> str:
    parts = [f"{summary.completed} completed", f"{summary.failed} failed"]
    if summary.invalid:
        parts.append(f"{summary.invalid} invalid lines")
    if summary.skipped:
        parts.append(f"{summary.skipped} already done")
    if summary.lost:
        parts.append(f"{len(summary.lost)} lost with their workers")
    head = "interrupted" if summary.interrupted else "done"
    text = (f"smoke batch {head}: {', '.join(parts)}; {summary.tokens:,} tokens, cost {_cost(summary.cost_usd)}, "
            f"{summary.duration_s:.1f} s. Results: {summary.out}")
    if summary.budget_exceeded:
        text += (f"\nThe batch's budget was spent: {summary.budget_exceeded}. The tasks that did not finish were "
                 f"not run or were stopped; run the same command with a higher budget to do them.")
    elif summary.interrupted or summary.lost:
        text += "\nRun the same command again to resume the unfinished tasks from their sessions."
    return text


class PlainProgress(Progress):
    """One line per finished task."""

    def __init__(self, echo: Callable[[str], None]) -> None:
        self.echo = echo
        self.todo = 0
        self.finished = 0
        self.started = time.monotonic()

    def start(self, summary: BatchSummary, todo: int) -> None:
        self.todo = todo
        self.started = time.monotonic()
        note = f" ({summary.skipped} already in {summary.out.name})" if summary.skipped else ""
        self.echo(f"smoke batch {summary.batch_id}: {todo} task(s) to run{note}")

    def task_done(self, result: dict[str, Any], summary: BatchSummary) -> None:
        self.finished += 1
        error = result.get("error") or {}
        status = result.get("status")
        what = f"{status}" if not error else f"{status} [{error.get('code')}] {str(error.get('message'))[:120]}"
        usage = result.get("usage") or {}
        self.echo(f"[{self.finished}/{self.todo}] {result.get('id')}: {what} ({result.get('duration_s', 0):.1f} s, "
                  f"{int(usage.get('total_tokens') or 0):,} tokens) · ETA {_eta(self.finished, self.todo, self.started)}")

    def finish(self, summary: BatchSummary) -> None:
        self.echo(_finished_line(summary))


class RichProgress(Progress):
    """A live status line with a bar, redrawn as tasks start and finish."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)
        self.todo = 0
        self.running: set[str] = set()
        self.finished = 0
        self.started = time.monotonic()
        self.summary: BatchSummary | None = None
        self._live: Any = None

    def _render(self) -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        s = self.summary
        grid = Table.grid(padding=(0, 1))
        grid.add_row(
            ProgressBar(total=max(1, self.todo), completed=self.finished, width=30),
            f"[green]{s.completed if s else 0} done[/green] · [red]{s.failed if s else 0} failed[/red] · "
            f"[yellow]{len(self.running)} running[/yellow] · {max(0, self.todo - self.finished - len(self.running))} "
            f"queued · {s.tokens if s else 0:,} tokens · {_cost(s.cost_usd if s else None)} · "
            f"ETA {_eta(self.finished, self.todo, self.started)}",
        )
        return grid

    def start(self, summary: BatchSummary, todo: int) -> None:
        from rich.live import Live

        self.summary = summary
        self.todo = todo
        self.started = time.monotonic()
        note = f" ({summary.skipped} already in {summary.out.name})" if summary.skipped else ""
        self.console.print(f"[bold]smoke batch[/bold] {summary.batch_id}: {todo} task(s) to run{note}")
        self._live = Live(self._render(), console=self.console, refresh_per_second=4, transient=True)
        self._live.start()

    def task_started(self, task_id: str) -> None:
        self.running.add(task_id)
        if self._live is not None:
            self._live.update(self._render())

    def task_done(self, result: dict[str, Any], summary: BatchSummary) -> None:
        from rich.markup import escape

        self.running.discard(str(result.get("id")))
        self.finished += 1
        error = result.get("error") or {}
        mark = "[green]✔[/green]" if result.get("status") == "completed" else "[red]✗[/red]"
        why = f" [dim]{escape(str(error.get('code')))}: {escape(str(error.get('message'))[:100])}[/dim]" if error else ""
        self.console.print(f"{mark} {escape(str(result.get('id')))} ({result.get('duration_s', 0):.1f} s){why}")
        if self._live is not None:
            self._live.update(self._render())

    def finish(self, summary: BatchSummary) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self.console.print(_finished_line(summary))
