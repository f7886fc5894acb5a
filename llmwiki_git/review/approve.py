"""``review approve``: a validated fast-forward of the current branch to the candidate.

`evaluate` is the read-only part (also used by ``review show`` and the GitHub Action);
`approve` runs it under the repository lock and then moves the branch once, as a
transaction, to the candidate (or its replay) plus the index/log commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import DATA_ERRORS, ApprovalRefused, GitLockHeld, LlmwikiError
from ..gitstore.commits import build_commit, current_branch
from ..gitstore.git import Git
from ..gitstore.transaction import held_git_locks
from ..publication import kinds
from ..publication.candidates import Candidate, body_digest, get, validate
from ..publication.document import log_entry
from ..publication.save import body_of, hand_written_problem, policy_refusal
from ..publication.trailers import ABSENT, REPLAYED, Trailers
from ..publication.write import Site, commit_and_move, locked
from ..wiki.citations import Citation, PendingIndex, citation_report
from ..wiki.model import Wiki
from .filespolicy import evaluate_files
from .pagepolicy import (
    blob_of_precondition,
    drift,
    link_outcome,
    moved,
)
from .pagepolicy import (
    describe as describe_problems,
)
from .project import ReviewProject
from .promises import promise_problem

RESTAGE = kinds.BY_NAME[kinds.KIND].restage


@dataclass
class Verdict:
    ok: bool
    code: str  # ok | malformed | broken-promise | bad-target | not-a-regular-file | unchecked-page | hand-written | not-single-commit | touches-other-files | candidate-edited | forged | target-changed | target-appeared | target-vanished | broken | pending | unavailable
    message: str
    candidate: Candidate
    tip: str | None = None
    branch: str | None = None
    citations: list[Citation] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "code": self.code,
            "message": self.message,
            "tip": self.tip,
            "branch": self.branch,
            "citations": None if self.citations is None else [c.to_json() for c in self.citations],
            **({"details": self.details} if self.details else {}),
        }


def evaluate(
    ws: ReviewProject,
    candidate_id: str,
    pending: PendingIndex | None,
    *,
    branch: str | None = None,
    allow_broken: bool = False,
) -> Verdict:
    """Would approving ``candidate_id`` onto ``branch`` (default: the current one) pass?
    ``allow_broken``: a retraction may break the links to the pages it deletes."""
    git: Git = ws.require_git("reviewing candidates")
    candidate = get(git, candidate_id)
    ref = branch or current_branch(git)
    tip = git.rev_parse(ref)

    def refuse(code: str, message: str, **details: Any) -> Verdict:
        return Verdict(False, code, message, candidate, tip, ref, details=details)

    t = candidate.trailers
    tip_wiki = _tip_wiki(ws, tip)
    malformed = validate(
        git,
        candidate,
        (tip_wiki or ws.wiki("worktree")).root_dir,
        ws.project_prefix,
        max_bytes=ws.settings.max_page_bytes,
    )
    if malformed is not None:
        extra = f": {RESTAGE}" if malformed.code == "not-single-commit" else ""
        return refuse(malformed.code, malformed.message + extra)
    assert t is not None
    row = kinds.row(t.kind)
    assert row is not None  # validate() refused an unknown kind
    broken = _broken_promise(ws, candidate, row, refuse)
    if broken is not None:
        return broken
    if row.policy == kinds.FILES:  # a multi-file run: every file, all or nothing (filespolicy)
        return evaluate_files(
            ws,
            candidate,
            tip,
            ref,
            refuse,
            lambda message, **details: Verdict(
                True, "ok", message, candidate, tip, ref, None, details
            ),
            allow_broken=allow_broken,
        )
    if row.policy == kinds.PAGE:
        return _evaluate_page(ws, candidate, tip, ref, refuse)
    return _evaluate_answer(ws, candidate, tip, ref, refuse, tip_wiki, pending)


def _tip_wiki(ws: ReviewProject, tip: str | None) -> Wiki | None:
    """The wiki at ``tip`` (None: no tip, or it cannot be read -- judged later as
    "validation unavailable")."""
    try:
        return ws.wiki(tip) if tip is not None else None
    except LlmwikiError:
        return None


def _broken_promise(
    ws: ReviewProject, candidate: Candidate, row: kinds.KindRow, refuse: Callable[..., Verdict]
) -> Verdict | None:
    """The refusal of a candidate that breaks its kind's promise at its base (None: kept)."""
    try:
        broken = promise_problem(ws, candidate, row)
    except DATA_ERRORS as exc:  # the base cannot be read: refused, the candidate kept
        return refuse(
            "unavailable",
            f"Approval of {candidate.id} refused: its promise cannot be checked at its base "
            f"({exc.__class__.__name__}: {exc}); the candidate is kept",
        )
    return None if broken is None else refuse(*broken)


