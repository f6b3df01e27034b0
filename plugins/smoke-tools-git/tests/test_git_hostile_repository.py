"""The git tools against repositories that try to run things, reach outside
the workspace or print secrets. Real repositories made with ``git init``;
every hostile setting writes a marker file if git ever runs it, and a
control run with plain git proves the setting is live."""

from __future__ import annotations

import os
import shutil
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
from smoke_tools_git._safe_git import (
    git_environment,
    neutral_value,
    parse_config_listing,
    repository_overrides,
)

from smoke_core import create_agent
from smoke_core.plugin import ToolError
from smoke_core.testing import ScriptedProvider, make_tool_context


@pytest.fixture(autouse=True)
def _isolated_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL",
                "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], check=check, capture_output=True, text=True)


def _commit_all(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=Setup", "-c", "user.email=setup@example.com", "commit", "-q", "-m", message)


def _ctx(path: Path, **options: Any) -> Any:
    return make_tool_context(path, tool_name="git", options=dict(options))


# ---------------------------------------------------------------- a repository whose config runs things


def _hostile_config(repo: Path, markers: Path) -> None:
    """Write a .git/config (and an included file, and hooks) in which every
    program git could run writes ``markers/<what>``."""
    def mark(name: str, then: str = "cat") -> str:
        return f'"touch {markers}/{name}; {then}"'

    hooks = repo / "hk"
    hooks.mkdir()
    for default_hooks in (hooks, repo / ".git" / "hooks"):
        default_hooks.mkdir(exist_ok=True)
        for hook in ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "reference-transaction",
                     "post-index-change", "pre-auto-gc"):
            script = default_hooks / hook
            script.write_text(f"#!/bin/sh\ntouch {markers}/hook-{hook}\n")
            script.chmod(0o755)
    gpg = markers.parent / "fake-gpg"
    gpg.write_text(f"#!/bin/sh\ntouch {markers}/gpg\nexit 1\n")
    gpg.chmod(0o755)
    (repo / ".git" / "extra.cfg").write_text(
        "[filter \"inc\"]\n"
        f"\tclean = {mark('included-clean')}\n"
        "\trequired = true\n"
    )
    with open(repo / ".git" / "config", "a") as f:
        f.write(
            "[core]\n"
            f"\tfsmonitor = {mark('fsmonitor', 'echo')}\n"
            "\thooksPath = hk\n"
            f"\tpager = {mark('pager')}\n"
            f"\tsshCommand = {mark('ssh')}\n"
            f"\teditor = {mark('editor', 'true')}\n"
            "[filter \"evil\"]\n"
            f"\tclean = {mark('clean')}\n"
            f"\tsmudge = {mark('smudge')}\n"
            "\trequired = true\n"
            "[filter \"a=b\"]\n"
            f"\tclean = {mark('clean-a=b')}\n"
            "[diff \"evil\"]\n"
            f"\ttextconv = {mark('textconv')}\n"
            f"\tcommand = {mark('diff-command', 'true')}\n"
            "[diff]\n"
            f"\texternal = {mark('diff-external', 'true')}\n"
            "[credential]\n"
            f"\thelper = {mark('credential', 'true')}\n"
            "[log]\n"
            "\tshowSignature = true\n"
            "[commit]\n"
            "\tgpgSign = true\n"
            "[gpg]\n"
            f"\tprogram = {gpg}\n"
            "[color]\n"
            "\tui = always\n"
            "\tstatus = always\n"
            "\tdiff = always\n"
            "[include]\n"
            "\tpath = extra.cfg\n"
        )


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    markers = tmp_path / "markers"
    markers.mkdir()
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil\n*.md filter=a=b\n*.cfg filter=inc\n")
    (repo / "a.txt").write_text("one\n")
    (repo / "b.md").write_text("bee\n")
    (repo / "c.cfg").write_text("sea\n")
    (repo / "same.txt").write_text("unchanged\n")
    _commit_all(repo, "first")
    (repo / "a.txt").write_text("one two\n")
    _commit_all(repo, "second")
    _hostile_config(repo, markers)
    # work for git to do: a change, and an unchanged file whose timestamp makes git re-hash it
    (repo / "a.txt").write_text("one two three\n")
    os.utime(repo / "same.txt", (946684800, 946684800))
    return repo, markers


