"""What ``smoke run``, ``smoke demo`` and ``smoke sessions`` do (the click
commands themselves are in :mod:`~smoke_core.cli.commands`, which imports nothing heavy; the
terminal rendering is in :mod:`~smoke_core.cli.render`).

Exit status: the table in :mod:`~smoke_core.cli.run_io` (0 completed, 1
failed, 2 usage error, 3 step limit, 130 interrupted, 141 stdout closed).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from ..base.display import visible
from .describe import cli_words, esc
from .prompts import prompt_choice
from .render import TerminalUI, is_interactive
from .run_io import EXIT_PIPE, EXIT_USAGE, PipeGuard, exit_status

#: ``smoke run``'s flags for the model call (settings keys of the same names)
MODEL_FLAGS = ("tool_calls", "context_window", "max_tokens", "temperature", "top_p", "seed")


# ---------------------------------------------------------------- running


def _run_agent(agent: Any, task: Any, *, as_json: bool, approve: str, label: str | None = None,
               yes: bool = False, output: Any = None, answer_only: bool = False) -> tuple[int, Any]:
    """Run ``task`` with rendering or JSON lines; the exit status and the
    :class:`RunResult`. With ``output`` (an output type) or ``answer_only``
    (``--print``) the rendering goes to stderr: stdout is for the answer. A
    closed stdout aborts the run quietly (exit status 141)."""
    # abort after the event that found the pipe closed, not inside it (the run's own task is emitting)
    guard = PipeGuard(lambda: asyncio.get_running_loop().call_soon(agent.abort))

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, agent.abort)
        except (NotImplementedError, RuntimeError):  # not the main thread
            pass
        if as_json:
            out = sys.stdout

            def write(event: Any) -> None:
                out.write(json.dumps(event.to_dict(), ensure_ascii=False, default=str) + "\n")
                out.flush()

            agent.on_any(guard.wrap(write))
            if approve != "ask":
                ui = TerminalUI(agent, approve=approve, stderr=True, yes=yes)
                agent.on("permission.required", lambda e: ui._spawn(ui._ask_permission(e.data)))
                agent.on("ask_user.required", lambda e: ui._spawn(ui._ask_question(e.data)))
                agent.on("plan.required", lambda e: ui._spawn(ui._ask_plan(e.data)))
        else:
            to_stderr = output is not None or answer_only
            # --print at a terminal: the answer is shown once, on stdout, not streamed on stderr too
            ui = TerminalUI(agent, approve=approve, label=label, yes=yes, stderr=to_stderr,
                            show_text=not (answer_only and sys.stdout.isatty()))
            agent.on_any(guard.wrap(ui.handle))
        try:
            return await agent.run(task, output_type=output)
        finally:
            try:
                loop.remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError):
                pass
            await agent.aclose()

    result = asyncio.run(main())
    return (EXIT_PIPE if guard.closed else exit_status(result)), result


def _approve_mode(as_json: bool) -> str:
    """``--yes`` is not an answering mode: it is ``auto_approve=True`` for the
    gate, which then allows what it may; what still asks (an *ask* rule,
    managed settings) is put to the person, or denied without a terminal."""
    if as_json:  # stdout is a JSON stream for scripts: never prompt on it
        return "deny"
    return "ask" if is_interactive() else "deny"


def _fail(message: str) -> NoReturn:
    """One message and exit status 2: a person's mistake never ends in a traceback."""
    click.echo(f"smoke: {message}", err=True)
    sys.exit(EXIT_USAGE)


def open_session_store(workspace: Path, *, new_session: bool = False) -> Any:
    from .sessions import open_cli_store

    return open_cli_store(workspace, new_session=new_session)