def _evaluate_answer(
    ws: ReviewProject,
    candidate: Candidate,
    tip: str | None,
    ref: str,
    refuse: Callable[..., Verdict],
    tip_wiki: Wiki | None,
    pending: PendingIndex | None,
) -> Verdict:
    """The policy of a validated answer: its one query page, its citations resolved."""
    git: Git = ws.require_git("reviewing candidates")
    t = candidate.trailers
    assert t is not None
    candidate_id = candidate.id
    new_blob = git.blob_at(candidate.commit, t.target)
    if new_blob is None:
        return refuse("touches-other-files", f"candidate {candidate_id} deletes {t.target}")
    document = git.read_blob(new_blob)
    if body_digest(document) != t.body_digest:
        return refuse(
            "candidate-edited",
            f"candidate-edited: the answer body of {candidate_id} no longer matches its digest; {RESTAGE}",
        )
    at_base = git.blob_at(t.base, t.target)
    claimed = ABSENT if at_base is None else f"blob {at_base}"
    if t.precondition != claimed:
        return refuse(
            "forged",
            f"candidate {candidate_id} claims precondition {t.precondition!r}, but at its base the target was {claimed!r}; {RESTAGE}",
        )
    if tip is None:
        return refuse("target-vanished", f"branch {ref} does not exist")
    at_tip = git.blob_at(tip, t.target)
    if at_tip != at_base:
        code, what = moved(at_base, at_tip)
        return refuse(code, f"{t.target} {what} since {candidate_id} was staged; {RESTAGE}")
    problem = hand_written_problem(git, tip, t.target)
    if problem is not None:  # a forged precondition naming a hand-written page
        return refuse("hand-written", f"Approval of {candidate_id} refused: {problem}; reject it")
    try:
        after = (tip_wiki or ws.wiki(tip)).with_page(t.target, document.decode("utf-8"))
        citations, error = citation_report(body_of(document.decode("utf-8")), after, pending), None
    except DATA_ERRORS as exc:  # validation failure refuses, keeps the candidate
        citations, error = None, f"{exc.__class__.__name__}: {exc}"
    refusal = policy_refusal(citations, error, "direct")
    if refusal is not None:
        verdict = refuse(
            refusal.code,
            refusal.message.replace(
                "Answer publication refused", f"Approval of {candidate_id} refused"
            )
            + "; the candidate is kept",
        )
        verdict.citations = citations
        return verdict
    return Verdict(
        True, "ok", f"{candidate_id} can be approved onto {ref}", candidate, tip, ref, citations
    )


RESTAGE_PAGE = kinds.BY_NAME[kinds.PAGE_KIND].restage


def _evaluate_page(
    ws: ReviewProject,
    candidate: Candidate,
    tip: str | None,
    ref: str,
    refuse: Callable[..., Verdict],
) -> Verdict:
    """The generic policy of a ``page/1`` candidate (see ``pagepolicy``)."""
    git: Git = ws.require_git("reviewing candidates")
    t = candidate.trailers
    assert t is not None
    cid = candidate.id
    new_blob = git.blob_at(candidate.commit, t.target)
    document = None if new_blob is None else git.read_blob(new_blob)
    digest = ABSENT if document is None else body_digest(document)
    if digest != t.body_digest:
        return refuse(
            "candidate-edited",
            f"candidate-edited: the page body of {cid} no longer matches its digest; {RESTAGE_PAGE}",
        )
    try:
        started = blob_of_precondition(t.precondition)
    except LlmwikiError as exc:
        return refuse("malformed", f"candidate {cid}: {exc}; reject it")
    if document is None and started is None:
        return refuse(
            "malformed",
            f"candidate {cid} deletes {t.target}, which its precondition says was absent; reject it",
        )
    if tip is None:
        return refuse("target-vanished", f"branch {ref} does not exist")
    drifted = drift(git, tip, t.target, started, new_blob)
    if drifted is not None:
        code, what, now, view = drifted
        return refuse(
            code,
            f"lost update refused: {t.target} {what} since the editor of {cid} read it "
            f"(they started from {t.precondition}, the tip has {now}); {RESTAGE_PAGE}",
            threeWay=view,
        )
    return _page_links_verdict(ws, candidate, tip, ref, refuse, document)


def _page_links_verdict(
    ws: ReviewProject,
    candidate: Candidate,
    tip: str,
    ref: str,
    refuse: Callable[..., Verdict],
    document: bytes | None,
) -> Verdict:
    """The wiki's links with the page edit (``document``; None: deleted) at ``tip``:
    accepted unless it newly breaks some."""
    t = candidate.trailers
    assert t is not None
    cid = candidate.id
    try:
        text = None if document is None else document.decode("utf-8")
        links = link_outcome(ws, tip, t.target, text)
    except DATA_ERRORS as exc:  # validation failure refuses, keeps the candidate
        return refuse(
            "unavailable",
            f"Approval of {cid} refused: link validation unavailable "
            f"({exc.__class__.__name__}: {exc}); the candidate is kept",
        )
    details = {
        "brokenBefore": [p.to_json() for p in links.old_errors],
        "pendingLinks": [p.to_json() for p in links.pending],
    }
    if links.new_errors:
        return refuse(
            "broken",
            f"Approval of {cid} refused: the edit breaks {len(links.new_errors)} link(s): "
            f"{describe_problems(links.new_errors)}; fix them or approve the pages they need first; "
            "the candidate is kept",
            newlyBroken=[p.to_json() for p in links.new_errors],
            **details,
        )
    note = (
        f" ({len(links.old_errors)} link(s) were broken before and still are)"
        if links.old_errors
        else ""
    )
    return Verdict(
        True, "ok", f"{cid} can be approved onto {ref}{note}", candidate, tip, ref, None, details
    )


