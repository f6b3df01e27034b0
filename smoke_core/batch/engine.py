"""``smoke batch`` engines: where the tasks run.

An engine takes the tasks still to run and yields each one's result line as
it finishes (``async for result in engine.run(...)``); when the consumer is
cancelled (Ctrl-C) the engine cancels every task it started. ``local`` (this
module) runs them in this process on the event loop; plugins add engines
through the entry-point group ``smoke.batch_engines`` (smoke-ray: ``ray``).
An engine entry point names a class: ``cli_options()`` returns its
``click.Option``s (each named ``--<engine>-...``, shown by ``smoke batch
--help``) and ``Engine(**options)`` makes it. Its module must import
nothing heavy at the top: ``smoke batch --help`` loads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, runtime_checkable

from .tasks import BatchConfig, BatchTask

ENGINE_GROUP = "smoke.batch_engines"


@runtime_checkable
class BatchEngine(Protocol):
    """Runs a batch's tasks; see the module docstring."""

    name: str

    def run(self, tasks: list[BatchTask], config: BatchConfig, *, concurrency: int,
            started: Callable[[str], None]) -> AsyncIterator[dict[str, Any]]:
        """Yield one result line per task, as they finish. ``started(task_id)``
        when a task starts (or is handed to the cluster). Never yields a
        result for a task that was cancelled."""
        ...


class LocalEngine:
    """Every task in this process, ``concurrency`` at a time, on one event loop."""

    name = "local"

    @classmethod
    def cli_options(cls) -> list[Any]:
        return []

    async def run(self, tasks: list[BatchTask], config: BatchConfig, *, concurrency: int,
                  started: Callable[[str], None]) -> AsyncIterator[dict[str, Any]]:
        from .task import run_task

        gate = asyncio.Semaphore(max(1, concurrency))
        done: asyncio.Queue[asyncio.Task[dict[str, Any]]] = asyncio.Queue()

        async def one(task: BatchTask) -> dict[str, Any]:
            async with gate:
                started(task.id)
                return await run_task(task, config)

        running = []
        for task in tasks:
            job = asyncio.ensure_future(one(task))
            job.add_done_callback(done.put_nowait)
            running.append(job)
        try:
            for _ in range(len(running)):
                finished = await done.get()
                yield finished.result()
        finally:
            for job in running:
                job.cancel()
            await asyncio.gather(*running, return_exceptions=True)


def engine_classes() -> dict[str, Any]:
    """``{name: engine class}``: ``local`` and every installed engine plugin
    (a plugin whose entry point cannot be loaded is left out)."""
    from importlib.metadata import entry_points

    found: dict[str, Any] = {"local": LocalEngine}
    for ep in entry_points(group=ENGINE_GROUP):
        if ep.name in found:
            continue
        try:
            found[ep.name] = ep.load()
        except Exception as exc:  # a broken plugin must not break `smoke batch` for the others
            import logging

            logging.getLogger("smoke.batch").warning("smoke batch: engine %r could not be loaded: %s", ep.name, exc)
    return found
