"""``query --save --review``: stage an answer as a candidate branch, built with plumbing so
the user's work tree, index and HEAD are untouched."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import DATA_ERRORS
from ..gitstore.commits import build_commit, current_branch
from ..publication.candidates import PREFIX, body_digest, new_id
from ..publication.document import now_iso, query_slug, render_page
from ..publication.save import (
    HAND_WRITTEN_HINT,
    PROPOSAL,
    Refusal,
    body_of,
    hand_written_problem,
    policy_refusal,
    target_path,
)
from ..publication.trailers import ABSENT, KIND, FileTrailer, with_files
from ..publication.trailers import message as commit_message
from ..publication.write import Project, Site, locked
from ..wiki.citations import PendingIndex, citation_report


@dataclass(frozen=True)
class Staged:
    candidate_id: str
    branch: str
    commit: str
    target: str
    precondition: str


def answer_stager(
    ws: Project, note: Callable[[str], None] | None = None
) -> Callable[[str, str, PendingIndex | None], Staged | Refusal]:
    """What `llmwiki query --save --review` and MCP ``query_wiki`` (review=true) hand
    ``answer.service.run_query`` as its ``stage``: the answer staged as a candidate in ``ws``."""

    def stage(question: str, answer: str, pending: PendingIndex | None) -> Staged | Refusal:
        return stage_candidate(ws, question, answer, pending, note=note)

    return stage


def stage_candidate(
    ws: Project,
    question: str,
    answer: str,
    pending: PendingIndex | None,
    note: Callable[[str], None] | None = None,
) -> Staged | Refusal:
    slug = query_slug(question)
    document = render_page(question, answer, now_iso())
    site = Site.of(ws, "staging a review candidate")
    try:
        return _stage(site, question, slug, document, pending)
    finally:
        for text in site.notes:
            if note is not None:
                note(text)


def _stage(
    site: Site, question: str, slug: str, document: str, pending: PendingIndex | None
) -> Staged | Refusal:
    git = site.git
    with locked(site):
        current_branch(git)  # refuse on a detached HEAD
        base = git.rev_parse("HEAD")
        if base is None:
            return Refusal(
                "unavailable",
                [],
                "Staging refused: the branch has no commit yet; commit the wiki first",
            )
        try:
            wiki = site.load_wiki(base)
            target = target_path(wiki, slug)
            citations, error = (
                citation_report(body_of(document), wiki.with_page(target, document), pending),
                None,
            )
        except DATA_ERRORS as exc:  # validation failure refuses, never crashes
            citations, error, target = None, f"{exc.__class__.__name__}: {exc}", ""
        refusal = policy_refusal(citations, error, PROPOSAL)
        if refusal is not None:
            refusal.message = refusal.message.replace("publication", "staging")
            return refusal
        problem = hand_written_problem(git, base, target)
        if problem is not None:
            return Refusal(
                "hand-written", [target], f"Answer staging refused: {problem}; {HAND_WRITTEN_HINT}"
            )
        old = git.blob_at(base, target)
        precondition = f"blob {old}" if old else ABSENT
        candidate_id = new_id(git, slug)
        trailers = with_files(
            candidate_id, KIND, [FileTrailer(target, precondition, body_digest(document))], base
        )
        first = " ".join(question.split())
        message = commit_message(
            f'llmwiki: review candidate "{first[:60]}{"…" if len(first) > 60 else ""}"',
            f"Question: {first}",
            trailers,
        )
        commit = build_commit(git, base, {target: document.encode("utf-8")}, message)
        git.update_ref(PREFIX + candidate_id, commit, "", message=f"llmwiki: stage {candidate_id}")
    return Staged(candidate_id, f"llmwiki/review/{candidate_id}", commit, target, precondition)
