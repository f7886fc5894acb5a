from __future__ import annotations

from llmwiki_git.wiki import frontmatter


def test_parse_and_body_line() -> None:
    fm = frontmatter.parse("---\ntitle: A\naliases: [x, 42, y]\n---\nbody\n")
    assert fm.data["title"] == "A"
    assert frontmatter.string_list(fm.data["aliases"]) == ["x", "y"]
    assert fm.body_line == 4 and fm.error is None


def test_malformed_yaml_reports_line_not_raises() -> None:
    fm = frontmatter.parse("---\ntitle: ok\nbad: [unclosed\nmore: x\n---\nbody\n")
    assert fm.data == {}
    assert fm.error and "malformed YAML" in fm.error
    assert fm.error_line is not None and fm.error_line >= 3
    assert fm.body_line == 5


def test_non_mapping_and_no_closing_fence() -> None:
    assert frontmatter.parse("---\n- a\n- b\n---\n").error == "frontmatter is not a mapping of keys to values"
    fm = frontmatter.parse("---\ntitle: x\nno closing fence\n")
    assert fm.raw is None and fm.body_line == 0
