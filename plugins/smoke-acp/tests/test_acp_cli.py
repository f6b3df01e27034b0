"""``smoke acp``'s command line, run as a real subprocess: a provider named on
the command line that is not installed is refused before serving (exit
status 2, ``smoke run``'s words on stderr, nothing on stdout, which is the
protocol's); a known one, or a provider from the settings, starts serving.

Only core and smoke-acp are loaded (``SMOKE_LOAD_PLUGINS=acp``), so the
installed providers are core's ``demo`` alone. stdin is a pipe closed at
once: without the check ``smoke acp`` would serve, read the end of its input
and exit with status 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from smoke_core.settings import user_settings_path

pytestmark = pytest.mark.slow

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})


def smoke_acp(cwd: Path, *args: str, stdin: str | BinaryIO = "", env: dict[str, str] | None = None,
              ) -> subprocess.CompletedProcess[str]:
    """The real ``smoke acp``; ``stdin`` is text written to a pipe, or an open file to read from."""
    full_env = {**os.environ, "SMOKE_LOAD_PLUGINS": "acp", "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    feed: dict[str, Any] = {"input": stdin} if isinstance(stdin, str) else {"stdin": stdin}
    return subprocess.run([sys.executable, "-m", "smoke_core.cli", "acp", *args], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=60, **feed)


def test_an_unknown_provider_flag_is_refused_before_serving(tmp_path: Path) -> None:
    done = smoke_acp(tmp_path, "--provider", "nope", stdin=INITIALIZE + "\n")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # not even the answer to initialize: it never served
    assert ("Error: unknown provider 'nope' (--provider). Installed providers: demo. "
            "`smoke providers` lists them with their key variables.") in done.stderr
    assert "Traceback" not in done.stderr


def test_a_model_prefix_naming_an_unknown_provider_is_refused_before_serving(tmp_path: Path) -> None:
    done = smoke_acp(tmp_path, "--model", "nope:x", stdin=INITIALIZE + "\n")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert ("Error: provider 'nope' (from --model nope:x) is unknown. Installed providers: demo. "
            "If 'nope:x' is the model's own name, name the provider with --provider.") in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "env", "user_settings"), [
    (["--provider", "demo"], {}, None),
    (["--model", "demo:smoke-demo-simulated"], {}, None),
    # a colon in the model's own name, the provider from the environment or the settings
    (["--model", "llama3:8b"], {"SMOKE_PROVIDER": "demo"}, None),
    (["--model", "llama3:8b"], {}, "provider: demo\n"),
    # the settings' own mistake is each session's error, as before: only the flags are checked at start
    (["--model", "llama3:8b"], {}, "provider: nope\n"),
    ([], {}, "provider: nope\n"),
], ids=["provider", "model-prefix", "model-with-colon-env", "model-with-colon-settings", "bad-settings",
        "bad-settings-no-flags"])
def test_a_known_provider_or_a_settings_problem_starts_serving(
        tmp_path: Path, args: list[str], env: dict[str, str], user_settings: str | None) -> None:
    if user_settings is not None:
        path = user_settings_path()  # in the isolated settings home (conftest)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(user_settings)
    done = smoke_acp(tmp_path, *args, stdin=INITIALIZE + "\n", env=env)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1
    assert "Error" not in done.stderr


def test_stdin_from_dev_null_ends_the_agent(tmp_path: Path) -> None:
    """/dev/null is no pipe and epoll refuses it: read from a thread, the end of
    input is seen and the agent exits (it used to wait for ever)."""
    with open(os.devnull, "rb") as devnull:
        done = smoke_acp(tmp_path, "--provider", "demo", stdin=devnull)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
