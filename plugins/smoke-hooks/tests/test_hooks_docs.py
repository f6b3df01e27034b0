"""The three worked examples of docs/hooks-commands.md, taken from the page
as written (scripts and settings) and run through real runs."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import call, last_result, make_agent, texts

DOC = Path(__file__).resolve().parents[3] / "docs" / "hooks-commands.md"


def _examples() -> tuple[dict[str, str], list[dict[str, Any]]]:
    if not DOC.exists():
        pytest.skip("docs/hooks-commands.md is not beside this plugin (an installed copy)")
    text = DOC.read_text(encoding="utf-8").split("## Worked examples", 1)[1].split("## Custom slash commands")[0]
    scripts = dict(re.findall(r'```python title="([^"]+)"\n(.*?)```', text, re.S))
    settings = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    return scripts, settings


def _install(workspace: Path, name: str) -> dict[str, Any]:
    scripts, settings = _examples()
    source = scripts[name].replace("#!/usr/bin/env python3", f"#!{sys.executable}", 1)
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    path.chmod(0o755)
    (config,) = [s for s in settings if name in str(s)]
    return config["hooks"]


async def test_the_command_validator(workspace):
    hooks = _install(workspace, ".smoke/hooks/no_grep.py")
    agent, provider = make_agent(workspace, [call("run_command", command="grep -r TODO ."),
                                             call("run_command", command="rg TODO"), "done"],
                                 auto_approve=True, hooks=hooks)
    await agent.run("find the TODOs")
    assert "Use 'rg' (ripgrep) instead of 'grep'" in texts(last_result(provider, 1))
    assert texts(last_result(provider, 2)) == "ran: rg TODO"


async def test_the_formatter_after_edits(workspace):
    hooks = _install(workspace, ".smoke/hooks/tidy.py")
    agent, provider = make_agent(workspace, [call("write_file", path="src/app.py", content="x = 1   \ny = 2"), "done"],
                                 auto_approve=True, hooks=hooks)
    await agent.run("write it")
    assert (workspace / "src" / "app.py").read_text() == "x = 1\ny = 2\n"
    assert texts(last_result(provider, 1)) == "wrote src/app.py\n(tidied app.py)"


@pytest.mark.slow
async def test_the_stop_gate_that_requires_passing_tests(workspace):
    hooks = _install(workspace, ".smoke/hooks/tests_pass.py")
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (workspace / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n")
    turns: list[Any] = [
        "All done.",
        call("write_file", path="calc.py", content="def add(a, b):\n    return a + b\n"),
        "Fixed; done now.",
    ]
    agent, provider = make_agent(workspace, turns, auto_approve=True, hooks=hooks)
    result = await agent.run("fix add")
    assert result.status == "completed" and result.text == "Fixed; done now."
    sent_back = provider.requests[1].messages[-1]["content"][0]["text"]
    assert sent_back.startswith("The tests fail; fix them before you finish:") and "1 failed" in sent_back
