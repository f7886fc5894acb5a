"""Views and actions behind `llmwiki review` and the MCP review tools: list, show, approve,
reject. Each returns a value (a row, a view, the approval, the rejection); entry points render it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from ..errors import BEST_EFFORT_ERRORS, LlmwikiError, UsageError
from ..gitstore.git import Git
from ..publication import kinds
from ..publication.candidates import Candidate, get, list_candidates, pending_index, reject
from ..wiki.citations import counts_line
from ..wiki.model import Wiki
from ..wording import plural
from .approve import Approved, Verdict, approve, evaluate
from .project import ReviewProject

REFUSED_SHAPES = frozenset(
    {
        "malformed",
        "bad-target",
        "not-single-commit",
        "touches-other-files",
        "not-a-regular-file",
        "unchecked-page",
        "plan-mismatch",
        "broken-promise",
    }
)
"""Verdict codes meaning the candidate can never be approved as it is (listed as malformed)."""


def _row_of(kind: str) -> kinds.KindRow:
    """The row of ``kind``; an unknown (forged or newer) kind shows as a single page edit
    that can never be approved (``validate`` refuses it)."""
    return kinds.row(kind) or _UNKNOWN


_UNKNOWN = kinds.KindRow("?", "unknown kind", "", "", kinds.PAGE, "none: it is refused")


def _files(kind: str) -> bool:
    return _row_of(kind).files


def _status(citations: list[Any] | None) -> str:
    if citations is None:
        return "unavailable"
    return counts_line(citations)


def _page_status(verdict: Verdict) -> str:
    """A page edit's link status now: links it newly breaks, broken before, pending."""
    details = verdict.details
    if verdict.code not in ("ok", "broken"):
        return verdict.code
    return (
        f"{len(details.get('newlyBroken', []))} newly broken, {len(details.get('brokenBefore', []))} broken before, "
        f"{len(details.get('pendingLinks', []))} pending"
    )


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

    targets: tuple[str, ...] = ()  # every page it writes (a compile run: several)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "target": self.target,
            "committedAt": self.committed_at,
            "citationStatus": self.citation_status,
            "base": self.base,
            "commit": self.commit,
            "notes": self.notes,
            "targets": list(self.targets),
        }


@dataclass
class CandidateView:
    """`review show`: a candidate's metadata, its diff against the tip and the approval verdict."""

    candidate: Candidate
    question: str
    diff: str
    verdict: Verdict
    pages: list[dict[str, Any]] = field(
        default_factory=list
    )  # a multi-file run: each page with its own diff
    title: str | None = (
        None  # the target page's title as the candidate leaves it (None: it deletes the page)
    )

    def metadata(self) -> dict[str, str | None]:
        """The candidate's branch, commit, trailer values, the target's title and the
        question, in display order."""
        c, t = self.candidate, self.candidate.trailers
        if t is not None and _files(t.kind):  # each page's target, precondition, digest: `pages`
            return {
                "branch": c.ref.removeprefix("refs/heads/"),
                "kind": t.kind,
                "commit": c.commit,
                "target": plural(len(t.files), "page"),
                "precondition": None,
                "bodyDigest": None,
                "base": t.base,
                "question": None,
            }
        return {
            "branch": c.ref.removeprefix("refs/heads/"),
            "kind": t.kind if t else None,
            "commit": c.commit,
            "target": t.target if t else None,
            "title": self.title,
            "precondition": t.precondition if t else None,
            "bodyDigest": t.body_digest if t else None,
            "base": t.base if t else None,
            "question": self.question,
        }

    def provenance(self) -> dict[str, Any]:
        """What the pages were written from: each source with its blob, the model and prompt
        (the Llmwiki-Source, -Model and -Prompt trailers; empty for a plain edit), and for a
        retraction the source it removes (Llmwiki-Retracts)."""
        t = self.candidate.trailers
        return t.provenance() if t is not None else {}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": 1,
            "id": self.candidate.id,
            **self.metadata(),
            "notes": self.candidate.notes,
            "diff": self.diff,
            "verdict": self.verdict.to_json(),
        }
        provenance = self.provenance()
        if provenance:
            out["provenance"] = provenance
        if self.pages:
            out["pages"] = self.pages
        if self.plan is not None:
            out["plan"] = self.plan
        return out

    @property
    def plan(self) -> dict[str, Any] | None:
        """A move's or merge's plan (review/rewrites.py): the moves, or the page folded in and
        what the kept page gains, and every link edit."""
        plan = self.verdict.details.get("plan")
        return plan if isinstance(plan, dict) else None


