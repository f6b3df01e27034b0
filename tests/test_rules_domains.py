"""Rules over a URL's host (the ``domain`` value mode): a tool whose
``permission_key`` is ``url`` is matched by ``tool(domain:host)`` and host
globs, in the gate, in ``allow_always``, and from a settings file."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from smoke_core import PermissionGate, ToolDefinition, create_agent
from smoke_core.plugin import PermissionRequest, url_host
from smoke_core.policy.domains import domain_matches
from smoke_core.policy.rules import rule_for
from smoke_core.testing import ScriptedProvider


def fetch_tool() -> ToolDefinition:
    return ToolDefinition(name="web_fetch", description="fetch", execute=lambda i, c: "page",
                          input_schema={"type": "object", "properties": {"url": {"type": "string"}}},
                          annotations={"kind": "fetch", "open_world_hint": True}, permission_key="url")


def decide(gate: PermissionGate, url: str) -> str:
    request = PermissionRequest(tool_call_id="c", kind="tool", tool_name="web_fetch", input={"url": url},
                                tool_kind="fetch", permission_value=url)
    return asyncio.run(gate.decide(request))


def gate(allow: tuple[str, ...] = (), deny: tuple[str, ...] = (), ask: tuple[str, ...] = ()) -> PermissionGate:
    tool = fetch_tool()
    g = PermissionGate("ask-default", tools={"web_fetch": tool}.get)
    for action, rules in (("allow", allow), ("deny", deny), ("ask", ask)):
        for rule in rules:
            g.add_rule(rule, action)  # type: ignore[arg-type]
    return g


@pytest.mark.parametrize("pattern, url, expected", [
    ("domain:docs.python.org", "https://docs.python.org/3/library/", True),
    ("domain:docs.python.org", "http://DOCS.Python.org./x", True),
    ("domain:docs.python.org", "https://docs.python.org:8443/x", True),
    ("domain:docs.python.org", "https://docs.python.org.evil.com/", False),
    ("domain:docs.python.org", "https://evil.com/?docs.python.org", False),
    ("domain:docs.python.org", "https://evil.com/#https://docs.python.org/", False),
    ("domain:docs.python.org", "https://python.org/", False),
    ("*.example.com", "https://a.example.com/", True),
    ("*.example.com", "https://a.b.example.com/", True),
    ("*.example.com", "https://example.com/", False),
    ("*.example.com", "https://notexample.com/", False),
    ("domain:*.example.com", "https://api.example.com/v1", True),
    ("docs.python.org", "https://docs.python.org/", True),  # the prefix may be left out
    ("domain:127.0.0.1", "http://127.0.0.1:8000/", True),
    ("domain:[::1]", "http://[::1]:8000/", True),
    ("domain:bücher.example", "https://xn--bcher-kva.example/", True),
    ("domain:docs.python.org", "not a url", False),
])
def test_domain_patterns(pattern, url, expected):
    assert domain_matches(pattern, url) is expected


def test_url_host_is_what_the_rules_compare():
    assert url_host("https://User@Docs.Python.org.:443/x") == "docs.python.org"
    assert url_host("no host here") is None


def test_the_gate_matches_domain_rules():
    g = gate(allow=("web_fetch(domain:docs.python.org)", "web_fetch(*.example.com)"),
             deny=("web_fetch(domain:evil.example.com)",))
    assert decide(g, "https://docs.python.org/3/") == "allow"
    assert decide(g, "https://api.example.com/x") == "allow"
    assert decide(g, "https://evil.example.com/x") == "deny"  # deny beats the wildcard allow
    assert decide(g, "https://pypi.org/") == "ask"  # the default for a fetch: ask
    assert decide(g, "https://docs.python.org.evil.com/") == "ask"


def test_an_ask_rule_for_a_domain_asks_even_with_a_broad_allow():
    g = gate(allow=("web_fetch",), ask=("web_fetch(domain:pastebin.com)",))
    assert decide(g, "https://pastebin.com/raw/x") == "ask"
    assert decide(g, "https://docs.python.org/") == "allow"


def test_always_writes_a_rule_for_the_host():
    request = PermissionRequest(tool_call_id="c", kind="tool", tool_name="web_fetch",
                                permission_value="https://Docs.Python.org/3/library/os.html?x=1", tool_kind="fetch")
    assert rule_for(request, permission_key="url") == "web_fetch(domain:docs.python.org)"


def test_rule_for_value_is_what_tools_ask_mid_call():
    g = gate(allow=("web_fetch(*.example.com)",), deny=("web_fetch(domain:bad.example.com)",))
    assert g.rule_for_value("web_fetch", "https://ok.example.com/").action == "allow"
    assert g.rule_for_value("web_fetch", "https://bad.example.com/").action == "deny"
    assert g.rule_for_value("web_fetch", "https://elsewhere.org/") is None


def test_domain_rules_from_a_settings_file_reach_the_agent(tmp_path: Path, monkeypatch):
    from smoke_core.testing import isolate_settings

    isolate_settings(monkeypatch, tmp_path / "home")
    ws = tmp_path / "ws"
    (ws / ".smoke").mkdir(parents=True)
    (ws / ".smoke" / "config.yaml").write_text(textwrap.dedent("""
        permissions:
          deny: ["web_fetch(domain:evil.example)"]
    """))
    agent = create_agent(ws, provider=ScriptedProvider([]), tools=[fetch_tool()], autoload_plugins=False)
    rule = agent.options.match_rule("web_fetch", "https://evil.example/x")
    assert rule is not None and rule.action == "deny" and rule.text == "web_fetch(domain:evil.example)"
    assert agent.options.match_rule("web_fetch", "https://fine.example/") is None
