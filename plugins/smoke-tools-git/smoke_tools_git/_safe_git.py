"""How git is invoked so that a repository's own files run nothing.

A repository's ``.git/config`` (and any file it includes) can name programs
that git runs during ordinary read-only commands: ``core.fsmonitor`` during
``status`` and ``diff``, clean filters when a file is re-hashed, textconv
drivers in diffs, ``gpg.program`` when a log shows signatures, hooks on
commit, a lazy fetch from a "promisor" remote when an object is missing.
Smoke treats that file as text from a stranger (DESIGN §9), so every git
command gets:

* a fixed set of overrides (:data:`FIXED_OVERRIDES`) for the keys that run
  programs whatever their name;
* an override for every key of the repository's own configuration whose name
  says it runs a program (``filter.<driver>.clean``, ``diff.<driver>.textconv``,
  ``credential.<url>.helper``...), found by listing that configuration
  (:func:`repository_overrides`): driver names are chosen by the repository,
  so they cannot be listed in advance;
* an environment (:func:`git_environment`) without provider keys, without
  variables that point git at another repository, with no system config, no
  prompts, no optional locks and no transport at all (so a lazy fetch fails
  instead of running ``ext::`` commands or ssh).

Overrides travel as ``GIT_CONFIG_COUNT`` / ``GIT_CONFIG_KEY_<n>`` /
``GIT_CONFIG_VALUE_<n>`` rather than ``-c key=value``: a driver name may
contain ``=`` (``[filter "a=b"]``), which ``-c`` would split in the wrong
place. Command-line configuration is read last, so it wins over the
repository's; and it is inherited by any git process git itself starts.

The user's own global configuration (``~/.gitconfig``) is trusted and left
as it is: a filter installed there by the person (git-lfs, say) still runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from smoke_core.secrets import child_env

#: Overrides applied to every git command, whatever the repository says.
#: Later entries win over earlier ones, and these come after the per-key ones.
FIXED_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),  # a command run on every index refresh (status, diff, add)
    ("core.hooksPath", "/dev/null"),  # no hook runs: pre-commit, post-commit, reference-transaction...
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("core.virtualFilesystem", ""),  # VFS for Git: a hook run on index reads
    ("credential.helper", ""),  # an empty value resets the list of helpers
    ("diff.external", ""),
    ("interactive.diffFilter", ""),
    ("uploadpack.packObjectsHook", ""),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("commit.gpgSign", "false"),  # signing runs gpg.program, which the repository may choose
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),  # verifying runs gpg.program too
    ("protocol.allow", "never"),
    ("gc.auto", "0"),  # no `git gc --auto` / maintenance after a commit
    ("maintenance.auto", "false"),
    ("safe.bareRepository", "explicit"),  # a bare repository planted in the workspace is not used
    ("mailmap.file", ""),  # files the repository names are not read into the output
    ("mailmap.blob", ""),
    # submodules are other repositories with their own config: do not enter them
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    # output the tools and the model can rely on
    ("color.ui", "false"),
    ("color.diff", "false"),
    ("color.status", "false"),
    ("color.branch", "false"),
    ("core.quotePath", "false"),
    ("diff.relative", "false"),
    ("diff.noprefix", "false"),
    ("diff.mnemonicPrefix", "false"),
    ("status.relativePaths", "true"),
)

#: Last name components (lower case) of configuration keys that make git run a
#: program, whatever section or driver they belong to, with the value that
#: turns them off.
_RUNS_A_PROGRAM: dict[str, str] = {
    "clean": "",  # filter.<driver>.clean
    "smudge": "",  # filter.<driver>.smudge
    "process": "",  # filter.<driver>.process
    "textconv": "",  # diff.<driver>.textconv
    "command": "",  # diff.<driver>.command, trailer.<token>.command, hook.<name>.command (newer git)
    "cmd": "",  # difftool/mergetool/man/browser/guitool.<tool>.cmd, trailer.<token>.cmd
    "driver": "",  # merge.<driver>.driver
    "helper": "",  # credential.<url>.helper
    "program": "false",  # gpg.program, gpg.<format>.program
    "askpass": "",
    "sshcommand": "false",
    "editor": "true",
    "pager": "cat",
    "hookspath": "/dev/null",
    "fsmonitor": "false",
    "external": "",
    "difffilter": "",
    "uploadpack": "git-upload-pack",  # remote.<name>.uploadpack
    "receivepack": "git-receive-pack",
    "proxy": "",  # http.proxy, remote.<name>.proxy
    "gitproxy": "",
    "packobjectshook": "",
    "alternaterefscommand": "",
    "defaultkeycommand": "",
    "virtualfilesystem": "",
    "sendmailcmd": "",
    "event": "",  # hook.<name>.event (newer git): attach the hook to no event
}

#: Scopes of ``git config --list --show-scope`` that the person controls.
_TRUSTED_SCOPES = frozenset({"global", "system", "command"})

#: Environment variables that point git at another repository, index or
#: object store, or change how paths and pathspecs are read. They may be
#: inherited (Smoke started from a git hook has ``GIT_DIR`` and
#: ``GIT_INDEX_FILE`` set) and would make the tools act on something else.
_DROPPED_ENV = frozenset(
    {
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
        "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE", "GIT_REPLACE_REF_BASE", "GIT_NO_REPLACE_OBJECTS",
        "GIT_CONFIG", "GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS", "GIT_ATTR_SOURCE",
        "GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS",
    }
)

#: Set for every git command.
_FIXED_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    # An empty allow-list: no transport at all (file, ssh, http, ext::...),
    # so a partial clone's lazy fetch of a missing object fails instead of
    # running the repository's remote command.
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_NO_LAZY_FETCH": "1",  # git >= 2.44 says so directly
    "NO_COLOR": "1",
    "TERM": "dumb",
}


def parse_config_listing(raw: bytes) -> list[tuple[str, str, str | None]]:
    """``git config --list --show-scope -z`` → ``[(scope, key, value)]``.

    Each entry is ``scope NUL key [LF value] NUL``; a key without ``=`` in
    the file has no value.
    """
    fields = raw.split(b"\0")
    out: list[tuple[str, str, str | None]] = []
    for i in range(0, len(fields) - 1, 2):
        scope = fields[i].decode("utf-8", "replace")
        key, sep, value = fields[i + 1].partition(b"\n")
        out.append(
            (scope, key.decode("utf-8", "replace"), value.decode("utf-8", "replace") if sep else None)
        )
    return out


def neutral_value(key: str) -> str | None:
    """The value that stops ``key`` from running a program, or None when the
    key runs nothing. ``key`` is as git lists it (section and name in lower case)."""
    section, _, rest = key.partition(".")
    name = rest.rsplit(".", 1)[-1].lower()
    section = section.lower()
    if section == "filter" and name == "required":
        return "false"  # a required filter with no command would fail every add
    if section == "protocol" and name == "allow":
        return "never"
    if section == "pager":
        return "false"  # pager.<command>
    if section == "color" and "." not in rest:
        return "false"  # color.<area> = always would put escape codes in the output
    if section == "include" or section == "includeif":
        return None  # reading a file runs nothing; what it sets is listed too
    return _RUNS_A_PROGRAM.get(name)


def repository_overrides(entries: Iterable[tuple[str, str, str | None]]) -> list[tuple[str, str]]:
    """Overrides for every program-running key set outside the person's own
    configuration (the repository's ``.git/config``, its worktree config and
    whatever they include)."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for scope, key, _value in entries:
        if scope in _TRUSTED_SCOPES or key in seen:
            continue
        value = neutral_value(key)
        if value is not None:
            seen.add(key)
            out.append((key, value))
    return out


def git_environment(
    overrides: Iterable[tuple[str, str]] = (), base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for one git command: ``base`` (default ``os.environ``)
    without provider keys (:func:`smoke_core.secrets.child_env`) and without
    repository-locating variables, plus :data:`_FIXED_ENV` and the
    configuration ``overrides`` followed by :data:`FIXED_OVERRIDES`.

    Configuration the person passes in the environment (``GIT_CONFIG_COUNT``
    entries, ``GIT_CONFIG_PARAMETERS``) is theirs and is kept, before ours."""
    env = child_env(os.environ if base is None else base)
    inherited = _inherited_config(env)
    for name in list(env):
        if name in _DROPPED_ENV or name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")):
            del env[name]
    env.update(_FIXED_ENV)
    pairs = [*inherited, *overrides, *FIXED_OVERRIDES]
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def _inherited_config(env: Mapping[str, str]) -> list[tuple[str, str]]:
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        return []
    pairs = []
    for i in range(max(0, count)):
        key = env.get(f"GIT_CONFIG_KEY_{i}")
        if key:
            pairs.append((key, env.get(f"GIT_CONFIG_VALUE_{i}", "")))
    return pairs
