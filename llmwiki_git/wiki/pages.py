"""Reading one page's bytes into what the link model needs: title, aliases, links, issues."""

from __future__ import annotations

import re
from typing import NamedTuple

from . import frontmatter
from .provenance import RETRACTED_KEY, Sourcing, scan_sourcing, text_sourcing
from .scanner import Anchors, MdLink, Occurrence, RawLink, hugo_includes, scan_raw
from .slug import slugify
from .titles import declared_title

MAX_PAGE_BYTES = 8 * 1024 * 1024
"""Pages larger than this are still pages (links to them resolve) but are not scanned."""


class Issue(NamedTuple):
    """Something wrong with a page as a file, found while reading it."""

    code: str
    message: str
    line: int = 1


RawIssue = tuple[str, str, int]  # the fields of an `Issue`, as the scan cache keeps them


class PageScan(NamedTuple):
    """The parts of a page the link model uses; cached by blob id (see checks/cache.py).

    A NamedTuple whose fields are exactly the cache record: reading 10,000 cached scans is
    ``PageScan._make`` on tuples marshal already built, the cheapest record Python builds
    (the cached check of docs/benchmarks.md reads 10,000 of them). Headings and block ids are kept sorted, so records compare stably.
    """

    # The title the page declares (titles.declared_title); None: its file name is its title.
    title: str | None
    aliases: tuple[str, ...]
    raw_links: tuple[RawLink, ...]  # `Occurrence` fields; plain tuples when read from the cache
    body_line: int
    raw_issues: tuple[RawIssue, ...]  # `Issue` fields
    headings: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()
    alias_slugs: tuple[str, ...] = ()  # slugified aliases, unique, in order
    md_links: tuple[MdLink, ...] = ()  # local markdown links
    meta_lines: tuple[int, int] = (0, 0)  # lines of the `title:` and `aliases:` keys (0: none)
    title_slug: str = ""  # slugify(title), kept: the names key of every page needs it on each run
    sourcing: Sourcing = ()  # sources named, retracted and cited
    includes: tuple[str, ...] = ()  # files Hugo's include shortcodes name (wiki/includes.py)

    @property
    def names_key(self) -> str:
        """What other pages' problems can depend on, as one string (for the fingerprint):
        alias slugs, headings and block ids (links), and the title's slug (duplicate titles)."""
        return (
            "\x02".join(self.alias_slugs)
            + "\x01"
            + "\x02".join(self.headings)
            + "\x01"
            + "\x02".join(self.blocks)
            + "\x01"
            + self.title_slug
        )

    @property
    def links(self) -> tuple[Occurrence, ...]:
        raw = self.raw_links
        if not raw or isinstance(raw[0], Occurrence):
            return raw  # type: ignore[return-value]
        return tuple(map(Occurrence._make, raw))

    @property
    def issues(self) -> tuple[Issue, ...]:
        return tuple(map(Issue._make, self.raw_issues))

    @property
    def anchors(self) -> Anchors:
        return Anchors(frozenset(self.headings), frozenset(self.blocks))

    @property
    def names(self) -> tuple[tuple[str, ...], ...]:
        """What other pages' links can depend on (aliases, headings, blocks)."""
        return (self.aliases, self.headings, self.blocks)

    def to_record(self) -> ScanRecord:
        # marshal (the scan cache) carries exact tuples only: NamedTuple links become plain
        return (
            self.title,
            self.aliases,
            tuple(_plain_link(link) for link in self.raw_links),
            self.body_line,
            tuple((code, message, line) for code, message, line in self.raw_issues),
            self.headings,
            self.blocks,
            self.alias_slugs,
            self.md_links,
            (self.meta_lines[0], self.meta_lines[1]),
            self.title_slug,
            self.sourcing,
            self.includes,
        )

    @classmethod
    def from_record(cls, record: ScanRecord) -> PageScan:
        return cls._make(record)


# A `PageScan` as a plain tuple, field for field: what the scan cache stores and scan workers
# send back (both through `marshal`, which carries exact tuples only, no NamedTuples).
ScanRecord = tuple[
    str | None,  # title
    tuple[str, ...],  # aliases
    tuple[RawLink, ...],  # raw_links
    int,  # body_line
    tuple[RawIssue, ...],  # raw_issues
    tuple[str, ...],  # headings
    tuple[str, ...],  # blocks
    tuple[str, ...],  # alias_slugs
    tuple[MdLink, ...],  # md_links
    tuple[int, int],  # meta_lines
    str,  # title_slug
    Sourcing,  # sourcing
    tuple[str, ...],  # includes
]


def _plain_link(link: RawLink) -> RawLink:
    line, col, inner, target, label, embed = link
    return (line, col, inner, target, label, embed)


def _plain_issues(issues: list[Issue]) -> tuple[RawIssue, ...]:
    return tuple((issue.code, issue.message, issue.line) for issue in issues)


