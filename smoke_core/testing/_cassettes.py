"""Recorded provider traffic (vcrpy, pydantic-ai and httpx-style cassettes)
replayed through :class:`~smoke_core.testing.FakeProviderServer`."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._fake_server import Reply

# ---------------------------------------------------------------- cassettes


@dataclass
class Interaction:
    """A recorded request/response pair. ``request_body`` is the parsed JSON
    the client sent (or None); ``reply`` replays the response."""

    method: str
    uri: str
    request_headers: dict[str, str]
    request_body: Any
    reply: Reply


@dataclass
class Cassette:
    path: Path
    interactions: list[Interaction]

    def replies(self) -> list[Reply]:
        return [i.reply for i in self.interactions]


_HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive"}


def _first(value: Any) -> str:
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return str(value)


def load_cassette(path: str | os.PathLike[str], *, split_sse: bool = True) -> Cassette:
    """Read a recorded cassette in any of the three common YAML formats:
    vcrpy (``response.body.string``, ``response.status.code``), pydantic-ai
    (``parsed_body`` mappings, SSE kept in ``body.string``) and httpx-style
    (``response.content``, ``response.status_code``). Gzip ``!!binary``
    bodies are served gzip-encoded. SSE bodies are split into one chunk per
    event when ``split_sse``."""
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    interactions: list[Interaction] = []
    for item in data.get("interactions") or []:
        req = item.get("request") or {}
        resp = item.get("response") or {}
        req_headers = {str(k).lower(): _first(v) for k, v in (req.get("headers") or {}).items()}
        if "parsed_body" in req:
            req_body = req["parsed_body"]
        else:
            raw = req.get("body")
            if isinstance(raw, dict):
                raw = raw.get("string")
            if isinstance(raw, bytes):
                raw = raw.decode("utf-8", "replace")
            try:
                req_body = json.loads(raw) if raw else None
            except ValueError:
                req_body = raw
        status = resp.get("status_code")
        if status is None:
            st = resp.get("status")
            status = st.get("code") if isinstance(st, dict) else st
        headers: list[tuple[str, str]] = []
        content_encoding = None
        for key, value in (resp.get("headers") or {}).items():
            lk = str(key).lower()
            if lk == "content-encoding":
                content_encoding = _first(value)
            if lk in _HOP_HEADERS:
                continue
            for v in value if isinstance(value, list) else [value]:
                headers.append((str(key), str(v)))
        if "parsed_body" in resp:
            body: bytes = json.dumps(resp["parsed_body"]).encode("utf-8")
        elif "content" in resp:
            content = resp["content"]
            body = content if isinstance(content, bytes) else str(content).encode("utf-8")
        else:
            raw_body = resp.get("body")
            if isinstance(raw_body, dict):
                raw_body = raw_body.get("string", b"")
            if raw_body is None:
                raw_body = b""
            body = raw_body if isinstance(raw_body, bytes) else str(raw_body).encode("utf-8")
        if body[:2] == b"\x1f\x8b":
            headers.append(("Content-Encoding", content_encoding or "gzip"))
        ctype = next((v for k, v in headers if k.lower() == "content-type"), "")
        reply_body: bytes | list[bytes] = body
        if split_sse and "text/event-stream" in ctype and body[:2] != b"\x1f\x8b":
            text = body.decode("utf-8")
            parts = [p + "\n\n" for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
            reply_body = [p.encode("utf-8") for p in parts]
        interactions.append(
            Interaction(str(req.get("method") or "POST"), str(req.get("uri") or ""), req_headers, req_body,
                        Reply(int(status or 200), headers, reply_body))
        )
    return Cassette(Path(path), interactions)


def gunzip_if_needed(body: bytes) -> bytes:
    return gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body




def iter_sse_data(body: bytes) -> Iterator[tuple[str | None, str]]:
    """``(event, data)`` pairs of an SSE body (for asserting on recorded streams)."""
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        event = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if data:
            yield event, "\n".join(data)
