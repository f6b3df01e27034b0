"""Running one command hook: its own process group (killed whole at its
timeout, on a flood of output, or when the run is aborted), the event's JSON
on stdin, stdout and stderr capped, an environment without provider keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._config import CommandHook

#: bytes of stdout (and of stderr) a hook may print; past it the hook is killed
OUTPUT_CAP = 1024 * 1024
_CHUNK = 65536


@dataclass(slots=True)
class Finished:
    """What a hook process did. ``failure`` says why it is not an answer
    (could not start, timed out, killed by a signal, flooded its output),
    else None and ``exit_code`` is its status."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: float
    failure: str | None = None


def hook_env(workspace: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment without provider keys, plus the project folder
    under Smoke's and Claude Code's names."""
    from smoke_core.secrets import child_env

    root = str(workspace)
    return child_env(extra={"SMOKE_PROJECT_DIR": root, "CLAUDE_PROJECT_DIR": root, **(extra or {})})


def _expand(text: str, env: dict[str, str]) -> str:
    for name in ("SMOKE_PROJECT_DIR", "CLAUDE_PROJECT_DIR"):
        text = text.replace("${" + name + "}", env[name]).replace("$" + name, env[name])
    return text


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def _read(stream: asyncio.StreamReader | None, sink: bytearray, over: Callable[[], None]) -> None:
    """Read ``stream`` to its end into ``sink``, keeping at most :data:`OUTPUT_CAP`
    bytes; ``over()`` is called once when it passes that."""
    if stream is None:
        return
    flooded = False
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return
        if flooded:
            continue  # read to the end (the process is being killed), keep nothing
        sink.extend(chunk)
        if len(sink) > OUTPUT_CAP:
            flooded = True
            over()


async def _finish(proc: asyncio.subprocess.Process, talking: asyncio.Future[None]) -> None:
    """After a kill: the pipes reach their end when the group is gone; one
    that something outside the group still holds is closed after a while."""
    try:
        await asyncio.wait_for(asyncio.shield(talking), 5)
    except TimeoutError:
        talking.cancel()
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
        with contextlib.suppress(BaseException):
            await talking


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def _describe_signal(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


async def run_hook(hook: CommandHook, stdin: bytes, *, workspace: Path, env: dict[str, str]) -> Finished:
    """Run ``hook`` once with ``stdin``; never raises for the hook's fault
    (cancellation kills its process group and passes)."""
    t0 = time.perf_counter()

    def took() -> float:
        return (time.perf_counter() - t0) * 1000

    try:
        if hook.args is not None:
            argv: list[Any] = [_expand(hook.command, env), *(_expand(a, env) for a in hook.args)]
        else:
            argv = ["/bin/sh", "-c", hook.command]
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=workspace, env=env, start_new_session=True,
        )
    except PermissionError:
        return Finished(None, "", "", took(), f"could not start: {argv[0]} is not executable (chmod +x it)")
    except FileNotFoundError:
        return Finished(None, "", "", took(), f"could not start: {argv[0]} was not found")
    except OSError as exc:
        return Finished(None, "", "", took(), f"could not start: {exc.strerror or exc}")
    out, err = bytearray(), bytearray()
    flooded: list[str] = []

    async def talk() -> None:
        async def feed() -> None:
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin)
                await proc.stdin.drain()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.close()

        async def drain(stream: asyncio.StreamReader | None, sink: bytearray, name: str) -> None:
            def over() -> None:
                flooded.append(name)
                _kill(proc)

            await _read(stream, sink, over)

        await asyncio.gather(feed(), drain(proc.stdout, out, "stdout"), drain(proc.stderr, err, "stderr"))
        await proc.wait()

    talking = asyncio.ensure_future(talk())
    timed_out = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(talking), hook.timeout)
        except TimeoutError:
            timed_out = True
            _kill(proc)
            await _finish(proc, talking)
    except BaseException:  # cancelled (the run was aborted): no process outlives it
        _kill(proc)
        with contextlib.suppress(BaseException):
            await asyncio.shield(_finish(proc, talking))
        raise
    finally:
        _kill(proc)  # what it left running in its group ends with it
    if timed_out:
        return Finished(None, "", "", took(), f"timed out after {hook.timeout:g} s and was killed")
    stdout = out[:OUTPUT_CAP].decode("utf-8", "replace")
    stderr = err[:OUTPUT_CAP].decode("utf-8", "replace")
    if flooded:
        return Finished(None, stdout, stderr, took(),
                        f"printed more than {OUTPUT_CAP // 1024} KiB on {flooded[0]} and was killed")
    code = proc.returncode
    assert code is not None
    if code < 0:
        return Finished(code, stdout, stderr, took(), f"was killed by {_describe_signal(code)}")
    if hook.args is None and code > 128 and (name := _signal_name(code - 128)):  # sh reports its child's signal
        return Finished(code, stdout, stderr, took(), f"was killed by {name} (exit status {code})")
    if hook.args is None and code in (126, 127):  # sh could not run it
        what = "is not executable (chmod +x it)" if code == 126 else "was not found"
        first = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        return Finished(code, stdout, stderr, took(), f"could not start: the command {what}" +
                        (f" ({first})" if first else ""))
    return Finished(code, stdout, stderr, took())
