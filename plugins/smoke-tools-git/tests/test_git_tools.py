"""Tests for smoke-tools-git against real repositories made with ``git init``."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import smoke_tools_git
from smoke_tools_git._git import (
    build_tools,
    git_add,
    git_commit,
    git_diff,
    git_log,
    git_show,
    git_status,
)

from smoke_core import create_agent
from smoke_core.plugin import ToolError
from smoke_core.testing import ScriptedProvider, make_tool_context

TOOLS = ("git_status", "git_diff", "git_log", "git_show", "git_add", "git_commit")


@pytest.fixture(autouse=True)
def _isolated_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user/system git config leaks in, and no repository above tmp_path is found."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for var in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "EMAIL",
    ):
        monkeypatch.delenv(var, raising=False)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _repo(tmp_path: Path, *, identity: bool = True, commit: bool = True) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    if identity:
        _git(repo, "config", "user.name", "Ada Tester")
        _git(repo, "config", "user.email", "ada@example.com")
    if commit:
        (repo / "app.py").write_text("print('v1')\n")
        (repo / "README.md").write_text("# demo\n")
        _git(repo, "add", ".")
        _git(
            repo,
            "-c",
            "user.name=Setup",
            "-c",
            "user.email=setup@example.com",
            "commit",
            "-q",
            "-m",
            "first commit",
        )
    return repo


def _ctx(path: Path, **options: Any) -> Any:
    return make_tool_context(path, tool_name="git", options=dict(options))


# ---------------------------------------------------------------- registration


async def test_registers_six_tools_with_read_only_flags(tmp_path: Path) -> None:
    agent = create_agent(
        tmp_path, provider=ScriptedProvider([]), autoload_plugins=False, plugins=[smoke_tools_git]
    )
    assert set(agent.tools) == set(TOOLS)
    presentations = agent.get_tool_presentations()
    for name in TOOLS:
        assert agent.tools[name].group == "git"
        assert presentations[name]["icon"] and presentations[name]["group"] == "git"
    assert {n for n in TOOLS if agent.tools[n].annotations.read_only_hint} == {
        "git_status",
        "git_diff",
        "git_log",
        "git_show",
    }


async def test_git_add_asks_for_permission_but_status_does_not(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "new.txt").write_text("x\n")
    turns = [
        {"tool_calls": [{"id": "s1", "name": "git_status", "input": {}}]},
        {"tool_calls": [{"id": "a1", "name": "git_add", "input": {"paths": ["new.txt"]}}]},
        "done",
    ]
    agent = create_agent(
        repo, provider=ScriptedProvider(turns), autoload_plugins=False, plugins=[smoke_tools_git]
    )
    asked: list[str] = []

    def approve(event: Any) -> None:
        asked.append(event.data["tool_name"])
        agent.resolve_permission(event.data["tool_call_id"], "allow")

    agent.on("permission.required", approve)
    result = await agent.run("stage it")
    assert result.status == "completed"
    assert asked == ["git_add"]
    assert "A  new.txt" in _git(repo, "status", "--short")


# ---------------------------------------------------------------- outside a repository


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (git_status, {}),
        (git_diff, {}),
        (git_log, {}),
        (git_show, {"rev": "HEAD"}),
        (git_add, {"paths": ["a.txt"]}),
        (git_commit, {"message": "x"}),
    ],
)
async def test_outside_a_repository_is_a_clear_error(
    tmp_path: Path, tool: Any, args: dict[str, Any]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a")
    with pytest.raises(ToolError) as info:
        await tool(args, _ctx(plain))
    message = str(info.value)
    assert message.startswith("not a git repository")
    assert str(plain.resolve()) in message
    assert "git init" in message


# ---------------------------------------------------------------- read-only tools


async def test_status_clean_and_dirty(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    clean = await git_status({}, _ctx(repo))
    assert "working tree clean" in clean.text_content()
    assert clean.data["branch"].startswith("main")
    assert clean.data["changes"] == 0

    (repo / "app.py").write_text("print('v2')\n")
    (repo / "extra").mkdir()
    (repo / "extra" / "new.txt").write_text("new\n")
    dirty = await git_status({}, _ctx(repo))
    text = dirty.text_content()
    assert " M app.py" in text
    assert "?? extra/new.txt" in text
    assert dirty.data["changes"] == 2


async def test_status_in_an_empty_repository(tmp_path: Path) -> None:
    repo = _repo(tmp_path, commit=False)
    result = await git_status({}, _ctx(repo))
    assert "No commits yet" in result.text_content()


async def test_diff_unstaged_staged_rev_and_path(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    ctx = _ctx(repo)
    empty = await git_diff({}, ctx)
    assert empty.data["empty"] is True
    assert "no unstaged changes" in empty.text_content().lower()

    (repo / "app.py").write_text("print('v2')\n")
    (repo / "README.md").write_text("# demo 2\n")
    unstaged = await git_diff({}, ctx)
    assert "-print('v1')" in unstaged.text_content() and "+print('v2')" in unstaged.text_content()
    assert "\x1b[" not in unstaged.text_content()  # no colour codes

    only_readme = await git_diff({"path": "README.md"}, ctx)
    assert "README.md" in only_readme.text_content() and "app.py" not in only_readme.text_content()

    assert (await git_diff({"staged": True}, ctx)).data["empty"] is True
    _git(repo, "add", "app.py")
    staged = await git_diff({"staged": True}, ctx)
    assert "+print('v2')" in staged.text_content() and "README" not in staged.text_content()

    _git(repo, "commit", "-q", "-m", "second")
    against = await git_diff({"rev": "HEAD~1", "path": "app.py"}, ctx)
    assert "+print('v2')" in against.text_content()


async def test_diff_refuses_option_like_revs_and_outside_paths(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    target = tmp_path / "written-by-git"
    with pytest.raises(ToolError, match="not an option"):
        await git_diff({"rev": f"--output={target}"}, _ctx(repo))
    assert not target.exists()
    with pytest.raises(ToolError, match="outside the workspace"):
        await git_diff({"path": "../"}, _ctx(repo))
    with pytest.raises(ToolError, match="outside the workspace"):
        await git_diff({"path": "/etc/passwd"}, _ctx(repo))


async def test_long_output_is_truncated_with_a_note(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "app.py").write_text("".join(f"line {i}\n" for i in range(5000)))
    result = await git_diff({}, _ctx(repo, git_output_limit=2000))
    text = result.text_content()
    assert result.data["truncated"] is True
    assert len(text) < 2500
    assert "[output truncated: showing" in text and "path=" in text


async def test_log_count_path_and_empty(tmp_path: Path) -> None:
    empty = _repo(tmp_path, commit=False)
    result = await git_log({}, _ctx(empty))
    assert result.text_content() == "No commits yet in this repository."

    repo = tmp_path / "repo2"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for i in range(3):
        (repo / f"f{i}.txt").write_text(str(i))
        _git(repo, "add", ".")
        _git(
            repo,
            "-c",
            "user.name=Ada",
            "-c",
            "user.email=a@b.c",
            "commit",
            "-q",
            "-m",
            f"commit number {i}",
        )
    ctx = _ctx(repo)
    full = await git_log({}, ctx)
    lines = full.text_content().splitlines()
    assert len(lines) == 3 and lines[0].endswith("Ada: commit number 2")
    two = await git_log({"count": 2}, ctx)
    assert two.data["commits"] == 2 and "raise count=" in two.text_content()
    one_file = await git_log({"path": "f0.txt"}, ctx)
    assert one_file.data["commits"] == 1 and "commit number 0" in one_file.text_content()


async def test_show_commit_and_bad_rev(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    ctx = _ctx(repo)
    result = await git_show({"rev": "HEAD"}, ctx)
    text = result.text_content()
    assert "first commit" in text and "app.py" in text and "+print('v1')" in text
    for found_by_message in (":/first", "HEAD^{/first}"):
        assert "first commit" in (await git_show({"rev": found_by_message}, ctx)).text_content()
    with pytest.raises(ToolError, match=r"unknown revision .no-such-branch."):
        await git_show({"rev": "no-such-branch"}, ctx)
    with pytest.raises(ToolError, match="not an option"):
        await git_show({"rev": "--help"}, ctx)


# ---------------------------------------------------------------- git_add / git_commit


async def test_add_stages_files_inside_the_workspace(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("a\n")
    (repo / "b.py").write_text("b\n")
    result = await git_add({"paths": ["src", "b.py"]}, _ctx(repo))
    assert result.data["paths"] == ["src", "b.py"]
    status = _git(repo, "status", "--short")
    assert "A  src/a.py" in status and "A  b.py" in status


@pytest.mark.parametrize("bad", ["../outside.txt", "/etc/passwd", "escape/secret.txt", "~/x"])
async def test_add_refuses_paths_outside_the_workspace(tmp_path: Path, bad: str) -> None:
    # The workspace is a sub-folder of the repository, so git itself would accept the outside path.
    repo = _repo(tmp_path)
    ws = repo / "ws"
    ws.mkdir()
    (ws / "inside.txt").write_text("in\n")
    (repo / "outside.txt").write_text("out\n")
    (repo / "secrets").mkdir()
    (repo / "secrets" / "secret.txt").write_text("s\n")
    (ws / "escape").symlink_to(repo / "secrets")
    with pytest.raises(ToolError, match=r"outside the workspace|home directory"):
        await git_add({"paths": ["inside.txt", bad]}, _ctx(ws))
    assert _git(repo, "diff", "--cached", "--name-only") == ""  # nothing at all was staged


async def test_add_takes_paths_literally(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    ws = repo / "ws"
    ws.mkdir()
    (repo / "top.txt").write_text("top\n")
    with pytest.raises(ToolError):
        await git_add({"paths": [":(top)top.txt"]}, _ctx(ws))  # pathspec magic is not interpreted
    assert _git(repo, "diff", "--cached", "--name-only") == ""


async def test_commit_with_configured_identity(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "app.py").write_text("print('v2')\n")
    _git(repo, "add", "app.py")
    marker = tmp_path / "pwned"
    message = f"Fix greeting $(touch {marker}) `touch {marker}`"
    result = await git_commit({"message": message}, _ctx(repo))
    assert result.data["identity_fallback"] is False
    assert "no git identity" not in result.text_content()
    assert _git(repo, "log", "-1", "--format=%an|%s").strip() == f"Ada Tester|{message}"
    assert result.data["commit"] == _git(repo, "rev-parse", "HEAD").strip()
    assert not marker.exists()  # argv only: nothing was interpreted by a shell


async def test_commit_falls_back_to_a_smoke_identity_and_says_so(tmp_path: Path) -> None:
    repo = _repo(tmp_path, identity=False)
    (repo / "app.py").write_text("print('v2')\n")
    await git_add({"paths": ["app.py"]}, _ctx(repo))
    result = await git_commit({"message": "Update app"}, _ctx(repo))
    assert result.data["identity_fallback"] is True
    assert "no git identity is configured" in result.text_content()
    assert (
        _git(repo, "log", "-1", "--format=%an <%ae>|%cn").strip() == "Smoke <smoke@localhost>|Smoke"
    )
    assert (
        _git(repo, "config", "--list", "--local").count("user.name") == 0
    )  # the repo config is left alone


async def test_commit_with_nothing_staged(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "app.py").write_text("print('unstaged')\n")
    with pytest.raises(ToolError, match=r"nothing to commit.*git_add"):
        await git_commit({"message": "empty"}, _ctx(repo))
    with pytest.raises(ToolError, match="message is empty"):
        await git_commit({"message": "   "}, _ctx(repo))


def test_schemas_reject_bad_arguments() -> None:
    tools = {t.name: t for t in build_tools()}
    assert tools["git_add"].validate_input({"paths": []}) is not None
    assert tools["git_show"].validate_input({}) is not None
    assert tools["git_log"].validate_input({"count": 0}) is not None
    assert tools["git_status"].validate_input({"x": 1}) is not None
    assert tools["git_diff"].validate_input({"path": "a", "staged": True, "rev": "HEAD"}) is None
