"""MCP resources: what a resource read becomes for a model (text, images,
binaries described), resource templates, ``@server:uri`` mentions in a task,
and the size limits on what is attached.

Pure functions over the SDK's result objects (or dicts of the same shape);
the I/O lives in :mod:`smoke_mcp._state`.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from ._results import _field

#: A task mentions at most this many resources; the rest are reported, not read.
MAX_MENTIONS = 10
#: Default size limits (``plugin_options={"mcp": {...}}`` overrides them).
DEFAULT_RESOURCE_MAX_CHARS = 40_000
DEFAULT_MENTIONS_MAX_CHARS = 100_000
#: Images attached from one task's mentions, in decoded bytes (each image is
#: also held to smoke_core's 5 MB limit for one image).
MAX_MENTION_IMAGE_BYTES = 10 * 1024 * 1024
#: Characters of a server-provided description shown to the model.
MAX_DESCRIPTION_CHARS = 300
#: Items listed per server by ``list_mcp_resources``.
MAX_LISTED = 200

# `@server:scheme:rest` — the server part is a configured name (letters, digits,
# `_ . -`); the URI must start with a scheme, so "@alice: hi" or "@bob:later" are
# not mentions. Not preceded by a word character, `@`, `.`, `/` (e-mail addresses, paths).
_MENTION = re.compile(
    r"(?<![\w@./-])@(?P<server>[A-Za-z0-9_][A-Za-z0-9_.-]*):(?P<uri>[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"'`]+)"
)
_TRAILING = ".,;:!?"
_TEXT_MIME = re.compile(r"^(text/.*|application/(json|xml|javascript|x-yaml|yaml|toml|x-sh|sql|graphql)"
                        r"|.*\+(json|xml)|image/svg\+xml)$")


@dataclass(frozen=True, slots=True)
class Mention:
    """``@server:uri`` as written in the task."""

    server: str
    uri: str

    @property
    def text(self) -> str:
        return f"@{self.server}:{self.uri}"


def find_mentions(text: str) -> list[Mention]:
    """The distinct ``@server:uri`` mentions in ``text``, in order. Trailing
    sentence punctuation and an unbalanced closing bracket are not part of the URI."""
    out: list[Mention] = []
    for m in _MENTION.finditer(text or ""):
        uri = m.group("uri")
        while True:
            before = uri
            uri = uri.rstrip(_TRAILING)
            for open_, close in ("()", "[]", "{}"):
                if uri.endswith(close) and uri.count(close) > uri.count(open_):
                    uri = uri[:-1]
            if uri == before:
                break
        _scheme, _, rest = uri.partition(":")
        if not rest:
            continue
        mention = Mention(m.group("server"), uri)
        if mention not in out:
            out.append(mention)
    return out


@dataclass(frozen=True, slots=True)
class ResourceLimits:
    """How much resource text a task may carry: ``resource_max_chars`` per
    resource, ``mentions_max_chars`` over all the mentions of one task."""

    resource_max_chars: int = DEFAULT_RESOURCE_MAX_CHARS
    mentions_max_chars: int = DEFAULT_MENTIONS_MAX_CHARS


def limits_from_options(options: Any) -> tuple[ResourceLimits, list[str]]:
    """The limits from ``plugin_options={"mcp": {...}}``, and problems with
    values that are not positive whole numbers (those keep their default)."""
    plugin_options = (getattr(options, "get", None) or (lambda *_: None))("plugin_options") or {}
    mine = plugin_options.get("mcp") if isinstance(plugin_options, dict) else None
    problems: list[str] = []
    values: dict[str, int] = {}
    if mine is None:
        return ResourceLimits(), problems
    if not isinstance(mine, dict):
        return ResourceLimits(), [f"plugin_options['mcp'] must be a mapping, got {type(mine).__name__}; "
                                  f"the default resource limits apply"]
    known = {"resource_max_chars", "mentions_max_chars"}
    for key, value in mine.items():
        if key not in known:
            problems.append(f"plugin_options['mcp'] has no option {key!r} (known: {', '.join(sorted(known))})")
        elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            problems.append(f"plugin_options['mcp'][{key!r}] must be a positive whole number of characters, "
                            f"got {value!r}; the default {getattr(ResourceLimits(), key)} applies")
        else:
            values[key] = value
    return ResourceLimits(**values), problems


# ---------------------------------------------------------------- contents → blocks


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} kB"
    return f"{n / 1048576:.1f} MB"


def _cut(text: str, limit: int | None, uri: str) -> tuple[str, bool]:
    if limit is None or len(text) <= limit:
        return text, False
    return (text[:limit] + f"\n[… cut: {uri} has {len(text)} characters; the first {limit} are shown]"), True


def blob_blocks(blob: str | None, *, uri: str, mime: str | None, max_chars: int | None = None) -> list[dict[str, Any]]:
    """A base64 ``blob`` for a model: an image block for PNG/JPEG/GIF/WebP
    bytes (checked by their signature, not by what the server claims), text
    for bytes that are UTF-8 text of a textual (or unstated) type, else a
    one-line description — binary bytes are never dumped."""
    from smoke_core.plugin import Image

    try:
        data = base64.b64decode(blob or "", validate=True)
    except (binascii.Error, ValueError):
        return [{"type": "text", "text": f"[resource {uri} ({mime or 'unknown type'}): the server sent a blob "
                                         f"that is not valid base64; not shown]"}]
    try:
        image = Image.from_bytes(data, source=f"the resource {uri}")
    except ValueError as exc:
        image = None
        if (mime or "").startswith("image/") and "not a PNG" not in str(exc):
            return [{"type": "text", "text": f"[image resource {uri} ({mime}), {_size(len(data))}: not shown: {exc}]"}]
    if image is not None:
        return [{"type": "text", "text": f"[image resource {uri} ({image.mime_type}), {_size(len(data))}]"},
                image.to_block()]
    if mime is None or _TEXT_MIME.match(mime):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and "\x00" not in text:
            shown, cut = _cut(text, max_chars, uri)
            block: dict[str, Any] = {"type": "text", "text": f"[resource {uri} ({mime or 'unknown type'}), "
                                                              f"{len(text)} characters]\n{shown}"}
            if cut:
                block["cut"] = True  # for resource_blocks; removed there
            return [block]
    return [{"type": "text", "text": f"[binary resource {uri} ({mime or 'unknown type'}), {len(data)} bytes: "
                                     f"not shown (binary content is not given to the model)]"}]


def resource_blocks(contents: list[Any], *, server: str,
                    max_chars: int | None = None) -> tuple[list[dict[str, Any]], bool]:
    """The contents of a ``resources/read`` result as content blocks, each
    part headed by its URI and type, and whether some text was cut: text
    over ``max_chars`` (over all the parts) is cut, and says so."""
    out: list[dict[str, Any]] = []
    cut_any = False
    left = max_chars
    for item in contents or []:
        uri = str(_field(item, "uri") or "")
        mime = _field(item, "mime_type", "mimeType")
        text = _field(item, "text")
        if text is not None:
            shown, cut = _cut(str(text), left, uri)
            head = f"[resource {uri} from MCP server {server!r}" + (f", {mime}" if mime else "") + f", {len(text)} characters]"
            out.append({"type": "text", "text": f"{head}\n{shown}"})
        else:
            blocks = blob_blocks(_field(item, "blob"), uri=uri, mime=mime, max_chars=left)
            cut = any(b.get("cut") for b in blocks)
            out.extend({k: v for k, v in b.items() if k != "cut"} for b in blocks)
        cut_any = cut_any or cut
        if left is not None:  # the limit holds over all the parts of one resource
            left = max(0, left - text_chars(out[-1:]))
    if not out:
        out.append({"type": "text", "text": f"[MCP server {server!r} returned no contents for this resource]"})
    return out, cut_any


def text_chars(blocks: list[dict[str, Any]]) -> int:
    return sum(len(b.get("text", "")) for b in blocks if b.get("type") == "text")


# ---------------------------------------------------------------- templates


def template_variables(uri_template: str) -> list[str]:
    """The variable names of an RFC 6570 URI template (``[]`` if it does not parse)."""
    from mcp.shared.uri_template import UriTemplate

    try:
        return list(UriTemplate.parse(uri_template).variable_names)
    except ValueError:
        return []


def expand_template(uri_template: str, arguments: Any) -> str:
    """Fill an RFC 6570 URI template (values percent-encoded by the SDK's
    :class:`~mcp.shared.uri_template.UriTemplate`). Raises ``ValueError``
    naming the missing, unknown or non-text arguments."""
    from mcp.shared.uri_template import UriTemplate

    try:
        template = UriTemplate.parse(uri_template)
    except ValueError as exc:
        raise ValueError(f"{uri_template!r} is not a valid URI template: {exc}") from None
    names = list(template.variable_names)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ValueError(f"arguments must be an object mapping {', '.join(names) or 'template variables'} to text")
    unknown = sorted(set(arguments) - set(names))
    if unknown:
        raise ValueError(f"the template {uri_template} has no argument{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(unknown)}; its arguments: {', '.join(names) or 'none'}")
    optional = set(template.query_variable_names)
    missing = [n for n in names if n not in arguments and n not in optional]
    if missing:
        raise ValueError(f"the template {uri_template} needs {', '.join(missing)} in arguments")
    values: dict[str, Any] = {}
    for key, value in arguments.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"argument {key!r} must be text (or a number), got {type(value).__name__}")
        values[key] = str(value)
    return str(template.expand(values))


# ---------------------------------------------------------------- listing for the model


def _short(value: Any) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= MAX_DESCRIPTION_CHARS else text[: MAX_DESCRIPTION_CHARS - 1] + "…"


def resource_row(resource: Any) -> dict[str, Any]:
    return {
        "uri": str(_field(resource, "uri") or ""),
        "name": _field(resource, "name"),
        "title": _field(resource, "title"),
        "mime_type": _field(resource, "mime_type", "mimeType"),
        "size": _field(resource, "size"),
        "description": _short(_field(resource, "description")),
    }


def template_row(template: Any) -> dict[str, Any]:
    uri_template = str(_field(template, "uri_template", "uriTemplate") or "")
    return {
        "uri_template": uri_template,
        "arguments": template_variables(uri_template),
        "name": _field(template, "name"),
        "title": _field(template, "title"),
        "mime_type": _field(template, "mime_type", "mimeType"),
        "description": _short(_field(template, "description")),
    }


def _listing_line(head: str, row: dict[str, Any], extra: str = "") -> str:
    """``- uri — title (mime)extra: description``, each part only when known."""
    line = f"- {head}"
    label = row["title"] or row["name"]
    if label:
        line += f" — {label}"
    if row["mime_type"]:
        line += f" ({row['mime_type']})"
    line += extra
    if row["description"]:
        line += f": {row['description']}"
    return line


def listing_text(server: str, resources: list[dict[str, Any]], templates: list[dict[str, Any]]) -> str:
    """One server's resources and templates, as the model reads them."""
    lines = [f"MCP server {server!r}: {len(resources)} resource{'s' if len(resources) != 1 else ''}, "
             f"{len(templates)} template{'s' if len(templates) != 1 else ''}"]
    lines += [_listing_line(r["uri"], r) for r in resources[:MAX_LISTED]]
    if len(resources) > MAX_LISTED:
        lines.append(f"- … {len(resources) - MAX_LISTED} more not listed")
    if templates:
        lines.append("templates (read with template + arguments):")
        lines += [_listing_line(t["uri_template"], t, f"; arguments: {', '.join(t['arguments']) or 'none'}")
                  for t in templates[:MAX_LISTED]]
        if len(templates) > MAX_LISTED:
            lines.append(f"- … {len(templates) - MAX_LISTED} more not listed")
    return "\n".join(lines)
