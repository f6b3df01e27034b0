"""Whether bubblewrap works on this machine (:func:`status`, what ``smoke
doctor`` prints): found, started once in a throw-away sandbox, and the
answer remembered in memory and on disk for a day (a failure never is).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bwrap import bwrap_argv
from .settings import INSTALL_HINT, SandboxPolicy

# ---------------------------------------------------------------- bubblewrap


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """What this machine offers (``smoke doctor``)."""

    bwrap: str | None
    version: str | None = None
    works: bool = False
    error: str | None = None
    #: whether ``--unshare-user --disable-userns`` (no nested user namespaces) is used
    disable_userns: bool = False
    user_namespaces: dict[str, Any] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return self.works

    def reason(self) -> str:
        """Why the sandbox is not available, in one sentence for people."""
        if self.works:
            return "bubblewrap works"
        if self.bwrap is None:
            return f"bubblewrap (bwrap) is not installed or not on PATH; {INSTALL_HINT}"
        return f"{self.bwrap} is installed but cannot create a sandbox here: {self.error}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "available": self.works, "bwrap": self.bwrap, "version": self.version, "error": self.error,
            "disable_userns": self.disable_userns, "user_namespaces": self.user_namespaces,
        }


_probes: dict[str, SandboxStatus] = {}
_probe_lock = threading.Lock()
PROBE_TIMEOUT_S = 10.0


def find_bwrap(path: str | None = None) -> str | None:
    """The ``bwrap`` binary on ``path`` (default ``$PATH``), or None."""
    return shutil.which("bwrap", path=path)


def status(*, fresh: bool = False) -> SandboxStatus:
    """Whether bubblewrap is here and actually creates a sandbox. The probe
    (``bwrap ... true`` with the real flags) runs once per process for each
    ``bwrap`` binary; ``$PATH`` is looked up on every call.

    A probe that *worked* is also remembered on disk for a day (see
    :func:`_remembered`), keyed by everything it depends on — the binary's
    path, size and change time, the kernel release, the user and the user
    namespace switches — so a new process (``smoke tools``, the first command
    of ``smoke run``) does not pay for a new network namespace, whose teardown
    sometimes takes the kernel ~50 ms. A failed probe is never remembered: a
    fix (installing bubblewrap, allowing user namespaces) shows at once.
    ``fresh=True`` (``smoke doctor``) always probes."""
    bwrap = find_bwrap()
    if bwrap is None:
        return SandboxStatus(bwrap=None, user_namespaces=user_namespace_settings())
    with _probe_lock:
        cached = None if fresh else _probes.get(bwrap)
        if cached is None:
            key = _probe_key(bwrap)
            cached = _remembered(key) if key is not None and not fresh else None
            if cached is None:
                cached = _probe(bwrap)
                if cached.works:
                    _remember(key, cached)
            _probes[bwrap] = cached
    return cached


#: how long a working probe is remembered on disk
PROBE_MEMORY_S = 24 * 3600


def _probe_file() -> Path:
    from ...base.cache import cache_dir

    return cache_dir() / "sandbox-probe.json"


def _probe_key(bwrap: str) -> str | None:
    import json

    try:
        st = os.stat(bwrap)
    except OSError:
        return None
    return json.dumps([os.path.realpath(bwrap), st.st_size, st.st_mtime_ns, st.st_ctime_ns, os.uname().release,
                       os.geteuid(), user_namespace_settings()], sort_keys=True)


def _remembered(key: str) -> SandboxStatus | None:
    """The working probe remembered for ``key`` when younger than a day. A
    forged file can only claim that bubblewrap works — commands then go
    through bwrap and fail if it does not —, never that commands may run
    unsandboxed."""
    import json
    import time

    try:
        data = json.loads(_probe_file().read_text(encoding="utf-8"))
        if data.get("key") != key or not 0 <= time.time() - float(data["at"]) < PROBE_MEMORY_S:
            return None
        st = data["status"]
        return SandboxStatus(bwrap=str(st["bwrap"]), version=st.get("version"), works=True,
                             disable_userns=bool(st.get("disable_userns")),
                             user_namespaces=dict(st.get("user_namespaces") or {}))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _remember(key: str | None, st: SandboxStatus) -> None:
    import json
    import time

    if key is None:
        return
    from ...base.cache import write_cache_file

    # a read-only home: no memory, a probe per process
    write_cache_file(_probe_file(), json.dumps({"key": key, "at": time.time(), "status": st.to_dict()}))


def available() -> bool:
    """True when commands can run sandboxed on this machine (cached probe)."""
    return status().works


def _probe(bwrap: str) -> SandboxStatus:
    version = None
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        version = out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    userns = user_namespace_settings()
    error = None
    with tempfile.TemporaryDirectory(prefix="smoke-sandbox-probe-") as tmp:
        policy = SandboxPolicy.from_settings(None, tmp, environ={})
        for disable_userns in (True, False):
            argv = bwrap_argv(bwrap, ["true"], policy, cwd=None, disable_userns=disable_userns)
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                      env={"PATH": os.environ.get("PATH", os.defpath)}, cwd=tmp)
            except (OSError, subprocess.SubprocessError) as exc:
                error = f"{type(exc).__name__}: {exc}"
                continue
            if proc.returncode == 0:
                return SandboxStatus(bwrap=bwrap, version=version, works=True, disable_userns=disable_userns,
                                     user_namespaces=userns)
            error = (proc.stderr.strip() or f"exit code {proc.returncode}").splitlines()[-1]
    return SandboxStatus(bwrap=bwrap, version=version, works=False, error=error, user_namespaces=userns)


def user_namespace_settings() -> dict[str, Any]:
    """The kernel switches that decide whether unprivileged user namespaces
    (what bubblewrap needs when not run as root) are allowed."""
    out: dict[str, Any] = {"running_as_root": os.geteuid() == 0}
    for name, path in (
        ("max_user_namespaces", "/proc/sys/user/max_user_namespaces"),
        ("unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone"),
        ("apparmor_restrict_unprivileged_userns", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
    ):
        try:
            out[name] = int(Path(path).read_text().strip())
        except (OSError, ValueError):
            out[name] = None
    out["allowed"] = (
        (out["max_user_namespaces"] is None or out["max_user_namespaces"] > 0)
        and out["unprivileged_userns_clone"] != 0
        and not out["apparmor_restrict_unprivileged_userns"]
    )
    return out
