"""smoke-ray: ``smoke batch --engine ray`` — each task of a batch runs as a
Ray task on a cluster (``ray.init()`` on a laptop, ``--ray-address auto`` or
``ray://head:10001`` on a cluster), with ``num_cpus`` per task, Ray's retries
for lost workers, results streamed back as tasks finish and every task
cancelled on Ctrl-C.

The engine is found through the entry-point group ``smoke.batch_engines``
(``smoke_ray._engine:RayEngine``); importing this package imports no Ray.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._engine import RayEngine

__all__ = ["RayEngine"]


def __getattr__(name: str) -> Any:
    if name == "RayEngine":
        from ._engine import RayEngine

        return RayEngine
    raise AttributeError(name)
