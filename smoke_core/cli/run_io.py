"""``smoke run`` in scripts and pipes: where the answer goes (``--print``,
automatic when stdout is not a terminal), the task read from stdin, a closed
pipe ended quietly, and the exit status table.

| status | the run |
|---|---|
| 0 | completed |
| 1 | failed (a provider or tool error, an invalid typed result; or an unexpected error, with a crash report) |
| 2 | did not start: a usage mistake (bad flag, empty task, no key, unknown session) — nothing ran |
| 3 | stopped at its step limit (``run_max_steps``: raise ``--max-steps`` or split the task) |
| 130 | interrupted (Ctrl-C, SIGINT) |
| 141 | stdout was closed before the run ended (``smoke run --json ... | head -1``): ended quietly |
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LIMIT, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 3, 130, 141
#: the most stdin ``smoke run`` reads (bytes); more is a usage error, before the model is asked anything
STDIN_MAX_BYTES = 8 * 1024 * 1024


def exit_status(result: Any) -> int:
    """The exit status of a finished run (the table above)."""
    if result.status == "completed":
        return EXIT_OK
    if result.status == "interrupted":
        return EXIT_INTERRUPTED
    code = getattr(result.error, "code", None)
    return EXIT_LIMIT if code == "run_max_steps" else EXIT_FAILED


def stdin_is_piped() -> bool:
    """stdin is a pipe or a file (``echo task | smoke run``, ``< task.md``):
    not a terminal, not ``/dev/null`` (a character device), not a socket."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


class StdinError(Exception):
    """stdin cannot be the task (binary, too large): one message, exit 2."""


def read_stdin() -> str:
    """What stdin holds, as text; :class:`StdinError` when it is binary or too large."""
    raw = sys.stdin.buffer.read(STDIN_MAX_BYTES + 1)
    if len(raw) > STDIN_MAX_BYTES:
        raise StdinError(f"stdin holds more than {STDIN_MAX_BYTES // (1024 * 1024)} MiB; give the agent a file "
                         f"path in the task instead (it can read files in the workspace)")
    if b"\x00" in raw:
        raise StdinError("stdin is binary (it holds NUL bytes), not text; give the agent a file path in the task "
                         "instead")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StdinError(f"stdin is not UTF-8 text (byte {exc.start}); convert it, or give a file path in the "
                         f"task instead") from None


def task_with_stdin(task: str | None, *, piped: bool) -> str | None:
    """The task: ``-`` or no TASK with stdin piped reads the task from stdin;
    a TASK with stdin piped gets stdin appended as context (as ``llm``
    does). None: no task (a chat at a terminal, or a usage error)."""
    if task == "-":
        if not piped:
            raise StdinError("TASK is `-` but stdin is a terminal; pipe the task in: echo \"...\" | smoke run -")
        return read_stdin()
    if not piped:
        return task
    text = read_stdin()
    if task is None:
        return text if text.strip() else None
    if not text.strip():
        return task
    return f"{task}\n\n<stdin>\n{text.rstrip()}\n</stdin>"


def estimated_tokens(text: str) -> int:
    """About four characters a token (the compactor's own estimate is per message)."""
    return len(text) // 4


class PipeGuard:
    """Wraps what writes to stdout: when the reader goes away
    (``BrokenPipeError``), stdout is pointed at ``/dev/null`` (so nothing
    else fails on it, not even the interpreter's last flush), ``on_close``
    runs once (the run is aborted) and :attr:`closed` is set — never a
    traceback."""

    def __init__(self, on_close: Callable[[], object] | None = None) -> None:
        self.closed = False
        self._on_close = on_close

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        silence_stdout()
        if self._on_close is not None:
            self._on_close()

    def wrap(self, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def guarded(event: Any) -> Any:
            if self.closed:
                return None
            try:
                return fn(event)
            except BrokenPipeError:
                self.close()
                return None

        return guarded


def silence_stdout() -> None:
    """Point fd 1 at ``/dev/null``: a closed pipe is then written to no more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def write_answer(text: str) -> bool:
    """The answer on stdout; False when the reader has gone (a closed pipe)."""
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        return False
    return True
