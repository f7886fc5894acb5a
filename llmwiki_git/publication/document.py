"""The saved-answer page: slug, canonical document, summary, the index entry and log lines."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import yaml

from ..wiki.slug import slugify

MAX_SLUG = 80
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def query_slug(question: str) -> str:
    """``slugify(question)``, cut at a dash to at most 80 chars; a question with no letters or
    digits (only punctuation or emoji) gets ``query``."""
    slug = slugify(question)
    if len(slug) > MAX_SLUG:
        slug = slug[:MAX_SLUG].rsplit("-", 1)[0] or slug[:MAX_SLUG]
    return slug or "query"


def summarize(answer: str) -> str:
    """First line of the answer, cut at its first sentence end, at most 120 chars."""
    first = answer.strip().splitlines()[0] if answer.strip() else ""
    end = _SENTENCE_END.search(first)
    if end:
        first = first[: end.end()]
    return first if len(first) <= 120 else first[:119].rstrip() + "…"


def now_iso(ms: bool = True) -> str:
    now = datetime.now(timezone.utc)
    if ms:
        return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def render_page(question: str, answer: str, created_at: str) -> str:
    """The canonical document: exactly title, summary, type, createdAt, then the answer."""
    meta = {"title": question, "summary": summarize(answer), "type": "query", "createdAt": created_at}
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=10**6, default_style=None)
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
