"""The plugin manager: built-ins, entry points (group ``smoke``) and
per-agent plugins, all through one pluggy manager per agent.

Entry points are loaded once per process (and again only when the set of
installed distributions changes). ``SMOKE_LOAD_PLUGINS`` (a comma list of
entry-point or distribution names; empty means none) restricts autoloading.
A plugin that fails to import, or that Smoke refuses (a hook that does not
exist, a pluggy wrapper), is skipped and reported by :func:`plugin_report`
(``smoke plugins``), never fatal. An entry-point plugin is named
``<distribution>:<entry point>``, so one distribution may declare several.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from .. import hookspecs
from ..base.markers import ENTRY_POINT_GROUP, PROJECT_NAME, hookimpl
from ..base.version import PLUGIN_API_VERSION, __version__
from .runner import HookRunner, PluginRefused, check_plugin


def _log() -> Any:
    import logging  # not at import time: `smoke --help` never logs

    return logging.getLogger("smoke")

#: Modules registered in every manager before the entry points, so that
#: core's own behaviour goes through the same contract as third-party code.
BUILTIN_PLUGINS: tuple[str, ...] = ("smoke_core.cli.builtins",)


@dataclass
class PluginInfo:
    name: str
    distribution: str | None = None
    version: str | None = None
    module: str | None = None
    hooks: list[str] = field(default_factory=list)
    error: str | None = None
    builtin: bool = False
    plugin: Any = None


# Memos, not state: each is keyed by everything that determines its value
# (SMOKE_LOAD_PLUGINS and the installed distributions), so nothing ever has
# to reset them.
_loaded: dict[tuple[str | None, str], list[PluginInfo]] = {}
_shared_managers: dict[tuple[str | None, bool, str], SmokePluginManager] = {}


def _allowed() -> set[str] | None:
    raw = os.environ.get("SMOKE_LOAD_PLUGINS")
    if raw is None:
        return None
    return {p.strip() for p in raw.split(",") if p.strip()}


def _cache_file(key: str) -> Path:
    import zlib  # built in; hashlib would cost more than the cache saves

    from ..base.cache import cache_dir

    return cache_dir() / f"entry-points-{zlib.crc32(key.encode()):08x}.json"


def _path_stamps() -> list[list[Any]]:
    stamps: list[list[Any]] = []
    for entry in sys.path:
        try:
            stamps.append([entry, os.stat(entry or ".").st_mtime_ns])
        except OSError:
            stamps.append([entry, None])
    return stamps


def _installed_key() -> str:
    """Changes when a distribution is installed or removed (its folder on
    ``sys.path`` changes mtime) or ``sys.path`` itself changes."""
    return json.dumps(_path_stamps())


def _entry_point_records() -> list[dict[str, Any]]:
    """``[{name, value, dist, version}]`` of the group ``smoke``.

    Scanning every installed distribution (and importing ``importlib.metadata``)
    is the largest part of ``smoke --help``; the result is cached on disk and
    reused while no folder on ``sys.path`` has changed (installing or removing
    a distribution changes its folder's mtime). ``SMOKE_NO_PLUGIN_CACHE=1``
    turns the cache off; ``SMOKE_CACHE_DIR`` moves it.
    """
    use_cache = not os.environ.get("SMOKE_NO_PLUGIN_CACHE")
    key = json.dumps([sys.executable, sys.path])
    stamps = _path_stamps()
    path = _cache_file(key)
    if use_cache:
        try:
            cached = json.loads(path.read_text(encoding="utf-8"))
            if cached.get("key") == key and cached.get("stamps") == stamps:
                return list(cached["records"])
        except (OSError, ValueError, AttributeError, KeyError):
            pass
    from importlib.metadata import entry_points

    records = [
        {
            "name": ep.name,
            "value": ep.value,
            "dist": ep.dist.name if ep.dist is not None else None,
            "version": ep.dist.version if ep.dist is not None else None,
        }
        for ep in entry_points(group=ENTRY_POINT_GROUP)
    ]
    if use_cache:
        from ..base.cache import write_cache_file

        write_cache_file(path, json.dumps({"key": key, "stamps": stamps, "records": records}))
    return records


def _load_object(value: str) -> Any:
    module, _, attr = value.partition(":")
    obj: Any = importlib.import_module(module.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    return obj


def load_entry_point_plugins() -> list[PluginInfo]:
    """Import the plugins of the entry-point group ``smoke`` (once per process
    and ``SMOKE_LOAD_PLUGINS`` value). Broken plugins come back with ``error`` set."""
    allowed = _allowed()
    if allowed is not None and not allowed:
        return []
    key = (os.environ.get("SMOKE_LOAD_PLUGINS"), _installed_key())
    cached = _loaded.get(key)
    if cached is not None:
        return cached
    infos: list[PluginInfo] = []
    seen: set[tuple[str | None, str]] = set()
    for rec in _entry_point_records():
        name, dist = rec["name"], rec["dist"]
        if allowed is not None and name not in allowed and (dist not in allowed):
            continue
        if (dist, name) in seen:  # the same distribution found twice on sys.path
            continue
        seen.add((dist, name))
        info = PluginInfo(name=name, distribution=dist, version=rec["version"], module=rec["value"])
        try:
            info.plugin = _load_object(rec["value"])
        except Exception as exc:  # a broken plugin never takes the others down
            info.error = f"{type(exc).__name__}: {exc}"
            _log().warning("smoke: plugin %r (%s) failed to load and is skipped: %s", name, dist, info.error)
        else:
            problem = api_problem(info.plugin)
            if problem is not None:
                info.error, info.plugin = problem, None
                _log().warning("smoke: plugin %r (%s) is skipped: %s", name, dist, problem)
        infos.append(info)
    _loaded[key] = infos
    return infos


def api_problem(plugin: object) -> str | None:
    """Why ``plugin`` cannot be used with this smoke-core, or None. A plugin
    states the plugin API it needs as ``__smoke_plugin_api__`` (a PEP 440
    specifier such as ``">=1.0,<2"``) in its module (or object); without it,
    the plugin is taken to need the API it was written against — any 1.x."""
    wanted = getattr(plugin, "__smoke_plugin_api__", None)
    if wanted is None:
        return None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(wanted, str):
        return f"incompatible: __smoke_plugin_api__ must be a version specifier such as '>=1.0,<2', got {wanted!r}"
    try:
        spec = SpecifierSet(wanted)
    except InvalidSpecifier:
        return f"incompatible: __smoke_plugin_api__ = {wanted!r} is not a version specifier (e.g. '>=1.0,<2')"
    if PLUGIN_API_VERSION in spec:
        return None
    return (
        f"incompatible: the plugin needs Smoke's plugin API {wanted}, and this smoke-core "
        f"{__version__} provides {PLUGIN_API_VERSION}; install a version of the plugin made for this "
        f"smoke-core, or upgrade smoke-core"
    )


def _builtin_plugins() -> list[PluginInfo]:
    out: list[PluginInfo] = []
    for modname in BUILTIN_PLUGINS:
        info = PluginInfo(
            name=modname.rsplit(".", 1)[-1].lstrip("_"), distribution="smoke-core", version=__version__, module=modname,
            builtin=True,
        )
        try:
            info.plugin = importlib.import_module(modname)
        except Exception as exc:
            info.error = f"{type(exc).__name__}: {exc}"
        out.append(info)
    return out


def hooks_plugin(hooks: dict[str, Callable[..., Any]], name: str = "hooks") -> object:
    """Wrap ``{"before_tool_call": fn, ...}`` into a plugin object."""
    known = {n for n in dir(hookspecs) if not n.startswith("_") and hasattr(getattr(hookspecs, n), "smoke_spec")}
    ns = types.SimpleNamespace()
    for hook_name, fn in hooks.items():
        if hook_name not in known:
            raise ValueError(f"hooks={{{hook_name!r}: ...}}: no such hook; known hooks: {', '.join(sorted(known))}")
        if not callable(fn):
            raise TypeError(f"hooks[{hook_name!r}] must be callable, got {type(fn).__name__}")
        setattr(ns, hook_name, hookimpl(specname=hook_name)(_trampoline(fn)))
    ns.__name__ = name
    return ns


def _trampoline(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A generated function with exactly ``fn``'s parameter names (pluggy
    matches by name), marked instead of ``fn`` so a shared function or bound
    method is never marked globally."""
    sig = inspect.signature(fn)
    names = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    args = ", ".join(names)
    call = ", ".join(f"{n}={n}" for n in names)
    ns: dict[str, Any] = {"_fn": fn}
    if inspect.iscoroutinefunction(fn):
        src = f"async def _hook({args}):\n    return await _fn({call})\n"
    else:
        src = f"def _hook({args}):\n    return _fn({call})\n"
    exec(src, ns)  # a generated trampoline so pluggy sees exactly fn's argument names
    hook: Callable[..., Any] = ns["_hook"]
    hook.__name__ = getattr(fn, "__name__", "hook")
    return hook


class SmokePluginManager(pluggy.PluginManager):
    """A pluggy manager with Smoke's hookspecs and helpers to call hooks with
    Smoke's semantics (chaining, async implementations, subset arguments)."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self.infos: list[PluginInfo] = []

    def add(self, plugin: object, *, name: str | None = None, info: PluginInfo | None = None) -> None:
        """Register ``plugin``; raises :class:`PluginRefused` (a ValueError) with a
        message for people when it cannot be used (name taken, unknown hook,
        pluggy wrapper, arguments the hook does not have)."""
        label = name or getattr(plugin, "__name__", None) or repr(plugin)
        try:
            self.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginRefused(f"plugin {label}: {exc}") from None
        except ValueError as exc:  # already registered under that name
            first = str(exc).splitlines()[0]
            raise PluginRefused(f"cannot register plugin {label}: {first}") from None
        try:
            check_plugin(self, plugin, label)
        except PluginRefused:
            self.unregister(plugin)
            raise
        if info is None:
            info = PluginInfo(name=name or self.get_name(plugin) or repr(plugin), plugin=plugin)
        info.hooks = sorted({impl.opts.get("specname") or impl.function.__name__ for impl in self._impls_of(plugin)})
        self.infos.append(info)

    def runner(self) -> HookRunner:
        """A :class:`~smoke_core.hooks.runner.HookRunner` over the current plugin set."""
        return HookRunner(self)

    def _impls_of(self, plugin: object) -> list[Any]:
        out: list[Any] = []
        for hc in self.get_hookcallers(plugin) or []:
            out.extend(i for i in hc.get_hookimpls() if i.plugin is plugin)
        return out

    def impls(self, hook_name: str) -> list[Any]:
        """Hook implementations in call order (pluggy's: last registered first)."""
        return list(HookRunner(self).impls(hook_name))

    def plugin_label(self, impl: Any) -> str:
        return impl.plugin_name or repr(impl.plugin)


def create_plugin_manager(
    plugins: list[object] | None = None,
    hooks: dict[str, Callable[..., Any]] | None = None,
    *,
    autoload: bool = True,
) -> SmokePluginManager:
    """A manager holding built-ins, autoloaded entry points and the given plugins.

    Agents without plugins or hooks of their own share one manager per
    ``SMOKE_LOAD_PLUGINS`` value (building one costs about a millisecond of
    pluggy introspection, which matters with thousands of agents); treat
    ``agent.plugin_manager`` as read-only.
    """
    shared_key = (os.environ.get("SMOKE_LOAD_PLUGINS"), autoload, _installed_key() if autoload else "")
    if not plugins and not hooks:
        shared = _shared_managers.get(shared_key)
        if shared is not None:
            return shared
    pm = SmokePluginManager()
    for info in _builtin_plugins():
        if info.plugin is not None:
            pm.add(info.plugin, name=f"smoke-core:{info.name}", info=info)
        else:
            pm.infos.append(info)
    if autoload:
        for info in load_entry_point_plugins():
            if info.plugin is None:
                pm.infos.append(info)
                continue
            if pm.is_registered(info.plugin):
                continue
            name = f"{info.distribution}:{info.name}" if info.distribution else info.name
            copy = PluginInfo(**{**info.__dict__})
            try:
                pm.add(info.plugin, name=name, info=copy)
            except PluginRefused as exc:  # reported by `smoke plugins`, never fatal to the others
                copy.error = str(exc)
                copy.plugin = None
                pm.infos.append(copy)
                _log().warning("smoke: plugin %r (%s) is skipped: %s", info.name, info.distribution, exc)
    for i, plugin in enumerate(plugins or []):
        name = getattr(plugin, "__name__", None) or f"{type(plugin).__name__}#{i}"
        if pm.is_registered(plugin):
            continue
        if pm.has_plugin(name):
            name = f"{name}#{i}"
        pm.add(plugin, name=name)
    if hooks:
        pm.add(hooks_plugin(hooks), name="hooks=")
    if not plugins and not hooks:
        _shared_managers[shared_key] = pm
    return pm


def plugin_report() -> list[PluginInfo]:
    """Every plugin a default agent would load, with the hooks each implements."""
    return create_plugin_manager().infos


def collect_providers(pm: SmokePluginManager) -> Any:
    """A :class:`~smoke_core.providers.ProviderRegistry` filled by every
    ``register_providers`` implementation; a plugin that raises is logged and
    skipped (its providers are absent)."""
    from ..wire.types import ProviderRegistry

    registry = ProviderRegistry()

    def kwargs(label: str) -> dict[str, Any]:
        def register(name: str, factory: Any, **kw: Any) -> None:
            registry.register(name, factory, source=label, **kw)

        return {"register": register}

    def failed(label: str, exc: BaseException) -> None:
        _log().warning("smoke: register_providers in %s raised %s: %s (skipped)", label, type(exc).__name__, exc)

    HookRunner(pm).collect("register_providers", kwargs, failed)
    return registry


def provider_env_vars() -> list[str]:
    """The key variables installed providers declare (``register(..., env_var=...)``),
    for :func:`smoke_core.policy.secrets.set_provider_vars_loader`."""
    return [s.env_var for s in collect_providers(create_plugin_manager()).specs() if s.env_var]

