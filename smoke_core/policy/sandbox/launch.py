"""Starting a command under a policy: :func:`prepare` (argv and environment,
honouring ``mode`` auto / required / off), :func:`spawn` and :func:`wrap`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..secrets import child_env

if TYPE_CHECKING:
    import asyncio
from .bwrap import bwrap_argv, sandbox_env
from .probe import status
from .settings import INSTALL_HINT, SandboxPolicy, SandboxUnavailable

# ---------------------------------------------------------------- starting processes


def wrap(argv: list[str], policy: SandboxPolicy, *, cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """``argv`` run inside the sandbox ``policy`` describes: the ``bwrap``
    command line to execute instead. ``cwd`` (default the workspace) is the
    folder the command starts in, at the same path inside.

    Raises :class:`SandboxUnavailable` when bubblewrap is missing or broken.
    """
    st = status()
    if not st.works or st.bwrap is None:
        raise SandboxUnavailable(st.reason())
    return bwrap_argv(st.bwrap, argv, policy, cwd=cwd, disable_userns=st.disable_userns)




@dataclass(frozen=True, slots=True)
class Launch:
    """How to start a command under a policy: ``argv`` and ``env`` to use,
    whether it is ``sandboxed``, and when ``auto`` fell back to running
    without the sandbox, ``fallback`` (why, for one warning to people)."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool
    fallback: str | None = None


def prepare(
    argv: list[str],
    policy: SandboxPolicy,
    *,
    cwd: str | os.PathLike[str] | None = None,
    base_env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> Launch:
    """Decide how ``argv`` runs under ``policy.mode``:

    - ``off``: as it is, with :func:`smoke_core.secrets.child_env` (no provider keys);
    - ``auto``: sandboxed when :func:`available`, else like ``off`` with ``fallback`` set;
    - ``required``: sandboxed, or :class:`SandboxUnavailable` naming the package to install.

    ``extra_env`` is added last in every case (``CI=true``, a tool's own variables).
    """
    if policy.mode != "off":
        st = status()
        if st.works:
            return Launch(
                argv=wrap(argv, policy, cwd=cwd),
                env=sandbox_env(policy, base_env, extra=extra_env),
                sandboxed=True,
            )
        if policy.mode == "required":
            raise SandboxUnavailable(
                f"sandbox.mode is 'required' and the sandbox cannot run: {st.reason()}"
                + ("" if st.bwrap is None else f"; {INSTALL_HINT}")
                + ". Or set sandbox.mode to 'auto' in trusted settings to run commands without it."
            )
        fallback = st.reason()
    else:
        fallback = None
    env = child_env(base_env, keep=policy.env_names, extra=extra_env)
    return Launch(argv=list(argv), env=env, sandboxed=False, fallback=fallback)


async def spawn(
    argv: list[str],
    policy: SandboxPolicy,
    *,
    cwd: str | os.PathLike[str] | None = None,
    base_env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> tuple[asyncio.subprocess.Process, Launch]:
    """:func:`prepare` then ``asyncio.create_subprocess_exec`` in a new
    session (``start_new_session=True`` unless given), in ``cwd`` (default
    the workspace). ``kwargs`` go to ``create_subprocess_exec`` (``stdin``,
    ``stdout``, ``stderr``, ``limit``...). For an MCP stdio server::

        proc, launch = await spawn([cmd, *args], policy, stdin=PIPE, stdout=PIPE, stderr=PIPE)
    """
    import asyncio

    where = Path(cwd) if cwd is not None else policy.workspace
    launch = prepare(argv, policy, cwd=where, base_env=base_env, extra_env=extra_env)
    kwargs.setdefault("start_new_session", True)
    proc = await asyncio.create_subprocess_exec(*launch.argv, cwd=str(where), env=launch.env, **kwargs)
    return proc, launch
