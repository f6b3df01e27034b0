"""The shell parse behind command rules (issue 28): the bypasses of a text
glob (every one denied), what cannot be resolved (asked), the controls that
stay allowed, the wrapper and word tables, the grammar's quirks, the pattern
semantics, and properties over a corpus of real commands and generated
quoting / escaping / wrapping variants."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from smoke_core.policy.commands import grammar
from smoke_core.policy.commands.decide import CommandDecision, RuleSet, decide
from smoke_core.policy.commands.model import DynamicWord, GlobWord
from smoke_core.policy.commands.patterns import exact_pattern, match_level, matches
from smoke_core.policy.commands.variables import FOREIGN_SHELLS, SHELLS
from smoke_core.policy.commands.walker import Walker, parse_command
from smoke_core.policy.commands.wrappers import WRAPPERS

from .test_command_rules import CORPUS  # the same corpus: real commands and their spellings

WS = Path(__file__).resolve().parent
DENY_RM = ["rm *"]
ASK_PUSH = ["git push*"]
ALLOW = ["pytest *", "git status*", "ls *", "grep *", "cd *"]
WRAPPER_NAMES = frozenset(WRAPPERS) | SHELLS | FOREIGN_SHELLS




def rules(patterns):
    return RuleSet((p, p) for p in patterns)


def decide_on(p, deny=(), ask=(), allow=()) -> CommandDecision:
    return decide(p, deny=rules(deny), ask=rules(ask), allow=rules(allow))


def check(src, deny=(), ask=(), allow=(), workspace=None) -> CommandDecision:
    return decide_on(parse_command(src, workspace), deny, ask, allow)


def cmds(src, **kw):
    return parse_command(src, **kw).commands


# --------------------------------------------------------------------------- #
# Bypasses of a text-glob deny: every one must be denied by `rm *`
# --------------------------------------------------------------------------- #

RM_BYPASSES = [
    "{ rm v; }",
    "\\rm v",
    "'rm' v",
    '"rm" v',
    "r\\m v",
    "$'rm' v",
    "$'\\x72m' v",
    "$'\\162m' v",
    "''rm v",
    'r""m v',
    "\"r\"'m' v",
    "r\\\nm v",
    "/bin/rm v",
    "/usr/bin/rm v",
    "./x/rm v",
    "~/bin/rm v",
    "env rm v",
    "env -i rm v",
    "env -u HOME FOO=1 rm v",
    "env -- rm v",
    "env -S 'rm v'",
    "command rm v",
    "command -p rm v",
    "\\command rm v",
    "builtin rm v",
    "exec rm v",
    "exec -a foo rm v",
    "time rm v",
    "time -p rm v",
    "/usr/bin/time -v -o t.txt rm v",
    "nice rm v",
    "nice -n 5 rm v",
    "nice -5 rm v",
    "nohup rm v",
    "nohup rm v &",
    "timeout 5 rm v",
    "timeout -s KILL -k 1 5s rm v",
    "timeout --preserve-status 5 rm v",
    "stdbuf -oL rm v",
    "stdbuf -o L -e 0 rm v",
    "xargs rm",
    "xargs -0 -n1 rm -f",
    "find . -print0 | xargs -0 -I{} rm {}",
    "sudo rm v",
    "sudo -u root -E rm v",
    "sudo -- rm v",
    "sudo FOO=1 rm v",
    "doas rm v",
    "doas -u root rm v",
    "chroot / rm v",
    "chroot --userspec=1:1 / rm v",
    "pkexec rm v",
    "su -c 'rm v'",
    "su - root -c 'rm v'",
    "setsid rm v",
    "ionice -c3 rm v",
    "coproc rm v",
    "busybox rm v",
    "watch rm v",
    "watch -n 1 'rm v'",
    "flock /tmp/l rm v",
    "flock /tmp/l -c 'rm v'",
    "find . -exec rm {} \\;",
    "find . -name '*.tmp' -execdir rm -f {} +",
    "sh -c 'rm v'",
    'sh -c "rm v"',
    "bash -c 'rm v'",
    "bash -lc 'rm v'",
    "sh -ec 'rm v'",
    "bash -o pipefail -c 'rm v'",
    "bash --norc --noprofile -c 'rm v'",
    "zsh -c 'rm v'",
    "dash -c 'rm v'",
    "/bin/sh -c 'rm v'",
    "sh -c 'sh -c \"rm v\"'",
    "sudo sh -c 'rm v'",
    "env sh -c 'timeout 5 rm v'",
    "bash -c 'rm v' argv0 a b",
    "bash <<'EOF'\nrm v\nEOF",
    "bash <<EOF\nrm v\nEOF",
    "bash <<'EOF'\n\\rm v\nEOF",  # grammar misparses a body starting with '\\'
    "cat <<'A' && bash <<B\nx\nA\nrm v\nB",
    "true && bash <<'EOS'\nrm v\nEOS",
    "ls | bash <<< 'rm v'",
    "sh <<< 'rm v'",
    "eval rm v",
    "eval 'rm v'",
    "eval \"rm\" v",
    "trap 'rm v' EXIT",
    "alias x='rm v'",
    "if true; then rm v; fi",
    "if rm v; then :; fi",
    "if false; then :; elif true; then rm v; fi",
    "if x; then :; else rm v; fi",
    "while rm v; do :; done",
    "while true; do rm v; done",
    "until rm v; do :; done",
    "for f in a; do rm $f; done",
    "for ((i=0;i<1;i++)); do rm v; done",
    "select x in a; do rm v; done",
    "case x in x) rm v;; esac",
    "case x in a|x) :;; *) rm v;; esac",
    "f() { rm v; }; f",
    "function f { rm v; }",
    "(rm v)",
    "( (rm v) )",
    "true && rm v",
    "false || rm v",
    "true; rm v",
    "true\nrm v",
    "rm v &",
    "ls | rm v",
    "ls |& rm v",
    "! rm v",
    "echo $(rm v)",
    "echo `rm v`",
    'echo "$(rm v)"',
    'echo "`rm v`"',
    "echo ${x:-$(rm v)}",
    "cat <(rm v)",
    "echo > >(rm v)",
    "x=$(rm v)",
    "x=`rm v`",
    "local x=$(rm v)",
    "export X=$(rm v)",
    "a=(1 $(rm v))",
    "FOO=1 rm v",
    "FOO=1 BAR=2 rm v",
    "[[ -n $(rm v) ]]",
    "[ -n \"$(rm v)\" ]",
    "cat <<EOF\n$(rm v)\nEOF",
    "cat <<EOF\n`rm v`\nEOF",
    "cat <<EOF | rm v\nbody\nEOF",
    "cat <<EOF && rm v\nbody\nEOF",
    "grep x <<< \"$(rm v)\"",
    "rm >/dev/null v",
    ">/dev/null rm v",
    "2>/dev/null rm v",
    "rm v 2>&1 | cat",
    "{rm,x} v",
    "{r,}m v",
    "rm -rf -- v",
    "git status; rm v",
    "git >/dev/null status && rm v",
    "command exec nice rm v",
    "ls; `rm v`",
    "echo $((1 + $(rm v)))",
    "for x in $(rm v); do :; done",
    "case $(rm v) in *) ;; esac",
    "case x in $(rm v)) ;; esac",
    "echo ${x/$(rm v)/y}",
    "[[ -f $(rm v) ]]",
    "bash <<<$'rm v'",
    "bash -c -- 'rm v'",
    "bash -O extglob -c 'rm v'",
    "bash +x -c 'rm v'",
    "command -- rm v",
    "exec -- rm v",
    "nice -- rm v",
    "sudo -s rm v",
    "sudo -iu root rm v",
    "sudo -k rm v",
    "sudo --user=root --preserve-env=PATH rm v",
    "xargs -- rm",
    "xargs sh -c 'rm v'",
    "find . -exec sh -c 'rm \"$1\"' _ {} \\;",
    "builtin eval 'rm v'",
    "r$'\\x6d' v",
    "\"r\\\nm\" v",
    # command-valued variables and git's own command runners
    "GIT_SSH_COMMAND='rm v' git fetch",
    "GIT_PAGER='rm v' git log",
    "PAGER='rm v' man ls",
    "PS4='$(rm v)' bash -xc true",
    "export PROMPT_COMMAND='rm v'",
    "env 'BASH_FUNC_ls%%=() { rm v; }' bash -c ls",
    "git -c alias.x='!rm v' x",
    "git -c core.pager='rm v' log",
    "git -c core.sshCommand='rm v' fetch",
    "git rebase -x 'rm v' main",
    "git rebase --exec='rm v' main",
    "git submodule foreach --recursive rm v",
    "git bisect run rm v",
    # more wrappers
    "uv run rm v",
    "uv run --with pytest rm v",
    "uvx --from x rm v",
    "poetry run rm v",
    "pipenv run rm v",
    "conda run -n base rm v",
    "bundle exec rm v",
    "npm exec -- rm v",
    "pnpm exec rm v",
    "nix-shell --run 'rm v'",
    "nix develop -c rm v",
    "mise exec -- rm v",
    "direnv exec . rm v",
    "strace -f -o /tmp/x rm v",
    "ltrace rm v",
    "valgrind --leak-check=full rm v",
    "xvfb-run -a rm v",
    "script -qc 'rm v' /dev/null",
    "parallel 'rm {}' ::: a b",
    "unbuffer rm v",
    "taskset -c 0 rm v",
    "chrt 10 rm v",
    "entr -s 'rm v'",
    "entr rm v",
    "dbus-run-session rm v",
]

# Cannot be resolved statically: never allowed, and a deny becomes an ask.
RM_MAYBE = [
    "$X v",
    "x=rm; $x v",
    "$(echo rm) v",
    "rm${IFS}v",
    "/???/r? v",
    "r* v",
    "timeout $T rm v",
    "sudo $OPTS rm v",
    "uv run --unknown-opt x rm v",
    "\"$RM\" v",
]


@pytest.mark.parametrize("src", RM_MAYBE)
def test_rm_unresolvable_asks(src):
    d = check(src, deny=DENY_RM, allow=["*"], workspace=WS)
    assert d.action == "ask", (src, d)
    assert check(src, allow=["*"], workspace=WS).action != "allow"


@pytest.mark.parametrize("src", RM_BYPASSES)
def test_rm_bypass_denied(src):
    d = check(src, deny=DENY_RM, allow=["*"], workspace=WS)
    assert d.action == "deny", (src, d, parse_command(src, WS))


@pytest.mark.parametrize("src", RM_BYPASSES)
def test_rm_bypass_never_allowed_even_by_other_allows(src):
    allow = ["true", "ls *", "echo *", "cat *", "grep *", "x *", "f", "git status*"]
    d = check(src, allow=allow, workspace=WS)
    assert d.action != "allow", (src, d)


GIT_PUSH_BYPASSES = [
    "git push",
    "git  push",
    "git\tpush",
    "\\git push",
    "'git' push",
    '"git" "push"',
    "g\\it pu\\sh",
    "$'git' $'push'",
    "/usr/bin/git push",
    "git -C . push",
    "git -C. push",
    "git -C . -C sub push origin main",
    "git -c color.ui=never push",
    "git --no-pager push",
    "git -P push",
    "git -p push",
    "git --git-dir=.git push",
    "git --git-dir .git push",
    "git --work-tree . push",
    "git --work-tree=. --bare push",
    "git --namespace=x push",
    "git --literal-pathspecs push",
    "git --no-optional-locks push",
    "git >/dev/null push",
    "true && git >/dev/null push",
    "ls | git 2>/dev/null push",
    "git 2>&1 push",
    "env git push",
    "GIT_TRACE=1 git push",
    "timeout 60 git push",
    "sh -c 'git push'",
    "cd x && git push origin main",
    "git push --force",
    "git push origin HEAD:refs/heads/main --force-with-lease",
    "git\\\n push",
    "git pu\\\nsh",
    "command git push",
    "git status && git push",
    "echo $(git push)",
    "X=push; git $X",
    "git ${X:-push}",
    'git "$CMD"',
    "git $(echo push)",
]


@pytest.mark.parametrize("src", GIT_PUSH_BYPASSES)
def test_git_push_bypass_asks(src):
    d = check(src, ask=ASK_PUSH, allow=["*"], workspace=WS)
    assert d.action == "ask", (src, d)


@pytest.mark.parametrize("src", GIT_PUSH_BYPASSES)
def test_git_push_bypass_denied_by_deny_rule(src):
    d = check(src, deny=ASK_PUSH, allow=["*"], workspace=WS)
    assert d.action in ("deny", "ask"), (src, d)
    if "$" not in src:
        assert d.action == "deny", (src, d)


@pytest.mark.parametrize("src", ["git pushx", "git push-all"])
def test_push_star_is_token_prefix(src):
    # `push*` is a text glob on the token, like the old rule: documented.
    assert check(src, ask=ASK_PUSH).action == "ask"


@pytest.mark.parametrize("src", ["git status", "git log --oneline | grep push",
                                 "echo git push", "git commit -m 'git push'",
                                 "git -C push status"])
def test_not_git_push(src):
    d = check(src, ask=ASK_PUSH, allow=["git status*", "git log*", "grep *", "echo *",
                                        "git commit*"], workspace=WS)
    assert d.action == "allow", (src, d)


# --------------------------------------------------------------------------- #
# Controls: normal commands still allowed
# --------------------------------------------------------------------------- #

ALLOWED = [
    "pytest -q",
    "pytest",
    "git status",
    "git status --short",
    "git -C . status",
    "git --no-pager status",
    "ls -la | grep x",
    "ls",
    "cd sub && pytest -q",
    "cd sub && pytest -q 2>&1 | grep -v x",
    "pytest -q > out.txt",
    "pytest -q > sub/out.txt 2>/dev/null",
    "pytest -q >/dev/null 2>&1",
    "cd sub; pytest -q > log.txt",
    "timeout 60 pytest -q",
    "time pytest -q",
    "env CI=1 pytest -q",
    "CI=1 pytest -q",
    "nice -n 5 pytest -q",
    "'pytest' -q",
    "\\pytest -q",
    "/usr/bin/git status",
    "sh -c 'pytest -q'",
    "bash -c 'cd sub && pytest -q'",
    "{ pytest -q; }",
    "(cd sub && pytest -q)",
    "pytest -q || ls",
    "if ls x; then pytest -q; fi",
    "ls \"$HOME\"",
    "grep -r 'a|b' .",
    "pytest -q # comment",
    "X=1; pytest",
]


@pytest.mark.parametrize("src", ALLOWED)
def test_controls_allowed(src):
    d = check(src, deny=DENY_RM, ask=ASK_PUSH, allow=ALLOW, workspace=WS)
    assert d.action == "allow", (src, d, parse_command(src, WS))


NOT_ALLOWED = [
    ("./pytest -q", "not a system folder"),
    ("sub/pytest -q", "not a system folder"),
    ("pytest $(rm x)", "substitution"),
    ("pytest -q > /etc/x", "outside"),
    ("pytest -q > ../x", "outside"),
    ("cd .. && pytest -q > x", "outside"),
    ("cd /tmp && pytest -q > x", "outside"),
    ("for d in a b; do cd $d; done; pytest > x", "cd"),
    ("pytest -q > .git/hooks/pre-commit", ".git"),
    ("pytest -q > \"$OUT\"", "expansion"),
    ("pytest -q > ~/x", "outside"),
    ("PYTHONPATH=evil pytest", "PYTHONPATH"),
    ("LD_PRELOAD=x.so pytest", "LD_PRELOAD"),
    ("env PYTHONSTARTUP=x pytest", "PYTHONSTARTUP"),
    ("export PATH=/tmp:$PATH; pytest", "PATH"),
    ("PATH=/tmp pytest", "PATH"),
    ("IFS=x; pytest", "IFS"),
    ("declare -x BASH_ENV=x; pytest", "BASH_ENV"),
    ("pytest() { rm -rf ~; }; pytest", "function"),
    ("alias pytest='rm -rf ~'; pytest", "alias"),
    ("eval pytest", "eval"),
    ("source x; pytest", "source"),
    (". x; pytest", "source"),
    ("$P -q", "expansion"),
    ("${P} -q", "expansion"),
    ("py* -q", "glob"),
    ("pytes? -q", "glob"),
    ("{pytest,rm} -q", "brace"),
    ("pytest <<< x", "here-string"),
    ("cat <(ls)", "process substitution"),
    ("git -c core.pager=evil status", "git -c"),
    ("git -c alias.status='!rm x' status", "git -c"),
    ("pytest -q; make", "no allow rule"),
    ("pytest 'unterminated", "syntax"),
    ("if true; then pytest", "syntax"),
    ("sh", "stdin"),
    ("curl x | sh", "stdin"),
    ("pytest $((x+1))", "arithmetic"),
    ("ls ${!ref}", "indirect"),
    ("ls ${x@P}", "prompt"),
    ("ls ${a[$i]}", "subscript"),
    ("[[ $x -eq 1 ]] && pytest", "arithmetic"),
    ("let x=y+1", "arithmetic"),
    ("read PATH < f; pytest", "read"),
    ("trap 'pytest' EXIT", "trap"),
    ("fish -c 'pytest'", "POSIX"),
    ("sudo pytest", "no allow rule"),
    ("xargs pytest", "no allow rule"),  # `pytest *` allows; xargs is transparent...
]


def _git_is_control(rel):
    return "git's own files" if rel.split("/")[0] == ".git" else None


@pytest.mark.parametrize("src,why", NOT_ALLOWED)
def test_not_allowed(src, why):
    allow = [*ALLOW, "cat *", "echo *", "[[ *", "read *", "trap *"]
    p = parse_command(src, WS, control=_git_is_control)
    d = decide_on(p, deny=DENY_RM, allow=allow)
    if src == "xargs pytest":
        # transparent wrapper + open-ended args: `pytest *` accepts it
        assert d.action == "allow"
        assert not matches("pytest -q", ["pytest", DynamicWord("{xargs-input}")])
        return
    assert d.action != "allow", (src, d)
    text = " ".join(p.opaque) + " " + (p.error or "") + " " + d.reason
    assert why.lower() in text.lower(), (src, p, d)


def test_absolute_path_allow_rule():
    assert check("./gradlew test", allow=["./gradlew *"]).action == "allow"
    assert check("./gradlew test", allow=["gradlew *"]).action == "default"
    assert check("./x/rm v", deny=["rm *"]).action == "deny"
    assert check("/usr/local/bin/pytest -q", allow=["pytest *"]).action == "allow"
    assert check("/opt/evil/pytest -q", allow=["pytest *"]).action == "default"


def test_no_workspace_means_no_file_writes():
    assert check("pytest > x", allow=["pytest *"]).action == "default"
    assert check("pytest > /dev/null", allow=["pytest *"]).action == "allow"


# --------------------------------------------------------------------------- #
# Normalisation: wrappers and words
# --------------------------------------------------------------------------- #

WRAPPERS = [
    ("env -i -u X A=1 B=2 ls -l", [["ls", "-l"]]),
    ("env", [["env"]]),
    ("env A=1", [["env", "A=1"]]),
    ("env -C /tmp ls", [["ls"]]),
    ("env -S 'ls -l' x", [["ls", "-l", "x"]]),
    ("command -p ls -l", [["ls", "-l"]]),
    ("command -v ls", [["command", "-v", "ls"]]),
    ("command -V ls", [["command", "-V", "ls"]]),
    ("builtin echo hi", [["echo", "hi"]]),
    ("exec ls", [["ls"]]),
    ("exec -c -a name ls", [["ls"]]),
    ("exec >/dev/null", [["exec"]]),
    ("time ls", [["ls"]]),
    ("time -p ls", [["ls"]]),
    ("time", [["time"]]),
    ("nice -n 10 ls", [["ls"]]),
    ("nice --adjustment=5 ls", [["ls"]]),
    ("nohup ls", [["ls"]]),
    ("timeout 10 ls", [["ls"]]),
    ("timeout -k 5 -s TERM 1m ls -l", [["ls", "-l"]]),
    ("timeout --signal=KILL 10 ls", [["ls"]]),
    ("stdbuf -oL ls", [["ls"]]),
    ("stdbuf -o L -eL ls", [["ls"]]),
    ("stdbuf --output=L ls", [["ls"]]),
    ("xargs ls", [["ls", "{xargs-input}"]]),
    ("xargs -n 1 -P 4 ls -l", [["ls", "-l", "{xargs-input}"]]),
    ("xargs -I {} cp {} /tmp", [["cp", "{}", "/tmp", "{xargs-input}"]]),
    ("xargs", [["echo", "{xargs-input}"]]),
    ("sudo ls", [["sudo", "ls"], ["ls"]]),
    ("sudo -u bob -g staff ls", [["sudo", "-u", "bob", "-g", "staff", "ls"], ["ls"]]),
    ("sudo -l", [["sudo", "-l"]]),
    ("sudo -e /etc/hosts", [["sudo", "-e", "/etc/hosts"]]),
    ("doas -u bob ls", [["doas", "-u", "bob", "ls"], ["ls"]]),
    ("chroot /srv ls", [["chroot", "/srv", "ls"], ["ls"]]),
    ("chroot /srv", [["chroot", "/srv"]]),
    ("sh -c 'ls; pwd'", [["ls"], ["pwd"]]),
    ("bash -lc 'ls'", [["ls"]]),
    ("sh -ec 'ls'", [["ls"]]),
    ("bash -x -o errexit -c 'ls'", [["ls"]]),
    ("bash script.sh arg", [["bash", "script.sh", "arg"]]),
    ("setsid -f ls", [["ls"]]),
    ("ionice -c 3 ls", [["ls"]]),
    ("busybox ls -l", [["ls", "-l"]]),
    ("watch -n 2 ls -l", [["ls", "-l"]]),
    ("watch -x ls -l", [["ls", "-l"]]),
    ("flock /tmp/lock ls", [["ls"]]),
    ("find . -exec grep -l x {} +", [["find", ".", "-exec", "grep", "-l", "x", "{}", "+"],
                                     ["grep", "-l", "x", "{}"]]),
    ("eval 'ls -l'", [["ls", "-l"]]),
    ("coproc ls", [["ls"]]),
    ("nohup nice -n 5 timeout 10 env A=1 command ls", [["ls"]]),
    ("git -C sub -c color.ui=always --no-pager log -n1", [["git", "log", "-n1"]]),
    ("git --git-dir=.git --work-tree . status", [["git", "status"]]),
    ("git --bare --literal-pathspecs log", [["git", "log"]]),
    ("git -- status", [["git", "status"]]),
    ("uv run pytest -q", [["uv", "run", "pytest", "-q"], ["pytest", "-q"]]),
    ("uv run -m pytest", [["uv", "run", "-m", "pytest"], ["python", "-m", "pytest"]]),
    ("uv run --frozen --with x pytest", [["uv", "run", "--frozen", "--with", "x", "pytest"],
                                         ["pytest"]]),
    ("poetry run pytest", [["poetry", "run", "pytest"], ["pytest"]]),
    ("uv sync", [["uv", "sync"]]),
    ("strace -e trace=open ls", [["ls"]]),
    ("xvfb-run -s '-screen 0 1x1x8' ls", [["ls"]]),
    ("taskset -p 1234", [["taskset", "-p", "1234"]]),
]


@pytest.mark.parametrize("src,expected", WRAPPERS)
def test_wrappers(src, expected):
    assert cmds(src) == expected


WORDS = [
    ("'a b' \"c d\" e\\ f", [["a b", "c d", "e f"]]),
    ("echo \"a\\\"b\\\\c\\$d\\x\"", [["echo", 'a"b\\c$d\\x']]),
    ("echo $'a\\tb\\n\\x41\\u00e9\\101\\'q'", [["echo", "a\tb\nA\u00e9A'q"]]),
    ("echo a\"b\"'c'd", [["echo", "abcd"]]),
    ("echo {a,b}.txt", [["echo", "a.txt", "b.txt"]]),
    ("echo {1..3} {a..c}", [["echo", "1", "2", "3", "a", "b", "c"]]),
    ("echo {01..03}", [["echo", "01", "02", "03"]]),
    ("echo '{a,b}' \\{a,b\\}", [["echo", "{a,b}", "{a,b}"]]),
    ("echo x{a,{b,c}}y", [["echo", "xay", "xby", "xcy"]]),
    ("echo {a}", [["echo", "{a}"]]),
    ("echo $\"loc\"", [["echo", "loc"]]),
    ("echo a    b", [["echo", "a", "b"]]),
    ("echo ''", [["echo", ""]]),
    ("echo \"\"x", [["echo", "x"]]),
]


@pytest.mark.parametrize("src,expected", WORDS)
def test_words(src, expected):
    assert cmds(src) == expected


def test_dynamic_and_glob_tokens():
    p = parse_command("rm $x *.py \"$y\"z")
    argv = p.commands[0]
    assert type(argv[1]) is DynamicWord and type(argv[3]) is DynamicWord
    assert type(argv[2]) is GlobWord
    assert argv == ["rm", "$x", "*.py", "$yz"]


def test_assignments_recorded():
    p = parse_command("A=1 B='x y' ls; C=3; export D=4; env E=5 ls; sudo F=6 ls")
    assert list(p.assignments) == [("A", "1"), ("B", "x y"), ("C", "3"), ("D", "4"),
                             ("E", "5"), ("F", "6")]
    assert p.details[0].assignments == (("A", "1"), ("B", "x y"))
    assert p.opaque == ()


def test_heredoc_body_is_data():
    p = parse_command("cat > notes.txt <<'EOF'\nrm -rf /\n$(rm x)\nEOF\necho done", WS)
    assert p.commands == [["cat"], ["echo", "done"]]
    assert p.opaque == () and p.error is None
    p = parse_command("cat <<EOF\nrm -rf / $HOME\nEOF")
    assert p.commands == [["cat"]] and p.opaque == ()


def test_test_commands_recorded():
    assert cmds("[ -f x ] && [[ $y == z* ]]") == [["[", "-f", "x", "]"],
                                                 ["[[", "$y", "==", "z*", "]]"]]
    assert cmds("test -f x") == [["test", "-f", "x"]]


def test_declarations_recorded():
    assert cmds("export A=1 B; local c; unset D") == [["export", "A=1", "B"], ["local", "c"],
                                                     ["unset", "D"]]


# --------------------------------------------------------------------------- #
# Errors and fail-safe fallbacks
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("src", ["echo 'unterminated", "if true; then", "ls (", "echo )", "do rm v",
                                 "'for' f in a; do echo x; done",
                                 "for x in; do", "a && ", "echo $(",
                                 "case x in", "{ ls"])
def test_syntax_errors_never_allowed(src):
    p = parse_command(src)
    assert p.error, src
    assert decide_on(p, allow=["*"]).action == "ask"


def test_error_still_denies_what_it_can_see():
    assert check("rm -rf / 'oops", deny=["rm *"], allow=["*"]).action == "deny"


def test_grammar_node_types_all_handled():
    lang = grammar.language()
    named = {lang.node_kind_for_id(i) for i in range(lang.node_kind_count)
             if lang.node_kind_is_named(i) and lang.node_kind_is_visible(i)}
    assert named - grammar.HANDLED_NODE_TYPES == set()


@pytest.fixture
def fresh_walks(monkeypatch):
    """The walk cache emptied before and after (a test that changes the walker must not see old walks)."""
    from smoke_core.policy.commands import walker

    walker._cache.clear()
    yield
    walker._cache.clear()


def test_unknown_statement_type_falls_back_to_opaque(monkeypatch, fresh_walks):
    monkeypatch.delitem(Walker.DISPATCH, "if_statement")
    monkeypatch.setattr(grammar, "STATEMENT_TYPES", grammar.STATEMENT_TYPES - {"if_statement"})
    p = parse_command("if true; then rm v; fi")
    assert "unhandled node type 'if_statement'" in p.opaque
    assert ["rm", "v"] in p.commands  # still walked for deny
    assert decide_on(p, allow=["*"]).action == "default"
    assert decide_on(p, deny=["rm *"]).action == "deny"


def test_unknown_word_type_falls_back_to_opaque(monkeypatch):
    from smoke_core.policy.commands.base import State
    from smoke_core.policy.commands.words import DYNAMIC

    grammar.language()
    monkeypatch.setattr(grammar, "KIND", [*grammar.KIND, "shiny_new_word"])

    class Fake:
        type = "shiny_new_word"
        kind_id = len(grammar.KIND) - 1
        is_named = True
        children: list = []
        start_byte = 0
        end_byte = 3

    w = Walker(b"abc", State("abc", None))
    out: list = []
    w.word_parts(Fake(), out)
    assert out == [("abc", DYNAMIC)]
    assert w.st.opaque == ["unhandled node type 'shiny_new_word'"]


def test_nesting_limit():
    src = "rm v"
    for _ in range(12):
        src = "sh -c " + shlex.quote(src)
    p = parse_command(src)
    assert "nesting too deep" in p.opaque


def test_command_inside_command_node_is_opaque():
    p = parse_command("echo (rm x)")  # tree-sitter accepts this, bash does not
    assert ["rm", "x"] in p.commands
    assert p.opaque


# --------------------------------------------------------------------------- #
# Pattern semantics
# --------------------------------------------------------------------------- #

MATCH = [
    ("rm *", ["rm"], True),
    ("rm *", ["rm", "-rf", "/"], True),
    ("rm *", ["rmdir", "x"], False),
    ("rm", ["rm"], True),
    ("rm", ["rm", "x"], False),
    ("git push*", ["git", "push"], True),
    ("git push*", ["git", "push", "origin", "main"], True),
    ("git push*", ["git", "pushx"], True),
    ("git push*", ["git", "status", "push"], False),
    ("git push *", ["git", "push"], True),
    ("git push --force*", ["git", "push", "--force"], True),
    ("git push --force*", ["git", "push", "--force-with-lease"], True),
    ("git push --force*", ["git", "push", "origin", "--force"], False),
    ("git push * --force*", ["git", "push", "origin", "--force"], True),
    ("npm run test", ["npm", "run", "test"], True),
    ("npm run test", ["npm", "run", "test", "x"], False),
    ("npm run test*", ["npm", "run", "test:unit"], True),
    ("pytest -k *", ["pytest", "-k", "x"], True),
    ("pytest -[kx] *", ["pytest", "-x"], True),
    ("pytest *.py", ["pytest", "a.py"], True),
    ("pytest *.py", ["pytest", "a.py", "b"], False),
    ("pytest '*'", ["pytest", "*"], True),
    ("pytest '*'", ["pytest", "x"], False),
    ("git commit -m 'a b'", ["git", "commit", "-m", "a b"], True),
    ("*", ["anything", "at", "all"], True),
    ("* --force", ["git", "push", "--force"], True),
    ("ls *", ["ls", DynamicWord("$x")], True),
    ("ls -l", ["ls", DynamicWord("$x")], False),
    ("/usr/bin/rm *", ["/usr/bin/rm", "x"], True),
    ("rm -rf *", ["rm", "-r", "-f", "x"], False),  # flags are not re-ordered: documented
]


@pytest.mark.parametrize("pattern,argv,expected", MATCH)
def test_matches(pattern, argv, expected):
    assert matches(pattern, argv) is expected


LEVELS = [
    ("git push*", ["git", DynamicWord("$X")], "maybe"),
    ("git push*", ["git", DynamicWord("$X"), "origin"], "maybe"),
    ("git push*", ["git", "status", DynamicWord("$X")], "no"),
    ("rm -rf *", ["rm", DynamicWord("$FLAGS"), "x"], "maybe"),
    ("rm -rf *", ["rm", GlobWord("*")], "maybe"),
    ("rm secret.txt", ["rm", GlobWord("secr*")], "maybe"),
    ("rm secret.txt", ["rm", GlobWord("x*")], "no"),
    ("rm *", [DynamicWord("$RM"), "x"], "maybe"),
    ("rm *", [GlobWord("r?"), "x"], "maybe"),
    ("rm *", [GlobWord("x?"), "x"], "no"),
    ("npm run test", ["npm", "run", "test", DynamicWord("$A")], "maybe"),
]


@pytest.mark.parametrize("pattern,argv,expected", LEVELS)
def test_match_levels(pattern, argv, expected):
    assert match_level(pattern, argv) == expected


def test_dynamic_deny_becomes_ask():
    assert check("git $X", deny=["git push*"]).action == "ask"
    assert check("rm $FLAGS x", deny=["rm -rf *"]).action == "ask"
    assert check("rm -rf $DIR", deny=["rm -rf *"]).action == "deny"


def test_bad_patterns():
    with pytest.raises(ValueError):
        matches("", ["x"])
    with pytest.raises(ValueError):
        matches("a && b", ["a"])


def test_wrapper_rules_see_outer_form():
    assert check("sudo ls", deny=["sudo *"]).action == "deny"
    assert check("timeout 5 ls", deny=["timeout *"]).action == "deny"
    assert check("bash -c 'ls'", ask=["bash *"]).action == "ask"
    # privileged wrappers must be allowed themselves, transparent ones need not
    assert check("sudo ls", allow=["ls *"]).action == "default"
    assert check("sudo ls", allow=["ls *", "sudo *"]).action == "allow"
    assert check("timeout 5 ls", allow=["ls *"]).action == "allow"
    assert check("find . -exec rm {} +", allow=["find *"]).action == "default"


# --------------------------------------------------------------------------- #
# Property tests over a realistic corpus
# --------------------------------------------------------------------------- #

assert len(CORPUS) >= 200

DENY_SETS = [["rm *"], ["git push*"], ["curl *", "wget *"], ["sudo *"], ["docker *"],
             ["git reset --hard*", "git clean *"], ["kill *", "pkill *"], ["npm *"],
             ["python *", "python3 *"], ["echo *"], ["make *"], ["chmod *", "chown *"]]
BROAD_ALLOW = ["*"]
SOME_ALLOW = ["git status*", "git log*", "git diff*", "ls *", "grep *", "cat *", "echo *",
              "pytest *", "python -m pytest *", "cd *", "head *", "tail *", "wc *", "sort *",
              "find *", "rg *", "make *", "npm run *", "npm test", "true", "[ *", "[[ *",
              "printf *", "sleep *", "uniq *", "jq *", "sed -n *", "awk *", "cut *"]


def _truth(src):
    """Ground truth: the commands of the unobfuscated corpus line."""
    return parse_command(src, WS).commands


def _names(src):
    """Byte spans of static program names (plain words) in src."""
    tree = grammar.parser().parse(src.encode())
    spans = []
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "command_name" and n.named_child_count == 1 \
                and n.named_children[0].type == "word":
            w = n.named_children[0]
            txt = w.text.decode()
            if re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", txt) and txt not in WRAPPER_NAMES \
                    and txt not in ("export", "local", "declare", "unset", "alias"):
                spans.append((w.start_byte, w.end_byte, txt))
        if n.type in ("heredoc_body", "raw_string", "string"):
            continue
        stack.extend(n.children)
    return sorted(spans)


def _ansi(name):
    return "$'" + "".join(f"\\x{ord(c):02x}" for c in name) + "'"


NAME_OBFUSCATIONS = [
    lambda n: "'" + n + "'",
    lambda n: '"' + n + '"',
    lambda n: "\\" + n,
    lambda n: n[0] + "\\" + n[1:] if len(n) > 1 else "\\" + n,
    lambda n: "$'" + n + "'",
    _ansi,
    lambda n: "''" + n,
    lambda n: n[0] + '""' + n[1:],
    lambda n: n[0] + "\\\n" + n[1:] if len(n) > 1 else n,
    lambda n: "/usr/bin/" + n,
    lambda n: "command " + n,
    lambda n: "env " + n,
    lambda n: "env -i A=1 " + n,
    lambda n: "timeout 5 " + n,
    lambda n: "nice -n 1 nohup " + n,
    lambda n: "time -p " + n,
    lambda n: "sudo " + n,
]

WRAPS = [
    lambda s: "{ " + s + "\n}",
    lambda s: "( " + s + "\n)",  # "((" would be arithmetic: see NOTES
    lambda s: "true && " + s,
    lambda s: "false || " + s,
    lambda s: "if true; then " + s + "\nfi",
    lambda s: "for _ in 1; do " + s + "\ndone",
    lambda s: "sh -c " + shlex.quote(s),
    lambda s: "bash -lc " + shlex.quote(s),
    lambda s: "eval " + shlex.quote(s),
    lambda s: "echo \"$( " + s + "\n)\"",
    lambda s: "f() { " + s + "\n}; f",
    lambda s: "bash <<'EOS'\n" + s + "\nEOS",
]


def _obfuscate_names(src, k):
    out = src
    for start, end, name in reversed(_names(src)):
        f = NAME_OBFUSCATIONS[(k + start) % len(NAME_OBFUSCATIONS)]
        b = out.encode()
        out = (b[:start] + f(name).encode() + b[end:]).decode()
    return out


def _effective(commands):
    """Drop the outer argv that `sudo X` adds (sudo is not transparent)."""
    return [c for c in commands if c[:1] != ["sudo"]]


def _variants(src):
    for k in range(len(NAME_OBFUSCATIONS)):
        yield _obfuscate_names(src, k)
    if "<<" not in src:
        for w in WRAPS:
            yield w(src)
            yield w(_obfuscate_names(src, 3))


def _deny_hit(truth, deny):
    return any(matches(r, c) for c in truth for r in deny)


GENERATED = [(src, v) for src in CORPUS for v in _variants(src)]


def test_generated_corpus_size():
    assert len(GENERATED) > 200 * 10


@pytest.mark.parametrize("deny", DENY_SETS, ids=lambda d: d[0])
def test_generated_variants_never_allow_denied(deny):
    """For every corpus line and every quoting/escaping/wrapping variant:
    if the plain line contains a command a deny rule matches, no allow set
    allows the variant -- it is denied."""
    misses = []
    for src, v in GENERATED:
        truth = _truth(src)
        if not _deny_hit(truth, deny):
            continue
        for allow in (BROAD_ALLOW, SOME_ALLOW):
            d = check(v, deny=deny, allow=allow, workspace=WS)
            if d.action != "deny":
                misses.append((src, v, d.action, d.reason))
    assert not misses, misses[:5]


def test_generated_name_variants_normalise_identically():
    bad = []
    for src in CORPUS:
        truth = _effective(_truth(src))
        for k in range(len(NAME_OBFUSCATIONS)):
            v = _obfuscate_names(src, k)
            got = _effective(parse_command(v, WS).commands)
            if got != truth:
                bad.append((src, v, truth, got))
    assert not bad, bad[:5]


def test_generated_allow_is_sound():
    """An allow decision on a variant implies every command of the plain line
    is matched by an allow rule."""
    bad = []
    for src, v in GENERATED:
        d = check(v, allow=SOME_ALLOW, workspace=WS)
        if d.action == "allow":
            truth = _truth(src)
            if not all(any(matches(r, c) for r in SOME_ALLOW) for c in truth):
                bad.append((src, v, truth))
    assert not bad, bad[:5]


def test_runners_need_their_own_allow():
    assert check("uv run pytest -q", allow=["pytest *"]).action == "default"
    assert check("uv run pytest -q", allow=["pytest *", "uv run *"]).action == "allow"
    assert check("uv run rm v", allow=["uv run *"]).action == "default"


def test_speculative_commands_not_in_commands():
    p = parse_command("uv run --unknown-opt x rm v")
    assert p.commands == [["uv", "run", "--unknown-opt", "x", "rm", "v"]]
    assert any(d.speculative and d.argv == ("rm", "v") for d in p.details)


def test_recursion_is_bounded():
    for src in ["(" * 3000 + "ls" + ")" * 3000, "echo $(" * 1500 + "rm v" + ")" * 1500,
                "{ " * 2000 + "rm v" + "; }" * 2000]:
        p = parse_command(src)
        assert p.error or p.opaque
        assert decide_on(p, allow=["*"]).action != "allow"


def _smoke_escape_glob(text):  # copy of smoke_core.policy.gate.escape_glob
    return re.sub(r"([\\*?\[\]])", r"\\\1", text)


def test_backslash_escapes_in_patterns_are_literal():
    assert matches("rm \\*.py", ["rm", "*.py"])
    assert not matches("rm \\*.py", ["rm", "a.py"])
    assert matches("echo a\\?", ["echo", "a?"]) and not matches("echo a\\?", ["echo", "ab"])


def test_remembered_rules_from_rule_for_still_match_their_command():
    """Smoke remembers `run_command(<escape_glob(command)>)`; for a single
    simple command that rule must match exactly that command."""
    checked = 0
    for src in CORPUS:
        p = parse_command(src, WS)
        if len(p.details) != 1 or p.opaque or p.error or "\n" in src:
            continue
        checked += 1
        if not re.search("[\'\"<>]", src):  # text-level escaping: unquoted, no redirects
            rule = _smoke_escape_glob(src)
            assert any(matches(rule, f) for f in p.details[0].allow_forms), (src, rule)
        rule = exact_pattern(p.details[0].allow_forms[0])
        assert any(matches(rule, f) for f in p.details[0].allow_forms), (src, rule)
        assert check(src, allow=[rule], workspace=WS).action == "allow", src
        if len(p.commands[0]) > 1:
            assert not matches(rule, [*p.details[0].allow_forms[0][:-1], "zz"]), src
    assert matches("echo $PATH", ["echo", DynamicWord("$PATH")])
    assert not matches("echo '$PATH'", ["echo", DynamicWord("$PATH")])
    assert not matches("echo $PATH", ["echo", "$PATH"])
    assert checked > 150
