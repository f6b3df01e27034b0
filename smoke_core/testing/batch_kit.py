"""A plugin for testing ``smoke batch`` and its engines (``--plugin
smoke_core.testing.batch_kit``): a provider, ``batch-script``, that plays
a script written in the task itself, and tools that leave traces a test can
check. The model's next move is computed from the transcript alone, so every
worker and every attempt of a task (a retry after a lost worker, a resumed
session) plays the same script.

The task text is the script, one model turn per line; a line may hold
several calls joined by `` && ``:

- ``write PATH TEXT`` — ``write_note`` (mutating): writes TEXT to PATH in the workspace;
- ``append LEDGER TEXT [PORT]`` — ``append_line`` (mutating): appends TEXT
  to the file LEDGER (absolute); with PORT, and if ``LEDGER.hang`` exists
  (it is removed), it then sends its process id to 127.0.0.1:PORT and hangs
  with the connection open — a call in flight, for a test to kill (the
  connection closes when the process dies);
- ``read PATH`` — ``read_note`` (read-only);
- ``whoami`` — ``whoami`` (read-only): the process id and host the tool ran in;
- ``output JSON`` — calls ``final_result`` with JSON (a task with ``output_schema``);
- ``wait NAME`` — the model call waits for ``GATES[NAME]`` (an
  ``asyncio.Event`` of this process, set by the test);
- ``say TEXT`` — the final answer (the last line; by default ``done``);
  ``$last`` in it is replaced by the last tool result.

The model ``delay-<N>ms`` (``--model delay-10ms``) makes each model call
await N ms, as a remote model would. Call ids are ``t<turn>c<call>``. A call answered "not run" (it never
started) is issued again, once (id ``...-again``); one answered
"interrupted" (its outcome unknown) is not.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import AsyncIterator
from typing import Any

from ..base.markers import hookimpl
from ..wire.types import ModelRequest, ProviderEvent
from . import ScriptedProvider

#: in-process gates for ``wait NAME`` lines
GATES: dict[str, asyncio.Event] = {}
#: ``wait NAME`` lines reached (name -> event set when a model call waits on it)
REACHED: dict[str, asyncio.Event] = {}


def _text(message: Any) -> str:
    return "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def _script(request: ModelRequest) -> list[str]:
    first = next((m for m in request.messages if m["role"] == "user"), None)
    task = _text(first) if first else ""
    return [line.strip() for line in task.splitlines() if line.strip()]


def _call(line: str, call_id: str) -> dict[str, Any]:
    verb, _, rest = line.partition(" ")
    if verb == "write":
        path, _, text = rest.partition(" ")
        return {"name": "write_note", "input": {"path": path, "text": text}, "id": call_id}
    if verb == "append":
        parts = rest.split(" ")
        args: dict[str, Any] = {"ledger": parts[0], "text": parts[1]}
        if len(parts) > 2:
            args["port"] = int(parts[2])
        return {"name": "append_line", "input": args, "id": call_id}
    if verb == "read":
        return {"name": "read_note", "input": {"path": rest}, "id": call_id}
    if verb == "whoami":
        return {"name": "whoami", "input": {}, "id": call_id}
    if verb == "output":
        return {"name": "final_result", "input": json.loads(rest), "id": call_id}
    raise ValueError(f"batch_kit: unknown script line {line!r}")


def next_turn(request: ModelRequest) -> dict[str, Any]:
    """The model's next move, from the transcript."""
    results: dict[str, str] = {}
    for message in request.messages:
        if message["role"] == "tool":
            for block in message["content"]:
                text = " ".join(c.get("text", "") for c in block.get("content", []) if c.get("type") == "text")
                results[str(block.get("tool_call_id"))] = text
    lines = _script(request)
    for turn, line in enumerate(lines, 1):
        verb = line.partition(" ")[0]
        if verb == "say":
            text = line.partition(" ")[2] or "done"
            last = next(reversed(results.values()), "")
            return {"text": text.replace("$last", last)}
        if verb == "wait":
            continue
        calls = [_call(part.strip(), f"t{turn}c{j}") for j, part in enumerate(line.split(" && "), 1)]
        pending = [c for c in calls if c["id"] not in results]
        if pending:
            return {"tool_calls": pending}
        again = [{**c, "id": c["id"] + "-again"} for c in calls
                 if results[c["id"]].startswith("not run") and c["id"] + "-again" not in results]
        if again:
            return {"tool_calls": again}
    return {"text": "done"}


