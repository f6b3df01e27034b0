"""Many runs on one event loop take turns with timers and I/O (_fair): a
timer that is due gets to run before every run has done its work, and a
run alone never yields. (How long the loop stalls is measured by
bench/bench_concurrency.py, not here.)"""

from __future__ import annotations

import asyncio

from smoke_core import create_agent
from smoke_core.run import fair as _fair
from smoke_core.testing import ScriptedProvider


def agents(n: int) -> list:
    return [create_agent(".", provider=ScriptedProvider(["done"], copy_requests=False), autoload_plugins=False,
                         setting_sources=()) for _ in range(n)]


async def test_a_due_timer_runs_before_all_runs_have_started(monkeypatch):
    monkeypatch.setattr(_fair, "BUDGET", 0.0)
    monkeypatch.setattr(_fair, "BEAT", 0.0005)
    runs = agents(100)
    started: list[int] = []
    for a in runs:
        a.on("run.started", lambda e: started.append(1))
    seen_at: list[int] = []
    loop = asyncio.get_running_loop()
    loop.call_later(0.0005, lambda: seen_at.append(len(started)))
    results = await asyncio.gather(*(a.run("go") for a in runs))
    assert all(r.status == "completed" for r in results)
    assert seen_at and seen_at[0] < 100  # the timer did not wait for every run


async def test_a_run_alone_within_the_budget_never_yields(monkeypatch):
    woken: list[int] = []
    beat = _fair._Pacer.beat
    monkeypatch.setattr(_fair._Pacer, "beat", lambda self: (woken.append(len(self.waiting)), beat(self)))
    (agent,) = agents(1)
    monkeypatch.setattr(_fair, "BUDGET", 60.0)
    assert (await agent.run("go")).status == "completed"
    assert sum(woken) == 0  # no run waited for a heartbeat
    monkeypatch.setattr(_fair, "BUDGET", 0.0)
    monkeypatch.setattr(_fair, "BEAT", 0.0)
    runs = agents(5)
    results = await asyncio.gather(*(a.run("go") for a in runs))
    assert sum(woken) > 0  # with no budget at all, runs do yield ...
    assert all(r.status == "completed" for r in results)  # ... and still all finish


async def test_a_pacer_left_from_another_loop_is_replaced():
    def other_loop() -> None:
        async def arm() -> None:
            _fair.starved()

        asyncio.run(arm())

    await asyncio.to_thread(other_loop)
    assert _fair._cached is not None and _fair._cached.loop is not asyncio.get_running_loop()
    await _fair.take_turn()
    assert _fair._cached.loop is asyncio.get_running_loop()
    assert _fair.starved() is False
