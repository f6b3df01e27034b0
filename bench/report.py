"""Render ``docs/performance.md`` from ``bench/results/latest.json``.

    python bench/report.py [results.json]    # rewrites docs/performance.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _v(x: Any, unit: str = "", nd: int | None = None) -> str:
    """A figure for people: thousands separated, 3 significant-ish digits."""
    if x is None:
        return "—"
    if isinstance(x, float) and x != x:
        return "—"
    if isinstance(x, float):
        if nd is not None:
            x = round(x, nd)
        elif abs(x) >= 100:
            x = round(x)
        elif abs(x) >= 10:
            x = round(x, 1)
        else:
            x = round(x, 3 if abs(x) < 1 else 2)
    if isinstance(x, int) and abs(x) >= 10000:
        return f"{x:,}{unit}"
    return f"{x}{unit}"


def _verdict(v: str | None) -> str:
    return {"met": "met", "MISSED": "**MISSED**"}.get(v or "", v or "not measured")


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join("" if c is None else str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _err(b: dict[str, Any] | None) -> str | None:
    if b is None:
        return "not run"
    if "error" in b and "name" not in b:
        return b["error"]
    if "error" in b:
        return b["error"]
    return None


def summary(d: dict[str, Any]) -> tuple[str, list[str]]:
    B = d["benchmarks"]
    rows: list[list[Any]] = []
    misses: list[str] = []

    def add(bench: str, measure: str, value: str, target: str, verdict: str | None, peers: str) -> None:
        rows.append([bench, measure, value, target, _verdict(verdict), peers])
        if verdict == "MISSED":
            misses.append(f"{bench}: {measure} is {value} (target {target})")

    s = B.get("startup")
    if _err(s):
        rows.append(["1 Start-up", "—", _err(s), "", "not measured", ""])
    else:
        c = s["commands"]
        peer = f"`python -c pass` {_v(c['python -c pass']['median_ms'])} ms; `llm --help` {_v(s['llm_help_ms'])} ms"
        add("1 Start-up", "`smoke --help`", f"{_v(s['smoke_help_ms'])} ms", "≤ 150 ms", s["verdicts"]["smoke_help_ms"],
            peer)
        add("1 Start-up", "`smoke --help` ÷ `llm --help`", _v(s["ratio_to_llm"]), "≤ 0.1",
            s["verdicts"]["ratio_to_llm"], f"`llm --help` (llm + llm-anthropic + llm-gemini) {_v(s['llm_help_ms'])} ms")
        if "smoke_tools_ms" in s["verdicts"]:
            add("1 Start-up", "`smoke tools`", f"{_v(s['smoke_tools_ms'])} ms", "≤ 300 ms",
                s["verdicts"]["smoke_tools_ms"], peer)
        else:
            rows.append(["1 Start-up", "`smoke tools`", f"{_v(s['smoke_tools_ms'])} ms", "(no target)", "", ""])
        h = s["heavy_imports"]
        heavy = sorted(set(h.get("heavy") or []) | set(h.get("smoke_help_path") or [])
                       | {m for v in (h.get("per_plugin") or {}).values() for m in v})
        add("1 Start-up", "heavy deps imported by loading plugins", ", ".join(heavy) or "none", "none",
            s["verdicts"]["no_heavy_imports"], "")
    lp = B.get("loop")
    if _err(lp):
        rows.append(["2 Loop", "—", _err(lp), "", "not measured", ""])
    else:
        fw = lp["frameworks"]

        def ps(name: str, steps: str = "200") -> str:
            f = fw.get(name) or {}
            return _v((f.get("us_per_step") or {}).get(steps)) if "error" not in f else "n/a"

        def rat(name: str) -> str:
            f = fw.get(name) or {}
            return _v(f.get("ratio_400_25")) if "error" not in f else "n/a"

        peers = f"pydantic-ai {ps('pydantic-ai')}; openai-agents {ps('openai-agents')}; llm {ps('llm')} µs/step"
        add("2 Loop", "µs/step at 200 steps, no hooks", ps("smoke"), "≤ 60", lp["verdicts"]["us_per_step_200"], peers)
        add("2 Loop", "µs/step at 200 steps, four hook plugins", ps("smoke-hooks"), "≤ 100",
            lp["verdicts"]["us_per_step_200_hooks"], "")
        add("2 Loop", "400-step ÷ 25-step per-step cost, no hooks", rat("smoke"), "≤ 1.3",
            lp["verdicts"]["ratio_400_25"],
            f"pydantic-ai {rat('pydantic-ai')}; openai-agents {rat('openai-agents')}; llm {rat('llm')}")
        add("2 Loop", "400-step ÷ 25-step, four hook plugins", rat("smoke-hooks"), "≤ 1.3",
            lp["verdicts"]["ratio_400_25_hooks"], "")
    se = B.get("search")
    if _err(se):
        rows.append(["3 Search", "—", _err(se), "", "not measured", ""])
    else:
        qs = "; ".join(f"{q['raw_rg_ms']} → {q['tool_ms']} ms" for q in se["queries"])
        add("3 Search", "grep tool ÷ raw rg (worst query)", f"{_v(se['worst_ratio'])}×", "≤ 1.3×",
            se["verdicts"]["ratio"], f"raw rg → grep tool: {qs}")
    co = B.get("concurrency")
    if _err(co):
        rows.append(["4 Concurrency", "—", _err(co), "", "not measured", ""])
    else:
        sm, pa = co["frameworks"].get("smoke", {}), co["frameworks"].get("pydantic-ai", {})
        if _err(sm):
            rows.append(["4 Concurrency", "—", _err(sm), "", "not measured", ""])
        else:
            def pe(k: str, u: str) -> str:
                return f"pydantic-ai {_v(pa.get(k))} {u}" if not _err(pa) else "pydantic-ai n/a"
            add("4 Concurrency", "1,000 runs × 5 steps: total time", f"{_v(sm['total_s'])} s", "≤ 2 s",
                co["verdicts"]["total_s"], pe("total_s", "s"))
            add("4 Concurrency", "RSS growth", f"{_v(sm['rss_growth_mb'])} MB", "≤ 60 MB",
                co["verdicts"]["rss_growth_mb"], pe("rss_growth_mb", "MB"))
            add("4 Concurrency", "worst event-loop lag", f"{_v(sm['worst_lag_ms'])} ms", "≤ 50 ms",
                co["verdicts"]["worst_lag_ms"], pe("worst_lag_ms", "ms"))
    pr = B.get("prompt")
    if _err(pr):
        rows.append(["5 Prompt", "—", _err(pr), "", "not measured", ""])
    else:
        add("5 Prompt", "o200k tokens: system prompt + all tool schemas", _v(pr["total_tokens"]), "≤ 3,000",
            pr["verdicts"]["total_tokens"],
            f"Smoke Monkey (TypeScript) system prompt alone: {pr['smoke_monkey_system_prompt_tokens']:,} (from the issue)")
        rows.append(["5 Prompt", "of which: system prompt / the five groups' schemas (filesystem, search, terminal, "
                     "git, agent) / other groups", f"{pr['system_prompt_tokens']} / {pr['five_groups_tokens']} / "
                     f"{pr['tool_schema_tokens'] - pr['five_groups_tokens']}", "(no target)", "", ""])
    st = B.get("stream")
    if _err(st):
        rows.append(["6 Streaming", "—", _err(st), "", "not measured", ""])
    else:
        c = st["clients"]
        add("6 Streaming", "p99 added latency per delta", f"{_v(st['added_p99_ms'])} ms", "≤ 1 ms",
            st["verdicts"]["added_p99_ms"], f"raw httpx-sse p99 {c['raw']['p99_ms']} ms (Smoke {c['smoke']['p99_ms']} ms)")
        rows.append(["6 Streaming", "deltas per second to `text.delta` listeners",
                     _v(c["smoke"]["deltas_per_s"]), "(no target)", "",
                     f"raw httpx-sse {_v(c['raw']['deltas_per_s'])}/s"])
    sb = B.get("sandbox")
    if _err(sb):
        rows.append(["7 Sandbox", "—", _err(sb), "", "not measured", ""])
    else:
        t, d = sb["rows"]["tool"], sb["rows"]["direct"]
        add("7 Sandbox", "added by bubblewrap to `true` via run_command (median)", f"{_v(sb['added_ms_tool'])} ms",
            "≤ 15 ms", sb["verdicts"]["added_ms_tool"],
            f"unsandboxed {_v(t['off']['median_ms'])} → sandboxed {_v(t['required']['median_ms'])} ms; "
            f"bwrap alone adds {_v(sb['added_ms_direct'])} ms ({_v(d['off']['median_ms'])} → "
            f"{_v(d['required']['median_ms'])} ms)")
        r = sb["rows"]["test"]
        add("7 Sandbox", "run_test on the demo project, sandboxed ÷ unsandboxed (median)",
            f"{_v(sb['run_test_ratio'])}×", "≤ 1.2×", sb["verdicts"]["run_test_ratio"],
            f"unsandboxed {_v(r['off']['median_ms'])} ms, sandboxed {_v(r['required']['median_ms'])} ms")
    ot = B.get("otel")
    if _err(ot):
        rows.append(["8 OpenTelemetry", "—", _err(ot), "", "not measured", ""])
    else:
        u = ot["smoke"]["us_per_step"]
        pa = ot.get("peers") or {}
        pi = (pa.get("pydantic-ai-instrumented") or {}).get("us_per_step")
        add("8 OpenTelemetry", f"µs/step with smoke-otel (in-memory exporter) ÷ plain loop, {ot['steps']} steps",
            f"{_v(ot['smoke']['ratio'])}× ({_v(u['smoke-otel'])} vs {_v(u['smoke'])})", "≤ 1.5×",
            ot["verdicts"]["ratio"], f"the SDK's own work for the same spans and records: {_v(u['sdk-floor'])} µs/step")
        add("8 OpenTelemetry", "µs/step with smoke-otel vs pydantic-ai instrumented", _v(u["smoke-otel"]),
            "below pydantic-ai", ot["verdicts"]["below_pydantic_ai_instrumented"],
            f"pydantic-ai instrumented {_v(pi)}; plain {_v((pa.get('pydantic-ai') or {}).get('us_per_step'))} µs/step"
            if pi is not None else _err(pa) or "")
    ca = B.get("cache")
    if _err(ca):
        rows.append(["9 Cache", "—", _err(ca), "", "not measured", ""])
    elif ca is not None:
        by = {r["adapter"]: r for r in ca["runs"]}
        add("9 Cache", f"prompt tokens a provider could serve from cache, {ca['steps']}-step run (worst adapter)",
            f"{ca['worst_share']:.1%}", "≥ 90 %", ca["verdicts"]["share"],
            "; ".join(f"{a} {r['share']:.1%} ({len(r['prefix_breaks'])} prefix breaks)" for a, r in by.items()))
    ba = B.get("batch")
    if ba is not None:
        if _err(ba):
            rows.append(["10 Batch", "—", _err(ba), "", "not measured", ""])
        else:
            lo, ra = ba["engines"].get("local", {}), ba["engines"].get("ray", {})
            if not _err(lo):
                add("10 Batch", f"local engine: tasks/s ({ba['tasks']} tasks × {ba['steps']} steps)",
                    _v(lo["tasks_per_s"]), "≥ 50", ba["verdicts"].get("local_tasks_per_s"),
                    f"Ray, 2 workers: {_v(ra.get('tasks_per_s'))} tasks/s" if not _err(ra) else "")
            if not _err(ra):
                add("10 Batch", "Ray engine: overhead per task (median)", f"{_v(ra['overhead_ms_median'])} ms",
                    "≤ 150 ms", ba["verdicts"].get("ray_overhead_ms"),
                    f"local engine {_v(lo.get('overhead_ms_median'))} ms" if not _err(lo) else "")
    so = B.get("store")
    if so is not None:
        if _err(so):
            rows.append(["11 Stores", "—", _err(so), "", "not measured", ""])
        else:
            pg, sq = so["stores"].get("postgres", {}), so["stores"].get("sqlite", {})
            if not _err(pg):
                rows.append(["11 Stores", "PostgreSQL append p50 / p99; load 10,000 messages",
                             f"{_v(pg['append_p50_ms'])} / {_v(pg['append_p99_ms'])} ms; {_v(pg['load_10k_ms'])} ms",
                             "(no target)", "",
                             f"SQLite {_v(sq.get('append_p50_ms'))} / {_v(sq.get('append_p99_ms'))} ms; "
                             f"{_v(sq.get('load_10k_ms'))} ms"])
    hk = B.get("hooks")
    if hk is not None:
        if _err(hk):
            rows.append(["13 Command hooks", "—", _err(hk), "", "not measured", ""])
        else:
            ms = hk["ms_per_call"]
            add("13 Command hooks", "ms a `true` PreToolUse command hook adds per tool call", _v(hk["added_ms"]),
                "≤ 15 ms", hk["verdicts"]["added_ms"],
                f"plain loop {_v(ms['plain'])} ms/call; smoke-hooks with no hook +{_v(hk['plugin_idle_added_ms'])} ms")
    pe = B.get("permission")
    if pe is not None:
        if _err(pe):
            rows.append(["14 Permission", "—", _err(pe), "", "not measured", ""])
        else:
            cold = pe["rows"].get("check, a new command (the parse made in the call)", {})
            add("14 Permission", f"run_command check per call, {pe['command_chars']}-character command, "
                f"{sum(pe['rules'].values())} rules", f"{_v(pe['per_call_us'])} µs", f"≤ {pe['target_us']:g} µs",
                pe["verdict"], f"a new command (parse in the call): {_v(cold.get('median_us'))} µs")
    rm = B.get("realmodel")
    if rm is not None:
        if _err(rm):
            rows.append(["15 Real models", "—", _err(rm), "", "not measured", ""])
        else:
            md = rm["modes"]

            def rate(mode: str) -> str:
                m = md.get(mode)
                return f"{m['success_rate']:.0%} ({m['solved']}/{m['runs']})" if m else "—"

            add("15 Real models", f"tasks solved, constrained ÷ native ({rm['model']})",
                f"{rm['constrained_over_native']}× ({rate('constrained')} vs {rate('native')})", "≥ 2×",
                rm["verdicts"]["constrained_2x_native"], f"inline {rate('inline')}")
            add("15 Real models", "at least one task solved end to end",
                str(sum(m["solved"] for m in md.values())) + " runs solved", "≥ 1",
                rm["verdicts"]["one_task_solved"], "")
    cp = B.get("checkpoint")
    if cp is not None:
        if _err(cp):
            rows.append(["16 Checkpoints", "—", _err(cp), "", "not measured", ""])
        else:
            add("16 Checkpoints", f"ms a checkpoint costs per turn after the first, {cp['files']:,}-file workspace",
                f"{_v(cp['per_turn_ms'])} ms", f"≤ {cp['target_ms']:g} ms", cp["verdict"],
                f"plain scripted turn {_v(cp['plain_turn_ms'])} ms; with checkpoints "
                f"{_v(cp['turn_with_checkpoints_ms'])} ms")
    return _table(["benchmark", "measure", "Smoke", "target", "verdict", "peers, same run"], rows), misses


def sec_startup(s: dict[str, Any]) -> str:
    rows = [[f"`{k}`", v["median_ms"], v["min_ms"], v["max_ms"], v["runs"], v["exit_code"]]
            for k, v in s["commands"].items()]
    out = [_table(["command", "median ms", "min", "max", "runs", "exit"], rows), ""]
    vers = ", ".join(f"{k} {v}" for k, v in (s.get("versions") or {}).items() if v)
    if vers:
        out.append(f"Peers: {vers}. `import …` rows are `python -c \"import …\"` (interpreter start-up included).\n")
    it = s["importtime_smoke_help"]
    out.append(f"`{it['command']}`: {it['total_ms']} ms of imports over {it['modules']} modules. "
               "Top offenders (cumulative, top-level imports):\n")
    out.append(_table(["module", "cumulative ms"], [[f"`{x['module']}`", x["cumulative_ms"]] for x in it["top_cumulative"]]))
    out.append("\nBy own time (self, any depth):\n")
    out.append(_table(["module", "self ms"], [[f"`{x['module']}`", x["self_ms"]] for x in it["top_self"][:8]]))
    it3 = s.get("importtime_smoke_tools")
    if it3:
        out.append(f"\n`{it3['command']}`: {it3['total_ms']} ms of imports over {it3['modules']} modules; top "
                   "cumulative:\n")
        out.append(_table(["module", "cumulative ms"],
                          [[f"`{x['module']}`", x["cumulative_ms"]] for x in it3["top_cumulative"][:10]]))
    it2 = s["importtime_cli_import"]
    out.append(f"\n`{it2['command']}`: {it2['total_ms']} ms over {it2['modules']} modules.\n")
    h = s["heavy_imports"]
    per = {k: v for k, v in (h.get("per_plugin") or {}).items() if v}
    out.append(
        f"Heavy modules in `sys.modules` after `create_plugin_manager()` loads every entry point: "
        f"**{', '.join(h.get('heavy') or []) or 'none'}**; after `smoke --help` (plugin commands added): "
        f"**{', '.join(h.get('smoke_help_path') or []) or 'none'}**; importing each plugin alone: "
        f"**{per or 'none'}** (checked: {', '.join(_heavy_list())}). {h.get('modules', '?')} modules are loaded "
        f"after the plugins; pydantic among them: {h.get('pydantic')}."
    )
    return "\n".join(out)


def _heavy_list() -> list[str]:
    try:
        from bench_startup import HEAVY

        return list(HEAVY)
    except ImportError:
        return ["httpx", "mcp", "starlette", "tiktoken", "jsonschema"]


def sec_loop(lp: dict[str, Any]) -> str:
    rows = []
    for fw, f in lp["frameworks"].items():
        if "error" in f:
            rows.append([fw, "", "", "", "", f["error"]])
            continue
        u = f["us_per_step"]
        rows.append([fw, _v(u["25"]), _v(u["200"]), _v(u["400"]), f["ratio_400_25"], f.get("version")])
    out = [_table(["framework", "25 steps", "200 steps", "400 steps", "400 ÷ 25", "version"], rows)]
    out.append("\nµs per step = wall time of the run ÷ model calls; median of the repetitions "
               f"(Smoke {lp['frameworks'].get('smoke', {}).get('reps', '?')}, peers "
               f"{lp['frameworks'].get('pydantic-ai', {}).get('reps', '?')}).")
    prof = lp["frameworks"].get("smoke", {}).get("profile_200_steps")
    if prof:
        out.append("\nWhere Smoke's time goes (cProfile of one 200-step run without hooks; own time, "
                   "profiler overhead included):\n")
        out.append(_table(["function", "calls", "own ms", "cumulative ms", "share"],
                          [[f"`{r['function']}`", r["calls"], r["own_ms"], r["cumulative_ms"],
                            f"{r['own_share'] * 100:.0f}%"] for r in prof[:10]]))
    return "\n".join(out)


def sec_search(se: dict[str, Any]) -> str:
    t = se["tree"]
    rows = [[f"`{q['pattern']}`", q["matches"], q["files"], q["raw_rg_ms"], q["rg_tool_flags_ms"], q["tool_ms"],
             f"{q['ratio']}×"] for q in se["queries"]]
    out = [f"Tree: {t['files']} files, {t['mb']} MB — `{t['source']}` without `site-packages` and `__pycache__` "
           f"({'hard-linked' if t['hardlinked'] else 'copied'} to a temporary folder). {se['rg_version']}; "
           f"median of {se['runs']} alternating runs.\n",
           _table(["pattern", "matches", "files", "raw rg ms", "rg with the tool's flags ms", "grep tool ms",
                   "tool ÷ raw rg"], rows),
           "\nRaw rg is `rg --line-number --no-heading --regexp PATTERN .` (default settings: parallel "
           "walk, unsorted). \"rg with the tool's flags\" is what the tool runs (`--null --sort path`, its skip "
           "globs, `--hidden`…): `--sort path` makes rg single-threaded, so part of the gap is the price of the "
           "sorted, deterministic output the tool promises."]
    return "\n".join(out)


def sec_concurrency(co: dict[str, Any]) -> str:
    rows = []
    for fw, f in co["frameworks"].items():
        if _err(f):
            rows.append([fw, "", "", "", "", "", _err(f)])
            continue
        rows.append([fw, f["total_s"], f.get("runs_s"), f.get("create_agents_s") or "—", f["rss_growth_mb"],
                     f["worst_lag_ms"], f"{f['completed']}/{co['runs']}"])
    return "\n".join([
        f"{co['runs']:,} runs in one event loop, {co['steps']} steps each (4 no-op tool calls, then text), the "
        f"model awaiting {co['model_delay_ms']:.0f} ms per call. Smoke makes one agent per run (an agent runs one "
        "run at a time); creating them is timed separately, before the runs start, and is part of the total. "
        "pydantic-ai shares one `Agent`.\n",
        _table(["framework", "total s", "runs s", "create agents s", "RSS growth MB", "worst loop lag ms",
                "completed"], rows),
        "\nRSS growth = peak VmRSS (sampled every tick) − VmRSS before the agents are made. Lag = how late a "
        "ticker task awaiting `asyncio.sleep(0.005)` wakes up, during the runs. The floor for the total is "
        f"{co['steps']} × {co['model_delay_ms']:.0f} ms = {co['steps'] * co['model_delay_ms'] / 1000:.2f} s.",
        *_lag_split(co),
    ])


def _lag_split(co: dict[str, Any]) -> list[str]:
    sm = co["frameworks"].get("smoke") or {}
    if "worst_gc_pause_ms" not in sm:
        return []
    return [
        f"\nOf Smoke's worst lag: the longest garbage-collector pause during the runs was {sm['worst_gc_pause_ms']} ms "
        f"(a full pass over every live object of the 1,000 runs), and the worst lag outside the collector's pauses "
        f"{sm['worst_lag_outside_gc_ms']} ms. Runs take turns with timers and I/O (`smoke_core.run.fair`: past a 10 ms "
        "budget without reaching its timers, a run waits for the loop's next heartbeat), so the runs themselves "
        "no longer stall the loop for their whole wave; the collector's pass is not theirs to split. "
        "`smoke-gc-freeze` is the same run with `gc.freeze()` after the agents are made, as a server would call "
        "it after start-up: the collector then leaves the long-lived objects alone (see docs/scale.md)."
    ]


def sec_prompt(pr: dict[str, Any]) -> str:
    rows = [["default system prompt", "", pr["system_prompt_tokens"]]]
    rows += [[f"group `{g}`", ", ".join(f"`{n}`" for n in x["tools"]), x["tokens"]] for g, x in pr["groups"].items()]
    rows += [["**the five groups** (filesystem, search, terminal, git, agent)", f"{pr['five_groups_tools']} tools",
              f"**{pr['five_groups_tokens']:,}**"],
             ["all tool schemas", f"{pr['tools']} tools", pr["tool_schema_tokens"]],
             ["**total: system prompt + all tool schemas**", "", f"**{pr['total_tokens']:,}**"]]
    out = [f"Encoding {pr['encoding']} (tiktoken). Agent created with every installed plugin "
           f"({', '.join(pr['plugins'])}) and a stub provider; schemas serialised as the OpenAI-compatible adapter "
           "sends them (`{\"type\": \"function\", \"function\": {name, description, parameters}}`, "
           "`json.dumps(ensure_ascii=False)`). A group's count is its tools' list encoded alone, so the groups "
           "add up to the whole within a few tokens.\n",
           _table(["part", "tools", "tokens"], rows),
           "\nPer tool (the whole function object; description alone beside it):\n",
           _table(["tool", "group", "tokens", "description tokens"],
                  [[f"`{t['name']}`", t["group"], t["tokens"], t["description_tokens"]] for t in pr["per_tool"]])]
    return "\n".join(out)


def sec_stream(st: dict[str, Any]) -> str:
    rows = [[k if k == "smoke" else "raw httpx + httpx-sse", _v(v["deltas_per_s"]), v["p50_ms"], v["p99_ms"],
             v["max_ms"]] for k, v in st["clients"].items()]
    return "\n".join([
        f"A local SSE server (its own process) sends OpenAI `chat.completion.chunk` events; each delta carries "
        f"`time.monotonic_ns()` taken just before the write. Latency: {st['deltas']:,} deltas, one every "
        f"{st['interval_us'] / 1000:g} ms; latency = arrival at the listener − that timestamp. Throughput: "
        f"{st['burst']:,} deltas back to back, counted between the first and last arrival. Median of {st['reps']} "
        "alternating repetitions. Smoke = `create_agent(..., provider=\"openai-compatible\", base_url=...)` with a "
        "`text.delta` listener; baseline = a raw `httpx` + `httpx-sse` client parsing each event's JSON.\n",
        _table(["client", "deltas/s", "p50 ms", "p99 ms", "max ms"], rows),
        f"\nAdded by Smoke: p50 {st['added_p50_ms']} ms, **p99 {st['added_p99_ms']} ms**; throughput "
        f"{st['throughput_ratio']}× the raw client's.",
    ])


def sec_sandbox(sb: dict[str, Any]) -> str:
    labels = {"tool": "`true` via `run_command`", "direct": "`true` started directly (`prepare` + `subprocess.run`)",
              "test": "`run_test`: the demo project (`python -m unittest`)"}
    rows = []
    for key, label in labels.items():
        off, on = sb["rows"][key]["off"], sb["rows"][key]["required"]
        rows.append([label, off["median_ms"], on["median_ms"], round(on["median_ms"] - off["median_ms"], 2),
                     f"{on['median_ms'] / off['median_ms']:.2f}×", f"{off['min_ms']} / {on['min_ms']}"])
    return "\n".join([
        f"{sb['bwrap_version']} ({sb['bwrap']}), {'as root' if sb.get('running_as_root') else 'unprivileged'}"
        f"{', no nested user namespaces' if sb.get('disable_userns') else ''}. The same command unsandboxed "
        f"(`sandbox.mode: off`) and sandboxed (`required`), alternating: {sb['runs']} runs of `true` each way, "
        f"{sb['test_runs']} test runs each way. Tool rows use a real `ToolContext`; the unsandboxed tool row "
        "includes the /proc scan for leftovers that a sandboxed command does not need (its PID namespace ends "
        f"with it). The one-time probe (`available()`: a real `bwrap … true`) took {sb['probe_ms']} ms.\n",
        _table(["command", "unsandboxed ms", "sandboxed ms", "added ms", "ratio", "min ms (off / on)"], rows),
    ])


def sec_otel(ot: dict[str, Any]) -> str:
    s, p = ot["smoke"], ot.get("peers") or {}
    u = s["us_per_step"]
    rows = [
        ["smoke (plain loop)", _v(u["smoke"]), "", "no plugin"],
        ["smoke + smoke-otel, SDK with in-memory exporters", _v(u["smoke-otel"]), f"{s['ratio']}×",
         "2 spans + 4 histogram records per step"],
        ["smoke + smoke-otel, exemplars off", _v(u.get("smoke-otel-no-exemplars")),
         f"{s.get('ratio_no_exemplars')}×", "the same, the meter provider's exemplar filter off"],
        ["smoke + smoke-otel, no-op providers", _v(u["smoke-otel-noop-providers"]),
         f"{round(u['smoke-otel-noop-providers'] / u['smoke'], 2)}×",
         "the plugin's own work and the hook dispatch, without the SDK's"],
        ["smoke + smoke-otel, nothing configured", _v(u["smoke-otel-unconfigured"]),
         f"{round(u['smoke-otel-unconfigured'] / u['smoke'], 2)}×", "installed, nothing exported: runs are not followed"],
        ["SDK floor (no Smoke)", _v(u["sdk-floor"]), "", "the same spans and records made directly with the SDK"],
        ["SDK floor in context (no Smoke)", _v(u.get("sdk-floor-in-context")), "",
         "the floor with the run's span current for the loop and each span current while it runs"],
    ]
    ops = s.get("opcodes_per_step") or {}
    for name in ("pydantic-ai", "pydantic-ai-instrumented"):
        f = p.get(name) or {}
        rows.append([name, _v(f.get("us_per_step")) if f else _err(p) or "—", "",
                     f"{f.get('spans')} spans per run" if f.get("spans") else ""])
    prof = s.get("profile") or []
    out = [
        f"The loop of benchmark 2 at {ot['steps']} steps (one no-op read-only tool call per step), µs per step, "
        f"median of {s['reps']} interleaved repetitions (the Smoke variants alternate in one process); "
        f"smoke-otel {(s.get('versions') or {}).get('smoke-otel')}, opentelemetry-sdk "
        f"{(s.get('versions') or {}).get('opentelemetry-sdk')}. pydantic-ai "
        f"{p.get('version', '')} runs in its own process, plain and with "
        "`agent.instrument = InstrumentationSettings(tracer_provider=..., meter_provider=..., include_content=False)` "
        "on the same in-memory SDK providers.\n",
        _table(["variant", "µs/step", "÷ plain", "what"], rows),
        f"\nsmoke-otel adds {s['added_us']} µs per step: {s['plugin_own_us']} µs are the plugin's own work and the "
        f"hook dispatch (measured with no-op providers), {s['sdk_in_run_us']} µs the SDK's (span start and end "
        "with the conventional attributes, four histogram records per step). Done alone in a tight loop, that "
        f"SDK work takes {_v(u['sdk-floor'])} µs per step — {u['sdk-floor'] / u['smoke']:.2f}× the whole plain loop "
        "(a fake model, a no-op tool), so the plain loop plus that floor is already "
        f"{s.get('sdk_floor_ratio')}× the plain loop: a ratio ≤ 1.5 would need the OpenTelemetry Python SDK to "
        "record a step's spans and metrics in under half the loop's own time. Of the SDK's share in the run, "
        f"{_v(s.get('exemplars_us'))} µs per step are exemplars (the SDK's default filter offers each histogram "
        "record made under a sampled span to a reservoir; `OTEL_METRICS_EXEMPLAR_FILTER=always_off` turns that "
        "off, at the price of the metric-to-trace links). "
        f"Against a real model call the added time is small: {s['added_us'] / 1000:.2f} ms per step is "
        f"{s['added_us'] / 3000:.2f}% of a 300 ms call.",
    ]
    if ops:
        base = ops["smoke"]
        out += ["\nPython bytecode instructions per step (counted with `sys.settrace` opcode "
                "events; the same on a loaded or a quiet machine):\n",
                _table(["variant", "instructions per step", "÷ plain"],
                       [[name, f"{n:,}", f"{n / base:.2f}×"] for name, n in ops.items()]),
                f"\nThe plain loop, the core's dispatch of the plugin's per-step hooks "
                f"({ops.get('smoke-otel-unconfigured', base) - base:,}) and the SDK's floor in context "
                f"({ops.get('sdk-floor-in-context', 0):,}) already make "
                f"{(ops.get('smoke-otel-unconfigured', base) + ops.get('sdk-floor-in-context', 0)) / base:.2f}× "
                f"the plain loop; smoke-otel's own work above them is "
                f"{ops['smoke-otel'] - ops.get('smoke-otel-unconfigured', base) - ops.get('sdk-floor-in-context', 0):,} "
                "instructions per step."]
    if prof:
        out += ["\nWhere one smoke-otel run's time goes (cProfile own time by area, profiler overhead included):\n",
                _table(["area", "own ms", "share"], [[r["area"], r["own_ms"], f"{r['share'] * 100:.0f}%"]
                                                    for r in prof])]
    return "\n".join(out)


def sec_cache(ca: dict[str, Any]) -> str:
    rows = [[f"`{r['adapter']}`", r["status"], r["requests"], f"{r['prompt_tokens']:,}", f"{r['cacheable_tokens']:,}",
             f"**{r['share']:.1%}**", f"{r['share_after_first']:.1%}", ", ".join(map(str, r["prefix_breaks"])) or "none",
             r["max_cache_markers"]] for r in ca["runs"]]
    return "\n".join([
        f"A {ca['steps']}-step scripted run on the demo project (list, read, grep, todo list, run the tests, edit, "
        "finish) through the real adapters, each against a local server that records the request bodies. Each "
        "prompt is laid out as providers cache it (tools, system prompt, messages; `cache_control` markers and the "
        "routing key aside); the part shared with the previous request's prompt counts as cacheable. Share = "
        f"cacheable ÷ all prompt tokens of the run, the first request counted as uncached; encoding {ca['encoding']}. "
        "A prefix break is a request that does not start with the whole previous prompt.\n",
        _table(["adapter", "run", "requests", "prompt tokens", "cacheable tokens", "share", "share after the first",
                "prefix breaks (request #)", "max `cache_control` markers"], rows),
    ])


def sec_batch(ba: dict[str, Any]) -> str:
    rows = []
    for name, e in ba["engines"].items():
        if _err(e):
            rows.append([name, "", "", "", "", "", "", "", _err(e)])
            continue
        ray_mem = f"{e['ray_processes_peak_rss_mb']} MB" if "ray_processes_peak_rss_mb" in e else "—"
        rows.append([name, e["concurrency"], e["tasks_per_s"], e["overhead_ms_median"], e["overhead_ms_p90"],
                     e["in_task_overhead_ms_median"], e.get("around_task_ms_median", "—"), e["driver_peak_rss_mb"],
                     ray_mem + f"; {e['completed']}/{e['tasks']} completed"])
    return "\n".join([
        f"{ba['tasks']} tasks through `smoke batch` (`run_batch`), {ba['steps']} steps each (4 `write_note` calls, "
        f"then text), the model awaiting {ba['model_delay_ms']} ms per call (`smoke_core.testing.batch_kit`), on a "
        "small git repository: a worktree per task and a diff at the end; sessions in a SQLite file. Ray: a local "
        "cluster of 2 worker processes (`ray.init(num_cpus=2)`, started before the clock).\n",
        _table(["engine", "concurrency", "tasks/s", "overhead ms (median)", "p90", "of which in the task",
                "around the task", "driver peak RSS MB", "Ray processes peak RSS"], rows),
        f"\nOverhead = the time from the engine starting a task (local: a free slot; Ray: submitting it) to its "
        f"result line, minus the {ba['steps']} × {ba['model_delay_ms']} ms the model awaits: the worktree, the "
        "agent, the loop, the session writes, the diff, scheduling and returning the result. \"In the task\" is "
        "the task's own `duration_s` (worktree to diff); \"around the task\" is what the engine adds "
        "(scheduling, shipping the task, returning the result).",
    ])


def sec_store(so: dict[str, Any]) -> str:
    rows = []
    for name, st in so["stores"].items():
        if _err(st):
            rows.append([name, "", "", "", _err(st)])
        else:
            rows.append([name, st["append_p50_ms"], st["append_p99_ms"], st["load_10k_ms"], ""])
    return "\n".join([
        "The same operations on `SQLiteStore` (a file, WAL, `synchronous=NORMAL`) and `PostgresStore` "
        "(smoke-store-postgres, psycopg 3; a PostgreSQL server from the Debian packages on 127.0.0.1 with "
        "`fsync=on`, started for the benchmark): 1,000 appends of an assistant message with a tool call to one "
        "session through the plain (waiting) `append` a run uses, and `load` of a 10,000-message session "
        "(median of 5).\n",
        _table(["store", "append p50 ms", "append p99 ms", "load 10,000 messages ms", "note"], rows),
        "\nA PostgreSQL append is one round trip (the `smoke_append` function) and is committed, on the "
        "server's disk, when it returns; SQLite's WAL append is committed to the file (the OS may still hold it).",
    ])


def sec_layout(la: dict[str, Any]) -> str:
    rows = [[name, v.get("before"), v.get("after"), v.get("after_over_before")] for name, v in la["ms"].items()]
    return "\n".join([
        "Start-up before and after the core moved from one flat folder into sub-packages (issue 27): the same "
        "commands under two virtual environments in one run, alternating round by round (median of "
        f"{la['rounds']} rounds × {la['runs']} runs): the commit before the move and this checkout, each with "
        "every first-party plugin installed. Target: `smoke --help` after ≤ before.\n",
        _table(["command", "before ms", "after ms", "after / before"], rows),
        *(["\nInstructions of one run (valgrind's callgrind, `PYTHONHASHSEED=0`: the same count on every run, "
           "whatever else the machine does):\n",
           _table(["command", "before instructions", "after instructions", "after / before"],
                  [[name, f"{v['before']:,}", f"{v['after']:,}", v["after_over_before"]]
                   for name, v in la["instructions"].items()])] if la.get("instructions") else []),
        f"\n`smoke --help` after ≤ before (instructions where counted): {la['verdict']}.",
    ])


def sec_hooks(hk: dict[str, Any]) -> str:
    ms = hk["ms_per_call"]
    rows = [[v, _v(ms[v]), _v(round(ms[v] - ms["plain"], 3))] for v in ms]
    return "\n".join([
        f"The loop of benchmark 2 ({hk['steps']} steps, one no-op read-only tool call per step), milliseconds per "
        f"tool call, median of {hk['reps']} interleaved repetitions in one process; smoke-hooks "
        f"{(hk.get('versions') or {}).get('smoke-hooks')}. The hook is `true` run as `sh -c true` with the "
        "event's JSON on stdin, its answer read and applied, and its `hook.started` / `hook.completed` events "
        "emitted: what a command hook costs before it does any work of its own.\n",
        _table(["variant", "ms per tool call", "added ms"], rows),
        f"\nA `true` PreToolUse hook adds {_v(hk['added_ms'])} ms per call (target ≤ 15 ms: "
        f"{hk['verdicts']['added_ms']}); almost all of it is starting the process.",
    ])


def sec_permission(pe: dict[str, Any]) -> str:
    rows = [[name, v["median_us"], v["min_us"], v["p95_us"]] for name, v in pe["rows"].items()]
    return "\n".join([
        f"`PermissionGate.decide` for a `run_command` call of a {pe['command_chars']}-character CI command "
        f"({pe['simple_commands']} simple commands, wrappers included) against {pe['rules']['deny']} deny, "
        f"{pe['rules']['ask']} ask and {pe['rules']['allow']} allow rules (decision: {pe['decision']}); "
        f"N={pe['runs']}. The parse is made once per call and shared by every rule; the walk of a command text is "
        "cached, so a repeated command costs the decision plus the per-call checks (where its redirections land, "
        "`env`, control files).\n",
        _table(["step", "median µs", "min µs", "p95 µs"], rows),
        f"\nPer-call check ≤ {pe['target_us']:g} µs: {pe['verdict']}.",
    ])


def sec_realmodel(rm: dict[str, Any]) -> str:
    rows = [[f"`{mode}`", f"{m['solved']}/{m['runs']}", f"{m['success_rate']:.0%}", m["completed"], m["mean_steps"],
             _v(m["mean_tokens"]), m["mean_output_tokens"], m["tool_calls_ok_per_run"], _v(m["mean_wall_s"]),
             ", ".join(f"{k} {n}" for k, n in m["errors"].items()) or "—"] for mode, m in rm["modes"].items()]
    modes = list(rm["modes"])
    tasks = [[f"`{task}`", *[f"{by[m]}/{rm['seeds']}" for m in modes]] for task, by in rm["by_task"].items()]
    return "\n".join([
        f"The harness effect on a real small model: {len(rm['tasks'])} small fixed tasks (answer from a file, find "
        f"a symbol, fix an off-by-one so a test passes, ...) run by {rm['model']} on this machine's CPU "
        f"({rm['server']}, {rm['threads']} thread(s)), in each tool-call mode, with {rm['seeds']} seeds "
        f"(temperature {rm['temperature']}), at most {rm['max_steps']} steps and {rm['max_tokens']} tokens a reply, "
        f"the tools {', '.join(f'`{t}`' for t in rm['tools'])}. A task is solved when its check passes on the "
        "workspace and the answer after the run, whatever the run's status. Same model, same server, same tasks: "
        "only the way tool calls travel differs ([local models](providers.md#local-models)). "
        f"The whole benchmark took {_v(rm['total_s'])} s.\n",
        _table(["mode", "solved", "rate", "runs completed", "steps / run", "tokens / run", "output tokens / run",
                "tool calls that ran / run", "wall s / run", "how the others ended"], rows),
        "\nSolved per task (of the seeds):\n",
        _table(["task", *[f"`{m}`" for m in modes]], tasks),
        f"\nConstrained ÷ native success rate: {rm['constrained_over_native']} (target ≥ 2): "
        f"{_verdict(rm['verdicts']['constrained_2x_native'])}; at least one task solved end to end: "
        f"{_verdict(rm['verdicts']['one_task_solved'])}.",
    ])


def sec_checkpoint(cp: dict[str, Any]) -> str:
    rows = [["first checkpoint (every file hashed once)", cp["first_ms"]],
            ["checkpoint per turn after the first (3 files changed), median", cp["per_turn_ms"]],
            ["same, p95", cp["per_turn_p95_ms"]],
            ["checkpoint when nothing changed (before a mutating call)", cp["unchanged_ms"]],
            ["scripted turn with one edit call, checkpoints off", cp["plain_turn_ms"]],
            ["the same turn, checkpoints on (before the turn and before the call)", cp["turn_with_checkpoints_ms"]]]
    return "\n".join([
        f"A {cp['files']:,}-file workspace (a git repository); checkpoints in the private object store (its own "
        f"`GIT_DIR` and index under the state folder), {cp['turns']} turns; the store holds {cp['store_mb']} MB "
        "after them.\n",
        _table(["step", "ms"], rows),
        f"\nPer turn after the first ≤ {cp['target_ms']:g} ms: {cp['verdict']}.",
    ])


SECTIONS = [
    ("startup", "1. Start-up", sec_startup),
    ("loop", "2. Loop overhead", sec_loop),
    ("search", "3. Search", sec_search),
    ("concurrency", "4. Concurrency", sec_concurrency),
    ("prompt", "5. Prompt overhead", sec_prompt),
    ("stream", "6. Streaming", sec_stream),
    ("sandbox", "7. Command sandbox", sec_sandbox),
    ("otel", "8. OpenTelemetry (smoke-otel)", sec_otel),
    ("cache", "9. Prompt caching", sec_cache),
    ("batch", "10. Batch engines", sec_batch),
    ("store", "11. Session stores", sec_store),
    ("layout", "12. Start-up across the core's move", sec_layout),
    ("hooks", "13. Command hooks (smoke-hooks)", sec_hooks),
    ("permission", "14. Command permission check", sec_permission),
    ("realmodel", "15. Real models: the harness effect", sec_realmodel),
    ("checkpoint", "16. Checkpoints", sec_checkpoint),
]


def render(d: dict[str, Any]) -> str:
    m = d["machine"]
    table, misses = summary(d)
    v = d.get("versions") or {}
    out = [
        "# Performance",
        "",
        "<!-- Generated by bench/run_all.py from bench/results/latest.json; do not edit by hand. -->",
        "",
        "Measured by the scripts in `bench/` (`nox -s bench`). Every figure below comes from **one run**, "
        "Smoke and its peers side by side, so compare within the page: these machines vary from run to run "
        "(the load average and a calibration loop are recorded to show how busy the machine was). "
        "Timings are medians of several repetitions unless said otherwise.",
        "",
        f"- Run: {d['generated_at']}, commit `{d.get('commit') or '?'}`"
        + (" — **quick mode** (fewer repetitions)" if d.get("quick") else "")
        + (f" — partial re-run of {', '.join(d['partial_rerun'])}" if d.get("partial_rerun") else ""),
        f"- Machine: {m.get('cpus')} CPUs ({m.get('cpu')}), {m.get('platform')}, "
        f"{m.get('implementation')} {m.get('python')}",
        f"- Load average at start {m.get('load_average')}, at end {m.get('load_average_after')}; calibration loop "
        f"{m.get('calibration_loop_ms_before')} ms before, {m.get('calibration_loop_ms_after')} ms after "
        "(300k iterations of pure Python; lower = faster machine).",
        f"- Peers: pydantic-ai (pydantic-ai-slim {v.get('pydantic-ai-slim')}), openai-agents "
        f"{v.get('openai-agents')}, llm {v.get('llm')} with llm-anthropic {v.get('llm-anthropic')} and llm-gemini "
        f"{v.get('llm-gemini')}; installed in the bench environment only (`bench/requirements.txt`).",
        f"- Wall time of the whole benchmark run: {d['elapsed_s'].get('total')} s "
        f"({', '.join(f'{k} {x} s' for k, x in d['elapsed_s'].items() if k != 'total')}).",
        "",
        "## Summary",
        "",
        table,
        "",
    ]
    if misses:
        out += ["**Targets missed in this run:**", ""] + [f"- {x}" for x in misses] + [""]
    else:
        out += ["Every measured target was met in this run.", ""]
    for key, title, fn in SECTIONS:
        out += [f"## {title}", ""]
        b = d["benchmarks"].get(key)
        err = _err(b)
        if err:
            out += [f"Not measured in this run: {err}", ""]
            continue
        try:
            out += [fn(b), ""]
        except (KeyError, TypeError) as exc:
            out += [f"(could not render: {type(exc).__name__}: {exc})", ""]
    out += [
        "## Reproduce",
        "",
        "```sh",
        "nox -s bench                      # installs core + every plugin + tiktoken + bench/requirements.txt,",
        "                                  # runs bench/run_all.py, rewrites this page and bench/results/latest.json",
        "nox -s bench -- --quick           # fewer repetitions",
        "nox -s bench -- --only loop,stream  # re-run some benchmarks (the others keep their last figures)",
        "```",
        "",
        "Each benchmark is a script that runs alone in any environment holding core and the plugins (peers "
        "are skipped when not installed) and prints its table; `--json PATH` writes its result:",
        "",
        "```sh",
        "python bench/bench_startup.py      # 1: smoke --help / smoke tools / llm --help / importtime / heavy imports",
        "python bench/bench_loop.py         # 2: --only smoke|smoke-hooks|pydantic-ai|openai-agents|llm",
        "python bench/bench_search.py       # 3: grep tool vs raw rg over the stdlib",
        "python bench/bench_concurrency.py  # 4: --only smoke|pydantic-ai, --runs 1000",
        "python bench/bench_prompt.py       # 5: needs TIKTOKEN_CACHE_DIR holding o200k_base",
        "python bench/bench_stream.py       # 6: local SSE server, Smoke vs raw httpx-sse",
        "python bench/bench_sandbox.py      # 7: bubblewrap vs unsandboxed: `true`, run_test on the demo project",
        "python bench/bench_otel.py         # 8: smoke-otel vs the plain loop, the SDK floor, pydantic-ai instrumented",
        "python bench/bench_cache.py        # 9: cacheable share of prompt tokens over a 30-step run (o200k)",
        "python bench/bench_batch.py        # 10: smoke batch, local engine vs Ray (2 workers): --only local|ray",
        "python bench/bench_store.py        # 11: SQLiteStore vs PostgresStore: append latency, 10,000-message load",
        "python bench/bench_layout.py --before-python VENV/bin/python  # 12: smoke --help before/after the core's move",
        "python bench/bench_hooks.py        # 13: a `true` PreToolUse command hook vs the plain loop",
        "python bench/bench_permission.py   # 14: the run_command permission check, 500-character command",
        "python bench/bench_realmodel.py    # 15: Qwen2.5-Coder-0.5B on llama-server, native / inline / constrained",
        "python bench/bench_checkpoint.py   # 16: checkpoint cost per turn, 5,000-file workspace",
        "python bench/report.py             # re-render this page from bench/results/latest.json",
        "```",
        "",
        "Notes on method:",
        "",
        "- Start-up: wall time of a subprocess (`subprocess.run` + `time.perf_counter`), one warm-up run, then "
        "the median of N runs (hyperfine is not installed).",
        "- Loop: Smoke uses `ScriptedProvider(copy_requests=False)`: the default deep-copies every request so "
        "tests can inspect it, which is test machinery, not loop cost. Fake models never sleep; the tool is an "
        "async no-op marked read-only. The four hook plugins implement one no-op lifecycle hook each "
        "(`before_model_call`, `after_model_call`, `before_tool_call`, `after_tool_call`). pydantic-ai runs with "
        "`UsageLimits(request_limit=None)`; openai-agents with tracing disabled; llm through "
        "`conversation(chain_limit=…).chain(…)`. Agent creation is not timed.",
        "- Each framework, and each benchmark, runs in its own process.",
        "- tiktoken cannot download encodings here: `TIKTOKEN_CACHE_DIR` must hold o200k_base "
        "(`../shared/tokenizers/tiktoken_cache` relative to the repo root; the nox session sets it).",
        "",
    ]
    return "\n".join(out)


def main() -> None:
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench" / "results" / "latest.json"
    data = json.loads(src.read_text())
    (ROOT / "docs" / "performance.md").write_text(render(data))
    print(f"wrote {ROOT / 'docs' / 'performance.md'}")


if __name__ == "__main__":
    main()
