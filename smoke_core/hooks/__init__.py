"""The plugin system: the pluggy manager with built-ins, entry points and
per-agent plugins (``manager``), the one runner of every hook call
(``runner``), what *before* hooks may return (``returns``) and the settings
keys plugins declare (``collect``); the hooks are in :mod:`smoke_core.hookspecs`.
Imports base, tools, wire and policy; imported by the run, batch and the CLI.
"""
