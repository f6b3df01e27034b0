"""Runs from the repository's root (``pytest tests plugins/*/tests``) load the
suite's rules; nox sessions load them with ``-p smoke_pytest_rules``, since a
plugin's tests have their own pytest configuration and root."""

pytest_plugins = ["smoke_pytest_rules"]
