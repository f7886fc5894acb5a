"""Views and actions behind `llmwiki review`: list, show, approve (also used by the Action)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import BEST_EFFORT_ERRORS, LlmwikiError
from ..publication.candidates import get, list_candidates, pending_index
from ..publication.trailers import PAGE_KIND
from ..wiki.citations import BROKEN, PENDING
from .approve import Approved, approve, evaluate


REFUSED_SHAPES = frozenset({"malformed", "bad-target", "not-single-commit", "touches-other-files", "not-a-regular-file"})
"""Verdict codes meaning the candidate is not a plain query page (listed as malformed)."""


def _status(citations: list[Any] | None) -> str:
    if citations is None:
        return "unavailable"
    broken = sum(1 for c in citations if c.status == BROKEN)
    pending = sum(1 for c in citations if c.status == PENDING)
    return f"{len(citations) - broken - pending} resolved, {pending} pending, {broken} broken"


def _page_status(verdict: Any) -> str:
    """A page edit's link status now: links it newly breaks, broken before, pending."""
    details = verdict.details
    if verdict.code not in ("ok", "broken"):
        return verdict.code
    return (f"{len(details.get('newlyBroken', []))} newly broken, {len(details.get('brokenBefore', []))} broken before, "
            f"{len(details.get('pendingLinks', []))} pending")


def list_view(ws) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
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
        rows.append({"id": candidate.id, "kind": t.kind if t else None, "target": t.target if t else None,
                     "committedAt": candidate.committed_at,
                     "citationStatus": status, "base": t.base if t else None, "commit": candidate.commit,
                     "notes": candidate.notes})
    return rows


def show_view(ws, candidate_id: str, onto: str | None = None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
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
    return {"version": 1, "id": candidate.id, "branch": candidate.ref.removeprefix("refs/heads/"),
            "kind": t.kind if t else None, "commit": candidate.commit,
            "target": t.target if t else None, "precondition": t.precondition if t else None,
            "bodyDigest": t.body_digest if t else None, "base": t.base if t else None, "question": question,
            "notes": candidate.notes, "diff": diff, "verdict": verdict.to_json()}


def approve_candidate(ws, candidate_id: str, note: Callable[[str], None] | None = None) -> Approved:  # type: ignore[no-untyped-def]
    git = ws.require_git("approving candidates")
    done = approve(ws, candidate_id, pending_index(git), note)
    try:
        ws.retrieval().index(page=False)  # the search index only: the commit wrote the table of contents
    except BEST_EFFORT_ERRORS:  # the approval stands; `llmwiki index` catches up
        pass
    return done
