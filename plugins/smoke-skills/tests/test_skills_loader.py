"""Loading skills: every frontmatter variety, skipping bad files, precedence."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
import smoke_skills
from smoke_skills import (
    Skill,
    default_skill_dirs,
    discover_skills,
    load_skills_from_dirs,
    parse_skill_file,
)

FIXTURES = Path(__file__).parent / "fixtures" / "skills"


@pytest.fixture(scope="module")
def loaded() -> tuple[dict[str, Skill], list[str]]:
    warnings: list[str] = []
    skills = load_skills_from_dirs(FIXTURES, warnings=warnings)
    return {s.id: s for s in skills}, warnings


def write_skill(folder: Path, skill_id: str, description: str, body: str = "Body.") -> Path:
    path = folder / skill_id / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {skill_id}\ndescription: {description}\n---\n{body}\n", encoding="utf-8"
    )
    return path


def test_public_api_is_exactly_this() -> None:
    assert sorted(smoke_skills.__all__) == sorted(
        [
            "Skill",
            "SkillParseError",
            "default_skill_dirs",
            "discover_skills",
            "load_skills_from_dirs",
            "parse_skill_file",
        ]
    )


def test_every_good_fixture_loads_and_only_bad_ones_are_skipped(
    loaded: tuple[dict[str, Skill], list[str]],
) -> None:
    skills, warnings = loaded
    assert set(skills) == {
        "pdf_processing",
        "no-description",
        "flow-tools",
        "comma-tools",
        "tools-key",
        "user-only",
        "fix-issue",
        "string-hint",
        "quoted-description",
        "plain-multiline",
        "literal-block",
        "folded-block",
        "curated-skill",
        "flat-skill",
        "crlf-skill",
        "bom-skill",
        "release-notes",
    }
    # README.md next to the skills is documentation, not a skill, and is not warned about.
    assert len(warnings) == 2
    broken = next(w for w in warnings if "broken-yaml" in w)
    assert str(FIXTURES / "broken-yaml" / "SKILL.md") in broken
    assert "YAML frontmatter is broken at line 3" in broken
    missing = next(w for w in warnings if "no-frontmatter" in w)
    assert str(FIXTURES / "no-frontmatter" / "SKILL.md") in missing
    assert "no YAML frontmatter" in missing


def test_skipped_files_are_logged_on_smoke_skills(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="smoke.skills"):
        skills = load_skills_from_dirs([FIXTURES])
    assert len(skills) == 17
    messages = [r.getMessage() for r in caplog.records if r.name == "smoke.skills"]
    assert any("broken-yaml" in m for m in messages)
    assert any("no-frontmatter" in m for m in messages)


def test_missing_description_uses_first_body_paragraph(
    loaded: tuple[dict[str, Skill], list[str]],
) -> None:
    skill = loaded[0]["no-description"]
    assert (
        skill.description
        == "This skill has no description key, so the first paragraph of its body is used."
    )
    assert skill.body.startswith("# A heading is not the description")


def test_title_case_name_differs_from_id(loaded: tuple[dict[str, Skill], list[str]]) -> None:
    skills = loaded[0]
    pdf = skills["pdf_processing"]
    assert pdf.name == "PDF Processing Tools"
    assert pdf.id == "pdf_processing"  # the folder name, not the display name
    notes = skills["release-notes"]  # folder "Release Notes" -> slugified
    assert notes.name == "Release Notes Writer"
    assert notes.folder == FIXTURES / "Release Notes"


def test_license_version_and_nested_metadata_are_kept(
    loaded: tuple[dict[str, Skill], list[str]],
) -> None:
    pdf = loaded[0]["pdf_processing"]
    assert pdf.metadata["license"] == "Apache-2.0"
    assert pdf.metadata["version"] == "1.2.0"
    assert pdf.metadata["metadata"] == {
        "author": "example-org",
        "tags": ["pdf", "documents"],
        "compat": {"python": ">=3.10"},
    }
    assert "name" not in pdf.metadata and "description" not in pdf.metadata
    assert pdf.folder == FIXTURES / "pdf_processing"
    assert pdf.source_dir == FIXTURES
    assert pdf.supporting_files() == ["reference.md", "scripts/fill_form.py"]


@pytest.mark.parametrize(
    ("skill_id", "tools"),
    [
        ("pdf_processing", ["Read", "Bash(python:*)", "Write"]),  # block list
        ("flow-tools", ["Read", "Grep", "Bash(git status:*)"]),  # flow list
        ("comma-tools", ["Read", "Grep", "Bash(git add:*)"]),  # comma string
        ("tools-key", ["Read", "Write", "Edit"]),  # under the key `tools`
        ("string-hint", []),
    ],
)
def test_allowed_tools_forms(
    loaded: tuple[dict[str, Skill], list[str]], skill_id: str, tools: list[str]
) -> None:
    assert loaded[0][skill_id].allowed_tools == tools


def test_space_separated_allowed_tools_keep_parentheses_whole(tmp_path: Path) -> None:
    path = tmp_path / "spaced" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(
        "---\nname: spaced\ndescription: d\nallowed-tools: Bash(git add:*) Read  Grep\n---\nx\n"
    )
    assert parse_skill_file(path).allowed_tools == ["Bash(git add:*)", "Read", "Grep"]


def test_invocation_flags_and_argument_hint(loaded: tuple[dict[str, Skill], list[str]]) -> None:
    skills = loaded[0]
    assert skills["user-only"].disable_model_invocation is True
    assert skills["user-only"].model_invocable is False
    assert skills["user-only"].user_invocable is True
    assert skills["fix-issue"].user_invocable is False
    assert skills["fix-issue"].disable_model_invocation is False
    assert skills["fix-issue"].argument_hint == "[issue-number]"  # YAML flow list, shown as written
    assert skills["string-hint"].argument_hint == "<file> [--fast]"
    assert skills["pdf_processing"].argument_hint is None
    assert skills["pdf_processing"].user_invocable is True


@pytest.mark.parametrize(
    ("skill_id", "description"),
    [
        (
            "quoted-description",
            "Quoted: a description with a colon that continues on a second line.",
        ),
        ("plain-multiline", "A plain scalar description that goes on over three lines."),
        ("literal-block", "First line of a literal block.\nSecond line of a literal block."),
        ("folded-block", "Folded block description joined into one line."),
    ],
)
def test_multiline_descriptions(
    loaded: tuple[dict[str, Skill], list[str]], skill_id: str, description: str
) -> None:
    assert loaded[0][skill_id].description == description


def test_crlf_and_bom_files(loaded: tuple[dict[str, Skill], list[str]]) -> None:
    raw_crlf = (FIXTURES / "crlf-skill" / "SKILL.md").read_bytes()
    assert b"\r\n" in raw_crlf  # the fixture really has Windows line ends
    crlf = loaded[0]["crlf-skill"]
    assert crlf.description == "A skill saved with Windows line ends."
    assert crlf.body == "Line one.\nLine two."
    assert crlf.metadata == {"version": 2}
    assert (FIXTURES / "bom-skill" / "SKILL.md").read_bytes().startswith(b"\xef\xbb\xbf")
    bom = loaded[0]["bom-skill"]
    assert bom.name == "bom-skill"
    assert bom.body == "BOM body with ünïcödé."


def test_dot_folder_and_flat_file_skills(loaded: tuple[dict[str, Skill], list[str]]) -> None:
    skills = loaded[0]
    curated = skills["curated-skill"]
    assert curated.path == FIXTURES / ".curated" / "curated-skill" / "SKILL.md"
    assert curated.source_dir == FIXTURES
    flat = skills["flat-skill"]
    assert flat.name == "Flat Skill"
    assert flat.path == FIXTURES / "flat-skill.md"
    assert flat.folder is None
    assert flat.supporting_files() == []
    assert flat.body == "Flat body."


def test_a_folder_holding_skill_md_is_itself_one_skill() -> None:
    skills = load_skills_from_dirs(FIXTURES / "pdf_processing")
    assert [s.id for s in skills] == ["pdf_processing"]  # reference.md is not a skill


def test_unclosed_frontmatter_and_non_mapping_are_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "unclosed").mkdir()
    (tmp_path / "unclosed" / "SKILL.md").write_text("---\nname: unclosed\ndescription: d\n")
    (tmp_path / "a-list").mkdir()
    (tmp_path / "a-list" / "SKILL.md").write_text("---\n- just\n- a list\n---\nbody\n")
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / "SKILL.md").write_bytes(b"---\nname: x\n---\n\xff\xfe\x00")
    write_skill(tmp_path, "fine", "still loads")
    warnings: list[str] = []
    skills = load_skills_from_dirs([tmp_path], warnings=warnings)
    assert [s.id for s in skills] == ["fine"]
    assert len(warnings) == 3
    assert any("unclosed" in w and "never closed" in w for w in warnings)
    assert any("a-list" in w and "mapping" in w for w in warnings)
    assert any("binary" in w and "UTF-8" in w for w in warnings)


def test_first_found_wins_across_dirs_and_missing_dirs_are_fine(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write_skill(first, "shared", "from first")
    write_skill(second, "shared", "from second")
    write_skill(second, "only-second", "second only")
    skills = load_skills_from_dirs([tmp_path / "missing", first, second])
    by_id = {s.id: s for s in skills}
    assert by_id["shared"].description == "from first"
    assert by_id["shared"].source_dir == first
    assert by_id["only-second"].source_dir == second


def test_default_precedence_workspace_before_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    monkeypatch.setenv("HOME", str(home))
    write_skill(ws / ".claude" / "skills", "everywhere", "workspace .claude")
    write_skill(ws / ".smoke" / "skills", "everywhere", "workspace .smoke")
    write_skill(home / ".smoke" / "skills", "everywhere", "home .smoke")
    write_skill(ws / ".agents" / "skills", "ws-vs-home", "workspace .agents")
    write_skill(home / ".smoke" / "skills", "ws-vs-home", "home .smoke")
    write_skill(ws / ".codex" / "skills", "codex-vs-opencode", "workspace .codex")
    write_skill(ws / ".opencode" / "skills", "codex-vs-opencode", "workspace .opencode")
    write_skill(home / ".agents" / "skills", "home-agents", "home .agents")
    write_skill(home / ".config" / "opencode" / "skills", "home-agents", "home opencode config")
    write_skill(home / ".config" / "opencode" / "skills", "opencode-only", "home opencode config")

    assert default_skill_dirs(ws) == [
        ws / ".smoke/skills",
        ws / ".claude/skills",
        ws / ".codex/skills",
        ws / ".opencode/skills",
        ws / ".agents/skills",
        home / ".smoke/skills",
        home / ".claude/skills",
        home / ".codex/skills",
        home / ".opencode/skills",
        home / ".agents/skills",
        home / ".config/opencode/skills",
    ]
    by_id = {s.id: s for s in discover_skills(workspace=ws)}
    assert by_id["everywhere"].description == "workspace .smoke"
    assert by_id["ws-vs-home"].description == "workspace .agents"
    assert by_id["codex-vs-opencode"].description == "workspace .codex"
    assert by_id["home-agents"].description == "home .agents"
    assert by_id["opencode-only"].source_dir == home / ".config" / "opencode" / "skills"


def test_skills_dir_replaces_defaults_and_given_skills_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    monkeypatch.setenv("HOME", str(home))
    write_skill(ws / ".smoke" / "skills", "default-one", "from defaults")
    write_skill(ws / "my-skills", "mine", "from skills_dir")
    write_skill(tmp_path / "abs", "other", "absolute")
    warnings: list[str] = []
    found = discover_skills(
        workspace=ws, skills_dir=["my-skills", tmp_path / "abs", "nope"], warnings=warnings
    )
    assert [s.id for s in found] == [
        "mine",
        "other",
    ]  # relative paths from the workspace; defaults not searched
    assert len(warnings) == 1 and "nope" in warnings[0]

    given = Skill(
        id="mine",
        name="Mine",
        description="given",
        body="Given body.",
        path=tmp_path / "x.md",
        folder=None,
    )
    only_given = discover_skills(workspace=ws, skills=[given])
    assert only_given == [given]  # skills= without skills_dir: no folder search
    both = discover_skills(workspace=ws, skills=[given], skills_dir="my-skills")
    assert [s.description for s in both] == ["given"]
    with pytest.raises(TypeError, match=r"skills= takes smoke_skills\.Skill"):
        discover_skills(workspace=ws, skills=["mine"])  # type: ignore[list-item]


def test_copied_fixture_tree_loads_the_same(tmp_path: Path) -> None:
    # Loading must not depend on where the folder is (no cwd-relative paths).
    copy = tmp_path / "copy"
    shutil.copytree(FIXTURES, copy)
    ids = {s.id for s in load_skills_from_dirs(copy)}
    assert ids == {s.id for s in load_skills_from_dirs(FIXTURES)}
    assert len(ids) == 17
