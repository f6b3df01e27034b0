"""smoke-tools-agent against core's ToolContract, the kit third-party tool plugins use."""

from __future__ import annotations

import smoke_tools_agent

from smoke_core.testing import ToolContract


class TestAgentToolContract(ToolContract):
    plugin = smoke_tools_agent
    sample_inputs = {
        "todo_write": {"todos": [{"content": "read the code", "status": "in_progress"}]},
        "ask_user": {"question": "Which file?", "options": ["a.py", "b.py"]},
        "task": {"description": "look around", "prompt": "List the files and report."},
        "finish_task": {"summary": "Looked around; nothing left open."},
    }
