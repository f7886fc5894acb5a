"""The approval policy of every multi-file candidate kind (the rows of
``publication/kinds.py`` with ``files``: ``compile/1``, ``move/1``, ``merge/1``,
``retraction/1``): all or nothing.

Every file must still read as staged (its body digest), pass the acceptance rule, and find
at the tip exactly what its writer read (its precondition); then the links of the whole
wiki are checked against the tree with every file written at once -- so links among the
run's own pages resolve within it -- and links the run newly breaks refuse it, as for a page
edit. One file refused refuses the candidate; nothing is written. A kind that keeps links
whole (``rewrites_links``) must be exactly its plan at its base (``rewrites.plan_problem``);
a kind that may break links (``allow_broken``: a retraction) breaks, with ``--allow-broken``,
only links to the pages it deletes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from ..errors import DATA_ERRORS, LlmwikiError
from ..gitstore.git import Git
from ..problems import Problem
from ..publication import kinds
from ..publication.candidates import Candidate, body_digest
from ..publication.trailers import ABSENT, FileTrailer
from ..wiki.pages import acceptance_problem
from .pagepolicy import (
    blob_of_precondition,
    drift,
    link_outcome_many,
)
from .pagepolicy import (
    describe as describe_problems,
)
from .project import ReviewProject
from .rewrites import plan_problem
from .rewrites import restage as rewrite_restage

V = TypeVar("V")  # the caller's verdict


def _with_plan(verdict: Callable[..., V], plan: dict[str, Any]) -> Callable[..., V]:
    return lambda *args, **details: verdict(*args, plan=plan, **details)


class _Verdict(NamedTuple):
    """A step's verdict, delivered by ``evaluate_files``: a refusal (``code``) or, with no
    code, an acceptance."""

    code: str | None
    message: str
    details: dict[str, object]


def _refusal(code: str, message: str, **details: object) -> _Verdict:
    return _Verdict(code, message, details)


def _deliver(verdict: _Verdict, refuse: Callable[..., V], accept: Callable[..., V]) -> V:
    if verdict.code is None:
        return accept(verdict.message, **verdict.details)
    return refuse(verdict.code, verdict.message, **verdict.details)


class _Review(NamedTuple):
    """What every step's wording names: the candidate, the branch, how to restage it."""

    cid: str
    ref: str
    restage: str
    row: kinds.KindRow


class _Written(NamedTuple):
    """The run's files as they pass the per-file checks: the wiki texts to check links
    against (None: deleted) and the page list every verdict shows."""

    writes: dict[str, str | None]
    pages: list[dict[str, Any]]


def evaluate_files(
    ws: ReviewProject,
    candidate: Candidate,
    tip: str | None,
    ref: str,
    refuse: Callable[..., V],
    accept: Callable[..., V],
    *,
    allow_broken: bool = False,
) -> V:
    """The verdict on ``candidate`` (already structurally valid) onto ``tip`` of ``ref``:
    ``refuse(code, message, **details)`` or ``accept(message, **details)``. A retraction
    that breaks links (to the pages it deletes) is refused unless ``allow_broken``; the
    links are listed either way (``newlyBroken``)."""
    t = candidate.trailers
    assert t is not None
    row = kinds.BY_NAME[t.kind]
    review = _Review(candidate.id, ref, row.restage, row)
    renamed: dict[str, str] = {}
    if (
        row.rewrites_links
    ):  # a move or merge: exactly its plan at its base, shown with every verdict
        run, problem = plan_problem(ws, candidate)
        review = review._replace(restage=rewrite_restage(t))
        if run is not None:
            refuse, accept = _with_plan(refuse, run.plan), _with_plan(accept, run.plan)
            renamed = run.renamed
        if problem is not None:
            return refuse("plan-mismatch", f"candidate {review.cid} {problem}; reject it")
    written = _check_files(ws, candidate, tip, review)
    if isinstance(written, _Verdict):
        return _deliver(written, refuse, accept)
    assert tip is not None
    return _deliver(_link_verdict(ws, tip, review, written, renamed, allow_broken), refuse, accept)


def _check_files(
    ws: ReviewProject, candidate: Candidate, tip: str | None, review: _Review
) -> _Written | _Verdict:
    """Every file of the run as staged, acceptable and undrifted at ``tip``; the first
    refusal otherwise."""
    git: Git = ws.require_git("reviewing candidates")
    t = candidate.trailers
    assert t is not None
    written = _Written({}, [])
    for f in t.files:
        checked = _check_file(ws, git, candidate, f, tip, review)
        if isinstance(checked, _Verdict):
            return checked
        data, started = checked
        if f.target != t.retracts:  # the retracted source is no page: links never named it
            written.writes[f.target] = None if data is None else data.decode("utf-8")
        written.pages.append(
            {
                "target": f.target,
                "precondition": f.precondition,
                "bodyDigest": f.body_digest,
                "change": "delete" if data is None else "add" if started is None else "replace",
            }
        )
    return written


