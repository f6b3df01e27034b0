"""What ``smoke batch`` does at the terminal: progress, Ctrl-C, exit status
(0 every task in the results file completed, 1 some failed or were lost,
2 usage error, 130 interrupted)."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..batch.main import Progress

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130



def batch_impl(*, tasks_file: str, out: str | None, engine: str, concurrency: int, provider: str | None,
               model: str | None, base_url: str | None, allow: tuple[str, ...], deny: tuple[str, ...],
               allow_all: bool, max_steps: int | None, in_place: bool, work_dir: str | None, batch_id: str | None,
               store_url: str | None, setup_timeout: float, plugins: tuple[str, ...], as_json: bool,
               engine_options: dict[str, Any], max_cost_usd: float | None = None,
               max_input_tokens: int | None = None, max_output_tokens: int | None = None) -> None:
    from ..batch.main import BatchError, run_batch

    interactive = sys.stderr.isatty() and not as_json
    progress = default_progress(interactive, lambda line: click.echo(line, err=True))

    async def main() -> Any:
        job = asyncio.ensure_future(run_batch(
            tasks_file, out=out, engine=engine, engine_options=engine_options, concurrency=concurrency,
            work_dir=work_dir, batch_id=batch_id, store_url=store_url, provider=provider, model=model,
            base_url=base_url, allow=allow, deny=deny, allow_all=allow_all, max_steps=max_steps, in_place=in_place,
            setup_timeout=setup_timeout, plugins=plugins, progress=progress, max_cost_usd=max_cost_usd,
            max_input_tokens=max_input_tokens, max_output_tokens=max_output_tokens,
        ))
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, job.cancel)
            loop.add_signal_handler(signal.SIGTERM, job.cancel)
        except (NotImplementedError, RuntimeError):
            pass
        try:
            return await job
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.remove_signal_handler(sig)
                except (NotImplementedError, RuntimeError):
                    pass

    try:
        summary = asyncio.run(main())
    except BatchError as exc:
        click.echo(f"smoke batch: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except asyncio.CancelledError:
        sys.exit(EXIT_INTERRUPTED)
    # the status covers the whole results file, so a resumed batch says how the batch stands
    sys.exit(EXIT_OK if not summary.not_completed and not summary.lost else EXIT_FAILED)


def default_progress(interactive: bool, echo: Callable[[str], None]) -> Progress:
    from .batch_progress import PlainProgress, RichProgress

    return RichProgress() if interactive else PlainProgress(echo)
