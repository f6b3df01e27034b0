"""Pauses of a run: a permission request or a question waits here for its
answer (``agent.resolve_permission`` / ``agent.respond``), which may come from
any thread, and may even come before the pause is registered."""

from __future__ import annotations

import asyncio
import time
from typing import Any


class PauseBroker:
    __slots__ = ("_early", "_pending", "forms", "waited_ms")

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[str]] = {}
        self._early: dict[str, str] = {}
        #: the form (JSON Schema) of each question that asks for one, by id
        self.forms: dict[str, Any] = {}
        #: milliseconds each call waited for a person's answer (``timed`` waits),
        #: taken by the tool executor when the call completes
        self.waited_ms: dict[str, float] = {}

    def is_pending(self, call_id: str) -> bool:
        return call_id in self._pending

    async def wait(self, call_id: str, *, timed: bool = False) -> str:
        """Wait for the answer to ``call_id`` (an early answer is used at once).
        ``timed``: add the time waited to :attr:`waited_ms` (a permission
        prompt: the person's time is not the tool's)."""
        if call_id in self._early:
            return self._early.pop(call_id)
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = fut
        t0 = time.perf_counter()
        try:
            return await fut
        finally:
            self._pending.pop(call_id, None)
            if timed:
                self.waited_ms[call_id] = self.waited_ms.get(call_id, 0.0) + (time.perf_counter() - t0) * 1000

    def answer(self, call_id: str, value: str) -> None:
        """Deliver ``value``; safe from any thread. Kept for later when nobody waits yet."""
        fut = self._pending.get(call_id)
        if fut is None:
            self._early[call_id] = value
            return
        if fut.done():
            return
        loop = fut.get_loop()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fut.set_result(value)
        else:
            loop.call_soon_threadsafe(_set_if_pending, fut, value)

    def cancel_all(self) -> None:
        """End every pause now (the run is being aborted)."""
        for fut in list(self._pending.values()):
            if fut.done():
                continue
            if _other_loop(fut):
                fut.get_loop().call_soon_threadsafe(fut.cancel)
            else:
                fut.cancel()

    def forget_early(self) -> None:
        """Drop answers that never found their pause (at the end of a run)."""
        self._early.clear()


def _other_loop(fut: asyncio.Future[str]) -> bool:
    try:
        return asyncio.get_running_loop() is not fut.get_loop()
    except RuntimeError:
        return True


def _set_if_pending(fut: asyncio.Future[str], value: str) -> None:
    if not fut.done():
        fut.set_result(value)