def only_issue_record(code: str, message: str) -> ScanRecord:
    """The scan record of a page that could not be scanned, with why."""
    return (None, (), (), 0, ((code, message, 1),), (), (), (), (), (0, 0), "", (), ())


def decode(data: bytes) -> tuple[str | None, list[Issue]]:
    """Page bytes to text. Binary files give None; invalid UTF-8 is decoded with U+FFFD
    replacements so the rest of the page is still checked, and reported."""
    if b"\0" in data:
        return None, [Issue("unreadable-page", "binary file (contains NUL bytes); not scanned")]
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        text = data.decode("utf-8-sig", errors="replace")
        return text, [
            Issue(
                "invalid-utf8",
                f"not valid UTF-8 (byte {exc.start}); undecodable bytes were replaced",
                line,
            )
        ]


#: Issues of a page whose text cannot be used as written (search, answers): not UTF-8,
#: binary, too large. Such a page is left out of the search index and of every answer.
UNUSABLE = frozenset({"invalid-utf8", "unreadable-page", "page-too-large"})


def unusable(scan: PageScan) -> Issue | None:
    """Why a page's text cannot be searched or quoted (None: it can), from its scan."""
    return next((Issue(*issue) for issue in scan.raw_issues if issue[0] in UNUSABLE), None)


def unusable_notes(pages: list[tuple[str, PageScan]], limit: int = 10) -> list[str]:
    """One line per page whose text cannot be used (``wiki/x.md (line 3): not valid UTF-8 ...``),
    at most ``limit`` of them and a count of the rest."""
    found = [(path, issue) for path, scan in pages if (issue := unusable(scan)) is not None]
    notes = [
        f"{path}{f' (line {issue.line})' if issue.line > 1 else ''}: {issue.message.split(';')[0]}; "
        "left out of search and answers (save it as UTF-8 text to include it)"
        for path, issue in found[:limit]
    ]
    if len(found) > limit:
        notes.append(
            f"... and {len(found) - limit} more pages that are not UTF-8 text (`llmwiki check` lists them)"
        )
    return notes


def uncheckable(document: bytes | str, *, max_bytes: int = MAX_PAGE_BYTES) -> str | None:
    """Why a page with this content could not be fully checked (None: it could). Writers
    refuse such content before any write, so the checker never has to skip a page
    llmwiki wrote itself."""
    if isinstance(document, str):
        try:
            document = document.encode("utf-8")
        except UnicodeEncodeError:
            return "it holds characters that are not valid UTF-8"
    if b"\0" in document:
        return "it contains NUL bytes"
    if len(document) > max_bytes:
        return f"it is over the {max_bytes // (1024 * 1024)} MB page limit"
    try:
        document.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not valid UTF-8"
    return None


#: Characters no page llmwiki accepts may hold: C0 controls but tab, newline and carriage
#: return (NUL, the escape that starts terminal sequences, form feed, ...), DEL, the C1
#: controls (the 8-bit CSI U+009B among them) and the Unicode bidi embeddings, overrides and
#: isolates (U+202A-U+202E, U+2066-U+2069) that make a text read differently from its bytes.
REFUSED_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def acceptance_problem(document: bytes | str, max_bytes: int = MAX_PAGE_BYTES) -> str | None:
    """The one acceptance rule for a page llmwiki writes or approves -- a saved answer, a
    staged or proposed page edit, every page of any candidate kind at approval and in the
    Action: it must be fully checkable, as the gate requires of a commit (:func:`uncheckable`:
    within ``max_bytes``, UTF-8, no NUL), and hold no control or bidi character beyond tab,
    newline and carriage return (:data:`REFUSED_CHARACTERS`). Returns why not, naming the
    character as an escape and its line, or None when the page is acceptable."""
    why = uncheckable(document, max_bytes=max_bytes)
    if why is not None:
        return why
    text = document.decode("utf-8") if isinstance(document, bytes) else document
    found = REFUSED_CHARACTERS.search(text)
    if found is None:
        return None
    line = text.count("\n", 0, found.start()) + 1
    shown = ascii(found.group())[1:-1]
    return (
        f"it holds the control character {shown} on line {line} (escape sequences, C1 controls and "
        "bidi overrides are refused; tab, newline and carriage return are fine)"
    )


