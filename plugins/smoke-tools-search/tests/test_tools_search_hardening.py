"""Hostile input for glob and grep (issue 21): glob bombs never hold the
event loop, secret-looking files stay out of results unless named, the two
engines agree on ``include`` (``!x`` too), and odd patterns get one clear
sentence instead of a crash or a warning."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_search
from smoke_tools_search import _engines, _glob, _tools, _walk

from smoke_core.plugin import ToolDefinition, ToolError, ToolResult, looks_secret
from smoke_core.testing import make_tool_context

ENGINES = ["rg", "python"]
CANARY = "CANARY-hardening-51f2"


def _tools_by_name() -> dict[str, ToolDefinition]:
    found: list[ToolDefinition] = []
    smoke_tools_search.register_tools(lambda t, group=None: found.append(t))
    return {t.name: t for t in found}


TOOLS = _tools_by_name()


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


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


# ---------------------------------------------------------------- glob bombs


def deep_tree(root: Path, per_folder: int = 50) -> Path:
    """40 x ``per_folder`` files in folders up to 24 deep: enough for ``**`` to be costly."""
    for i in range(40):
        folder = root.joinpath(*[f"d{j}" for j in range(i % 25)])
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(per_folder):
            (folder / f"f{i}_{k}.py").write_text("x\n")
    (root / "ab" / "a").mkdir(parents=True)
    (root / "ab" / "a" / "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac").write_text("x\n")
    return root


HOSTILE_GLOBS = [
    "{a,b}" * 19,  # 524,288 alternatives: refused before anything is built
    "**/" * 14 + "x",
    "**/" * 25 + "*.py",
    "*a" * 40 + "b",  # backtracking bomb inside one name
    "**/" + "*a" * 30 + "c",
    "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}/**/" + "*d*" * 8,  # 256 alternatives, the cap
    "/".join(["**", "d1", "**", "d2", "**", "d3", "**", "*.py"] * 6),
    "[[[[[[[[[[" * 50,
]


@pytest.mark.slow
async def test_hostile_globs_never_block_the_event_loop(tmp_path: Path, search_engine: str):
    """A ticker task measures how late the loop wakes it while each hostile
    glob runs: every glob ends (with a result or one clear error) and the
    loop is never held for long. The bound is generous; the measured figure
    is a few milliseconds (it was 11.7 s to 120 s+ before)."""
    ws = deep_tree(tmp_path)
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = loop.time()
        while not done.is_set():
            await asyncio.sleep(0.002)
            now = loop.time()
            lags.append(now - last - 0.002)
            last = now

    task = asyncio.create_task(ticker())
    outcomes: list[str] = []
    started = time.monotonic()
    try:
        for pattern in HOSTILE_GLOBS:
            try:
                result = await asyncio.wait_for(
                    TOOLS["glob"].execute({"pattern": pattern}, make_tool_context(ws, tool_name="glob")), 60
                )
                outcomes.append(result.text_content())
            except ToolError as exc:
                outcomes.append(f"error: {exc}")
    finally:
        done.set()
        await task
    assert time.monotonic() - started < 60
    assert len(lags) > 10
    assert max(lags) < 0.25, f"the event loop was held for {max(lags) * 1000:.0f} ms"
    assert outcomes[0].startswith("error: the pattern expands to more than 256 alternatives")
    assert outcomes[1].startswith("No files match")
    assert "f39_49.py" not in outcomes[2] and "more matches not shown" in outcomes[2]
    assert outcomes[4] == "ab/a/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac"


async def test_repeated_globstars_collapse_to_one(tmp_path: Path, search_engine: str):
    ws = deep_tree(tmp_path, per_folder=2)
    once = (await run(ws, "glob", pattern="**/d3/**/*.py", limit=2000)).text_content()
    many = (await run(ws, "glob", pattern="**/**/**/d3/**/**/**/**/*.py", limit=2000)).text_content()
    assert once == many and "d0/d1/d2/d3/f4_1.py" in once
    assert _glob.normalise("./**/**//**/a/**/**") == "**/a/**"


def test_brace_expansion_is_capped_before_it_is_built():
    assert _glob.expand_braces("a{b,c{d,e}}f") == ["abf", "acdf", "acef"]
    assert len(_glob.expand_braces("{a,b}" * 8)) == 256
    started = time.perf_counter()
    with pytest.raises(ToolError, match="more than 256 alternatives"):
        _glob.expand_braces("{a,b,c,d}" * 40)  # 4**40 alternatives
    assert time.perf_counter() - started < 1.0  # (not a speed test: the old code never returned)


async def test_glob_pattern_length_and_malformed_classes(tmp_path: Path, search_engine: str):
    ws = write(tmp_path, {"a.py": "x\n", "b1.py": "x\n", "11.py": "x\n"})
    with pytest.raises(ToolError, match="the glob pattern is 5,000 characters long; the limit is 1,000"):
        await run(ws, "glob", pattern="*" * 5000)
    with pytest.raises(ToolError, match=r"unknown character class \[:nope:\]"):
        await run(ws, "glob", pattern="[[:nope:]].py")
    with pytest.raises(ToolError, match="invalid glob pattern"):
        await run(ws, "glob", pattern="[z-a].py")
    alpha = (await run(ws, "glob", pattern="[[:alpha:]]*.py")).text_content().splitlines()
    assert alpha == ["a.py", "b1.py"]


async def test_glob_time_budget_and_match_cap(tmp_path: Path, search_engine: str, monkeypatch: pytest.MonkeyPatch):
    ws = deep_tree(tmp_path, per_folder=2)
    monkeypatch.setattr(_tools, "GLOB_MATCH_CAP", 30)
    capped = await run(ws, "glob", pattern="**/*.py", limit=10)
    assert capped.data["capped"] is True and capped.data["total"] == 30
    assert capped.text_content().splitlines()[-1] == (
        "[at least 20 more matches not shown; use a narrower pattern or raise limit]"
    )
    monkeypatch.setattr(_tools, "GLOB_TIME_BUDGET", 0.0)
    late = await run(ws, "glob", pattern="**/*.py")
    assert late.data["timed_out"] is True
    assert "[stopped after 0 s (the time budget); the list is partial" in late.text_content()


# ---------------------------------------------------------------- secrets


def secret_tree(root: Path) -> Path:
    return write(root, {
        "app.py": "TOKEN = load()\n",
        ".env": f"TOKEN={CANARY}\n",
        ".env.local": f"TOKEN={CANARY}\n",
        "config/.env.production": f"TOKEN={CANARY}\n",
        "certs/server.pem": f"TOKEN {CANARY}\n",
        "certs/readme.txt": "TOKEN docs\n",
        "home/.ssh/config": f"TOKEN {CANARY}\n",
        "deploy/credentials.json": f'{{"TOKEN": "{CANARY}"}}\n',
        "deploy/secrets.yaml": f"TOKEN: {CANARY}\n",
        "Keys.PEM/inner.txt": f"TOKEN {CANARY}\n",
        ".smoke/runs/r1/out.txt": "TOKEN from a run\n",
    })


async def test_grep_skips_secret_looking_files_unless_named(tmp_path: Path, search_engine: str):
    ws = secret_tree(tmp_path)
    everywhere = (await run(ws, "grep", pattern="TOKEN", limit=500)).text_content()
    assert CANARY not in everywhere
    assert "app.py:1:" in everywhere and "certs/readme.txt:1:" in everywhere
    assert ".smoke" not in everywhere
    included = (await run(ws, "grep", pattern="TOKEN", include=".env*")).text_content()
    assert CANARY not in included and "not searched unless path names them" in included
    sub = (await run(ws, "grep", pattern="TOKEN", path="config")).text_content()
    assert CANARY not in sub
    # named by path: searched (and the permission gate asks, as the path looks secret)
    named = (await run(ws, "grep", pattern="TOKEN", path=".env")).text_content()
    assert f".env:1:TOKEN={CANARY}" in named
    ssh = (await run(ws, "grep", pattern="TOKEN", path="home/.ssh")).text_content()
    assert f"home/.ssh/config:1:TOKEN {CANARY}" in ssh
    # the harness's own folder is searched when asked for by path
    assert "out.txt:1:TOKEN from a run" in (await run(ws, "grep", pattern="TOKEN", path=".smoke")).text_content()


async def test_grep_refuses_a_secret_reached_under_another_name(tmp_path: Path, search_engine: str):
    ws = secret_tree(tmp_path)
    (ws / "innocent.txt").symlink_to(ws / ".env")
    (ws / "keys").symlink_to(ws / "home" / ".ssh")
    with pytest.raises(ToolError, match=r"looks like it holds secrets \(\.env\); to search it, give its own path"):
        await run(ws, "grep", pattern="TOKEN", path="innocent.txt")
    with pytest.raises(ToolError, match=r"\(\.ssh\)"):
        await run(ws, "grep", pattern="TOKEN", path="keys")
    with pytest.raises(ToolError, match=r"give its own path \('Keys.PEM'\)"):
        await run(ws, "grep", pattern="TOKEN", path="Keys.PEM/inner.txt")


async def test_glob_lists_secret_files_only_when_named(tmp_path: Path, search_engine: str):
    ws = secret_tree(tmp_path)
    result = await run(ws, "glob", pattern="**/*")
    lines = result.text_content().splitlines()
    assert "app.py" in lines and "certs/readme.txt" in lines
    assert not any(".env" in line or ".pem" in line.lower() or ".ssh" in line for line in lines[:-1])
    assert lines[-1].startswith("[8 secret-looking file(s) not listed (.env, .env.local, ")
    assert not any(".smoke" in line for line in lines)
    assert (await run(ws, "glob", pattern=".env*")).text_content().splitlines() == [
        ".env", ".env.local", "config/.env.production"]
    assert (await run(ws, "glob", pattern="**/*.pem")).text_content().splitlines() == ["certs/server.pem"]
    assert (await run(ws, "glob", pattern="*", path="home/.ssh")).text_content() == "home/.ssh/config"
    assert (await run(ws, "glob", pattern="*", path=".smoke")).text_content() == ".smoke/runs/r1/out.txt"


@pytest.mark.parametrize("name", [
    ".env", ".ENV", ".env.local", ".env.production.local", ".netrc", ".pgpass", ".npmrc", ".pypirc", "id_rsa",
    "id_ed25519.pub", "id_dsa", "credentials", "credentials.json", "secret.yaml", "secrets.toml", "Secret.yml",
    "server.pem", "tls.KEY", "store.p12", "cert.pfx", "app.keystore", "app.jks", ".ssh", ".aws", ".gnupg",
    ".kube", "env", "environment.py", "keys.txt", "id_rsa2", "credential", "secrets.txt", "key.py", "pem",
    ".envrc", "my.env", "ssh", ".SSH", "monkey.jks.bak",
])
def test_rg_secret_globs_agree_with_looks_secret(name: str, tmp_path: Path):
    """The rg exclusion globs and the permission gate's looks_secret must
    name the same files (rg reads nothing looks_secret would hide)."""
    names = _walk.SECRET_NAME_GLOBS
    by_glob = any(_glob.compile_glob(g)(name.lower()) for g in names) or name in _walk.SECRET_DIR_GLOBS
    assert by_glob == looks_secret(name), name
    (tmp_path / name).write_text("x\n")
    rg = _engines.find_rg()
    assert rg is not None
    argv = [rg, "--files", *_engines._rg_common(tmp_path, "", skip_secrets=True)]
    listed = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True).stdout.split()
    assert (name not in listed) == looks_secret(name), name


# ---------------------------------------------------------------- include parity


def include_tree(root: Path) -> Path:
    write(root, {
        "a.py": "hit\n", "b.md": "hit\n", "x": "hit\n", "!x": "hit\n", "sub/x": "hit\n", "sub/c.py": "hit\n",
        "lib/x/inner.txt": "hit\n", "tests/test_a.py": "hit\n", "tests/data.md": "hit\n", "b1.py": "hit\n",
        "11.py": "hit\n", "ignored.py": "hit\n", "docs/guide.md": "hit\n", "docs/x.py.md": "hit\n",
        "Upper.PY": "hit\n", ".hidden.py": "hit\n", "we ird.py": "hit\n",
    })
    (root / ".gitignore").write_text("ignored.py\n")
    return root


INCLUDE_TABLE: list[tuple[str, set[str]]] = [
    ("*.py", {"a.py", "sub/c.py", "tests/test_a.py", "b1.py", "11.py", ".hidden.py", "we ird.py"}),
    ("*.{py,md}", {"a.py", "sub/c.py", "tests/test_a.py", "b1.py", "11.py", ".hidden.py", "we ird.py", "b.md",
                   "tests/data.md", "docs/guide.md", "docs/x.py.md"}),
    ("x", {"x", "sub/x"}),
    ("!x", {"a.py", "b.md", "!x", "sub/c.py", "tests/test_a.py", "tests/data.md", "b1.py", "11.py",
            "docs/guide.md", "docs/x.py.md", "Upper.PY", ".hidden.py", "we ird.py", ".gitignore"}),
    ("!tests", {"a.py", "b.md", "x", "!x", "sub/x", "sub/c.py", "lib/x/inner.txt", "b1.py", "11.py", "docs/guide.md",
                "docs/x.py.md", "Upper.PY", ".hidden.py", "we ird.py", ".gitignore"}),
    ("!*.{py,md}", {"x", "!x", "sub/x", "lib/x/inner.txt", "Upper.PY", ".gitignore"}),
    ("[[:alpha:]]*.py", {"a.py", "sub/c.py", "tests/test_a.py", "b1.py", "we ird.py"}),
    ("[!a]*.py", {"sub/c.py", "tests/test_a.py", "b1.py", "11.py", ".hidden.py", "we ird.py"}),
    ("tests/*", {"tests/test_a.py", "tests/data.md"}),
    ("!tests/*.md", {"a.py", "b.md", "x", "!x", "sub/x", "sub/c.py", "lib/x/inner.txt", "tests/test_a.py", "b1.py",
                     "11.py", "docs/guide.md", "docs/x.py.md", "Upper.PY", ".hidden.py", "we ird.py",
                     ".gitignore"}),
    ("**/*.py", {"a.py", "sub/c.py", "tests/test_a.py", "b1.py", "11.py", ".hidden.py", "we ird.py"}),
    ("we ird.py", {"we ird.py"}),
]


async def test_include_means_the_same_to_both_engines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    ws = include_tree(tmp_path)
    for include, expected in INCLUDE_TABLE:
        seen: dict[str, set[str]] = {}
        for engine in ENGINES:
            monkeypatch.setenv("SMOKE_SEARCH_ENGINE", engine)
            result = await run(ws, "grep", pattern="hit|ignored", include=include, limit=2000)
            assert result.data["engine"] == engine
            seen[engine] = {line.rsplit(":1:", 1)[0] for line in result.text_content().splitlines()[1:]}
        assert seen["rg"] == seen["python"], include
        assert seen["rg"] == expected, include


async def test_include_bang_alone_is_a_clear_error(tmp_path: Path, search_engine: str):
    ws = include_tree(tmp_path)
    with pytest.raises(ToolError, match="include '!' needs a glob after it"):
        await run(ws, "grep", pattern="hit", include="!")


# ---------------------------------------------------------------- odd patterns


async def test_huge_grep_pattern_gets_one_clear_sentence(tmp_path: Path, search_engine: str):
    ws = include_tree(tmp_path)
    with pytest.raises(ToolError) as info:
        await run(ws, "grep", pattern="a" * (1 << 20))
    message = str(info.value)
    assert message.startswith("the pattern is 1,048,576 characters long; grep takes patterns of up to 10,000")
    assert "Argument list" not in message
    # just under the limit works on both engines
    assert "No matches" in (await run(ws, "grep", pattern="q" * 10_000)).text_content()
    # an include no file passes is "no matches" (rg exits 2 and says nothing under --no-messages)
    assert "No matches" in (await run(ws, "grep", pattern="hit", include="*.nothing")).text_content()


async def test_posix_classes_in_grep_work_without_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """pytest turns warnings into errors here, so a FutureWarning from ``re`` would fail the call."""
    ws = write(tmp_path, {"a.txt": "abc123\n", "b.txt": "123\n", "c.txt": "x-y\n", "d.txt": "[b]\n"})
    queries: list[dict[str, Any]] = [
        {"pattern": "^[[:alpha:]]+[[:digit:]]+$"},
        {"pattern": "^[^[:alpha:]]+$"},
        {"pattern": "[[:punct:]]"},
        {"pattern": r"[x[y]]-"},
        {"pattern": "[[:alpha:]]", "include": "[[:alpha:]].txt"},
    ]
    outputs: dict[str, list[str]] = {}
    for engine in ENGINES:
        monkeypatch.setenv("SMOKE_SEARCH_ENGINE", engine)
        outputs[engine] = [(await run(ws, "grep", **q)).text_content() for q in queries]
    assert outputs["rg"] == outputs["python"]
    assert outputs["rg"][0] == "1 matches in 1 files:\na.txt:1:abc123"
    assert outputs["rg"][1] == "1 matches in 1 files:\nb.txt:1:123"
    assert outputs["rg"][2] == "2 matches in 2 files:\nc.txt:1:x-y\nd.txt:1:[b]"
    assert outputs["rg"][3] == "1 matches in 1 files:\nc.txt:1:x-y"


async def test_python_engine_refuses_class_set_operations_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    ws = write(tmp_path, {"a.txt": "abc\n"})
    monkeypatch.setenv("SMOKE_SEARCH_ENGINE", "python")
    with pytest.raises(ToolError, match=r"the class set operation '&&' needs the rg engine"):
        await run(ws, "grep", pattern="[a-z&&[^b]]")
    with pytest.raises(ToolError, match=r"negated class \[:\^alpha:\] needs the rg engine"):
        await run(ws, "grep", pattern="[[:^alpha:]]")
    monkeypatch.setenv("SMOKE_SEARCH_ENGINE", "rg")
    assert "a.txt:1:abc" in (await run(ws, "grep", pattern="[a-z&&[^b]]")).text_content()


# ---------------------------------------------------------------- special files and the deadline (issue 28)


@pytest.mark.parametrize("kind", ["fifo", "socket"])
async def test_grep_and_glob_refuse_a_fifo_or_a_socket_named_as_path(tmp_path: Path, search_engine: str,
                                                                   kind: str) -> None:
    import os
    import socket

    ws = write(tmp_path / "ws", {"src/a.py": "needle\n"})
    special = ws / "src" / "trap"
    server = None
    if kind == "fifo":
        os.mkfifo(special)  # a reader blocks until a writer opens it: nobody ever will
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(special))
    try:
        for name, args in (("grep", {"pattern": "needle", "path": "src/trap"}), ("glob", {"pattern": "*", "path": "src/trap"})):
            with pytest.raises(ToolError) as info:
                await asyncio.wait_for(run(ws, name, **args), 20)  # the guard: a hang fails here
            assert "not a file or a folder" in str(info.value), name
            assert ("named pipe (FIFO)" if kind == "fifo" else "a socket") in str(info.value)
        # a folder holding one is searched as usual, the special file skipped
        result = await asyncio.wait_for(run(ws, "grep", pattern="needle", path="src"), 20)
        assert "src/a.py:1:needle" in result.text_content()
    finally:
        if server is not None:
            server.close()


def test_a_fifo_swapped_in_after_the_walk_is_not_read(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "late")
    assert _engines.read_regular(tmp_path / "late", 1000) is None  # opened without blocking, then refused
    (tmp_path / "f").write_bytes(b"x" * 10)
    assert _engines.read_regular(tmp_path / "f", 5) is None and _engines.read_regular(tmp_path / "f", 5, head=True) == b"xxxxx"


async def test_every_grep_has_a_deadline(tmp_path: Path, search_engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = write(tmp_path / "ws", {f"d{i}/f{j}.txt": "needle\n" * 50 for i in range(20) for j in range(20)})
    monkeypatch.setattr(_tools, "GREP_TIME_BUDGET", 0.0)
    result = await run(ws, "grep", pattern="needle")
    assert result.data["timed_out"] is True
    assert "the time budget" in result.text_content() and "partial" in result.text_content()
