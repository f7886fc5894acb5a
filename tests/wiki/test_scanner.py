from __future__ import annotations

import re

from llmwiki_git.wiki.scanner import scan_anchors, scan_links


def targets(text: str) -> list[str]:
    return [o.target for o in scan_links(text)]


def test_forms_of_links_with_positions() -> None:
    text = "# T\nsee [[Alpha]], [[beta|Beta!]], [[gamma#Intro]], [[delta#^blk]] and ![[pic.png]]\n"
    found = scan_links(text)
    assert [(o.line, o.col, o.target, o.label, o.embed) for o in found] == [
        (2, 5, "Alpha", None, False),
        (2, 16, "beta", "Beta!", False),
        (2, 32, "gamma#Intro", None, False),
        (2, 49, "delta#^blk", None, False),
        (2, 68, "pic.png", None, True),
    ]


def test_table_escaped_pipe() -> None:
    found = scan_links("| a | [[target\\|label]] |\n")
    assert [(o.target, o.label) for o in found] == [("target", "label")]


def test_code_is_not_links() -> None:
    text = (
        "inline `[[no1]]` and ``x [[no2]] ` y`` ok [[yes1]]\n"
        "```md\n[[no3]]\n```\n"
        "~~~~\n[[no4]]\n```\n[[no5]]\n~~~~\n"
        "> ```\n> [[no6]]\n> ```\n"
        "\n    [[no7]] indented code\n\n"
        "[[yes2]]\n"
    )
    assert targets(text) == ["yes1", "yes2"]


def test_list_continuation_indent_is_not_code() -> None:
    text = "- item\n\n    continued [[yes]]\n"
    assert targets(text) == ["yes"]


def test_escapes_comments_and_link_text() -> None:
    text = (
        "\\[[no1]] but \\\\[[yes1]]\n"
        "<!-- [[no2]] --> [[yes2]]\n"
        "<!-- spans\n[[no3]]\nlines --> [[yes3]]\n"
        "[see [[no4]]](http://x) and [[yes4]](http://y)\n"
        "![alt [[yes5]]](img.png)\n"
    )
    assert targets(text) == ["yes1", "yes2", "yes3", "yes5"]


def test_frontmatter_skipped_by_start_line_and_line_numbers_kept() -> None:
    text = "---\nrelated: '[[no]]'\n---\nbody [[yes]]\n"
    found = scan_links(text, 3)
    assert [(o.target, o.line) for o in found] == [("yes", 4)]


def test_brackets_and_empty() -> None:
    assert targets("[[[alpha]]] [[]] [[a [[b]] c]] [[line\nbreak]]") == ["alpha", "", "b"]


def test_crlf_and_lone_cr_line_numbers() -> None:
    found = scan_links("a\r\nb\rc [[x]]\u2028[[y]]")
    assert [(o.target, o.line) for o in found] == [("x", 3), ("y", 3)]


def test_anchors_atx_setext_blocks_not_in_code() -> None:
    text = "# Main Title #\n\nSub Title\n---------\n\n```\n# Not A Heading\n```\npara ^blk-1\n"
    anchors = scan_anchors(text)
    assert anchors.headings == {"main-title", "sub-title"}
    assert anchors.blocks == {"blk-1"}


# -- the scanner's link rules against their earlier forms -----------------------------------
# The wikilink and markdown-link patterns were rewritten to start with a literal "[" (speed);
# these are the forms before, kept here as the reference they must agree with.

_OLD_WIKILINK = re.compile(r"(!?)\[\[([^\[\n]*?)\]\]")
_OLD_MD_LINK = re.compile(
    r"(?<!!)\[(?:[^\[\]]|\[(?:[^\[\]]|\[[^\[\]]*\])*\])*\]"
    r"\([^()\s]*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
)

_TRICKY_LINES = [
    "plain text with [[alpha]] and [[beta|Beta]] and ![[pic.png]]",
    "# Heading [[in heading]]",
    "!![[double]]",
    "[[a]]![[b]]",
    "![[a]]![[b]]!",
    "[[[a]]]",
    "![[[a]]",
    "[[a!]][[b]]",
    "!",
    "![",
    "![[",
    "![[]]",
    "[[]]",
    "[[ ]]",
    "> quote ![[q1]]",
    "inline `[[no]]` code [[yes]]",
    "escaped \\[[no]] \\![[yes2]] !\\[[x]]",
    "a [label [[inner]]](http://x) b [[out]]",
    "![img [[i]]](u.png) [[after]]",
    "[x](y) [[z]]",
    "[[a]](u)",
    '[see [[x]]](u "t") [[y]]',
    "[a [b [c]]](u)",
    "!![a](b)",
    "[[a|b|c]]",
    "[[x\\|y]]",
    "table | [[t1\\|L]] |",
    "caf\u00e9 ![[\u00e9t\u00e9]] \U0001f600 [[emoji]]",
    "x" * 500 + " ![[long]]",
    "[[unterminated",
    "text ]] [[",
    "<!-- [[c]] --> ![[d]]",
    "```",
    "~~~",
    "    code ![[code]]",
    "---",
    "===",
    "",
]


def _pages() -> list[str]:
    import random

    rng = random.Random(11)
    pages = ["\n".join(_TRICKY_LINES), "# T\r\n![[crlf]]\r\n", "a\rb ![[cr]]\n", "![[a]]\n" * 50]
    for _ in range(2000):
        pages.append("\n".join(rng.choice(_TRICKY_LINES) for _ in range(rng.randint(1, 10))))
    return pages


