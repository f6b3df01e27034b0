"""The pure-Python side: file walking with .gitignore rules, and glob patterns.

The walk mirrors ``rg --files --hidden --no-require-git --sort path`` with the
skip list as ``--glob '!name'`` overrides: hidden files are included,
symlinks are never followed, ``.gitignore`` files in the search folder and
below apply (deeper files win), plus the workspace root's ``.gitignore``
when a sub-folder is searched.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from smoke_core.plugin import looks_secret

#: Names never searched, at any depth (files or folders).
SKIP_NAMES: tuple[str, ...] = (".git", "node_modules", ".venv", "__pycache__", "dist", "build", ".smoke")
#: Files bigger than this are not searched (rg: --max-filesize).
MAX_FILE_BYTES = 20 * 1024 * 1024

#: ripgrep globs (case-insensitive) for the names ``smoke_core.plugin.looks_secret``
#: flags; a folder of such a name is skipped whole. A test keeps the two in step.
SECRET_NAME_GLOBS: tuple[str, ...] = (
    ".env", ".env.*", ".netrc", ".pgpass", ".npmrc", ".pypirc",
    *(f"id_{k}{pub}" for k in ("rsa", "dsa", "ecdsa", "ed25519") for pub in ("", ".pub")),
    "credentials", "credentials.json",
    *(f"{s}.{ext}" for s in ("secret", "secrets") for ext in ("yml", "yaml", "json", "toml")),
    *(f"*.{ext}" for ext in ("pem", "key", "p12", "pfx", "keystore", "jks")),
)
#: Folders that hold keys and cloud credentials (case-sensitive, as in looks_secret).
SECRET_DIR_GLOBS: tuple[str, ...] = (".ssh", ".aws", ".gnupg", ".kube")


#: A worker thread that walks or matches pauses 1 ms after this many seconds of work.
BREATHE_EVERY = 0.02
_last_pause = threading.local()


def breathe() -> None:
    """Give other threads (the event loop) a turn: sleep 1 ms once this
    thread has worked ``BREATHE_EVERY`` seconds since its last pause.
    A thread that keeps making short system calls (scandir, stat, read)
    takes the GIL back before a waiting thread wakes, and CPython's switch
    interval only forces a hand-over from a thread running bytecode; measured
    without this, the event loop waited up to 0.8 s during a Python-engine glob."""
    now = time.monotonic()
    last = getattr(_last_pause, "at", None)
    if last is None:
        _last_pause.at = now
    elif now - last >= BREATHE_EVERY:
        time.sleep(0.001)
        _last_pause.at = time.monotonic()


def secret_part(rel: str) -> str | None:
    """The first name in ``rel`` (a path below the search folder) that looks
    like it holds secrets, or None. Both engines skip such files and folders."""
    for part in rel.split("/"):
        if part and _secret_name(part):
            return part
    return None


@lru_cache(maxsize=8192)
def _secret_name(name: str) -> bool:
    return looks_secret(name)  # folder names repeat on every path below them


def display_name(raw: bytes) -> str:
    """A path as shown to the model (both engines use this)."""
    return raw.decode("utf-8", "replace")


class IgnoreLayer:
    """The rules of one ``.gitignore`` file, relative to its folder."""

    def __init__(self, base: str, lines: list[str]) -> None:
        import pathspec

        self.base = base  # folder relative to the search cwd, "" for the cwd itself
        self.spec: Any = pathspec.GitIgnoreSpec.from_lines(lines)

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a '!' rule; None: no rule matched."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1 :]
        target = rel + "/" if is_dir else rel
        result = self.spec.check_file(target)
        include: bool | None = result.include
        return include


def _read_ignore(folder: Path) -> list[str] | None:
    path = folder / ".gitignore"
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        return path.read_bytes().decode("utf-8", "replace").splitlines()
    except OSError:
        return None


def _ignored(layers: list[IgnoreLayer], rel: str, is_dir: bool) -> bool:
    for layer in reversed(layers):
        decision = layer.decide(rel, is_dir)
        if decision is not None:
            return decision
    return False


def walk_files(
    cwd: Path,
    start: str,
    *,
    cancelled: Callable[[], bool] = lambda: False,
    skip_secrets: bool = False,
) -> Iterator[str]:
    """Yield files under ``cwd/start`` (``start`` relative to ``cwd``, "" for
    cwd itself) in sorted depth-first order, as paths relative to ``cwd``.
    ``skip_secrets``: leave out files and folders below ``start`` whose name
    looks secret (``.env``, keys, ``.ssh``)."""
    layers: list[IgnoreLayer] = []
    if start:
        root_rules = _read_ignore(cwd)
        if root_rules:
            layers.append(IgnoreLayer("", root_rules))
    top = cwd / start if start else cwd
    if top.is_file():
        yield start
        return
    yield from _walk(cwd, top, start, layers, cancelled, skip_secrets)


def _walk(
    cwd: Path, folder: Path, rel: str, layers: list[IgnoreLayer], cancelled: Callable[[], bool],
    skip_secrets: bool,
) -> Iterator[str]:
    if cancelled():
        return
    breathe()
    rules = _read_ignore(folder)
    if rules:
        layers = [*layers, IgnoreLayer(rel, rules)]
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: os.fsencode(e.name))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name in SKIP_NAMES or (skip_secrets and _secret_name(name)):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        child = f"{rel}/{name}" if rel else name
        is_dir = stat.S_ISDIR(st.st_mode)
        if _ignored(layers, child, is_dir):
            continue
        if is_dir:
            yield from _walk(cwd, Path(entry.path), child, layers, cancelled, skip_secrets)
        elif stat.S_ISREG(st.st_mode):
            yield child
