"""The markdown-aware wikilink scanner: every reader of links goes through `scan_links`.

A line-based scanner rather than a full markdown parser (markdown-it-py): the checker scans
every page of a 10,000-page wiki on each run, and a full parse costs ~20x more (measured
in docs/benchmarks.md). It follows CommonMark where links are concerned:

* links: ``[[target]]``, ``[[target|label]]``, ``[[target#heading]]``, ``[[target#^block]]``,
  embeds ``![[target]]``, and ``[[target\\|label]]`` inside tables;
* not links: inline code spans, fenced (backtick and tilde, also inside blockquotes and
  list items) and indented code blocks, backslash-escaped ``\\[[``, wikilinks inside the text
  of a markdown link ``[see [[x]]](url)``, YAML frontmatter, HTML comments (also multi-line).

Every occurrence carries its 1-based line and column in the file (frontmatter included).

The same pass also returns the page's local markdown links, ``[text](../page.md#anchor)`` and
``![alt](img.png)`` (not URLs with a scheme, not site-absolute ``/paths``), by the same rules: never
in code, comments or escapes. Each is (line, column of ``[``, column of the destination,
destination as written), so that the checker can check them and ``llmwiki mv`` rewrite them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from .slug import slugify, split_label

_BACKTICKS = re.compile(r"`+")
_ESCAPE = re.compile(r"\\[!-/:-@\[-`{-~]")
# Link text may hold brackets two deep: `[see [[x]]](url)`.
# Both start with a literal "[" (the "!" before it is looked at afterwards) so the regex
# engine jumps from one "[" to the next instead of trying every position (measured: 2.4x
# faster on link lines). tests/wiki/test_scanner.py checks them against the earlier forms.
_MD_LINK = re.compile(
    r"\[(?<!!\[)(?:[^\[\]]|\[(?:[^\[\]]|\[[^\[\]]*\])*\])*\]"
    r"\((?P<url>[^()\s]*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
)
# A destination that names something outside the wiki: a scheme (``https:``, ``mailto:``),
# ``//host`` or a site-absolute ``/path`` (a docs site's URL, not a file the page can name).
_NOT_LOCAL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:|/")
# An image, ``![alt](path)``: its destination is a file too (never blanked: a wikilink in
# alt text is a link, as the reference tool reads it).
_MD_IMAGE = re.compile(
    r"!\[(?:[^\[\]]|\[(?:[^\[\]]|\[[^\[\]]*\])*\])*\]\((?P<url>[^()\s]*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
)
# Where a local destination may start: a line without one only has its links blanked (most
# markdown links are URLs; collecting each in Python cost the cold check ~5 %).
_LOCAL_START = re.compile(r"\]\((?![A-Za-z][A-Za-z0-9+.-]*:|/|\))")
_HEADING_STARTS = frozenset(
    "#=- "
)  # first characters of lines that may be (or underline) a heading
_WIKILINK = re.compile(r"\[\[([^\[\n]*?)\]\]")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
# Lines that start a new block, so an inline code span cannot run into them.
_BLOCK_START = re.compile(r" {0,3}(?:[-*+][ \t]|\d{1,9}[.)][ \t]|#{1,6}(?:[ \t]|$)|>|```|~~~)")
_BLOCK_ID = re.compile(r"(?:^|\s)\^([A-Za-z0-9-]+)[ \t]*$")


class Occurrence(NamedTuple):
    """One ``[[...]]`` in a file: where it is and what it says (a tuple: cheap to build
    and to cache by the hundred thousand)."""

    line: int
    col: int
    inner: str
    target: str
    label: str | None
    embed: bool

    @property
    def source_text(self) -> str:
        return f"{'!' if self.embed else ''}[[{self.inner}]]"


RawLink = tuple[int, int, str, str, "str | None", bool]  # the fields of an `Occurrence`
# A local markdown link: (line, column of "[", column of the destination, the destination).
MdLink = tuple[int, int, int, str]


def split_lines(text: str) -> list[str]:
    """Split on LF, CRLF and lone CR only (``str.splitlines`` also splits on form feeds
    and Unicode separators, which would shift line numbers against every editor)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def _text_lines(lines: list[str], start: int, dialect: str = "") -> Iterator[tuple[int, str]]:
    """Yield (index, line) for lines outside fenced and indented code blocks, with HTML
    comments (also those spanning lines) blanked out, and ``%% … %%`` comments when
    ``dialect`` holds ``%`` (Obsidian, Logseq). With ``h`` (Hugo), the inner text of a
    paired ``{{< name >}} … {{< /name >}}`` shortcode is skipped like a fenced block: Hugo
    hands it to the shortcode unrendered (``code-toggle`` holds TOML, whose ``[[menus.main]]``
    is no link). A comment is tracked before fences are looked for, so a fence written
    inside a comment opens nothing."""
    fence_char = ""
    fence_len = 0
    prev_blank = True
    in_indented = False
    in_list = False
    comments = _CommentState()
    percent = _CommentState("%%", "%%") if "%" in dialect else None
    hugo = "h" in dialect
    shortcode: re.Pattern[str] | None = None  # the closing tag of a raw shortcode block
    for index in range(start, len(lines)):
        line = lines[index]
        if comments.open or (percent is not None and percent.open):
            line = _mask_open_comments(line, comments, percent)
            if not line.strip():
                continue
        lead = line.lstrip(" \t>")
        if fence_char:
            if _closes_fence(lead, fence_char, fence_len):
                fence_char = ""
                prev_blank = False
            continue
        if shortcode is not None:
            if shortcode.search(line):
                shortcode = None
            continue
        if hugo and "{{<" in line:
            shortcode = _shortcode_block(lines, index)
            if shortcode is not None:
                continue
        if not lead.strip():
            prev_blank = not line.strip() or prev_blank
            continue
        if (in_indented or (prev_blank and not in_list)) and _indented(line):
            in_indented = True
            continue
        in_indented = False
        head = lead[:3]
        if head == "```" or head == "~~~":
            fence_len = _fence_opened(lead)
            if fence_len:
                fence_char, prev_blank = head[0], False
                continue
        if _LIST_ITEM.match(line):
            in_list = True
        elif prev_blank and line[:1] not in (" ", "\t"):
            in_list = False
        prev_blank = False
        if "<!--" in line or (percent is not None and "%%" in line):
            line = _mask_comments(line, comments, percent)
        yield index, line


