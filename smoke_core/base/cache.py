"""Smoke's cache folder and its one way of writing there: what the plugin
loader (entry points) and the sandbox probe remember between processes."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$SMOKE_CACHE_DIR``, else ``$XDG_CACHE_HOME/smoke`` (``~/.cache/smoke``)."""
    base = os.environ.get("SMOKE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "smoke"
    )
    return Path(base)


def write_cache_file(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (a temporary file, then a rename, so
    a reader in another process never sees half of it); a cache that cannot
    be written (a read-only home) is simply not kept."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
