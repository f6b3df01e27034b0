"""Run budgets (``max_cost_usd``, ``max_input_tokens``, ``max_output_tokens``):
checked before each model call with the request's estimated cost and input
tokens, and after it with what the provider reported. A subagent's checks
count what its parents have spent so far (their totals do not yet hold it).

What a run spent is kept in its state's scratch space: the known cost in US
dollars (calls whose price is unknown add tokens but no dollars) and the usage
of each model (``usage_by_model``: a fallback model's calls apart).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..base.errors import AgentErrorInfo
from ..policy.options import Budget
from ..wire.pricing import price_usd
from ..wire.types import ModelRequest, Usage

SPENT_KEY = "budget.spent_usd"
BY_MODEL_KEY = "usage_by_model"
UNPRICED_KEY = "budget.unpriced_warned"


def _runs(run: Any) -> Iterator[Any]:
    while run is not None:
        yield run
        run = getattr(run, "parent", None)


def spent(run: Any) -> tuple[float, int, int]:
    """(known dollars, input tokens, output tokens) of ``run`` and its parents
    (``run.usage`` and the scratch space ``run.state``)."""
    dollars, tokens_in, tokens_out = 0.0, 0, 0
    for r in _runs(run):
        usage, scratch = getattr(r, "usage", None), getattr(r, "state", None)
        if usage is None or scratch is None:
            continue
        dollars += float(scratch.get(SPENT_KEY, 0.0))
        tokens_in += usage.input_tokens
        tokens_out += usage.output_tokens
    return dollars, tokens_in, tokens_out


def record(state: Any, model: str, usage: Usage) -> None:
    """Count one call's ``usage`` for ``model`` (its dollars when priced)."""
    by_model: dict[str, Usage] = state.scratch.setdefault(BY_MODEL_KEY, {})
    total = by_model.get(model)
    if total is None:
        total = by_model[model] = Usage()
    total.add(usage)
    if usage.cost_usd is not None:
        state.scratch[SPENT_KEY] = float(state.scratch.get(SPENT_KEY, 0.0)) + float(usage.cost_usd)


def estimate_input(request: ModelRequest) -> int:
    from .compaction import estimate_tokens

    return estimate_tokens(request.messages, request.system, request.tools)


def _exceeded(budget: Budget, message: str, **details: Any) -> AgentErrorInfo:
    return AgentErrorInfo.from_code(
        "run_budget_exceeded", message,
        hint="Raise the budget (max_cost_usd / max_input_tokens / max_output_tokens) if the task needs more; "
             "a managed budget is final.",
        details={"budget": {"max_cost_usd": budget.max_cost_usd, "max_input_tokens": budget.max_input_tokens,
                            "max_output_tokens": budget.max_output_tokens}, **details},
    )


def check_before(budget: Budget, run: Any, request: ModelRequest, provider: Any, step: int) -> AgentErrorInfo | None:
    """Why the next model call may not be made (None: it may)."""
    dollars, tokens_in, tokens_out = spent(run)
    if budget.max_output_tokens is not None and tokens_out >= budget.max_output_tokens:
        return _exceeded(budget, f"the run stopped before step {step}: it has used {tokens_out:,} output tokens, "
                                 f"its max_output_tokens is {budget.max_output_tokens:,}",
                         step=step, used={"output_tokens": tokens_out})
    if budget.max_input_tokens is None and budget.max_cost_usd is None:
        return None
    estimate = estimate_input(request)
    if budget.max_input_tokens is not None and tokens_in + estimate > budget.max_input_tokens:
        return _exceeded(budget, f"the run stopped before step {step}: its next request (about {estimate:,} input "
                                 f"tokens) would bring it to {tokens_in + estimate:,}, over its max_input_tokens of "
                                 f"{budget.max_input_tokens:,}",
                         step=step, used={"input_tokens": tokens_in}, estimate={"input_tokens": estimate})
    if budget.max_cost_usd is not None:
        cost = price_usd(Usage(input_tokens=estimate), model=request.model or getattr(provider, "model", None),
                         base_url=getattr(provider, "base_url", None), price_as=getattr(provider, "price_as", None))
        if dollars + (cost or 0.0) > budget.max_cost_usd:
            estimated = f" and its next request is estimated at ${cost:.4f}" if cost else ""
            return _exceeded(budget, f"the run stopped before step {step}: it has spent ${dollars:.4f}{estimated}, "
                                     f"over its max_cost_usd of ${budget.max_cost_usd:g}",
                             step=step, used={"cost_usd": round(dollars, 6)},
                             estimate={"cost_usd": cost, "input_tokens": estimate})
    return None


def check_after(budget: Budget, run: Any, step: int) -> AgentErrorInfo | None:
    """Why the run must stop now that the call's usage is counted (None: it goes on)."""
    dollars, tokens_in, tokens_out = spent(run)
    if budget.max_cost_usd is not None and dollars > budget.max_cost_usd:
        return _exceeded(budget, f"the run stopped at step {step}: it has spent ${dollars:.4f}, over its "
                                 f"max_cost_usd of ${budget.max_cost_usd:g}", step=step,
                         used={"cost_usd": round(dollars, 6)})
    if budget.max_input_tokens is not None and tokens_in > budget.max_input_tokens:
        return _exceeded(budget, f"the run stopped at step {step}: it has used {tokens_in:,} input tokens, over its "
                                 f"max_input_tokens of {budget.max_input_tokens:,}", step=step,
                         used={"input_tokens": tokens_in})
    if budget.max_output_tokens is not None and tokens_out > budget.max_output_tokens:
        return _exceeded(budget, f"the run stopped at step {step}: it has used {tokens_out:,} output tokens, over its "
                                 f"max_output_tokens of {budget.max_output_tokens:,}", step=step,
                         used={"output_tokens": tokens_out})
    return None


def unpriced_warning(budget: Budget, state: Any, usage: Usage, model: str) -> AgentErrorInfo | None:
    """A warning, once per run, that ``max_cost_usd`` cannot count a call whose price is unknown."""
    if budget.max_cost_usd is None or usage.cost_usd is not None or not usage.total_tokens:
        return None
    if state.scratch.get(UNPRICED_KEY):
        return None
    state.scratch[UNPRICED_KEY] = True
    return AgentErrorInfo.from_code(
        "run_budget_exceeded", f"the price of {model or 'this model'} is unknown, so max_cost_usd does not count "
                               f"its calls (max_input_tokens / max_output_tokens do)", severity="warning",
        retryable=False, details={"model": model},
    )


def budget_line(budget: Budget, usage: Usage | None) -> str | None:
    """``used / limit`` of each budget for a run's ``usage`` (None when no budget is set):
    ``budget per run: $0.0120 / $0.50 · 1,200 / 50,000 input tokens``."""
    if not budget.active:
        return None
    usage = usage or Usage()
    parts = []
    if budget.max_cost_usd is not None:
        spent_usd = usage.cost_usd if usage.cost_usd is not None else 0.0
        parts.append(f"${spent_usd:.4f} / ${budget.max_cost_usd:g}")
    if budget.max_input_tokens is not None:
        parts.append(f"{usage.input_tokens:,} / {budget.max_input_tokens:,} input tokens")
    if budget.max_output_tokens is not None:
        parts.append(f"{usage.output_tokens:,} / {budget.max_output_tokens:,} output tokens")
    return "budget per run (last run): " + " · ".join(parts)
