"""The OS sandbox (bubblewrap) for commands: the ``sandbox:`` settings and the
policy of one command (``settings``), the probe of this machine (``probe``),
the ``bwrap`` command line (``bwrap``), starting a process under it
(``launch``) and explaining what it refused (``refusals``). The door is
:mod:`smoke_core.sandbox`.
"""
