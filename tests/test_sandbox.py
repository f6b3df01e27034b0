"""smoke_core.sandbox: the policy, the environment, mode auto/required/off,
real bubblewrap runs, and `smoke doctor`.

Tests that need bwrap to work skip with the probe's reason where it cannot
run; the tests of what happens without it make it really absent (a PATH
without bwrap, or a bwrap that fails), never a mock of `available()`.
The escape battery through `run_command` is in
plugins/smoke-tools-terminal/tests/test_escape_battery.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoke_core import sandbox
from smoke_core.cli import cli
from smoke_core.policy.sandbox import probe as sandbox_probe
from smoke_core.sandbox import SandboxPolicy, SandboxSettings, SandboxUnavailable

needs_bwrap = pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox here: {sandbox.status().reason()}")
KEY = "sk-test-sandbox-0123456789abcdef"


@pytest.fixture
def visible(tmp_path: Path) -> Iterator[Path]:
    """A temporary folder outside /tmp (the sandbox's /tmp is private, so
    paths under it would be hidden anyway and prove nothing)."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    if base is None:
        pytest.skip("/var/tmp is not writable here")
    path = Path(tempfile.mkdtemp(prefix="smoke-sandbox-test-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def world(visible: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A workspace, a folder beside it, and a fake home with secrets (``HOME`` points there)."""
    ws = visible / "ws"
    ws.mkdir()
    outside = visible / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("original\n")
    home = visible / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN KEY----- id-rsa-secret\n")
    (home / ".config" / "smoke").mkdir(parents=True)
    (home / ".config" / "smoke" / "config.yaml").write_text("api_key: smoke-config-secret\n")
    (home / ".netrc").write_text("machine x login y password netrc-secret\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return {"ws": ws, "outside": outside, "home": home, "root": visible}


def _run(policy: SandboxPolicy, script: str, *, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    launch = sandbox.prepare(["bash", "-c", script], policy, cwd=cwd)
    assert launch.sandboxed
    return subprocess.run(launch.argv, env=launch.env, cwd=cwd or policy.workspace, capture_output=True, text=True,
                          timeout=60, check=False)


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH holding bash and nothing else (so no bwrap)."""
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir()
    (folder / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    return str(folder)


# ---------------------------------------------------------------- settings and policy


def test_settings_defaults_and_unknown_keys() -> None:
    s = SandboxSettings()
    assert (s.mode, s.network, s.deny_read, s.allow_write, s.env, s.mcp) == ("auto", False, [], [], [], False)
    with pytest.raises(ValueError, match="extra"):
        SandboxSettings.model_validate({"mode": "auto", "netwrok": True})
    with pytest.raises(ValueError):
        SandboxSettings.model_validate({"mode": "sometimes"})


def test_policy_masks_home_secrets_and_deny_read(world: dict[str, Path]) -> None:
    private = world["outside"] / "private"
    private.mkdir()
    policy = SandboxPolicy.from_settings({"deny_read": [str(private), "~/.netrc"]}, world["ws"])
    assert policy.workspace == world["ws"].resolve()
    assert policy.writable == (world["ws"].resolve(),)
    for path in (world["home"] / ".ssh", world["home"] / ".config" / "smoke", world["home"] / ".netrc", private):
        assert path.resolve() in policy.masked
    # only what exists can be mounted over: the fake home has no ~/.aws (the
    # account's own home, from the password database, is masked as well, and
    # may have one: that is the host's, not this test's)
    assert (world["home"] / ".aws").resolve() not in policy.masked
    assert policy.network is False and policy.mode == "auto"


def test_policy_protects_smoke_and_git_folders_unless_allowed(world: dict[str, Path]) -> None:
    ws = world["ws"]
    (ws / ".git").mkdir()
    (ws / ".smoke").mkdir()
    policy = SandboxPolicy.from_settings(None, ws)
    assert set(policy.read_only) == {(ws / ".git").resolve(), (ws / ".smoke").resolve()}
    allowed = SandboxPolicy.from_settings({"allow_write": [".git"]}, ws)
    assert (ws / ".git").resolve() in allowed.writable
    assert (ws / ".git").resolve() not in allowed.read_only


def test_policy_notes_paths_that_do_not_exist(world: dict[str, Path]) -> None:
    policy = SandboxPolicy.from_settings(
        {"allow_write": ["/definitely/not/here", str(world["outside"])], "deny_read": ["~/no-such-secrets"]}, world["ws"]
    )
    assert world["outside"].resolve() in policy.writable
    assert len(policy.notes) == 2
    assert "sandbox.allow_write: /definitely/not/here" in policy.notes[0] and "does not exist" in policy.notes[0]
    assert "sandbox.deny_read: ~/no-such-secrets" in policy.notes[1] and "nothing to hide" in policy.notes[1]


def test_sandbox_env_is_an_allow_list(tmp_path: Path) -> None:
    base = {
        "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TMPDIR": "/var/x",
        "OPENAI_API_KEY": KEY, "AWS_SECRET_ACCESS_KEY": "aws-secret", "GITHUB_TOKEN": "gh-secret",
        "HTTPS_PROXY": "http://user:pw@proxy:3128", "RANDOM_THING": "x",
    }
    policy = SandboxPolicy.from_settings(None, tmp_path)
    env = sandbox.sandbox_env(policy, base, extra={"CI": "true"})
    assert env == {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm",
                   "TMPDIR": "/tmp", "CI": "true"}
    named = SandboxPolicy.from_settings({"env": ["OPENAI_API_KEY", "GITHUB_TOKEN"], "network": True}, tmp_path)
    env = sandbox.sandbox_env(named, base)
    assert env["OPENAI_API_KEY"] == KEY and env["GITHUB_TOKEN"] == "gh-secret"  # named in trusted settings
    assert env["HTTPS_PROXY"].startswith("http://")  # proxies only with the network on
    assert "AWS_SECRET_ACCESS_KEY" not in env and "RANDOM_THING" not in env


# ---------------------------------------------------------------- without bubblewrap (a real absence)


def test_without_bwrap_on_path_auto_falls_back_required_refuses_off_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _path_without_bwrap(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert sandbox.find_bwrap() is None
    assert sandbox.available() is False
    assert "bubblewrap" in sandbox.status().reason()
    argv = ["bash", "-c", "true"]

    auto = sandbox.prepare(argv, SandboxPolicy.from_settings({"mode": "auto"}, tmp_path))
    assert auto.sandboxed is False and auto.argv == argv
    assert auto.fallback and "bubblewrap" in auto.fallback
    assert "OPENAI_API_KEY" not in auto.env  # unsandboxed commands still get child_env()

    with pytest.raises(SandboxUnavailable, match="bubblewrap") as info:
        sandbox.prepare(argv, SandboxPolicy.from_settings({"mode": "required"}, tmp_path))
    assert "apt-get install bubblewrap" in str(info.value)
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        sandbox.wrap(argv, SandboxPolicy.from_settings(None, tmp_path))

    off = sandbox.prepare(argv, SandboxPolicy.from_settings({"mode": "off"}, tmp_path), extra_env={"CI": "true"})
    assert off.sandboxed is False and off.fallback is None
    assert "OPENAI_API_KEY" not in off.env and off.env["CI"] == "true"


def test_a_bwrap_that_cannot_create_a_sandbox_is_not_available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.0-broken'; exit 0; }\n"
                    "echo 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{_path_without_bwrap(tmp_path)}")
    st = sandbox.status()
    assert st.bwrap == str(fake) and st.version == "bubblewrap 0.0-broken"
    assert st.works is False and st.error == "bwrap: setting up uid map: Permission denied"
    assert "cannot create a sandbox here" in st.reason() and "uid map" in st.reason()
    with pytest.raises(SandboxUnavailable, match="uid map"):
        sandbox.prepare(["true"], SandboxPolicy.from_settings({"mode": "required"}, tmp_path))


# ---------------------------------------------------------------- the probe remembered on disk


def _logging_bwrap(folder: Path, log: Path, real: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text(f"#!/bin/sh\necho \"$1\" >> {log}\nexec {real} \"$@\"\n")
    fake.chmod(0o755)
    return fake


@needs_bwrap
def test_a_working_probe_is_remembered_for_new_processes_and_doctor_always_probes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = sandbox.find_bwrap()
    assert real is not None
    log = tmp_path / "calls.log"
    fake = _logging_bwrap(tmp_path / "bin", log, real)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SMOKE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sandbox_probe, "_probes", {})
    assert sandbox.status().works is True
    probed = log.read_text().count("\n")
    assert probed >= 2  # --version and a real sandbox
    assert (tmp_path / "cache" / "sandbox-probe.json").is_file()

    monkeypatch.setattr(sandbox_probe, "_probes", {})  # a new process: the answer comes from the disk
    st = sandbox.status()
    assert st.works is True and st.bwrap == str(fake) and log.read_text().count("\n") == probed

    assert sandbox.status(fresh=True).works is True  # smoke doctor
    assert log.read_text().count("\n") > probed

    # anything the probe depends on changes the key: a changed binary is probed again
    probed = log.read_text().count("\n")
    fake.write_text(fake.read_text() + "# changed\n")
    monkeypatch.setattr(sandbox_probe, "_probes", {})
    assert sandbox.status().works is True and log.read_text().count("\n") > probed


def test_a_failed_probe_is_never_remembered_and_a_forged_memory_for_another_key_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "calls.log"
    fake = folder / "bwrap"
    fake.write_text(f"#!/bin/sh\necho \"$1\" >> {log}\n[ \"$1\" = --version ] && {{ echo 'bubblewrap 0'; exit 0; }}\n"
                    "echo 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    cache = tmp_path / "cache"
    cache.mkdir()
    # a memory written for another binary (or forged): it must not make this one "work"
    (cache / "sandbox-probe.json").write_text(json.dumps({
        "key": "another", "at": time.time(), "status": {"bwrap": str(fake), "available": True}}))
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{_path_without_bwrap(tmp_path)}")
    monkeypatch.setenv("SMOKE_CACHE_DIR", str(cache))
    for _ in range(2):  # two "processes"
        monkeypatch.setattr(sandbox_probe, "_probes", {})
        st = sandbox.status()
        assert st.works is False and "No permissions" in (st.error or "")
    assert log.read_text().count("--version") == 2  # probed each time: a failure is not remembered
    assert json.loads((cache / "sandbox-probe.json").read_text())["key"] == "another"


# ---------------------------------------------------------------- real bubblewrap


@needs_bwrap
def test_workspace_is_writable_at_the_same_path_and_the_rest_is_read_only(world: dict[str, Path]) -> None:
    ws, outside = world["ws"], world["outside"]
    policy = SandboxPolicy.from_settings(None, ws)
    proc = _run(policy, f"pwd; echo made > inside.txt; echo x > {outside}/target.txt; echo rc=$?")
    assert proc.stdout.splitlines()[0] == str(ws.resolve())
    assert (ws / "inside.txt").read_text() == "made\n"
    assert "Read-only file system" in proc.stderr and "rc=1" in proc.stdout
    assert (outside / "target.txt").read_text() == "original\n"


@needs_bwrap
def test_allow_write_opens_one_more_folder(world: dict[str, Path]) -> None:
    policy = SandboxPolicy.from_settings({"allow_write": [str(world["outside"])]}, world["ws"])
    proc = _run(policy, f"echo changed > {world['outside']}/target.txt")
    assert proc.returncode == 0, proc.stderr
    assert (world["outside"] / "target.txt").read_text() == "changed\n"


@needs_bwrap
def test_secrets_are_masked_and_keys_stay_out(world: dict[str, Path]) -> None:
    policy = SandboxPolicy.from_settings(None, world["ws"])
    proc = _run(policy, "ls -A ~/.ssh; cat ~/.ssh/id_rsa ~/.config/smoke/config.yaml ~/.netrc; env; "
                        "echo x > ~/.ssh/new; echo rc=$?")
    out = proc.stdout + proc.stderr
    for secret in ("id-rsa-secret", "smoke-config-secret", "netrc-secret", KEY):
        assert secret not in out
    assert "rc=1" in proc.stdout
    assert not (world["home"] / ".ssh" / "new").exists()


@needs_bwrap
def test_tmp_and_dev_shm_are_private(world: dict[str, Path]) -> None:
    marker = f"smoke-sandbox-private-{os.getpid()}-{id(world)}"
    host_shm = Path("/dev/shm") / marker
    host_shm.write_text("host shm secret")
    try:
        proc = _run(SandboxPolicy.from_settings(None, world["ws"]),
                    f"ls /tmp; cat /dev/shm/{marker}; echo in > /tmp/{marker}; echo in > /dev/shm/{marker}.new; "
                    f"cat /tmp/{marker}")
        assert "host shm secret" not in proc.stdout
        assert proc.stdout.strip().endswith("in")  # /tmp is writable, just private
        assert not Path(f"/tmp/{marker}").exists()
        assert not Path(f"/dev/shm/{marker}.new").exists()
    finally:
        host_shm.unlink(missing_ok=True)


@needs_bwrap
def test_a_virtualenv_on_path_under_tmp_stays_visible_and_the_rest_of_tmp_does_not(
    tmp_path: Path, world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    tool = venv / "bin" / "smoke-test-tool"
    tool.write_text("#!/bin/sh\necho tool-ran\n")
    tool.chmod(0o755)
    (tmp_path / "beside.txt").write_text("host tmp file\n")
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    policy = SandboxPolicy.from_settings(None, world["ws"])
    assert venv.resolve() in policy.visible
    proc = _run(policy, f"smoke-test-tool; cat {tmp_path}/beside.txt; touch {venv}/new; echo rc=$?")
    assert proc.stdout.splitlines()[0] == "tool-ran"
    assert "host tmp file" not in proc.stdout  # the rest of the host's /tmp is not there
    assert "rc=1" in proc.stdout and not (venv / "new").exists()  # visible, not writable


@needs_bwrap
def test_with_visible_keeps_a_launched_programs_folder_under_tmp_and_no_more(
    tmp_path: Path, world: dict[str, Path]
) -> None:
    """A stdio MCP server's script in /tmp/x/server.py: /tmp/x is readable in
    the sandbox (with its sibling modules), the rest of /tmp is not, and a
    file directly in /tmp shows only itself."""
    if Path("/tmp") not in tmp_path.resolve().parents:
        pytest.skip("the test's temporary folder is not under /tmp here")
    server_dir = tmp_path / "server"
    server_dir.mkdir()
    (server_dir / "server.sh").write_text(". ./helper.sh\necho server-ran $HELPER\n")
    (server_dir / "helper.sh").write_text("HELPER=helped\n")
    (tmp_path / "beside.txt").write_text("host tmp file\n")
    base = SandboxPolicy.from_settings(None, world["ws"])
    policy = base.with_visible(str(server_dir / "server.sh"), "relative/ignored", "/nonexistent/x", str(world["ws"]))
    assert policy.visible == (*base.visible, server_dir.resolve())
    assert base.with_visible("/tmp").visible == base.visible  # never the whole of /tmp
    loose = Path(tempfile.mkstemp(prefix="smoke-visible-", dir="/tmp")[1])
    try:
        assert base.with_visible(str(loose)).visible == (*base.visible, loose.resolve())
    finally:
        loose.unlink()
    proc = _run(policy, f"cd {server_dir} && sh server.sh; cat {tmp_path}/beside.txt; touch {server_dir}/new; echo rc=$?")
    assert proc.stdout.splitlines()[0] == "server-ran helped"
    assert "host tmp file" not in proc.stdout
    assert "rc=1" in proc.stdout and not (server_dir / "new").exists()  # readable, not writable


@needs_bwrap
def test_own_pid_namespace_shows_no_other_process(world: dict[str, Path]) -> None:
    proc = _run(SandboxPolicy.from_settings(None, world["ws"]),
                f"ls /proc | grep -c '^[0-9]'; test -e /proc/{os.getpid()} && echo SEES-HARNESS; echo $$")
    count, *rest = proc.stdout.split()
    assert int(count) <= 5  # bwrap's init, bash, ls, grep
    assert "SEES-HARNESS" not in rest


class _Server:
    """A TCP server on 127.0.0.1 outside the sandbox that counts connections."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.sendall(b"hello-from-host\n")
            conn.close()

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self.sock.close()
        self._thread.join(5)


@needs_bwrap
def test_network_is_off_unless_allowed(world: dict[str, Path]) -> None:
    server = _Server()
    script = (f"{sys.executable} -c \"import socket; s=socket.create_connection(('127.0.0.1', {server.port}), 5); "
              f"print(s.recv(100).decode())\"")
    try:
        off = _run(SandboxPolicy.from_settings(None, world["ws"]), script)
        assert "hello-from-host" not in off.stdout and "Connection refused" in off.stderr
        assert server.connections == 0
        on = _run(SandboxPolicy.from_settings({"network": True}, world["ws"]), script)
        assert "hello-from-host" in on.stdout, on.stderr
        assert server.connections == 1
    finally:
        server.close()


@needs_bwrap
def test_smoke_and_git_folders_are_read_only_and_cannot_be_renamed_away(world: dict[str, Path]) -> None:
    ws = world["ws"]
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".smoke").mkdir()
    proc = _run(SandboxPolicy.from_settings(None, ws),
                "echo evil > .git/hooks/pre-commit; mv .git .git-old; echo 'sandbox: {mode: off}' > .smoke/config.yaml;"
                " mv .smoke .smoke-old; echo ok > src.txt")
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert not (ws / ".git-old").exists() and not (ws / ".smoke-old").exists()
    assert not (ws / ".smoke" / "config.yaml").exists()
    assert (ws / "src.txt").read_text() == "ok\n"  # the rest of the workspace is writable
    assert "Read-only file system" in proc.stderr


@needs_bwrap
async def test_spawn_starts_a_sandboxed_process_with_pipes(world: dict[str, Path]) -> None:
    policy = SandboxPolicy.from_settings(None, world["ws"])
    proc, launch = await sandbox.spawn(
        ["bash", "-c", "read line; echo \"got $line in $PWD\"; env | grep -c API_KEY"], policy,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate(b"ping\n")
    assert launch.sandboxed and launch.argv[0].endswith("bwrap")
    assert out.decode().splitlines() == [f"got ping in {world['ws'].resolve()}", "0"]


# ---------------------------------------------------------------- explaining refusals


@pytest.mark.parametrize(
    ("output", "network", "kinds", "path"),
    [
        ("touch: cannot touch '/etc/x': Read-only file system\n", False, ["write"], "/etc/x"),
        ("OSError: [Errno 30] Read-only file system: '/usr/lib/y'\n", False, ["write"], "/usr/lib/y"),
        ("curl: (6) Could not resolve host: example.com\n", False, ["network"], None),
        ("curl: (6) Could not resolve host: example.com\n", True, [], None),
        ("ConnectionRefusedError: [Errno 111] Connection refused\n", False, ["network"], None),
        ("error: pathspec 'x' did not match any file(s) known to git\n", False, [], None),
        ("bash: ./run.sh: Permission denied\n", False, [], None),
    ],
)
def test_explain_refusal_reads_only_the_sandbox_traces(
    tmp_path: Path, output: str, network: bool, kinds: list[str], path: str | None
) -> None:
    policy = SandboxPolicy.from_settings({"network": network}, tmp_path)
    found = sandbox.explain_refusal(output, policy, exit_code=1)
    assert [f["kind"] for f in found] == kinds
    if kinds:
        assert found[0]["path"] == path
        key = "sandbox.network" if kinds[0] == "network" else "sandbox.allow_write"
        assert key in found[0]["message"]
    assert sandbox.explain_refusal(output, policy, exit_code=0) == []


def test_explain_refusal_names_a_protected_folder(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    policy = SandboxPolicy.from_settings(None, tmp_path)
    output = f"fatal: Unable to create '{tmp_path.resolve()}/.git/index.lock': Read-only file system\n"
    [found] = sandbox.explain_refusal(output, policy, exit_code=128)
    assert found["kind"] == "protected"
    assert "git_commit" in found["message"] and "`.git` to `sandbox.allow_write`" in found["message"]


def test_explain_refusal_names_a_masked_secret(world: dict[str, Path]) -> None:
    policy = SandboxPolicy.from_settings(None, world["ws"])
    netrc = (world["home"] / ".netrc").resolve()
    [found] = sandbox.explain_refusal(f"bash: {netrc}: Permission denied\n", policy, exit_code=1)
    assert found["kind"] == "secret" and "hidden by the sandbox" in found["message"]


# ---------------------------------------------------------------- smoke doctor


def test_doctor_json_reports_the_sandbox_and_tools() -> None:
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    checks = {c["name"]: c for c in report["checks"]}
    assert set(checks) >= {"bubblewrap", "user namespaces", "ripgrep", "git", "node", "npx", "chromium"}
    assert checks["bubblewrap"]["ok"] is sandbox.available() is report["sandbox"]["available"]
    assert checks["git"]["ok"] is (shutil.which("git") is not None)
    for check in checks.values():
        assert (check["disables"] is None) is check["ok"]


def test_doctor_without_bwrap_says_what_is_disabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_without_bwrap(tmp_path))
    monkeypatch.delenv("SMOKE_CHROMIUM", raising=False)
    result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "✗ bubblewrap: missing" in result.output
    assert "without it: the OS sandbox" in result.output and "apt-get install bubblewrap" in result.output
    assert "✗ git: missing" in result.output and "the git tools" in result.output
    data = json.loads(CliRunner().invoke(cli, ["doctor", "--json"]).output)
    assert data["sandbox"]["available"] is False and data["sandbox"]["bwrap"] is None
