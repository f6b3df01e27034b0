"""The plugin system: the pluggy manager with built-ins, entry points and
per-agent plugins (``manager``), the one runner of every hook call
(``runner``), what hooks may return (``returns``), the settings keys plugins
declare (``collect``); the hooks are in :mod:`smoke_core.hookspecs` (with the
session and turn hooks of ``session_hookspecs`` and the protocols of ``views``).
Imports base, tools, wire and policy; imported by the run, batch and the CLI.
"""