def _ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def test_the_hostile_config_is_live_with_plain_git(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    """Control: plain git in a copy of the repository runs what the config names."""
    repo, markers = hostile
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    _git(copy, "status", check=False)
    _git(copy, "diff", check=False)
    (copy / "b.md").write_text("bee 2\n")
    (copy / "c.cfg").write_text("sea 2\n")
    _git(copy, "add", "-A", check=False)
    _git(copy, "-c", "user.name=Control", "-c", "user.email=c@example.com", "commit", "-m", "x", check=False)
    ran = _ran(markers)
    expected = {"fsmonitor", "clean", "clean-a=b", "included-clean", "diff-command", "hook-pre-commit",
                "hook-post-index-change", "gpg"}
    assert expected <= set(ran), ran


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (git_status, {}),
        (git_diff, {}),
        (git_diff, {"staged": True}),
        (git_diff, {"rev": "HEAD~1"}),
        (git_diff, {"rev": "HEAD~1..HEAD", "path": "a.txt"}),
        (git_log, {}),
        (git_log, {"path": "a.txt"}),
        (git_show, {"rev": "HEAD"}),
        (git_show, {"rev": "HEAD:a.txt"}),
        (git_show, {"rev": "HEAD~1..HEAD"}),
    ],
    ids=["status", "diff", "diff-staged", "diff-rev", "diff-range-path", "log", "log-path", "show", "show-blob",
         "show-range"],
)
async def test_read_only_tools_run_nothing_of_the_repository(
    hostile: tuple[Path, Path], tool: Any, args: dict[str, Any]
) -> None:
    repo, markers = hostile
    result = await tool(args, _ctx(repo))
    assert _ran(markers) == []
    assert "\x1b[" not in result.text_content()  # color.* = always did not reach the output


