"""Sessions across runs: the store protocols, the in-memory and SQLite stores,
session leases, damaged-file repair and store URLs.

Imports only :mod:`smoke_core.base`; imported by the run, batch and the CLI,
and by store plugins through :mod:`smoke_core.plugin`.
"""
