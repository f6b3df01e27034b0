"""MkDocs hooks for Smoke's documentation site (``hooks:`` in mkdocs.yml).

The pages link to files beside docs/ — a plugin's README, the examples'
folders — which are not pages of the site. Such a link becomes a link to the
file in the repository, and only after checking that the file exists, so
strict mode still fails on every broken link; links between pages are
checked by MkDocs itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent
_LINK = re.compile(r"(\]\()([^)\s#]+)((?:#[^)\s]*)?\))")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs = Path(config["docs_dir"]).resolve()
    repo = str(config["repo_url"]).rstrip("/")
    page_dir = (docs / page.file.src_uri).parent

    def rewrite(match: re.Match[str]) -> str:
        target = match.group(2)
        if _SCHEME.match(target) or target.startswith("/"):
            return match.group(0)
        resolved = (page_dir / target).resolve()
        if resolved.is_relative_to(docs) and not resolved.is_dir():
            return match.group(0)  # a page or a file of the site: MkDocs checks it
        if not resolved.exists():
            raise PluginError(f"{page.file.src_uri}: the link {target} points to nothing in the repository")
        if not resolved.is_relative_to(ROOT):
            raise PluginError(f"{page.file.src_uri}: the link {target} leaves the repository")
        kind = "tree" if resolved.is_dir() else "blob"
        return f"{match.group(1)}{repo}/{kind}/main/{resolved.relative_to(ROOT).as_posix()}{match.group(3)}"

    return _LINK.sub(rewrite, markdown)
