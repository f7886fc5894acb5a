"""The saved-answer page: slug, canonical document, summary, the index entry and log lines."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import yaml

from ..wiki.slug import slugify

MAX_SLUG = 80
MAX_SUMMARY = 120
MAX_TITLE = 200  # a 10,000-character question is still the commit message, not the page title
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
# What a cut never falls inside: a wikilink, a markdown link, inline code.
_WHOLE = re.compile(r"!?\[\[[^\]\n]*\]\]|!?\[[^\]\n]*\]\([^)\n]*\)|`[^`\n]*`")


def query_slug(question: str) -> str:
    """``slugify(question)``, cut at a dash to at most 80 chars; a question with no letters or
    digits (only punctuation or emoji) gets ``query``."""
    slug = slugify(question)
    if len(slug) > MAX_SLUG:
        slug = slug[:MAX_SLUG].rsplit("-", 1)[0] or slug[:MAX_SLUG]
    return slug or "query"


def shorten(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: whole, or cut at a space outside any link
    or inline code and ended with "…" (never ``… [[capture-not…``)."""
    if len(text) <= limit:
        return text
    inside = [m.span() for m in _WHOLE.finditer(text)]
    cuts = [
        i
        for i in range(limit - 1, 0, -1)
        if text[i] == " " and not any(a < i < b for a, b in inside)
    ]
    cut = cuts[0] if cuts else 0
    if cut == 0:  # one unbroken word or link longer than the limit: cut before it
        first = inside[0][0] if inside and inside[0][0] < limit else limit - 1
        cut = first
    return text[:cut].rstrip() + "…"


def summarize(answer: str) -> str:
    """First line of the answer, cut at its first sentence end (outside links and code), at
    most 120 chars (see `shorten`)."""
    first = answer.strip().splitlines()[0] if answer.strip() else ""
    inside = [m.span() for m in _WHOLE.finditer(first)]
    end = next(
        (m for m in _SENTENCE_END.finditer(first) if not any(a < m.start() < b for a, b in inside)),
        None,
    )
    if end:
        first = first[: end.end()]
    return shorten(first, MAX_SUMMARY)


def page_title(question: str) -> str:
    """The saved page's title: the question on one line, at most 200 characters."""
    return shorten(" ".join(question.split()), MAX_TITLE)


def now_iso(ms: bool = True) -> str:
    now = datetime.now(timezone.utc)
    if ms:
        return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def render_page(question: str, answer: str, created_at: str) -> str:
    """The canonical document: exactly title, summary, type, createdAt, then the answer."""
    meta = {
        "title": page_title(question),
        "summary": summarize(answer),
        "type": "query",
        "createdAt": created_at,
    }
    head = yaml.safe_dump(
        meta, sort_keys=False, allow_unicode=True, width=10**6, default_style=None
    )
    return f"---\n{head}---\n\n{answer.strip()}\n"


def log_entry(operation: str, description: str, details: list[str]) -> str:
    """One ``log.md`` entry: ``## [ISO] op | description`` plus ``- detail`` lines."""
    text = " ".join(description.split())
    if len(text) > 200:
        text = text[:199] + "…"
    lines = [f"## [{now_iso(ms=False)}] {operation} | {text}"] + [f"- {d}" for d in details]
    return "\n".join(lines) + "\n\n"


def page_list(page_ids: list[str], limit: int = 20) -> str:
    shown = ", ".join(f"[[{p}]]" for p in page_ids[:limit])
    return shown + (f", … (+{len(page_ids) - limit} more)" if len(page_ids) > limit else "")
