"""``smoke batch``: one task, run in this process — what every engine's
worker calls (:func:`run_task`, or :func:`run_batch_task` from a thread or a
Ray worker).

The task gets its own workspace copy (:mod:`smoke_core.batch.workspace`), its setup
command, and an agent on the session ``batch-<batch id>-<task id>`` in the
batch's store. A batch never waits for a person: the permission mode is
``deny-all`` (or ``ask-default`` with auto-approval under ``--yes``) plus
the batch's and the task's rules; a call that would ask is denied, a
question gets "no answer", and every refusal is listed in the result's
``denied``. A session that already holds messages is an interrupted task:
it is resumed with a continuation prompt instead of the task.

The result is one JSON object (see docs/scale.md); a task never raises —
what went wrong is in ``error``.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
import time
from pathlib import Path
from typing import Any

from ..base.errors import AgentErrorInfo
from ..store.lease import call_store
from .tasks import BatchConfig, BatchTask, output_type_for
from .workspace import GitError, PreparedWorkspace, diff, prepare, run_setup

log = logging.getLogger("smoke.batch")

RESUME_PROMPT = (
    "This task was interrupted before it finished (the batch stopped, or the worker running it was lost). "
    "Continue it from where it stopped: the workspace keeps the changes made so far. Before you repeat "
    "anything that changes files or runs commands, check whether it already took effect.\n\nThe task:\n{task}"
)
NO_ANSWER = "(no answer: this is a batch run and nobody is there to answer; decide yourself and say what you chose)"

_stores: dict[tuple[str, float], Any] = {}
_stores_lock = threading.Lock()


def batch_store(config: BatchConfig) -> Any:
    """The batch's store, opened once per process (workers of one engine share it)."""
    from ..store.url import open_store

    key = (config.store_url, config.lease_ttl)
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            # a retried task waits long enough for a dead holder's lease (on another machine) to expire
            store = open_store(config.store_url, lease_ttl=config.lease_ttl, lease_wait=config.lease_ttl * 1.5)
            _stores[key] = store
        return store


def close_stores() -> None:
    with _stores_lock:
        for store in _stores.values():
            close = getattr(store, "close", None)
            if close is not None:
                try:
                    close()
                except Exception as exc:  # closing is best effort
                    log.warning("smoke batch: closing the store failed: %s", exc)
        _stores.clear()


def _result(task: BatchTask, config: BatchConfig, t0: float, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": task.id, "status": "failed", "text": None, "output": None, "error": None, "usage": None,
        "cost_usd": None, "steps": 0, "session_id": config.session_id(task.id), "resumed": False, "diff": None,
        "denied": [], "warnings": [], "notes": [],
    }
    base.update(fields)
    base["duration_s"] = round(time.perf_counter() - t0, 3)
    return base


def failed(task: BatchTask, config: BatchConfig, t0: float, code: str, message: str,
           **details: Any) -> dict[str, Any]:
    info = AgentErrorInfo.from_code(code, message, details=details)  # type: ignore[arg-type]
    return _result(task, config, t0, error=info.to_dict())


def _plugins(names: list[str]) -> list[Any]:
    return [importlib.import_module(name) for name in names]


def _rules(config: BatchConfig, task: BatchTask) -> dict[str, list[str]]:
    rules: dict[str, list[str]] = {k: list(v) for k, v in config.permissions.items()}
    for kind, extra in (task.permissions or {}).items():
        rules.setdefault(kind, []).extend(extra)
    return rules


async def run_task(task: BatchTask, config: BatchConfig) -> dict[str, Any]:
    """Run ``task`` to its result line (never raises, except when cancelled)."""
    t0 = time.perf_counter()
    work = Path(config.work_dir)
    source = Path(task.workspace)
    try:
        ws = await prepare(source, work / "workspaces" / task.key, work / "baselines" / task.key,
                           in_place=config.in_place)
    except (GitError, OSError) as exc:
        return failed(task, config, t0, "batch_task_invalid", f"the workspace {source} could not be copied: {exc}")
    notes = list(ws.notes)
    if task.setup:
        marker = work / "setup" / f"{task.key}.done"
        if not marker.exists():
            from ..policy.secrets import child_env

            outcome = await run_setup(task.setup, ws.path, timeout=config.setup_timeout, env=child_env())
            if not outcome.ok:
                why = (f"timed out after {config.setup_timeout:.0f} s" if outcome.timed_out
                       else f"exited with status {outcome.exit_code}")
                return _with(failed(task, config, t0, "batch_setup_failed", f"the setup command {why}",
                                    exit_code=outcome.exit_code, output=outcome.output), notes=notes)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text("ok\n")
    try:
        result = await _run_agent(task, config, ws, t0)
    except _Unusable as exc:
        result = failed(task, config, t0, "batch_task_invalid", str(exc))
    result["notes"] = notes + result.get("notes", [])
    try:
        result["diff"] = await diff(ws)
    except (GitError, OSError) as exc:
        result["notes"].append(f"the diff could not be taken: {exc}")
    result["duration_s"] = round(time.perf_counter() - t0, 3)
    return result


