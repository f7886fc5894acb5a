"""`llmwiki context`: the evidence pack (v1 envelope of the reference tool) without an answer.

Ranking comes from the hybrid search (not the reference tool's substring search); graph
neighbours and dangling-link gaps come from the link graph recorded in the store at index
time; chunk text and freshness come from the live page files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SourceRefused
from ..terms import tokenize
from ..wiki import frontmatter
from ..wiki.provenance import claims
from ..wiki.slug import slugify
from . import sources as src
from .chunking import live_chunks
from .pagetable import PageEntry
from .search import ChunkHit, SearchResult
from .store import Store

VERSION = 1
PROMPT_LIMIT = 1024
MAX_NEIGHBORS = 20


@dataclass
class ContextOptions:
    budget: int = 8000
    depth: int = 1
    top_pages: int = 5
    top_chunks: int = 8
    include_sources: bool = False
    omit_root: bool = False


@dataclass
class LivePage:
    text: str | None
    blob: str | None
    missing: bool = False  # the file is gone (deleted since the listing): left out silently
    why: str = "could not be read"  # said in the warning when ``text`` is None


@dataclass
class PackInputs:
    prompt: str
    store: Store
    result: SearchResult
    read_page: Callable[[PageEntry], LivePage]
    sources_root: Path
    project_root: Path
    warnings: list[dict[str, str]] = field(default_factory=list)
    pending_candidates: int = 0
    #: Filled in by `build_pack`: each primary page's text as read (page id -> text), whose
    #: provenance the retrieval service judges against the sources at HEAD (``sourceFreshness``).
    texts: dict[str, str] = field(default_factory=dict)


def _estimate(pack: dict[str, Any]) -> int:
    return math.ceil(len(json.dumps(pack, ensure_ascii=False, separators=(",", ":"))) / 4)


def _reasons(entry: PageEntry, prompt: str, hits: list[ChunkHit]) -> list[str]:
    reasons = set()
    if any(h.cosine is not None for h in hits):
        reasons.add("semantic-chunk")
    if any(h.bm25 > 0 for h in hits):
        reasons.add("body-match")
    tokens = tokenize(prompt)
    title_tokens = set(tokenize(entry.title))
    if tokens and any(t in title_tokens for t in tokens):
        reasons.add("title-match")
    key = prompt.strip().lower()
    if key and slugify(key) == entry.page_id.rsplit("/", 1)[-1]:
        reasons.add("exact-slug")
    if key and key == entry.title.strip().lower():
        reasons.add("exact-title")
    return sorted(reasons)


@dataclass
class _Budgets:
    """What the primary pages may still take: chunks, and source windows."""

    chunks: int
    windows: int = src.MAX_WINDOWS


def _primary(
    inputs: PackInputs, options: ContextOptions
) -> tuple[list[dict[str, Any]], list[PageEntry]]:
    by_id = inputs.store.by_id()
    hits_by_page: dict[str, list[ChunkHit]] = {}
    for hit in inputs.result.chunks:
        hits_by_page.setdefault(hit.page_id, []).append(hit)
    # The search returns a few more pages than asked: a page that cannot be read gives its
    # place to the next one, so exactly top_pages pages come back whenever that many match.
    best = max((s for _, s in inputs.result.pages), default=0.0) or 1.0
    budgets = _Budgets(options.top_chunks)
    primary: list[dict[str, Any]] = []
    entries: list[PageEntry] = []
    for page_id, page_score in inputs.result.pages:
        if len(primary) >= options.top_pages:
            break
        entry = by_id[page_id]
        live = inputs.read_page(entry)
        if live.text is None:
            if not live.missing:
                inputs.warnings.append(
                    {"code": "page-unreadable", "message": f"{entry.path}: {live.why}; left out"}
                )
            continue
        hits = hits_by_page.get(page_id, [])
        score = round(min(1.0, max(0.0, page_score / best)), 2)
        fresh = live.blob == entry.blob
        primary.append(
            _primary_page(inputs, options, entry, live.text, hits, budgets, score, fresh)
        )
        entries.append(entry)
    return primary, entries


def _primary_page(
    inputs: PackInputs,
    options: ContextOptions,
    entry: PageEntry,
    text: str,
    hits: list[ChunkHit],
    budgets: _Budgets,
    score: float,
    fresh: bool,
) -> dict[str, object]:
    """One primary page of the pack, from its text as read (``fresh``: as indexed)."""
    meta = frontmatter.parse(text)
    body = text[meta.body_offset :]
    page_warnings: list[dict[str, str]] = []
    chunks = _chunks(entry, live_chunks(entry.title, meta.data, body), hits, budgets, page_warnings)
    cites = src.citations(body)
    windows = (
        _windows(inputs.sources_root, cites, budgets, page_warnings)
        if options.include_sources
        else []
    )
    summary = meta.data.get("summary")
    inputs.texts[entry.page_id] = text
    named = claims(meta.data).sources  # provenance: filled in by the retrieval service
    return {
        "id": entry.page_id,
        "title": entry.title,
        "pageDirectory": entry.page_id.rsplit("/", 1)[0] if "/" in entry.page_id else "",
        "score": score,
        "reasons": _reasons(entry, inputs.prompt, hits),
        "summary": summary if isinstance(summary, str) else "",
        "chunks": chunks,
        "citations": [c.to_json() for c in cites],
        "sourceWindows": windows,
        "warnings": page_warnings,
        "freshnessStatus": "fresh" if fresh else "stale",
        "contradicted": False,
        "archived": False,
        "sourceFreshness": {"status": "unknown"},
        **({"sources": [{"path": path} for path in named]} if named else {}),
    }


def _chunks(
    entry: PageEntry,
    live_hashes: dict[str, str],
    hits: list[ChunkHit],
    budgets: _Budgets,
    warnings: list[dict[str, str]],
) -> list[dict[str, object]]:
    """The page's hit chunks as they read now, while the chunk budget lasts; a chunk changed
    since indexing is left out with a warning."""
    chunks: list[dict[str, object]] = []
    for hit in hits:
        if budgets.chunks <= 0:
            break
        chunk_hash = entry.hashes[hit.chunk_index]
        text = live_hashes.get(chunk_hash)
        if text is None:
            warnings.append(
                {
                    "code": "embedding-entry-stale",
                    "message": f"chunk {hit.chunk_index} changed since `llmwiki index`; left out",
                }
            )
            continue
        chunks.append({"text": text, "score": round(hit.score, 4), "contentHash": chunk_hash})
        budgets.chunks -= 1
    return chunks


def _windows(
    sources_root: Path,
    cites: list[src.SourceCitation],
    budgets: _Budgets,
    warnings: list[dict[str, str]],
) -> list[dict[str, object]]:
    """The source lines the page's ranged citations name, while the window budget lasts."""
    windows = []
    for citation in cites:
        if citation.start is None or budgets.windows <= 0:
            continue
        try:
            windows.append(src.window(sources_root, citation))
            budgets.windows -= 1
        except SourceRefused as exc:
            warnings.append({"code": "source-window-unavailable", "message": str(exc)})
    return windows


