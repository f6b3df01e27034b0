"""smoke-tools-terminal against core's ToolContract, the kit third-party tool plugins use."""

from __future__ import annotations

import smoke_tools_terminal

from smoke_core.testing import ToolContract


class TestTerminalToolContract(ToolContract):
    plugin = smoke_tools_terminal
    sample_inputs = {
        "run_command": {"command": "echo contract"},
        "run_test": {"command": "true"},
    }
