"""A real PostgreSQL server for tests and benchmarks, started from the
installed binaries (Debian's ``postgresql`` package: ``/usr/lib/postgresql/<v>/bin``)
in a temporary folder, on a free port of 127.0.0.1.

PostgreSQL refuses to run as root: when the tests run as root, the server
runs as the unprivileged user ``nobody`` (or ``SMOKE_PG_USER``), with its
folder owned by that user. Nothing outside the folder is touched; ``stop``
removes it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any


def _bindir() -> Path | None:
    override = os.environ.get("SMOKE_PG_BINDIR")
    if override:
        return Path(override)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _run_user() -> pwd.struct_passwd | None:
    """The user the server runs as: None = this user (not root)."""
    if os.geteuid() != 0:
        return None
    return pwd.getpwnam(os.environ.get("SMOKE_PG_USER", "nobody"))


def postgres_available() -> str | None:
    """Why a server cannot be started here (None when it can)."""
    bindir = _bindir()
    if bindir is None or not (bindir / "pg_ctl").exists():
        return "PostgreSQL is not installed (apt-get install postgresql; or set SMOKE_PG_BINDIR)"
    try:
        _run_user()
    except KeyError:
        return "running as root and there is no unprivileged user 'nobody' (set SMOKE_PG_USER) to run PostgreSQL"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """``start()``, ``url(db)``, ``create_database()``, ``restart()``, ``stop()``.
    ``fsync=False`` (the default, for tests) trades crash safety of the
    machine for speed; a clean restart loses nothing either way."""

    def __init__(self, folder: str | os.PathLike[str] | None = None, *, fsync: bool = False) -> None:
        self.bindir = _bindir()
        self.user = _run_user()
        # root's temporary folders are closed to other users: the server gets its own under /tmp
        self.root = Path(tempfile.mkdtemp(prefix="smoke-pg-", dir=None if self.user else folder))
        self.data = self.root / "data"
        self.sockets = self.root / "sockets"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.fsync = fsync
        self._dbs = 0
        self.running = False

    def _as_server_user(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "HOME": str(self.root),
               "TZ": "UTC"}
        extra: dict[str, Any] = {}
        if self.user is not None:
            extra = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, **extra, **kwargs)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(argv[:2])} failed ({proc.returncode}): {proc.stderr.strip()}\n{log}")
        return proc

    def start(self) -> None:
        if self.bindir is None:
            raise RuntimeError(postgres_available() or "PostgreSQL is not installed")
        self.sockets.mkdir()
        if self.user is not None:
            for path in (self.root, self.sockets):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        self._as_server_user([str(self.bindir / "initdb"), "-D", str(self.data), "-U", "smoke", "--auth=trust",
                              "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        self._pg_ctl("start")
        self.running = True

    def _pg_ctl(self, action: str, *extra: str) -> None:
        assert self.bindir is not None
        options = (f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 -c max_connections=200 "
                   f"-c fsync={'on' if self.fsync else 'off'}"
                   + ("" if self.fsync else " -c full_page_writes=off -c synchronous_commit=on"))
        self._as_server_user([str(self.bindir / "pg_ctl"), action, "-D", str(self.data), "-l", str(self.log),
                              "-w", "-t", "60", "-o", options, *extra])

    def restart(self) -> None:
        """Stop (fast: every session is disconnected) and start again on the same port."""
        self._pg_ctl("restart", "-m", "fast")

    def stop(self) -> None:
        if self.running:
            try:
                self._pg_ctl("stop", "-m", "immediate")
            finally:
                self.running = False
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://smoke@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new, empty database; returns its URL."""
        import psycopg

        self._dbs += 1
        name = f"test_{os.getpid()}_{self._dbs}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)
