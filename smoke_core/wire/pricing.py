"""What a model call cost, from the maintained ``genai-prices`` package
(pydantic's price database; no table is written here). A model or endpoint
it does not know gets no cost — never a guess.

The provider is identified by its API URL (``genai-prices`` matches
``https://api.openai.com/v1``, ``https://api.anthropic.com``,
``https://openrouter.ai/api/v1``, ...); a provider without a ``base_url``
(scripted, demo) or a local server is not priced. ``genai_prices`` is
imported on the first priced call only (it costs ~200 ms to import).
"""

from __future__ import annotations

import logging
from typing import Any

from .types import Usage

_unknown: set[tuple[str, str]] = set()


def price_usd(
    usage: Usage, *, model: str | None, base_url: str | None, price_as: str | None = None
) -> float | None:
    """The price in US dollars of one call's ``usage``, or None when unknown.
    ``price_as`` (a ``genai-prices`` provider id such as ``"openai"``) prices an
    endpoint that serves another provider's models at its prices (a gateway,
    a proxy); otherwise the provider is found from ``base_url``."""
    if not model or (price_as is None and (not base_url or not base_url.startswith("https://"))):
        return None
    key = (model, price_as or base_url or "")
    if key in _unknown:
        return None
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError:  # pragma: no cover - a core dependency
        return None
    tokens: dict[str, Any] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    if usage.cache_read_tokens:
        tokens["cache_read_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        tokens["cache_write_tokens"] = usage.cache_write_tokens
    try:
        if price_as is not None:
            calc = calc_price(PriceUsage(**tokens), model, provider_id=price_as)
        else:
            calc = calc_price(PriceUsage(**tokens), model, provider_api_url=base_url)
    except LookupError:
        _unknown.add(key)
        return None
    except Exception as exc:  # a bug in the price data must never fail a run
        logging.getLogger("smoke").warning("smoke: no price for %s at %s: %s", model, base_url, exc)
        _unknown.add(key)
        return None
    return float(calc.total_price)


def usage_summary(usage: Any) -> str:
    """``"1,234 in / 56 out tokens · $0.0012"``: tokens always, dollars when
    the price is known (``cost_usd``), "unknown price" when it is not."""
    u = usage or {}
    tokens_in, tokens_out = int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0)
    text = f"{tokens_in:,} in / {tokens_out:,} out tokens"
    extra = [f"{int(u[k]):,} {label}" for k, label in (("cache_read_tokens", "cached"),
                                                         ("reasoning_tokens", "reasoning"))
             if u.get(k)]
    if extra:
        text += f" ({', '.join(extra)})"
    cost = u.get("cost_usd")
    if cost is not None:
        text += f" · {format_usd(float(cost))}"
    elif tokens_in or tokens_out:
        text += " · unknown price"
    return text


def format_usd(cost: float) -> str:
    """Dollars, with the digits a small amount needs (``$0.000045``, ``$1.23``)."""
    if cost == 0:
        return "$0"
    if cost >= 0.01:
        return f"${cost:.2f}"
    text = f"{cost:.6f}".rstrip("0").rstrip(".")
    return f"${text}" if text != "0" else "<$0.000001"