class AgentSetup:
    """What ``smoke run`` and ``smoke chat`` resolve before making an agent:
    the settings (flags included), the provider, model and endpoint."""

    def __init__(self, ws: Path, resolved: Any, provider: str, model: str | None, base_url: str | None,
                 note: str | None, flags: dict[str, Any], stream: bool) -> None:
        self.ws = ws
        self.resolved = resolved
        self.provider = provider
        self.model = model
        self.base_url = base_url
        self.note = note
        self.flags = flags
        self.stream = stream

    def create(self, store: Any, session_id: str, *, model: str | None = None) -> Any:
        """The agent, or one message and exit 2. ``model`` (``/model``) replaces
        the model, and names the provider too when written ``provider:model``."""
        from ..base.errors import ConfigError
        from ..run.factory import create_agent

        provider, chosen_model, base_url = self.provider, self.model, self.base_url
        if model is not None:
            provider, chosen_model, base_url = self._switch(model)
        try:
            return create_agent(
                self.ws, provider=provider, model=chosen_model, base_url=base_url, store=store,
                session_id=session_id, max_steps=self.flags.get("max_steps"), permission=self.flags.get("permission"),
                auto_approve=self.flags.get("auto_approve"), trust_workspace=self.resolved.trusted,
                model_settings=None if self.stream else {"stream": False},
                **{k: self.flags[k] for k in MODEL_FLAGS if k in self.flags},
            )
        except (ConfigError, ValueError, TypeError, OSError) as exc:
            raise SetupError(cli_words(exc)) from None

    def _switch(self, spec: str) -> tuple[str, str | None, str | None]:
        """``/model NAME`` or ``/model provider:NAME``: the endpoint stays only with its provider."""
        from ..hooks.manager import collect_providers, create_plugin_manager

        names = collect_providers(create_plugin_manager()).names()
        prefix, _, rest = spec.partition(":")
        if rest and prefix in names:
            if prefix == self.provider:
                return prefix, rest, self.base_url
            return prefix, rest, None
        return self.provider, spec, self.base_url


#: how to run without a key: a model on this machine (the no-key messages end with it)
LOCAL_LINE = ("A local model needs no key: smoke run --provider ollama -m MODEL \"...\" "
              "(or --provider llamacpp / vllm, or --base-url http://127.0.0.1:8080/v1).")


class SetupError(Exception):
    """A person's mistake found while setting up a run (one message, exit 2)."""


def prepare(workspace: str, provider: str | None, model: str | None, base_url: str | None,
            max_steps: int | None, yes: bool, no_stream: bool, *, interactive: bool, plan: bool = False,
            model_flags: dict[str, Any] | None = None) -> AgentSetup:
    """Resolve settings, provider and model for ``smoke run`` / ``smoke chat``;
    a mistake is :class:`SetupError` worded for the command line."""
    from ..base.errors import ConfigError, NoProviderError
    from ..hooks.collect import collect_setting_specs
    from ..hooks.manager import collect_providers, create_plugin_manager
    from ..policy.settings.layers import choose_provider, resolve_settings
    from ..run.agent_settings import detect_provider, unknown_provider
    from ..run.factory import warn_once

    ws = Path(workspace).resolve()
    flags: dict[str, Any] = {"provider": provider, "model": model, "base_url": base_url, "max_steps": max_steps,
                             "auto_approve": True if yes else None, "stream": False if no_stream else None,
                             "permission": "plan" if plan else None, **(model_flags or {})}
    flags = {k: v for k, v in flags.items() if v is not None}
    try:
        pm = create_plugin_manager()
        specs = collect_setting_specs(pm)
        resolved = resolve_settings(ws, code=flags, code_origin="flag", trust=None, specs=specs)
        if resolved.ignored and interactive:
            resolved = _offer_trust(ws, resolved, flags, specs)
        registry = collect_providers(pm)
        chosen, chosen_model, chosen_url = choose_provider(resolved, registry.names())
        for warning in resolved.warnings:
            warn_once(warning)  # create_agent says each only once too
        problem = unknown_provider(resolved, registry.names(), chosen, chosen_model)
        if problem:
            raise SetupError(problem)
        note = None
        if chosen is None:
            found = detect_provider(registry.specs())
            if found is None:
                raise NoProviderError(sorted({s.env_var for s in registry.specs() if s.env_var}))
            chosen, env_var = found
            note = f"using provider {chosen} (found {env_var})"
    except NoProviderError as exc:
        raise SetupError(f"{exc}\n  {LOCAL_LINE}\n  To try Smoke without a key, run: smoke demo") from None
    except ConfigError as exc:
        raise SetupError(cli_words(exc)) from None
    stream = resolved.values.get("stream") is not False
    return AgentSetup(ws, resolved, chosen, chosen_model, chosen_url, note, flags, stream)


