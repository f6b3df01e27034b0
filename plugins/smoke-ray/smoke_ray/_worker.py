"""What a Ray worker runs for one task (imported by the worker by name, so the
function is shipped by reference, not pickled)."""

from __future__ import annotations

from typing import Any


def run_task(task: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    from smoke_core.plugin import run_batch_task

    return run_batch_task(task, config)
