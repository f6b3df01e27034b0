"""Reading a person's answer at the terminal without blocking the event loop
(a daemon thread per prompt, so Ctrl-C and an abort still end the run).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any


async def in_daemon_thread(fn: Any, *args: Any) -> Any:
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


def prompt_choice(question: str, choices: dict[str, str], default: str = "deny") -> str:
    """Ask until one of ``choices`` (case-sensitive first letters) is typed; empty = ``default``."""
    while True:
        answer = read_line(question).strip()[:1]
        if answer in choices:
            return choices[answer]
        if answer == "":
            return default


def read_line(prompt: str, out: Any = None) -> str:
    stream = out if out is not None else sys.stdout
    stream.write(prompt)
    stream.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else ""
