"""Secrets stay secret: which environment variables hold provider keys, an
environment for child processes without them, and redaction of their values.

Every subprocess Smoke starts (terminal commands, MCP stdio servers, git)
gets :func:`child_env` instead of ``os.environ``; every text that can reach a
person, a log, a store or the model again passes :meth:`Redactor.redact`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: Provider key variables known without asking any plugin.
KNOWN_SECRET_VARS: frozenset[str] = frozenset(
    {
        "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY",
        "GOOGLE_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY",
        "TOGETHER_API_KEY", "FIREWORKS_API_KEY", "CEREBRAS_API_KEY", "HF_TOKEN", "HUGGINGFACE_API_KEY",
        "AZURE_OPENAI_API_KEY", "COHERE_API_KEY", "PERPLEXITY_API_KEY", "SMOKE_STORE_URL",
    }
)
#: Any variable named like an API key is treated as one.
_SECRET_NAME = re.compile(r"(^|_)API_KEY$")
#: Values shorter than this are not redacted (too likely to match ordinary text).
MIN_SECRET_LENGTH = 8
MASK = "***"

_registered_values: set[str] = set()
#: Key variables declared by installed providers (``register(..., env_var=...)``): this module
#: never asks the plugin manager (a layer above it) — whoever loaded the plugins hands them in,
#: as names (``create_agent``) or as a loader asked on first need (the ``smoke`` command).
_declared_vars: set[str] = set()
_provider_vars_loader: Callable[[], Iterable[str]] | None = None


def declare_secret_names(names: Iterable[str]) -> None:
    """Treat these environment variables as holding secrets (a provider's key variable)."""
    new = {n for n in names if n} - _declared_vars
    if new:
        _declared_vars.update(new)
        is_secret_name.cache_clear()


def set_provider_vars_loader(loader: Callable[[], Iterable[str]]) -> None:
    """Learn the key variables of installed providers from ``loader`` when first needed."""
    global _provider_vars_loader
    _provider_vars_loader = loader
    is_secret_name.cache_clear()


def _installed_provider_vars() -> set[str]:
    global _provider_vars_loader
    loader, _provider_vars_loader = _provider_vars_loader, None
    if loader is not None:
        try:
            declare_secret_names(loader())
        except Exception:  # a broken plugin must not stop commands from running
            pass
    return _declared_vars


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True for a variable that holds a provider key (known, declared by a provider, or ``*_API_KEY``)."""
    return name in KNOWN_SECRET_VARS or bool(_SECRET_NAME.search(name)) or name in _installed_provider_vars()


def secret_env_names(environ: Mapping[str, str] | None = None) -> set[str]:
    """The names in ``environ`` (default ``os.environ``) that hold secrets."""
    env = os.environ if environ is None else environ
    return {name for name in env if is_secret_name(name)}


def child_env(
    base: Mapping[str, str] | None = None,
    *,
    keep: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """An environment for a child process: ``base`` (default ``os.environ``)
    without provider keys. ``keep`` names secrets the person explicitly passes
    on (an MCP server's ``env`` entry, ``sandbox.env`` in trusted settings);
    ``extra`` is added last, as given."""
    env = dict(os.environ if base is None else base)
    kept = set(keep)
    for name in list(env):
        if name not in kept and is_secret_name(name):
            del env[name]
    if extra:
        env.update(extra)
    return env


def register_secret(value: str | None) -> None:
    """Treat ``value`` (an ``api_key=`` given in code, say) as a secret to redact."""
    if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH:
        _registered_values.add(value)


class Redactor:
    """Replaces known secret values with ``***``. Build one per run
    (:meth:`from_environment`); redacting is a substring check per secret."""

    __slots__ = ("_values",)

    def __init__(self, values: Iterable[str] = ()) -> None:
        # longest first, so a key that contains another is masked whole
        self._values = tuple(sorted({v for v in values if len(v) >= MIN_SECRET_LENGTH}, key=len, reverse=True))

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> Redactor:
        env = os.environ if environ is None else environ
        values = [value for name, value in env.items() if is_secret_name(name)]
        return cls([*values, *_registered_values, *extra])

    def __bool__(self) -> bool:
        return bool(self._values)

    def redact(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, MASK)
        return text

    def redact_obj(self, obj: Any) -> Any:
        """``obj`` with every string inside (dict values, list items) redacted; unchanged objects are returned as they are."""
        if not self._values:
            return obj
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, dict):
            changed = False
            out: dict[Any, Any] = {}
            for k, v in obj.items():
                nv = self.redact_obj(v)
                changed = changed or nv is not v
                out[k] = nv
            return out if changed else obj
        if isinstance(obj, list):
            items = [self.redact_obj(v) for v in obj]
            return items if any(a is not b for a, b in zip(items, obj, strict=True)) else obj
        return obj


    def held_back(self, text: str) -> int:
        """How many characters at the end of ``text`` could be the start of a
        secret that the next piece of a stream completes (0: none)."""
        hold = 0
        for value in self._values:
            first = value[0]
            start = max(0, len(text) - len(value) + 1)
            at = text.find(first, start)
            while at != -1:
                if value.startswith(text[at:]):
                    hold = max(hold, len(text) - at)
                    break
                at = text.find(first, at + 1)
        return hold


class StreamRedactor:
    """Redacts text that arrives in pieces (a model's streamed reply): a tail
    that could be the start of a secret is held back until the next piece
    shows it is not one (or :meth:`flush`), so a key split across two deltas
    is masked too."""

    __slots__ = ("_pending", "_redactor")

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._pending = ""

    def feed(self, text: str) -> str:
        buf = self._pending + text
        hold = self._redactor.held_back(buf)
        self._pending = buf[len(buf) - hold:] if hold else ""
        return self._redactor.redact(buf[: len(buf) - hold])

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return self._redactor.redact(rest)


def redact(text: str) -> str:
    """Redact with the secrets of the current environment (and registered values)."""
    return Redactor.from_environment().redact(text)
