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
from typing import Any, TypeVar

from ..errors import DATA_ERRORS, LlmwikiError
from ..gitstore.git import Git
from ..problems import Problem
from ..publication import kinds
from ..publication.candidates import Candidate, body_digest
from ..publication.trailers import ABSENT
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
    git: Git = ws.require_git("reviewing candidates")
    t = candidate.trailers
    assert t is not None
    cid = candidate.id
    row = kinds.BY_NAME[t.kind]
    restage = row.restage
    renamed: dict[str, str] = {}
    if (
        row.rewrites_links
    ):  # a move or merge: exactly its plan at its base, shown with every verdict
        run, problem = plan_problem(ws, candidate)
        restage = rewrite_restage(t)
        if run is not None:
            refuse, accept = _with_plan(refuse, run.plan), _with_plan(accept, run.plan)
            renamed = run.renamed
        if problem is not None:
            return refuse("plan-mismatch", f"candidate {cid} {problem}; reject it")
    limit = ws.settings.max_page_bytes
    writes: dict[str, str | None] = {}
    pages: list[dict[str, Any]] = []
    for f in t.files:
        new_blob = git.blob_at(candidate.commit, f.target)
        data = None if new_blob is None else git.read_blob(new_blob)
        if (ABSENT if data is None else body_digest(data)) != f.body_digest:
            return refuse(
                "candidate-edited",
                f"candidate-edited: {f.target} of {cid} no longer matches its digest (it was "
                f"changed after staging); {restage}; to keep a hand edit instead, "
                f"stage it as a page edit of its own with `llmwiki review stage {f.target}`",
            )
        if data is not None:
            bad = acceptance_problem(
                data, limit
            )  # validate() refused it already; kept for direct callers
            if bad is not None:
                return refuse(
                    "unchecked-page",
                    f"candidate {cid}: {f.target} is not fully checkable: {bad}; reject it",
                )
        try:
            started = blob_of_precondition(f.precondition)
        except LlmwikiError as exc:
            return refuse("malformed", f"candidate {cid}: {exc}; reject it")
        if data is None and started is None:
            return refuse(
                "malformed",
                f"candidate {cid} deletes {f.target}, which its precondition says was absent; "
                "reject it",
            )
        if tip is None:
            return refuse("target-vanished", f"branch {ref} does not exist")
        drifted = drift(git, tip, f.target, started, new_blob)
        if drifted is not None:
            code, what, now, view = drifted
            return refuse(
                code,
                f"{f.target} {what} since {cid} was written (it read {f.precondition}, the tip has "
                f"{now}); {restage}",
                threeWay=view,
                page=f.target,
            )
        if f.target != t.retracts:  # the retracted source is no page: links never named it
            writes[f.target] = None if data is None else data.decode("utf-8")
        pages.append(
            {
                "target": f.target,
                "precondition": f.precondition,
                "bodyDigest": f.body_digest,
                "change": "delete" if data is None else "add" if started is None else "replace",
            }
        )
    assert tip is not None
    try:
        links = link_outcome_many(ws, tip, writes, renamed)
    except DATA_ERRORS as exc:  # validation failure refuses, keeps the candidate
        return refuse(
            "unavailable",
            f"Approval of {cid} refused: link validation unavailable "
            f"({exc.__class__.__name__}: {exc}); the candidate is kept",
        )
    details = {
        "pages": pages,
        "brokenBefore": [p.to_json() for p in links.old_errors],
        "pendingLinks": [p.to_json() for p in links.pending],
    }
    if links.new_errors and allow_broken and row.allow_broken:
        try:  # --allow-broken: only links to the pages the run deletes
            kept = not_by_deletions(ws, tip, writes, renamed, links.new_errors)
        except DATA_ERRORS as exc:
            return refuse(
                "unavailable",
                f"Approval of {cid} refused: link validation unavailable "
                f"({exc.__class__.__name__}: {exc}); the candidate is kept",
            )
        if kept:
            return refuse(
                "broken",
                f"Approval of {cid} refused: --allow-broken allows breaking only links to the "
                f"pages the run deletes, and it breaks {len(kept)} other link(s): "
                f"{describe_problems(kept)}; reject it",
                newlyBroken=[p.to_json() for p in links.new_errors],
                **details,
            )
        details["newlyBroken"] = [p.to_json() for p in links.new_errors]
        return accept(
            f"{cid} ({len(pages)} file(s)) can be approved onto {ref}, breaking {len(links.new_errors)} "
            f"link(s) as --allow-broken allows: {describe_problems(links.new_errors)}",
            **details,
        )
    if links.new_errors:
        return refuse(
            "broken",
            f"Approval of {cid} refused: the run breaks {len(links.new_errors)} link(s): "
            f"{describe_problems(links.new_errors)}; "
            f"{restage if row.rewrites_links else 'fix them or approve the pages they need first'}; "
            "the candidate is kept",
            newlyBroken=[p.to_json() for p in links.new_errors],
            **details,
        )
    note = (
        f" ({len(links.old_errors)} link(s) were broken before and still are)"
        if links.old_errors
        else ""
    )
    return accept(f"{cid} ({len(pages)} page(s)) can be approved onto {ref}{note}", **details)


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