def _closes_fence(lead: str, fence_char: str, fence_len: int) -> bool:
    """Whether ``lead`` (a line inside a fence, quote marks and indent stripped) closes the
    fence of ``fence_len`` ``fence_char`` characters: as long a run at least, then nothing."""
    if not lead.startswith(fence_char * 3):
        return False
    run = len(lead) - len(lead.lstrip(fence_char))
    return run >= fence_len and not lead[run:].strip()


def _fence_opened(lead: str) -> int:
    """The length of the fence ``lead`` (starting with three backticks or tildes) opens, or 0
    when it opens none (a backtick fence's info string holds no backtick)."""
    char = lead[0]
    run = len(lead) - len(lead.lstrip(char))
    return run if char == "~" or "`" not in lead[run:] else 0


def _indented(line: str) -> bool:
    """Whether ``line`` is indented four columns or more (a tab counts to the next four)."""
    return line.startswith(("    ", "\t")) or (
        line[:1] == " " and line.expandtabs(4).startswith("    ")
    )


def _mask_comments(line: str, comments: _CommentState, percent: _CommentState | None) -> str:
    """``line`` with the HTML comments (and ``%% … %%`` ones, given ``percent``) that start
    on it blanked; code spans hide a comment opener."""
    if "<!--" in line:
        line = comments.mask(_mask_code_spans(line)[0])
    if percent is not None and "%%" in line:
        line = percent.mask(_mask_code_spans(line)[0])
    return line


def _mask_open_comments(line: str, comments: _CommentState, percent: _CommentState | None) -> str:
    """``line`` with the part inside a comment that an earlier line opened blanked out."""
    if comments.open:
        line = comments.mask(line)
    if percent is not None and percent.open:
        line = percent.mask(line)
    return line


