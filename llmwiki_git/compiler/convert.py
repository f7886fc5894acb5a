"""What ``llmwiki ingest`` makes of a file: markdown and plain text as they are, HTML
converted to markdown, PDF to text.

The two converters are libraries of the optional ``ingest`` extra (``pip install '.[ingest]'``
in a clone; no release is published), imported only when a file needs them; markdown and text need
nothing. They were chosen by measurement (docs/compile.md, "Why these libraries"):

- HTML: ``markdownify`` over ``BeautifulSoup`` (both MIT, pure-Python wheels for every
  platform, an API stable for years, among the most downloaded packages). On 46 real HTML
  pages (1.6 MB) it was 8x slower than the Rust-backed ``html-to-markdown`` (1.6 s against
  0.2 s) with the same text, but that one is a 22 MB native wheel whose API changed shape in
  its 3.x series; 35 ms per page does not matter to a command run by hand. ``html2text`` is
  GPL-3.0, which an MIT package should not pull in.
- PDF: ``pypdf`` (BSD, pure Python, no dependencies), twice as fast as ``pdfminer.six`` on
  the same files for the same text.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ..errors import InputRefused, MissingDependency, install_hint

#: Largest input file read (a PDF of a few hundred pages fits); larger ones are refused.
MAX_INPUT_BYTES = 32 * 1024 * 1024
#: Longest source text kept (the reference tool's limit); past it the text is cut at a line
#: end and the source's frontmatter says ``truncated: true`` with the ``originalChars``.
MAX_SOURCE_CHARS = 100_000
INSTALL_HINT = install_hint("ingest")

MARKDOWN_EXTS = frozenset({".md", ".markdown", ".mdown", ".mkd"})
HTML_EXTS = frozenset({".html", ".htm", ".xhtml"})
# Whole elements that carry no reading text (scripts, styles, embedded images and widgets).
_DROPPED_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "head",
    "iframe",
    "object",
    "embed",
    "canvas",
    "button",
    "form",
    "select",
)
# Control characters a converter may leave (form feeds between PDF pages, stray escapes):
# never kept in converted text. Tab and newline are.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Every control character a source never keeps, whatever its type: C0 but tab, newline and
# carriage return, DEL, and C1 (U+0080-U+009F, from text, HTML entities like &#144; or PDF
# text). One such character once made every later compile refuse (issue 34).
_ANY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
#: The link schemes an HTML source keeps (a relative link has none); any other target
#: (``javascript:``, ``data:``, ``vbscript:``, ``file:``…) is dropped, its text kept.
SAFE_SCHEMES = frozenset({"http", "https"})
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")
_NOT_IN_URL = re.compile(r"[\x00-\x20\x7f-\x9f]")
_BLANK_RUNS = re.compile(r"\n{3,}")
_TRAILING = re.compile(r"[ \t]+\n")


@dataclass(frozen=True)
class Converted:
    """A file as a source: its ``text`` (markdown or plain text), its ``kind`` (markdown,
    text, html, pdf), a ``title`` when the file names one, and the frontmatter a markdown
    file already had (kept)."""

    text: str
    kind: str
    title: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    stripped: int = 0  # control characters removed (the ingest summary says so)


def kind_of(name: str, data: bytes) -> str:
    """``pdf`` by its signature, ``html`` by extension or a leading ``<!doctype html`` /
    ``<html``, ``markdown`` by extension, else ``text``."""
    suffix = PurePosixPath(name.replace("\\", "/")).suffix.lower()
    if data[:1024].lstrip().startswith(b"%PDF-"):
        return "pdf"
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if suffix in HTML_EXTS or head.startswith((b"<!doctype html", b"<html")):
        return "html"
    return "markdown" if suffix in MARKDOWN_EXTS else "text"


def convert(name: str, data: bytes) -> Converted:
    """The source text of the file ``name`` holding ``data``; InputRefused when it is empty,
    binary or yields no text, MissingDependency when its converter is not installed."""
    if not data.strip():
        raise InputRefused(name, "is empty; nothing to ingest")
    kind = kind_of(name, data)
    if kind == "pdf":
        converted = _pdf(name, data)
    elif kind == "html":
        converted = _html(name, data)
    else:
        converted = _plain(name, data, kind)
    text, stripped = _ANY_CONTROL.subn("", converted.text)
    title = _ANY_CONTROL.sub("", converted.title) if converted.title else converted.title
    if not text.strip():
        raise InputRefused(
            name,
            f"has no text to ingest (an empty {kind} file, or a scanned PDF without a text layer)",
        )
    return Converted(text, converted.kind, title, converted.meta, stripped)


def _decode(name: str, data: bytes) -> str:
    if b"\0" in data:
        raise InputRefused(
            name,
            "is a binary file (it contains NUL bytes); ingest takes markdown, text, HTML and PDF",
            hint="convert it to one of those first",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputRefused(
            name,
            f"is not UTF-8 text (byte {exc.start}, line {line}); ingest takes markdown, text, "
            "HTML and PDF",
            hint="save it as UTF-8 (iconv -t UTF-8), then ingest it",
        ) from None


def _plain(name: str, data: bytes, kind: str) -> Converted:
    """Markdown and text as they are; a markdown file's own frontmatter is kept (merged with
    the source's), its body untouched."""
    text = _decode(name, data)
    if kind != "markdown":
        return Converted(text, kind)
    from ..wiki import frontmatter

    text = text.replace("\r\n", "\n").lstrip("\n")  # a frontmatter after blank lines is one too
    meta = frontmatter.parse(text)
    if meta.raw is None:
        return Converted(text, kind, _first_heading(text))
    body = text[meta.body_offset :]
    if meta.error:  # kept as text in the source's frontmatter, never as a second block
        return Converted(body, kind, _first_heading(body), {"originalFrontmatter": meta.raw})
    title = meta.data.get("title")
    return Converted(
        body,
        kind,
        title.strip() if isinstance(title, str) and title.strip() else _first_heading(body),
        dict(meta.data),
    )


