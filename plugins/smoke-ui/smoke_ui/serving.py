"""Running the app under uvicorn: in the foreground (``smoke serve``) or in a
background thread (:class:`ServerThread`, for tests and embedding).

The listening socket is bound before uvicorn starts, so the real port is known
(``port=0`` picks a free one) and connections made before uvicorn is ready
wait in the backlog instead of failing.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["ServerThread", "bind_socket", "is_loopback", "make_server", "url_for"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0`` = any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def url_for(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = host
    if host in ("0.0.0.0", "::", ""):
        shown = "127.0.0.1"
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def make_server(app: Starlette, *, log_level: str = "warning") -> Any:
    """A ``uvicorn.Server`` that ends the page's event streams before it
    drains connections (an open SSE stream would otherwise hold shutdown)."""
    import uvicorn

    class UIServer(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            app.state.ui.hub.close()
            await super().shutdown(sockets=sockets)

    config = uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=False)
    return UIServer(config)


class ServerThread:
    """Serve ``app`` from a daemon thread; use as a context manager::

        with ServerThread(app) as server:
            httpx.get(server.url + "/healthz")
    """

    def __init__(self, app: Starlette, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.url = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self) -> ServerThread:
        sock = bind_socket(self.host, self.port)
        self.url = url_for(sock, self.host)
        self._server = make_server(self.app)

        def run() -> None:
            try:
                asyncio.run(self._server.serve(sockets=[sock]))
            except BaseException as exc:  # reported by stop()
                self._error = exc
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name="smoke-ui-server", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        if self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"the smoke-ui server did not stop within {timeout} seconds")
        self._thread = None
        if self._error is not None:
            raise RuntimeError(f"the smoke-ui server failed: {self._error!r}") from self._error

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
