"""The offline compile: one deterministic source note per source, no model.

A note has the source's title; an extractive summary (the opening sentences of its first
paragraph of prose); up to five key passages (the paragraphs richest in the source's own
frequent words, in reading order), each with a line citation ``^[name.md:L-L]``; and
``[[links]]`` to the existing pages whose titles or aliases the source mentions. The same
source always gives the same note, byte for byte.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import yaml

from ..terms import KEYWORD_STOPWORDS
from ..wiki.generated import index_path, log_path
from ..wiki.model import Page, Wiki
from ..wiki.provenance import stamp
from ..wiki.slug import parse_target
from .plan import Repairs
from .sources import Source, clean, clean_counted, unlink

PROMPT = "source-note/1"  # the version of this note's recipe, recorded as Llmwiki-Prompt
MODEL = "offline/source-notes"
KIND = "source-note"  # the note's frontmatter `kind`
MAX_PASSAGES = 5
MAX_PASSAGE_CHARS = 300
MAX_SUMMARY_CHARS = 400
MAX_LINKS = 20
_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_SETEXT = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
# Text a reader does not keep as a summary or a key passage: licences and copyright notices,
# a manual's navigation ("Next: … Up: …"), tables of contents (dot leaders), bare URLs.
_BOILERPLATE = re.compile(
    r"copyright|\(c\)\s*\d{4}|©|all rights reserved|redistribute it|permission is granted"
    r"|licensed under|^(?:next|previous|prev|up|contents|table of contents)\b\s*:?"
    r"|(?:\.\s*){4,}\d|^\W*(?:<?https?://\S+>?\W*)+$",
    re.IGNORECASE,
)
_ENDS_SENTENCE = re.compile(r"[.!?:][\"')\]*_`]*$")
_REFERENCE = re.compile(r"^\[[^\]]+\]:\s")  # a link reference definition: `[1]: https://…`
_MARKER = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|>\s*)+")


@dataclass(frozen=True)
class Block:
    """A paragraph or list item of a source: its text and first and last line (1-based)."""

    text: str
    start: int
    end: int
    prose: bool  # a paragraph (not a list item or a quote)


def blocks(source: Source) -> list[Block]:
    """The source's readable blocks after its frontmatter: paragraphs and list items, without
    headings, fenced code, tables, HTML and link-reference lines."""
    found: list[Block] = []
    lines = source.lines
    current: list[tuple[int, str]] = []
    prose = True
    fence: str | None = None

    def flush() -> None:
        nonlocal current
        if current:
            text = " ".join(_MARKER.sub("", line).strip() for _, line in current).strip()
            if text:
                found.append(Block(text, current[0][0], current[-1][0], prose))
        current = []

    for number in range(source.body_start, len(lines) + 1):
        line = lines[number - 1]
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            flush()
            fence = stripped[:3]
            continue
        if _SETEXT.match(line) and current:  # the paragraph above was a heading
            current = []
            continue
        if (
            not stripped
            or stripped.startswith(("#", "|", "<", "---", "***", "==="))
            or _REFERENCE.match(stripped)
            or (line.startswith("    ") and not current)  # code cannot interrupt a paragraph
        ):
            flush()
            continue
        item = _MARKER.match(line) is not None
        if item:  # each list item (or quote line run) is a block of its own
            flush()
            prose = False
        elif not current:
            prose = True
        current.append((number, line))
    flush()
    return found


def _words(text: str) -> list[str]:
    return [
        w
        for w in _WORD.findall(text.casefold())
        if len(w) > 2 and not w.isdigit() and w not in KEYWORD_STOPWORDS
    ]


def _cut(text: str, limit: int) -> str:
    """``text`` cut at a sentence end (else a word end) at most ``limit`` characters long."""
    if len(text) <= limit:
        return text
    sentences = _SENTENCE.split(text)
    kept = ""
    for sentence in sentences:
        if len(kept) + len(sentence) + 1 > limit:
            break
        kept = f"{kept} {sentence}".strip()
    if kept:
        return kept
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    if cut.count("`") % 2:  # never leave a code span open
        cut = cut[: cut.rfind("`")].rstrip(",;: ")
    return cut + "…"


def _span(block: Block, kept: str) -> tuple[int, int]:
    """The lines of ``block`` that ``kept`` (a cut of its text) covers."""
    if kept == block.text or block.start == block.end:
        return block.start, block.end
    share = len(kept) / max(len(block.text), 1)
    return block.start, min(
        block.end, block.start + max(0, round(share * (block.end - block.start + 1)) - 1)
    )


def readable(block: Block) -> bool:
    """Whether ``block`` says something a reader keeps: not boilerplate (a licence, a
    copyright line, navigation, a table of contents, a bare URL) and not only images."""
    text, _ = unlink(block.text)
    return len(text.strip()) >= 20 and not _BOILERPLATE.search(text)


def summary_block(found: Sequence[Block]) -> Block | None:
    """The first readable paragraph of prose long enough to say something (else the first
    readable block, else the first block)."""
    good = [b for b in found if readable(b)]
    return next(
        (b for b in good if b.prose and len(b.text) >= 40),
        good[0] if good else (found[0] if found else None),
    )


def key_passages(
    found: Sequence[Block], skip: Block | None, limit: int = MAX_PASSAGES
) -> list[Block]:
    """The ``limit`` blocks richest in the source's own frequent words (each distinct word
    counted once per block, weighted by its frequency in the source; paragraphs before list
    items, short lines left out), in reading order."""
    counts = Counter(w for b in found for w in _words(b.text))
    scored = []
    for index, block in enumerate(found):
        if block is skip or len(block.text) < 40 or not readable(block):
            continue
        distinct = set(_words(block.text))
        score = (
            sum(counts[w] for w in distinct)
            / (1 + len(block.text) / 400)
            * (1.0 if block.prose else 0.7)
            * (1.0 if _ENDS_SENTENCE.search(block.text) else 0.5)  # a whole sentence first
        )
        scored.append((-score, index, block))
    best = sorted(scored)[:limit]
    return [block for _, _, block in sorted(best, key=lambda item: item[1])]


MAX_NAME_WORDS = 12  # a longer title or alias is not looked for in a source


@dataclass(frozen=True)
class Names:
    """Every page's title, file name and aliases as word tuples -> the pages answering to
    each (by path), and the lengths in words that occur, longest first."""

    pages: dict[tuple[str, ...], list[Page]]
    lengths: tuple[int, ...]


def name_table(wiki: Wiki, project_prefix: str) -> Names:
    """The names of a wiki (made once per run: a wiki of 10,000 pages has some 30,000). The
    generated table of contents and the journal are never linked: they are never evidence."""
    skip = {index_path(wiki.root_dir), log_path(project_prefix)}
    pages: dict[tuple[str, ...], list[Page]] = {}
    for page in wiki.pages:
        if page.path in skip:
            continue
        stem = re.sub(r"[-_.]+", " ", page.stem)  # a vault's note is titled by its file name
        for name in (page.scan.title, stem, *page.scan.aliases):
            tokens = tuple(_WORD.findall((name or "").casefold()))
            if (
                not tokens
                or len(tokens) > MAX_NAME_WORDS
                or len("".join(tokens)) < 3
                or (len(tokens) == 1 and tokens[0] in KEYWORD_STOPWORDS)
            ):
                continue
            found = pages.setdefault(tokens, [])
            if page not in found:
                found.append(page)
    for found in pages.values():
        found.sort(key=lambda p: p.path)
    return Names(pages, tuple(sorted({len(t) for t in pages}, reverse=True)))


def mentioned_pages(
    source: Source, wiki: Wiki, exclude: Iterable[str] = (), names: Names | None = None
) -> list[tuple[str, Page]]:
    """(link text, page) for each existing page whose title, file name or an alias the
    source's text mentions (whole words, any case; the longest name at a mention), by first
    mention; the link text resolves to that page. ``names`` is :func:`name_table` of ``wiki``
    (made here when not given)."""
    names = name_table(wiki, source.project_prefix) if names is None else names
    skip = set(exclude)
    words = _WORD.findall(source.body.casefold())
    first: dict[str, tuple[int, Page]] = {}
    position = 0
    while position < len(words):
        step = 1
        for length in names.lengths:  # a few dict lookups a word, whatever the wiki's size
            hit = [
                p
                for p in names.pages.get(tuple(words[position : position + length]), ())
                if p.path not in skip
            ]
            if hit:
                first.setdefault(hit[0].path, (position, hit[0]))
                step = length  # "daily notes" is one mention, not also one of "daily"
                break
        position += step
    found = []
    for _, page in sorted(first.values(), key=lambda item: (item[0], item[1].path)):
        link = link_text(wiki, page)
        if link is not None:
            found.append((link, page))
    return found[:MAX_LINKS]


def link_text(wiki: Wiki, page: Page) -> str | None:
    """What to write inside ``[[…]]`` to reach ``page``: its file name when that resolves to
    it, else its id (a path-style link); None when neither does."""
    for text in (page.stem, page.id):
        found = wiki.resolve(parse_target(text)).page
        if found is not None and found.path == page.path:
            return text
    return None


def note(
    source: Source,
    wiki: Wiki,
    own_path: str | None = None,
    names: Names | None = None,
    repairs: Repairs | None = None,
) -> str:
    """The source note of ``source`` (a whole page: frontmatter and body). ``own_path`` is
    where it goes (never linked from itself); ``names`` the run's :func:`name_table`;
    ``repairs`` counts what quoting took out of the source's text."""
    found = blocks(source)
    first = summary_block(found)
    summary = _cut(first.text, MAX_SUMMARY_CHARS) if first is not None else ""
    stripped = 0

    def quoted(text: str) -> str:
        nonlocal stripped
        text, taken = clean_counted(text)
        stripped += taken
        return text

    meta = {
        "title": source.title,
        "summary": clean(_cut(summary, 120)) if summary else source.title,
        "kind": KIND,
    }
    parts = []
    if first is not None:
        parts.append(f"{quoted(summary)} {source.cite(*_span(first, summary))}")
    passages = key_passages(found, first)
    if passages:
        parts.append("## Key passages")
        items = []
        for block in passages:
            kept = _cut(block.text, MAX_PASSAGE_CHARS)
            items.append(f"- {quoted(kept)} {source.cite(*_span(block, kept))}")
        parts.append("\n".join(items))
    links = mentioned_pages(source, wiki, [own_path] if own_path else [], names)
    if links:
        parts.append("## Related pages")
        parts.append("\n".join(f"- [[{link}]]" for link, _ in links))
    if repairs is not None:
        repairs.text_stripped += stripped
        repairs.uncited = first is None and not passages
    head = yaml.safe_dump(
        meta, sort_keys=False, allow_unicode=True, width=10**6, default_flow_style=False
    )
    return stamp(
        f"---\n{head}---\n\n" + "\n\n".join(parts) + "\n",
        [(source.path, source.blob)],
        source.project_prefix,
    )
