"""The ``run_command`` and ``run_test`` tools."""

from __future__ import annotations

import asyncio
import re
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from smoke_core import sandbox
from smoke_core.plugin import (
    AgentErrorInfo,
    ClaudeDialect,
    ToolAnnotations,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolPresentation,
    ToolResult,
)
from smoke_core.sandbox import Launch, SandboxPolicy, SandboxSettings, SandboxUnavailable

from . import _kill, _process
from ._process import BackgroundProcess, CommandOutput

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
#: Characters of output kept for the model; the rest goes to the log file.
DEFAULT_OUTPUT_LIMIT = 16_000
#: Bytes a command's log file (foreground spill or background log) may hold: head and tail.
DEFAULT_LOG_LIMIT = 50_000_000
#: Characters of live ``tool.output`` per command (the result and the log have the rest).
DEFAULT_LIVE_OUTPUT_LIMIT = 2_000_000
#: ``ctx.state`` key holding ``{pid: BackgroundProcess}`` for the run.
STATE_KEY = "smoke_tools_terminal.background"
#: ``ctx.state`` key: the run was already warned about the sandbox.
WARNED_KEY = "smoke_tools_terminal.sandbox_warned"
BADGE = "🔒 sandboxed"
#: Every background process still tracked, by pid (for ``close_agent``).
LIVE: dict[int, BackgroundProcess] = {}


def _option(ctx: ToolContext, name: str, default: Any) -> Any:
    options = ctx.options
    getter = getattr(options, "get", None)
    if getter is None:
        return default
    value = getter(name, None)
    return default if value is None else value


# ---------------------------------------------------------------- descriptions

RUN_COMMAND_DESCRIPTION = """\
Run a bash command in the workspace; returns output and exit code. Non-interactive: never wait for input, an \
editor or a pager. Killed with its processes after timeout_ms. Long output is cut and saved to a file."""

RUN_TEST_DESCRIPTION = """\
Run a test command like run_command; reports pass/fail counts and the output's end. Failing tests are a normal result. \
Run the narrowest test first."""

_TIMEOUT_SCHEMA = {
    "type": "integer",
    "minimum": 1,
    "description": f"Default {DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS}.",
}
_WORKDIR_SCHEMA = {
    "type": "string",
    "description": "Workspace-relative folder (default: root).",
}

RUN_COMMAND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "minLength": 1,
        },
        "workdir": _WORKDIR_SCHEMA,
        "timeout_ms": _TIMEOUT_SCHEMA,
        "env": {
            "type": "object",
            "additionalProperties": {"type": "string"},
        },
        "background": {
            "type": "boolean",
            "description": "Return at once (servers, watchers); stopped when the run ends.",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}

RUN_TEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "minLength": 1,
        },
        "workdir": _WORKDIR_SCHEMA,
        "timeout_ms": _TIMEOUT_SCHEMA,
    },
    "required": ["command"],
    "additionalProperties": False,
}


# ---------------------------------------------------------------- shared steps


def _resolve_workdir(ctx: ToolContext, workdir: str | None) -> Path:
    path = ctx.workspace.resolve(workdir)
    if not path.exists():
        raise ToolError(
            f"workdir {workdir!r} does not exist in the workspace {ctx.workspace.root}; "
            f"pass an existing folder (relative to the workspace root) or leave workdir out"
        )
    if not path.is_dir():
        raise ToolError(
            f"workdir {workdir!r} is a file, not a folder; pass the folder that contains it"
        )
    return path


def _timeout(ctx: ToolContext, timeout_ms: int | None) -> tuple[float, str | None]:
    max_ms = int(_option(ctx, "terminal_max_timeout_ms", MAX_TIMEOUT_MS))
    default_ms = int(_option(ctx, "terminal_timeout_ms", DEFAULT_TIMEOUT_MS))
    ms = default_ms if timeout_ms is None else int(timeout_ms)
    note = None
    if ms > max_ms:
        note = f"timeout_ms {ms} is above the limit; {max_ms} was used"
        ms = max_ms
    return ms / 1000, note