def _with(result: dict[str, Any], **fields: Any) -> dict[str, Any]:
    result.update(fields)
    return result


class _Unusable(Exception):
    """The agent for a task cannot be made (an unknown provider, a bad setting)."""


def _make_agent(task: BatchTask, config: BatchConfig, ws: PreparedWorkspace) -> Any:
    from ..base.errors import ConfigError
    from ..policy.settings.files import SettingsError, is_trusted
    from ..run.factory import create_agent

    provider, model = config.provider, task.model or config.model
    if task.model and ":" in task.model and config.provider:
        prefix = task.model.split(":", 1)[0]
        if prefix in _provider_names():
            provider = None  # the task names its own provider
    try:
        return create_agent(
            ws.path, provider=provider, model=model, base_url=config.base_url if provider else None,
            store=batch_store(config), session_id=config.session_id(task.id),
            permission="ask-default" if config.allow_all else "deny-all",
            auto_approve=True if config.allow_all else None,
            permissions=_rules(config, task) or None, max_steps=task.max_steps or config.max_steps,
            trust_workspace=is_trusted(task.workspace), plugins=_plugins(config.plugins),
        )
    except (ValueError, TypeError, SettingsError, ConfigError, ImportError, OSError) as exc:
        raise _Unusable(f"the agent for this task could not be created: {exc}") from None


_names: list[str] | None = None


def _provider_names() -> list[str]:
    global _names
    if _names is None:
        from ..hooks.manager import collect_providers, create_plugin_manager

        _names = collect_providers(create_plugin_manager()).names()
    return _names


async def _run_agent(task: BatchTask, config: BatchConfig, ws: PreparedWorkspace, t0: float) -> dict[str, Any]:
    agent = _make_agent(task, config, ws)
    denied: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []

    def on_permission(event: Any) -> None:
        d = event.data
        denied.append({"tool": d.get("tool_name"), "input": d.get("input"),
                       "reason": "needs approval, and a batch never waits for a person"})
        agent.resolve_permission(d["tool_call_id"], "deny")

    def on_completed(event: Any) -> None:
        error = event.data.get("error") or {}
        if error.get("code") == "permission_denied" and not any(
            x.get("call_id") == event.data.get("tool_call_id") for x in denied
        ):
            denied.append({"tool": event.data.get("tool_name"), "call_id": event.data.get("tool_call_id"),
                           "reason": error.get("message")})

    agent.on("permission.required", on_permission)
    agent.on("tool.completed", on_completed)
    agent.on("ask_user.required", lambda e: agent.respond(e.data["tool_call_id"], NO_ANSWER))
    agent.on("run.warning", lambda e: warnings.append(
        {k: (e.data.get("error") or {}).get(k) for k in ("code", "message")}))
    store = agent.store
    session_id = config.session_id(task.id)
    try:
        resumed = bool(await call_store(store, "load", session_id))
        prompt = RESUME_PROMPT.format(task=task.task) if resumed else task.task
        output_type = output_type_for(task.output_schema) if task.output_schema is not None else None
        run = await agent.run(prompt, output_type=output_type)
    finally:
        await agent.aclose()
    for entry in denied:
        entry.pop("call_id", None)
    usage = run.usage.to_dict()
    error = run.error.to_dict() if run.error is not None else None
    output = run.output
    if output is not None and not isinstance(output, (dict, list, str, int, float, bool)):
        from pydantic import TypeAdapter

        output = TypeAdapter(type(output)).dump_python(output, mode="json")
    return _result(
        task, config, t0, status=run.status, text=run.text, output=output, error=error, usage=usage,
        cost_usd=usage.get("cost_usd"), steps=run.steps, resumed=resumed, denied=denied, warnings=warnings,
    )


def run_batch_task(task: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """:func:`run_task` for a worker that is not in an event loop (a Ray
    task): ``BatchTask.to_dict()`` and ``BatchConfig.to_dict()`` in, the
    result line out. Never raises for a task's own trouble."""
    return asyncio.run(run_task(BatchTask.from_dict(task), BatchConfig.from_dict(config)))


def batch_error_result(task: BatchTask, config: BatchConfig, code: str, message: str,
                       **details: Any) -> dict[str, Any]:
    """A result line for a task that an engine could not run (``batch_worker_lost``...)."""
    return failed(task, config, time.perf_counter(), code, message, **details)
