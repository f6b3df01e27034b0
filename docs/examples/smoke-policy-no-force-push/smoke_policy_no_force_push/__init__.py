"""An example enterprise policy for Smoke: no force-push to a protected branch (docs/security.md)."""

from __future__ import annotations

from smoke_core.plugin import DynamicWord, GlobWord, hookimpl, parse_command

__smoke_plugin_api__ = ">=1.0,<2"

PROTECTED = {"main", "master"}
COMMAND_TOOLS = {"run_command", "run_test"}
#: git push options that take a value (the value is not a remote or a refspec)
_WITH_VALUE = {"-o", "--push-option", "--repo", "--receive-pack", "--exec"}


@hookimpl
def before_tool_call(tool_name, input):
    command = input.get("command")
    if tool_name not in COMMAND_TOOLS or not isinstance(command, str):
        return None
    parse = parse_command(command)  # the same parse the permission rules are matched on
    if parse.error and "push" in command:
        return {"block": True, "reason": f"the policy cannot read this command ({parse.error}); write it plainly"}
    # every simple command, quotes and backslashes removed, wrappers (env, sh -c, sudo, ...)
    # looked through, git's global options (-C, -c, --git-dir) skipped; guesses included
    for simple in parse.details:
        why = force_push_to_protected(simple.argv)
        if why:
            return {"block": True, "reason": why}
    return None


def force_push_to_protected(argv):
    """Why ``argv`` force-pushes to a protected branch, or None."""
    if argv and isinstance(argv[0], (DynamicWord, GlobWord)) and "push" in argv:
        return f"the policy cannot tell which program {argv[0]} is, and the command pushes"
    if list(argv[:2]) != ["git", "push"]:
        return None
    force, positional, skip = False, [], False
    for word in argv[2:]:
        if skip:
            skip = False
        elif isinstance(word, (DynamicWord, GlobWord)):
            return f"the policy cannot tell what `git push` does with {word} (known only when it runs)"
        elif word in ("-f", "--force", "--mirror") or word.startswith(("--force-with-lease", "--force-if-includes")):
            force = True
        elif word in _WITH_VALUE:
            skip = True
        elif word.startswith("-") and not word.startswith("--") and "f" in word[1:]:
            force = True  # -fu, -vf
        elif not word.startswith("-"):
            positional.append(word)
    refspecs = positional[1:]  # the first positional word is the remote
    forced = [r for r in refspecs if r.startswith("+")]
    if not refspecs and force:
        return "force-pushing without naming the branch may push a protected branch: name it (not main)"
    for refspec in refspecs:
        target = refspec.lstrip("+").rsplit(":", 1)[-1].removeprefix("refs/heads/")
        if not (force or refspec in forced):
            continue
        if target in PROTECTED:
            return f"force-pushing to {target} is not allowed by policy: push a branch and open a pull request"
        if target in ("HEAD", "@"):
            return "force-pushing HEAD may push a protected branch: name the branch (not main)"
    return None
