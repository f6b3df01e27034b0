"""The event bus of an agent: listeners by type and for every event (DESIGN §6).

A listener that raises never breaks the run (it is logged); an ``async``
listener is scheduled on the running loop and kept referenced until done.
A run emits through :meth:`EventBus.emitter`, which builds no
:class:`~smoke_core.plugin.Event` at all when nobody listens for its type.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..base.events import Event

log = logging.getLogger("smoke")

Listener = Callable[[Event], Any]
Emit = Callable[[str, dict[str, Any]], None]


class EventBus:
    __slots__ = ("_any", "_by_type", "_tasks")

    def __init__(self) -> None:
        self._by_type: dict[str, list[Listener]] = {}
        self._any: list[Listener] = []
        self._tasks: set[asyncio.Future[Any]] = set()

    def on(self, type: str, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event of ``type``; returns an unsubscribe function."""
        listeners = self._by_type.setdefault(type, [])
        listeners.append(fn)
        return lambda: _discard(listeners, fn)

    def on_any(self, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` for every event; returns an unsubscribe function."""
        self._any.append(fn)
        return lambda: _discard(self._any, fn)

    def listening(self, type: str) -> bool:
        return bool(self._any or self._by_type.get(type))

    def emit(self, event: Event) -> None:
        for fn in (*self._by_type.get(event.type, ()), *self._any):
            try:
                res = fn(event)
                if asyncio.iscoroutine(res):
                    task = asyncio.ensure_future(res)
                    self._tasks.add(task)  # keep a reference until done
                    task.add_done_callback(self._tasks.discard)
            except Exception:  # a listener never breaks the run
                log.exception("smoke: event listener %r raised on %s (ignored)", fn, event.type)

    def emitter(self, run_id: str, session_id: str | None) -> Emit:
        """``emit(type, data)`` for one run: no Event object when nobody listens."""
        by_type = self._by_type
        any_listeners = self._any
        emit = self.emit

        def emit_for_run(type: str, data: dict[str, Any]) -> None:
            if any_listeners or by_type.get(type):
                emit(Event(type, data, run_id=run_id, session_id=session_id))

        return emit_for_run


def _discard(listeners: list[Listener], fn: Listener) -> None:
    try:
        listeners.remove(fn)
    except ValueError:
        pass
