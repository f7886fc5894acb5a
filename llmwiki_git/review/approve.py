"""``review approve``: a validated fast-forward of the current branch to the candidate.

`evaluate` is the read-only part (also used by ``review show`` and the GitHub Action);
`approve` runs it under the project lock and then moves the branch with a compare-and-swap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..answer.document import log_entry, now_iso
from ..answer.gitwrite import build_commit, commit_paths, current_branch
from ..answer.lock import ProjectLock
from ..answer.publish import body_of, policy_refusal
from ..confine import read_optional
from ..errors import LlmwikiError
from ..git import Git
from ..wiki.citations import Citation, PendingIndex, citation_report
from ..wiki.indexpage import entries_of, render
from . import trailers as T
from .candidates import PREFIX, Candidate, body_digest, get, validate

RESTAGE = "regenerate and restage the answer with `llmwiki query \"…\" --save --review`, then reject this candidate"


@dataclass
class Verdict:
    ok: bool
    code: str  # ok | malformed | not-single-commit | touches-other-files | candidate-edited | forged | target-changed | target-appeared | target-vanished | broken | pending | unavailable
    message: str
    candidate: Candidate
    tip: str | None = None
    branch: str | None = None
    citations: list[Citation] | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "code": self.code, "message": self.message, "tip": self.tip, "branch": self.branch,
                "citations": None if self.citations is None else [c.to_json() for c in self.citations]}


def _blob_at(git: Git, commit: str, path: str) -> str | None:
    out = git.run("rev-parse", "--verify", "--quiet", f"{commit}:{path}", check=False).decode().strip()
    return out or None


def evaluate(ws, candidate_id: str, pending: PendingIndex | None, *, branch: str | None = None) -> Verdict:  # type: ignore[no-untyped-def]
    """Would approving ``candidate_id`` onto ``branch`` (default: the current one) pass?"""
    git: Git = ws.require_git("reviewing candidates")
    candidate = get(git, candidate_id)
    ref = branch or current_branch(git)
    tip = git.rev_parse(ref)

    def refuse(code: str, message: str, **details: Any) -> Verdict:
        return Verdict(False, code, message, candidate, tip, ref, details=details)

    t = candidate.trailers
    try:
        tip_wiki = ws.wiki(tip) if tip is not None else None
    except LlmwikiError:  # judged below as "validation unavailable"
        tip_wiki = None
    malformed = validate(git, candidate, (tip_wiki or ws.wiki("worktree")).root_dir)
    if malformed is not None:
        extra = f": {RESTAGE}" if malformed.code == "not-single-commit" else ""
        return refuse(malformed.code, malformed.message + extra)
    assert t is not None
    new_blob = _blob_at(git, candidate.commit, t.target)
    if new_blob is None:
        return refuse("touches-other-files", f"candidate {candidate_id} deletes {t.target}")
    document = git.run("cat-file", "blob", new_blob)
    if body_digest(document) != t.body_digest:
        return refuse("candidate-edited", f"candidate-edited: the answer body of {candidate_id} no longer matches its digest; {RESTAGE}")
    at_base = _blob_at(git, t.base, t.target)
    claimed = T.ABSENT if at_base is None else f"blob {at_base}"
    if t.precondition != claimed:
        return refuse("forged", f"candidate {candidate_id} claims precondition {t.precondition!r}, but at its base the target was {claimed!r}; {RESTAGE}")
    if tip is None:
        return refuse("target-vanished", f"branch {ref} does not exist")
    at_tip = _blob_at(git, tip, t.target)
    if at_tip != at_base:
        code = "target-appeared" if at_base is None else ("target-vanished" if at_tip is None else "target-changed")
        what = {"target-appeared": "now exists", "target-vanished": "was deleted", "target-changed": "changed"}[code]
        return refuse(code, f"{t.target} {what} since {candidate_id} was staged; {RESTAGE}")
    try:
        after = (tip_wiki or ws.wiki(tip)).with_page(t.target, document.decode("utf-8"))
        citations, error = citation_report(body_of(document.decode("utf-8")), after, pending), None
    except Exception as exc:  # validation failure refuses, keeps the candidate
        citations, error = None, f"{exc.__class__.__name__}: {exc}"
    refusal = policy_refusal(citations, error, "direct")
    if refusal is not None:
        verdict = refuse(refusal.code, refusal.message.replace("Answer publication refused", f"Approval of {candidate_id} refused")
                         + "; the candidate is kept")
        verdict.citations = citations
        return verdict
    return Verdict(True, "ok", f"{candidate_id} can be approved onto {ref}", candidate, tip, ref, citations)


@dataclass
class Approved:
    candidate_id: str
    commit: str
    replayed: bool
    followup: str
    target: str


class ApprovalRefused(LlmwikiError):
    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


def approve(ws, candidate_id: str, pending: PendingIndex | None) -> Approved:  # type: ignore[no-untyped-def]
    git: Git = ws.require_git("approving candidates")
    with ProjectLock(ws.state_dir):
        verdict = evaluate(ws, candidate_id, pending)
        if not verdict.ok:
            raise ApprovalRefused(verdict)
        t = verdict.candidate.trailers
        assert t is not None and verdict.tip is not None and verdict.branch is not None
        commit = verdict.candidate.commit
        replayed = t.base != verdict.tip
        if replayed:
            raw = git.run("cat-file", "commit", commit).decode("utf-8", "surrogateescape")
            message = raw.split("\n\n", 1)[1]
            message = message.rstrip("\n") + f"\n{T.REPLAYED}: {commit}\n"
            document = git.run("cat-file", "blob", f"{commit}:{t.target}")
            author = git.text("log", "-1", "--format=%an%x00%ae%x00%ad", "--date=raw", commit).split("\0")
            commit = build_commit(git, verdict.tip, {t.target: document}, message,
                                  author=(author[0], author[1], author[2]))
        _fast_forward(git, verdict.branch, verdict.tip, commit)
        question = verdict.candidate.subject
        after = ws.wiki("worktree")
        index_rel = f"{after.root_dir}/index.md" if after.root_dir else "index.md"
        log_rel = f"{ws.base}/log.md" if ws.base else "log.md"
        old_log = read_optional(git.root, log_rel, b"# Log\n\n")  # never through a symlink
        entry = log_entry("approve", question, [f"Candidate: {candidate_id}", f"Page: {t.target}", f"Commit: {commit}"])
        files = {index_rel: render(entries_of(after), now_iso(ms=False)).encode("utf-8"),
                 log_rel: old_log + entry.encode("utf-8")}
        followup = commit_paths(git, files, f"llmwiki: index and log for approved {candidate_id}\n", expected_head=commit)
        git.run("update-ref", "-m", f"llmwiki: approved {candidate_id}", "-d", PREFIX + candidate_id, verdict.candidate.commit)
    return Approved(candidate_id, commit, replayed, followup, t.target)


def _fast_forward(git: Git, branch: str, old: str, new: str) -> None:
    """Move ``branch`` from ``old`` to ``new``: ``merge --ff-only`` when it is checked out
    (so the work tree follows), else a compare-and-swap ``update-ref``."""
    head_ref = git.run("symbolic-ref", "-q", "HEAD", check=False).decode().strip()
    if head_ref == branch:
        current = git.rev_parse("HEAD")
        if current != old:
            raise LlmwikiError(f"{branch} moved to {current} during approval; nothing was changed",
                               hint="run `llmwiki review approve` again")
        proc = git.run("merge", "--ff-only", "--quiet", new, check=False)
        if git.rev_parse("HEAD") != new:
            raise LlmwikiError(f"could not fast-forward {branch} to the candidate (work tree changes in the way?): "
                               f"{proc.decode('utf-8', 'replace').strip()}", hint="commit or stash your changes to the target page")
        return
    out = git.run("update-ref", "-m", "llmwiki: approve", branch, new, old, check=False)
    if git.rev_parse(branch) != new:
        raise LlmwikiError(f"{branch} moved during approval; nothing was changed {out.decode().strip()}",
                           hint="run `llmwiki review approve` again")
