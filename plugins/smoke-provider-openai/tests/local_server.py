"""A small local model server for the tests where a reply must be exact: a
Starlette app on 127.0.0.1 (uvicorn in a thread) that answers the routes a
llama.cpp / Ollama / vLLM server has — ``/props``, ``/v1/models``,
``/api/show``, ``/v1/chat/completions`` — from what the test scripts, and
records every request. Behaviour that is llama.cpp's own is tested against a
real llama-server (tests/realmodel)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

#: a chat reply: a list of SSE chunks (dicts, or "[DONE]"; ``{"sleep": s}`` pauses), a (status, JSON body),
#: or a callable of the request body
ChatReply = list[Any] | tuple[int, Any] | Callable[[dict[str, Any]], Any]


def chunk(content: str | None = None, *, finish: str | None = None, tool_calls: list[dict[str, Any]] | None = None,
          **extra: Any) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "object": "chat.completion.chunk",
            **extra}


def text_stream(text: str, *, per: int = 4, finish: str = "stop", usage: tuple[int, int] = (50, 10)) -> list[Any]:
    """``text`` in deltas of ``per`` characters, then the finish reason and usage."""
    out: list[Any] = [chunk(text[i : i + per]) for i in range(0, len(text), per)]
    out.append(chunk(finish=finish))
    out.append({"choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                                         "total_tokens": sum(usage)}})
    out.append("[DONE]")
    return out


@dataclass
class Recorded:
    method: str
    path: str
    body: Any


@dataclass
class LocalModelServer:
    """Route answers: ``props`` (a JSON object, a (status, body) pair, or
    raw bytes), ``models`` (the ``/v1/models`` body), ``show`` (Ollama's
    ``/api/show``), ``chat``: the replies to chat requests, in order (the
    last one repeats). ``interval``: seconds between SSE chunks."""

    chat: list[ChatReply] = field(default_factory=list)
    props: Any = None
    models: Any = None
    show: Any = None
    interval: float = 0.0
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""

    @property
    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response, StreamingResponse
        from starlette.routing import Route

        def answer(spec: Any) -> Response:
            if spec is None:
                return JSONResponse({"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}},
                                    status_code=404)
            if isinstance(spec, bytes):
                return Response(spec, media_type="text/html")
            if isinstance(spec, tuple):
                status, body = spec
                return JSONResponse(body, status_code=status)
            return JSONResponse(spec)

        async def record(request: Request) -> Any:
            raw = await request.body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw
            self.requests.append(Recorded(request.method, request.url.path, body))
            return body

        async def props(request: Request) -> Response:
            await record(request)
            return answer(self.props)

        async def models(request: Request) -> Response:
            await record(request)
            return answer(self.models)

        async def show(request: Request) -> Response:
            await record(request)
            return answer(self.show)

        async def chat(request: Request) -> Response:
            body = await record(request)
            n = len(self.chat_bodies) - 1
            reply = self.chat[min(n, len(self.chat) - 1)]
            if callable(reply):
                reply = reply(body)
            if isinstance(reply, tuple):
                return answer(reply)
            interval = self.interval

            async def events() -> AsyncIterator[bytes]:
                for item in reply:
                    if isinstance(item, dict) and "sleep" in item:  # a pause the test scripts
                        await asyncio.sleep(item["sleep"])
                        continue
                    data = item if isinstance(item, str) else json.dumps(item)
                    yield f"data: {data}\n\n".encode()
                    if interval:
                        await asyncio.sleep(interval)

            return StreamingResponse(events(), media_type="text/event-stream")

        return Starlette(routes=[
            Route("/props", props), Route("/v1/models", models), Route("/api/show", show, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ])

    def __enter__(self) -> LocalModelServer:
        import uvicorn

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        config = uvicorn.Config(self._app(), log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        self._sock = sock
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the test server did not start")
            self._thread.join(0.01)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()


def llama_props(*, supports_tools: bool = True, n_ctx: int = 4096, alias: str = "qwen") -> dict[str, Any]:
    """What llama-server's /props says (trimmed to what Smoke reads)."""
    return {"default_generation_settings": {"n_ctx": n_ctx, "params": {}}, "total_slots": 1,
            "model_alias": alias, "model_path": f"/models/{alias}.gguf", "build_info": "b0-unknown",
            "chat_template_caps": {"supports_tools": supports_tools, "supports_tool_calls": supports_tools}}


def llama_models(*, alias: str = "qwen", n_ctx: int = 4096, n_ctx_train: int = 32768) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": alias, "aliases": [alias], "object": "model", "owned_by": "llamacpp",
                                        "meta": {"n_ctx": n_ctx, "n_ctx_train": n_ctx_train}}]}
