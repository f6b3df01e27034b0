"""``smoke batch``: the driver — results file, resumption, engines, progress.

:func:`run_batch` is the Python API behind the command. It locks the results
file (a second batch writing the same ``--out`` is refused), skips the ids
that already have a result line, writes one line per invalid task line at
once, hands the rest to the engine and writes each result as it comes back
(flushed line by line, so a killed batch loses no finished result; a torn
last line is cut off when the batch is resumed). Tasks that were running
when the batch stopped have no line: the next run of the same command
resumes them from their sessions.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import AgentErrorInfo
from .tasks import BatchConfig, BatchTask, InvalidLine, parse_rules, read_tasks

#: error codes whose task is not finished: no result line, the next run resumes it
UNFINISHED_CODES = frozenset({"batch_worker_lost"})


class BatchError(Exception):
    """A batch that cannot start; the message says why and what to do."""


@dataclass
class BatchSummary:
    out: Path
    work_dir: Path
    batch_id: str
    total: int = 0
    skipped: int = 0
    completed: int = 0
    failed: int = 0
    invalid: int = 0
    lost: list[str] = field(default_factory=list)
    interrupted: bool = False
    tokens: int = 0
    cost_usd: float | None = None
    duration_s: float = 0.0
    #: ids in the results file (from this run and earlier ones) whose status is not "completed"
    not_completed: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    #: why the batch stopped early: its budget (``max_cost_usd`` ...) was spent; None otherwise
    budget_exceeded: str | None = None


class ResultsFile:
    """The ``--out`` file, locked for this batch while it is open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "a+b")  # noqa: SIM115 - held open (and locked) for the whole batch
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._fh.close()
            raise BatchError(
                f"another `smoke batch` is writing {path} (it holds the file's lock); wait for it to finish, "
                f"or give this batch another --out"
            ) from None
        self.done: dict[str, dict[str, Any]] = {}
        self.cut: int = 0
        self._read()

    def _read(self) -> None:
        self._fh.seek(0)
        data = self._fh.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a line torn by a crash: cut it off
            self.cut = len(data) - end
            self._fh.truncate(end)
        for raw in data[:end].splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and isinstance(line.get("id"), str):
                self.done[line["id"]] = line
        self._fh.seek(0, os.SEEK_END)

    def write(self, result: dict[str, Any]) -> None:
        self._fh.write(json.dumps(result, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh.closed:
            return
        try:
            os.fsync(self._fh.fileno())
        finally:
            self._fh.close()


def _batch_identity(work_dir: Path, batch_id: str | None, tasks_file: Path) -> str:
    """The batch id kept in ``<work dir>/batch.json`` (made on the first run)."""
    meta = work_dir / "batch.json"
    if meta.exists():
        try:
            stored = json.loads(meta.read_text()).get("batch_id")
        except ValueError:
            stored = None
        if isinstance(stored, str) and stored:
            if batch_id is not None and batch_id != stored:
                raise BatchError(
                    f"the work folder {work_dir} belongs to batch {stored!r}, not {batch_id!r}: leave --batch-id out "
                    f"to resume it, or give another --out / --work-dir for a new batch"
                )
            return stored
    chosen = batch_id or uuid.uuid4().hex[:10]
    work_dir.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"batch_id": chosen, "tasks_file": str(tasks_file), "created_at": time.time()}))
    return chosen


def _batch_budget_spent(summary: BatchSummary, max_cost_usd: float | None, max_input_tokens: int | None,
                        max_output_tokens: int | None) -> str | None:
    """Which budget of the whole batch its finished tasks have reached, worded for people; None if none."""
    if max_cost_usd is not None and (summary.cost_usd or 0.0) >= max_cost_usd:
        return f"${summary.cost_usd or 0.0:.4f} of max_cost_usd ${max_cost_usd:g}"
    if max_input_tokens is not None and summary.input_tokens >= max_input_tokens:
        return f"{summary.input_tokens:,} of max_input_tokens {max_input_tokens:,}"
    if max_output_tokens is not None and summary.output_tokens >= max_output_tokens:
        return f"{summary.output_tokens:,} of max_output_tokens {max_output_tokens:,}"
    return None


def invalid_result(item: InvalidLine, config: BatchConfig) -> dict[str, Any]:
    info = AgentErrorInfo.from_code("batch_task_invalid", item.message, details={"line": item.line})
    return {"id": item.id, "status": "failed", "text": None, "output": None, "error": info.to_dict(),
            "usage": None, "cost_usd": None, "steps": 0, "session_id": None, "resumed": False, "diff": None,
            "denied": [], "warnings": [], "notes": [], "duration_s": 0.0}


class Progress:
    """What a batch reports while it runs (the plain and rich displays implement it)."""

    def start(self, summary: BatchSummary, todo: int) -> None: ...

    def task_started(self, task_id: str) -> None: ...

    def task_done(self, result: dict[str, Any], summary: BatchSummary) -> None: ...

    def finish(self, summary: BatchSummary) -> None: ...