_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_SETEXT_H1 = re.compile(r"^ {0,3}(\S[^\n]*?)[ \t]*\n {0,3}=+[ \t]*$", re.MULTILINE)
_NOT_A_TITLE = re.compile(r"copyright|©|\(c\)\s*\d{4}|^\W*$|^!?\[|^<|^https?://", re.IGNORECASE)


def _first_heading(text: str) -> str | None:
    """The first level-1 heading, ATX (``# Title``) or setext (``Title`` over ``=====``),
    whichever comes first."""
    found = [m for m in (_ATX_H1.search(text), _SETEXT_H1.search(text)) if m is not None]
    if not found:
        return None
    first = min(found, key=lambda m: m.start())
    return _plain_title(first.group(1)) or None


def _plain_title(text: str) -> str:
    """A heading's text without markup: images as their alt text, links as their text, no
    emphasis or code marks."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[*_`]+", "", text).strip()


def first_line_title(text: str) -> str | None:
    """A title when the document names none: its first short line that is no copyright
    notice, image, markup or bare URL (what a reader sees first)."""
    for line in text.splitlines()[:40]:
        line = line.strip()
        if not line or _NOT_A_TITLE.search(line):
            continue
        line = _plain_title(line.strip("# "))
        if len(line) > 60:  # a sentence: its opening words up to the first comma or stop
            stop = re.search(r"[,.;:](?:\s|$)", line)
            line = (
                line[: stop.start()]
                if stop is not None and stop.start() <= 60
                else line[:60].rsplit(" ", 1)[0] + "…"
            )
        if len(line) >= 3:
            return line
    return None


def tidy(text: str) -> str:
    """Converted text without control characters, trailing blanks or runs of blank lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub(lambda m: "\n\n" if m.group() == "\x0c" else "", text)
    text = _TRAILING.sub("\n", text)
    return _BLANK_RUNS.sub("\n\n", text).strip("\n") + "\n"