_SHORTCODE_OPEN = re.compile(r"\s*\{\{<\s*([A-Za-z0-9_-]+)\b(?:[^>]|>(?!\}\}))*?(?<!/)>\}\}\s*$")


def _shortcode_block(lines: list[str], index: int) -> re.Pattern[str] | None:
    """The closing tag of the paired Hugo shortcode ``lines[index]`` opens on a line of its
    own (None: not an opening tag, or never closed: then it is no block)."""
    opened = _SHORTCODE_OPEN.match(lines[index])
    if opened is None:
        return None
    closing = re.compile(r"\{\{<\s*/\s*" + re.escape(opened.group(1)) + r"\s*>\}\}")
    for later in lines[index + 1 :]:
        if closing.search(later):
            return closing
    return None


def _mask_span(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _mask_code_spans(line: str, open_width: int = 0) -> tuple[str, tuple[int, int] | None]:
    """Blank out inline code spans. ``open_width`` > 0 means a span of that many backticks
    opened on an earlier line of the paragraph. Returns the masked line and the position
    and width of a run left open at its end (None when all are closed or literal)."""
    if "`" not in line:
        return (" " * len(line), (0, open_width)) if open_width else (line, None)
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(line)]
    i = 0
    if open_width:
        for j, (start, end) in enumerate(runs):
            if end - start == open_width:
                line = " " * end + line[end:]
                i = j + 1
                break
        else:
            return " " * len(line), (0, open_width)
    unclosed: tuple[int, int] | None = None
    while i < len(runs):
        start, end = runs[i]
        width = end - start
        for j in range(i + 1, len(runs)):
            if runs[j][1] - runs[j][0] == width:
                line = _mask_span(line, start, runs[j][1])
                i = j
                break
        else:
            if unclosed is None:
                unclosed = (start, width)
        i += 1
    return line, unclosed


def _closes_later(lines: list[str], index: int, width: int) -> bool:
    """Whether a later line of the same paragraph holds a run of exactly ``width`` backticks."""
    for later in lines[index + 1 :]:
        if not later.strip() or _BLOCK_START.match(later):
            return False
        for m in _BACKTICKS.finditer(later):
            if m.end() - m.start() == width:
                return True
    return False


class _CommentState:
    """Tracks a comment that may span lines: HTML's ``<!-- … -->`` by default, or
    Obsidian's ``%% … %%``."""

    __slots__ = ("open", "opener", "closer")

    def __init__(self, opener: str = "<!--", closer: str = "-->") -> None:
        self.open = False
        self.opener = opener
        self.closer = closer

    def mask(self, line: str) -> str:
        pos = 0
        while True:
            if self.open:
                end = line.find(self.closer, pos)
                if end < 0:
                    return line[:pos] + " " * (len(line) - pos)
                line = _mask_span(line, pos, end + len(self.closer))
                pos = end + len(self.closer)
                self.open = False
            start = line.find(self.opener, pos)
            if start < 0:
                return line
            self.open = True
            line = _mask_span(line, start, start + len(self.opener))
            pos = start + len(self.opener)


@dataclass(frozen=True)
class Anchors:
    """Heading slugs and block ids a page defines (for ``#heading`` / ``#^id`` links)."""

    headings: frozenset[str]
    blocks: frozenset[str]


@dataclass(frozen=True)
class Scan:
    links: list[Occurrence]
    anchors: Anchors


def _md_links_of(line: str, masked: str, index: int, md: list[MdLink] | None) -> str:
    """``masked`` with its markdown links blanked; the local ones are added to ``md``
    (destinations as written in ``line``, which ``masked`` aligns with)."""
    if md is None or not _LOCAL_START.search(masked):
        return _MD_LINK.sub(_blank, masked)
    if "![" in masked:
        for match in _MD_IMAGE.finditer(masked):
            url_start, url_end = match.span("url")
            url = line[url_start:url_end]
            if url and not _NOT_LOCAL.match(url):
                md.append((index + 1, match.start() + 1, url_start + 1, url))
    out = []
    end = 0
    for match in _MD_LINK.finditer(masked):
        start, stop = match.span()
        url_start, url_end = match.span("url")
        url = line[url_start:url_end]
        if url and not _NOT_LOCAL.match(url):
            md.append((index + 1, start + 1, url_start + 1, url))
        out.append(masked[end:start])
        out.append(" " * (stop - start))
        end = stop
    out.append(masked[end:])
    return "".join(out)


