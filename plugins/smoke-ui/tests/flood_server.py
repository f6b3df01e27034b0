"""A real ``smoke serve`` app in its own process, for the memory tests: a
scripted model that calls ``flood``, a tool that streams a lot of output the
way a noisy command does. Prints one JSON line ``{url, token, pid}`` once the
socket listens.

    python flood_server.py     (then POST /api/runs {"task": "flood 20000 4096"})
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from smoke_ui.server import create_app
from smoke_ui.serving import bind_socket, make_server, url_for

from smoke_core import ToolContext, create_agent, tool
from smoke_core.plugin import MemoryStore
from smoke_core.testing import ScriptedProvider


@tool(read_only=True, presentation={"label": "Flood", "icon": "🌊", "tone": "warning"})
async def flood(chunks: int, size: int, ctx: ToolContext) -> str:
    """Stream ``chunks`` pieces of ``size`` characters of output."""
    line = ("y" * 63 + "\n") * max(1, size // 64)
    for n in range(chunks):
        ctx.emit_output(line)
        if n % 64 == 63:
            await asyncio.sleep(0)  # a real command's output arrives between other work
    return f"flooded {chunks} chunks of {len(line)} characters"


def flood_turn(request: Any) -> dict[str, Any]:
    """The model's first turn: the task reads ``flood <chunks> <size>``."""
    task = next(b["text"] for m in request.messages if m["role"] == "user" for b in m["content"] if b["type"] == "text")
    _, chunks, size = task.split()
    return {"tool_calls": [{"id": "f1", "name": "flood", "input": {"chunks": int(chunks), "size": int(size)}}]}


def main() -> None:
    def factory(*, session_id: str, store: Any) -> Any:
        return create_agent(
            os.getcwd(), provider=ScriptedProvider([flood_turn, "done"]), autoload_plugins=False, plugins=[],
            tools=[flood], store=store, session_id=session_id,
        )

    app = create_app(factory, store=MemoryStore(), fresh_session_per_run=True)
    sock = bind_socket("127.0.0.1", 0)
    print(json.dumps({"url": url_for(sock, "127.0.0.1"), "token": app.state.ui.token, "pid": os.getpid()}),
          flush=True)
    asyncio.run(make_server(app).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
