"""The ``ray`` batch engine. Only click is imported at the top: ``smoke batch
--help`` loads this module to show its options; Ray is imported when a batch
runs."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import click

from smoke_core.plugin import BatchConfig, BatchError, BatchTask, batch_error_result

log = logging.getLogger("smoke.batch.ray")


def _runtime_env(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise BatchError(f"--ray-runtime-env is not JSON ({exc}); e.g. '{{\"pip\": [\"smoke-core\"]}}'") from None
    if not isinstance(parsed, dict):
        raise BatchError("--ray-runtime-env must be a JSON object (a Ray runtime environment)")
    return parsed


def _local_store(url: str) -> bool:
    head = url.split(":", 1)[0].lower() if ":" in url[:12] else ""
    return head in ("", "sqlite", "file", "memory")


class RayEngine:
    """Each task is a Ray task (``num_cpus`` each, retried ``max_retries``
    times when its worker dies), at most ``--concurrency`` in flight."""

    name = "ray"

    @classmethod
    def cli_options(cls) -> list[click.Option]:
        return [
            click.Option(["--ray-address"], default=None, metavar="ADDRESS",
                         help="[ray] Cluster to use: auto (a running local cluster), ray://host:10001, or "
                              "host:6379. Default: $RAY_ADDRESS, else start a cluster on this machine."),
            click.Option(["--ray-num-cpus"], type=float, default=1.0, show_default=True,
                         help="[ray] CPUs reserved for each task."),
            click.Option(["--ray-max-retries"], type=int, default=3, show_default=True,
                         help="[ray] How often a task whose worker died is run again (it resumes from its session)."),
            click.Option(["--ray-runtime-env"], default=None, metavar="JSON",
                         help="[ray] Runtime environment for the workers, e.g. "
                              "'{\"pip\": [\"smoke-core\", \"smoke-tools-filesystem\"]}'."),
        ]

    def __init__(self, ray_address: str | None = None, ray_num_cpus: float = 1.0, ray_max_retries: int = 3,
                 ray_runtime_env: str | dict[str, Any] | None = None) -> None:
        if ray_num_cpus <= 0:
            raise BatchError(f"--ray-num-cpus must be more than 0, got {ray_num_cpus}")
        if ray_max_retries < 0:
            raise BatchError(f"--ray-max-retries must be 0 or more, got {ray_max_retries}")
        self.address = ray_address
        self.num_cpus = ray_num_cpus
        self.max_retries = ray_max_retries
        self.runtime_env = (ray_runtime_env if isinstance(ray_runtime_env, dict) or ray_runtime_env is None
                            else _runtime_env(ray_runtime_env))

    def _connect(self) -> bool:
        """``ray.init`` unless Ray is initialised already; True when this engine did it."""
        try:
            import ray
        except ImportError:
            raise BatchError("Ray is not installed: pip install smoke-ray (it installs ray)") from None
        if ray.is_initialized():
            return False
        try:
            ray.init(address=self.address, runtime_env=self.runtime_env, include_dashboard=False,
                     log_to_driver=False, logging_level=logging.WARNING, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = self.address or "a new local cluster"
            raise BatchError(f"cannot start or reach the Ray cluster ({where}): {exc}") from None
        return True

    async def run(self, tasks: list[BatchTask], config: BatchConfig, *, concurrency: int,
                  started: Callable[[str], None]) -> AsyncIterator[dict[str, Any]]:
        if not tasks:
            return
        import ray

        from ._worker import run_task

        owned = self._connect()
        try:
            alive = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
            if len(alive) > 1 and _local_store(config.store_url):
                raise BatchError(
                    f"the Ray cluster has {len(alive)} nodes but the session store is a file on this machine "
                    f"({config.store_url}): workers elsewhere cannot share it. Use a shared store: "
                    f"SMOKE_STORE_URL=postgresql://... (pip install smoke-store-postgres on every node)"
                )
            remote = ray.remote(run_task).options(
                num_cpus=self.num_cpus, max_retries=self.max_retries, retry_exceptions=False, name="smoke-batch-task",
            )
            queue = list(tasks)
            in_flight: dict[asyncio.Future[Any], tuple[BatchTask, Any]] = {}
            try:
                while queue or in_flight:
                    while queue and len(in_flight) < concurrency:
                        task = queue.pop(0)
                        ref = remote.remote(task.to_dict(), config.to_dict())
                        in_flight[asyncio.wrap_future(ref.future())] = (task, ref)
                        started(task.id)
                    done, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    for future in done:
                        task, _ref = in_flight.pop(future)
                        yield self._outcome(future, task, config)
            finally:
                # Ctrl-C (or an error): every task still queued or running is cancelled, its worker killed
                for future, (_task, ref) in in_flight.items():
                    future.cancel()
                    try:
                        ray.cancel(ref, force=True)
                    except Exception as exc:  # the task may have just finished
                        log.debug("smoke batch: could not cancel a Ray task: %s", exc)
        finally:
            if owned:
                ray.shutdown()

    def _outcome(self, future: asyncio.Future[Any], task: BatchTask, config: BatchConfig) -> dict[str, Any]:
        import ray.exceptions as rx

        try:
            result: dict[str, Any] = future.result()
            return result
        except rx.RayTaskError as exc:  # the task's own code raised: a bug, reported with the task
            return batch_error_result(task, config, "run_internal_error",
                                      f"the task raised on its Ray worker: {str(exc).strip().splitlines()[-1]}")
        except (rx.WorkerCrashedError, rx.NodeDiedError, rx.OwnerDiedError, rx.ObjectLostError,
                rx.RaySystemError, rx.TaskCancelledError) as exc:
            return batch_error_result(
                task, config, "batch_worker_lost",
                f"the Ray worker running this task died and the task was retried {self.max_retries} time(s) "
                f"({type(exc).__name__}); run the batch again to resume it from its session",
            )