def _html(name: str, data: bytes) -> Converted:
    if b"\0" in data:
        _decode(name, data)  # raises: binary
    try:
        from bs4 import BeautifulSoup
        from markdownify import MarkdownConverter
    except ImportError as exc:
        raise MissingDependency(
            f"ingesting HTML ({name}) needs markdownify and beautifulsoup4, which the base "
            "install does not include",
            hint=INSTALL_HINT,
        ) from exc
    # Bytes in: BeautifulSoup finds the encoding (BOM, <meta charset>, else a guess).
    soup = BeautifulSoup(data, "html.parser")
    title_tag = soup.title
    title = title_tag.get_text(" ", strip=True) if title_tag is not None else ""
    for tag in soup(_DROPPED_TAGS):
        tag.decompose()
    from bs4 import Comment, Declaration, Doctype, ProcessingInstruction

    for node in soup.find_all(
        string=lambda s: isinstance(s, (Comment, Declaration, Doctype, ProcessingInstruction))
    ):
        node.extract()  # `<?xml version…?>`, `<!DOCTYPE…>`, comments: no reading text
    for image in soup.find_all("img"):
        if _scheme(str(image.get("src") or "")) not in (None, *SAFE_SCHEMES):
            image.decompose()  # inline images as base64: kilobytes of noise in a text source
    for anchor in soup.find_all(["a", "area"]):
        if _scheme(str(anchor.get("href") or "")) not in (None, *SAFE_SCHEMES):
            del anchor["href"]  # `javascript:`, `data:text/html`…: the text stays, never a link
    markdown = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    text = tidy(markdown)
    return Converted(text, "html", title or _first_heading(text))


def _scheme(url: str) -> str | None:
    """The scheme of a link target as a browser reads it (entities are decoded by the parser
    already; whitespace and control characters inside it ignored, any case), None for a
    relative link."""
    found = _SCHEME.match(_NOT_IN_URL.sub("", url).lower())
    return found.group(1) if found else None


def _pdf(name: str, data: bytes) -> Converted:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as exc:
        raise MissingDependency(
            f"ingesting PDF ({name}) needs pypdf, which the base install does not include",
            hint=INSTALL_HINT,
        ) from exc
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise InputRefused(
                name,
                "is an encrypted PDF; ingest cannot read it",
                hint="save an unencrypted copy (or print it to PDF), then ingest that",
            )
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        info = reader.metadata
        title = info.title if info is not None else None
    except InputRefused:
        raise
    except (
        PyPdfError,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        IndexError,
        OSError,
        RecursionError,
    ) as exc:
        # pypdf reports a damaged file with many exception types: each is "not a readable PDF"
        raise InputRefused(
            name, f"is not a readable PDF ({exc.__class__.__name__}: {exc})"
        ) from None
    text = tidy("\n\n".join(p for p in without_running_lines(pages) if p))
    return Converted(
        text, "pdf", title.strip() if isinstance(title, str) and title.strip() else None
    )


_PAGE_NUMBER = re.compile(r"^\s*(?:page\s+)?[ivxlcdm\d]{1,6}(?:\s*(?:of|/)\s*\d+)?\s*$", re.I)
# A texinfo/LaTeX running header: "Chapter 3: Utilities 6", "Appendix A: Copying 41".
_RUNNING_HEAD = re.compile(
    r"^\s*(?:chapter|section|appendix|part)\s+[\w.]+\s*:?.*\s\d{1,4}\s*$|^\s*\d{1,4}\s+\S.*$",
    re.IGNORECASE,
)
_HYPHENATED = re.compile(r"(?<=[a-z])-\n(?=[a-z])")


def without_running_lines(pages: list[str]) -> list[str]:
    """PDF pages' text without what a printed page repeats: a first or last line that recurs
    (digits aside) on several pages -- running headers and footers, "Chapter 3: Utilities 6"
    -- and lines that are only a page number; and with line-end hyphenation joined
    ("expan-\nsion" -> "expansion")."""
    split = [page.splitlines() for page in pages]

    def key(line: str) -> str:
        return re.sub(r"\d+", "#", line.strip().casefold())

    edges: dict[str, int] = {}
    for lines in split:
        for line in {key(lines[0]), key(lines[-1])} if lines else set():
            edges[line] = edges.get(line, 0) + 1
    repeated = {k for k, n in edges.items() if k and n >= max(3, len(pages) // 4)}
    kept = []
    for lines in split:
        if len(lines) > 3 and len(lines[0]) < 80 and _RUNNING_HEAD.match(lines[0]):
            lines = lines[1:]  # only the page's first line reads as a running header
        while lines and (key(lines[0]) in repeated or _PAGE_NUMBER.match(lines[0])):
            lines = lines[1:]
        while lines and (key(lines[-1]) in repeated or _PAGE_NUMBER.match(lines[-1])):
            lines = lines[:-1]
        kept.append(_HYPHENATED.sub("", "\n".join(lines)))
    return kept
