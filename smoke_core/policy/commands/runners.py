"""Tool runners: ``uv run``, ``poetry run``, ``conda run``, ``bundle exec``,
``npm exec``, ``nix-shell --run`` and friends. They run the inner command and
must be allowed themselves too (``uv run pytest`` needs ``uv run *`` and
``pytest *``). An option a runner's table does not know stops the analysis
(its value could be taken for the program): the later words become guesses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import DynamicWord
from .wrap import Wrap

if TYPE_CHECKING:
    from .base import WalkerBase

_UV_ARGS = {"--with", "--with-editable", "--with-requirements", "--python", "--project", "--directory",
            "--package", "--extra", "--group", "--only-group", "--no-group", "--env-file", "--index",
            "--default-index", "--index-url", "--extra-index-url", "--find-links", "--config-file",
            "--cache-dir", "--color", "--upgrade-package", "--reinstall-package", "--prerelease",
            "--resolution", "--exclude-newer", "--python-preference", "--link-mode", "--keyring-provider",
            "--index-strategy", "--from"}
_UV_FLAGS = {"--no-project", "--frozen", "--locked", "--isolated", "--no-sync", "--all-extras", "--no-dev",
             "--dev", "--all-packages", "--no-editable", "--active", "--offline", "--no-cache", "--exact",
             "--inexact", "--refresh", "--native-tls", "--preview", "--no-config", "--quiet", "--verbose",
             "--no-progress", "--script", "q", "v"}

Spec = tuple[tuple[str, ...], str, set[str], set[str], tuple[str, ...]]
#: name: (required subcommands, short options with a value, long options with a value, flags,
#: options whose value is a shell string)
RUNNERS: dict[str, Spec] = {
    "uv": (("run", "tool"), "pPfi", _UV_ARGS, _UV_FLAGS, ()),
    "uvx": ((), "pPfi", _UV_ARGS, _UV_FLAGS, ()),
    "poetry": (("run",), "C", {"--directory", "--project"}, {"-q", "-v", "--no-interaction", "--quiet", "q",
                                                             "v", "n"}, ()),
    "pipenv": (("run",), "", set(), set(), ()),
    "pdm": (("run",), "p", {"--project"}, {"-s", "--site-packages", "s"}, ()),
    "hatch": (("run",), "e", {"--env"}, set(), ()),
    "rye": (("run",), "", {"--pyproject"}, set(), ()),
    "pixi": (("run",), "e", {"--environment", "--manifest-path"}, {"--frozen", "--locked"}, ()),
    "conda": (("run",), "np", {"--name", "--prefix", "--cwd"}, {"--no-capture-output", "--live-stream", "-v",
                                                                 "v"}, ()),
    "mamba": (("run",), "np", {"--name", "--prefix", "--cwd"}, {"--no-capture-output", "--live-stream"}, ()),
    "micromamba": (("run",), "np", {"--name", "--prefix", "--cwd"}, set(), ()),
    "bundle": (("exec",), "", {"--gemfile"}, {"--keep-file-descriptors"}, ()),
    "pnpm": (("exec",), "C", {"--dir", "--filter"}, {"-r", "--recursive", "r"}, ()),
    "npm": (("exec",), "w", {"--package", "--workspace"}, {"--yes", "--no", "-y", "y"}, ("-c", "--call")),
    "direnv": (("exec",), "", set(), set(), ()),
    "mise": (("exec", "x"), "C", {"--cd"}, set(), ()),
    "asdf": (("exec",), "", set(), set(), ()),
    "devbox": (("run",), "c", {"--config", "--environment"}, set(), ()),
    "nix-shell": ((), "pIA", {"--packages", "--arg", "--argstr", "--attr", "--include"},
                  {"--pure", "--impure", "--keep"}, ("--run", "--command")),
    "nix": (("develop", "shell"), "", {"--impure"}, {"--impure", "--ignore-environment"}, ("-c", "--command")),
    "dotenv": (("run",), "f", {"--file"}, set(), ()),
    "dbus-run-session": ((), "", set(), set(), ()),
}


def runner(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    subs, short_arg, long_arg, flags, string_opts = RUNNERS[base]
    i, n = 0, len(args)
    if subs:
        if not args or args[0] not in subs:
            return None
        i = 2 if base == "direnv" else 1  # direnv exec DIR cmd
        if base == "uv" and args[0] == "tool":  # uv tool run X (other uv tool subcommands run nothing)
            if args[1:2] != ["run"]:
                return None
            i = 2
    scripts: list[str] = []
    while i < n:
        a = args[i]
        if isinstance(a, DynamicWord):
            w.st.add_opaque(f"{base} with an expanded option")
            return Wrap(counts=True)
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        name = a.split("=", 1)[0]
        if name in string_opts:
            scripts.append(a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < n else ""))
            i += 1 if "=" in a else 2
            continue
        if "=" in a and name.startswith("--"):
            i += 1
        elif name in long_arg or (len(a) == 2 and a[1] in short_arg):
            i += 2
        elif name in flags or (not a.startswith("--") and all(c in flags for c in a[1:])):
            i += 1
        elif not a.startswith("--") and a[1] in short_arg:
            i += 1  # -pVALUE
        elif base in ("uv", "uvx") and a in ("-m", "--module"):
            break
        else:
            w.st.add_opaque(f"{base}: unknown option {a}")
            w.speculate(args[i:])
            return Wrap(counts=True)
    inner = list(args[i:])
    if base in ("uv", "uvx") and inner[:1] in (["-m"], ["--module"]):
        inner = ["python", "-m", *inner[1:]]
    if not inner and not scripts:
        return Wrap(counts=True)
    return Wrap(inners=[inner] if inner else [], scripts=scripts, counts=True)
