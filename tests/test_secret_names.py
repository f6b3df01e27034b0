"""A provider's key variable stays out of child processes even when its name
does not look like a key: the secrets module learns the names from whoever
loaded the plugins (create_agent, the smoke command), never by reaching up
into the plugin manager itself."""

from __future__ import annotations

import types

import pytest

from smoke_core import create_agent
from smoke_core.plugin import hookimpl
from smoke_core.policy import secrets
from smoke_core.testing import ScriptedProvider


@pytest.fixture(autouse=True)
def _fresh_names(monkeypatch):
    monkeypatch.setattr(secrets, "_declared_vars", set())
    monkeypatch.setattr(secrets, "_provider_vars_loader", None)
    secrets.is_secret_name.cache_clear()
    yield
    secrets.is_secret_name.cache_clear()


def _provider_plugin(env_var: str) -> object:
    @hookimpl
    def register_providers(register):
        register("corp", lambda **kw: ScriptedProvider(["ok"]), env_var=env_var)

    return types.SimpleNamespace(__name__="corp-provider", register_providers=register_providers)


def test_create_agent_hands_in_the_key_variables_its_providers_declare(tmp_path, monkeypatch):
    monkeypatch.setenv("CORP_GATEWAY_TOKEN", "tok-abcdefghijkl")
    assert secrets.is_secret_name("CORP_GATEWAY_TOKEN") is False  # nothing declared it yet
    create_agent(tmp_path, provider=ScriptedProvider(["ok"]), autoload_plugins=False,
                 plugins=[_provider_plugin("CORP_GATEWAY_TOKEN")])
    assert secrets.is_secret_name("CORP_GATEWAY_TOKEN") is True
    assert "CORP_GATEWAY_TOKEN" not in secrets.child_env()


def test_a_loader_is_asked_once_on_first_need_and_a_broken_one_breaks_nothing(monkeypatch):
    asked = []

    def loader():
        asked.append(1)
        return ["LATE_TOKEN"]

    secrets.set_provider_vars_loader(loader)
    assert asked == []
    assert secrets.is_secret_name("LATE_TOKEN") and secrets.is_secret_name("OTHER") is False
    assert asked == [1]

    def broken():
        raise RuntimeError("a plugin that cannot load")

    secrets.set_provider_vars_loader(broken)
    assert secrets.is_secret_name("OPENAI_API_KEY") and secrets.is_secret_name("LATE_TOKEN")


def test_the_smoke_command_hands_in_a_loader_when_a_command_runs(tmp_path, monkeypatch):
    import click

    from smoke_core.cli import SmokeGroup
    from smoke_core.hooks.manager import provider_env_vars

    seen = []
    group = SmokeGroup("smoke")

    @group.command("probe")
    def probe() -> None:
        seen.append(secrets._provider_vars_loader)

    monkeypatch.setenv("SMOKE_LOAD_PLUGINS", "")
    with pytest.raises(SystemExit) as exit_:
        group.main(["probe"], prog_name="smoke")
    assert exit_.value.code == 0
    assert seen == [provider_env_vars]
    assert isinstance(group, click.Group)
