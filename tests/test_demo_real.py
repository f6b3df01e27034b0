"""``smoke demo --real`` and :mod:`smoke_core.demo.llama_server` when the
real model is not there or does not start (issue 32): one clear message
saying how to get the pieces, exit 2, never a traceback. With the pieces,
tests/realmodel drives the real server."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from smoke_core.demo.llama_server import (
    QWEN_GGUF,
    LlamaServer,
    RealModel,
    RealModelMissing,
    find_real_model,
    server_environment,
)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SMOKE_LLAMA_", "SMOKE_REALMODEL_", "SMOKE_LOAD_PLUGINS"))}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
               SMOKE_CACHE_DIR=str(tmp_path / "cache"), SMOKE_MANAGED_SETTINGS=str(tmp_path / "no-managed.yaml"),
               PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_an_empty_cache_says_how_to_get_the_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMOKE_REALMODEL_CACHE", str(tmp_path / "empty"))  # the cache folder is the process's
    with pytest.raises(RealModelMissing) as caught:
        find_real_model(environ={})
    message = str(caught.value)
    assert "llama-server is not in" in message and "nox -s realmodel" in message
    assert "SMOKE_LLAMA_SERVER and SMOKE_LLAMA_MODEL" in message


def test_the_cache_the_session_fills_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = tmp_path / "build-0123456789ab" / "bin" / "llama-server"
    binary.parent.mkdir(parents=True)
    _executable(binary, "#!/bin/sh\n")
    (tmp_path / "models").mkdir()
    monkeypatch.setenv("SMOKE_REALMODEL_CACHE", str(tmp_path))
    with pytest.raises(RealModelMissing, match=f"{QWEN_GGUF} is not in"):
        find_real_model(environ={})
    (tmp_path / "models" / QWEN_GGUF).write_bytes(b"GGUF")
    found = find_real_model(environ={})
    assert (found.server, found.model, found.source) == (binary, tmp_path / "models" / QWEN_GGUF, "cache")
    assert found.name == QWEN_GGUF.removesuffix(".gguf")


def test_the_environment_names_both_or_neither(tmp_path: Path) -> None:
    server = _executable(tmp_path / "llama-server", "#!/bin/sh\n")
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(RealModelMissing, match="set both SMOKE_LLAMA_SERVER"):
        find_real_model(environ={"SMOKE_LLAMA_SERVER": str(server)})
    with pytest.raises(RealModelMissing, match=r"SMOKE_LLAMA_MODEL=.*: no such file"):
        find_real_model(environ={"SMOKE_LLAMA_SERVER": str(server), "SMOKE_LLAMA_MODEL": str(tmp_path / "x")})
    plain = tmp_path / "not-executable"
    plain.write_text("")
    with pytest.raises(RealModelMissing, match="is not executable"):
        find_real_model(environ={"SMOKE_LLAMA_SERVER": str(plain), "SMOKE_LLAMA_MODEL": str(model)})
    found = find_real_model(environ={"SMOKE_LLAMA_SERVER": str(server), "SMOKE_LLAMA_MODEL": str(model)})
    assert found.source == "environment" and found.model == model


def test_the_server_gets_no_way_to_download() -> None:
    env = server_environment({"PATH": "/bin", "LLAMA_ARG_HF_REPO": "x/y", "LLAMA_ARG_MODEL_URL": "https://e",
                              "HF_TOKEN": "t", "HUGGING_FACE_HUB_TOKEN": "t", "LLAMA_ARG_THREADS": "9"})
    assert env == {"PATH": "/bin"}


def test_a_server_that_dies_at_start_is_one_message_with_its_log(tmp_path: Path) -> None:
    # a real process that prints like llama-server and exits: what a bad model file or a crash looks like
    server = _executable(tmp_path / "llama-server", "#!/bin/sh\necho 'gguf_init: invalid magic characters' >&2\n"
                                                    "exit 1\n")
    model = tmp_path / "broken.gguf"
    model.write_bytes(b"nope")
    log = tmp_path / "server.log"
    with pytest.raises(RuntimeError) as caught:
        LlamaServer(RealModel(server, model, "environment"), log_path=log).start(timeout=60)
    assert "llama-server exited with status 1" in str(caught.value)
    assert "invalid magic characters" in str(caught.value)
    assert "invalid magic characters" in log.read_text()


def test_the_command_line_is_local_and_named() -> None:
    real = RealModel(Path("/opt/llama-server"), Path("/m/qwen.gguf"), "cache")
    command = LlamaServer(real, alias="qwen", ctx=4096, threads=2, slots=2, batch=64).command
    for flag in ("--host", "127.0.0.1", "--port", "0", "--offline", "--no-ui", "--jinja"):
        assert flag in command
    assert command[command.index("--alias") + 1] == "qwen"
    assert command[command.index("-c") + 1] == "8192"  # the context of each slot times the slots
    assert command[command.index("-t") + 1] == "2" and command[command.index("-b") + 1] == "64"
    assert "--no-jinja" in LlamaServer(real, jinja=False).command
    with pytest.raises(RuntimeError, match="not running"):
        _ = LlamaServer(real).url


@pytest.mark.slow
def test_smoke_demo_real_without_the_pieces_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "smoke_core.cli", "demo", "--real", "--yes"], cwd=tmp_path,
                          env=_env(tmp_path, SMOKE_REALMODEL_CACHE=str(tmp_path / "empty")),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert line.startswith("smoke demo: --real: no real model here") and "nox -s realmodel" in line


@pytest.mark.slow
def test_smoke_demo_real_with_half_the_environment_says_so(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "smoke_core.cli", "demo", "--real", "--yes"], cwd=tmp_path,
                          env=_env(tmp_path, SMOKE_LLAMA_SERVER=str(tmp_path / "nothing")),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "set both SMOKE_LLAMA_SERVER" in proc.stderr and "Traceback" not in proc.stderr