def check_key(agent: Any) -> str | None:
    """Why the agent's provider cannot be called (no API key), in the
    command line's words; None when it can (or cannot tell)."""
    from ..wire.types import resolve_api_key

    provider = agent.provider
    env_var = getattr(provider, "env_var", None)
    if not getattr(provider, "key_required", False) or not env_var:
        return None
    if resolve_api_key(None, str(getattr(provider, "name", "")), None, env_var):
        return None
    return (f"no API key for {getattr(provider, 'name', 'the provider')}: {env_var} is not set. "
            f"Set it (export {env_var}=...), or choose another provider with --provider "
            f"(`smoke providers` lists them and their key variables). {LOCAL_LINE}")


def output_type_from_schema(path: str) -> Any:
    """The output type for ``--output-schema FILE``: the file's JSON Schema,
    verbatim, as the ``final_result`` tool's schema, and the same schema
    (``jsonschema``, the draft the file names) as the validator — so the
    result is checked exactly against what the person wrote, nothing is
    translated into a pydantic model and lost on the way."""
    from typing import Annotated, NewType

    import jsonschema
    from pydantic import AfterValidator, WithJsonSchema

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SetupError(f"--output-schema: no file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"--output-schema: {path} cannot be read ({exc})") from None
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise SetupError(f"--output-schema: {path} is not valid JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise SetupError(f"--output-schema: {path} must hold a JSON Schema object, not {type(schema).__name__}")
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        at = "/".join(str(p) for p in exc.absolute_path) or "the top level"
        raise SetupError(f"--output-schema: {path} is not a valid JSON Schema: {exc.message} (at {at})") from None
    validator = validator_class(schema)

    def check(value: Any) -> Any:
        problems = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
        if problems:
            raise ValueError("; ".join(
                f"{'/'.join(str(p) for p in e.absolute_path) or 'the result'}: {e.message}" for e in problems[:5]
            ))
        return value

    tool_schema = {k: v for k, v in schema.items() if k not in ("$schema", "$id", "title")}
    title = schema.get("title")
    name = title if isinstance(title, str) else Path(path).stem
    safe = "".join(ch if ch.isalnum() else "_" for ch in name).strip("_") or "Result"
    # a named type: the final_result tool says "the final result of the task as <title>"
    return NewType(safe, Annotated[Any, WithJsonSchema(tool_schema), AfterValidator(check)])


def wants_chat(task: str | None, as_json: bool, images: tuple[str, ...], output_schema: str | None,
               print_answer: bool = False) -> bool:
    """No TASK (and nothing piped in): ``smoke run`` at a terminal is ``smoke
    chat``; anywhere else it is a mistake (exit 2)."""
    from .run_io import stdin_is_piped

    if task is not None or stdin_is_piped():
        return False
    if as_json or images or output_schema or print_answer or not is_interactive():
        _fail('TASK is missing: say what the agent should do, e.g. smoke run "fix the failing test", or pipe it '
              'in (echo "..." | smoke run); `smoke chat` at a terminal')
    return True


def run_impl(task: str | None, workspace: str, provider: str | None, model: str | None, base_url: str | None,
             session: str | None, yes: bool, as_json: bool, max_steps: int | None, no_stream: bool = False,
             images: tuple[str, ...] = (), output_schema: str | None = None, plan: bool = False,
             print_answer: bool = False,
             transcript: bool = False, continue_: bool = False, resume: str | None = None,
             fork: str | None = None, **model_flags: Any) -> None:
    """Run TASK with a model in the workspace (no TASK at a terminal: ``smoke chat``)."""
    from ..run.history import new_session_id
    from .run_io import StdinError, estimated_tokens, stdin_is_piped, task_with_stdin, write_answer
    from .session_pick import PickerCancelled, SessionChoiceError, choose, remember_last

    try:
        task = task_with_stdin(task, piped=stdin_is_piped())
    except StdinError as exc:
        _fail(str(exc))
    if task is None:
        _fail('TASK is missing (stdin was empty): say what the agent should do, e.g. smoke run "fix the failing '
              'test", or pipe it in; `smoke chat` at a terminal')
    if not task.strip():
        _fail('TASK is empty: say what the agent should do, e.g. smoke run "fix the failing test"')
    # answer only: --print, or stdout is not a terminal (a pipe, a file) unless --transcript or --json
    answer_only = not as_json and (print_answer or (not transcript and not sys.stdout.isatty()))
    try:
        unknown = set(model_flags) - set(MODEL_FLAGS)
        if unknown:
            raise TypeError(f"run_impl() got unexpected keyword arguments {sorted(unknown)}")
        setup = prepare(workspace, provider, model, base_url, max_steps, yes, no_stream,
                        interactive=not as_json and is_interactive(), plan=plan, model_flags=model_flags)
        parts: list[Any] = [task, *_load_images(images)]
        output = output_type_from_schema(output_schema) if output_schema else None
    except SetupError as exc:
        _fail(str(exc))
    fresh = session is None and not continue_ and resume is None
    store = open_session_store(setup.ws, new_session=fresh)
    try:
        chosen = choose(setup.ws, store, session=session, continue_=continue_, resume=resume, fork=fork,
                        interactive=not as_json and is_interactive())
        session_id = chosen.session_id or new_session_id()
        if chosen.fork_from is not None:
            fork_into(store, chosen.fork_from, session_id)
        agent = setup.create(store, session_id)
        problem = check_key(agent)
        if problem:
            raise SetupError(problem)
        if estimated_tokens(task) > agent.context_window:
            raise SetupError(f"the task is about {estimated_tokens(task):,} tokens, more than the model's context "
                             f"window ({agent.context_window:,}); give the agent a file path instead")
    except (SetupError, SessionChoiceError) as exc:
        store.close()
        _fail(str(exc))
    except PickerCancelled:
        store.close()
        click.echo("smoke: no session chosen; nothing ran", err=True)
        sys.exit(130)
    if setup.note and not as_json:
        click.echo(f"smoke: {setup.note}", err=True)
    existed = bool(store.load(session_id)) if chosen.session_id or chosen.fork_from else False
    try:
        code, result = _run_agent(agent, parts if len(parts) > 1 else task, as_json=as_json,
                                  approve=_approve_mode(as_json), yes=yes, output=output, answer_only=answer_only)
        kept = existed or keep_session(store, agent.session_id)
    finally:
        store.close()
    if kept:
        remember_last(setup.ws, agent.session_id)
    answer = None
    if code != EXIT_PIPE and not as_json and result.status == "completed":
        if output is not None:
            answer = json.dumps(_jsonable(result.output), ensure_ascii=False, indent=2)
        elif answer_only and result.text:
            answer = result.text
    if answer is not None and not write_answer(answer):
        code = EXIT_PIPE
    if not as_json:
        if kept:
            click.echo(f"session: {agent.session_id} (continue with --continue or --session {agent.session_id})",
                       err=True)
        else:
            click.echo("session: none kept (the run ended before the model answered)", err=True)
    sys.exit(code)


def fork_into(store: Any, source: str, target: str) -> None:
    """``--fork SOURCE``: copy its history into the new session ``target``, or :class:`SetupError`."""
    from ..store.fork import UnknownSession, fork_session
    from ..store.lease import SessionBusy

    try:
        count = asyncio.run(fork_session(store, source, target))
    except SessionBusy as busy:
        raise SetupError(f"--fork {source}: {busy.info.message.replace('this run did not start', 'nothing was copied')}"
                         f"; fork it when that run has ended") from None
    except (UnknownSession, ValueError) as exc:
        raise SetupError(f"--fork {source}: {exc}") from None
    click.echo(f"smoke: forked {source} ({count} messages) into the new session {target}", err=True)


def keep_session(store: Any, session_id: str) -> bool:
    """A new session that the model never answered in (no key, a refused
    endpoint, a blocked first call) holds only the task: delete it rather
    than leave an empty session behind. True when it is kept."""
    messages = store.load(session_id)
    if any(m["role"] != "user" for m in messages):
        return True
    if messages:
        store.delete_session(session_id)
    return False


def _load_images(paths: tuple[str, ...]) -> list[Any]:
    from ..base.images import Image

    images = []
    for path in paths:
        try:
            images.append(Image.from_path(path))
        except ValueError as exc:
            raise SetupError(f"--image {path}: {exc}") from None
    return images


def _jsonable(value: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(Any).dump_python(value, mode="json")


def _offer_trust(ws: Path, resolved: Any, flags: dict[str, Any], specs: Any) -> Any:
    """At a terminal, offer once per folder to trust it when its own settings were ignored."""
    from rich.console import Console

    from ..policy.settings.files import mark_trust_offered, trust_folder, trust_offered
    from ..policy.settings.layers import resolve_settings

    if trust_offered(ws):
        return resolved
    mark_trust_offered(ws)
    c = Console(highlight=False, soft_wrap=True)
    c.print(f"[bold yellow]⚠ this folder is not trusted:[/bold yellow] {esc(visible(str(ws)))}")
    for path, keys in resolved.ignored.items():
        c.print(f"  {esc(visible(path))} sets {esc(visible(', '.join(keys)))} — ignored while it is not trusted")
    c.print("  [dim]Trust it only if you know where it comes from: a trusted folder's settings may choose the "
            "model endpoint (your API key goes there), loosen approvals and start MCP servers.[/dim]")
    answer = prompt_choice("  trust this folder? [y/N] ", {"y": "yes", "Y": "yes", "n": "no", "N": "no"}, "no")
    if answer != "yes":
        c.print(f"  [dim]not trusted; you will not be asked again here (`smoke trust {esc(str(ws))}` "
                f"trusts it later)[/dim]")
        return resolved
    path = trust_folder(ws)
    c.print(f"  [green]trusted[/green] (saved in {esc(str(path))}; `smoke trust --revoke` undoes it)")
    return resolve_settings(ws, code=flags, code_origin="flag", trust=True, specs=specs)


def demo_impl(yes: bool, as_json: bool, workspace: str | None, real: bool = False) -> None:
    """Watch a simulated model fix a real bug with the real harness (offline,
    no key); ``real``: a real small model on this machine drives it."""
    import subprocess

    from ..base.errors import ConfigError
    from ..demo import DEMO_TASK, SIMULATION_LABEL, create_demo_agent

    # approvals go through the gate (auto_approve), so an ask rule still asks
    auto = yes or not is_interactive()
    if auto and not yes and not as_json:
        click.echo("smoke demo: no terminal attached, so approvals are granted automatically (use --yes to say so).", err=True)
    server = None
    try:
        if real:
            agent, project, label, server = _real_demo(workspace, auto)
        else:
            agent, project = create_demo_agent(workspace, auto_approve=auto)
            label = SIMULATION_LABEL
    except (RuntimeError, ConfigError) as exc:
        click.echo(f"smoke demo: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    if not as_json:
        click.echo(f"sample project copied to {project}")
    click.echo(f"smoke demo: the model is the {label}", err=True)
    try:
        code, _ = _run_agent(agent, DEMO_TASK, as_json=as_json, approve=_approve_mode(as_json), label=label, yes=auto)
    finally:
        if server is not None:
            server.stop()
    if not as_json:
        proc = subprocess.run(
            [sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=project,
            capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        verdict = "pass" if proc.returncode == 0 else "FAIL"
        click.echo(f"\nsample project tests after the run: {verdict} ({proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''})")
        click.echo(f"the project is at {project}")
    sys.exit(code)


def _real_demo(workspace: str | None, auto: bool) -> tuple[Any, Path, str, Any]:
    """``smoke demo --real``: a llama-server on 127.0.0.1 and the demo agent it drives."""
    from ..demo import create_real_demo_agent, real_demo_label
    from ..demo.llama_server import LlamaServer, RealModelMissing, find_real_model

    try:
        found = find_real_model()
    except RealModelMissing as exc:
        raise RuntimeError(f"--real: {exc}") from None
    threads = int(os.environ.get("SMOKE_LLAMA_THREADS") or min(4, os.cpu_count() or 1))
    click.echo(f"smoke demo: starting llama-server with {found.model.name} ({threads} thread(s))...", err=True)
    server = LlamaServer(found, alias=found.name, ctx=8192, threads=threads).start()
    try:
        agent, project = create_real_demo_agent(server.url, found.name, workspace, auto_approve=auto)
    except BaseException:
        server.stop()
        raise
    return agent, project, real_demo_label(found.name, server.base_url or "?", found.source), server