def sandbox_settings(ctx: ToolContext) -> SandboxSettings:
    """The agent's ``sandbox:`` settings (``options.sandbox``; a ``sandbox``
    key when options are a plain mapping, as in tests; else the defaults)."""
    options = ctx.options
    value = getattr(options, "sandbox", None)
    if value is None and isinstance(options, Mapping):
        value = options.get("sandbox")
    if value is None:
        return SandboxSettings()
    if isinstance(value, SandboxSettings):
        return value
    try:
        return SandboxSettings.model_validate(value)
    except ValidationError as exc:
        raise ToolError(f"the sandbox settings are invalid ({exc.errors()[0]['msg']}); fix `sandbox:`") from None


def _launch(
    ctx: ToolContext, command: str, cwd: Path, model_env: dict[str, Any] | None
) -> tuple[Launch, SandboxPolicy, str]:
    """How the command starts (sandboxed or not, per ``sandbox.mode``), the
    policy, and the command's cookie."""
    settings = sandbox_settings(ctx)
    if "network" in getattr(ctx, "grants", ()) and not settings.network:
        # the person answered "allow with network" for this one command
        settings = settings.model_copy(update={"network": True})
    cookie = _kill.new_cookie()
    try:
        extra = _process.extra_env(model_env, cookie)
    except ValueError as exc:
        raise ToolError(f"{exc}; fix the env argument and call again") from None
    root = ctx.workspace.root
    if settings.mode != "off":
        # Smoke's own folder exists before any command runs, so the sandbox can
        # keep it read-only (a command could otherwise create .smoke/config.yaml).
        try:
            (root / ".smoke").mkdir(exist_ok=True)
        except OSError:
            pass  # a read-only workspace: no command can create it either
    policy = SandboxPolicy.from_settings(settings, root)
    try:
        launch = sandbox.prepare(_process.shell_argv(command), policy, cwd=cwd, extra_env=extra)
    except SandboxUnavailable as exc:
        raise ToolError(str(exc)) from None
    _warn_once(ctx, launch, policy)
    return launch, policy, cookie


def _warn_once(ctx: ToolContext, launch: Launch, policy: SandboxPolicy) -> None:
    """One ``run.warning`` per run when commands run unsandboxed in ``auto``
    mode, or when part of the sandbox settings could not be applied."""
    messages = []
    if launch.fallback:
        messages.append(
            f"commands run WITHOUT a sandbox: {launch.fallback}. Set `sandbox.mode: required` to refuse "
            "unsandboxed commands, or `sandbox.mode: off` to run them so without this warning"
        )
    messages.extend(policy.notes)
    if not messages or ctx.state.get(WARNED_KEY):
        return
    ctx.state[WARNED_KEY] = True
    info = AgentErrorInfo.from_code(
        "tool_failed",
        "; ".join(messages),
        severity="warning",
        hint=sandbox.INSTALL_HINT if launch.fallback else "Fix the sandbox settings.",
        details={"sandbox": sandbox.status().to_dict(), "tool_name": ctx.tool_name},
    )
    ctx.emit("run.warning", {"error": info.to_dict(), "attempt": None, "retry_in_ms": None})


def _check_command(command: Any) -> str:
    if not isinstance(command, str) or not command.strip():
        raise ToolError("command is empty; give the command line to run")
    if "\x00" in command:
        raise ToolError("command contains a NUL byte; remove it and call again")
    return command


def _signal_name(code: int | None) -> str | None:
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


