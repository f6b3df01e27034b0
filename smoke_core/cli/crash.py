"""What the ``smoke`` command does with an error nobody planned for: one
line for the person, the whole story in a crash report file (imported only
when something went wrong).

Expected errors — a person's mistake: bad settings, a missing file, a
folder that cannot be read — are one message and exit status 2
(:func:`expected_message`); anything else is a bug in Smoke or a plugin,
reported as one line plus the path of a crash report holding the traceback,
the versions and the installed plugins (``--debug`` prints the traceback
instead). Secrets found in the environment are masked in the report.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from pathlib import Path

EXIT_USAGE = 2
EXIT_CRASH = 1


def expected_message(exc: BaseException) -> str | None:
    """The one-line message for an error that is a person's mistake or a fact
    of their machine, or None when it is a bug (a crash report is due)."""
    from ..base.errors import ConfigError

    if isinstance(exc, ConfigError):  # settings files, values, unknown keys (SettingsError too)
        return str(exc)
    if isinstance(exc, (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)):
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        return f"{exc.strerror or exc}{where}"
    if isinstance(exc, OSError) and exc.errno is not None:  # disk full, too many open files, ...
        return f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    return None


def crash_dir() -> Path:
    """``$XDG_STATE_HOME/smoke/crashes`` (``~/.local/state/smoke/crashes``)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "smoke" / "crashes"


def write_report(exc: BaseException, argv: list[str]) -> Path | None:
    """Write the crash report; its path, or None when it cannot be written."""
    from ..base.version import __version__
    from ..policy.secrets import Redactor

    lines = [
        f"smoke {__version__} crashed at {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
        f"command: smoke {' '.join(argv)}",
        f"cwd: {os.getcwd()}",
        f"python: {sys.version.split()[0]} ({sys.executable})",
        f"platform: {platform.platform()}",
        "",
        "plugins:",
        *_plugin_lines(),
        "",
        "".join(traceback.format_exception(exc)).rstrip(),
        "",
    ]
    text = Redactor.from_environment().redact("\n".join(lines))
    folder = crash_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError:
        return None
    return path


def _plugin_lines() -> list[str]:
    try:
        from ..hooks.manager import plugin_report

        return [
            f"  {i.name}: {i.distribution or '-'} {i.version or ''}" + (f" (broken: {i.error})" if i.error else "")
            for i in plugin_report()
        ]
    except Exception as exc:  # the report must be written even when plugins are what broke
        return [f"  (could not list plugins: {type(exc).__name__}: {exc})"]


def report(exc: BaseException, argv: list[str], *, debug: bool) -> int:
    """Tell the person about ``exc``; the exit status to use."""
    message = expected_message(exc)
    if message is not None:
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        print(f"smoke: {message}", file=sys.stderr)
        return EXIT_USAGE
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
        print(f"smoke: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_CRASH
    path = write_report(exc, argv)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    where = f"details in {path}" if path is not None else "the crash report could not be written"
    print(f"smoke: unexpected error ({type(exc).__name__}{': ' + first if first else ''}); this is a bug in "
          f"Smoke or a plugin — {where} (run again with --debug to see the traceback)", file=sys.stderr)
    return EXIT_CRASH
