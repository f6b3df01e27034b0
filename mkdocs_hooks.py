"""MkDocs hooks for Smoke's documentation site (``hooks:`` in mkdocs.yml).

The pages link to files beside docs/ — a plugin's README, the examples'
folders — which are not pages of the site. Such a link becomes a link to the
file in the repository, and only after checking that the file exists, so
strict mode still fails on every broken link; links between pages are
checked by MkDocs itself.

The API reference is rendered from docstrings written with Sphinx's
cross-reference roles (:class:`~smoke_core.Agent`, :meth:`run`); Markdown
would show them as typed. Each becomes code that reads as Sphinx shows it
(the last part of a ``~`` name, ``()`` after a function). A role that names
the full path of an object the site documents links to its entry
(mkdocs-autorefs resolves the reference); a short name (:meth:`run`) or an
object the site does not document stays plain code.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent
_LINK = re.compile(r"(\]\()([^)\s#]+)((?:#[^)\s]*)?\))")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
#: a Sphinx role as Markdown renders it: :class:`~a.B` -> :class:<code>~a.B</code>
_ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|mod|data|exc|obj|const):<code>(~?)([A-Za-z_][\w.]*)(\(\))?</code>")
_LEFT = re.compile(r":(?:py:)?[a-z]+:<code>")


def _role(match: re.Match[str]) -> str:
    role, tilde, name, parens = match.groups()
    shown = name.rsplit(".", 1)[-1] if tilde else name
    if parens or role in ("func", "meth"):
        shown += "()"
    return f'<autoref identifier="{name}" optional><code>{shown}</code></autoref>'


def rewrite_roles(html: str) -> str:
    """The page's Sphinx roles as code (linked by autorefs where it can);
    ValueError naming a role this does not know, rather than show it raw."""
    html = _ROLE.sub(_role, html)
    left = _LEFT.search(html)
    if left:
        raise ValueError(f"a Sphinx role the site would show as typed: {html[left.start():left.start() + 80]!r} "
                         "(mkdocs_hooks.py: _ROLE)")
    return html


def _fail(page: Any, message: str) -> NoReturn:
    from mkdocs.exceptions import PluginError  # here: the tests load this module without MkDocs

    raise PluginError(f"{page.file.src_uri}: {message}")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    try:
        return rewrite_roles(html)
    except ValueError as exc:
        _fail(page, str(exc))


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
            _fail(page, f"the link {target} points to nothing in the repository")
        if not resolved.is_relative_to(ROOT):
            _fail(page, f"the link {target} leaves the repository")
        kind = "tree" if resolved.is_dir() else "blob"
        return f"{match.group(1)}{repo}/{kind}/main/{resolved.relative_to(ROOT).as_posix()}{match.group(3)}"

    return _LINK.sub(rewrite, markdown)