async def _execute(
    ctx: ToolContext, input: dict[str, Any], *, head_share: float
) -> tuple[dict[str, Any], str, list[str]]:
    """Run the command in the foreground. Returns (data, output text, notes)."""
    command = _check_command(input.get("command"))
    cwd = _resolve_workdir(ctx, input.get("workdir"))
    timeout_s, timeout_note = _timeout(ctx, input.get("timeout_ms"))
    launch, policy, cookie = _launch(ctx, command, cwd, input.get("env"))
    output = CommandOutput(
        limit=int(_option(ctx, "terminal_output_limit", DEFAULT_OUTPUT_LIMIT)),
        head_share=head_share,
        log_path=lambda: ctx.artifacts_dir / f"{_process.safe_file_stem(ctx.tool_call_id)}.log",
        log_limit=int(_option(ctx, "terminal_log_limit", DEFAULT_LOG_LIMIT)),
        live_limit=int(_option(ctx, "terminal_live_output_limit", DEFAULT_LIVE_OUTPUT_LIMIT)),
        emit=lambda text, stream: ctx.emit_output(text, stream=stream),
    )
    try:
        outcome = await _process.run_command(
            launch.argv,
            cwd=cwd,
            env=launch.env,
            cookie=cookie,
            timeout_s=timeout_s,
            cancelled=ctx.cancelled,
            output=output,
            sandboxed=launch.sandboxed,
        )
    except RuntimeError as exc:
        raise ToolError(f"{exc}; check the command and the workdir") from None
    finally:
        output.finish()
    text = output.render(ctx.workspace.relative)
    notes: list[str] = []
    if timeout_note:
        notes.append(timeout_note)
    data: dict[str, Any] = {
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "aborted": outcome.aborted,
        "duration_ms": round(outcome.duration_ms, 1),
        "pid": outcome.pid,
        "workdir": ctx.workspace.relative(cwd),
        "output_chars": output.total_chars,
        "output_bytes": output.total_bytes,
        "truncated": output.truncated,
        "sandboxed": launch.sandboxed,
    }
    if output.log is not None:
        data["log_path"] = str(output.log.path)
        if output.log.cut:
            data["log_cut_bytes"] = output.log.cut
    if output.live_stopped:
        data["live_output_stopped"] = True
    sig = _signal_name(outcome.exit_code)
    code = outcome.exit_code
    if sig is None and launch.sandboxed and (outcome.timed_out or outcome.aborted) and code is not None and code > 128:
        sig = _signal_name(128 - code)  # bwrap reports a command killed by signal N as exit code 128 + N
    if sig:
        data["signal"] = sig
    report = outcome.stopped
    if report.stopped:
        data["stopped_processes"] = report.to_list()
    if report.survivors:
        data["survivors"] = [{"pid": pid, "name": name} for pid, name in report.survivors]
    what = f"stopped {report.describe()}" if report else "nothing was left to stop"
    namespace = " (it ran in the sandbox's own PID namespace, which ends with it)" if launch.sandboxed else ""
    if outcome.timed_out:
        notes.append(
            f"timed out after {timeout_s:g} s; {what}: the command and everything it started{namespace}. "
            f"Raise timeout_ms (at most {MAX_TIMEOUT_MS}), run a narrower command, or use background: true for servers"
        )
    elif outcome.aborted:
        notes.append(f"aborted: the run was stopped; {what}: the command and everything it started{namespace}")
    if outcome.leftovers_stopped and not (outcome.timed_out or outcome.aborted):
        notes.append(
            f"the command left processes running; {what}. Use background: true to keep a server running"
        )
    if outcome.exit_code == 127 and not outcome.timed_out:
        notes.append(
            "exit code 127 means the command was not found: check the program name, PATH, or install it"
        )
    if launch.sandboxed and not (outcome.timed_out or outcome.aborted):
        refusals = sandbox.explain_refusal(text, policy, exit_code=outcome.exit_code)
        if refusals:
            data["sandbox_refused"] = [r["kind"] for r in refusals]
            notes.extend(r["message"] for r in refusals)
    return data, text, notes


def _status_line(data: dict[str, Any]) -> str:
    code = data["exit_code"]
    parts = [f"exit code {code}"]
    if data.get("signal"):
        parts.append(f"killed by {data['signal']}")
    parts.append(f"{data['duration_ms'] / 1000:.1f} s")
    return "[" + ", ".join(parts) + "]"


def _result(text: str, data: dict[str, Any], ok: bool) -> ToolResult:
    result = ToolResult.text(text, data=data)
    result.presentation = ToolPresentation(
        tone="success" if ok else "error", badge=BADGE if data.get("sandboxed") else None
    )
    return result


# ---------------------------------------------------------------- run_command


