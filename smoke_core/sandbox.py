"""The OS sandbox for commands the agent runs (DESIGN §9, docs/sandbox.md).

:class:`SandboxSettings` is the ``sandbox:`` settings key (settable only by
trusted layers). :class:`SandboxPolicy` is what one command may touch, built
from those settings and the workspace. The backend is bubblewrap (``bwrap``):

- the root filesystem read-only, the workspace (and ``allow_write``)
  read-write at the same paths, Smoke's own files in the workspace
  (``.smoke``, ``.git/hooks``, ``.git/config``, ...) read-only;
- a private ``/tmp``, a fresh ``/dev`` (with its own ``/dev/shm``) and
  ``/proc`` in a new PID namespace (the sandboxed tree dies with its leader,
  other processes are invisible), new IPC/UTS/cgroup namespaces, a new
  session (no terminal to inject keystrokes into), no capabilities and no
  nested user namespaces;
- no network (a private loopback only) unless ``network`` is true; with the
  network off, the service sockets under ``/run`` are hidden too;
- secrets masked (empty read-only folder or ``/dev/null``): ``~/.ssh``,
  ``~/.aws``, ... and ``deny_read``;
- an environment built from an allow-list; provider keys never enter it
  unless named in ``env``.

Any plugin that starts processes uses the same four calls::

    policy = SandboxPolicy.from_settings(options.sandbox, workspace)
    launch = prepare(argv, policy, extra_env={...})   # honours mode auto/required/off
    proc = await asyncio.create_subprocess_exec(*launch.argv, env=launch.env, cwd=..., start_new_session=True)
    # or: proc, launch = await spawn(argv, policy, cwd=..., stdout=PIPE)

:func:`wrap` and :func:`sandbox_env` are the lower-level pieces; :func:`status`
is what ``smoke doctor`` prints.

Why this module is long: the bubblewrap policy is one security boundary
(what is mounted, masked, shared and kept out of the environment), and it is
reviewed as one piece: the probe, the policy and the argv builder stay
together.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .secrets import child_env

if TYPE_CHECKING:
    import asyncio

SandboxMode = Literal["auto", "required", "off"]

#: The package that provides ``bwrap`` on Debian, Ubuntu, Fedora, Arch, Alpine.
PACKAGE = "bubblewrap"
INSTALL_HINT = (
    "install the package `bubblewrap` (Debian/Ubuntu: `sudo apt-get install bubblewrap`, "
    "Fedora: `sudo dnf install bubblewrap`, Arch: `sudo pacman -S bubblewrap`)"
)


class SandboxSettings(BaseModel):
    """``sandbox:`` in settings and ``create_agent(sandbox=...)``.

    ``mode``: ``auto`` (bubblewrap when present, else unsandboxed with a
    warning), ``required`` (refuse to run commands without it), ``off``.
    ``network``: allow network inside the sandbox. ``deny_read``: extra
    folders masked inside the sandbox (besides ``~/.ssh`` and the like).
    ``allow_write``: extra writable paths besides the workspace. ``env``:
    names of extra environment variables passed in (provider keys only when
    named here). ``mcp``: sandbox MCP stdio servers by default.
    """

    model_config = ConfigDict(extra="forbid")

    mode: SandboxMode = "auto"
    network: bool = False
    deny_read: list[str] = Field(default_factory=list)
    allow_write: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    mcp: bool = False


# ---------------------------------------------------------------- what is hidden, what is passed in

#: Under every home folder (``$HOME`` and the account's own): credentials and
#: Smoke's own settings. Masked whether or not the workspace contains them.
HOME_SECRETS: tuple[str, ...] = (
    ".ssh", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc", ".git-credentials",
    ".config/smoke", ".gnupg",
    # tokens other tools keep in well-known places
    ".pgpass", ".pypirc", ".npmrc", ".config/gh", ".cargo/credentials", ".cargo/credentials.toml",
    ".vault-token", ".password-store", ".local/share/keyrings",
    # browser profiles (cookies, saved sessions)
    ".mozilla", ".config/google-chrome", ".config/chromium",
)
#: Outside homes: readable only by root, but Smoke may run as root.
SYSTEM_SECRETS: tuple[str, ...] = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh/ssh_host_*key")
#: Sockets that hand out more than a command should have, even with the network on.
PRIVILEGED_SOCKETS: tuple[str, ...] = (
    "/run/user", "/run/docker.sock", "/var/run/docker.sock", "/run/docker", "/run/containerd",
    "/run/podman", "/run/snapd.socket", "/run/snapd-snap.socket",
)
#: Inside the workspace but read-only in the sandbox: what Smoke and git run
#: or trust later, outside the sandbox (a command could otherwise plant a git
#: hook or fsmonitor command, or a config that turns the sandbox off for the
#: next run). Whole folders: a read-only ``.git/hooks`` alone is bypassed by
#: renaming ``.git``; a mount point cannot be renamed. Naming one of these in
#: ``allow_write`` makes it writable again.
PROTECTED_IN_WORKSPACE: tuple[str, ...] = (".git", ".smoke", ".mcp.json", ".claude")

#: Variables passed into the sandbox as they are (plus ``LC_*`` and ``settings.env``).
SAFE_ENV: frozenset[str] = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "PWD", "COLORTERM",
        "TMPDIR", "EDITOR", "VISUAL",
        # toolchains
        "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_ROOT", "PYENV_VERSION", "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "JAVA_HOME", "GOPATH", "GOROOT",
        "GOFLAGS", "CARGO_HOME", "RUSTUP_HOME", "NVM_DIR", "NODE_PATH", "NODE_OPTIONS", "GEM_HOME", "GEM_PATH",
        "PKG_CONFIG_PATH", "LD_LIBRARY_PATH", "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "MAKEFLAGS",
        # certificates
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE",
        # what Smoke sets for every command
        "CI", "NO_COLOR", "PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT",
    }
)
#: Passed only when the network is on (a proxy URL may carry a password, and is useless offline).
NETWORK_ENV: frozenset[str] = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy"}
)


class SandboxUnavailable(RuntimeError):
    """``mode: required`` and bubblewrap is missing or does not work here."""


# ---------------------------------------------------------------- the policy


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """What a sandboxed command may touch. Paths are absolute and resolved;
    ``read_only`` and ``masked`` hold only paths that exist (bubblewrap
    cannot mount over a missing one).

    ``notes`` says what could not be applied as configured (an
    ``allow_write`` or ``deny_read`` path that does not exist), for the
    caller to show.
    """

    workspace: Path
    mode: SandboxMode = "auto"
    network: bool = False
    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()
    #: kept visible, read-only, although under a folder the sandbox empties
    #: (``/tmp``; ``/run`` with the network off): the running Python's
    #: environment and the ``PATH`` folders (a virtualenv in /tmp, NixOS's /run/current-system)
    visible: tuple[Path, ...] = ()
    env_names: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @classmethod
    def from_settings(
        cls,
        settings: SandboxSettings | Mapping[str, Any] | None,
        workspace: str | os.PathLike[str],
        *,
        environ: Mapping[str, str] | None = None,
    ) -> SandboxPolicy:
        """The policy for commands in ``workspace`` under ``settings``
        (``None`` = the defaults). ``environ`` (default ``os.environ``) gives
        ``HOME`` for ``~`` and for the home secrets."""
        if settings is None:
            settings = SandboxSettings()
        elif not isinstance(settings, SandboxSettings):
            settings = SandboxSettings.model_validate(dict(settings))
        env = os.environ if environ is None else environ
        ws = Path(workspace).resolve()
        homes = _homes(env)
        notes: list[str] = []

        def expand(raw: str) -> Path:
            if raw == "~" or raw.startswith("~/"):
                return Path(homes[0] if homes else "/") / raw[2:]
            path = Path(raw)
            return path if path.is_absolute() else ws / path

        writable: list[Path] = [ws]
        for raw in settings.allow_write:
            path = expand(raw)
            if path.exists():
                writable.append(path.resolve())
            else:
                notes.append(f"sandbox.allow_write: {raw} ({path}) does not exist, so it was not made writable")
        read_only = [
            p.resolve() for p in (ws / rel for rel in PROTECTED_IN_WORKSPACE)
            if os.path.lexists(p) and p.exists() and p.resolve() not in writable[1:]
        ]
        masked: list[Path] = []
        for home in homes:
            masked += [home / rel for rel in HOME_SECRETS]
        for pattern in SYSTEM_SECRETS:
            masked += [Path(p) for p in _glob(pattern)]
        for raw in settings.deny_read:
            path = expand(raw)
            if not path.exists():
                notes.append(f"sandbox.deny_read: {raw} ({path}) does not exist, so there was nothing to hide")
            masked.append(path)
        if settings.network:
            masked += [Path(p) for p in PRIVILEGED_SOCKETS]
        existing = []
        for path in masked:
            if os.path.lexists(path) and path.exists():
                real = path.resolve()
                if real not in existing and real not in writable:
                    existing.append(real)
        return cls(
            workspace=ws,
            mode=settings.mode,
            network=settings.network,
            visible=_visible(env, network=settings.network),
            writable=tuple(dict.fromkeys(writable)),
            read_only=tuple(dict.fromkeys(read_only)),
            masked=tuple(existing),
            env_names=tuple(settings.env),
            notes=tuple(notes),
        )

    def with_visible(self, *paths: str | os.PathLike[str]) -> SandboxPolicy:
        """This policy, with the folders of ``paths`` kept visible (read-only)
        although they lie under a folder the sandbox empties, such as ``/tmp``.

        For a program its launcher names: a stdio MCP server's script in
        ``/tmp/x/server.py`` keeps ``/tmp/x`` (its sibling modules too), never
        ``/tmp`` itself (then only the file). Paths that do not exist, or are
        visible anyway, are left out."""
        hidden = [Path("/tmp")] if self.network else [Path("/tmp"), Path("/run"), Path("/var/run")]
        out = list(self.visible)
        for raw in paths:
            if not raw or not os.path.isabs(raw) or not os.path.exists(raw):
                continue
            path = Path(raw).resolve()
            root = next((r for r in hidden if r in path.parents), None)
            if root is None:
                continue
            keep = path if path.is_dir() else path.parent
            if keep == root:
                keep = path
            if keep not in out and not any(o == keep or o in keep.parents for o in out):
                out.append(keep)
        return replace(self, visible=tuple(out))


def _visible(env: Mapping[str, str], *, network: bool) -> tuple[Path, ...]:
    """Folders the command needs that lie under a folder the sandbox empties."""
    import sys

    hidden = [Path("/tmp")] if network else [Path("/tmp"), Path("/run"), Path("/var/run")]
    candidates = [sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), env.get("VIRTUAL_ENV") or ""]
    candidates += (env.get("PATH") or "").split(os.pathsep)
    out: list[Path] = []
    for raw in candidates:
        if not raw or not os.path.isabs(raw):
            continue
        path = Path(os.path.normpath(raw))
        root = next((r for r in hidden if r in path.parents), None)
        if root is None or not path.exists():
            continue
        if root == Path("/tmp"):
            keep = next((d for d in (path, *path.parents) if (d / "pyvenv.cfg").is_file() and root in d.parents),
                        path.parent if path.name == "bin" else path)
        else:
            keep = root / path.relative_to(root).parts[0]  # /run/current-system, /run/wrappers
        if keep not in out and not any(o in keep.parents for o in out):
            out.append(keep)
    return tuple(out)


def _homes(env: Mapping[str, str]) -> list[Path]:
    homes: list[Path] = []
    if env.get("HOME"):
        homes.append(Path(env["HOME"]))
    try:
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except KeyError:
        pass
    out: list[Path] = []
    for home in homes:
        try:
            real = home.resolve()
        except OSError:
            continue
        if real != Path("/") and real not in out:
            out.append(real)
    return out


def _glob(pattern: str) -> list[str]:
    if "*" not in pattern:
        return [pattern]
    import glob

    return sorted(glob.glob(pattern))


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
    from ._cache import cache_dir

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
    from ._cache import write_cache_file

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
            argv = _bwrap_argv(bwrap, ["true"], policy, cwd=None, disable_userns=disable_userns)
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


def wrap(argv: list[str], policy: SandboxPolicy, *, cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """``argv`` run inside the sandbox ``policy`` describes: the ``bwrap``
    command line to execute instead. ``cwd`` (default the workspace) is the
    folder the command starts in, at the same path inside.

    Raises :class:`SandboxUnavailable` when bubblewrap is missing or broken.
    """
    st = status()
    if not st.works or st.bwrap is None:
        raise SandboxUnavailable(st.reason())
    return _bwrap_argv(st.bwrap, argv, policy, cwd=cwd, disable_userns=st.disable_userns)


def _bwrap_argv(
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


# ---------------------------------------------------------------- starting processes


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


# ---------------------------------------------------------------- explaining a refusal

_EROFS_MARKERS = ("Read-only file system", "EROFS")
_EACCES_MARKERS = ("Permission denied", "EACCES")
_QUOTED = re.compile(r"'([^'\n]*/[^'\n]*)'|\"([^\"\n]*/[^\"\n]*)\"|\u2018([^\u2019\n]*/[^\u2019\n]*)\u2019|(?<![\w.])(/[^\s:'\"]+)")
_NETWORK_MARKERS = (
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "getaddrinfo failed",
    "nodename nor servname provided",
    "No address associated with hostname",
    "Failed to establish a new connection",
    "Could not resolve hostname",
    "ENETUNREACH",
    "EAI_AGAIN",
    "ENOTFOUND",
)
_REFUSED = ("Connection refused", "ECONNREFUSED")


def _paths_on_lines(output: str, markers: tuple[str, ...]) -> tuple[bool, list[str]]:
    """Whether a marker appears, and the paths named on the lines that carry it."""
    seen = False
    paths: list[str] = []
    for line in output.splitlines():
        if any(m in line for m in markers):
            seen = True
            for groups in _QUOTED.findall(line):
                path = next((g for g in groups if g), None)
                if path and path not in paths:
                    paths.append(path)
    return seen, paths


def _inside(path: str, roots: Iterable[Path]) -> Path | None:
    for root in roots:
        if path == str(root) or path.startswith(f"{root}/"):
            return root
    return None


def _protected(path: str, policy: SandboxPolicy) -> Path | None:
    """The protected folder ``path`` (absolute, or relative to the workspace) lies in."""
    hit = _inside(path, policy.read_only)
    if hit is not None:
        return hit
    for ro in policy.read_only:
        try:
            rel = str(ro.relative_to(policy.workspace))
        except ValueError:
            continue
        clean = path[2:] if path.startswith("./") else path
        if clean == rel or clean.startswith(f"{rel}/"):
            return ro
    return None


def explain_refusal(output: str, policy: SandboxPolicy, *, exit_code: int | None) -> list[dict[str, Any]]:
    """What in a failed sandboxed command's ``output`` shows the sandbox
    stopped it: a list of ``{"kind": "write" | "protected" | "secret" |
    "network", "path", "message"}``, each message saying how the person can
    allow it. Empty for a successful command and for errors the sandbox does
    not cause: only its own traces count (``Read-only file system``, a
    ``Permission denied`` on a masked path, name resolution or unreachable
    network while the network is off)."""
    if exit_code == 0:
        return []
    found: list[dict[str, Any]] = []
    erofs, paths = _paths_on_lines(output, _EROFS_MARKERS)
    if erofs:
        path = paths[0] if paths else None
        protected = next((r for r in (_protected(p, policy) for p in paths) if r), None)
        if protected is None:
            protected = next((ro for ro in policy.read_only if f"{ro}/" in output), None)
        if protected is not None:
            name = protected.name
            found.append({
                "kind": "protected",
                "path": path,
                "message": (
                    f"the sandbox stopped a write to {name} ({path or protected}): inside the sandbox the "
                    f"workspace's {name} is read-only, so that a command cannot plant hooks or settings that Smoke "
                    "or git later run outside it"
                    + (" (stage and commit with the git tools, git_add and git_commit)" if name == ".git" else "")
                    + f". The user can make it writable by adding `{name}` to `sandbox.allow_write` in their "
                    "trusted settings"
                ),
            })
        else:
            where = f" ({path})" if path else ""
            found.append({
                "kind": "write",
                "path": path,
                "message": (
                    f"the sandbox stopped a write outside the workspace{where}: everything but the workspace is "
                    "read-only for commands. If the command really needs to write there, the user can add the "
                    "folder to `sandbox.allow_write` in their trusted settings (~/.config/smoke/config.yaml or "
                    "create_agent(sandbox=...)); otherwise write inside the workspace (or /tmp, which is private "
                    "and discarded)"
                ),
            })
    _, denied = _paths_on_lines(output, _EACCES_MARKERS)
    secret = next((p for p in denied if _inside(p, policy.masked)), None)
    if secret:
        found.append({
            "kind": "secret",
            "path": secret,
            "message": (
                f"{secret} is hidden by the sandbox (credentials and Smoke's own settings are masked: folders "
                "look empty, files are empty and read-only). Do not try to reach it another way; if the task "
                "needs it, ask the user"
            ),
        })
    if not policy.network:
        hit = next((x for x in _NETWORK_MARKERS if x in output), None)
        if hit is None and any(x in output for x in _REFUSED):
            hit = "Connection refused"
        if hit:
            extra = (
                " (servers on this machine's 127.0.0.1 are not reachable either: the sandbox has its own loopback)"
                if hit == "Connection refused"
                else ""
            )
            found.append({
                "kind": "network",
                "path": None,
                "message": (
                    f"the sandbox has no network ('{hit}'){extra}. The user can allow it with "
                    "`sandbox.network: true` in their trusted settings (~/.config/smoke/config.yaml or "
                    "create_agent(sandbox={'network': True})); do not retry the same command until they do"
                ),
            })
    return found


__all__ = [
    "HOME_SECRETS",
    "INSTALL_HINT",
    "PACKAGE",
    "PROTECTED_IN_WORKSPACE",
    "SAFE_ENV",
    "Launch",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxSettings",
    "SandboxStatus",
    "SandboxUnavailable",
    "available",
    "explain_refusal",
    "find_bwrap",
    "prepare",
    "sandbox_env",
    "spawn",
    "status",
    "user_namespace_settings",
    "wrap",
]