def _links_of(
    line: str,
    masked: str,
    index: int,
    found: list[RawLink],
    md: list[MdLink] | None = None,
    label_first: bool = False,
) -> None:
    if "\\" in masked:
        masked = _ESCAPE.sub("  ", masked)
    if "](" in masked:
        masked = _md_links_of(line, masked, index, md)
    for match in _WIKILINK.finditer(masked):
        inner = line[match.start(1) : match.end(1)]
        target, label = split_label(inner)
        if label_first and label is not None:  # Dendron's [[label|target]]
            target, label = label, target.strip()
        start = match.start()
        embed = start > 0 and masked[start - 1] == "!"
        found.append(
            (index + 1, start if embed else start + 1, inner, target.strip(), label, embed)
        )


def scan(text: str, start_line: int = 0, dialect: str = "") -> Scan:
    """Links and anchors of ``text`` in one pass, from line index ``start_line`` on (pass
    the frontmatter's ``body_line``: frontmatter is skipped, numbering stays the file's).
    ``dialect`` (`wiki.flavour.Flavour.dialect`): ``%`` reads ``%% … %%`` as a comment,
    ``<`` reads ``[[a|b]]`` label first."""
    links, headings, blocks, _ = scan_raw(text, start_line, dialect)
    return Scan(list(map(Occurrence._make, links)), Anchors(frozenset(headings), frozenset(blocks)))


ScanParts = tuple[list[RawLink], set[str], set[str], list[MdLink]]


def scan_raw(text: str, start_line: int = 0, dialect: str = "") -> ScanParts:
    """`scan` as plain data: links as `Occurrence` field tuples, heading slugs, block ids, and
    the local markdown links (`MdLink`)."""
    lines = split_lines(text)
    body = "\n".join(lines[start_line:])
    if (
        not ("%" in dialect and "%%" in body)
        and not ("h" in dialect and ("{{<" in body or "\n: " in body))
        and "<!--" not in body
        and "```" not in body
        and "~~~" not in body
        and "\t" not in body
        and "\n    " not in body
        and not body.startswith("    ")
    ):
        simple = _scan_simple(lines, start_line, "[[" in body, "<" in dialect)
        if simple is not None:
            return simple
    return _scan_blocks(lines, start_line, "[[" in body, dialect)


def scan_markdown_links(text: str, start_line: int = 0, dialect: str = "") -> list[MdLink]:
    """The local markdown links of ``text`` (see `scan_raw`)."""
    if "](" not in text:
        return []
    return scan_raw(text, start_line, dialect)[3]


def _scan_simple(
    lines: list[str], start_line: int, want_links: bool, label_first: bool = False
) -> ScanParts | None:
    """`_scan_blocks` for a page without HTML comments, fences, tabs or lines indented
    four spaces (most pages). No line is hidden then, so headings and block ids are looked
    for only on the lines that can hold them, and links are found in the whole body at once
    (code spans, escapes and markdown links blanked first, line by line where it matters).
    None when an inline code span crosses lines (the full walk handles that). Measured:
    ~3x faster; tests/wiki/test_scanner.py compares the two on generated pages."""
    found: list[RawLink] = []
    md: list[MdLink] = []
    body_lines = lines[start_line:]
    headings = _simple_headings(lines, start_line)
    body = "\n".join(body_lines)
    blocks = _block_ids(body_lines) if "^" in body else set()
    want_md = "](" in body
    if not want_links and not want_md:
        return found, headings, blocks, md
    masked = body
    if "`" in body or want_md:  # code spans, then markdown links blanked, line by line
        masked_lines = _masked_lines(lines, start_line, md)
        if masked_lines is None:
            return None  # a code span over several lines
        if not want_links:
            return found, headings, blocks, md
        masked = "\n".join(masked_lines)
    if "\\" in masked:
        masked = _ESCAPE.sub("  ", masked)
    _body_wikilinks(body, masked, start_line, label_first, found)
    return found, headings, blocks, md