async def test_read_only_tools_show_the_real_content(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    diff = (await git_diff({}, _ctx(repo))).text_content()
    assert "-one two" in diff and "+one two three" in diff  # no textconv, no external diff program
    show = (await git_show({"rev": "HEAD:a.txt"}, _ctx(repo))).text_content()
    assert show == "one two\n"
    status = (await git_status({}, _ctx(repo))).text_content()
    assert " M a.txt" in status and "same.txt" not in status  # fsmonitor did not hide the change
    assert _ran(markers) == []


async def test_add_and_commit_work_and_no_hook_filter_or_signer_runs(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    (repo / "b.md").write_text("bee 2\n")
    (repo / "c.cfg").write_text("sea 2\n")
    before = _git(repo, "rev-parse", "HEAD").stdout.strip()
    await git_add({"paths": ["a.txt", "b.md", "c.cfg"]}, _ctx(repo))
    assert _ran(markers) == []
    result = await git_commit({"message": "agent change"}, _ctx(repo, workspace_trusted=False))
    assert _ran(markers) == []
    after = _git(repo, "rev-parse", "HEAD").stdout.strip()
    assert after != before and result.data["commit"] == after
    # the clean filter did not run: the committed blob is the file as it is
    assert _git(repo, "show", "HEAD:c.cfg").stdout == "sea 2\n"
    # not signed (signing would have run the repository's gpg.program)
    assert "gpgsig" not in _git(repo, "cat-file", "commit", "HEAD").stdout


async def test_a_partial_clone_cannot_fetch_through_its_remote_command(tmp_path: Path) -> None:
    """A missing object makes git fetch from the "promisor" remote; with an
    ext:: URL that runs a command. No transport is allowed, so nothing runs."""
    repo = tmp_path / "partial"
    repo.mkdir()
    markers = tmp_path / "markers"
    markers.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "s.txt").write_text("payload\n")
    _commit_all(repo, "one")
    blob = _git(repo, "rev-parse", "HEAD:s.txt").stdout.strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    for key, value in (("core.repositoryformatversion", "1"), ("extensions.partialClone", "evil"),
                       ("remote.evil.url", f"ext::sh -c touch% {markers}/lazy-fetch"),
                       ("remote.evil.promisor", "true"), ("protocol.ext.allow", "always")):
        _git(repo, "config", key, value)
    control = tmp_path / "control"
    shutil.copytree(repo, control)
    _git(control, "show", "HEAD:s.txt", check=False)
    assert _ran(markers) == ["lazy-fetch"]
    (markers / "lazy-fetch").unlink()

    with pytest.raises(ToolError):
        await git_show({"rev": "HEAD:s.txt"}, _ctx(repo))
    assert _ran(markers) == []


async def test_the_persons_own_global_filters_still_run_without_provider_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver in the person's ~/.gitconfig (git-lfs, say) is theirs and runs;
    it sees no provider key and no inherited GIT_DIR."""
    home = tmp_path / "home"
    dump = tmp_path / "filter-env.txt"
    (home / ".gitconfig").write_text(f'[filter "mine"]\n\tclean = "env > {dump}; cat"\n')
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    monkeypatch.setenv("SMOKE_TEST_ORDINARY", "kept")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # as if Smoke were started from a git hook
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env={**os.environ, "GIT_DIR": str(repo / ".git")})
    (repo / ".gitattributes").write_text("*.dat filter=mine\n")
    (repo / "x.dat").write_text("data\n")
    await git_add({"paths": ["x.dat", ".gitattributes"]}, _ctx(repo))
    env = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert "OPENAI_API_KEY" not in env and "sk-test-0123456789abcdef" not in dump.read_text()
    assert env.get("SMOKE_TEST_ORDINARY") == "kept"
    assert "GIT_DIR" not in env or Path(env["GIT_DIR"]).resolve() == (repo / ".git").resolve()
    monkeypatch.delenv("GIT_DIR")
    assert "A  x.dat" in _git(repo, "status", "--short").stdout  # staged in the workspace's repository
    assert _git(other, "status", "--short").stdout == ""


# ---------------------------------------------------------------- staying inside the workspace


@pytest.fixture
def subfolder(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose workspace is its sub-folder ws/; outside.txt and
    secret.txt live beside ws/ and change in every commit."""
    repo = tmp_path / "big"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    ws = repo / "ws"
    ws.mkdir()
    (repo / "outside.txt").write_text("OUTSIDE-1\n")
    (ws / "inside.txt").write_text("inside 1\n")
    _commit_all(repo, "both")
    (repo / "outside.txt").write_text("OUTSIDE-2\n")
    _commit_all(repo, "outside only")
    (repo / "outside.txt").write_text("OUTSIDE-3\n")
    (ws / "inside.txt").write_text("inside 2\n")
    return repo, ws


@pytest.mark.parametrize(
    "rev",
    ["HEAD:../outside.txt", "HEAD:outside.txt", "HEAD:./../outside.txt", "HEAD:ws/../outside.txt",
     "HEAD:/etc/passwd", "HEAD:", "HEAD:..", ":outside.txt", ":0:outside.txt", "HEAD~1:../outside.txt",
     "HEAD^{tree}", "HEAD:../../etc/passwd"],
)
async def test_show_cannot_name_a_path_outside_the_workspace(subfolder: tuple[Path, Path], rev: str) -> None:
    _repo, ws = subfolder
    with pytest.raises(ToolError) as info:
        await git_show({"rev": rev}, _ctx(ws))
    assert "OUTSIDE" not in str(info.value)


async def test_show_cannot_name_an_outside_object_by_its_id(subfolder: tuple[Path, Path]) -> None:
    repo, ws = subfolder
    blob = _git(repo, "rev-parse", "HEAD:outside.txt").stdout.strip()
    with pytest.raises(ToolError, match="names a blob, not a commit"):
        await git_show({"rev": blob}, _ctx(ws))


async def test_show_reads_files_inside_the_workspace_both_ways(subfolder: tuple[Path, Path]) -> None:
    _repo, ws = subfolder
    assert (await git_show({"rev": "HEAD:./inside.txt"}, _ctx(ws))).text_content() == "inside 1\n"
    assert (await git_show({"rev": "HEAD:ws/inside.txt"}, _ctx(ws))).text_content() == "inside 1\n"
    assert (await git_show({"rev": "HEAD:./"}, _ctx(ws))).text_content().splitlines()[-1] == "inside.txt"


async def test_subfolder_status_diff_show_and_log_stay_inside(subfolder: tuple[Path, Path]) -> None:
    _repo, ws = subfolder
    ctx = _ctx(ws)
    status = (await git_status({}, ctx)).text_content()
    assert "inside.txt" in status and "outside" not in status
    diff = (await git_diff({}, ctx)).text_content()
    assert "+inside 2" in diff and "OUTSIDE" not in diff
    ranged = (await git_diff({"rev": "HEAD~1"}, ctx)).text_content()
    assert "OUTSIDE" not in ranged
    show = (await git_show({"rev": "HEAD"}, ctx)).text_content()
    assert "outside only" in show and "OUTSIDE" not in show  # the message, not the outside file
    assert "+inside 1" in (await git_show({"rev": "HEAD~1"}, ctx)).text_content()
    log = (await git_log({}, ctx)).text_content()
    assert "both" in log and "outside only" not in log


async def test_commit_refuses_changes_staged_outside_the_workspace(subfolder: tuple[Path, Path]) -> None:
    repo, ws = subfolder
    _git(repo, "add", "outside.txt")
    await git_add({"paths": ["inside.txt"]}, _ctx(ws))
    with pytest.raises(ToolError, match=r"changes outside the workspace are staged \(outside.txt\)"):
        await git_commit({"message": "sneaky"}, _ctx(ws))
    assert _git(repo, "log", "-1", "--format=%s").stdout.strip() == "outside only"
    _git(repo, "reset", "-q", "outside.txt")
    done = await git_commit({"message": "inside only"}, _ctx(ws))
    assert _git(repo, "show", "--name-only", "--format=", "HEAD").stdout.split() == ["ws/inside.txt"]
    assert done.data["commit"] == _git(repo, "rev-parse", "HEAD").stdout.strip()


def _elsewhere(tmp_path: Path) -> Path:
    other = tmp_path / "elsewhere"
    other.mkdir()
    _git(other, "init", "-q", "-b", "main")
    (other / "private.txt").write_text("PRIVATE\n")
    _commit_all(other, "private history")
    return other


async def test_a_dot_git_file_pointing_elsewhere_is_refused_unless_trusted(tmp_path: Path) -> None:
    other = _elsewhere(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
    for tool, args in ((git_status, {}), (git_log, {}), (git_show, {"rev": "HEAD"}), (git_diff, {}),
                       (git_add, {"paths": ["."]}), (git_commit, {"message": "x"})):
        with pytest.raises(ToolError, match=r"not a folder but points to the git directory .*smoke trust"):
            await tool(args, _ctx(ws, workspace_trusted=False))
    trusted = await git_log({}, _ctx(ws, workspace_trusted=True))
    assert "private history" in trusted.text_content()


async def test_a_dot_git_symlink_and_alternates_are_refused_unless_trusted(tmp_path: Path) -> None:
    other = _elsewhere(tmp_path)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").symlink_to(other / ".git")
    with pytest.raises(ToolError, match="not a folder but points to"):
        await git_log({}, _ctx(linked, workspace_trusted=False))

    borrowing = tmp_path / "borrowing"
    borrowing.mkdir()
    _git(borrowing, "init", "-q", "-b", "main")
    (borrowing / ".git" / "objects" / "info" / "alternates").write_text(f"{other / '.git' / 'objects'}\n")
    private = _git(other, "rev-parse", "HEAD").stdout.strip()
    with pytest.raises(ToolError, match="read objects from"):
        await git_show({"rev": private}, _ctx(borrowing, workspace_trusted=False))
    shown = await git_show({"rev": private}, _ctx(borrowing, workspace_trusted=True))
    assert "private history" in shown.text_content()


async def test_core_worktree_pointing_outside_is_refused(tmp_path: Path) -> None:
    other = _elsewhere(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "config", "core.worktree", str(other))
    for trusted in (False, True):
        with pytest.raises(ToolError, match="does not contain it"):
            await git_status({}, _ctx(ws, workspace_trusted=trusted))


async def test_a_bare_repository_planted_in_the_workspace_is_not_used(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", "--bare", ".")
    with pytest.raises(ToolError, match="bare repository"):
        await git_log({}, _ctx(ws))


# ---------------------------------------------------------------- secrets (issue 21 row 4)


@pytest.fixture
def with_secrets(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / ".env").write_text("API_TOKEN=hunter2-first\n")
    (repo / "config").mkdir()
    (repo / "config" / "id_rsa").write_text("PRIVATE-KEY-BODY\n")
    (repo / "app.py").write_text("print(1)\n")
    _commit_all(repo, "with secrets")
    (repo / ".env").write_text("API_TOKEN=hunter2-second\n")
    (repo / "app.py").write_text("print(2)\n")
    return repo


@pytest.mark.parametrize("rev", ["HEAD:.env", "HEAD:./.env", ":.env", ":0:.env", "HEAD:config/id_rsa",
                                 "HEAD:config/../.env"])
async def test_show_refuses_secret_files_and_points_to_read_file(with_secrets: Path, rev: str) -> None:
    with pytest.raises(ToolError, match="read_file") as info:
        await git_show({"rev": rev}, _ctx(with_secrets))
    assert "hunter2" not in str(info.value) and "PRIVATE-KEY" not in str(info.value)


async def test_diff_and_show_leave_secret_files_out(with_secrets: Path) -> None:
    ctx = _ctx(with_secrets)
    diff = await git_diff({}, ctx)
    text = diff.text_content()
    assert "print(2)" in text and "hunter2" not in text
    assert diff.data["secret_files_left_out"] == [".env"] and "read_file" in text
    show = await git_show({"rev": "HEAD"}, ctx)
    assert "print(1)" in show.text_content()
    assert "hunter2" not in show.text_content() and "PRIVATE-KEY" not in show.text_content()
    assert show.data["secret_files_left_out"] == [".env", "config/id_rsa"]
    _git(with_secrets, "add", ".env")
    staged = await git_diff({"staged": True}, ctx)
    assert "hunter2" not in staged.text_content() and staged.data["empty"] is True


async def test_diff_of_a_secret_path_asks_first_then_shows_it(with_secrets: Path) -> None:
    """Named by path, the file goes through core's gate (which asks); once
    allowed, git_diff shows it."""
    turns = [{"tool_calls": [{"id": "d1", "name": "git_diff", "input": {"path": ".env"}}]}, "done"]
    agent = create_agent(with_secrets, provider=ScriptedProvider(turns), autoload_plugins=False,
                         plugins=[smoke_tools_git])
    asked: list[str] = []
    done: list[dict[str, Any]] = []

    def approve(event: Any) -> None:
        asked.append(event.data["tool_name"])
        agent.resolve_permission(event.data["tool_call_id"], "allow")

    agent.on("permission.required", approve)
    agent.on("tool.completed", lambda e: done.append(e.data))
    result = await agent.run("diff the env file")
    assert result.status == "completed"
    assert asked == ["git_diff"]
    assert "+API_TOKEN=hunter2-second" in done[0]["content"][0]["text"]


# ---------------------------------------------------------------- declarations


def test_kinds_hints_and_permission_keys() -> None:
    tools = {t.name: t for t in build_tools()}
    for name in ("git_status", "git_diff", "git_log", "git_show"):
        ann = tools[name].annotations
        assert (ann.kind, ann.read_only_hint, ann.destructive_hint, ann.open_world_hint) == ("read", True, False,
                                                                                               False)
    for name in ("git_add", "git_commit"):
        ann = tools[name].annotations
        assert (ann.kind, ann.read_only_hint, ann.destructive_hint) == ("other", False, False)
    assert tools["git_add"].annotations.idempotent_hint is True
    assert tools["git_commit"].annotations.idempotent_hint is False
    keys = {name: t.permission_key for name, t in tools.items()}
    assert keys == {"git_status": None, "git_diff": "path", "git_log": "path", "git_show": "rev",
                    "git_add": None, "git_commit": None}
    assert tools["git_show"].permission_value({"rev": "HEAD:.env"}) == "HEAD:.env"


# ---------------------------------------------------------------- the override policy, without git


def test_neutral_values_for_program_running_keys() -> None:
    assert neutral_value("filter.lfs.clean") == ""
    assert neutral_value("filter.a=b.smudge") == ""
    assert neutral_value("filter.x.process") == ""
    assert neutral_value("filter.x.required") == "false"
    assert neutral_value("diff.word.textconv") == ""
    assert neutral_value("diff.word.command") == ""
    assert neutral_value("merge.ours.driver") == ""
    assert neutral_value("credential.https://example.com.helper") == ""
    assert neutral_value("gpg.ssh.program") == "false"
    assert neutral_value("protocol.ext.allow") == "never"
    assert neutral_value("pager.log") == "false"
    assert neutral_value("color.status") == "false"
    assert neutral_value("color.diff.meta") is None
    assert neutral_value("user.name") is None
    assert neutral_value("include.path") is None
    assert neutral_value("core.worktree") is None


def test_only_the_repository_scopes_are_overridden() -> None:
    raw = (b"global\0filter.lfs.clean\ngit-lfs clean -- %f\0"
           b"local\0filter.evil.clean\ntouch x\0"
           b"local\0filter.bare.smudge\0"
           b"worktree\0core.fsmonitor\nhook\0"
           b"command\0diff.x.textconv\nmine\0")
    entries = parse_config_listing(raw)
    assert entries[2] == ("local", "filter.bare.smudge", None)
    assert repository_overrides(entries) == [("filter.evil.clean", ""), ("filter.bare.smudge", ""),
                                             ("core.fsmonitor", "false")]


def test_environment_drops_keys_and_repository_pointers_and_keeps_the_persons_config() -> None:
    base = {"PATH": "/usr/bin", "OPENAI_API_KEY": "sk-x", "GIT_DIR": "/elsewhere", "GIT_INDEX_FILE": "/i",
            "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*",
            "GIT_LITERAL_PATHSPECS": "1"}
    env = git_environment([("filter.evil.clean", "")], base)
    assert "OPENAI_API_KEY" not in env and "GIT_DIR" not in env and "GIT_INDEX_FILE" not in env
    assert "GIT_LITERAL_PATHSPECS" not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_ALLOW_PROTOCOL"] == ""
    pairs = [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(int(env["GIT_CONFIG_COUNT"]))]
    assert pairs[0] == ("safe.directory", "*") and pairs[1] == ("filter.evil.clean", "")
    assert ("core.fsmonitor", "false") in pairs and ("core.hooksPath", "/dev/null") in pairs


def test_settings_keys_are_declared_for_the_settings_layers() -> None:
    from pydantic import TypeAdapter, ValidationError

    declared: dict[str, tuple[Any, dict[str, Any]]] = {}
    smoke_tools_git.register_settings(lambda key, type, **kw: declared.__setitem__(key, (type, kw)))
    assert set(declared) == {"git_output_limit", "git_timeout_s"}
    for type_, kw in declared.values():
        assert kw["trusted_only"] is True and kw["description"]
        assert TypeAdapter(type_).validate_python(kw["default"]) == kw["default"]
        with pytest.raises(ValidationError):
            TypeAdapter(type_).validate_python(-1)
        with pytest.raises(ValidationError):
            TypeAdapter(type_).validate_python("lots")


async def test_an_agent_created_with_trust_workspace_false_refuses_a_dot_git_pointer(tmp_path: Path) -> None:
    other = _elsewhere(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
    outcomes: dict[bool, dict[str, Any]] = {}
    for trusted in (False, True):
        turns = [{"tool_calls": [{"id": "l1", "name": "git_log", "input": {}}]}, "done"]
        agent = create_agent(ws, provider=ScriptedProvider(turns), autoload_plugins=False, plugins=[smoke_tools_git],
                             trust_workspace=trusted)
        done: list[dict[str, Any]] = []
        agent.on("tool.completed", lambda e, done=done: done.append(e.data))
        assert (await agent.run("log")).status == "completed"
        outcomes[trusted] = done[0]
    assert outcomes[False]["is_error"] and "smoke trust" in outcomes[False]["error"]["message"]
    assert not outcomes[True]["is_error"] and "private history" in outcomes[True]["content"][0]["text"]
