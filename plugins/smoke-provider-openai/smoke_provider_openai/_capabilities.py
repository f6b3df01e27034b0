"""What a local server says about itself, read once per URL (and model) and
cached for the process.

- llama.cpp's ``llama-server``: ``GET <root>/props`` — whether the model's
  chat template takes tools (``chat_template_caps.supports_tools``; a
  template without tool support makes the server drop ``tools`` silently),
  the context each slot serves (``default_generation_settings.n_ctx``, what
  a prompt must fit — not the model's training context), the alias and the
  model file;
- Ollama: ``POST <root>/api/show`` — whether the model takes tools
  (``"tools"`` in ``capabilities``).

``<root>`` is the base URL without its ``/v1``. A server that answers
oddly (not JSON, not the shape llama.cpp gives) is reported in
``problems`` — one sentence each, which the provider turns into a
``run.warning`` — and nothing is read from it.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("smoke")

#: how long what a server said is believed (a server restarted with another model answers anew)
CACHE_SECONDS = 600.0
#: server info per (base URL, server style, model)
_CACHE: dict[tuple[str, str, str], ServerInfo] = {}


@dataclass
class ServerInfo:
    """What one server said about itself (None: it did not say)."""

    url: str
    #: ``"llamacpp"`` when ``/props`` answered as llama-server does, ``"ollama"`` for ``/api/show``
    kind: str | None = None
    supports_tools: bool | None = None
    #: the context a prompt must fit (llama.cpp: per slot)
    n_ctx: int | None = None
    slots: int | None = None
    alias: str | None = None
    model_path: str | None = None
    problems: list[str] = field(default_factory=list)
    fetched_at: float = field(default_factory=time.monotonic)


def api_root(base_url: str) -> str:
    """``http://host:8080/v1`` → ``http://host:8080`` (llama.cpp and Ollama have their own routes there)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def cached(base_url: str, style: str, model: str) -> ServerInfo | None:
    info = _CACHE.get((base_url, style, model))
    if info is not None and time.monotonic() - info.fetched_at < CACHE_SECONDS:
        return info
    return None


def forget(base_url: str | None = None) -> None:
    """Drop what servers said (all of them, or the one at ``base_url``)."""
    for key in [k for k in _CACHE if base_url is None or k[0] == base_url]:
        del _CACHE[key]


async def read_server_info(client: Any, *, base_url: str, style: str, model: str, headers: dict[str, str],
                           timeout: float, expected: bool) -> ServerInfo:
    """Ask the server at ``base_url`` (``style``: ``"llamacpp"`` or
    ``"ollama"``) and cache the answer. ``expected``: the person chose this
    kind of server, so a server that does not answer as one is a problem
    worth saying; otherwise (``openai-compatible`` trying ``/props``) a 404
    is simply "not llama.cpp". Never raises."""
    import httpx

    info = ServerInfo(url=base_url)
    root = api_root(base_url)
    try:
        if style == "llamacpp":
            response = await client.get(f"{root}/props", headers=headers, timeout=timeout)
            _read_props(info, response, f"{root}/props", expected)
        elif style == "ollama":
            response = await client.post(f"{root}/api/show", json={"model": model}, headers=headers, timeout=timeout)
            _read_ollama(info, response, f"{root}/api/show", expected)
    except httpx.HTTPError as exc:  # not reachable: the model call says so itself
        log.debug("smoke: %s did not answer: %s", root, exc)
        return info
    if not expected and info.problems:  # only trying whether it is llama.cpp: an odd answer means it is not
        log.debug("smoke: %s is not llama.cpp: %s", root, "; ".join(info.problems))
        info.problems.clear()
    _CACHE[(base_url, style, model)] = info
    return info


def _json(response: Any, where: str, info: ServerInfo, what: str) -> Any:
    if len(response.content) > 4 * 1024 * 1024:
        info.problems.append(f"{where} answered with {len(response.content):,} bytes; Smoke reads no {what} from it")
        return None
    try:
        return json.loads(response.content)
    except ValueError:
        shown = response.content[:80].decode("utf-8", "replace").strip()
        info.problems.append(f"{where} answered HTTP {response.status_code} with something that is not JSON "
                             f"({shown!r}); Smoke reads no {what} from it")
        return None


def _read_props(info: ServerInfo, response: Any, where: str, expected: bool) -> None:
    if response.status_code != 200:
        if expected:
            info.problems.append(
                f"{where} answered HTTP {response.status_code}: this does not look like llama.cpp's llama-server, "
                f"so Smoke cannot read whether the model takes tools or the context it serves")
        return
    data = _json(response, where, info, "capabilities")
    if data is None:
        return
    settings = data.get("default_generation_settings") if isinstance(data, dict) else None
    if not isinstance(settings, dict):
        info.problems.append(f"{where} answered, but not as llama.cpp's llama-server does (no "
                             f"default_generation_settings object); Smoke reads no capabilities from it")
        return
    info.kind = "llamacpp"
    odd: list[str] = []
    n_ctx = settings.get("n_ctx")
    if _positive(n_ctx):
        info.n_ctx = n_ctx
    elif n_ctx is not None:
        odd.append(f"default_generation_settings.n_ctx={n_ctx!r}")
    caps = data.get("chat_template_caps")
    if isinstance(caps, dict):
        tools = caps.get("supports_tools", caps.get("supports_tool_calls"))
        if isinstance(tools, bool):
            info.supports_tools = tools
        elif tools is not None:
            odd.append(f"chat_template_caps.supports_tools={tools!r}")
    elif caps is not None:
        odd.append(f"chat_template_caps={caps!r:.60}")
    slots = data.get("total_slots")
    info.slots = slots if _positive(slots) else None
    for key in ("model_alias", "model_path"):
        value = data.get(key)
        if isinstance(value, str) and value:
            setattr(info, "alias" if key == "model_alias" else "model_path", value)
    if odd:
        info.problems.append(f"{where} holds values Smoke cannot use ({', '.join(odd)}); they were ignored")


def _read_ollama(info: ServerInfo, response: Any, where: str, expected: bool) -> None:
    if response.status_code != 200:
        if expected and response.status_code != 404:  # 404: the model is not pulled; the call says so
            info.problems.append(f"{where} answered HTTP {response.status_code}; Smoke cannot read whether the "
                                 f"model takes tools")
        return
    data = _json(response, where, info, "capabilities")
    if not isinstance(data, dict):
        if data is not None:
            info.problems.append(f"{where} answered, but not with an object as Ollama does; Smoke reads no "
                                 f"capabilities from it")
        return
    info.kind = "ollama"
    caps = data.get("capabilities")
    if isinstance(caps, list):
        info.supports_tools = "tools" in caps


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