def scan_record(data: bytes, *, max_bytes: int = MAX_PAGE_BYTES, dialect: str = "") -> ScanRecord:
    """The scan of one page's bytes as a plain record (`PageScan` fields; links and issues
    plain tuples): what the scan cache stores and scan workers send back. ``dialect``: the
    flavour's scanning rules (`scanner.scan`)."""
    if len(data) > max_bytes:
        size_mb = len(data) / (1024 * 1024)
        return only_issue_record(
            "page-too-large",
            f"{size_mb:.1f} MB is over the {max_bytes // (1024 * 1024)} MB limit; not scanned",
        )
    text, issues = decode(data)
    if text is None:
        return (None, (), (), 0, _plain_issues(issues), (), (), (), (), (0, 0), "", (), ())
    meta = frontmatter.parse(text)
    issues.extend(_text_issues(text, meta))
    title = declared_title(meta.data, text[meta.body_offset :])
    links, headings, blocks, md = scan_raw(text, meta.body_line, dialect)
    aliases = tuple(frontmatter.string_list(meta.data.get("aliases"))) if meta.data else ()
    title = title if isinstance(title, str) else None
    if "p" in dialect and meta.raw is None and "::" in text:
        title, aliases = _properties(text, title)
    return (
        title,
        aliases,
        tuple(links),
        meta.body_line,
        _plain_issues(issues),
        tuple(sorted(headings)),
        tuple(sorted(blocks)),
        tuple(s for s in dict.fromkeys(map(slugify, aliases)) if s) if aliases else (),
        tuple(md),
        (_key_line(meta.raw, "title"), _key_line(meta.raw, "aliases"))
        if (title or aliases) and meta.raw
        else (0, 0),
        slugify(title) if title and not _PLACEHOLDER.search(title) else "",
        scan_sourcing(text, meta.raw, meta.data, meta.body_line, meta.body_offset)
        if "^[" in text
        or (meta.raw is not None and ("sources" in meta.raw or RETRACTED_KEY in meta.raw))
        else (),
        hugo_includes(text, meta.body_line) if "h" in dialect and "{{" in text else (),
    )


def _text_issues(text: str, meta: frontmatter.Frontmatter) -> list[Issue]:
    """The issues of a decoded page's text: malformed frontmatter, no text after it, a
    refused control character (the candidates' acceptance rule, applied by the gate too)."""
    issues = []
    if meta.error:
        issues.append(Issue("malformed-frontmatter", meta.error, meta.error_line or 1))
    if not _TEXT.search(text, meta.body_offset):
        issues.append(
            Issue(
                "empty-page",
                "empty page: no text after the frontmatter; write its body, or delete it"
                if meta.raw is not None
                else "empty page: the file holds no text; write it, or delete it",
            )
        )
    control = REFUSED_CHARACTERS.search(text)
    if control is not None:
        issues.append(
            Issue(
                "control-character",
                f"control character {ascii(control.group())[1:-1]}: remove it "
                "(escape sequences, C1 controls and bidi overrides can hide text from a reviewer; "
                "tab, newline and carriage return are fine)",
                text.count("\n", 0, control.start()) + 1,
            )
        )
    return issues


_TEXT = re.compile(r"\S")
_PROPERTY = re.compile(r"[ \t]*(?:- )?([A-Za-z][\w-]*)::[ \t]*(.*?)[ \t]*$")


def _properties(text: str, title: str | None) -> tuple[str | None, tuple[str, ...]]:
    """Logseq's page properties (``title:: Name``, ``alias:: a, [[b]]`` on the first lines):
    the page's title, and the names it answers to (its aliases, and its title: Logseq names
    a page by its ``title::``)."""
    names: list[str] = []
    for line in text.lstrip("\ufeff").split("\n", 20)[:20]:
        found = _PROPERTY.match(line.rstrip("\r"))
        if found is None:
            break
        key, value = found.group(1).lower(), found.group(2)
        if key == "title" and value:
            title = value
            names.append(value)
        elif key == "alias":
            names += [
                v.strip().removeprefix("[[").removesuffix("]]").strip() for v in value.split(",")
            ]
    return title, tuple(n for n in names if n)


# A title that is a template's placeholder (`# {{title}}`, Templater's `<% tp.file.title %>`,
# Foam's `${TM_FILENAME}`): a template, whose title names no page, so it has no title slug
# and is compared with no other page's title (duplicate-title).
_PLACEHOLDER = re.compile(r"\{\{[^{}]*\}\}|<%.*?%>|\$\{[^{}]*\}")


def _key_line(raw: str, key: str) -> int:
    """The 1-based file line of the top-level ``key:`` in the frontmatter ``raw`` (which starts
    on line 2, after the opening fence); 0 when it is not written plainly."""
    if raw.startswith(key + ":"):
        return 2
    at = raw.find(f"\n{key}:")
    return 0 if at < 0 else 3 + raw.count("\n", 0, at)


def scan_page(data: bytes, *, max_bytes: int = MAX_PAGE_BYTES, dialect: str = "") -> PageScan:
    return PageScan._make(scan_record(data, max_bytes=max_bytes, dialect=dialect))


def sourcing_of(data: bytes, *, max_bytes: int = MAX_PAGE_BYTES) -> Sourcing:
    """Only the provenance part of a page's scan (`PageScan.sourcing`): what the staged
    delta re-reads of a page whose sources changed, without scanning its links."""
    if len(data) > max_bytes or b"\0" in data:
        return ()
    text, _ = decode(data)
    return text_sourcing(text) if text is not None else ()
