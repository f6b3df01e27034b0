"""The client the MCP conformance suite grades: Smoke's own code path.

``conformance client --command "python adapter.py"`` appends the test
server's URL as the last argument and sets ``MCP_CONFORMANCE_SCENARIO`` (and
``MCP_CONFORMANCE_CONTEXT``, JSON, when the scenario has data). This script
does what a person's Smoke does: ``create_agent(mcp_servers={"conf": ...})``
with the smoke-mcp plugin, and a scripted model that calls every tool of the
server once (``add_numbers`` with 2 and 3; ``json_schema_echo`` with the schema
Smoke handed the model; the scenario's ``toolCalls`` as given). The person is
played by listeners on the agent's events, answering as a person would:

- a form (elicitation) is sent back empty, so Smoke applies the schema's defaults;
- "log in now?" is answered "log in", and the browser Smoke opens is
  ``browser.py`` (``BROWSER``), which follows the authorization server's
  redirect back to Smoke's listener on 127.0.0.1.

What the scenario gives (client ids, secrets, keys) goes into the server
entry's ``oauth`` settings exactly as a person would write them in their
user config. Logins are stored in a temporary state folder (a file, never a
keyring).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

SERVER = "conf"
HERE = Path(__file__).resolve().parent
SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
CONTEXT: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
#: a client-ID metadata document URL, as the suite expects it (the test AS never fetches it)
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def _dummy(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in schema.get("required") or []:
        kind = (schema.get("properties") or {}).get(name, {}).get("type")
        out[name] = {"number": 1, "integer": 1, "boolean": True, "object": {}, "array": []}.get(kind, "x")
    return out


def first_turn(request: Any) -> Any:
    tools = {t["name"]: t for t in request.tools if t["name"].startswith(SERVER + "__")}
    print("smoke tools:", sorted(tools), file=sys.stderr)
    calls = []
    if CONTEXT.get("toolCalls"):
        for call in CONTEXT["toolCalls"]:
            calls.append({"name": f"{SERVER}__{call['name']}", "input": call.get("arguments") or {}})
    else:
        for name, tool in tools.items():
            bare = name[len(SERVER) + 2:]
            if bare == "add_numbers":
                args: dict[str, Any] = {"a": 2, "b": 3}
            elif bare == "json_schema_echo" and f"{SERVER}__json_schema_2020_12_tool" in tools:
                args = {"schema": tools[f"{SERVER}__json_schema_2020_12_tool"].get("input_schema")}
            else:
                args = _dummy(tool.get("input_schema") or {})
            calls.append({"name": name, "input": args})
    return {"tool_calls": calls} if calls else "no tools"


def server_entry(url: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "http", "url": url, "trusted": True}
    oauth: dict[str, Any] = {"client_metadata_url": CIMD_URL}
    if SCENARIO == "auth/client-credentials-basic":
        oauth = {"grant": "client_credentials", "client_id": CONTEXT["client_id"],
                 "client_secret": CONTEXT["client_secret"], "token_endpoint_auth_method": "client_secret_basic"}
    elif SCENARIO == "auth/client-credentials-jwt":
        oauth = {"grant": "client_credentials", "client_id": CONTEXT["client_id"],
                 "private_key": CONTEXT["private_key_pem"], "signing_algorithm": CONTEXT.get("signing_algorithm", "ES256")}
    elif "client_id" in CONTEXT and "client_secret" in CONTEXT:  # a pre-registered client
        oauth = {"client_id": CONTEXT["client_id"], "client_secret": CONTEXT["client_secret"],
                 "token_endpoint_auth_method": "client_secret_basic"}
    entry["oauth"] = oauth
    return entry


async def main(url: str, state: Path) -> int:
    import smoke_mcp

    from smoke_core import create_agent
    from smoke_core.testing import ScriptedProvider

    agent = create_agent(state / "workspace", provider=ScriptedProvider([first_turn, "done"]), autoload_plugins=False,
                         plugins=[smoke_mcp], mcp_servers={SERVER: server_entry(url)}, permission="allow-all")

    def person(event: Any) -> None:  # a person at the terminal
        data = event.data
        if data.get("form") is not None:
            agent.respond_form(data["tool_call_id"], {})  # keep every default
        elif "log in" in (data.get("options") or []):
            agent.respond(data["tool_call_id"], "log in")
        else:
            agent.respond(data["tool_call_id"], "")
        print("asked:", str(data.get("question"))[:160], file=sys.stderr)

    agent.on("ask_user.required", person)
    agent.on("run.warning", lambda e: print("run.warning:", e.data["error"]["message"], file=sys.stderr))
    agent.on("tool.completed", lambda e: print("tool.completed:", e.data.get("tool_name"),
                                               str(e.data.get("content"))[:200], file=sys.stderr))
    async with agent:
        result = await agent.run("call the tools")
    print("status:", result.status, file=sys.stderr)
    return 0 if result.status == "completed" else 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="smoke-conformance-") as tmp:
        root = Path(tmp)
        (root / "workspace").mkdir()
        os.environ.update({
            "XDG_CONFIG_HOME": str(root / "config"), "XDG_STATE_HOME": str(root / "state"),
            "SMOKE_MANAGED_SETTINGS": str(root / "no-managed.yaml"), "SMOKE_MCP_TOKENS": "file",
            "BROWSER": f"{sys.executable} {HERE / 'browser.py'} %s",
        })
        sys.exit(asyncio.run(main(sys.argv[-1], root)))