async def run_command(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if input.get("background"):
        return await _run_background(input, ctx)
    data, output, notes = await _execute(ctx, input, head_share=0.3)
    where = "" if data["workdir"] == "." else f" (in {data['workdir']})"
    lines = [
        f"$ {input['command']}{where}",
        output.rstrip("\n") if output.strip() else "(no output)",
    ]
    lines.append(_status_line(data))
    lines.extend(f"Note: {n}" for n in notes)
    ok = data["exit_code"] == 0 and not data["timed_out"] and not data["aborted"]
    return _result("\n".join(lines), data, ok)


async def _run_background(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    command = _check_command(input.get("command"))
    cwd = _resolve_workdir(ctx, input.get("workdir"))
    launch, _policy, cookie = _launch(ctx, command, cwd, input.get("env"))
    log_path = ctx.artifacts_dir / f"{_process.safe_file_stem(ctx.tool_call_id)}.log"
    try:
        popen, tracked, log, drain = await asyncio.to_thread(
            _process.start_background,
            launch.argv,
            cwd=cwd,
            env=launch.env,
            cookie=cookie,
            log_path=log_path,
            log_limit=int(_option(ctx, "terminal_log_limit", DEFAULT_LOG_LIMIT)),
        )
    except (OSError, ValueError) as exc:
        raise ToolError(
            f"could not start the command: {exc}; check the command and the workdir"
        ) from None
    bg = BackgroundProcess(
        pid=popen.pid, command=command, log_path=log_path, popen=popen, owner=id(ctx.options),
        tracked=tracked, log=log, drain=drain, sandboxed=launch.sandboxed,
    )
    ctx.state.setdefault(STATE_KEY, {})[bg.pid] = bg
    LIVE[bg.pid] = bg
    rel = ctx.workspace.relative(log_path)
    if launch.sandboxed:
        how = (
            "It runs in its own sandbox: other commands cannot signal it"
            + ("" if _policy.network else ", nor reach its ports (each command has its own loopback network)")
            + ". It is stopped when the run ends."
        )
    else:
        how = f"It is stopped when the run ends; stop it earlier with run_command `kill -TERM -{bg.pid}`."
    text = (
        f"Started in the background: pid {bg.pid}, in {ctx.workspace.relative(cwd)}.\n"
        f"Output goes to {rel}; read it with read_file (or `tail -n 50 {rel}` via run_command).\n{how}"
    )
    data = {
        "pid": bg.pid,
        "background": True,
        "log_path": str(log_path),
        "exit_code": None,
        "timed_out": False,
        "workdir": ctx.workspace.relative(cwd),
        "sandboxed": launch.sandboxed,
    }
    return _result(text, data, True)


async def stop_tracked(processes: list[BackgroundProcess]) -> list[int]:
    """Stop background processes (and everything they started) and forget them. Returns the pids."""
    await asyncio.gather(
        *(_process.stop_background(bg) for bg in processes), return_exceptions=True
    )
    for bg in processes:
        LIVE.pop(bg.pid, None)
    return [bg.pid for bg in processes]


# ---------------------------------------------------------------- run_test


async def run_test(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    data, output, notes = await _execute(ctx, input, head_share=0.2)
    summary = summarize_tests(output)
    data.update(summary)
    passed = data["exit_code"] == 0 and not data["timed_out"] and not data["aborted"]
    data["status"] = (
        "timed_out"
        if data["timed_out"]
        else "aborted"
        if data["aborted"]
        else "passed"
        if passed
        else "failed"
    )
    counts = ", ".join(f"{summary[k]} {k}" for k in _COUNT_ORDER if k in summary)
    if data["timed_out"]:
        head = "Tests timed out"
    elif data["aborted"]:
        head = "Tests aborted"
    else:
        head = "Tests passed" if passed else "Tests FAILED"
    headline = f"{head} (exit code {data['exit_code']}" + (f"; {counts})" if counts else ")")
    where = "" if data["workdir"] == "." else f" (in {data['workdir']})"
    lines = [
        headline,
        f"$ {input['command']}{where}",
        output.rstrip("\n") if output.strip() else "(no output)",
    ]
    lines.append(_status_line(data))
    lines.extend(f"Note: {n}" for n in notes)
    return _result("\n".join(lines), data, passed)


_COUNT_ORDER = ("failed", "errors", "passed", "skipped", "xfailed", "xpassed", "total")
_PYTEST_LINE = re.compile(r"\b\d+ (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_PAIR = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|total|todo)\b")


def summarize_tests(output: str) -> dict[str, Any]:
    """Pass/fail counts from common runners' summary lines (pytest, unittest,
    jest/vitest, cargo, go). Empty when none is recognised."""
    lines = output.splitlines()
    for line in reversed(lines):
        # jest / vitest: "Tests:       1 failed, 3 passed, 4 total" / "Tests  1 failed | 3 passed (4)"
        m = re.match(r"^\s*Tests:?\s+(.*)$", line)
        if m:
            counts = _counts(m.group(1))
            if counts:
                return {"framework": "jest", **counts}
        # cargo: "test result: FAILED. 3 passed; 1 failed; 0 ignored"
        m = re.search(r"test result: (ok|FAILED)\. (\d+) passed; (\d+) failed", line)
        if m:
            return {"framework": "cargo", "passed": int(m.group(2)), "failed": int(m.group(3))}
        if _PYTEST_LINE.search(line) and ("=" in line or re.search(r" in [\d.]+s", line)):
            counts = _counts(line)
            if counts:
                return {"framework": "pytest", **counts}
        if re.search(r"\bno tests ran\b", line):
            return {"framework": "pytest", "passed": 0}
    # unittest: "Ran 5 tests in 0.01s" then "OK" / "FAILED (failures=1, errors=2)"
    ran = next(
        (int(m.group(1)) for line in lines if (m := re.match(r"^Ran (\d+) tests? in", line))), None
    )
    if ran is not None:
        failed = errors = 0
        for line in lines:
            m = re.match(r"^FAILED \((.*)\)", line)
            if m:
                found = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1)))
                failed, errors = found.get("failures", 0), found.get("errors", 0)
        out: dict[str, Any] = {
            "framework": "unittest",
            "total": ran,
            "passed": ran - failed - errors,
            "failed": failed,
        }
        if errors:
            out["errors"] = errors
        return out
    # go test: "--- FAIL: TestX" / "--- PASS: TestY"
    go_fail = sum(1 for line in lines if line.lstrip().startswith("--- FAIL:"))
    go_pass = sum(1 for line in lines if line.lstrip().startswith("--- PASS:"))
    if go_fail or go_pass:
        return {"framework": "go", "passed": go_pass, "failed": go_fail}
    return {}


