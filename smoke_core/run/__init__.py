"""An agent and its runs (DESIGN §4): ``create_agent`` (``factory``), the
:class:`Agent`, a run's handle, state, step loop, subagents, model caller,
tool executor, compaction, pauses, event bus, call journal, typed output,
fair turns and the chat's slash commands. Imports every part below it (base,
tools, wire, store, policy, hooks); imported by batch, the demo and the CLI.
"""
