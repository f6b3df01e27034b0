"""glob and grep: behaviour, rg/python parity, hostile paths, an agent loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_search
from smoke_tools_search import _engines

from smoke_core import create_agent
from smoke_core.plugin import ToolDefinition, ToolError, ToolResult
from smoke_core.testing import ScriptedProvider, make_tool_context

SECRET = "SENTINEL-search-4b1c-do-not-leak"
ENGINES = ["rg", "python"]


def _tools() -> dict[str, ToolDefinition]:
    found: list[ToolDefinition] = []
    smoke_tools_search.register_tools(lambda t, group=None: found.append(t))
    return {t.name: t for t in found}


TOOLS = _tools()


@pytest.fixture(params=ENGINES)
def search_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "rg" and _engines.find_rg() is None:
        pytest.fail("rg is missing: the ripgrep wheel is a declared dependency of smoke-tools-search")
    monkeypatch.setenv("SMOKE_SEARCH_ENGINE", request.param)
    return str(request.param)


async def run(ws: Path, name: str, **args: Any) -> ToolResult:
    tool = TOOLS[name]
    assert tool.validate_input(args) is None, tool.validate_input(args)
    result = await tool.execute(args, make_tool_context(ws, tool_name=name))
    assert isinstance(result, ToolResult)
    return result


def make_tree(root: Path) -> Path:
    files = {
        "README.md": "# Demo\nTODO: write docs\n",
        "src/app.py": "import os\n\ndef main():\n    # TODO handle args\n    return os.getcwd()\n",
        "src/util.py": "def helper(x):\n    return x * 2  # todo lower\n\n\nTODO = 1\n",
        "src/web/index.ts": "export const todo = 'TODO';\n",
        "src/web/index.tsx": "// TODO jsx\n",
        "src/a.b/dots.txt": "TODO in dotted dir\n",
        "docs/guide.txt": "line\n" * 30 + "TODO far down\n" + "line\n" * 5,
        "notes/.hidden.txt": "TODO hidden file\n",
        "logs/app.log": "TODO ignored by gitignore\n",
        "logs/keep.log": "TODO re-included\n",
        "gen/out.txt": "TODO generated\n",
        "node_modules/pkg/index.js": "TODO in node_modules\n",
        ".venv/lib.py": "TODO in venv\n",
        "build/x.txt": "TODO in build\n",
        "pkg/dist/y.txt": "TODO in nested dist\n",
        "pkg/__pycache__/z.pyc.txt": "TODO cache\n",
        ".smoke/runs/r/out.txt": "TODO smoke artefact\n",
        "sub/.gitignore": "local.txt\n",
        "sub/local.txt": "TODO locally ignored\n",
        "sub/kept.txt": "TODO kept\n",
        "crlf.txt": "TODO windows\r\nsecond\r\n",
        "latin1.txt": "caf\xe9 TODO\n",
        "unicode.txt": "naïve TODO — ünïcödé\n",
        "long.txt": "TODO " + "x" * 1000 + "\n",
        "Upper.txt": "todo mixed Case\nToDo\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if rel == "latin1.txt":
            p.write_bytes(text.encode("latin-1"))
        else:
            p.write_bytes(text.encode("utf-8"))
    (root / ".gitignore").write_text("*.log\n!keep.log\ngen/\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("TODO in git\n")
    (root / "blob.bin").write_bytes(b"TODO\x00\x01\x02binary")
    for i in range(150):
        (root / "many" / f"f{i:03}.txt").parent.mkdir(exist_ok=True)
        (root / "many" / f"f{i:03}.txt").write_text(f"needle {i}\n")
    return root


# ---------------------------------------------------------------- registration


def test_registers_glob_and_grep():
    assert set(TOOLS) == {"glob", "grep"} and smoke_tools_search.__all__ == ["TOOL_NAMES", "register_tools"]
    for tool in TOOLS.values():
        assert tool.group == "search" and tool.annotations.read_only_hint is True
        pres = tool.presentation_dict()
        assert pres["icon"] and pres["label"] and pres["group"] == "search"
    code = "import sys, smoke_tools_search; print([m for m in ('smoke_tools_search._tools', 'pathspec') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------- grep


async def test_grep_finds_sorted_matches_and_skips(tmp_path: Path, search_engine: str):
    ws = make_tree(tmp_path)
    result = await run(ws, "grep", pattern="TODO", limit=500)
    text = result.text_content()
    assert result.data["engine"] == search_engine
    assert "src/app.py:4:    # TODO handle args" in text
    assert "notes/.hidden.txt:1:TODO hidden file" in text
    assert "logs/keep.log:1:" in text and "sub/kept.txt:1:" in text
    for skipped in ("node_modules", ".venv", "build/", "pkg/dist", "__pycache__", ".smoke", ".git/",
                    "app.log", "gen/out", "local.txt", "blob.bin"):
        assert skipped not in text, skipped
    assert "crlf.txt:1:TODO windows\n" in text  # CR stripped
    assert "latin1.txt:1:caf\ufffd TODO" in text
    paths = [line.split(":", 1)[0] for line in text.splitlines()[1:]]
    assert paths == sorted(paths, key=lambda p: p.split("/"))
    assert "... [1005 chars]" in text


async def test_grep_options(tmp_path: Path, search_engine: str):
    ws = make_tree(tmp_path)
    plain = (await run(ws, "grep", pattern="todo", path="Upper.txt")).text_content()
    assert "Upper.txt:1:todo mixed Case" in plain and "ToDo" not in plain
    folded = (await run(ws, "grep", pattern="todo", path="Upper.txt", case_insensitive=True)).text_content()
    assert "Upper.txt:2:ToDo" in folded
    ts = (await run(ws, "grep", pattern="TODO", include="*.{ts,tsx}")).text_content()
    assert "src/web/index.ts:1:" in ts and "src/web/index.tsx:1:" in ts and "app.py" not in ts
    scoped = (await run(ws, "grep", pattern="TODO", path="src", include="web/*.ts")).text_content()
    assert scoped.count("\n") == 1 and "src/web/index.ts:1:" in scoped
    ctx = (await run(ws, "grep", pattern="far down", path="docs", context=2)).text_content()
    assert ctx.splitlines()[1:] == [
        "docs/guide.txt-29-line", "docs/guide.txt-30-line", "docs/guide.txt:31:TODO far down",
        "docs/guide.txt-32-line", "docs/guide.txt-33-line",
    ]
    none = await run(ws, "grep", pattern="zzz-nothing")
    assert none.is_error is False and "No matches" in none.text_content()


async def test_grep_bounded_output(tmp_path: Path, search_engine: str):
    ws = make_tree(tmp_path)
    result = await run(ws, "grep", pattern="needle", limit=10)
    text = result.text_content()
    assert text.startswith("150 matches in 150 files (showing 10):")
    assert "many/f009.txt:1:needle 9" in text and "f010" not in text
    assert text.rstrip().endswith("[140 more matches not shown; narrow the search with path or include, or raise limit]")
    big = tmp_path / "huge"
    big.mkdir()
    (big / "wide.txt").write_text(("needle " + "y" * 290 + "\n") * 1500)
    wide = await run(ws, "grep", pattern="needle", path="huge", limit=2000)
    assert len(wide.text_content()) < 50_000 and "more matches not shown" in wide.text_content()


async def test_grep_invalid_regex_is_a_tool_error(tmp_path: Path, search_engine: str):
    ws = make_tree(tmp_path)
    with pytest.raises(ToolError) as info:
        await run(ws, "grep", pattern="foo(")
    message = str(info.value)
    assert "invalid search pattern" in message
    assert ("unclosed group" in message) if search_engine == "rg" else ("missing )" in message)
    with pytest.raises(ToolError, match="binary"):
        await run(ws, "grep", pattern="TODO", path="blob.bin")


# ---------------------------------------------------------------- glob


async def test_glob(tmp_path: Path, search_engine: str):
    ws = make_tree(tmp_path)
    py = (await run(ws, "glob", pattern="*.py")).text_content().splitlines()
    assert py == ["src/app.py", "src/util.py"]
    deep = (await run(ws, "glob", pattern="src/**/*.ts*")).text_content().splitlines()
    assert deep == ["src/web/index.ts", "src/web/index.tsx"]
    rel = (await run(ws, "glob", pattern="web/index.{ts,tsx}", path="src")).text_content().splitlines()
    assert rel == ["src/web/index.ts", "src/web/index.tsx"]
    logs = (await run(ws, "glob", pattern="**/*.log")).text_content().splitlines()
    assert logs == ["logs/keep.log"]
    many = (await run(ws, "glob", pattern="many/*.txt", limit=5)).text_content().splitlines()
    assert many[:5] == [f"many/f{i:03}.txt" for i in range(5)]
    assert many[5] == "[145 more matches not shown; use a narrower pattern or raise limit]"
    assert "No files match" in (await run(ws, "glob", pattern="*.nothing")).text_content()


# ---------------------------------------------------------------- parity


async def test_rg_and_python_engines_give_identical_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    assert _engines.find_rg() is not None
    ws = make_tree(tmp_path)
    queries: list[tuple[str, dict[str, Any]]] = [
        ("grep", {"pattern": "TODO", "limit": 1000}),
        ("grep", {"pattern": "todo", "case_insensitive": True, "limit": 1000}),
        ("grep", {"pattern": "TODO", "context": 2, "limit": 1000}),
        ("grep", {"pattern": "TODO", "context": 1, "limit": 7}),
        ("grep", {"pattern": r"^\s+return\b", "include": "*.py"}),
        ("grep", {"pattern": "needle [0-9]{2}$", "path": "many", "limit": 20}),
        ("grep", {"pattern": "TODO", "path": "sub"}),
        ("grep", {"pattern": "TODO", "path": "logs"}),
        ("grep", {"pattern": "ünï|naïve"}),
        ("grep", {"pattern": "TODO", "path": "src/app.py", "context": 3}),
        ("glob", {"pattern": "*"}),
        ("glob", {"pattern": "**/*.txt", "limit": 1000}),
        ("glob", {"pattern": "*.log", "path": "logs"}),
        ("glob", {"pattern": "sub/*"}),
    ]
    outputs: dict[str, list[str]] = {}
    for engine in ENGINES:
        monkeypatch.setenv("SMOKE_SEARCH_ENGINE", engine)
        outputs[engine] = []
        for name, args in queries:
            result = await run(ws, name, **args)
            assert result.data["engine"] == engine
            outputs[engine].append(result.text_content())
    for query, rg_out, py_out in zip(queries, outputs["rg"], outputs["python"], strict=False):
        assert rg_out == py_out, query
    assert all("No matches" not in o and "No files" not in o for o in outputs["rg"])


def test_engine_switch(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SMOKE_SEARCH_ENGINE", "python")
    assert _engines.choose_engine() == ("python", None)
    monkeypatch.setenv("SMOKE_SEARCH_ENGINE", "nonsense")
    with pytest.raises(ToolError, match="rg, python or auto"):
        _engines.choose_engine()
    monkeypatch.delenv("SMOKE_SEARCH_ENGINE")
    monkeypatch.setattr(_engines, "ENGINE", "python")
    assert _engines.choose_engine()[0] == "python"
    monkeypatch.setattr(_engines, "ENGINE", None)
    monkeypatch.setattr(_engines, "find_rg", lambda: None)  # rg not installed: the fallback is used
    assert _engines.choose_engine() == ("python", None)


# ---------------------------------------------------------------- hostile paths


def _hostile(ws: Path, outside: Path) -> list[str]:
    base = [
        "..", "../", "../outside", "../outside/secret.txt", str(outside), str(outside / "secret.txt"),
        f"{ws}/../outside", "link_out", "link_out/", "link_file", "chain1", "chain1/secret.txt", "loop1",
        "sub/../../outside", "./../outside", "~", "~/", "~root", "..%2Foutside", "%2e%2e/outside",
        "..\\outside", "\uff0e\uff0e/outside", "\u2025/outside", "\x00", "src\x00/../..", "\udcff..", "\ud800",
        "a" * 5000, "../" * 40 + "etc", "/etc", "/", "//", "/proc/self/root" + str(outside), "/root", "/tmp",
        "file://" + str(outside), " ../outside ", "src/../../outside", "abs_root/etc",
    ]
    out: list[str] = []
    for b in base:
        out.append(b)
        if not b.startswith(("/", "~", "\x00")) and b.strip():
            out += ["./" + b, "src/" + b, "src//./" + b, b + "/.", b + "/src"]
    return out


async def test_hostile_paths_never_leave_the_workspace(tmp_path: Path, search_engine: str):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    make_tree(ws)
    outside.mkdir()
    (outside / "secret.txt").write_text(f"TODO {SECRET}\n")
    (outside / f"{SECRET}.py").write_text("TODO\n")
    links = {"link_out": outside, "link_file": outside / "secret.txt", "chain1": ws / "chain2",
             "chain2": "../outside", "loop1": ws / "loop2", "loop2": ws / "loop1", "abs_root": Path("/")}
    for name, target in links.items():
        (ws / name).symlink_to(target)
    before = {p: p.read_bytes() for p in outside.iterdir()}
    paths = _hostile(ws, outside)
    assert len(paths) >= 150
    calls = 0
    for path in paths:
        for name, args in (("grep", {"pattern": "TODO", "path": path, "limit": 2000}),
                           ("grep", {"pattern": SECRET[:8], "path": path}),
                           ("glob", {"pattern": "**/*", "path": path, "limit": 2000})):
            calls += 1
            try:
                result = await TOOLS[name].execute(args, make_tool_context(ws, tool_name=name))
                text = json.dumps(result.model_dump(), ensure_ascii=False)
            except ToolError as exc:
                text = str(exc)
            assert SECRET not in text, (name, path)
    assert calls >= 300
    # the workspace itself is searched without following the links out
    whole = (await run(ws, "grep", pattern="TODO", limit=2000)).text_content()
    assert SECRET not in whole and "link_out" not in whole and "chain1" not in whole
    assert {p: p.read_bytes() for p in outside.iterdir()} == before
    assert sorted(os.listdir(tmp_path)) == ["outside", "ws"]


# ---------------------------------------------------------------- agent loop


async def test_agent_loop_uses_search_tools(tmp_path: Path):
    ws = make_tree(tmp_path)
    provider = ScriptedProvider([
        {"tool_calls": [{"name": "glob", "input": {"pattern": "*.py"}},
                        {"name": "grep", "input": {"pattern": "def main", "include": "*.py"}}]},
        {"tool_calls": [{"name": "grep", "input": {"pattern": "("}}]},
        "main() is in src/app.py",
    ])
    agent = create_agent(ws, provider=provider, autoload_plugins=False, plugins=[smoke_tools_search],
                         auto_approve=True)
    result = await agent.run("where is main?")
    assert result.status == "completed"
    blocks = [b for m in result.messages if m["role"] == "tool" for b in m["content"] if b["type"] == "tool_result"]
    assert [b["is_error"] for b in blocks] == [False, False, True]
    texts = [json.dumps(b) for b in blocks]
    assert "src/app.py" in texts[0] and "src/app.py:3:def main():" in texts[1]
    assert {t["name"] for t in provider.requests[0].tools} >= {"glob", "grep"}


async def test_unsorted_rg_run_is_put_in_the_walkers_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """rg runs multi-threaded and unsorted; the files must still come out in
    the order of the Python walker (depth first, names by bytes)."""
    assert _engines.find_rg() is not None
    ws = tmp_path / "order"
    names = ["a/x.txt", "a-b/x.txt", "a.b/x.txt", "a_b/x.txt", "A/x.txt", "ab.txt", "a0/x.txt",
             "z/y/x.txt", "z-y/x.txt", "Z.txt", "é/x.txt", "a/b/c/d.txt"]
    for i in range(40):  # enough files that rg's threads finish out of order
        names.append(f"bulk/f{i:03d}/n{(i * 7) % 40}.txt")
    for name in names:
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("find me\n" * 3)
    outputs = {}
    for engine in ENGINES:
        monkeypatch.setenv("SMOKE_SEARCH_ENGINE", engine)
        outputs[engine] = (await run(ws, "grep", pattern="find me", limit=1000)).text_content()
    assert outputs["rg"] == outputs["python"]
    assert outputs["rg"].index("a/x.txt") < outputs["rg"].index("a-b/x.txt")  # component order, not string order