def _counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for num, word in _PAIR.findall(text):
        key = "errors" if word.startswith("error") else word
        counts[key] = counts.get(key, 0) + int(num)
    return counts


# ---------------------------------------------------------------- definitions


def build_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="run_command",
            description=RUN_COMMAND_DESCRIPTION,
            input_schema=RUN_COMMAND_SCHEMA,
            annotations=ToolAnnotations(
                title="Run command",
                read_only_hint=False,
                destructive_hint=True,
                open_world_hint=True,
                kind="execute",
                claude=ClaudeDialect(name="Bash", input={"command": "command", "timeout": "timeout_ms",
                                                         "run_in_background": "background"}),
            ),
            permission_key="command",
            presentation=ToolPresentation(
                label="Run command", icon="💻", tone="warning", group="terminal"
            ),
            execute=run_command,
            group="terminal",
        ),
        ToolDefinition(
            name="run_test",
            description=RUN_TEST_DESCRIPTION,
            input_schema=RUN_TEST_SCHEMA,
            annotations=ToolAnnotations(
                title="Run tests", read_only_hint=False, destructive_hint=True, open_world_hint=True,
                kind="execute",
            ),
            permission_key="command",
            presentation=ToolPresentation(
                label="Run tests", icon="🧪", tone="warning", group="terminal"
            ),
            execute=run_test,
            group="terminal",
        ),
    ]
