"""A fetched body as text for the model: HTML → Markdown (markdownify over
BeautifulSoup), PDF → text (pypdf), text types as they are.

markdownify rather than trafilatura: the pages a coding agent reads are
documentation, API references, issues and READMEs, whose code blocks, tables
and link lists *are* the content. markdownify converts the whole page
faithfully (we only drop what a reader never sees: scripts, styles, hidden
elements, and navigation when the page marks its ``<main>``), while
trafilatura's main-text heuristics are tuned for articles and drop exactly
those parts; it also brings lxml, courlan, htmldate and justext where
markdownify needs only BeautifulSoup.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from ._fetch import Fetched

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
TEXT_APPLICATION_TYPES = frozenset({
    "application/json", "application/xml", "application/javascript", "application/x-javascript",
    "application/ecmascript", "application/yaml", "application/x-yaml", "application/toml", "application/x-sh",
    "application/sql", "application/graphql", "application/ld+json", "application/rss+xml", "application/atom+xml",
    "application/x-ndjson", "application/jsonl", "application/x-tex",
})
#: elements a reader never sees, or that only hold page chrome and scripts
_INVISIBLE = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "link",
              "meta", "head", "form", "button", "input", "select", "textarea", "dialog")
_CHROME = ("nav", "header", "footer", "aside")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d])", re.I)
_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang|highlight|sourceCode)-([A-Za-z0-9_+#-]+)")


class NotText(Exception):
    """The body is not something web_fetch turns into text (an image, an archive...)."""


@dataclass(slots=True)
class Document:
    """A page as text."""

    text: str
    #: ``"html"`` (Markdown), ``"pdf"``, ``"text"``
    kind: str
    title: str | None = None
    pages: int | None = None


def kind_of(content_type: str, body: bytes) -> str | None:
    """``"html"``, ``"pdf"``, ``"text"`` or None (not text), from the declared type and, when the
    server gives none or a generic one, the first bytes."""
    if content_type in HTML_TYPES:
        return "html"
    if content_type in PDF_TYPES:
        return "pdf"
    if content_type.startswith("text/") or content_type in TEXT_APPLICATION_TYPES:
        return "text"
    if content_type.endswith(("+json", "+xml")):
        return "text"
    if content_type and content_type not in ("application/octet-stream", "binary/octet-stream", "unknown/unknown"):
        return None
    head = body[:1024].lstrip()
    if head.startswith(b"%PDF-"):
        return "pdf"
    lowered = head.lower()
    if lowered.startswith((b"<!doctype html", b"<html")) or b"<body" in lowered:
        return "html"
    if b"\x00" in body[:8192]:
        return None
    try:
        body[:8192].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 8188:  # not just a character cut at the sample's end
            return None
    return "text"


def convert(fetched: Fetched) -> Document:
    """The body as a :class:`Document`; :class:`NotText` for other bodies, saying what it is."""
    kind = kind_of(fetched.content_type, fetched.body)
    if kind is None:
        shown = fetched.content_type or "an unknown type"
        raise NotText(
            f"{fetched.final_url} is {shown} ({len(fetched.body):,} bytes), not a page: web_fetch reads HTML, "
            f"text (Markdown, JSON, XML, source code) and PDF"
        )
    if kind == "pdf":
        if fetched.cut:
            raise NotText(
                f"{fetched.final_url} is a PDF larger than the download cap of {len(fetched.body):,} bytes "
                f"(web_fetch_max_bytes); a cut PDF cannot be read"
            )
        return pdf_to_text(fetched.body)
    if kind == "html":
        return html_to_markdown(fetched.body, fetched.charset, fetched.final_url)
    return Document(text=decode_text(fetched.body, fetched.charset), kind="text")


def decode_text(body: bytes, charset: str | None) -> str:
    encoding = charset or "utf-8"
    try:
        return body.decode(encoding, errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


def _language(element: Any) -> str | None:
    for node in (element, element.find("code")):
        if node is None:
            continue
        classes = " ".join(node.get("class") or [])
        match = _LANGUAGE.search(classes)
        if match:
            return str(match.group(1))
    return None


def html_to_markdown(body: bytes, charset: str | None, base_url: str) -> Document:
    from bs4 import BeautifulSoup, Comment
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(body, "html.parser", from_encoding=charset)
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag is not None else None
    for tag in soup.find_all(_INVISIBLE):
        tag.decompose()
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    # text a browser does not show is a favourite hiding place for instructions to models
    for tag in soup.find_all(True):
        if tag.decomposed:
            continue
        attrs = tag.attrs or {}
        if ("hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true"
                or _HIDDEN_STYLE.search(str(attrs.get("style", "")))):
            tag.decompose()
    for img in soup.find_all("img"):
        alt = " ".join(str(img.get("alt") or "").split())
        img.replace_with(f"[image: {alt}]" if alt else "")
    for link in soup.find_all("a"):
        href = str(link.get("href") or "").strip()
        if not href or href.lower().startswith(("javascript:", "data:", "vbscript:")):
            link.attrs.pop("href", None)
        else:
            link["href"] = urljoin(base_url, href)
    root = soup.find("main") or soup.find(None, {"role": "main"}) or soup.find("article")
    if root is None:
        root = soup.find("body") or soup
        for tag in root.find_all(_CHROME):
            tag.decompose()
    converter = MarkdownConverter(heading_style="ATX", bullets="-", code_language_callback=_language,
                                  escape_underscores=False, escape_asterisks=False)
    text = converter.convert_soup(root)
    text = _BLANK_LINES.sub("\n\n", "\n".join(line.rstrip() for line in text.splitlines())).strip()
    if title and not text.startswith("# "):
        text = f"# {title}\n\n{text}" if text else f"# {title}"
    return Document(text=text, kind="html", title=title)


def pdf_to_text(body: bytes) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not reader.decrypt(""):
            raise NotText("the PDF is encrypted with a password; web_fetch cannot read it")
        parts: list[str] = []
        for number, page in enumerate(reader.pages, start=1):
            text = (page.extract_text() or "").strip()
            parts.append(f"## Page {number}\n\n{text}" if text else f"## Page {number}\n\n(no text on this page)")
        title = None
        if reader.metadata is not None and reader.metadata.title:
            title = str(reader.metadata.title)
    except NotText:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise NotText(f"the PDF cannot be read ({type(exc).__name__}: {exc})") from None
    text = "\n\n".join(parts)
    if title:
        text = f"# {title}\n\n{text}"
    return Document(text=text, kind="pdf", title=title, pages=len(parts))
