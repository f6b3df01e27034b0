"""Compaction uses the model's own context window unless told otherwise."""

from __future__ import annotations

import pytest

from smoke_core import create_agent
from smoke_core.testing import ScriptedProvider


class Priced(ScriptedProvider):
    """A scripted provider that says which real endpoint it stands for."""

    base_url = "https://api.anthropic.com"


def test_the_models_context_window_from_genai_prices(workspace):
    agent = create_agent(workspace, provider=Priced(["x"], model="claude-sonnet-4-5"))
    assert agent.context_window == 200_000


def test_an_unknown_model_gets_the_default_and_an_explicit_window_wins(workspace):
    assert create_agent(workspace, provider=ScriptedProvider(["x"], model="no-such-model-9")).context_window == 128_000
    assert create_agent(workspace, provider=ScriptedProvider(["x"]), context_window=32_000).context_window == 32_000
    with pytest.raises(ValueError, match="context_window: expected a whole number of tokens, at least 1000"):
        create_agent(workspace, provider=ScriptedProvider(["x"]), context_window=5)
