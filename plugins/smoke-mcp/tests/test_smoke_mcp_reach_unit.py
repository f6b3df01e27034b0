"""The pure parts of MCP resources and prompts: mention parsing, templates,
what a resource read becomes for a model, limits, prompt arguments."""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

import pytest
from smoke_mcp import MCPPromptError, slash_command
from smoke_mcp._prompts import MCPPrompt, check_arguments, prompt_info, prompt_messages
from smoke_mcp._resources import (
    Mention,
    ResourceLimits,
    blob_blocks,
    expand_template,
    find_mentions,
    limits_from_options,
    listing_text,
    resource_blocks,
    template_row,
    template_variables,
)

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2b1"
    "5e6e0000000049454e44ae426082"
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ---------------------------------------------------------------- mentions


@pytest.mark.parametrize(("text", "expected"), [
    ("read @docs:file:///guide.md please", [("docs", "file:///guide.md")]),
    ("see @everything:demo://resource/static/document/a.md.", [("everything", "demo://resource/static/document/a.md")]),
    ("(@gh:repo://o/r/issues/1), and @gh:repo://o/r/issues/1!", [("gh", "repo://o/r/issues/1")]),
    ("@a.b-c_d:x:y @a.b-c_d:x:y", [("a.b-c_d", "x:y")]),
    ("@s:note://q?x=(1)", [("s", "note://q?x=(1)")]),
    ("mail me@example.com:8080 or @alice: hi, @bob:later, path/@x:y:z, @@s:u:v", []),
    ("`@s:u:v` and <@s:a:b>", [("s", "u:v"), ("s", "a:b")]),
    ("", []),
])
def test_mentions_are_found_where_a_person_writes_them(text: str, expected: list[tuple[str, str]]) -> None:
    assert find_mentions(text) == [Mention(s, u) for s, u in expected]
    assert all(m.text == f"@{m.server}:{m.uri}" for m in find_mentions(text))


# ---------------------------------------------------------------- templates


def test_templates_expand_with_checked_arguments() -> None:
    assert template_variables("note://users/{user}/posts/{id}") == ["user", "id"]
    assert template_variables("not {a valid") == []
    assert expand_template("note://users/{user}", {"user": "ann lee"}) == "note://users/ann%20lee"
    assert expand_template("file:///{+path}", {"path": "src/a.py"}) == "file:///src/a.py"
    assert expand_template("search{?q,lang}", {"q": "mcp"}) == "search?q=mcp"  # query variables are optional
    assert expand_template("n://{id}", {"id": 7}) == "n://7"
    for args, fragment in [
        ({}, "needs user in arguments"),
        ({"user": "a", "x": "1"}, "has no argument x; its arguments: user"),
        ({"user": ["a"]}, "argument 'user' must be text"),
        ("user=a", "arguments must be an object"),
    ]:
        with pytest.raises(ValueError, match=None) as info:
            expand_template("note://users/{user}", args)
        assert fragment in str(info.value)
    with pytest.raises(ValueError, match="is not a valid URI template"):
        expand_template("note://{unclosed", {})


def test_listing_shows_resources_and_templates_with_their_arguments() -> None:
    resources = [{"uri": "n://a", "name": "a", "title": "A doc", "mime_type": "text/plain", "size": None,
                  "description": "x" * 1000}]
    templates = [template_row({"uriTemplate": "n://u/{user}", "name": "user", "mimeType": None,
                               "description": "A user."})]
    text = listing_text("s", resources, templates)
    assert text.splitlines()[0] == "MCP server 's': 1 resource, 1 template"
    assert "- n://a — A doc (text/plain): " in text
    assert "- n://u/{user} — user; arguments: user: A user." in text


# ---------------------------------------------------------------- contents


def test_blobs_become_images_text_or_a_description() -> None:
    image = blob_blocks(b64(PNG), uri="n://logo", mime="image/png")
    assert image[0]["text"] == "[image resource n://logo (image/png), 71 bytes]"
    assert image[1] == {"type": "image", "data": b64(PNG), "mime_type": "image/png"}
    # the bytes decide, not the server's claim
    assert blob_blocks(b64(PNG), uri="n://x", mime="application/octet-stream")[1]["type"] == "image"
    fake = blob_blocks(b64(b"GIF? no"), uri="n://fake.png", mime="image/png")
    assert len(fake) == 1 and "binary resource n://fake.png (image/png)" in fake[0]["text"]
    text = blob_blocks(b64("héllo".encode()), uri="n://t", mime="text/plain")
    assert text == [{"type": "text", "text": "[resource n://t (text/plain), 5 characters]\nhéllo"}]
    assert "hi" in blob_blocks(b64(b"{\"a\": \"hi\"}"), uri="n://j", mime="application/vnd.x+json")[0]["text"]
    binary = blob_blocks(b64(b"\x00\x01\xff" * 10), uri="n://b", mime=None)
    assert binary[0]["text"].startswith("[binary resource n://b (unknown type), 30 bytes: not shown")
    zipped = blob_blocks(b64(b"PK\x03\x04 text-looking"), uri="n://z", mime="application/zip")
    assert "binary resource n://z (application/zip)" in zipped[0]["text"]  # not a textual type
    assert "not valid base64" in blob_blocks("%%%", uri="n://bad", mime=None)[0]["text"]
    big = blob_blocks(b64(PNG[:8] + b"\x00" * (6 * 1024 * 1024)), uri="n://huge", mime="image/png")
    assert len(big) == 1 and "not shown" in big[0]["text"] and "limit is 5 MB" in big[0]["text"]


