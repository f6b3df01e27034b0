"""``smoke demo``: an offline simulated model driving the real harness
(``smoke demo --real``: a real small model on this machine, served by
llama.cpp's llama-server — :mod:`smoke_core.demo.llama_server`).

Only the model's turns are scripted. The tools are the real tool plugins
(filesystem, search, terminal, agent), the hooks, permissions and events are
the real ones, the sample project is copied to a temporary folder, its file
really changes and its tests really run — failing before the fix and passing
after it.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..testing import ScriptedProvider
from ..wire.types import ModelRequest

if TYPE_CHECKING:
    from ..run.agent import Agent

DEMO_TASK = (
    "The tests of the stats package fail: median() gives wrong answers for some inputs. "
    "Find the bug, fix it, and make the tests pass."
)
SIMULATION_LABEL = "simulated model (offline demo: the model's turns are scripted; tools, files and tests are real)"
#: the tools a real small model gets in ``smoke demo --real`` (every tool's schema costs prompt tokens on a CPU)
REAL_DEMO_TOOLS = ("list_directory", "read_file", "grep", "edit_file", "run_test", "finish_task")
REQUIRED_GROUPS = ("filesystem", "search", "terminal", "agent")
REQUIRED_PACKAGES = "smoke-tools-filesystem smoke-tools-search smoke-tools-terminal smoke-tools-agent"


def sample_project_source() -> Path:
    return Path(str(resources.files(__package__) / "sample_project"))


#: written into a demo folder so a later ``smoke demo -w`` knows the folder is its own
DEMO_MARKER = Path(".smoke") / "demo-project"


class DemoFolderError(RuntimeError):
    """``smoke demo -w DIR`` named a folder that holds someone's files."""


def is_previous_demo(folder: Path) -> bool:
    """True when ``folder`` was made by ``smoke demo`` (its marker, or a
    README byte-identical to the sample's from before the marker existed)."""
    if (folder / DEMO_MARKER).is_file():
        return True
    readme = folder / "README.md"
    try:
        return readme.is_file() and readme.read_bytes() == (sample_project_source() / "README.md").read_bytes()
    except OSError:
        return False