def _neighbors(store: Store, primaries: list[PageEntry], depth: int) -> list[dict[str, Any]]:
    if depth <= 0 or not primaries:
        return []
    by_id = store.by_id()
    primary_ids = {p.page_id for p in primaries}

    def edges(sources: list[str]) -> dict[str, list[tuple[str, str]]]:
        incoming = store.linked_from(set(sources))
        out: dict[str, list[tuple[str, str]]] = {}
        for source in sources:
            outgoing = [t for t in (by_id[source].links if source in by_id else ()) if t in by_id]
            seen = set(outgoing)
            out[source] = [(t, "outgoing") for t in outgoing] + [
                (s, "incoming") for s in sorted(incoming.get(source, ())) if s not in seen
            ]
        return out

    found: dict[str, dict[str, Any]] = {}
    first_edges = edges([p.page_id for p in primaries])
    for primary in primaries:
        for other, direction in first_edges[primary.page_id]:
            if other in primary_ids:
                continue
            if other in found:
                found[other]["_links"] += 1
                continue
            found[other] = {
                "from": primary.page_id,
                "to": other,
                "direction": direction,
                "distance": 1,
                "score": 0.5,
                "reason": "wikilink",
                "_links": 1,
            }
    if depth >= 2:
        firsts = [n["to"] for n in list(found.values())[:MAX_NEIGHBORS]]
        second_edges = edges(firsts)
        for first in firsts:
            for other, direction in second_edges[first]:
                if other in primary_ids or other in found:
                    continue
                found[other] = {
                    "from": first,
                    "to": other,
                    "direction": direction,
                    "distance": 2,
                    "score": 0.25,
                    "reason": "wikilink",
                    "_links": 1,
                }
    out = []
    for item in found.values():
        extra = min(3, item.pop("_links") - 1)
        item["score"] = round(min(1.0, item["score"] + 0.05 * extra), 2)
        out.append(item)
    out.sort(key=lambda n: (-n["score"], n["to"]))
    return out[:MAX_NEIGHBORS]


def build_pack(inputs: PackInputs, options: ContextOptions) -> dict[str, Any]:
    prompt = inputs.prompt
    warnings = inputs.warnings
    if len(prompt) > PROMPT_LIMIT:
        warnings.append(
            {
                "code": "truncated-prompt",
                "message": f"prompt truncated to {PROMPT_LIMIT} characters",
            }
        )
        prompt = prompt[:PROMPT_LIMIT]
    warnings.extend(inputs.result.warnings)
    primary, entries = _primary(inputs, options)
    gaps = [
        {
            "code": "dangling-link",
            "message": f"Page links to [[{target}]], but no page exists.",
            "pageId": e.page_id,
        }
        for e in entries
        for target in e.dangling
    ]
    actions = _actions(prompt, warnings, bool(gaps))
    pack: dict[str, Any] = {
        "version": VERSION,
        "prompt": prompt,
        "budget": {
            "requestedTokens": options.budget,
            "estimatedTokens": 0,
            "truncated": False,
            "trimmedSections": [],
        },
        "project": {
            "root": None if options.omit_root else str(inputs.project_root),
            "pages": len(inputs.store.pages),
            "pendingCandidates": inputs.pending_candidates,
            "lint": None,
        },
        "primary": primary,
        "neighbors": _neighbors(inputs.store, entries, options.depth),
        "warnings": warnings,
        "gaps": gaps,
        "suggestedActions": actions,
    }
    _trim(pack, options.budget)
    return pack