def _simple_headings(lines: list[str], start_line: int) -> set[str]:
    """The heading slugs of the lines from ``start_line`` on, none of them hidden (ATX and
    setext headings; only lines starting like one are looked at)."""
    headings: set[str] = set()
    for index in range(start_line, len(lines)):
        line = lines[index]
        first = line[:1]
        if not first or first not in _HEADING_STARTS:
            continue
        if first == " ":
            first = line.lstrip(" ")[:1]
        if first == "#":
            atx = _ATX.match(line)
            if atx:
                headings.add(slugify(atx.group(2) or ""))
        elif (first == "=" or first == "-") and index > start_line and _SETEXT.match(line):
            previous_line = lines[index - 1]
            if (
                previous_line.lstrip(" \t>").strip()
                and not _ATX.match(previous_line)
                and not _LIST_ITEM.match(previous_line)
            ):
                headings.add(slugify(previous_line))
    return headings


def _block_ids(body_lines: list[str]) -> set[str]:
    """The block ids (``^id`` ending a line) of ``body_lines``."""
    blocks: set[str] = set()
    for line in body_lines:
        if "^" in line:
            block = _BLOCK_ID.search(line)
            if block:
                blocks.add(block.group(1))
    return blocks


def _masked_lines(lines: list[str], start_line: int, md: list[MdLink]) -> list[str] | None:
    """The lines from ``start_line`` on with code spans, then markdown links blanked (escapes
    too on a line holding a link); the local markdown links are added to ``md``. None when a
    code span runs over lines."""
    body_lines = lines[start_line:]
    masked_lines = list(body_lines)
    for offset, line in enumerate(body_lines):
        if "`" in line:
            if "``" not in line and not line.count("`") % 2:
                line = _mask_single_spans(line)
            else:
                line, unclosed = _mask_code_spans(line)
                if unclosed is not None and _closes_later(lines, start_line + offset, unclosed[1]):
                    return None
            masked_lines[offset] = line
        if "](" in line:  # as `_links_of` does
            if "\\" in line:
                line = _ESCAPE.sub("  ", line)
            masked_lines[offset] = _md_links_of(body_lines[offset], line, start_line + offset, md)
    return masked_lines


def _body_wikilinks(
    body: str, masked: str, start_line: int, label_first: bool, found: list[RawLink]
) -> None:
    """Add the wikilinks of ``body`` (the lines from ``start_line`` on), found in ``masked``
    (``body`` with code, escapes and markdown links blanked, columns kept), to ``found``."""
    line_index = start_line
    line_start = 0
    counted = 0
    count = masked.count
    for match in _WIKILINK.finditer(masked):
        inner_start, inner_end = match.span(1)
        start = inner_start - 2
        newlines = count("\n", counted, start)
        if newlines:
            line_index += newlines
            line_start = masked.rfind("\n", 0, start) + 1
        counted = start
        inner = body[inner_start:inner_end]
        pipe = inner.find("|")  # `split_label`, inlined
        if pipe < 0:
            target, label = inner, None
        else:
            target, label = inner[:pipe], inner[pipe + 1 :].strip()
            if target[-1:] == "\\":
                target = target[:-1]
            if label_first:  # Dendron's [[label|target]]
                target, label = label, target.strip()
        col = start - line_start
        embed = col > 0 and masked[start - 1] == "!"
        found.append(
            (line_index + 1, col if embed else col + 1, inner, target.strip(), label, embed)
        )


def _mask_single_spans(line: str) -> str:
    """`_mask_code_spans` of a line whose backtick runs are all single and even in number:
    each pair is a span."""
    start = line.find("`")
    while start >= 0:
        end = line.find("`", start + 1) + 1
        line = line[:start] + " " * (end - start) + line[end:]
        start = line.find("`", end)
    return line


def _blank(match: re.Match[str]) -> str:
    return " " * (match.end() - match.start())


