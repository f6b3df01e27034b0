"""The tool contract: :class:`ToolDefinition` and results, ``@tool``,
:class:`ToolContext` and the workspace path sandbox.

Imports only :mod:`smoke_core.base`; imported by policy, the run, the CLI and
(through :mod:`smoke_core.plugin`) by tool plugins.
"""
