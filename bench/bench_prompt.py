"""Benchmark 5 — prompt overhead.

o200k_base tokens (tiktoken) of what every step pays before the task: the
default system prompt (``smoke_core.base.prompts.DEFAULT_SYSTEM_PROMPT``) plus the
default tool schemas as sent to a provider. The agent is created with every
installed plugin and a stub provider; the schemas are
``[t.provider_schema() for t in agent.tools.values()]`` serialised as the
OpenAI-compatible adapter sends them (``{"type": "function", "function":
{"name", "description", "parameters"}}``, ``json.dumps(ensure_ascii=False)``).
Per-group and per-tool counts are reported too.

tiktoken cannot download here: ``TIKTOKEN_CACHE_DIR`` must point at a folder
holding o200k_base (``../shared/tokenizers/tiktoken_cache`` from the repo
root; the nox session sets it when the folder exists, and so does this script).

    python bench/bench_prompt.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ROOT, finish, fmt_table, parser, verdict

TARGET = 3000
GROUPS = ("filesystem", "search", "terminal", "git", "agent")
SMOKE_MONKEY_TOKENS = 12501  # the TypeScript harness's default system prompt (issue 9; not re-measurable here)


def wire(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": s["name"], "description": s.get("description") or "",
                                          "parameters": s.get("input_schema") or {"type": "object", "properties": {}}}}
        for s in schemas
    ]


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    args = ap.parse_args()
    cache = ROOT.parent / "shared" / "tokenizers" / "tiktoken_cache"
    if "TIKTOKEN_CACHE_DIR" not in os.environ and cache.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        import tiktoken

        enc = tiktoken.get_encoding("o200k_base")
    except Exception as exc:  # no tiktoken, or no cached encoding
        finish(args, {"name": "prompt", "error": f"o200k_base unavailable: {type(exc).__name__}: {exc}"}, str)
        return

    from smoke_core import create_agent
    from smoke_core.base.prompts import DEFAULT_SYSTEM_PROMPT
    from smoke_core.testing import ScriptedProvider

    def count(obj: Any) -> int:
        return len(enc.encode(obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)))

    with tempfile.TemporaryDirectory() as ws:
        agent = create_agent(ws, provider=ScriptedProvider([]))
        tools = list(agent.tools.values())
        schemas = [t.provider_schema() for t in tools]
        system = agent.system_prompt or ""
        plugins = sorted({p.distribution for p in agent.plugin_manager.infos if p.distribution})
    per_tool = []
    for t, s in zip(tools, schemas, strict=True):
        w = wire([s])[0]
        per_tool.append({
            "name": t.name, "group": t.group, "tokens": count(w),
            "description_tokens": count(s.get("description") or ""),
        })
    groups: dict[str, dict[str, Any]] = {}
    for g in sorted({t.group or "other" for t in tools}):
        members = [s for t, s in zip(tools, schemas, strict=True) if (t.group or "other") == g]
        groups[g] = {"tools": [s["name"] for s in members], "tokens": count(wire(members))}
    five = [s for t, s in zip(tools, schemas, strict=True) if t.group in GROUPS]
    system_tokens = count(system)
    tools_tokens = count(wire(schemas))
    total = system_tokens + tools_tokens
    result = {
        "name": "prompt",
        "encoding": "o200k_base",
        "plugins": plugins,
        "system_prompt_is_default": system == DEFAULT_SYSTEM_PROMPT,
        "system_prompt_tokens": system_tokens,
        "tools": len(schemas),
        "tool_schema_tokens": tools_tokens,
        "total_tokens": total,
        "five_groups_tokens": count(wire(five)),
        "five_groups_tools": len(five),
        "groups": groups,
        "per_tool": sorted(per_tool, key=lambda x: -x["tokens"]),
        "smoke_monkey_system_prompt_tokens": SMOKE_MONKEY_TOKENS,
        "targets": {"total_tokens": TARGET},
        "verdicts": {"total_tokens": verdict(total, TARGET)},
    }
    finish(args, result, table)


def table(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"Prompt: {r['error']}"
    rows = [["system prompt", "", r["system_prompt_tokens"]]]
    rows += [[f"group {g}", len(d["tools"]), d["tokens"]] for g, d in r["groups"].items()]
    rows += [["all tool schemas", r["tools"], r["tool_schema_tokens"]],
             ["the five groups' schemas", r["five_groups_tools"], r["five_groups_tokens"]],
             ["TOTAL (prompt + all schemas)", "", r["total_tokens"]]]
    out = f"Prompt overhead (o200k tokens; target <= {TARGET})\n" + fmt_table(["part", "tools", "tokens"], rows)
    out += "\n\nper tool:\n" + fmt_table(["tool", "group", "tokens", "description"],
                                         [[t["name"], t["group"], t["tokens"], t["description_tokens"]]
                                          for t in r["per_tool"]])
    return out


if __name__ == "__main__":
    main()
