"""Turning an MCP ``CallToolResult`` into a Smoke ``ToolResult``."""

from __future__ import annotations

import json
from typing import Any


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def content_blocks(items: list[Any]) -> list[dict[str, Any]]:
    """MCP content → Smoke blocks: text stays text, images stay images,
    embedded text resources become text, embedded blobs as
    :func:`~smoke_mcp._resources.blob_blocks` says (image, text, or a note),
    everything else a short text note."""
    out: list[dict[str, Any]] = []
    for item in items or []:
        kind = _field(item, "type")
        if kind == "text":
            out.append({"type": "text", "text": _field(item, "text") or ""})
        elif kind == "image":
            out.append({"type": "image", "data": _field(item, "data"), "mime_type": _field(item, "mime_type", "mimeType")})
        elif kind == "audio":
            data = _field(item, "data") or ""
            mime = _field(item, "mime_type", "mimeType")
            out.append({"type": "text", "text": f"[audio {mime}, {len(data) * 3 // 4} bytes, not shown]"})
        elif kind == "resource":
            res = _field(item, "resource")
            uri = str(_field(res, "uri") or "")
            mime = _field(res, "mime_type", "mimeType")
            text = _field(res, "text")
            blob = _field(res, "blob")
            if text is not None:
                out.append({"type": "text", "text": f"[resource {uri}]\n{text}"})
            else:
                from ._resources import blob_blocks

                out.extend(blob_blocks(blob, uri=uri, mime=mime if isinstance(mime, str) else None))
        elif kind == "resource_link":
            uri = str(_field(item, "uri") or "")
            name = _field(item, "name") or ""
            desc = _field(item, "description")
            line = f"[resource link {name}: {uri}]"
            if desc:
                line += f" {desc}"
            out.append({"type": "text", "text": line})
        else:
            out.append({"type": "text", "text": f"[unsupported MCP content type {kind!r}]"})
    return out


def to_tool_result(result: Any, *, server: str, tool: str) -> Any:
    """``CallToolResult`` → :class:`ToolResult`. Structured content becomes JSON
    text when there is no text content, and is kept in ``data["structured_content"]``."""
    from smoke_core.plugin import ToolResult

    blocks = content_blocks(_field(result, "content") or [])
    structured = _field(result, "structured_content", "structuredContent")
    if structured is not None and not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": json.dumps(structured, ensure_ascii=False, indent=2, default=str)})
    is_error = bool(_field(result, "is_error", "isError"))
    if not blocks:
        blocks = [{"type": "text", "text": f"{tool} on MCP server {server!r} reported an error without a message"
                   if is_error else "(no output)"}]
    data: dict[str, Any] = {"mcp_server": server, "mcp_tool": tool}
    if structured is not None:
        data["structured_content"] = structured
    return ToolResult(content=blocks, is_error=is_error, data=data)
