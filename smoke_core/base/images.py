"""Images in a task: ``agent.run(["What is wrong here?", Image.from_path("shot.png")])``.

An image becomes a content block of the user message — ``{"type": "image",
"data": <base64>, "mime_type": ...}`` or ``{"type": "image", "url": ...}`` —
which each provider adapter sends in the wire format its API documents.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The formats both the OpenAI and the Anthropic APIs take.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: The largest image sent (Anthropic's limit for one image is 5 MB).
MAX_IMAGE_BYTES = 5 * 1024 * 1024


def sniff_image_type(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes (by their signature), else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True, slots=True)
class Image:
    """An image for a model: base64 ``data`` with its ``mime_type``, or a ``url``."""

    mime_type: str | None = None
    data: str | None = None
    url: str | None = None

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str | None = None, *, source: str = "the image") -> Image:
        """Raises ``ValueError`` (saying what to do) for bytes that are not a PNG,
        JPEG, GIF or WebP image, or that are over :data:`MAX_IMAGE_BYTES`."""
        kind = sniff_image_type(data)
        if kind is None:
            raise ValueError(f"{source} is not a PNG, JPEG, GIF or WebP image; convert it to one of those")
        if mime_type is not None and mime_type != kind:
            raise ValueError(f"{source} is a {kind} image, not {mime_type}")
        if len(data) > MAX_IMAGE_BYTES:
            raise ValueError(
                f"{source} is {len(data) / 1048576:.1f} MB; the limit is {MAX_IMAGE_BYTES // 1048576} MB. "
                f"Scale it down or crop it first"
            )
        return cls(mime_type=kind, data=base64.b64encode(data).decode("ascii"))

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Image:
        p = Path(path)
        try:
            size = p.stat().st_size
            if size > MAX_IMAGE_BYTES:
                raise ValueError(
                    f"{p} is {size / 1048576:.1f} MB; the limit is {MAX_IMAGE_BYTES // 1048576} MB. "
                    f"Scale it down or crop it first"
                )
            data = p.read_bytes()
        except FileNotFoundError:
            raise ValueError(f"no image at {p}") from None
        except IsADirectoryError:
            raise ValueError(f"{p} is a folder, not an image") from None
        except OSError as exc:
            raise ValueError(f"{p} could not be read: {exc.strerror or exc}") from None
        return cls.from_bytes(data, source=str(p))

    @classmethod
    def from_url(cls, url: str) -> Image:
        """An image the provider fetches itself (``https://``), or a ``data:`` URL."""
        if url.startswith("data:"):
            head, _, payload = url.partition(",")
            if ";base64" not in head:
                raise ValueError("a data: URL image must be base64-encoded (data:image/png;base64,...)")
            try:
                raw = base64.b64decode(payload, validate=True)
            except ValueError:
                raise ValueError("the data: URL does not hold valid base64") from None
            return cls.from_bytes(raw, source="the data: URL")
        if not url.startswith(("https://", "http://")):
            raise ValueError(f"an image URL must start with https:// (got {url[:40]!r})")
        return cls(url=url)

    def to_block(self) -> dict[str, Any]:
        if self.url is not None:
            return {"type": "image", "url": self.url}
        return {"type": "image", "data": self.data, "mime_type": self.mime_type}


TaskPart = str | Image


def task_content(task: str | Sequence[TaskPart]) -> tuple[list[dict[str, Any]], str]:
    """``(content blocks, text)`` of a task given as text or as a list of text
    and images. Raises ``ValueError`` for an empty task or a part of the wrong kind."""
    if isinstance(task, str):
        if not task.strip():
            raise ValueError("task must be a non-empty string")
        return [{"type": "text", "text": task}], task
    if not isinstance(task, Sequence) or isinstance(task, (bytes, bytearray)):
        raise ValueError(f"task must be text or a list of text and Image parts, got {type(task).__name__}")
    blocks: list[dict[str, Any]] = []
    texts: list[str] = []
    for part in task:
        if isinstance(part, str):
            if part.strip():
                blocks.append({"type": "text", "text": part})
                texts.append(part)
        elif isinstance(part, Image):
            blocks.append(part.to_block())
        else:
            raise ValueError(
                f"a task part must be text or smoke_core.Image (Image.from_path / from_bytes / from_url), "
                f"got {type(part).__name__}"
            )
    if not texts:
        raise ValueError("task needs some text besides the images: say what to do with them")
    return blocks, "\n".join(texts)
