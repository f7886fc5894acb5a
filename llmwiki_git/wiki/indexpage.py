"""``wiki/index.md``: the generated table of contents (the reference tool's format)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..wording import plural

if TYPE_CHECKING:
    from .model import Wiki

_LINK = re.compile(r"\[\[([^\[\]|]*)(?:\|([^\[\]]*))?\]\]")  # no "[" inside: linear on a run of "["
_FOOTER = re.compile(r"^_\d+ pages? \| Generated .*_$", re.MULTILINE)


@dataclass(frozen=True)
class Entry:
    slug: str
    title: str
    summary: str
    kind: str  # concept | query


def _plain(summary: str) -> str:
    """One line; a labelled link reads as its label, a bare ``[[target]]`` stays a link (never
    a flattened slug word in the prose)."""
    return (
        _LINK.sub(lambda m: m.group(2).strip() if m.group(2) else m.group(0), summary)
        .replace("\n", " ")
        .strip()
    )


def render(entries: Sequence[Entry], generated_at: str) -> str:
    def section(title: str, kind: str) -> list[str]:
        items = sorted(
            (e for e in entries if e.kind == kind), key=lambda e: (e.title.casefold(), e.slug)
        )
        lines = ["", f"## {title}", ""]
        for e in items:
            line = f"- **[[{e.slug}|{e.title}]]**"
            lines.append(f"{line} — {_plain(e.summary)}" if e.summary else line)
        return lines

    lines = ["# Knowledge Wiki", *section("Concepts", "concept")]
    if any(e.kind == "query" for e in entries):
        lines += section("Saved Queries", "query")
    lines += ["", f"_{plural(len(entries), 'page')} | Generated {generated_at}_", ""]
    return "\n".join(lines)


def same_content(old: str, new: str) -> bool:
    """Equal but for the generated-at footer (so an unchanged wiki is not rewritten)."""
    return _FOOTER.sub("", old) == _FOOTER.sub("", new)


def entries_of(
    wiki: Wiki,
    overrides: dict[str, str] | None = None,
    known: Mapping[str, tuple[object, object]] | None = None,
) -> list[Entry]:
    """Index entries for the concept and query pages of ``wiki`` (titles by convention,
    ``titles.page_title``; summaries from their frontmatter); ``overrides`` maps a path to
    text that replaces the file's; ``known`` a path to its (title, summary), already read
    (`llmwiki index` read every page: reading and parsing 10,000 again cost it 0.3 s)."""
    from .frontmatter import parse
    from .pages import decode
    from .snapshots import SourceFile
    from .titles import page_title

    overrides = overrides or {}
    known = known or {}
    wanted = [p for p in wiki.pages if p.kind in ("concept", "query")]
    data = wiki.read(
        [
            SourceFile(p.path, p.blob)
            for p in wanted
            if p.path not in overrides and p.path not in known
        ]
    )
    entries = []
    for page in wanted:
        if page.path in known and page.path not in overrides:
            title, summary = known[page.path]
            entries.append(
                Entry(
                    page.stem,
                    title if isinstance(title, str) else page.stem,
                    summary if isinstance(summary, str) else "",
                    page.kind,
                )
            )
            continue
        raw = overrides.get(page.path)
        if raw is None:
            blob = data.get(page.path)
            raw = decode(blob)[0] if isinstance(blob, bytes) else None
        parsed = parse(raw) if raw else None
        meta = parsed.data if parsed else {}
        title = page_title(meta, raw[parsed.body_offset :] if raw and parsed else "", page.stem)
        summary = meta.get("summary")
        summary = summary if isinstance(summary, str) else ""
        entries.append(Entry(page.stem, title, summary, page.kind))
    return entries


_ENTRY = re.compile(r"- \*\*\[\[([^\[\]|]*)\|(.*)\]\]\*\*(?: — (.*))?")
_SECTIONS = {"## Concepts": "concept", "## Saved Queries": "query"}
_GENERATED = re.compile(r"_\d+ pages? \| Generated (.*)_")


def parsed_entries(text: str) -> list[Entry] | None:
    """The entries of a table of contents `render` wrote (summaries as it prints them), or
    None when ``text`` is anything else: it must render back to itself byte for byte."""
    entries: list[Entry] = []
    kind = None
    generated_at = None
    for line in text.split("\n"):
        if line in _SECTIONS:
            kind = _SECTIONS[line]
            continue
        entry = _ENTRY.fullmatch(line)
        if entry is not None and kind is not None:
            slug, title, summary = entry.groups()
            entries.append(Entry(slug, title, summary or "", kind))
            continue
        footer = _GENERATED.fullmatch(line)
        if footer is not None:
            generated_at = footer.group(1)
    if generated_at is None or render(entries, generated_at) != text:
        return None
    return entries


def moved_entries(
    text: str, gone: Sequence[Entry], added: Sequence[Entry], generated_at: str
) -> str | None:
    """The table of contents ``text`` (as `render` wrote it) with the entries ``gone`` taken
    out and ``added`` put in, rendered at ``generated_at``; None when ``text`` is not such a
    table or lacks one of ``gone`` (it is then rendered from every page instead). A move
    changes a few entries: rendering all of them reads every page (issue 39)."""
    entries = parsed_entries(text)
    if entries is None:
        return None
    for entry in gone:
        shown = Entry(entry.slug, entry.title, _plain(entry.summary), entry.kind)
        if shown not in entries:
            return None
        entries.remove(shown)
    return render([*entries, *added], generated_at)