def test_resource_blocks_head_each_part_and_cut_long_text() -> None:
    contents = [SimpleNamespace(uri="n://a", mime_type="text/plain", text="a" * 50, blob=None),
                {"uri": "n://b", "text": "b" * 50}]
    blocks, cut = resource_blocks(contents, server="s", max_chars=70)
    assert cut
    assert blocks[0]["text"] == "[resource n://a from MCP server 's', text/plain, 50 characters]\n" + "a" * 50
    assert blocks[1]["text"].startswith("[resource n://b from MCP server 's', 50 characters]\n")
    assert "[… cut: n://b has 50 characters; the first" in blocks[1]["text"]
    assert all("cut" not in b for b in blocks)
    whole, cut = resource_blocks(contents, server="s")
    assert not cut and "b" * 50 in whole[1]["text"]
    empty, _ = resource_blocks([], server="s")
    assert "returned no contents" in empty[0]["text"]


def test_limits_come_from_plugin_options() -> None:
    def options(value: Any) -> Any:
        return SimpleNamespace(get=lambda name, default=None: value if name == "plugin_options" else default)

    assert limits_from_options(options(None)) == (ResourceLimits(), [])
    assert limits_from_options(options({"mcp": {"resource_max_chars": 10}}))[0].resource_max_chars == 10
    limits, problems = limits_from_options(options({"mcp": {"mentions_max_chars": 0, "resource_max_chars": True}}))
    assert limits == ResourceLimits() and len(problems) == 2
    assert "mentions_max_chars'] must be a positive whole number of characters, got 0" in problems[0]
    assert "must be a mapping" in limits_from_options(options({"mcp": 5}))[1][0]


# ---------------------------------------------------------------- prompts


PROMPT = {"name": "review", "title": "Review", "description": "Review code.",
          "arguments": [{"name": "code", "required": True, "description": "The code"}, {"name": "style"}]}


def test_prompt_arguments_are_checked_with_clear_errors() -> None:
    info = prompt_info("my server", PROMPT)
    assert info.command == "/mcp__my_server__review" == slash_command("my server", "review")
    assert check_arguments(info, {"code": "x"}) == {"code": "x"}
    for args, fragment in [
        (None, "needs code; it takes code (required: The code), style (optional)"),
        ({"code": "  "}, "needs code"),
        ({"code": "x", "langauge": "py"}, "has no argument langauge"),
        ({"code": 1}, "MCP prompt arguments are text: code=1"),
        (["code"], "must be a mapping of names to text"),
    ]:
        with pytest.raises(MCPPromptError) as exc:
            check_arguments(info, args)
        assert fragment in str(exc.value) and exc.value.server == "my server" and exc.value.prompt == "review"
    bare = prompt_info("s", {"name": "hi"})
    with pytest.raises(MCPPromptError, match="it takes no arguments"):
        check_arguments(bare, {"x": "1"})


def test_prompt_messages_and_task() -> None:
    result = {"messages": [
        {"role": "user", "content": {"type": "text", "text": "Look:"}},
        {"role": "user", "content": {"type": "image", "data": b64(PNG), "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "resource", "resource": {"uri": "n://r", "text": "body"}}},
        {"role": "assistant", "content": {"type": "text", "text": "Seen."}},
    ]}
    messages = prompt_messages(result, server="s")
    assert [m["role"] for m in messages] == ["user", "user", "user", "assistant"]
    assert messages[2]["content"] == [{"type": "text", "text": "[resource n://r]\nbody"}]
    task = MCPPrompt(server="s", name="p", description=None, messages=messages).to_task()
    assert task[0] == "Look:" and task[1].mime_type == "image/png"
    assert task[2:] == ["[resource n://r]\nbody", "[assistant] Seen."]
