"""The citation report: each unique wikilink target of a text, resolved, pending or broken.

This is what `llmwiki links` prints and what `query` calls after an answer (DESIGN §3).
"Pending" means no page resolves the target but an open review candidate would create
exactly that slug; the candidates come from a `PendingIndex` (review branches, later).
"Ambiguous" means several pages answer the target equally (``[[index]]`` with both
``index.md`` and ``user/index.md``): it resolves to the first of them (fewest folders deep,
then alphabetically, as `llmwiki check` says), which may not be the page the text meant, so
it is never reported as plainly resolved and saving refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .frontmatter import split
from .model import Wiki
from .scanner import scan_raw
from .slug import parse_target

RESOLVED = "resolved"
AMBIGUOUS = "ambiguous"
PENDING = "pending"
BROKEN = "broken"


class PendingIndex(Protocol):
    def candidates_for(self, slug: str) -> Sequence[str]:
        """Ids of open review candidates that would create a page with this slug."""
        ...


class NoPending:
    """No review candidates: nothing is ever pending."""

    def candidates_for(self, slug: str) -> Sequence[str]:
        return ()


@dataclass(frozen=True)
class StaticPending:
    """Candidates given as a mapping slug -> candidate ids (tests, and the review store)."""

    by_slug: Mapping[str, Sequence[str]]

    def candidates_for(self, slug: str) -> Sequence[str]:
        return self.by_slug.get(slug, ())


@dataclass(frozen=True)
class Citation:
    target: str
    status: str
    page_id: str | None = None
    candidate_ids: tuple[str, ...] = ()
    alternatives: tuple[str, ...] = ()  # ambiguous: the other pages (or files) the target matches

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"target": self.target, "status": self.status}
        if self.page_id is not None:
            out["pageId"] = self.page_id
        if self.alternatives:
            out["alternatives"] = list(self.alternatives)
        if self.candidate_ids:
            out["candidateIds"] = list(self.candidate_ids)
        return out


def citation_report(text: str, wiki: Wiki, pending: PendingIndex | None = None) -> list[Citation]:
    """Classify every unique target of ``text`` (frontmatter skipped), in first-occurrence
    order. Self-anchors (``[[#heading]]``) are not citations and are left out."""
    pending = pending or NoPending()
    _, _, body_line = split(text)
    report: list[Citation] = []
    seen: set[str] = set()
    raw_seen: set[str] = set()
    links = scan_raw(text, body_line)[0] if "[[" in text else []
    for raw in links:  # field tuples of `Occurrence`: raw[3] is the target
        if raw[3] in raw_seen:
            continue  # a repeated link costs a set lookup (a page of 700,000 links: 0.3 s, not 3 s)
        raw_seen.add(raw[3])
        target = parse_target(raw[3])
        if target.is_self_anchor or target.key in seen:
            continue
        seen.add(target.key)
        found = wiki.resolve(target)
        if found.resolved:
            status = AMBIGUOUS if found.alternatives else RESOLVED
            report.append(
                Citation(target.key, status, page_id=found.ref, alternatives=found.alternatives)
            )
            continue
        ids = tuple(sorted(set(pending.candidates_for(target.slug)))) if target.slug else ()
        if ids and target.hint in ((), ("queries",), ("wiki", "queries")):
            report.append(Citation(target.key, PENDING, candidate_ids=ids))
        else:
            report.append(Citation(target.key, BROKEN))
    return report


def counts_line(citations: Sequence[Citation]) -> str:
    """``N resolved, N pending, N broken``, with ``N ambiguous`` after resolved when any is."""
    counts = {
        s: sum(1 for c in citations if c.status == s)
        for s in (RESOLVED, AMBIGUOUS, PENDING, BROKEN)
    }
    ambiguous = f", {counts[AMBIGUOUS]} ambiguous" if counts[AMBIGUOUS] else ""
    return f"{counts[RESOLVED]} resolved{ambiguous}, {counts[PENDING]} pending, {counts[BROKEN]} broken"


def ambiguity(citation: Citation) -> str:
    """``index -> index (also matches user/index)``: what an ambiguous target resolved to, and what else it matches."""
    return (
        f"{citation.target} -> {citation.page_id} (also matches {', '.join(citation.alternatives)})"
    )


def format_report(citations: Sequence[Citation]) -> list[str]:
    """The ``Answer citations: …`` lines of DESIGN §3 (plus ``ambiguous:`` lines, see above)."""
    if not citations:
        return ["Answer citations: none recognized (not a factual-support assessment)"]
    lines = [f"Answer citations: {counts_line(citations)}"]
    for c in citations:
        if c.status == RESOLVED:
            lines.append(f"resolved: {c.target} -> {c.page_id}")
        elif c.status == AMBIGUOUS:
            lines.append(f"ambiguous: {ambiguity(c)}")
        elif c.status == PENDING:
            lines.append(f"pending: {c.target}")
        else:
            lines.append(f"broken: {c.target}")
    return lines
