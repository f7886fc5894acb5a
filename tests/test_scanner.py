from __future__ import annotations

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


def test_scan_pages_in_workers_equals_scan_page() -> None:
    """The cold check's parallel scan returns exactly what scanning one by one returns,
    in order (pages of different sizes, so the shares finish out of order)."""
    from llmwiki_git.wiki.pages import scan_page
    from llmwiki_git.wiki.parallel import MIN_PAGES, scan_pages

    pages = [(f"---\naliases: [A{i}]\n---\n# H{i}\n" + f"[[t{i}]] `[[no]]` ^b{i}\n" * (i % 13 + 1)).encode()
             for i in range(MIN_PAGES + 37)]
    pages.append(b"\xff\xfe not utf-8 [[x]]")
    assert scan_pages(pages) == [scan_page(p) for p in pages]


# -- the fast path against the full scan ------------------------------------------------------

_TRICKY_LINES = [
    "plain text with [[alpha]] and [[beta|Beta]] and ![[pic.png]]", "# Heading [[in heading]]", "## Second ##",
    "   ### three spaces", "    #### four spaces is code [[code1]]", "\tindented [[tab]]", " \ttab after space",
    "#nospace", "####### seven", "Setext title", "===", "---", "-", "- item [[li]]", "1. numbered [[n1]]",
    "> quote [[q1]]", "> # quoted heading", ">", "```", "```md", "~~~", "~~~~ [[t]]", "inline `[[no]]` code [[yes]]",
    "``a ` b`` [[after]]", "unclosed `tick [[maybe]]", "closes later` [[x]]", "`", "escaped \\[[no]] [[yes2]]",
    "a [label [[inner]]](http://x) b [[out]]", "[[a]][[b]]", "[[ spaced | label ]]", "[[#self anchor]]", "[[]]",
    "[[^blk]]", "block line ^blk-1", "ends with ^id  ", "no^id", "<!-- comment [[c1]] -->", "<!-- open",
    "still comment [[c2]]", "-->", "[[unterminated", "text ]] [[", "caf\u00e9 [[\u00e9t\u00e9]] \U0001f600 [[emoji]]",
    "\ufffd replaced [[r]]", "x" * 3000 + " [[long]]", "[[a|b|c]]", "[[x\\|y]]", "",  "", "   ", "table | [[t1\\|L]] |",
    "trailing spaces [[s]]   ", "^only", "text ^", "# [[h]] ^hb", "\x0cform feed [[ff]]", "a\u2028b [[ls]]",
]


def _pages() -> list[str]:
    import random

    rng = random.Random(11)
    pages = ["\n".join(_TRICKY_LINES), "---\ntitle: x\n---\n# T\n[[a]]\n", "---\ntitle: x\n---\n---\n[[a]]\n",
             "# T\r\n[[crlf]]\r\n", "a\rb [[cr]]\n", "no newline at end [[z]]", "", "\n\n\n", "[[a]]\n" * 50]
    for _ in range(3000):
        lines = [rng.choice(_TRICKY_LINES) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.3:
            lines = ["---", "title: t", "aliases: [a]", "---", *lines]
        pages.append("\n".join(lines) + rng.choice(["", "\n"]))
    return pages


def test_the_fast_path_finds_exactly_what_the_full_scan_finds() -> None:
    from llmwiki_git.wiki import frontmatter
    from llmwiki_git.wiki.scanner import _fast_scan, full_scan

    taken = 0
    for text in _pages():
        start = frontmatter.parse(text).body_line
        fast = _fast_scan(text, start)
        if fast is None:
            continue
        taken += 1
        assert fast == full_scan(text, start), text
    assert taken > 300  # pages without multi-line structure do take it


def test_fast_path_on_a_typical_page() -> None:
    from llmwiki_git.wiki.scanner import _fast_scan, full_scan

    text = ("---\ntitle: T\n---\n# Title\n\nSee [[alpha]] and `code [[no]]` and [a [[b]]](u) and \\[[no]].\n\n"
            "## Part two\n\n- item [[c|C]] ^blk\n")
    fast = _fast_scan(text, 3)
    assert fast is not None and fast == full_scan(text, 3)
    assert [(o.line, o.col, o.target) for o in fast.links] == [(6, 5, "alpha"), (10, 8, "c")]
    assert fast.anchors.headings == {"title", "part-two"} and fast.anchors.blocks == {"blk"}
