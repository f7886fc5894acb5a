"""Reading one page's bytes into what the link model needs: title, aliases, links, issues."""

from __future__ import annotations

from dataclasses import dataclass

from . import frontmatter
from .scanner import Anchors, Occurrence, scan_anchors, scan_links

MAX_PAGE_BYTES = 8 * 1024 * 1024
"""Pages larger than this are still pages (links to them resolve) but are not scanned."""


@dataclass(frozen=True)
class Issue:
    """Something wrong with a page as a file, found while reading it."""

    code: str
    message: str
    line: int = 1


@dataclass(frozen=True)
class PageScan:
    """The parts of a page the link model uses; cached by blob id (see scancache)."""

    title: str | None
    aliases: tuple[str, ...]
    links: tuple[Occurrence, ...]
    body_line: int
    issues: tuple[Issue, ...]

    def to_record(self) -> tuple:
        return (
            self.title,
            self.aliases,
            tuple(tuple(o) for o in self.links),
            self.body_line,
            tuple((i.code, i.message, i.line) for i in self.issues),
        )

    @classmethod
    def from_record(cls, record: tuple) -> PageScan:
        title, aliases, links, body_line, issues = record
        return cls(
            title,
            tuple(aliases),
            tuple(Occurrence(*o) for o in links),
            body_line,
            tuple(Issue(*i) for i in issues),
        )


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


def scan_page(data: bytes, *, max_bytes: int = MAX_PAGE_BYTES) -> PageScan:
    if len(data) > max_bytes:
        size_mb = len(data) / (1024 * 1024)
        return PageScan(
            None,
            (),
            (),
            0,
            (Issue("page-too-large", f"{size_mb:.1f} MB is over the {max_bytes // (1024 * 1024)} MB limit; not scanned"),),
        )
    text, issues = decode(data)
    if text is None:
        return PageScan(None, (), (), 0, tuple(issues))
    meta = frontmatter.parse(text)
    if meta.error:
        issues.append(Issue("malformed-frontmatter", meta.error, meta.error_line or 1))
    title = meta.data.get("title")
    return PageScan(
        title=title if isinstance(title, str) else None,
        aliases=tuple(frontmatter.string_list(meta.data.get("aliases"))),
        links=tuple(scan_links(text, meta.body_line)),
        body_line=meta.body_line,
        issues=tuple(issues),
    )


def page_anchors(data: bytes, body_line: int) -> Anchors:
    text, _ = decode(data)
    if text is None or len(data) > MAX_PAGE_BYTES:
        return Anchors(frozenset(), frozenset())
    return scan_anchors(text, body_line)
