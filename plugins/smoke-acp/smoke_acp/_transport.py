"""Newline-delimited JSON over stdio for the SDK's connection, with the
JSON-RPC 2.0 answers to malformed input that the SDK leaves out.

``acp``'s own stdio transport logs a line that is not JSON and drops it (the
peer waits forever), and a line holding a JSON array or number stops its
receive loop (the agent exits). JSON-RPC 2.0 wants an error response with
``id: null`` instead, and the agent keeps serving. Everything else — ids,
dispatch, unknown methods (``-32601``), invalid params (``-32602``) — is the
SDK's :class:`acp.connection.Connection`; this class only frames messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("smoke.acp")

#: The largest message read (images in prompts are base64): 50 MB, as the SDK's stdio default.
MAX_MESSAGE_BYTES = 50 * 1024 * 1024


def _error(code: int, message: str, data: Any = None, id: Any = None) -> dict[str, Any]:
    from acp import RequestError

    error = RequestError(code, message, data).to_error_obj()
    if error.get("data") is None:
        error.pop("data", None)
    return {"jsonrpc": "2.0", "id": id, "error": error}


def problem(message: Any) -> dict[str, Any] | None:
    """The error response a decoded line deserves, or None when it is a
    well-formed request, notification or response."""
    if not isinstance(message, dict):
        kind = "a batch (array)" if isinstance(message, list) else f"a JSON {type(message).__name__}"
        return _error(-32600, "Invalid request", {"details": f"expected a JSON-RPC object, got {kind}; "
                                                             f"ACP does not use batches"})
    id_ = message.get("id")
    if "id" in message and not (id_ is None or (isinstance(id_, (str, int)) and not isinstance(id_, bool))):
        return _error(-32600, "Invalid request", {"details": "'id' must be a string, a number or null"})
    if message.get("jsonrpc") != "2.0":
        return _error(-32600, "Invalid request", {"details": "'jsonrpc' must be \"2.0\""}, id_)
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            return _error(-32600, "Invalid request", {"details": "'method' must be a non-empty string"}, id_)
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return _error(-32600, "Invalid request", {"details": "'params' must be an object"}, id_)
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None  # a response to one of our requests
    return _error(-32600, "Invalid request", {"details": "neither a request ('method') nor a response "
                                                         "('result' or 'error')"}, id_)


class StdioTransport:
    """The SDK's ``Transport`` (``send`` / ``receive`` / ``close`` of decoded
    messages) over a reader and a writer of newline-delimited JSON."""

    def __init__(self, reader: asyncio.StreamReader, write: Callable[[bytes], Awaitable[None]]) -> None:
        self._reader = reader
        self._write = write
        self._lock = asyncio.Lock()
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        async with self._lock:
            if self._closed:
                raise ConnectionError("the connection is closed")
            await self._write(data)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                log.warning("smoke acp: a line from the client is not JSON (%s); answered with a parse error", exc)
                await self._answer(_error(-32700, "Parse error", {"details": f"not valid JSON: {exc}"}))
                continue
            answer = problem(message)
            if answer is not None:
                log.warning("smoke acp: invalid JSON-RPC message from the client: %s", answer["error"].get("data"))
                await self._answer(answer)
                continue
            return message  # type: ignore[no-any-return]

    async def _read_line(self) -> bytes | None:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None  # the last line without a newline, then EOF
        except asyncio.LimitOverrunError:
            await self._skip_long_line()
            await self._answer(_error(-32600, "Invalid request",
                                      {"details": f"message longer than {MAX_MESSAGE_BYTES} bytes"}))
            return b""
        return line

    async def _skip_long_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    async def _answer(self, message: dict[str, Any]) -> None:
        try:
            await self.send(message)
        except (ConnectionError, OSError):
            pass

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
