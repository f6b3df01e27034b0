"""What the parse knows about names: variables that change how a shell, the
dynamic loader or an interpreter starts (an assignment to one makes a command
opaque; the model may not pass one in ``env``), variables whose value is a
command, git's command-valued config keys and global options, and the
folders whose programs are taken by their basename.
"""

from __future__ import annotations

import re

#: Variables that change how programs load or run.
DANGEROUS_VARS = frozenset(
    ["BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3", "PS4", "IFS", "PATH", "CDPATH", "GLOBIGNORE", "HOME", "ZDOTDIR", "INPUTRC", "FPATH", "BASH_CMDS", "BASH_ALIASES", "BASH_LOADABLES_PATH", "EXECIGNORE", "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONWARNINGS", "PYTHONINSPECT", "PYTHONEXECUTABLE", "PYTHONPLATLIBDIR", "PYTHONBREAKPOINT", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB", "GEM_HOME", "GEM_PATH", "BUNDLE_GEMFILE", "LUA_INIT", "LUA_PATH", "LUA_CPATH", "TCLLIBPATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_PAGER", "GIT_EDITOR", "GIT_ASKPASS", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "GIT_DIR", "GIT_TEMPLATE_DIR", "GIT_WORK_TREE", "GIT_SEQUENCE_EDITOR", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS", "SUDO_ASKPASS", "BROWSER", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "MAVEN_OPTS", "GRADLE_OPTS", "RUSTC_WRAPPER", "RUSTC", "RUSTDOC", "CC", "CXX", "LD", "MAKEFLAGS", "MAKE", "XDG_CONFIG_HOME", "TERMINFO"]
)
DANGEROUS_PREFIXES = ("LD_", "DYLD_", "GIT_CONFIG", "BASH_FUNC_", "NPM_CONFIG_", "CARGO_")

#: Variables whose value is itself a shell command (parsed, so deny rules see it).
COMMAND_VARS = frozenset(
    ["GIT_SSH_COMMAND", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PROXY_COMMAND", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "SUDO_EDITOR", "SYSTEMD_PAGER", "PROMPT_COMMAND", "LESSOPEN", "LESSCLOSE", "GIT_EXTERNAL_DIFF"]
)
PROMPT_VARS = frozenset(["PS0", "PS1", "PS2", "PS3", "PS4"])

#: git config keys whose value is a shell command.
GIT_COMMAND_KEYS = re.compile(
    r"^(core\.(pager|editor|sshcommand|askpass|fsmonitor)|sequence\.editor|diff\.external|"
    r"pager\..*|credential\.helper|credential\..*\.helper|diff\..*\.(textconv|command)|"
    r"filter\..*\.(clean|smudge|process)|merge\..*\.driver|gpg\.program|gpg\..*\.program|"
    r"uploadpack\.packobjectshook|remote\..*\.(uploadpack|receivepack)|core\.hookspath)$",
    re.I,
)
#: git ``-c`` keys that cannot run commands; any other ``-c`` key makes a command opaque.
GIT_SAFE_CONFIG = re.compile(
    r"^(color(\..*)?|user\.(name|email)|advice\..*|core\.quotepath|"
    r"init\.defaultbranch|safe\.directory|commit\.gpgsign|tag\.gpgsign|"
    r"pull\.rebase|core\.autocrlf|core\.abbrev|log\..*|column\.ui|"
    r"diff\.(color|renames|algorithm|noprefix)|grep\.linenumber)$",
    re.I,
)
#: git's global options that take a value (skipped: ``git -C . push`` is ``git push``).
GIT_OPT_WITH_ARG = frozenset(
    ["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--attr-source"]
)

#: Folders whose programs an allow rule may name by basename (``/usr/bin/git`` is ``git``).
SYSTEM_BIN_DIRS = frozenset(
    ["/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/opt/homebrew/bin"]
)
SHELLS = frozenset(["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash", "posh", "rbash"])
#: shells whose ``-c`` string is parsed with the bash grammar, and marked opaque
FOREIGN_SHELLS = frozenset(["fish", "csh", "tcsh", "nu", "xonsh", "elvish", "pwsh"])

NUMBER = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|[0-9]+(#[0-9a-zA-Z@_]+)?)$")
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=(.*)$", re.S)


def is_dangerous_var(name: str) -> bool:
    """True for a variable that changes how a shell, the loader or an interpreter
    starts (case-insensitive: zsh's ``path`` is tied to ``PATH``)."""
    upper = name.upper()
    return upper in DANGEROUS_VARS or upper.startswith(DANGEROUS_PREFIXES)


_WHY = (
    (("BASH_ENV", "ENV"), "bash and sh run the file it names before the command"),
    (("SHELLOPTS", "BASHOPTS"), "it turns on shell options (xtrace expands PS4, which can run commands)"),
    (("PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3", "PS4"), "the shell runs or expands commands from it"),
    (("IFS",), "it changes how the shell splits words, so the command is not the one shown"),
    (("PATH", "CDPATH", "EXECIGNORE"), "it decides which program a command name runs"),
    (("LD_", "DYLD_"), "the dynamic loader loads code from it into every program"),
    (("PYTHON",), "Python runs or imports code from it at start-up"),
    (("NODE_",), "node loads code or options from it"),
    (("PERL", "RUBY", "GEM_", "BUNDLE_", "LUA_", "TCLLIBPATH"), "the interpreter loads code from it"),
    (("GIT_",), "git runs programs or reads config from it"),
    (("BASH_FUNC_",), "bash imports it as a function definition"),
)


def why_dangerous(name: str) -> str:
    """Why :func:`is_dangerous_var` refuses ``name``, in a few words."""
    upper = name.upper()
    for names, why in _WHY:
        if any(upper == n or (n.endswith("_") and upper.startswith(n)) or (n in ("PYTHON", "PERL", "RUBY")
               and upper.startswith(n)) for n in names):
            return why
    return "it changes how a shell, the dynamic loader or an interpreter starts"
