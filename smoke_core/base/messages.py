"""Provider-neutral conversation history.

Messages are plain JSON-ready dicts so they can be stored, sent and compared
cheaply::

    {"role": "user", "content": [{"type": "text", "text": "..."}]}
    {"role": "assistant", "content": [
        {"type": "thinking", "text": "...", "signature": "..."},   # optional
        {"type": "text", "text": "..."},
        {"type": "tool_call", "id": "call_1", "name": "grep", "input": {...}},
    ]}
    {"role": "tool", "content": [
        {"type": "tool_result", "tool_call_id": "call_1", "is_error": False,
         "content": [{"type": "text", "text": "..."},
                     {"type": "image", "data": "<base64>", "mime_type": "image/png"}]},
    ]}

The system prompt is not part of the history; it travels as
``ModelRequest.system``. Adapters map these shapes to their wire format in
both directions.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ImageBlock(TypedDict):
    type: Literal["image"]
    data: str
    mime_type: str


class ThinkingBlock(TypedDict):
    type: Literal["thinking"]
    text: str
    signature: NotRequired[str]


class ToolCallBlock(TypedDict):
    type: Literal["tool_call"]
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_call_id: str
    content: list[dict[str, Any]]
    is_error: bool


class Message(TypedDict):
    role: Literal["user", "assistant", "tool"]
    content: list[dict[str, Any]]


def user_message(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}]}