def _check_file(
    ws: ReviewProject,
    git: Git,
    candidate: Candidate,
    f: FileTrailer,
    tip: str | None,
    review: _Review,
) -> tuple[bytes | None, str | None] | _Verdict:
    """One file's staged bytes (None: deleted) and the blob its writer started from (None:
    absent), or why it is refused: edited since staging, not checkable, a malformed
    precondition, or drifted at ``tip``."""
    cid, restage = review.cid, review.restage
    new_blob = git.blob_at(candidate.commit, f.target)
    data = None if new_blob is None else git.read_blob(new_blob)
    if (ABSENT if data is None else body_digest(data)) != f.body_digest:
        return _refusal(
            "candidate-edited",
            f"candidate-edited: {f.target} of {cid} no longer matches its digest (it was "
            f"changed after staging); {restage}; to keep a hand edit instead, "
            f"stage it as a page edit of its own with `llmwiki review stage {f.target}`",
        )
    if data is not None:
        # validate() refused it already; kept for direct callers
        bad = acceptance_problem(data, ws.settings.max_page_bytes)
        if bad is not None:
            return _refusal(
                "unchecked-page",
                f"candidate {cid}: {f.target} is not fully checkable: {bad}; reject it",
            )
    try:
        started = blob_of_precondition(f.precondition)
    except LlmwikiError as exc:
        return _refusal("malformed", f"candidate {cid}: {exc}; reject it")
    if data is None and started is None:
        return _refusal(
            "malformed",
            f"candidate {cid} deletes {f.target}, which its precondition says was absent; "
            "reject it",
        )
    if tip is None:
        return _refusal("target-vanished", f"branch {review.ref} does not exist")
    drifted = drift(git, tip, f.target, started, new_blob)
    if drifted is not None:
        code, what, now, view = drifted
        return _refusal(
            code,
            f"{f.target} {what} since {cid} was written (it read {f.precondition}, the tip has "
            f"{now}); {restage}",
            threeWay=view,
            page=f.target,
        )
    return data, started


def _unavailable(cid: str, exc: Exception) -> _Verdict:
    return _refusal(
        "unavailable",
        f"Approval of {cid} refused: link validation unavailable "
        f"({exc.__class__.__name__}: {exc}); the candidate is kept",
    )


def _link_verdict(
    ws: ReviewProject,
    tip: str,
    review: _Review,
    written: _Written,
    renamed: dict[str, str],
    allow_broken: bool,
) -> _Verdict:
    """The whole wiki's links with every file written at once: accepted unless the run
    newly breaks some (a retraction with ``allow_broken`` may break those to its deleted
    pages)."""
    cid, ref, pages = review.cid, review.ref, written.pages
    try:
        links = link_outcome_many(ws, tip, written.writes, renamed)
    except DATA_ERRORS as exc:  # validation failure refuses, keeps the candidate
        return _unavailable(cid, exc)
    details: dict[str, object] = {
        "pages": pages,
        "brokenBefore": [p.to_json() for p in links.old_errors],
        "pendingLinks": [p.to_json() for p in links.pending],
    }
    if links.new_errors and allow_broken and review.row.allow_broken:
        return _allowed_breaks(ws, tip, review, written, renamed, links.new_errors, details)
    if links.new_errors:
        fix = (
            review.restage
            if review.row.rewrites_links
            else ("fix them or approve the pages they need first")
        )
        return _refusal(
            "broken",
            f"Approval of {cid} refused: the run breaks {len(links.new_errors)} link(s): "
            f"{describe_problems(links.new_errors)}; {fix}; the candidate is kept",
            newlyBroken=[p.to_json() for p in links.new_errors],
            **details,
        )
    note = (
        f" ({len(links.old_errors)} link(s) were broken before and still are)"
        if links.old_errors
        else ""
    )
    return _Verdict(None, f"{cid} ({len(pages)} page(s)) can be approved onto {ref}{note}", details)


def _allowed_breaks(
    ws: ReviewProject,
    tip: str,
    review: _Review,
    written: _Written,
    renamed: dict[str, str],
    new_errors: list[Problem],
    details: dict[str, object],
) -> _Verdict:
    """``--allow-broken`` on a kind that may break links: accepted when the run breaks only
    links to the pages it deletes, listing them."""
    cid = review.cid
    try:
        kept = not_by_deletions(ws, tip, written.writes, renamed, new_errors)
    except DATA_ERRORS as exc:
        return _unavailable(cid, exc)
    newly_broken = [p.to_json() for p in new_errors]
    if kept:
        return _refusal(
            "broken",
            f"Approval of {cid} refused: --allow-broken allows breaking only links to the "
            f"pages the run deletes, and it breaks {len(kept)} other link(s): "
            f"{describe_problems(kept)}; reject it",
            newlyBroken=newly_broken,
            **details,
        )
    return _Verdict(
        None,
        f"{cid} ({len(written.pages)} file(s)) can be approved onto {review.ref}, breaking "
        f"{len(new_errors)} link(s) as --allow-broken allows: {describe_problems(new_errors)}",
        {**details, "newlyBroken": newly_broken},
    )


def not_by_deletions(
    ws: ReviewProject,
    tip: str,
    writes: dict[str, str | None],
    renamed: dict[str, str],
    broken: list[Problem],
) -> list[Problem]:
    """The links of ``broken`` (newly broken by ``writes``) that deleting pages does not
    explain: those still newly broken when every page ``writes`` deletes is kept as it is at
    ``tip`` -- a link added to a missing page, a link rewritten to nowhere."""
    kept = {target: text for target, text in writes.items() if text is not None}
    if len(kept) == len(writes):
        return list(broken)
    without = link_outcome_many(ws, tip, kept, renamed).new_errors
    still = {(p.path, p.line, p.col, p.code, p.target) for p in without}
    return [p for p in broken if (p.path, p.line, p.col, p.code, p.target) in still]
