"""``smoke batch`` without the terminal: the tasks file, one task in its own
workspace copy, the engines and :func:`run_batch` (the results file, resuming).

Imports the run and the parts below it; imported by the CLI, by
:mod:`smoke_core.plugin` (for engine plugins such as smoke-ray).
"""