def _actions(prompt: str, warnings: list[dict[str, str]], gaps: bool) -> list[dict[str, object]]:
    """The pack's suggested commands: rebuild a corrupt index, ask for an answer, list the
    broken links (when the pack names gaps)."""
    actions: list[dict[str, object]] = []
    if any(w["code"].startswith("embedding-store") for w in warnings):
        actions.append(
            {
                "command": "llmwiki index",
                "reason": "build the search index for semantic ranking",
                "executable": {"binary": "llmwiki", "args": ["index"]},
            }
        )
    actions.append(
        {
            "command": f'llmwiki query "{prompt}"',
            "reason": "ask for a cited answer from these pages",
            "executable": {"binary": "llmwiki", "args": ["query", prompt]},
            "placeholders": ["prompt"],
        }
    )
    if gaps:
        actions.append(
            {
                "command": "llmwiki check",
                "reason": "list every broken wikilink",
                "executable": {"binary": "llmwiki", "args": ["check"]},
            }
        )
    return actions


def _trim(pack: dict[str, Any], budget: int) -> None:
    """Over budget: drop neighbours, then source windows, then chunks, then primary pages
    (lowest ranked first), until it fits."""
    trimmed: list[str] = []

    def over() -> bool:
        estimated = pack["budget"]["estimatedTokens"] = _estimate(pack)
        return estimated > budget

    def pop_from_pages(key: str) -> bool:
        for page in reversed(pack["primary"]):
            if page[key]:
                page[key].pop()
                return True
        return False

    steps: list[tuple[str, Callable[[], bool]]] = [
        ("neighbors", lambda: bool(pack["neighbors"]) and bool(pack["neighbors"].pop() or True)),
        ("sourceWindows", lambda: pop_from_pages("sourceWindows")),
        ("chunks", lambda: pop_from_pages("chunks")),
        ("primary", lambda: bool(pack["primary"]) and bool(pack["primary"].pop() or True)),
    ]
    for name, pop in steps:
        while over() and pop():
            if name not in trimmed:
                trimmed.append(name)
    pack["budget"]["trimmedSections"] = trimmed
    still_over = over()
    pack["budget"]["truncated"] = bool(trimmed) or still_over
    for _ in range(3):  # estimatedTokens is part of the JSON it measures: settle it
        pack["budget"]["estimatedTokens"] = _estimate(pack)


def render_markdown(pack: dict[str, Any]) -> str:
    lines = [
        "# Context Pack",
        "",
        f"Prompt: {pack['prompt']}",
        f"Budget: {pack['budget']['estimatedTokens']} / {pack['budget']['requestedTokens']} estimated tokens",
        "",
    ]
    lines.append("## Primary Pages")
    if not pack["primary"]:
        lines.append("_No primary pages matched the prompt._")
    for page in pack["primary"]:
        lines += [
            "",
            f"### {page['title']} (`{page['id']}`)",
            f"Why included: {', '.join(page['reasons']) or '(no signals)'}",
        ]
        if page["summary"]:
            lines.append(f"> {page['summary']}")
        for chunk in page["chunks"]:
            lines += ["", chunk["text"]]
        if page["citations"]:
            cites = ", ".join(
                f"`{c['file']}:{c['start']}-{c['end']}`" if "start" in c else f"`{c['file']}`"
                for c in page["citations"]
            )
            lines += ["", f"Sources: {cites}"]
        for window in page["sourceWindows"]:
            lines += ["", f"From `{window['file']}:{window['start']}-{window['end']}`:"]
            lines += [f"> {line}" for line in str(window["text"]).splitlines()]
        if page["warnings"]:
            lines += [""] + [f"- warning: {w['code']}: {w['message']}" for w in page["warnings"]]
    if pack["neighbors"]:
        lines += ["", "## Graph Neighborhood"]
        lines += [
            f"- `{n['from']}` -> `{n['to']}` ({n['reason']}, distance {n['distance']})"
            for n in pack["neighbors"]
        ]
    if pack["gaps"]:
        lines += ["", "## Gaps"] + [f"- {g['message']} (`{g['pageId']}`)" for g in pack["gaps"]]
    if pack["warnings"]:
        lines += ["", "## Warnings"] + [f"- {w['code']}: {w['message']}" for w in pack["warnings"]]
    lines += ["", "## Suggested Next Actions"] + [
        f"- `{a['command']}`" for a in pack["suggestedActions"]
    ]
    return "\n".join(lines) + "\n"