async def run_batch(
    tasks_file: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    engine: str = "local",
    engine_options: dict[str, Any] | None = None,
    concurrency: int = 8,
    work_dir: str | os.PathLike[str] | None = None,
    batch_id: str | None = None,
    store_url: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    allow: Iterable[str] = (),
    ask: Iterable[str] = (),
    deny: Iterable[str] = (),
    allow_all: bool = False,
    max_steps: int | None = None,
    in_place: bool = False,
    setup_timeout: float = 600.0,
    plugins: Iterable[str] = (),
    lease_ttl: float = 30.0,
    progress: Progress | None = None,
    max_cost_usd: float | None = None,
    max_input_tokens: int | None = None,
    max_output_tokens: int | None = None,
) -> BatchSummary:
    """Run every task of ``tasks_file`` not yet in ``out`` (see docs/scale.md).
    Raises :class:`BatchError` for a batch that cannot start."""
    from ..store.url import StoreURLError, redact_url, store_url_from_env
    from .engine import engine_classes
    from .task import batch_store, close_stores

    t0 = time.perf_counter()
    tasks_path = Path(tasks_file).expanduser().resolve()
    if not tasks_path.is_file():
        raise BatchError(f"the tasks file {tasks_file} does not exist (one JSON object per line: id, task, workspace)")
    out_path = Path(out).expanduser().resolve() if out else tasks_path.with_name(tasks_path.stem + ".results.jsonl")
    if out_path == tasks_path:
        raise BatchError("--out names the tasks file itself; give the results another file")
    work = Path(work_dir).expanduser().resolve() if work_dir else out_path.with_name(out_path.stem + ".batch")
    if concurrency < 1:
        raise BatchError(f"--concurrency must be at least 1, got {concurrency}")
    for name, limit in (("--max-cost-usd", max_cost_usd), ("--max-input-tokens", max_input_tokens),
                        ("--max-output-tokens", max_output_tokens)):
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0):
            raise BatchError(f"{name} must be a positive number, got {limit!r}")
    engines = engine_classes()
    if engine not in engines:
        hint = " (pip install smoke-ray)" if engine == "ray" else ""
        raise BatchError(f"unknown engine {engine!r}{hint}; installed engines: {', '.join(sorted(engines))}")
    try:
        rules = parse_rules({k: list(v) for k, v in (("allow", allow), ("ask", ask), ("deny", deny)) if v},
                            "the batch's rules")
    except ValueError as exc:
        raise BatchError(str(exc)) from None
    results = ResultsFile(out_path)
    try:
        chosen_id = _batch_identity(work, batch_id, tasks_path)
        url = store_url or store_url_from_env() or f"sqlite:///{work / 'sessions.db'}"
        config = BatchConfig(
            batch_id=chosen_id, work_dir=str(work), store_url=url, provider=provider, model=model,
            base_url=base_url, permissions=rules, allow_all=allow_all, max_steps=max_steps, in_place=in_place,
            setup_timeout=setup_timeout, plugins=list(plugins), lease_ttl=lease_ttl,
        )
        try:
            batch_store(config)  # open it here first: a store that cannot be reached stops the batch now
        except (StoreURLError, OSError) as exc:
            raise BatchError(f"the session store cannot be opened: {exc}") from None
        except Exception as exc:
            raise BatchError(f"the session store {redact_url(url)} cannot be opened: {exc}") from None
        summary = BatchSummary(out=out_path, work_dir=work, batch_id=chosen_id)
        items = read_tasks(tasks_path)
        summary.total = len(items)
        todo: list[BatchTask] = []
        for item in items:
            if item.id in results.done:
                summary.skipped += 1
            elif isinstance(item, InvalidLine):
                line = invalid_result(item, config)
                results.write(line)
                results.done[item.id] = line
                summary.invalid += 1
            else:
                todo.append(item)
        show = progress or Progress()
        show.start(summary, len(todo))
        runner = engines[engine](**(engine_options or {}))
        try:
            async for result in runner.run(todo, config, concurrency=concurrency, started=show.task_started):
                error = result.get("error") or {}
                if error.get("code") in UNFINISHED_CODES:
                    summary.lost.append(str(result.get("id")))
                else:
                    results.write(result)
                    results.done[str(result.get("id"))] = result
                    if result.get("status") == "completed":
                        summary.completed += 1
                    else:
                        summary.failed += 1
                    usage = result.get("usage") or {}
                    summary.tokens += int(usage.get("total_tokens") or 0)
                    summary.input_tokens += int(usage.get("input_tokens") or 0)
                    summary.output_tokens += int(usage.get("output_tokens") or 0)
                    if result.get("cost_usd") is not None:
                        summary.cost_usd = (summary.cost_usd or 0.0) + float(result["cost_usd"])
                show.task_done(result, summary)
                summary.budget_exceeded = _batch_budget_spent(summary, max_cost_usd, max_input_tokens,
                                                              max_output_tokens)
                if summary.budget_exceeded:  # no more tasks start; the running ones stop (resumable)
                    break
        except asyncio.CancelledError:
            summary.interrupted = True
            summary.duration_s = round(time.perf_counter() - t0, 3)
            show.finish(summary)
            raise
        summary.duration_s = round(time.perf_counter() - t0, 3)
        summary.not_completed = [i for i, r in results.done.items() if r.get("status") != "completed"]
        show.finish(summary)
        return summary
    finally:
        results.close()
        close_stores()