def _scan_blocks(
    lines: list[str], start_line: int, want_links: bool, dialect: str = ""
) -> ScanParts:
    """The full walk: fences, indented code, HTML comments, code spans over lines (and the
    rules of a flavour's ``dialect``: `scan`)."""
    label_first = "<" in dialect
    terms = "h" in dialect  # Hugo: a definition list's term is an anchor, as Hugo's docs link it
    found: list[RawLink] = []
    headings: set[str] = set()
    blocks: set[str] = set()
    md: list[MdLink] = []
    want = want_links or any("](" in line for line in lines[start_line:])
    open_width = 0  # an inline code span still open from the previous line
    previous = -2
    previous_line = ""
    for index, line in _text_lines(lines, start_line, dialect):
        first = line.lstrip(" ")[:1]
        if first == "#":
            atx = _ATX.match(line)
            if atx:
                headings.add(slugify(atx.group(2) or ""))
        elif (first == "=" or first == "-") and previous == index - 1 and _SETEXT.match(line):
            if not _ATX.match(previous_line) and not _LIST_ITEM.match(previous_line):
                headings.add(slugify(previous_line))
        elif terms and first == ":" and previous == index - 1 and line.lstrip(" ")[:2] == ": ":
            if previous_line.strip() and not _ATX.match(previous_line):
                headings.add(slugify(previous_line))
        if "^" in line:
            block = _BLOCK_ID.search(line)
            if block:
                blocks.add(block.group(1))
        if open_width and (index != previous + 1 or _BLOCK_START.match(line)):
            open_width = 0  # a paragraph break or a new block ends an unclosed span
        previous, previous_line = index, line
        if not want:
            continue
        if "`" not in line and not open_width:
            if "[[" in line or "](" in line:
                _links_of(line, line, index, found, md, label_first)
            continue
        masked, unclosed = _mask_code_spans(line, open_width)
        open_width = 0
        if unclosed is not None:
            start, width = unclosed
            if start == 0 and masked.strip() == "":
                open_width = width  # the whole line is inside a span from above
            elif _closes_later(lines, index, width):
                masked = masked[:start] + " " * (len(masked) - start)
                open_width = width
        if "[[" in masked or "](" in masked:
            _links_of(line, masked, index, found, md, label_first)
    return found, headings, blocks, md


_INCLUDE = re.compile(r"""\{\{([%<])\s*include\s+(?:"([^"\n]+)"|`([^`\n]+)`)\s*[%>]\}\}""")


def hugo_includes(text: str, start_line: int = 0) -> tuple[str, ...]:
    """The files Hugo's ``{{% include "path" %}}`` / ``{{< include "path" >}}`` shortcodes of
    ``text`` name, in order, once each; those written in code are not followed."""
    if "include" not in text:
        return ()
    found: dict[str, None] = {}
    for _index, line in _text_lines(split_lines(text), start_line, "h"):
        if "include" in line and "{{" in line:
            for match in _INCLUDE.finditer(_mask_code_spans(line)[0] if "`" in line else line):
                found[(match.group(2) or match.group(3)).strip()] = None
    return tuple(p for p in found if p)


def scan_links(text: str, start_line: int = 0, dialect: str = "") -> list[Occurrence]:
    """All wikilink occurrences of ``text`` (see `scan`)."""
    if "[[" not in text:
        return []
    return scan(text, start_line, dialect).links


def scan_anchors(text: str, start_line: int = 0) -> Anchors:
    return scan(text, start_line).anchors


def prose_lines(text: str, start_line: int = 0) -> Iterator[tuple[int, str]]:
    """(0-based line index, line) of every line of ``text`` from ``start_line`` on that is
    not code -- fenced and indented blocks skipped, HTML comments and inline code spans
    blanked (columns kept) -- for readers of other inline marks than wikilinks (source
    citations ``^[paper.md:3-5]``). A code span running over lines is not followed."""
    for index, line in _text_lines(split_lines(text), start_line):
        yield index, _mask_code_spans(line)[0] if "`" in line else line


def mask_code_spans(line: str) -> str:
    """``line`` with its inline code spans blanked (columns kept)."""
    return _mask_code_spans(line)[0]
