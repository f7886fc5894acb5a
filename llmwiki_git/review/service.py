"""Views and actions behind `llmwiki review` and the MCP review tools: list, show, approve,
reject. Each returns a value (a row, a view, the approval, the rejection); entry points render it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import BEST_EFFORT_ERRORS, LlmwikiError
from ..publication.candidates import Candidate, get, list_candidates, pending_index, reject
from ..publication.trailers import PAGE_KIND
from ..wiki.citations import counts_line
from .approve import Approved, Verdict, approve, evaluate
from .project import ReviewProject


REFUSED_SHAPES = frozenset({"malformed", "bad-target", "not-single-commit", "touches-other-files", "not-a-regular-file"})
"""Verdict codes meaning the candidate is not a plain query page (listed as malformed)."""


def _status(citations: list[Any] | None) -> str:
    if citations is None:
        return "unavailable"
    return counts_line(citations)


def _page_status(verdict: Any) -> str:
    """A page edit's link status now: links it newly breaks, broken before, pending."""
    details = verdict.details
    if verdict.code not in ("ok", "broken"):
        return verdict.code
    return (f"{len(details.get('newlyBroken', []))} newly broken, {len(details.get('brokenBefore', []))} broken before, "
            f"{len(details.get('pendingLinks', []))} pending")


@dataclass
class CandidateRow:
    """One line of `review list`: a candidate and its link status now."""

    id: str
    kind: str | None
    target: str | None
    committed_at: int
    citation_status: str  # "N resolved[, N ambiguous], N pending, N broken", a page edit's link counts, or a refusal code
    base: str | None
    commit: str
    notes: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "target": self.target, "committedAt": self.committed_at,
                "citationStatus": self.citation_status, "base": self.base, "commit": self.commit, "notes": self.notes}


@dataclass
class CandidateView:
    """`review show`: a candidate's metadata, its diff against the tip and the approval verdict."""

    candidate: Candidate
    question: str
    diff: str
    verdict: Verdict

    def metadata(self) -> dict[str, str | None]:
        """The candidate's branch, commit, trailer values and question, in display order."""
        c, t = self.candidate, self.candidate.trailers
        return {"branch": c.ref.removeprefix("refs/heads/"), "kind": t.kind if t else None, "commit": c.commit,
                "target": t.target if t else None, "precondition": t.precondition if t else None,
                "bodyDigest": t.body_digest if t else None, "base": t.base if t else None, "question": self.question}

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "id": self.candidate.id, **self.metadata(), "notes": self.candidate.notes,
                "diff": self.diff, "verdict": self.verdict.to_json()}


@dataclass(frozen=True)
class Rejected:
    candidate_id: str
    ref: str  # where the rejected commit is kept


def list_view(ws: ReviewProject) -> list[CandidateRow]:
    git = ws.require_git("listing candidates")
    pending = pending_index(git)
    rows = []
    for candidate in list_candidates(git):
        t = candidate.trailers
        status = "malformed"
        if t is not None and not candidate.notes:
            try:  # one malformed candidate never breaks listing the others
                verdict = evaluate(ws, candidate.id, pending)
            except LlmwikiError as exc:
                candidate.notes.append(f"cannot be evaluated: {exc}")
            else:
                if verdict.code in REFUSED_SHAPES:
                    candidate.notes.append(verdict.message)
                elif t.kind == PAGE_KIND:
                    status = _page_status(verdict)
                else:
                    status = _status(verdict.citations)
        rows.append(CandidateRow(candidate.id, t.kind if t else None, t.target if t else None, candidate.committed_at,
                                 status, t.base if t else None, candidate.commit, candidate.notes))
    return rows


def show_view(ws: ReviewProject, candidate_id: str, onto: str | None = None) -> CandidateView:
    git = ws.require_git("showing candidates")
    candidate = get(git, candidate_id)
    verdict = evaluate(ws, candidate_id, pending_index(git), branch=onto)
    t = candidate.trailers
    diff = verdict.details.get("threeWay", "")
    if t is not None and verdict.tip and not diff:
        diff = git.run("diff", "--no-color", "--no-ext-diff", verdict.tip, candidate.commit, "--", t.target,
                       check=False).decode("utf-8", "replace")
    question = ""
    if t is None or t.kind != PAGE_KIND:
        question = git.text("log", "-1", "--format=%b", candidate.commit).split("\n", 1)[0].removeprefix("Question: ")
    return CandidateView(candidate, question, diff, verdict)


def approve_candidate(ws: ReviewProject, candidate_id: str, note: Callable[[str], None] | None = None) -> Approved:
    git = ws.require_git("approving candidates")
    done = approve(ws, candidate_id, pending_index(git), note)
    try:
        ws.retrieval().index(page=False)  # the search index only: the commit wrote the table of contents
    except BEST_EFFORT_ERRORS:  # the approval stands; `llmwiki index` catches up
        pass
    return done


def reject_candidate(ws: ReviewProject, candidate_id: str) -> Rejected:
    """Close a candidate: its branch moves to refs/llmwiki/rejected/<id> (the commit is kept)."""
    return Rejected(candidate_id, reject(ws.require_git("rejecting candidates"), candidate_id))
