"""Opening a session store from a URL (``SMOKE_STORE_URL``, ``smoke batch``).

- ``sqlite:///abs/path.db``, ``sqlite:relative.db`` or a plain path → :class:`SQLiteStore`;
- ``memory:`` → :class:`MemoryStore` (this process only);
- any other scheme → the store a plugin registers under that scheme in the
  entry-point group ``smoke.stores`` (smoke-store-postgres registers
  ``postgresql`` and ``postgres``). The entry point names a callable
  ``factory(url, **options) -> Store``; it is imported only when its scheme
  is opened, the way SQLAlchemy finds dialects.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

STORE_GROUP = "smoke.stores"
ENV_VAR = "SMOKE_STORE_URL"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


class StoreURLError(ValueError):
    """A store URL that cannot be opened; the message says why and what to do."""


def store_url_from_env() -> str | None:
    url = os.environ.get(ENV_VAR, "").strip()
    return url or None


def scheme_of(url: str) -> str | None:
    """The URL's scheme (lower case), or None for a plain path."""
    match = _SCHEME.match(url)
    if match is None or len(match.group(1)) == 1:  # "C:" is a drive, not a scheme
        return None
    return match.group(1).lower().split("+", 1)[0]


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def store_schemes() -> dict[str, Any]:
    """Installed store plugins: ``{scheme: entry point}``."""
    from importlib.metadata import entry_points

    return {ep.name.lower(): ep for ep in entry_points(group=STORE_GROUP)}


def open_store(url: str, **options: Any) -> Any:
    """Open the store ``url`` names (see the module docstring). ``options``
    go to the store's constructor (``lease_ttl``, ``lease_wait``...)."""
    if not isinstance(url, str) or not url.strip():
        raise StoreURLError("the store URL is empty: give a path, sqlite:///path.db or postgresql://...")
    url = url.strip()
    scheme = scheme_of(url)
    if scheme is None or scheme == "file":
        from .sqlite import SQLiteStore

        path = url[len("file:"):] if scheme == "file" else url
        return SQLiteStore(os.path.expanduser(path.removeprefix("//")), **options)
    if scheme == "sqlite":
        from .sqlite import SQLiteStore

        rest = url.split(":", 1)[1]
        # sqlite:///abs and sqlite:////abs -> /abs; sqlite:rel.db -> rel.db
        path = "/" + rest.lstrip("/") if rest.startswith("///") else rest.removeprefix("//")
        if not path:
            raise StoreURLError(f"{url!r} names no file: use sqlite:///absolute/path.db or sqlite:relative.db")
        return SQLiteStore(os.path.expanduser(path), **options)
    if scheme == "memory":
        from .protocol import MemoryStore

        return MemoryStore(**options)
    found = store_schemes()
    ep = found.get(scheme)
    if ep is None:
        known = ", ".join(sorted({"sqlite", "memory", *found})) or "sqlite, memory"
        hint = " (pip install smoke-store-postgres)" if scheme in ("postgresql", "postgres") else ""
        raise StoreURLError(
            f"no installed store handles {scheme}:// URLs{hint}; known schemes: {known}. "
            f"The URL was {redact_url(url)}"
        )
    factory = ep.load()
    return factory(url, **options)