def _waits_before(request: ModelRequest) -> list[str]:
    """``wait`` lines whose turn comes now (all earlier turns answered)."""
    answered = sum(1 for m in request.messages if m["role"] == "assistant")
    names = []
    turn = 0
    for line in _script(request):
        verb, _, rest = line.partition(" ")
        if verb == "wait":
            if turn == answered:
                names.append(rest.strip())
            continue
        turn += 1
    return names


class BatchScriptProvider(ScriptedProvider):
    name = "batch-script"
    supports_images = False

    def __init__(self, *, model: str | None = None, **_: Any) -> None:
        delay = 0.0
        if model and model.startswith("delay-") and model.endswith("ms"):  # "delay-10ms": each call awaits 10 ms
            delay = float(model[len("delay-"):-2]) / 1000
        super().__init__([next_turn] * 1000, model=model or "batch-script", copy_requests=False, delay=delay)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        for name in _waits_before(request):
            REACHED.setdefault(name, asyncio.Event()).set()
            await GATES.setdefault(name, asyncio.Event()).wait()
        async for event in super().stream(request):
            yield event


def _tools() -> list[Any]:
    from ..tools.definitions import ToolAnnotations, ToolDefinition

    def write_note(input: dict[str, Any], ctx: Any) -> str:
        path = ctx.workspace.resolve(input["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(input["text"] + "\n")
        return f"wrote {input['path']}"

    def read_note(input: dict[str, Any], ctx: Any) -> str:
        path = ctx.workspace.resolve(input["path"])
        return path.read_text() if path.exists() else f"{input['path']} does not exist"

    async def append_line(input: dict[str, Any], ctx: Any) -> str:
        ledger = input["ledger"]
        with open(ledger, "a") as fh:
            fh.write(input["text"] + "\n")
        port = input.get("port")
        hang = ledger + ".hang"
        if port and os.path.exists(hang):
            os.remove(hang)
            with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as conn:
                conn.sendall(f"{os.getpid()}\n".encode())
                # in flight until the test kills this process (the test sees the connection close)
                await asyncio.Event().wait()
        return f"appended {input['text']}"

    def whoami(input: dict[str, Any], ctx: Any) -> str:
        return f"pid {os.getpid()} on {socket.gethostname()}"

    def schema(**props: str) -> dict[str, Any]:
        return {"type": "object", "properties": {k: {"type": v} for k, v in props.items()},
                "required": [k for k in props if k != "port"]}

    return [
        ToolDefinition(name="write_note", description="Write a note file in the workspace.",
                       input_schema=schema(path="string", text="string"), permission_key="path",
                       annotations=ToolAnnotations(read_only_hint=False, kind="edit"), execute=write_note),
        ToolDefinition(name="read_note", description="Read a note file of the workspace.",
                       input_schema=schema(path="string"), permission_key="path",
                       annotations=ToolAnnotations(read_only_hint=True, kind="read"), execute=read_note),
        ToolDefinition(name="whoami", description="Which process runs the tools.", input_schema=schema(),
                       annotations=ToolAnnotations(read_only_hint=True, kind="other"), execute=whoami),
        ToolDefinition(name="append_line", description="Append a line to a ledger file.",
                       input_schema=schema(ledger="string", text="string", port="integer"),
                       annotations=ToolAnnotations(read_only_hint=False), execute=append_line),
    ]


@hookimpl
def register_providers(register: Any) -> None:
    register("batch-script", lambda **kw: BatchScriptProvider(model=kw.get("model")),
             description="plays the script written in the task (smoke_core.testing.batch_kit)",
             default_model="batch-script")


@hookimpl
def register_tools(register: Any) -> None:
    for tool in _tools():
        register(tool, group="batch_kit")