def copy_sample_project(dest: str | Path | None = None) -> Path:
    """Copy the bundled sample project to ``dest`` (a new temp folder by default).

    ``dest`` must be missing, empty, or a previous demo folder: a folder
    holding anything else is refused with :class:`DemoFolderError` and left
    exactly as it was (the sample project would overwrite files such as
    ``README.md`` and ``tests/test_core.py``)."""
    target = Path(dest) if dest is not None else Path(tempfile.mkdtemp(prefix="smoke-demo-")) / "stats-project"
    if target.exists() and not target.is_dir():
        raise DemoFolderError(f"{target} is a file, not a folder; name an empty or new folder for the demo")
    if target.is_dir() and any(target.iterdir()) and not is_previous_demo(target):
        raise DemoFolderError(
            f"{target} is not empty and is not a previous demo folder: the sample project would overwrite "
            f"files there. Name an empty or new folder (e.g. smoke demo -w {_example_folder(target)}), or "
            f"leave out -w to use a temporary folder."
        )
    shutil.copytree(sample_project_source(), target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    marker = target / DEMO_MARKER
    marker.parent.mkdir(exist_ok=True)
    marker.write_text("made by `smoke demo`: a later `smoke demo -w` may copy the sample project here again\n")
    return target


def _example_folder(target: Path) -> str:
    candidate = target / "smoke-demo"
    n = 2
    while candidate.exists():
        candidate = target / f"smoke-demo-{n}"
        n += 1
    return shlex.quote(str(candidate))


def _test_command() -> str:
    return f"{shlex.quote(sys.executable)} -m unittest discover -s tests -v"


def _last_tool_text(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message["role"] == "tool":
            return "\n".join(
                c.get("text", "")
                for block in message["content"]
                for c in block.get("content", [])
                if c.get("type") == "text"
            )
    return ""


def demo_turns() -> list[Any]:
    """The scripted turns of the simulated model."""
    test_cmd = _test_command()

    def after_first_test(request: ModelRequest) -> dict[str, Any]:
        output = _last_tool_text(request)
        failing = "FAILED" in output or "exit code 1" in output
        text = (
            "The median tests fail as reported (unsorted input gives the wrong middle value). "
            "median() takes the middle element without sorting first; sorting the copy fixes it."
            if failing
            else "The tests pass already; I'll still make median() robust to unsorted input."
        )
        return {
            "text": text,
            "tool_calls": [
                {
                    "name": "edit_file",
                    "input": {
                        "path": "stats/core.py",
                        "old_string": (
                            '    values = list(values)\n    if not values:\n        raise ValueError("median() of an empty sequence")'
                        ),
                        "new_string": (
                            '    values = sorted(values)\n    if not values:\n        raise ValueError("median() of an empty sequence")'
                        ),
                    },
                }
            ],
        }

    def after_second_test(request: ModelRequest) -> dict[str, Any]:
        output = _last_tool_text(request)
        passed = "OK" in output and "FAILED" not in output
        summary = (
            "Fixed median() in stats/core.py: it now sorts a copy of its input before taking the middle "
            "value. All 7 tests pass (python -m unittest)."
            if passed
            else "I changed median() to sort its input, but the tests still fail; see the output above."
        )
        return {
            "text": "All tests pass now." if passed else "The tests still fail.",
            "tool_calls": [
                {"name": "todo_write", "input": {"todos": [
                    {"content": "Reproduce the failing median tests", "status": "completed"},
                    {"content": "Fix median() for unsorted input", "status": "completed"},
                    {"content": "Run the test suite", "status": "completed" if passed else "in_progress"},
                ]}},
                {"name": "finish_task", "input": {"summary": summary}},
            ],
        }

    return [
        {"text": "I'll start by looking at the project layout.",
         "tool_calls": [{"name": "list_directory", "input": {"path": "."}}]},
        {"text": "Let me find where median() is defined.",
         "tool_calls": [{"name": "grep", "input": {"pattern": "def median", "path": "."}}]},
        {"text": "Reading the implementation.",
         "tool_calls": [{"name": "read_file", "input": {"path": "stats/core.py"}}]},
        {"text": "Here is my plan.",
         "tool_calls": [{"name": "todo_write", "input": {"todos": [
             {"content": "Reproduce the failing median tests", "status": "in_progress"},
             {"content": "Fix median() for unsorted input", "status": "pending"},
             {"content": "Run the test suite", "status": "pending"},
         ]}}]},
        {"text": "Running the tests to see the failure.",
         "tool_calls": [{"name": "run_test", "input": {"command": test_cmd}}]},
        after_first_test,
        {"text": "Running the tests again.",
         "tool_calls": [{"name": "run_test", "input": {"command": test_cmd}}]},
        after_second_test,
    ]


class DemoProvider(ScriptedProvider):
    """The simulated model of ``smoke demo`` (provider name ``demo``)."""

    name = "demo"
    supports_images = False

    def __init__(self, *, model: str | None = None, **_: Any) -> None:
        super().__init__(demo_turns(), model=model or "smoke-demo-simulated", chunk_size=14)


def real_demo_label(model: str, where: str, source: str) -> str:
    return (f"real model {model} (llama-server at {where}, found in "
            f"{'SMOKE_LLAMA_SERVER / SMOKE_LLAMA_MODEL' if source == 'environment' else 'the realmodel cache'}; "
            f"tool calls constrained to the tools' schemas)")


def create_real_demo_agent(
    base_url: str, model: str, workspace: str | Path | None = None, *, auto_approve: bool = False, **kwargs: Any
) -> tuple[Agent, Path]:
    """The demo on a fresh copy of the sample project, driven by a real
    model that a llama-server at ``base_url`` serves as ``model``
    (:mod:`smoke_core.demo.llama_server` starts one): the ``llamacpp``
    provider, tool calls constrained, temperature 0, a fixed seed, and only
    :data:`REAL_DEMO_TOOLS` exposed."""
    from ..hooks.manager import collect_providers, create_plugin_manager
    from ..run.factory import create_agent

    if "llamacpp" not in collect_providers(create_plugin_manager()).names():
        raise RuntimeError("smoke demo --real needs the llamacpp provider: pip install smoke-provider-openai")
    project = copy_sample_project(workspace)
    kwargs.setdefault("max_steps", 16)
    # a small model does not guess the test command of a project it has not seen; and it copies any
    # absolute path it is shown into its next call (the interpreter's, as an edit_file path), so the
    # command names the interpreter by its name when that finds one (the tests need only the stdlib)
    command = "python3 -m unittest discover -s tests -v" if shutil.which("python3") else _test_command()
    kwargs.setdefault("instructions", "Paths are relative to the workspace root. To run the project's tests, "
                                      f"call run_test with the command: {command}")
    agent = create_agent(project, provider="llamacpp", model=model, base_url=base_url, auto_approve=auto_approve,
                         tool_calls="constrained", temperature=0, seed=1, max_tokens=512, **kwargs)
    missing = [g for g in REQUIRED_GROUPS if not any(t.group == g for t in agent.tools.values())]
    if missing:
        raise RuntimeError(
            f"smoke demo needs the tool groups {', '.join(missing)}: pip install {REQUIRED_PACKAGES}"
        )
    for name in agent.registry.names():
        if name not in REAL_DEMO_TOOLS:
            agent.registry.unregister(name)
    return agent, project


def create_demo_agent(
    workspace: str | Path | None = None, *, auto_approve: bool = False, **kwargs: Any
) -> tuple[Agent, Path]:
    """An agent on a fresh copy of the sample project, driven by :class:`DemoProvider`.

    ``workspace`` (optional) is where to copy the project. Other keyword
    arguments go to :func:`~smoke_core.create_agent`.
    """
    from ..run.factory import create_agent

    project = copy_sample_project(workspace)
    agent = create_agent(project, provider=DemoProvider(), auto_approve=auto_approve, **kwargs)
    missing = [g for g in REQUIRED_GROUPS if not any(t.group == g for t in agent.tools.values())]
    if missing:
        raise RuntimeError(
            f"smoke demo needs the tool groups {', '.join(missing)}: pip install {REQUIRED_PACKAGES}"
        )
    return agent, project
