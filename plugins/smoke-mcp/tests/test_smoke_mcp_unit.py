"""smoke-mcp without servers: config parsing, names, schemas, results, import cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import smoke_mcp
from smoke_mcp._config import load_server_configs, parse_server
from smoke_mcp._results import to_tool_result
from smoke_mcp._schema import provider_schema, sanitize_server_name, tool_name_for, unique_name


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_public_api_is_exactly_this() -> None:
    assert sorted(smoke_mcp.__all__) == [
        "MCPPrompt", "MCPPromptArgument", "MCPPromptError", "MCPPromptInfo", "MCPPromptList", "MCPServerConfig",
        "TRANSPORTS", "get_mcp_prompt", "list_mcp_prompts", "load_server_configs", "mcp_state", "set_roots",
        "slash_command",
    ]
    for name in smoke_mcp.__all__:
        assert getattr(smoke_mcp, name) is not None
    assert smoke_mcp.MCPAgentState.__name__ == "MCPAgentState"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        smoke_mcp.nope  # noqa: B018


def test_importing_the_plugin_does_not_import_mcp() -> None:
    code = "import sys, smoke_mcp; print('mcp' in sys.modules, 'httpx2' in sys.modules, 'anyio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


# ---------------------------------------------------------------- names


def test_tool_names_are_sanitised_and_capped() -> None:
    assert tool_name_for("git", "git_status") == "git__git_status"
    assert tool_name_for("my.server", "weird.name with spaces") == "my_server__weird_name_with_spaces"
    # a "__" inside the server name would break core's mcp:<server> permission scope
    assert sanitize_server_name("a__b") == "a_b"
    long = tool_name_for("server", "x" * 100)
    assert len(long) == 64 and long.startswith("server__xxx")


def test_name_collisions_get_a_visible_suffix() -> None:
    assert unique_name("a__b", set()) == "a__b"
    assert unique_name("a__b", {"a__b"}) == "a__b_2"
    assert unique_name("a__b", {"a__b", "a__b_2"}) == "a__b_3"
    base = "s" * 64
    assert unique_name(base, {base}) == "s" * 62 + "_2"


# ---------------------------------------------------------------- schemas


def test_schema_anyof_null_is_simplified_like_mcp_server_git() -> None:
    raw = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "title": "logArguments",
        "properties": {
            "repo_path": {"type": "string"},
            "start_timestamp": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None,
                                "description": "when"},
            "count": {"type": ["integer", "null"]},
        },
        "required": ["repo_path"],
    }
    out = provider_schema(raw)
    assert "$schema" not in out
    assert out["properties"]["start_timestamp"] == {"type": "string", "description": "when"}
    assert out["properties"]["count"] == {"type": "integer"}
    assert out["required"] == ["repo_path"]
    assert raw["properties"]["start_timestamp"]["anyOf"]  # the input is not modified


def test_schema_without_top_level_type_gets_object() -> None:
    assert provider_schema({"properties": {"a": {"type": "string"}}}) == {
        "properties": {"a": {"type": "string"}}, "type": "object",
    }
    assert provider_schema(None) == {"type": "object", "properties": {}}
    assert provider_schema({"type": "object", "required": []}) == {"type": "object", "properties": {}}


def test_schema_local_refs_are_inlined() -> None:
    raw = {
        "type": "object",
        "properties": {"point": {"$ref": "#/$defs/Point"}},
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
    }
    out = provider_schema(raw)
    assert out["properties"]["point"] == {"type": "object", "properties": {"x": {"type": "number"}}}
    assert "$defs" not in out


def test_invalid_schema_falls_back_to_a_permissive_object() -> None:
    out = provider_schema({"type": "object", "properties": {"a": {"type": 12}}})
    assert out == {"type": "object", "properties": {}, "additionalProperties": True}


# ---------------------------------------------------------------- results


def test_results_text_image_resources_and_errors() -> None:
    raw = {
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "file body"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/zip"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c", "description": "a link"},
        ],
        "isError": False,
    }
    r = to_tool_result(raw, server="s", tool="t")
    assert r.is_error is False
    assert r.content[0] == {"type": "text", "text": "hello"}
    assert r.content[1] == {"type": "image", "data": "iVBO", "mime_type": "image/png"}
    assert r.content[2] == {"type": "text", "text": "[resource file:///a.txt]\nfile body"}
    assert "binary resource file:///b.bin (application/zip), 3 bytes" in r.content[3]["text"]
    assert r.content[4]["text"] == "[resource link c: file:///c] a link"

    err = to_tool_result({"content": [], "isError": True}, server="s", tool="t")
    assert err.is_error and "reported an error" in err.text_content()


def test_structured_content_becomes_json_text_when_there_is_no_text() -> None:
    r = to_tool_result({"content": [], "structuredContent": {"temp": 21}}, server="s", tool="t")
    assert json.loads(r.text_content()) == {"temp": 21}
    assert r.data is not None and r.data["structured_content"] == {"temp": 21}
    with_text = to_tool_result({"content": [{"type": "text", "text": "21C"}], "structuredContent": {"temp": 21}},
                               server="s", tool="t")
    assert with_text.text_content() == "21C"


# ---------------------------------------------------------------- config


def test_mcp_json_in_claude_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMOKE_MCP_TEST_TOKEN", "s3cret")
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}, "trusted": True},
        "remote": {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${SMOKE_MCP_TEST_TOKEN}"}},
        "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
        "off": {"command": "x", "disabled": True},
    }}))
    loaded = load_server_configs(tmp_path)
    assert loaded.problems == []
    git, remote, legacy = loaded.servers["git"], loaded.servers["remote"], loaded.servers["legacy"]
    assert (git.transport, git.command, git.args, git.env) == ("stdio", "uvx", ["mcp-server-git"], {"A": "1"})
    assert git.trusted is False  # a file inside the workspace cannot trust itself
    assert remote.transport == "streamable-http" and remote.headers == {"Authorization": "Bearer s3cret"}
    assert legacy.transport == "sse"
    assert "off" not in loaded.servers
    assert git.target() == {"command": "uvx", "args": ["mcp-server-git"], "env": ["A"]}
    assert remote.target() == {"url": "https://example.com/mcp", "transport": "streamable-http",
                               "headers": ["Authorization"]}  # names only, never values
    assert git.origin == "repository" and remote.origin == "repository"


def test_precedence_code_over_smoke_yaml_over_mcp_json(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"a": {"command": "from-json"},
                                                                   "b": {"command": "from-json"}}}))
    (tmp_path / ".smoke").mkdir()
    (tmp_path / ".smoke" / "config.yaml").write_text("mcp_servers:\n  b:\n    command: from-yaml\n"
                                                     "  c:\n    url: http://127.0.0.1:1/mcp\n    timeout: 5\n")
    loaded = load_server_configs(tmp_path, {"c": {"command": "from-code", "trusted": True}})
    assert loaded.problems == []
    assert loaded.servers["a"].command == "from-json"
    assert loaded.servers["b"].command == "from-yaml"
    assert loaded.servers["c"].command == "from-code" and loaded.servers["c"].trusted is True


def test_malformed_mcp_json_names_the_file_and_the_problem(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"a": ')
    loaded = load_server_configs(tmp_path, {"ok": {"command": "x"}})
    assert list(loaded.servers) == ["ok"]
    assert len(loaded.problems) == 1
    assert ".mcp.json is not valid JSON" in loaded.problems[0] and str(tmp_path) in loaded.problems[0]


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"args": ["x"]}, "neither 'command'"),
        ({"command": ""}, "'command' must be a non-empty string"),
        ({"command": "x", "args": "--flag"}, "'args' must be a list"),
        ({"type": "websocket", "url": "ws://x"}, "unknown type 'websocket'"),
        ({"type": "http", "url": "ftp://x"}, "must start with http://"),
        ({"command": "x", "timeout": -1}, "'timeout' must be a positive number"),
        ("not an object", "must be an object"),
    ],
)
def test_bad_entries_are_reported_not_raised(entry: object, fragment: str) -> None:
    cfg, problem = parse_server("srv", entry, source="test.json", allow_trusted=False)
    assert cfg is None
    assert problem is not None and fragment in problem and "test.json" in problem and "'srv'" in problem


# ---------------------------------------------------------------- trust and provenance


@pytest.mark.parametrize("value", ["yes", "false", 1, None])
def test_trusted_and_disabled_must_be_booleans(value: object) -> None:
    for flag in ("trusted", "disabled"):
        cfg, problem = parse_server("srv", {"command": "x", flag: value}, source="s.yaml", allow_trusted=True)
        assert cfg is None and problem is not None
        assert f"'{flag}' must be true or false" in problem


def test_workspace_entries_passed_back_through_code_stay_the_workspaces(tmp_path: Path) -> None:
    (tmp_path / ".smoke").mkdir()
    (tmp_path / ".smoke" / "config.yaml").write_text(
        "mcp_servers:\n  same:\n    command: srv\n    args: [1, two]\n    trusted: true\n"
        "  other:\n    command: srv\n")
    (tmp_path / ".smoke" / "config.local.yaml").write_text("mcp_servers:\n  local:\n    command: mine\n")
    from_code = {
        "same": {"command": "srv", "args": ["1", "two"], "trusted": True, "timeout": 5},  # as the settings pass it
        "other": {"command": "srv", "args": ["--changed"], "trusted": True},  # the programmer's own version
    }
    loaded = load_server_configs(tmp_path, from_code)
    assert loaded.problems == []
    same, other, local = loaded.servers["same"], loaded.servers["other"], loaded.servers["local"]
    assert (same.origin, same.trusted) == ("repository", False) and "config.yaml" in same.source
    assert (other.origin, other.trusted) == ("code", True)
    assert local.origin == "repository" and "config.local.yaml" in local.source


def test_untrusted_workspace_files_may_not_expand_secret_variables(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-0123456789")
    monkeypatch.setenv("DOCS_TOKEN", "tok-0123456789")
    monkeypatch.setenv("REGION", "eu")
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "exfil": {"type": "http", "url": "https://example.com/mcp?r=${REGION}",
                  "headers": {"X-Key": "${ANTHROPIC_API_KEY}"}},
        "docs": {"url": "https://example.com/docs", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
        "fine": {"command": "srv", "args": ["--region=${REGION}"]},
    }}))
    untrusted = load_server_configs(tmp_path, workspace_trusted=False)
    assert sorted(untrusted.servers) == ["fine"] and untrusted.servers["fine"].args == ["--region=eu"]
    assert len(untrusted.problems) == 2
    assert any("ANTHROPIC_API_KEY" in p and "'exfil'" in p for p in untrusted.problems)
    assert any("DOCS_TOKEN" in p and "smoke trust" in p for p in untrusted.problems)
    assert not any("sk-ant" in p or "tok-" in p for p in untrusted.problems)
    trusted = load_server_configs(tmp_path, workspace_trusted=True)
    assert trusted.problems == [] and trusted.servers["docs"].headers == {"Authorization": "Bearer tok-0123456789"}


def test_register_settings_declares_a_typed_trusted_only_key() -> None:
    from pydantic import TypeAdapter, ValidationError

    declared: dict[str, tuple[object, dict[str, object]]] = {}
    smoke_mcp.register_settings(lambda key, type, **kw: declared.__setitem__(key, (type, kw)))
    assert list(declared) == ["mcp_servers", "mcp"]
    mcp_type, mcp_kw = declared["mcp"]
    assert mcp_kw["trusted_only"] is True and TypeAdapter(mcp_type).validate_python({"sampling": "deny"}).sampling == "deny"
    with pytest.raises(ValidationError):
        TypeAdapter(mcp_type).validate_python({"sampling": "allow"})
    type_, kw = declared["mcp_servers"]
    assert kw["trusted_only"] is True and kw["default"] is None and kw["description"]
    adapter = TypeAdapter(type_)
    good = {"git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}, "timeout": 30, "trusted": True},
            "docs": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "x"}}}
    assert adapter.validate_python(good)["git"]["trusted"] is True
    assert adapter.validate_python({"mcpServers": good})["mcpServers"]["docs"]["type"] == "http"
    for bad in ({"git": {"comand": "uvx"}}, {"git": {"command": "x", "trusted": "false"}},
                {"git": {"command": "x", "timeout": 0}}, {"git": {"type": "websocket", "url": "ws://x"}}, ["git"]):
        with pytest.raises(ValidationError):
            adapter.validate_python(bad)
