"""Who may decide what (DESIGN §9): the settings model and its layers, files
and trust store; permission rules and the gate; secrets kept out of child
processes; the OS sandbox (:mod:`~smoke_core.policy.sandbox`).

Imports base and tools; what it needs from above (provider key names) is handed
in. Imported by hooks, the run, batch and the CLI.
"""
