"""A workspace's ``.smoke/`` folder, made with its own ``.gitignore`` the
first time Smoke creates it: Smoke's state there (the session database, run
artifacts, the last session, a person's local settings) stays out of
``git status``, while ``config.yaml`` — the project's shared settings — and
the project's command files, agents and skills stay visible to git."""

from __future__ import annotations

import os
from pathlib import Path

#: what ``.smoke/.gitignore`` holds when Smoke creates the folder
GITIGNORE = """\
# Written by Smoke when it created this folder: its own state is not part of the project.
# config.yaml (the project's shared settings) is not ignored: commit it if you want to share it.
sessions.db
sessions.db-*
runs/
last-session
config.local.yaml
*.tmp
"""


def ensure_smoke_dir(root: Path) -> Path:
    """``<root>/.smoke``, created when missing — then with its ``.gitignore``
    (an existing folder is left as it is: the person may have chosen
    otherwise). Raises ``OSError`` when it cannot be created."""
    folder = Path(root) / ".smoke"
    try:
        folder.mkdir()
    except FileExistsError:
        return folder
    except FileNotFoundError:
        folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        return folder
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(GITIGNORE)
    return folder
