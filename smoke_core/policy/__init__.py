"""Who may decide what (DESIGN §9): settings, layers and trust (``settings/``);
permission rules, the gate, the shell parse of commands (``commands/``) and
control files; secrets kept out of child processes; the OS sandbox (``sandbox/``).

Imports base and tools; what it needs from above is handed in.
"""
