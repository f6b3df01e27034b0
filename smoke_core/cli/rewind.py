"""``smoke rewind``: list a session's checkpoints, diff one against now,
put the files back (and the conversation), undo a rewind (``/rewind`` and
``/undo`` in a chat are core's slash commands, :mod:`smoke_core.run.slash`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

EXIT_USAGE = 2


def _fail(message: str) -> NoReturn:
    click.echo(f"smoke rewind: {message}", err=True)
    sys.exit(EXIT_USAGE)


def checkpoint_store(ws: Path) -> Any:
    from ..base.errors import ConfigError
    from ..policy.settings.layers import resolve_settings
    from ..run.checkpoints import checkpoint_store_for

    try:
        values = resolve_settings(ws, trust=None).values
    except ConfigError:
        values = {}
    return checkpoint_store_for(ws, values)


def rewind_impl(workspace: str, session: str | None, checkpoint: int | None, diff: bool, conversation: bool,
                undo: bool, as_json: bool) -> None:
    from ..run.checkpoints import CheckpointError, describe, rewind
    from .session_pick import last_session
    from .sessions import open_cli_store

    ws = Path(workspace).resolve()
    store = open_cli_store(ws)
    try:
        session_id = session or last_session(ws, store)
        if session_id is None:
            _fail("no session in this folder yet, so no checkpoints; --session ID names one")
        assert session_id is not None
        cps = checkpoint_store(ws)
        found = cps.checkpoints(session_id)
        if checkpoint is None and not undo:
            if as_json:
                click.echo(json.dumps([{"number": c.number, "created_at": c.created_at, "reason": c.reason,
                                        "label": c.label, "messages": c.messages} for c in found]))
                return
            if not found:
                click.echo(f"no checkpoints in session {session_id}")
                return
            click.echo(f"checkpoints of session {session_id} (oldest first; `smoke rewind N` restores one):")
            for cp in found:
                click.echo(describe(cp))
            return
        try:
            if undo:
                rewinds = [c for c in found if c.reason == "rewind"]
                if not rewinds:
                    _fail(f"nothing to undo: no rewind in session {session_id}")
                target = rewinds[-1]
            else:
                assert checkpoint is not None
                target = cps.find(session_id, checkpoint)
            if diff:
                click.echo(cps.diff(target) or "no difference: the files are as they were then")
                return
            before, new_session = rewind(cps, store, target, conversation=conversation)
        except CheckpointError as exc:
            _fail(str(exc))
    finally:
        store.close()
    click.echo(f"files restored to checkpoint {target.number} ({describe(target).strip()})")
    click.echo(f"the state before is checkpoint {before.number}: `smoke rewind --undo` puts it back")
    if new_session is not None:
        click.echo(f"conversation rewound: continue in session {new_session} "
                   f"(smoke chat --session {new_session}); session {session_id} is kept")
