"""Programs that run another program, looked through so that rules see what
actually runs: ``env``, ``command``, ``builtin``, ``exec``, ``time``,
``nice``, ``nohup``, ``timeout``, ``stdbuf``, ``xargs``, ``sudo``, shells with
``-c`` (parsed again), ``eval``, ``find -exec``, tool runners (``uv run``,
``poetry run``, …) and more.

A *transparent* wrapper (``timeout 5 X``) is a container: an allow rule needs
only its inner command. One that *counts* (``sudo``, ``find -exec``, a tool
runner) must be allowed itself as well as what it runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import WalkerBase
from .model import DynamicWord
from .runners import RUNNERS, runner
from .variables import ASSIGNMENT, FOREIGN_SHELLS
from .wrap import Handler, Wrap, skip_options, value_follows


def _simple(short_arg: str = "", long_arg: Iterable[str] = ()) -> Handler:
    def handler(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
        i = skip_options(args, short_arg, long_arg)
        if i is None:
            w.st.add_opaque(f"{base} with an expanded option")
            w.speculate(args)
            return None
        if i >= len(args):
            return None
        return Wrap(inners=[list(args[i:])])

    return handler


def _ionice(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    if any(a in ("-p", "-P", "-u") or a.startswith(("--pid", "--pgid", "--uid")) for a in args):
        return None
    return _simple("cn", ["--class", "--classdata"])(w, base, args, feeds)


def _timeout(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i = skip_options(args, "sk", ["--signal", "--kill-after"])
    if i is None:
        w.st.add_opaque("timeout with an expanded option")
        w.speculate(args)
        return None
    if i + 1 >= len(args):
        return None
    return Wrap(inners=[list(args[i + 1:])])


def _command(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i = 0
    while i < len(args) and args[i].startswith("-") and not isinstance(args[i], DynamicWord):
        if args[i] == "--":
            i += 1
            break
        if "v" in args[i] or "V" in args[i]:
            return None  # `command -v x` only looks x up
        i += 1
    return Wrap(inners=[list(args[i:])]) if i < len(args) else None


def _all_args(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    return Wrap(inners=[list(args)]) if args else None


def _busybox(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    if not args or args[0].startswith("-"):
        return None
    return Wrap(inners=[list(args)])


def _env(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i, n = 0, len(args)
    assigns: list[tuple[str, str]] = []
    split: list[str] = []
    while i < n:
        a = args[i]
        if isinstance(a, DynamicWord):
            if "=" in a:
                w.st.add_opaque("env assignment from an expansion")
                name, _, value = a.partition("=")
                assigns.append((name, value))
                i += 1
                continue
            w.st.add_opaque("env with an expanded argument")
            break
        if a == "--":
            i += 1
            break
        if a in ("-S", "--split-string") or a.startswith("--split-string=") or (
                a.startswith("-S") and len(a) > 2 and not a.startswith("--")):
            if a in ("-S", "--split-string"):
                text = args[i + 1] if i + 1 < n else ""
                i += 2
            elif a.startswith("--split-string="):
                text = a.split("=", 1)[1]
                i += 1
            else:
                text = a[2:]
                i += 1
            split.extend(w.split_words(text))
            continue
        if a.startswith("--"):
            i += 2 if (a in ("--unset", "--chdir") and i + 1 < n) else 1
            continue
        if a.startswith("-") and len(a) > 1:
            i += 2 if (len(a) == 2 and a[1] in "uCP") else 1
            continue
        if a == "-":
            i += 1
            continue
        if "=" in a:
            name, _, value = a.partition("=")
            assigns.append((name, value))
            i += 1
            continue
        break
    inner = split + list(args[i:])
    if not inner:
        for name, value in assigns:  # env only printing: the assignments still count
            w.note_assign(name, value, "env")
        return None
    return Wrap(inners=[inner], assigns=assigns)


def _xargs(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i = skip_options(args, "ILnPsdEa", ["--arg-file", "--delimiter", "--max-args", "--max-procs",
                                          "--max-chars", "--max-lines", "--process-slot-var", "--eof"])
    if i is None:
        w.st.add_opaque("xargs with an expanded option")
        return None
    inner = list(args[i:]) or ["echo"]
    inner.append(DynamicWord("{xargs-input}"))
    return Wrap(inners=[inner])


_SUDO_LONG = {"--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role", "--type",
              "--command-timeout", "--other-user"}


def _sudo(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i, n = 0, len(args)
    short_arg = "ugCDhprtTU" if base == "sudo" else "aCu"
    while i < n:
        a = args[i]
        if isinstance(a, DynamicWord):
            w.st.add_opaque(f"{base} with an expanded option")
            w.speculate(args[i:])
            return Wrap(counts=True)
        if a == "--":
            i += 1
            break
        if a.startswith("--"):
            if a in ("--edit", "--list", "--validate", "--version", "--help", "--remove-timestamp"):
                return None
            i += 2 if ("=" not in a and a in _SUDO_LONG) else 1
            continue
        if a.startswith("-") and len(a) > 1:
            body = a[1:]
            head = body
            for k, ch in enumerate(body):
                if ch in short_arg:
                    head = body[:k]
                    break
            if base == "sudo" and any(ch in "elvKV" for ch in head):
                return None  # edit / list / validate / version: runs nothing
            i += 2 if value_follows(body, short_arg) else 1
            continue
        break
    assigns = []
    while i < n and not isinstance(args[i], DynamicWord) and (m := ASSIGNMENT.match(args[i])):
        assigns.append((m.group(1), m.group(3)))
        i += 1
    if i >= n:
        return Wrap(counts=True, assigns=assigns)  # sudo -s / -i: an interactive shell
    return Wrap(inners=[list(args[i:])], assigns=assigns, counts=True)


def _pkexec(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i = skip_options(args, "", ["--user"])
    if i is None or i >= len(args):
        return Wrap(counts=True)
    return Wrap(inners=[list(args[i:])], counts=True)


def _chroot(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i = skip_options(args, "", ["--userspec", "--groups"])
    if i is None:
        w.st.add_opaque("chroot with an expanded option")
        return Wrap(counts=True)
    if i + 1 >= len(args):
        return Wrap(counts=True)
    return Wrap(inners=[list(args[i + 1:])], counts=True)


def _su(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    scripts = []
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        if a in ("-c", "--command", "--session-command") and i + 1 < n:
            scripts.append(args[i + 1])
            if isinstance(args[i + 1], DynamicWord):
                w.st.add_opaque(f"{base} -c with a dynamic string")
            i += 2
            continue
        if a.startswith(("--command=", "--session-command=")):
            scripts.append(a.split("=", 1)[1])
        elif a.startswith("-c") and len(a) > 2 and not a.startswith("--"):
            scripts.append(a[2:])
        i += 1
    return Wrap(scripts=scripts, counts=True)


def shell(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    """``sh -c 'STRING'`` (the string parsed), or a shell fed by a heredoc or
    here-string; a shell reading a script file is a plain command."""
    cmode = stdin_mode = False
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        if isinstance(a, DynamicWord):
            w.st.add_opaque(f"{base} with an expanded option")
            return None
        if a in ("--", "-"):
            i += 1
            break
        if a.startswith("--"):
            i += 2 if a in ("--rcfile", "--init-file") else 1
            continue
        if a[:1] in ("-", "+") and len(a) > 1:
            takes = 0
            for ch in a[1:]:
                if ch == "c":
                    cmode = True
                elif ch == "s":
                    stdin_mode = True
                elif ch in "oO":
                    takes += 1
            i += 1 + takes
            continue
        break
    rest = args[i:]
    foreign = base in FOREIGN_SHELLS
    if cmode:
        if not rest:
            return None
        if isinstance(rest[0], DynamicWord):
            w.st.add_opaque(f"{base} -c with a dynamic string")
        if foreign:
            w.st.add_opaque(f"{base} -c: not a POSIX shell, parsed as bash")
        return Wrap(scripts=[rest[0]])
    if rest and not stdin_mode:
        return None  # runs a script file: a plain command
    if feeds:
        if foreign:
            w.st.add_opaque(f"{base}: not a POSIX shell, parsed as bash")
        return Wrap(scripts=list(feeds))
    w.st.add_opaque(f"{base} reads commands from stdin")
    return None


def _eval(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    w.st.add_opaque("eval")
    return Wrap(scripts=[" ".join(args)]) if args else None


def _trap(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    operands = [a for a in args if not (a.startswith("-") and a != "-")]
    if (args and args[0] in ("-l", "-p")) or len(operands) < 2 or operands[0] == "-":
        return None
    w.st.add_opaque("trap action")
    return Wrap(scripts=[operands[0]], counts=True)


def _watch(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i = skip_options(args, "nq", ["--interval", "--equexit"])
    if i is None or i >= len(args):
        return None
    if any(a in ("-x", "--exec") or (a.startswith("-") and not a.startswith("--") and "x" in a) for a in args[:i]):
        return Wrap(inners=[list(args[i:])])
    return Wrap(scripts=[" ".join(args[i:])])


def _flock(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    for k, a in enumerate(args):
        if a in ("-c", "--command") and k + 1 < len(args):
            return Wrap(scripts=[args[k + 1]])
    i = skip_options(args, "Ew", ["--conflict-exit-code", "--timeout", "--wait"])
    if i is None or i + 1 >= len(args):
        return None
    return Wrap(inners=[list(args[i + 1:])])


def _find(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    inners = []
    i, n = 0, len(args)
    while i < n:
        if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            cmd: list[str] = []
            while j < n and args[j] not in (";", "+"):
                cmd.append(DynamicWord(args[j]) if "{}" in args[j] else args[j])
                j += 1
            if cmd:
                inners.append(cmd)
            i = j + 1
        else:
            i += 1
    return Wrap(inners=inners, counts=True) if inners else None


def _script(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    for k, a in enumerate(args):
        if (a in ("-c", "--command") or (a[:1] == "-" and a[1:2] != "-" and a.endswith("c"))) and k + 1 < len(args):
            return Wrap(scripts=[args[k + 1]])
        if a.startswith("--command="):
            return Wrap(scripts=[a.split("=", 1)[1]])
    return None


def _entr(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i = skip_options(args)
    if i is None or i >= len(args):
        return None
    if any(a.startswith("-") and "s" in a for a in args[:i]):
        return Wrap(scripts=[args[i]])
    return Wrap(inners=[list(args[i:])])


def _taskset(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    if any(a in ("-p", "--pid") or (a.startswith("-") and not a.startswith("--") and "p" in a) for a in args):
        return None
    i = skip_options(args)
    if i is None or i + 1 >= len(args):
        return None
    return Wrap(inners=[list(args[i + 1:])])  # the mask or priority, then the command


def _strace(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    if any(a == "-p" or a.startswith("--attach") for a in args):
        return None
    return _simple("abeEoOpPsSuUXI", ["--output", "--trace", "--signal", "--user", "--env"])(w, base, args, feeds)


def _parallel(w: WalkerBase, base: str, args: list[str], feeds: list[str]) -> Wrap | None:
    i = skip_options(args, "jPSadEICnNLlsX", [
        "--jobs", "--sshlogin", "--arg-file", "--delimiter", "--colsep", "--tmpdir", "--results", "--joblog",
        "--timeout", "--delay", "--retries", "--memfree", "--load", "--max-args", "--max-replace-args",
        "--workdir", "--env"])
    if i is None:
        w.st.add_opaque("parallel with an expanded option")
        return None
    cmd = []
    for a in args[i:]:
        if a in (":::", "::::", ":::+", "::::+"):
            break
        cmd.append(a)
    if not cmd:
        w.st.add_opaque("parallel reads commands from input")
        return None
    return Wrap(scripts=[" ".join(cmd)], counts=True)


WRAPPERS: dict[str, Handler] = {
    "nohup": _simple(), "nice": _simple("n", ["--adjustment"]), "time": _simple("fo", ["--format", "--output"]),
    "stdbuf": _simple("ioe", ["--input", "--output", "--error"]), "ionice": _ionice, "timeout": _timeout,
    "command": _command, "builtin": _all_args, "exec": _simple("a"), "coproc": _all_args,
    "busybox": _busybox, "setsid": _simple(), "env": _env, "xargs": _xargs,
    "sudo": _sudo, "doas": _sudo, "pkexec": _pkexec, "chroot": _chroot, "su": _su, "runuser": _su,
    "eval": _eval, "trap": _trap, "watch": _watch, "flock": _flock, "find": _find,
    "script": _script, "entr": _entr, "taskset": _taskset, "chrt": _taskset, "strace": _strace,
    "ltrace": _strace, "xvfb-run": _simple("nsefwpl", ["--server-num", "--server-args", "--error-file",
                                                        "--auth-file", "--wait", "--xauth-protocol"]),
    "proxychains": _simple("f"), "proxychains4": _simple("f"), "parallel": _parallel,
    # options only as --name=value or flags
    **{name: _simple() for name in ("valgrind", "firejail", "catchsegv", "unbuffer", "caffeinate", "torsocks",
                                    "ccache")},
}
WRAPPERS.update({name: runner for name in RUNNERS})
