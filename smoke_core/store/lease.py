"""One run per session at a time, across processes and machines.

Two runs appending to one session interleave its transcript (user, user;
assistant, assistant; results out of order) — an order providers reject.
Before a run on a session loads or writes anything, it takes the session's
*lease* in the store (:class:`~smoke_core.store.protocol.LeasingStore`), renews it
while it runs (every third of ``ttl``) and gives it up when it ends. A second
run waits up to ``wait`` seconds for the lease and otherwise fails with
``session_busy`` — before it has written anything. A holder that died frees
the lease when it expires, or at once when it was a process of this host.

Stores without leases (a third-party store) run without this protection.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from typing import Any

from ..base.errors import AgentErrorInfo
from .protocol import DEFAULT_LEASE_TTL, DEFAULT_LEASE_WAIT, Lease, LeaseHolder, LeasingStore

log = logging.getLogger("smoke.store")


class SessionBusy(Exception):
    """The session is leased to another run; ``info`` is the ``session_busy`` error."""

    def __init__(self, info: AgentErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info


async def call_store(store: Any, method: str, *args: Any) -> Any:
    """``store.<method>(*args)``, through the store's ``a<method>`` coroutine when
    it has one (a networked store then does not hold up the event loop)."""
    async_method = getattr(store, "a" + method, None)
    if async_method is not None:
        return await async_method(*args)
    return getattr(store, method)(*args)


def busy_error(session_id: str, lease: Lease, waited: float) -> AgentErrorInfo:
    def clock(t: float) -> str:
        return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%H:%M:%S UTC")

    left = max(0.0, lease.expires_at - time.time())
    waited_text = f"waited {waited:.0f} s; " if waited >= 1 else ""
    return AgentErrorInfo.from_code(
        "session_busy",
        f"session {session_id!r} is in use by another run ({lease.holder.describe()}, since {clock(lease.since)}; "
        f"{waited_text}its lease ends in {left:.0f} s unless that run renews it). A session takes one run at a "
        f"time, so this run did not start and wrote nothing.",
        details={"session_id": session_id, "holder_host": lease.holder.host, "holder_pid": lease.holder.pid,
                 "since": lease.since, "expires_at": lease.expires_at},
    )


class SessionLease:
    """A lease held by this run; :meth:`release` gives it up (safe to call twice)."""

    def __init__(self, store: Any, session_id: str, holder: LeaseHolder, ttl: float,
                 on_lost: Callable[[AgentErrorInfo], None] | None) -> None:
        self.store = store
        self.session_id = session_id
        self.holder = holder
        self.ttl = ttl
        self._on_lost = on_lost
        self._renewer: asyncio.Task[None] | None = None

    @classmethod
    async def take(
        cls,
        store: Any,
        session_id: str | None,
        *,
        wait: float | None = None,
        ttl: float | None = None,
        on_lost: Callable[[AgentErrorInfo], None] | None = None,
    ) -> SessionLease | None:
        """Take ``session_id``'s lease, waiting up to ``wait`` seconds (default:
        the store's ``lease_wait``). None when there is nothing to lease (no
        session, or a store without leases). Raises :class:`SessionBusy`.
        ``on_lost`` is called if a renewal finds the lease taken by another
        run (this process stalled past the expiry)."""
        if session_id is None or not isinstance(store, LeasingStore):
            return None
        ttl = float(ttl if ttl is not None else getattr(store, "lease_ttl", DEFAULT_LEASE_TTL))
        wait = float(wait if wait is not None else getattr(store, "lease_wait", DEFAULT_LEASE_WAIT))
        holder = LeaseHolder.for_this_process()
        loop = asyncio.get_running_loop()
        started = loop.time()
        pause = 0.05
        while True:
            lease: Lease = await call_store(store, "acquire_lease", session_id, holder, ttl)
            if lease.acquired:
                taken = cls(store, session_id, holder, ttl, on_lost)
                taken._renewer = asyncio.ensure_future(taken._renew())
                return taken
            waited = loop.time() - started
            if waited >= wait:
                raise SessionBusy(busy_error(session_id, lease, waited))
            # no cross-process notification exists for "the lease is free": poll, backing off
            until_expiry = max(0.01, lease.expires_at - time.time())
            await asyncio.sleep(min(pause, wait - waited, until_expiry))
            pause = min(pause * 2, 1.0)

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                held = await call_store(self.store, "renew_lease", self.session_id, self.holder, self.ttl)
            except Exception as exc:  # the store is unreachable for now: try again at the next tick
                log.warning("smoke: could not renew the lease of session %r: %s", self.session_id, exc)
                continue
            if not held:
                info = AgentErrorInfo.from_code(
                    "session_busy",
                    f"this run lost the lease of session {self.session_id!r} (it was not renewed within "
                    f"{self.ttl:.0f} s and another run took it); the run stops so that the two do not interleave",
                    severity="warning",
                )
                if self._on_lost is not None:
                    self._on_lost(info)
                return

    async def release(self) -> None:
        renewer, self._renewer = self._renewer, None
        if renewer is None:
            return
        renewer.cancel()
        try:
            await renewer
        except asyncio.CancelledError:
            pass
        try:
            await call_store(self.store, "release_lease", self.session_id, self.holder)
        except Exception as exc:  # it expires by itself
            log.warning("smoke: could not release the lease of session %r (it expires in %.0f s): %s",
                        self.session_id, self.ttl, exc)