@dataclass
class Approved:
    candidate_id: str
    commit: str
    replayed: bool
    followup: str
    target: str
    already: bool = False  # it was on the branch already: only the remaining steps were done
    targets: tuple[str, ...] = ()  # every file it wrote (a multi-file candidate: several)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "approved": self.candidate_id,
            "commit": self.commit,
            "replayed": self.replayed,
            "followup": self.followup,
            "target": self.target,
            "targets": list(self.targets or (self.target,)),
            "alreadyOnBranch": self.already,
        }


def _on_branch(git: Git, candidate: Candidate, tip: str | None) -> str | None:
    """The commit on the branch that already carries this candidate (itself, or its replay)."""
    if tip is None:
        return None
    if git.count_between(tip, candidate.commit) == 0:  # an ancestor of the tip
        return candidate.commit
    found = git.log(
        [tip], format="%H", grep=f"{REPLAYED}: {candidate.commit}", fixed=True, max_count=1
    )
    return found.decode().strip() or None


def approve(
    ws: ReviewProject,
    candidate_id: str,
    pending: PendingIndex | None,
    note: Callable[[str], None] | None = None,
    *,
    allow_broken: bool = False,
) -> Approved:
    """Approve ``candidate_id`` onto the current branch as one transaction (see
    ``publication.write``): every check first, then the page commit (or its replay) and the
    index/log commit are built, then the branch moves once and the candidate is deleted."""
    ws.require_git("approving candidates")
    site = Site.of(ws, "approving candidates")
    try:
        with locked(site):
            return _approve(ws, site, candidate_id, pending, allow_broken)
    finally:
        for text in site.notes:
            if note is not None:
                note(text)


def _approve(
    ws: ReviewProject,
    site: Site,
    candidate_id: str,
    pending: PendingIndex | None,
    allow_broken: bool = False,
) -> Approved:
    git = site.git
    candidate = get(git, candidate_id)
    ref = current_branch(git)
    tip = git.rev_parse(ref)
    landed = _on_branch(git, candidate, tip)
    if landed is not None and candidate.trailers is not None:
        return _landed_already(git, candidate, landed, tip)
    verdict = evaluate(ws, candidate_id, pending, allow_broken=allow_broken)
    if not verdict.ok:
        raise ApprovalRefused(verdict)
    t = verdict.candidate.trailers
    assert t is not None and verdict.tip is not None and verdict.branch is not None
    commit = verdict.candidate.commit
    replayed = t.base != verdict.tip
    if replayed:
        commit = _replay(git, commit, t, verdict.tip)
    entry = log_entry(
        "approve",
        verdict.candidate.subject,
        [
            f"Candidate: {candidate_id}",
            *[f"Page: {f.target}" for f in t.files],
            f"Commit: {commit}",
        ],
    )
    _, final = commit_and_move(
        site,
        ref=verdict.branch,
        head=verdict.tip,
        page_commit=commit,
        page=None,
        message=f"llmwiki: approve {candidate_id}\n",
        followup_message=f"llmwiki: index and log for approved {candidate_id}\n",
        entry=entry,
        drop_refs=[(verdict.candidate.ref, verdict.candidate.commit)],
        what=f"approval of {candidate_id}",
    )
    return Approved(
        candidate_id, commit, replayed, final, t.target, targets=tuple(f.target for f in t.files)
    )


def _landed_already(git: Git, candidate: Candidate, landed: str, tip: str | None) -> Approved:
    """A re-run after an interrupted approval: the candidate is on the branch already
    (``landed``); only its branch is left to delete."""
    t = candidate.trailers
    assert t is not None
    held = held_git_locks(git, [f"{candidate.ref}.lock", "packed-refs.lock"])
    if held:
        raise GitLockHeld(held, f"approval of {candidate.id}")
    git.delete_ref(candidate.ref, candidate.commit, message=f"llmwiki: approved {candidate.id}")
    return Approved(
        candidate.id,
        landed,
        landed != candidate.commit,
        tip or landed,
        t.target,
        True,
        tuple(f.target for f in t.files),
    )


def _replay(git: Git, commit: str, t: Trailers, tip: str) -> str:
    """The candidate's ``commit`` made again on ``tip`` (its base moved on): the same files
    and message, which names the commit it replays."""
    raw = git.commit_object(commit)
    message = raw.split("\n\n", 1)[1]
    message = message.rstrip("\n") + f"\n{REPLAYED}: {commit}\n"
    documents = {
        f.target: None
        if git.blob_at(commit, f.target) is None
        else git.read_blob(f"{commit}:{f.target}")
        for f in t.files
    }
    return build_commit(git, tip, documents, message, author=git.author(commit))
