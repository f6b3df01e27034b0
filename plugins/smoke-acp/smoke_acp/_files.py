"""The editor's file system (``fs/read_text_file``, ``fs/write_text_file``)
for the filesystem tools, when the client offers it.

The tools run in worker threads; each call here sends the request on the
connection's loop and waits for the answer. The tools have already checked
the path against the workspace sandbox (smoke-tools-filesystem's
``editor_files``); this class adds nothing to what they may touch.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from pathlib import Path
from typing import Any

#: How long a tool waits for the editor to answer a read or a write.
EDITOR_TIMEOUT_S = 60.0


class ClientFiles:
    """``read_text`` / ``write_text`` through the ACP client (see
    ``smoke_tools_filesystem.EditorFiles``). ``read`` / ``write`` say what the
    client offered; what it did not offer goes to the disk."""

    def __init__(self, conn: Any, session_id: str, loop: asyncio.AbstractEventLoop, *, read: bool, write: bool,
                 timeout: float = EDITOR_TIMEOUT_S) -> None:
        self._conn = conn
        self._session_id = session_id
        self._loop = loop
        self.read = read
        self.write = write
        self._timeout = timeout
        self._loop_thread = threading.get_ident()

    def _call(self, what: str, path: Path, coro: Any) -> Any:
        from smoke_core.plugin import ToolError

        if threading.get_ident() == self._loop_thread:  # never block the loop that must answer
            coro.close()
            return None
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(self._timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ToolError(f"the editor did not answer {what} {path} within {self._timeout:.0f} s; "
                            f"nothing was changed. Try again") from None
        except Exception as exc:
            message = getattr(exc, "data", None) or str(exc) or type(exc).__name__
            raise ToolError(f"the editor could not {what} {path}: {message}") from None

    def read_text(self, path: Path) -> str | None:
        if not self.read:
            return None
        response = self._call("read", path, self._conn.read_text_file(session_id=self._session_id, path=str(path)))
        return None if response is None else str(response.content)

    def write_text(self, path: Path, text: str) -> bool:
        if not self.write or threading.get_ident() == self._loop_thread:
            return False
        self._call("write", path, self._conn.write_text_file(session_id=self._session_id, path=str(path),
                                                              content=text))
        return True
