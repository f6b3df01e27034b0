"""The ``sandbox:`` settings (:class:`SandboxSettings`) and what one command
may touch (:class:`SandboxPolicy`): the workspace writable, Smoke's and git's
control files read-only, home secrets masked, an environment allow-list.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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
