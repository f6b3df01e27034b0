"""The hook runner: every hook call Smoke makes goes through here (DESIGN §2).

Four calling conventions, one function each:

- :meth:`HookRunner.chain` — *before* hooks (``before_model_call``,
  ``before_tool_call``, ``before_prompt``, ``before_compaction``).
  Implementations run in pluggy order; each sees the rewrite of the previous
  one; the first block ends the chain; the strictest permission answer and
  every gathered value (``context``) are kept. A raise, or a return value of
  the wrong shape, fails **closed** with ``hook_failed`` naming the plugin and
  what it returned (the caller may choose to fail open instead).
- :meth:`HookRunner.observe` — *after* and lifecycle hooks (``after_run``,
  ``after_model_call``, ``before_run``, ``session_end``, ``close_agent``). Every
  implementation runs; each failure is reported (``run.warning`` with
  ``hook_failed`` in a run), never silent.
- :meth:`HookRunner.gather` — hooks that every implementation answers
  (``after_tool_call``, ``session_start``, ``before_run_end``,
  ``before_permission_prompt``): each return is validated and collected; a
  raise or a bad return is reported like an observer's and skipped (fail-open).
- :meth:`HookRunner.collect` — registration hooks (``register_*``). Every
  implementation runs with a ``register`` callable bound to its plugin, so a
  registration names its source and one broken plugin does not hide the
  others.

Each implementation is called as pluggy calls it: with the subset of
arguments it declares, in pluggy's order. When a monitor is installed
(``pm.add_hookcall_monitoring`` / ``pm.enable_tracing``) the call goes
through the manager's own executor (``pm._hookexec``), so the monitor sees
one call per implementation with the arguments that implementation got;
without one, the function is called directly (pluggy's executor would do
exactly that, at a cost per call that the loop benchmark sees). An ``async
def`` implementation's coroutine is awaited here (a monitor's ``after`` sees
the coroutine, not its result).

pluggy's own wrappers (``wrapper=True`` / ``hookwrapper=True``) cannot take
part in chains whose members rewrite and await; they are refused when a
plugin is registered (:func:`check_plugin`), not when a hook is first called.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pluggy
from pluggy._callers import _multicall

if TYPE_CHECKING:
    from .returns import HookReturn

#: Hooks called with the *chain* convention and the keys each may return.
CHAIN_HOOKS: dict[str, frozenset[str]] = {
    "before_model_call": frozenset({"messages", "tools", "system", "block", "reason"}),
    "before_tool_call": frozenset({"input", "permission", "block", "reason"}),
    "before_prompt": frozenset({"context", "block", "reason"}),
    "before_compaction": frozenset({"block", "reason"}),
}
#: Hooks called with the *gather* convention and the keys each may return.
GATHER_HOOKS: dict[str, frozenset[str]] = {
    "after_tool_call": frozenset({"context"}),
    "session_start": frozenset({"context"}),
    "before_run_end": frozenset({"continue_with"}),
    "before_permission_prompt": frozenset({"decision", "reason"}),
}
RETURN_KEYS: dict[str, frozenset[str]] = {**CHAIN_HOOKS, **GATHER_HOOKS}
OBSERVE_HOOKS = frozenset({"before_run", "after_run", "after_model_call", "session_end", "close_agent"})
#: a permission answer's strictness: of several hooks' answers the strictest holds
_PERMISSION_RANK = {"allow": 1, "ask": 2, "deny": 3}
COLLECT_HOOKS = frozenset({"register_tools", "register_providers", "register_commands", "register_settings"})


# ---------------------------------------------------------------- typed returns
# (the pydantic models are in hooks.returns, imported on the first non-empty
# return, so that building a hook runner — `smoke --help` — costs no pydantic)


@dataclass(slots=True)
class ChainOutcome:
    """How a chain ended. ``status`` is ``"pass"`` (``values`` holds the
    rewritten keyword values; ``plugin`` is the last one that rewrote),
    ``"block"`` (``plugin`` refused: ``reason``) or ``"fail"`` (``plugin``
    raised or returned something invalid: ``reason``)."""

    status: Literal["pass", "block", "fail"]
    values: dict[str, Any]
    plugin: str | None = None
    reason: str | None = None
    exception: str | None = None
    #: the strictest ``permission`` answer (``allow`` / ``ask``), who gave it and why
    permission: str | None = None
    permission_plugin: str | None = None
    permission_reason: str | None = None
    #: gathered keys (``context``): ``[(plugin, value), ...]`` in call order
    gathered: dict[str, list[tuple[str, Any]]] | None = None


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def parse_return(hook: str, value: Any) -> tuple[HookReturn | None, str | None]:
    """Validate what a chain hook returned: ``(parsed, None)`` or ``(None, problem)``.
    ``None`` and ``{}`` mean "no change"."""
    if value is None:
        return None, None
    if not isinstance(value, dict):
        return None, f"returned {_describe(value)} ({type(value).__name__}); return None or a dict"
    if not value:
        return None, None
    allowed = RETURN_KEYS[hook]
    unknown = sorted(k for k in value if k not in allowed)
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return None, (
            f"returned {_describe(value)}: unknown key(s) {', '.join(hints)}; "
            f"allowed keys: {', '.join(sorted(allowed))}"
        )
    from pydantic import ValidationError

    from .returns import RESULT_MODELS

    try:
        return RESULT_MODELS[hook].model_validate(value), None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors(include_url=False)
        )
        return None, f"returned {_describe(value)}: {problems}"


# ---------------------------------------------------------------- registration checks


class PluginRefused(ValueError):
    """A plugin cannot be used as written (raised at registration)."""


class AsyncRegistration(TypeError):
    """A registration hook was written ``async def`` (they must be plain functions)."""


def check_plugin(pm: pluggy.PluginManager, plugin: object, label: str) -> None:
    """Refuse what Smoke's hook runner cannot honour: implementations of hooks
    that do not exist (typos) and pluggy wrappers. Called right after
    ``pm.register``; raises :class:`PluginRefused` with a message for people."""
    known = sorted(name for name in vars(pm.hook) if not name.startswith("_") and getattr(pm.hook, name).has_spec())
    for caller in pm.get_hookcallers(plugin) or []:
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            if not caller.has_spec():
                if impl.optionalhook:
                    continue
                close = difflib.get_close_matches(caller.name, known, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else f" Known hooks: {', '.join(known)}."
                raise PluginRefused(f"plugin {label}: {caller.name!r} is not a Smoke hook.{hint}")
            if impl.wrapper or impl.hookwrapper:
                kind = "wrapper=True" if impl.wrapper else "hookwrapper=True"
                raise PluginRefused(
                    f"plugin {label}: {caller.name} is declared with {kind}, which Smoke does not support: "
                    f"Smoke's hooks chain (before_*: return a rewrite or a block) or observe (after_*: "
                    f"return nothing). Remove {kind} and return a value instead (docs/hooks.md)."
                )


# ---------------------------------------------------------------- the runner


def plugin_label(impl: Any) -> str:
    return impl.plugin_name or repr(impl.plugin)


class HookRunner:
    """Calls the hooks of one plugin manager. The plugin set of a manager is
    fixed while runs use it, so each hook's implementations are resolved once
    per runner (make a new runner after registering plugins)."""

    __slots__ = ("_cache", "_has", "pm")

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._cache: dict[str, tuple[Any, ...]] = {}
        self._has: dict[str, bool] = {}

    def impls(self, hook: str) -> tuple[Any, ...]:
        """Implementations of ``hook`` in call order (pluggy's: last registered
        first, ``tryfirst``/``trylast`` respected)."""
        impls = self._cache.get(hook)
        if impls is None:
            caller = getattr(self.pm.hook, hook, None)
            # pluggy keeps them in reverse call order
            impls = self._cache[hook] = tuple(reversed(caller.get_hookimpls())) if caller is not None else ()
        return impls

    def has(self, hook: str) -> bool:
        has = self._has.get(hook)  # asked several times per step: one dict look-up
        if has is None:
            has = self._has[hook] = bool(self.impls(hook))
        return has

    def call_one(self, hook: str, impl: Any, kwargs: Mapping[str, Any]) -> Any:
        """Call one implementation; its return value (maybe awaitable)."""
        pm = self.pm
        if pm._inner_hookexec is _multicall:  # nobody monitors: what _multicall would do, minus its frame
            return impl.function(*[kwargs[name] for name in impl.argnames])
        results: Any = pm._hookexec(hook, [impl], kwargs, False)  # monitored and traced
        return results[0] if results else None

    async def chain(
        self, hook: str, kwargs: dict[str, Any], rewritable: tuple[str, ...], gathered: tuple[str, ...] = ()
    ) -> ChainOutcome | None:
        """Run a *before* hook chain. ``kwargs`` are the hook's arguments;
        ``rewritable`` names those a hook may rewrite (each later hook sees the
        rewrite); ``gathered`` names return keys collected from every hook.
        None when every hook passed without rewriting, answering or
        gathering; never raises for a plugin's fault (cancellation passes)."""
        values = kwargs
        copied = False
        rewritten_by: str | None = None
        permission: str | None = None
        permission_plugin: str | None = None
        permission_reason: str | None = None
        found: dict[str, list[tuple[str, Any]]] | None = None

        def outcome(status: Literal["pass", "block", "fail"], plugin: str | None, reason: str | None = None,
                    exception: str | None = None) -> ChainOutcome:
            return ChainOutcome(status, values, plugin, reason, exception, permission, permission_plugin,
                                permission_reason, found)

        for impl in self.impls(hook):
            label = plugin_label(impl)
            try:
                res = self.call_one(hook, impl, values)
                if res is not None and inspect.isawaitable(res):
                    res = await res
            except Exception as exc:  # not CancelledError (a BaseException): cancellation passes
                return outcome("fail", label, f"{hook} in {label} raised {type(exc).__name__}: {exc}",
                               type(exc).__name__)
            parsed, problem = parse_return(hook, res)
            if problem is not None:
                return outcome("fail", label, f"{hook} in {label} {problem}")
            if parsed is None:
                continue
            answer = getattr(parsed, "permission", None)
            if parsed.block or answer == "deny":
                return outcome("block", label, parsed.reason or "no reason given")
            if answer is not None and _PERMISSION_RANK[answer] > _PERMISSION_RANK.get(permission or "", 0):
                permission, permission_plugin, permission_reason = answer, label, parsed.reason
            for key in gathered:
                value = getattr(parsed, key, None)
                if value:
                    if found is None:
                        found = {}
                    found.setdefault(key, []).append((label, value))
            for key in rewritable:
                if key in parsed.model_fields_set:
                    if not copied:
                        values = dict(values)
                        copied = True
                    values[key] = getattr(parsed, key)
                    rewritten_by = label
        if copied or permission is not None or found is not None:
            return outcome("pass", rewritten_by)
        return None

    async def gather(
        self, hook: str, kwargs: Mapping[str, Any], on_error: Callable[[str, str, BaseException], None]
    ) -> list[tuple[str, HookReturn]]:
        """Run every implementation of a gathering hook; ``[(plugin, parsed
        return), ...]`` of those that returned something. A raise or a return
        of the wrong shape goes to ``on_error(plugin, message, exc)`` and is
        skipped (fail-open)."""
        out: list[tuple[str, HookReturn]] = []
        for impl in self.impls(hook):
            label = plugin_label(impl)
            try:
                res = self.call_one(hook, impl, kwargs)
                if res is not None and inspect.isawaitable(res):
                    res = await res
            except Exception as exc:  # not CancelledError (a BaseException): cancellation passes
                on_error(label, f"{hook} in {label} raised {type(exc).__name__}: {exc}", exc)
                continue
            parsed, problem = parse_return(hook, res)
            if problem is not None:
                on_error(label, f"{hook} in {label} {problem}", ValueError(problem))
            elif parsed is not None:
                out.append((label, parsed))
        return out

    async def observe(
        self, hook: str, kwargs: Mapping[str, Any], on_error: Callable[[str, str, BaseException], None]
    ) -> None:
        """Run every implementation of an observing hook; a raise is passed to
        ``on_error(plugin, message, exc)`` and the next implementation runs."""
        for impl in self.impls(hook):
            try:
                res = self.call_one(hook, impl, kwargs)
                if res is not None and inspect.isawaitable(res):
                    await res
            except Exception as exc:  # not CancelledError (a BaseException): cancellation passes
                label = plugin_label(impl)
                on_error(label, f"{hook} in {label} raised {type(exc).__name__}: {exc}", exc)

    def collect(
        self,
        hook: str,
        make_kwargs: Callable[[str], dict[str, Any]],
        on_error: Callable[[str, BaseException], None],
    ) -> None:
        """Run a registration hook: ``make_kwargs(plugin)`` builds each
        implementation's arguments (a ``register`` bound to that plugin);
        ``on_error(plugin, exc)`` decides whether a raise is fatal (re-raise)
        or reported. Registration hooks are plain functions: an async one is
        an error."""
        for impl in self.impls(hook):
            label = plugin_label(impl)
            try:
                res = self.call_one(hook, impl, make_kwargs(label))
                if inspect.isawaitable(res):
                    if inspect.iscoroutine(res):
                        res.close()
                    raise AsyncRegistration(f"{hook} in plugin {label} is async; it must be a plain function")
            except Exception as exc:
                on_error(label, exc)