def _old_links(line: str) -> list[tuple[int, str, bool]]:
    """(1-based column, inner text, embed) of one line's links as the earlier forms found
    them (after the unchanged escape masking)."""
    from llmwiki_git.wiki.scanner import _ESCAPE

    masked = _ESCAPE.sub("  ", line) if "\\" in line else line
    masked = (
        _OLD_MD_LINK.sub(lambda m: " " * (m.end() - m.start()), masked)
        if "](" in masked
        else masked
    )
    return [
        (m.start() + 1, line[m.start(2) : m.end(2)], bool(m.group(1)))
        for m in _OLD_WIKILINK.finditer(masked)
    ]


def test_the_link_rules_find_what_their_earlier_forms_found() -> None:
    """Differential: every line of 2,000 generated pages (fences, code spans, escapes,
    markdown links, embeds, CRLF, huge lines) gives the same links, columns and embeds."""
    from llmwiki_git.wiki.scanner import _MD_LINK, _WIKILINK, _links_of

    compared = 0
    for text in _pages():
        for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
            found: list = []
            _links_of(line, line, 0, found)
            assert [(o[1], o[2], o[5]) for o in found] == _old_links(line), (
                line
            )  # (col, inner, embed)
            assert _MD_LINK.sub("#", line) == _OLD_MD_LINK.sub("#", line), line
            assert [(m.start(1), m.group(1)) for m in _WIKILINK.finditer(line)] == [
                (m.start(2), m.group(2)) for m in _OLD_WIKILINK.finditer(line)
            ], line
            compared += 1
    assert compared > 5000


_BLOCK_LINES = [
    "# Heading One",
    "  ## Indented heading ##",
    "Setext title",
    "===",
    "---",
    "- item [[li]]",
    "1. first",
    "para ^block-1",
    "> quote [[q]] ^qb",
    "`a` [[x]] `b`",
    "``code [[no]]``",
    "`open [[span]]",
    "close` [[after]]",
    "a ` stray [[s]]",
    "[md [[in]]](u) [[out]]",
    "\\[[esc]] [[ok]]",
    "## [[heading link]]",
    "#nospace",
    "",
    "  ",
    ">",
    "text",
    "Title: with colon",
    "Caf\u00e9 \u00e9t\u00e9",
    "[[a|b]] ![[c]]",
    "t | [[x\\|y]] |",
]


def _plain_pages() -> list[str]:
    """Pages the whole-body scan takes (no comments, fences, tabs or 4-space indents),
    with headings, setext underlines, block ids, code spans (also unclosed and over lines)."""
    import random

    rng = random.Random(23)
    lines = [
        line
        for line in _TRICKY_LINES + _BLOCK_LINES
        if "<!--" not in line
        and "```" not in line
        and "~~~" not in line
        and not line.startswith("    ")
    ]
    return ["\n".join(rng.choice(lines) for _ in range(rng.randint(1, 14))) for _ in range(3000)]


def test_the_whole_body_scan_finds_what_the_line_walk_finds() -> None:
    """Differential: `_scan_simple` (most pages) and `_scan_blocks` (the full walk) agree on
    links, columns, headings and block ids of 3,000 generated pages and the tricky pages,
    from every frontmatter offset; `scan` takes the simple path where it applies."""
    from llmwiki_git.wiki.scanner import _scan_blocks, _scan_simple, scan_raw, split_lines

    taken = 0
    for text in _plain_pages() + _pages():
        lines = split_lines(text)
        for start in {0, min(2, len(lines))}:
            body = "\n".join(lines[start:])
            full = _scan_blocks(lines, start, "[[" in body)
            assert scan_raw(text, start) == full, text
            plain = (
                "<!--" not in body
                and "```" not in body
                and "~~~" not in body
                and "\t" not in body
                and "\n    " not in body
                and not body.startswith("    ")
            )
            simple = _scan_simple(lines, start, "[[" in body) if plain else None
            if simple is not None:
                assert simple == full, text
                taken += 1
    assert taken > 3000


def test_slugify_fast_path_follows_the_rules() -> None:
    """Plain ASCII names skip the normalization rules; both give the same slug."""
    import random
    import unicodedata

    from llmwiki_git.wiki import slug

    def rules(text: str) -> str:
        text = unicodedata.normalize("NFC", text).lower()
        for pattern, repl in (
            (slug._DROP, ""),
            (slug._NOT_KEPT, ""),
            (slug._SPACES, "-"),
            (slug._DASHES, "-"),
        ):
            text = pattern.sub(repl, text)
        return text.strip("-")

    rng = random.Random(5)
    alphabet = "aZ9 -_'\u2019.#/\\\u00e9\tx"
    samples = [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9))) for _ in range(20000)
    ]
    samples += ["Plain Words", "already-a-slug", "A-b C", " lead", "trail ", "a  b", "a--b", "x_y"]
    for text in samples:
        assert slug.slugify(text) == rules(text), repr(text)


def test_parse_target_fast_path_equals_the_full_parse() -> None:
    import random

    from llmwiki_git.wiki.slug import _parse, parse_target

    rng = random.Random(8)
    alphabet = "aB9 -#/.\\^|md\u00e9x"
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        assert parse_target(text) == _parse(text.strip()), repr(text)
