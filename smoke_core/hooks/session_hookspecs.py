"""The hooks of a session and of its turns — a session starting and ending,
the person's prompt, the run about to end, compaction, a permission prompt —
re-exported by :mod:`smoke_core.hookspecs` (the reference of every hook;
docs/hooks.md is generated from both). Command hooks in the Claude Code /
Codex shape (plugin smoke-hooks) run on these and on the tool-call hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base.markers import hookspec

if TYPE_CHECKING:
    from .views import AgentView, RunView


# ---------------------------------------------------------------- a session


@hookspec
def session_start(run: RunView, source: str) -> dict[str, Any] | None:
    """Called when an agent's session starts or starts again: in the first
    top-level run of an :class:`~smoke_core.Agent` (after ``before_run``,
    before the person's task is recorded) and in a run right after its
    history was compacted.

    :param run: the :class:`~smoke_core.plugin.RunHandle`.
    :param source: ``"startup"`` (a new session), ``"resume"`` (the session
        already holds messages), ``"clear"`` (the agent was made by a chat's
        ``/clear``: the host sets ``agent.session_source``) or
        ``"compact"`` (after compaction).
    :return: None, or ``{"context": "text"}``: text the model gets at the
        start of the conversation (added to the task message; after
        compaction, as a message before the next model call). Every
        implementation runs; their texts are joined.
    :raises: fail-open — reported as a ``run.warning`` (``hook_failed``).

    Example::

        @hookimpl
        def session_start(run, source):
            if source in ("startup", "resume"):
                return {"context": "Open issues: " + ", ".join(tracker.open_issues())}
    """


@hookspec
def session_end(agent: AgentView, reason: str) -> None:
    """Called once by ``await agent.aclose(reason=...)`` when the agent ran
    at least once, before ``close_agent``.

    :param agent: the :class:`~smoke_core.Agent`.
    :param reason: why the session ends: ``"clear"`` (a chat's ``/clear``),
        ``"prompt_input_exit"`` (the person left the chat) or ``"other"``
        (the default).
    :return: ignored.
    :raises: fail-open — logged and ignored.

    Example::

        @hookimpl
        def session_end(agent, reason):
            audit.write("session ended", session=agent.session_id, reason=reason)
    """


# ---------------------------------------------------------------- a turn


@hookspec
def before_prompt(run: RunView, prompt: str) -> dict[str, Any] | None:
    """Called for the person's prompt, in every top-level run, after
    ``session_start`` and before the prompt is recorded in the session
    (subagent runs do not call it: their task is the model's, not a person's).

    :param run: the :class:`~smoke_core.plugin.RunHandle`.
    :param prompt: the task's text (``run.task``).
    :return: None to pass; ``{"context": "text"}`` to add text the model gets
        with the prompt (every implementation's text is added);
        ``{"block": True, "reason": "..."}`` to refuse the prompt: it is not
        recorded, the model is not called, and the run fails with
        ``hook_blocked`` carrying the reason (for the person).
    :raises: fail-closed — the run fails with ``hook_failed`` naming the plugin.

    Example::

        @hookimpl
        def before_prompt(prompt):
            if "password" in prompt.lower():
                return {"block": True, "reason": "do not paste passwords into the chat"}
    """


@hookspec
def before_run_end(run: RunView, text: str | None, continued: int) -> dict[str, Any] | None:
    """Called when a run is about to complete — the model answered without
    calling a tool, or called ``finish_task`` — in top-level runs and in
    subagent runs (``run.parent`` is set); not when it fails or is aborted.

    :param run: the :class:`~smoke_core.plugin.RunHandle`.
    :param text: the run's final text (the answer or the finish summary).
    :param continued: how many times this hook already made this run go on
        (0 the first time; Claude Code's ``stop_hook_active`` is
        ``continued > 0``).
    :return: None to let the run end; ``{"continue_with": "message"}`` to
        go on: the message is the next user message and the loop continues.
        Every implementation runs; their messages are joined. At most
        ``Guards.stop_continuations`` times per run (default 8): after that
        the run ends anyway, with a ``run.warning``.
    :raises: fail-open — reported as a ``run.warning`` (``hook_failed``); the
        run ends.

    Example::

        @hookimpl
        def before_run_end(run, continued):
            if continued < 2 and subprocess.run(["pytest", "-q"]).returncode != 0:
                return {"continue_with": "The tests fail. Fix them before you finish."}
    """


@hookspec
def before_compaction(run: RunView | None, agent: AgentView, trigger: str, instructions: str) -> dict[str, Any] | None:
    """Called before the history is summarised: in a run when the prompt
    passes the compaction threshold (``trigger="auto"``), and by a chat's
    ``/compact`` (``trigger="manual"``, ``run`` is None).

    :param run: the :class:`~smoke_core.plugin.RunHandle`, or None for ``/compact``.
    :param agent: the :class:`~smoke_core.Agent` whose history it is.
    :param trigger: ``"auto"`` or ``"manual"``.
    :param instructions: what the person typed after ``/compact`` (``""`` for auto).
    :return: None to pass; ``{"block": True, "reason": "..."}`` to skip this
        compaction (a run warns with the reason and goes on uncompacted; it
        asks again at the next step while the prompt stays over the threshold).
    :raises: fail-open, unlike the other *before* hooks (a broken plugin must
        not stop a run from shrinking its context): a ``run.warning``, and
        the compaction goes ahead.

    Example::

        @hookimpl
        def before_compaction(run, trigger):
            archive.save(run.session_id, run.messages)  # keep the long form
    """


# ---------------------------------------------------------------- a permission prompt


@hookspec
def before_permission_prompt(
    tool_name: str, input: dict[str, Any], tool_call_id: str, reason: str | None, run: RunView
) -> dict[str, Any] | None:
    """Called when a tool call is about to ask a person (the gate said
    *ask*), before ``permission.required`` is emitted.

    :param tool_name: the tool called.
    :param input: the arguments the person would approve.
    :param tool_call_id: the model's id for this call.
    :param reason: why it asks (a rule, a secret-looking path), or None.
    :param run: the :class:`~smoke_core.plugin.RunHandle`.
    :return: None to let the person answer; ``{"decision": "deny", "reason":
        "..."}`` to deny the call without asking (the reason goes to the
        model); ``{"decision": "allow"}`` to allow it without asking — only
        where the *mode* asks: an ask rule, a managed rule, a secret-looking
        path or a guarded control file still asks the person. Every
        implementation runs; a deny wins.
    :raises: fail-open — reported as a ``run.warning``; the person is asked.

    Example::

        @hookimpl
        def before_permission_prompt(tool_name, input):
            if tool_name == "run_command" and input["command"].startswith("git push"):
                return {"decision": "deny", "reason": "push from your own terminal"}
    """
