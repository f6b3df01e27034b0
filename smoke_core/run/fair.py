"""Fair turns for many runs on one event loop (the local batch engine, ``smoke serve``).

asyncio runs every callback that is ready in one pass of its loop before it
looks at timers and I/O again. When a thousand runs wake up together (their
model replies arrive at once), each does its step's synchronous work — a
few dozen µs — in that one pass, and everything else waits: 1,000 runs of 140 µs
is a 140 ms stall for a socket, a timer or a person's request.

The run loop asks :func:`starved` at its resumption points (each event of a
model stream, the start of a step). A heartbeat timer, armed while runs are
active, records when the loop last reached its timers; when that was more
than ``BUDGET`` ago, the run yields through a timer of its own
(:func:`take_turn`), which queues it *behind* the timers and I/O that are
already due. A run alone on an idle loop never yields: the check is a clock
read and a comparison.
"""

from __future__ import annotations

import asyncio
import time

#: seconds a loop may run tasks without reaching its timers before runs yield
BUDGET = 0.010
#: the heartbeat's period while runs are active
BEAT = 0.005

_clock = time.perf_counter


class _Pacer:
    __slots__ = ("active", "armed", "last_beat", "loop", "turn_taken", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.last_beat = _clock()
        self.armed = False
        self.active = False
        self.waiting: list[asyncio.Future[None]] = []
        self.turn_taken = False

    def beat(self) -> None:
        """The loop reached its timers: wake the runs that yielded (they go
        on in the next pass, each checking the budget again)."""
        waiting, self.waiting = self.waiting, []
        for future in waiting:
            if not future.done():
                future.set_result(None)
        self.turn_taken = False
        self.last_beat = _clock()  # after the wake-ups: the runs' budget starts now
        if self.active or waiting:  # runs asked since the last beat: keep beating
            self.active = False
            self.loop.call_later(BEAT, self.beat)
        else:
            self.armed = False


_cached: _Pacer | None = None


def _arm() -> bool:
    """Start the heartbeat of the running loop (a pacer per loop; the last one is cached)."""
    global _cached
    loop = asyncio.get_running_loop()
    pacer = _cached
    if pacer is None or pacer.loop is not loop:
        pacer = _cached = _Pacer(loop)
    if not pacer.armed:
        pacer.armed = True
        pacer.last_beat = _clock()
        loop.call_later(BEAT, pacer.beat)
    pacer.active = True
    return False


def starved() -> bool:
    """True when the running loop has not reached its timers for more than
    ``BUDGET`` (beyond the heartbeat's period): the caller should
    ``await take_turn()`` before doing more work. The fast path is a clock
    read; a pacer left from another (closed) loop is replaced in :func:`take_turn`."""
    pacer = _cached
    if pacer is None or not pacer.armed:
        return _arm()
    pacer.active = True
    return _clock() - pacer.last_beat > BUDGET + BEAT


async def take_turn() -> None:
    """Wait for the next heartbeat — the timers and I/O already due run
    first — and again while the loop is still over its budget. The first run
    woken by a heartbeat always goes on, so every run makes progress."""
    global _cached
    loop = asyncio.get_running_loop()
    pacer = _cached
    if pacer is None or pacer.loop is not loop:  # the cached pacer belongs to another loop
        _cached = None
        _arm()
        return
    while starved():
        future: asyncio.Future[None] = loop.create_future()
        pacer.waiting.append(future)
        await future
        if not pacer.turn_taken:
            pacer.turn_taken = True
            return
