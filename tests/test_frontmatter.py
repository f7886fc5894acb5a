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


def test_set_fields_keeps_unknown_keys_order_and_bytes() -> None:
    text = (
        "---\n"
        "id: abc   # a comment that must survive\n"
        "title: Old\n"
        "custom:\n"
        "  nested: [1, 2]\n"
        "aliases:\n"
        "  - one\n"
        "  - two\n"
        "zeta: 'quoted'\n"
        "---\n"
        "Body stays.\n"
    )
    out = frontmatter.set_fields(text, {"title": "New: with colon", "aliases": ["three"], "updatedAt": "2026-11-30"})
    assert out == (
        "---\n"
        "id: abc   # a comment that must survive\n"
        "title: 'New: with colon'\n"
        "custom:\n"
        "  nested: [1, 2]\n"
        "aliases:\n"
        "- three\n"
        "zeta: 'quoted'\n"
        "updatedAt: '2026-11-30'\n"
        "---\n"
        "Body stays.\n"
    )
    assert frontmatter.parse(out).data["title"] == "New: with colon"


def test_set_fields_on_page_without_frontmatter() -> None:
    assert frontmatter.set_fields("Hello\n", {"title": "T"}) == "---\ntitle: T\n---\nHello\n"