@dataclass(frozen=True)
class Rejected:
    candidate_id: str
    ref: str  # where the rejected commit is kept


class _CachedWikis:
    """``ws`` whose `wiki` reads through the checker's scan cache (`cached_wiki`), each scope
    once per view: evaluating a candidate read its tip's wiki two or three times (the verdict,
    the page policy, the promise), every page scanned each time (162 s for the review view's
    first queue at 10,000 pages). A view is one moment: its work tree is read once."""

    def __init__(self, ws: ReviewProject) -> None:
        self._ws = ws
        self._wikis: dict[str, Wiki] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)

    def wiki(self, scope: str = "worktree") -> Wiki:
        found = self._wikis.get(scope)
        if found is None:
            found = self._wikis[scope] = self._ws.cached_wiki(scope)
        return found


def _reading(ws: ReviewProject) -> ReviewProject:
    return ws if isinstance(ws, _CachedWikis) else cast("ReviewProject", _CachedWikis(ws))


def list_view(ws: ReviewProject) -> list[CandidateRow]:
    ws = _reading(ws)
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
                elif _row_of(t.kind).status == kinds.LINKS:
                    status = _page_status(verdict)
                else:
                    status = _status(verdict.citations)
        targets = tuple(f.target for f in t.files) if t is not None else ()
        shown = (
            None
            if t is None
            else t.target
            if len(targets) == 1
            else f"{len(targets)} pages: {', '.join(targets)}"
        )
        rows.append(
            CandidateRow(
                candidate.id,
                t.kind if t else None,
                shown,
                candidate.committed_at,
                status,
                t.base if t else None,
                candidate.commit,
                candidate.notes,
                targets,
            )
        )
    return rows


def show_view(ws: ReviewProject, candidate_id: str, onto: str | None = None) -> CandidateView:
    ws = _reading(ws)
    git = ws.require_git("showing candidates")
    candidate = get(git, candidate_id)
    verdict = evaluate(ws, candidate_id, pending_index(git), branch=onto)
    t = candidate.trailers
    diff = verdict.details.get("threeWay", "")
    pages: list[dict[str, Any]] = []
    if t is not None and _files(t.kind) and verdict.code not in REFUSED_SHAPES:
        pages = _pages(git, candidate, verdict.tip)
        diff = diff or "".join(p["diff"] for p in pages)
    elif t is not None and verdict.tip and not diff:
        limit = ws.settings.max_page_bytes
        size = git.object_size(f"{candidate.commit}:{t.target}")
        if size is not None and size > limit:  # a forged 40 MB page is not printed
            diff = f"(no diff: {t.target} is {size:,} bytes, over the {ws.settings.max_page_mb} MB page limit)\n"
        else:
            diff = git.text_diff(verdict.tip, candidate.commit, t.target)
    question = ""
    if t is None or _row_of(t.kind).question:
        question = git.commit_body(candidate.commit).split("\n", 1)[0].removeprefix("Question: ")
    title = (
        _title_at(git, candidate.commit, t.target) if t is not None and not _files(t.kind) else None
    )
    return CandidateView(candidate, question, diff, verdict, pages, title)


def _title_at(git: Git, commit: str, path: str) -> str | None:
    """The title (by convention, ``wiki.titles``) of the page at ``path`` in ``commit``;
    None when the commit has no such page."""
    from ..wiki.frontmatter import parse
    from ..wiki.pages import decode
    from ..wiki.titles import page_title

    data = (git.read_blob_at(commit, path) or b"") if path.endswith(".md") else b""
    text = decode(data)[0] if data else None
    if text is None:
        return None
    meta = parse(text)
    return page_title(meta.data, text[meta.body_offset :], path.rsplit("/", 1)[-1][:-3])


