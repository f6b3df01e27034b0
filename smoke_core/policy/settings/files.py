"""Settings files: where they are, reading them, the trust store, and
editing them in place (keeping comments), for :mod:`smoke_core.settings`."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from ...base.errors import ConfigError
from ...base.smoke_dir import ensure_smoke_dir

DEFAULT_MANAGED_PATH = "/etc/smoke/managed.yaml"


class SettingsError(ConfigError):
    """A setting, file or ``create_agent`` argument that Smoke cannot accept.
    The message names where it came from, the key, what was expected and
    the value given."""


class UnknownSettingError(SettingsError, TypeError):
    """An unknown ``create_agent`` keyword argument (a ``TypeError``, as
    Python raises for unknown arguments) or an unknown settings key."""


# ---------------------------------------------------------------- paths


def user_settings_path() -> Path:
    return Path(user_settings_file())


def user_settings_file() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "smoke", "config.yaml")


def project_settings_path(workspace: str | os.PathLike[str]) -> Path:
    return Path(workspace) / ".smoke" / "config.yaml"


def local_settings_path(workspace: str | os.PathLike[str]) -> Path:
    return Path(workspace) / ".smoke" / "config.local.yaml"


def managed_settings_path() -> Path:
    return Path(os.environ.get("SMOKE_MANAGED_SETTINGS") or DEFAULT_MANAGED_PATH)


def _state_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "smoke" / "trust-offered.json"


# ---------------------------------------------------------------- reading files

_file_cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def read_settings_file(path: str | os.PathLike[str], *, managed: bool = False) -> dict[str, Any] | None:
    """The mapping in ``path`` (None when the file does not exist). A file
    that cannot be read, is not YAML or does not hold a mapping raises
    :class:`SettingsError`."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise SettingsError(read_problem(path, f"cannot be read ({exc.strerror or exc})", managed)) from None
    if not stat.S_ISREG(st.st_mode):
        raise SettingsError(read_problem(path, "is not a file", managed))
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    cached = _file_cache.get(str(path))
    if cached is not None and cached[0] == stamp:
        return copy.deepcopy(cached[1])
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(read_problem(path, f"cannot be read ({exc})", managed)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SettingsError(read_problem(path, f"is not valid YAML: {exc}", managed)) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SettingsError(read_problem(
            path, f"must hold a mapping of settings (model: ..., permissions: ...), got {type(data).__name__}", managed))
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise SettingsError(read_problem(path, f"has a key that is not text: {bad[0]!r}", managed))
    if len(_file_cache) > 256:
        _file_cache.clear()
    _file_cache[str(path)] = (stamp, copy.deepcopy(data))
    return data


def read_problem(path: str | os.PathLike[str], what: str, managed: bool) -> str:
    if managed:
        return (f"managed settings {path} {what.rstrip()}. Smoke refuses to run until it is fixed: managed settings "
                f"are your organisation's policy (ask whoever manages this machine).")
    return f"{path} {what}. Fix the file or remove it."


# ---------------------------------------------------------------- trust store


def norm_folder(path: str | os.PathLike[str]) -> Path:
    return Path(realpath(os.fspath(path)))


@functools.lru_cache(maxsize=256)
def realpath(path: str) -> str:
    # create_agent resolves the same workspace again and again
    return os.path.realpath(os.path.expanduser(path))


def trusted_folders(*, include_managed: bool = True) -> list[Path]:
    """Folders the person (or managed settings) trusted."""
    out: list[Path] = []
    sources = [user_settings_path()]
    if include_managed:
        sources.insert(0, managed_settings_path())
    for i, path in enumerate(sources):
        data = read_settings_file(path, managed=include_managed and i == 0) or {}
        folders = data.get("trusted_folders") or []
        if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
            raise SettingsError(f"{path}: trusted_folders: expected a list of folder paths, got {folders!r}")
        out.extend(norm_folder(f) for f in folders)
    return out


def trusted_by(workspace: str | os.PathLike[str]) -> Path | None:
    """The trusted folder that covers ``workspace`` (itself or a parent), or None."""
    ws = norm_folder(workspace)
    for folder in trusted_folders():
        if ws == folder or folder in ws.parents:
            return folder
    return None


def is_trusted(workspace: str | os.PathLike[str]) -> bool:
    return trusted_by(workspace) is not None


def trust_folder(workspace: str | os.PathLike[str]) -> Path:
    """Add ``workspace`` (resolved) to ``trusted_folders`` in the user settings; returns the file."""
    folder = norm_folder(workspace)
    path = user_settings_path()
    add_to_list(path, ("trusted_folders",), str(folder))
    return path


def revoke_folder(workspace: str | os.PathLike[str]) -> bool:
    """Remove ``workspace`` from the user's ``trusted_folders``; False when it was not there."""
    folder = norm_folder(workspace)
    path = user_settings_path()
    data = read_settings_file(path) or {}
    entries = [e for e in data.get("trusted_folders") or [] if isinstance(e, str)]
    matching = [e for e in entries if norm_folder(e) == folder]
    for entry in matching:
        remove_from_list(path, ("trusted_folders",), entry)
    return bool(matching)


def trust_offered(workspace: str | os.PathLike[str]) -> bool:
    """True when the terminal already offered to trust this folder (it offers once)."""
    try:
        data = json.loads(_state_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, list) and str(norm_folder(workspace)) in data


def mark_trust_offered(workspace: str | os.PathLike[str]) -> None:
    path = _state_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            data = []
    except (OSError, ValueError):
        data = []
    folder = str(norm_folder(workspace))
    if folder not in data:
        data.append(folder)
    with contextlib.suppress(OSError):
        _atomic_write(path, json.dumps(data, indent=1) + "\n")


# ---------------------------------------------------------------- editing files


def _atomic_write(path: Path, text: str) -> None:
    if path.parent.name == ".smoke" and not path.parent.exists():
        ensure_smoke_dir(path.parent.parent)  # a workspace's .smoke/: with its .gitignore
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    _file_cache.pop(str(path), None)


def _list_at(data: dict[str, Any], keys: tuple[str, ...], path: Path, create: bool) -> list[Any] | None:
    node: Any = data
    for i, key in enumerate(keys):
        last = i == len(keys) - 1
        if not isinstance(node, dict):
            raise SettingsError(f"{path}: {'.'.join(keys[:i])} must be a mapping to hold {'.'.join(keys)}")
        if key not in node or node[key] is None:
            if not create:
                return None
            node[key] = [] if last else {}
        node = node[key]
    if not isinstance(node, list):
        raise SettingsError(f"{path}: {'.'.join(keys)} must be a list, got {node!r}; fix the file")
    return node


def add_to_list(path: Path, keys: tuple[str, ...], value: str) -> None:
    """Append ``value`` to the list at ``keys`` in the YAML file ``path``,
    keeping everything else (comments too, when the file's layout allows a
    plain text insertion; otherwise the file is rewritten from its data)."""
    data = read_settings_file(path) or {}
    expected = copy.deepcopy(data)
    target = _list_at(expected, keys, path, create=True)
    assert target is not None
    if value in target:
        return
    target.append(value)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    new_text = _text_append(text, keys, value)
    _write_checked(path, new_text, expected)


def remove_from_list(path: Path, keys: tuple[str, ...], value: str) -> None:
    """Remove ``value`` from the list at ``keys`` in ``path`` (keeping the rest)."""
    data = read_settings_file(path) or {}
    expected = copy.deepcopy(data)
    target = _list_at(expected, keys, path, create=False)
    if target is None or value not in target:
        return
    target.remove(value)
    text = path.read_text(encoding="utf-8")
    new_text = None
    import yaml

    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        m = re.match(r"^\s*-\s+(.*?)\s*$", line)
        if not m:
            continue
        try:
            if yaml.safe_load(m.group(1)) != value:
                continue
        except yaml.YAMLError:
            continue
        candidate = "".join(lines[:i] + lines[i + 1 :])
        if _parses_to(candidate, expected):
            new_text = candidate
            break
    _write_checked(path, new_text, expected)


def _parses_to(text: str, expected: dict[str, Any]) -> bool:
    import yaml

    try:
        return (yaml.safe_load(text) or {}) == expected
    except yaml.YAMLError:
        return False


def _write_checked(path: Path, new_text: str | None, expected: dict[str, Any]) -> None:
    if new_text is None or not _parses_to(new_text, expected):
        import yaml

        new_text = yaml.safe_dump(expected, sort_keys=False, allow_unicode=True, default_flow_style=False)
    _atomic_write(path, new_text)


def _text_append(text: str, keys: tuple[str, ...], value: str) -> str | None:
    """``text`` with ``value`` appended to the block list at ``keys`` by
    inserting a line; None when the layout is not the plain block style."""
    item = json.dumps(value, ensure_ascii=False)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"

    def block_end(start: int, indent: int) -> int:
        # the first line after `start` that is neither blank, a comment, nor deeper than `indent`
        # (a "- item" at the same indent still belongs to a key's list)
        j = start + 1
        while j < len(lines):
            stripped = lines[j].strip()
            lead = len(lines[j]) - len(lines[j].lstrip(" "))
            if stripped and not stripped.startswith("#") and lead <= indent and not (
                lead == indent and stripped.startswith("- ") and indent > 0
            ):
                break
            j += 1
        return j

    def find_key(key: str, start: int, end: int, indent: int | None) -> tuple[int, int] | None:
        for j in range(start, end):
            m = re.match(r"^( *)" + re.escape(key) + r":\s*(#.*)?$", lines[j].rstrip("\n"))
            if m and (indent is None or len(m.group(1)) == indent):
                return j, len(m.group(1))
        return None

    def insert_item(key_line: int, key_indent: int) -> str | None:
        end = block_end(key_line, key_indent)
        items = [j for j in range(key_line + 1, end) if lines[j].lstrip().startswith("- ")]
        if items:
            last = items[-1]
            prefix = lines[last][: len(lines[last]) - len(lines[last].lstrip(" "))]
            insert_at = last + 1
            while insert_at < end and lines[insert_at].strip() and not lines[insert_at].lstrip().startswith(("- ", "#")):
                insert_at += 1  # continuation lines of a multi-line item
            lines.insert(insert_at, f"{prefix}- {item}\n")
        else:
            lines.insert(key_line + 1, f"{' ' * (key_indent + 2)}- {item}\n")
        return "".join(lines)

    top = find_key(keys[0], 0, len(lines), 0)
    if top is None:
        body = f"{keys[0]}:\n"
        if len(keys) == 2:
            body += f"  {keys[1]}:\n    - {item}\n"
        else:
            body += f"  - {item}\n"
        return "".join(lines) + body
    if len(keys) == 1:
        return insert_item(top[0], 0)
    end = block_end(top[0], 0)
    sub = find_key(keys[1], top[0] + 1, end, None)
    if sub is None:
        child_indent = 2
        for j in range(top[0] + 1, end):
            if lines[j].strip() and not lines[j].strip().startswith("#"):
                child_indent = len(lines[j]) - len(lines[j].lstrip(" "))
                break
        lines.insert(top[0] + 1, f"{' ' * child_indent}{keys[1]}:\n{' ' * (child_indent + 2)}- {item}\n")
        return "".join(lines)
    return insert_item(sub[0], sub[1])
