"""Model facts: a model's context window and maximum output (issue 16, item 6).

Where they come from, first found wins:

1. the provider's options (``provider_options={"context_window": 32768,
   "max_output_tokens": 4096}``): the person knows best;
2. the server's own model list, once fetched
   (:meth:`HTTPProvider.fetch_model_facts`: ``GET <base_url>/models``; vLLM
   says ``max_model_len``, OpenRouter and Together ``context_length``, Groq
   ``context_window`` and ``max_completion_tokens``, Mistral and LM Studio
   ``max_context_length``, llama.cpp ``meta.n_ctx`` — the context the server
   serves, which is what a prompt must fit, over ``meta.n_ctx_train``, the
   one the model was trained for); the entry is found by its ``id``, then by
   its ``aliases``, then — a llama.cpp server answers to any model name — the
   one model of a llama.cpp list;
3. ``genai-prices``' data (pydantic's maintained price database, which holds
   a context window for most hosted models; no maximum output);
4. the documented default: :data:`DEFAULT_CONTEXT_WINDOW` tokens, maximum
   output unknown (None; adapters keep their own default, e.g. Anthropic's
   8192).

A model's default ``max_tokens`` (:func:`default_max_tokens`) comes from
the same facts: what a local server sends without a limit can run for
minutes (issue 32).

``genai_prices`` is imported on the first look-up only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

#: the context window assumed when nothing better is known (tokens)
DEFAULT_CONTEXT_WINDOW = 128_000
#: the largest default ``max_tokens`` (a reply longer than this is asked for explicitly)
MAX_DEFAULT_MAX_TOKENS = 8192

_lookups: dict[tuple[str, str | None, str | None], tuple[int | None, str | None]] = {}


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What Smoke knows about a model's limits, and where it comes from
    (``source``: ``"options"``, ``"server"``, ``"genai-prices"`` or ``"default"``)."""

    model: str
    context_window: int
    max_output_tokens: int | None
    source: str

    @property
    def default_max_tokens(self) -> int:
        """:func:`default_max_tokens` of these facts."""
        return default_max_tokens(self)


def default_max_tokens(facts: ModelFacts) -> int:
    """The ``max_tokens`` a request gets when nobody chose one: a quarter of
    the context window (at least 256), never more than the model's maximum
    output nor :data:`MAX_DEFAULT_MAX_TOKENS` — so a reply that runs away
    ends with ``finish_reason: length`` in bounded time, and the prompt
    keeps three quarters of the window."""
    cap = min(MAX_DEFAULT_MAX_TOKENS, facts.max_output_tokens or MAX_DEFAULT_MAX_TOKENS)
    return max(1, min(cap, max(256, facts.context_window // 4)))


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value > 0:
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def facts_from_models_entry(entry: dict[str, Any]) -> tuple[int | None, int | None]:
    """``(context window, max output)`` from one entry of a ``/models`` list, as far as it says."""
    meta: dict[str, Any] = entry["meta"] if isinstance(entry.get("meta"), dict) else {}
    top: dict[str, Any] = entry["top_provider"] if isinstance(entry.get("top_provider"), dict) else {}
    context = None
    for value in (entry.get("max_model_len"), entry.get("context_length"), entry.get("context_window"),
                  entry.get("max_context_length"), entry.get("loaded_context_length"), entry.get("max_input_tokens"),
                  top.get("context_length"), meta.get("n_ctx"), meta.get("n_ctx_train")):
        context = _int(value)
        if context:
            break
    output = None
    for value in (entry.get("max_completion_tokens"), entry.get("max_output_tokens"),
                  top.get("max_completion_tokens")):
        output = _int(value)
        if output:
            break
    return context, output


def find_models_entry(entries: Any, model: str) -> dict[str, Any] | None:
    """The entry of a ``/models`` list that serves ``model``: the one whose
    ``id`` is ``model``, else one that lists it in ``aliases`` (llama.cpp's
    ``--alias``), else one whose id is a file path ending in ``model`` or
    ``model.gguf``; else, when the list holds a single llama.cpp model
    (``owned_by: llamacpp``), that one (llama-server answers any name)."""
    found = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    for entry in found:
        if entry.get("id") == model:
            return entry
    for entry in found:
        aliases = entry.get("aliases")
        if isinstance(aliases, list) and model in aliases:
            return entry
    for entry in found:
        ident = entry.get("id")
        if isinstance(ident, str) and "/" in ident and ident.rsplit("/", 1)[-1] in (model, f"{model}.gguf"):
            return entry
    if len(found) == 1 and found[0].get("owned_by") == "llamacpp":
        return found[0]
    return None


def genai_prices_context_window(model: str, *, base_url: str | None, price_as: str | None) -> tuple[int | None, str | None]:
    """The context window ``genai-prices`` holds for ``model`` (found by
    ``price_as``, else by ``base_url``, else by the model name alone), and the
    reason when there is none."""
    key = (model, base_url, price_as)
    if key in _lookups:
        return _lookups[key]
    try:
        from genai_prices.data_snapshot import get_snapshot
    except ImportError:  # pragma: no cover - a core dependency
        return None, "genai-prices is not installed"
    snapshot = get_snapshot()
    found: tuple[int | None, str | None] = (None, f"genai-prices does not know {model!r}")
    attempts: list[tuple[str | None, str | None]] = [(price_as, None)] if price_as else []
    if base_url and base_url.startswith("https://"):
        attempts.append((None, base_url))
    attempts.append((None, None))
    for provider_id, url in attempts:
        try:
            _, info = snapshot.find_provider_model(model, None, provider_id, url)
        except LookupError:
            continue
        except Exception as exc:  # a bug in the data must never fail a run
            logging.getLogger("smoke").warning("smoke: genai-prices failed on %s: %s", model, exc)
            break
        if info.context_window:
            found = (int(info.context_window), None)
        else:
            found = (None, f"genai-prices knows {model!r} but not its context window")
        break
    _lookups[key] = found
    return found


def model_facts(provider: Any, model: str | None = None) -> ModelFacts:
    """The facts of ``model`` (default: the provider's) for any provider: its
    own ``model_facts()`` when it has one (every ``HTTPProvider``), else
    ``genai-prices`` by its ``base_url`` / ``price_as``, else the default."""
    own = getattr(provider, "model_facts", None)
    if callable(own):
        facts = own(model)
        if isinstance(facts, ModelFacts):
            return facts
    name = model or str(getattr(provider, "model", "") or "")
    window, _ = genai_prices_context_window(name, base_url=getattr(provider, "base_url", None),
                                            price_as=getattr(provider, "price_as", None)) if name else (None, None)
    if window:
        return ModelFacts(name, window, None, "genai-prices")
    return ModelFacts(name, DEFAULT_CONTEXT_WINDOW, None, "default")