def _pages(git: Git, candidate: Candidate, tip: str | None) -> list[dict[str, Any]]:
    """Each page a multi-file candidate writes, in its trailers' order: target, its title as
    the run leaves it, precondition, digest, and its diff against ``tip`` (against the
    candidate's base without a tip)."""
    t = candidate.trailers
    assert t is not None
    against = tip or t.base
    repaired = repair_report(git.commit_body(candidate.commit))
    pages = []
    for f in t.files:
        diff = git.text_diff(against, candidate.commit, f":(top,literal){f.target}")
        data = git.read_blob_at(candidate.commit, f.target) if f.target.endswith(".md") else None
        pages.append(
            {
                "target": f.target,
                "title": _title_at(git, candidate.commit, f.target),
                "precondition": f.precondition,
                "bodyDigest": f.body_digest,
                "diff": diff,
                "repairs": repaired.get(f.target),
                "uncited": data is not None and b"^[" not in data,
            }
        )
    return pages


def repair_report(body: str) -> dict[str, str]:
    """page -> what compile repaired in it, from the ``Repairs:`` section of a run's commit
    message (compiler/service.py writes it: citations dropped, links unlinked, text stripped)."""
    found: dict[str, str] = {}
    lines = body.splitlines()
    if "Repairs:" not in lines:
        return found
    for line in lines[lines.index("Repairs:") + 1 :]:
        if not line.startswith("- "):
            break
        target, sep, what = line[2:].partition(": ")
        if sep:
            found[target] = what
    return found


def approve_candidate(
    ws: ReviewProject,
    candidate_id: str,
    note: Callable[[str], None] | None = None,
    *,
    allow_broken: bool = False,
    on_approved: Callable[[Approved], None] | None = None,
    refresh_index: bool = True,
) -> Approved:
    """Approve a candidate (see review.approve); ``allow_broken`` only for a retraction,
    whose deleted pages may leave links broken. ``on_approved`` is called as soon as the
    branch has moved (the CLI prints "Approved" then); the search index follows afterwards
    (:func:`refresh_search_index`) unless ``refresh_index`` is False."""
    git = ws.require_git("approving candidates")
    if allow_broken:
        candidate = get(git, candidate_id)
        if candidate.trailers is None or not _row_of(candidate.trailers.kind).allow_broken:
            allowed = [f"{r.shows_as}s" for r in kinds.KIND_ROWS if r.allow_broken]
            raise UsageError(
                f"--allow-broken applies to {' and '.join(allowed)} only, "
                f"and {candidate_id} is not one",
                hint="to approve a run whose links break, fix them in the sources and compile "
                "again, or set the code's severity in [check.severity] (docs/check.md)",
            )
    done = approve(ws, candidate_id, pending_index(git), note, allow_broken=allow_broken)
    if on_approved is not None:
        on_approved(done)
    if refresh_index:
        refresh_search_index(ws)
    return done


def refresh_search_index(ws: ReviewProject) -> None:
    """After an approval (the branch has moved; nothing here can undo it): the search index
    follows the approved pages as a read does -- only the changed pages, lexically at once,
    embedding at most a few chunks (``refresh.ON_THE_FLY_CHUNKS``) and saving; more to embed,
    or no index yet, waits for the next ``llmwiki index`` (reads rank the new pages lexically
    meanwhile). It never embeds the whole wiki: on a 1,000-page vault with no index that took
    over 500 s after "approve" (issue 36)."""
    try:
        ws.retrieval().load()
    except BEST_EFFORT_ERRORS:  # the approval stands; `llmwiki index` catches up
        pass


def reject_candidate(ws: ReviewProject, candidate_id: str) -> Rejected:
    """Close a candidate: its branch moves to refs/llmwiki/rejected/<id> (the commit is kept)."""
    return Rejected(candidate_id, reject(ws.require_git("rejecting candidates"), candidate_id))
