"""Rule patterns over the host of a URL: the ``domain`` value mode of
:mod:`smoke_core.policy.rules` (a tool whose ``permission_key`` is ``url``).

``web_fetch(domain:docs.python.org)`` names one host; ``web_fetch(*.example.com)``
every host under example.com at any depth (not example.com itself);
``domain:`` may be left out. Hosts and patterns are compared lower-cased, in
their ASCII (IDNA) form, without a trailing dot and without the port.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

#: ``permission_key`` names whose value is a URL (rules match its host)
URL_KEYS = frozenset({"url", "uri"})
PREFIX = "domain:"

_compiled: dict[str, re.Pattern[str]] = {}


def _ascii(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.isascii():
        return host
    try:
        import idna  # what httpx encodes hosts with (IDNA 2008), when installed

        return str(idna.encode(host).decode("ascii"))
    except ImportError:
        return host.encode("idna").decode("ascii")
    except Exception:  # not a valid name: keep it, it then matches only itself
        return host


def url_host(value: str) -> str | None:
    """The host of the URL ``value`` as rules compare it, or None when it has none."""
    try:
        host = urlsplit(value.strip()).hostname
    except ValueError:
        return None
    return _ascii(host) if host else None


def _regex(pattern: str) -> re.Pattern[str]:
    cached = _compiled.get(pattern)
    if cached is not None:
        return cached
    body = pattern.strip()
    if body.lower().startswith(PREFIX):
        body = body[len(PREFIX):].strip()
    body = body.strip("[]").rstrip(".")
    out: list[str] = []
    for label in body.split("."):
        if label in ("*", "**"):
            out.append(r"[^/]+")  # one or more labels: *.example.com covers a.b.example.com
            continue
        piece = _ascii(label.replace("*", "\x00").replace("?", "\x01"))
        piece = re.escape(piece).replace("\x00", r"[^.]*").replace("\x01", r"[^.]")
        out.append(piece)
    compiled = re.compile(r"\.".join(out))
    if len(_compiled) > 1024:
        _compiled.clear()
    _compiled[pattern] = compiled
    return compiled


def domain_matches(pattern: str, value: str) -> bool:
    """True when the host of URL ``value`` matches ``pattern`` (``domain:host`` or a host glob)."""
    host = url_host(value)
    return host is not None and _regex(pattern).fullmatch(host) is not None


def domain_rule_pattern(value: str) -> str | None:
    """The pattern that names exactly the host of ``value`` (``domain:docs.python.org``), or None."""
    host = url_host(value)
    return f"{PREFIX}{host}" if host else None
