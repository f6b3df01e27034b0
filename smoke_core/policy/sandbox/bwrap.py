"""The ``bwrap`` command line for a policy (:func:`bwrap_argv`) and the
environment a sandboxed command gets (:func:`sandbox_env`).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from .settings import NETWORK_ENV, SAFE_ENV, SandboxPolicy


def bwrap_argv(
    bwrap: str, argv: list[str], policy: SandboxPolicy, *, cwd: str | os.PathLike[str] | None,
    disable_userns: bool,
) -> list[str]:
    out = [bwrap]
    if disable_userns:
        out += ["--unshare-user", "--disable-userns"]
    out += [
        "--cap-drop", "ALL",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
    ]
    if not policy.network:
        # no network: a private loopback, and no service sockets either
        out += ["--unshare-net", "--tmpfs", "/run", "--dir", "/run/lock", "--symlink", "/dev/shm", "/run/shm"]
        if os.path.isdir("/var/run") and not os.path.islink("/var/run"):
            out += ["--tmpfs", "/var/run"]
    for path in policy.visible:
        out += ["--ro-bind", str(path), str(path)]
    for path in policy.writable:
        out += ["--bind", str(path), str(path)]
    for path in policy.read_only:
        out += ["--ro-bind", str(path), str(path)]
    bound = (*policy.visible, *policy.writable, *policy.read_only)
    hidden = ("/tmp",) if policy.network else ("/tmp", "/run", "/var/run")
    for path in policy.masked:
        if _under(path, hidden) and not _under(path, bound):
            continue  # already under an empty tmpfs
        if path.is_dir():
            out += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            # not /dev/null: bind mounts here are nodev, so it would read as "Permission denied"
            out += ["--ro-bind", _empty_file(), str(path)]
    out += ["--chdir", str(Path(cwd).resolve()) if cwd is not None else str(policy.workspace), "--", *argv]
    return out


_empty: str | None = None
_empty_lock = threading.Lock()


def _empty_file() -> str:
    """A read-only empty file of this process (mounted over secret files)."""
    global _empty
    with _empty_lock:
        if _empty is None or not os.path.isfile(_empty) or os.path.getsize(_empty):
            fd, name = tempfile.mkstemp(prefix="smoke-sandbox-empty-")
            os.close(fd)
            os.chmod(name, 0o444)
            import atexit

            atexit.register(_remove, name)
            _empty = name
        return _empty


def _remove(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def _under(path: Path, roots: Iterable[str | Path]) -> bool:
    return any(path == Path(r) or Path(r) in path.parents for r in roots)


def sandbox_env(
    policy: SandboxPolicy, base: Mapping[str, str] | None = None, *, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a sandboxed command: the allow-listed variables of
    ``base`` (default ``os.environ``) — :data:`SAFE_ENV`, ``LC_*``, the
    proxies when the network is on, and the names in ``policy.env_names``
    (the only way a provider key gets in) — then ``extra`` as given."""
    env = os.environ if base is None else base
    named = set(policy.env_names)
    out: dict[str, str] = {}
    for name, value in env.items():
        if name in SAFE_ENV or name.startswith("LC_") or name in named or (policy.network and name in NETWORK_ENV):
            out[name] = value
    if "TMPDIR" in out and "TMPDIR" not in named:
        out["TMPDIR"] = "/tmp"  # the private /tmp; the host's TMPDIR may be read-only inside
    if extra:
        out.update(extra)
    return out
