"""Docs cannot drift: every hook, error code and event type is documented,
and every hook is exercised by a test (datasette's rule)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smoke_core.base.events import EVENT_FIELDS
from smoke_core.cli import docgen as _docgen
from smoke_core.plugin import ERROR_CODES, EVENT_TYPES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_hook_reference_is_generated_from_hookspecs():
    assert (DOCS / "hooks.md").read_text(encoding="utf-8") == _docgen.render(), (
        "docs/hooks.md is stale: run `python -m smoke_core.cli.docgen`"
    )


def test_every_hook_is_documented_with_an_example():
    text = (DOCS / "hooks.md").read_text(encoding="utf-8")
    for name in _docgen.hook_names():
        section = text.split(f"## `{name}`", 1)
        assert len(section) == 2, f"hook {name} missing from docs/hooks.md"
        body = section[1].split("\n## ", 1)[0]
        for needle in (":return:", ":raises:", "```python\n@hookimpl"):
            assert needle in body, f"hook {name}: docs lack {needle!r}"


def test_every_hook_has_a_test():
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("test_*.py"))
    for name in _docgen.hook_names():
        assert re.search(rf"def {name}\(|\"{name}\"", tests), f"no test implements hook {name}"


def test_every_error_code_is_documented():
    text = (DOCS / "errors.md").read_text(encoding="utf-8")
    missing = [c for c in ERROR_CODES if f"`{c}`" not in text]
    assert not missing, f"error codes missing from docs/errors.md: {missing}"


def test_every_event_type_and_field_is_documented():
    text = (DOCS / "events.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z_.]+)` \| ([^|]*) \|", text, re.M)}
    for event_type in EVENT_TYPES:
        assert event_type in rows, f"event {event_type} missing from docs/events.md"
        for field in EVENT_FIELDS[event_type]:
            assert f"`{field}`" in rows[event_type], f"event {event_type}: field {field} not documented"


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    match = re.search(r"```bash\n(.*?)\n```", readme.split("## Quickstart", 1)[-1], re.S)
    assert match, "README has no Quickstart code block"
    commands = [line for line in match.group(1).splitlines() if line and not line.startswith("#")]
    test_command = commands[-1]
    assert test_command in ci, f"README test command {test_command!r} is not what .ci/run calls"


@pytest.mark.integration
def test_every_first_party_tool_is_documented():
    import importlib.util

    missing = [m for m in _docgen.FIRST_PARTY_TOOL_PLUGINS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs every first-party tool plugin installed (missing: {', '.join(missing)})")
    assert (DOCS / "tools.md").read_text(encoding="utf-8") == _docgen.render_tools(), (
        "docs/tools.md is stale: run `python -m smoke_core.cli.docgen tools`"
    )


def test_security_page_lists_the_limits_and_links_every_component_page():
    text = (DOCS / "security.md").read_text(encoding="utf-8")
    for needle in ("## Limits and their defaults", "1,000 characters", "256 alternatives", "50 MB", "1 MiB",
                   "8 MiB", "terminal_log_limit", "repeated_tool_error"):
        assert needle in text, f"docs/security.md lacks {needle!r}"
    for page in ("sandbox.md", "security-git-mcp.md", "mcp.md", "security-webui.md", "security-limits.md"):
        assert f"]({page}" in text, f"docs/security.md does not link {page}"
        assert (DOCS / page).exists(), page


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    return []


def test_every_page_is_in_the_site_navigation():
    """`mkdocs build --strict` (nox -s docs) fails on a page left out of nav;
    this catches it in the ordinary test run, before the docs session."""
    import yaml  # a dependency of smoke-core

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = set(_nav_pages(config["nav"]))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert not pages - nav, f"pages missing from nav in mkdocs.yml: {sorted(pages - nav)}"
    assert not nav - pages, f"mkdocs.yml nav names pages that do not exist: {sorted(nav - pages)}"


def _mkdocs_hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "mkdocs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sphinx_roles_in_docstrings_read_as_code_on_the_site():
    """The API reference renders docstrings written with Sphinx roles; the site's
    hook shows them as Sphinx would (not `:class:` typed out), linked where
    the site documents the object."""
    hooks = _mkdocs_hooks()
    html = ("<p>Raises :class:<code>~smoke_core.settings.SettingsError</code>; see :meth:<code>run</code>, "
            ":func:<code>create_agent()</code> and :class:<code>Agent</code> in :mod:<code>smoke_core</code>.</p>")
    out = hooks.rewrite_roles(html)
    assert out == (
        '<p>Raises <autoref identifier="smoke_core.settings.SettingsError" optional><code>SettingsError</code>'
        '</autoref>; see <autoref identifier="run" optional><code>run()</code></autoref>, '
        '<autoref identifier="create_agent" optional><code>create_agent()</code></autoref> and '
        '<autoref identifier="Agent" optional><code>Agent</code></autoref> in '
        '<autoref identifier="smoke_core" optional><code>smoke_core</code></autoref>.</p>'
    )
    assert hooks.rewrite_roles("<p>no roles: a:<code>b</code></p>") == "<p>no roles: a:<code>b</code></p>"
    with pytest.raises(ValueError, match=r"Sphinx role the site would show as typed: ':envvar:<code>"):
        hooks.rewrite_roles("<p>set :envvar:<code>SMOKE_HOME</code></p>")


def test_the_site_hook_rewrites_roles_on_every_page():
    """MkDocs calls `on_page_content` with each page's HTML (mkdocs.yml `hooks:`)."""
    from types import SimpleNamespace

    hooks = _mkdocs_hooks()
    page = SimpleNamespace(file=SimpleNamespace(src_uri="reference/plugin.md"))
    out = hooks.on_page_content("<p>:class:<code>~smoke_core.Agent</code></p>", page, {}, None)
    assert out == '<p><autoref identifier="smoke_core.Agent" optional><code>Agent</code></autoref></p>'
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "hooks:\n  - mkdocs_hooks.py" in config
