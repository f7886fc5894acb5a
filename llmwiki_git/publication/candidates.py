"""Candidates: ``refs/heads/llmwiki/review/<id>`` branches whose single commit adds or
replaces one ``queries/<slug>.md`` page, described by a trailer block."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import LlmwikiError, UsageError
from ..git import Git
from ..wiki.frontmatter import split
from . import trailers as T

PREFIX = "refs/heads/llmwiki/review/"
REJECTED = "refs/llmwiki/rejected/"
_ID = re.compile(r"^[^\x00-\x20/\\~^:?*\[.][^\x00-\x20/\\~^:?*\[]{0,200}-[0-9a-f]{8}$")


class CandidateNotFound(LlmwikiError):
    def __init__(self, candidate_id: str) -> None:
        super().__init__(f"no review candidate {candidate_id!r}", hint="run `llmwiki review list` to see the open ones")


@dataclass
class Candidate:
    id: str
    commit: str
    trailers: T.Trailers | None
    subject: str = ""
    committed_at: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return PREFIX + self.id

    @property
    def slug(self) -> str | None:
        if self.trailers is None:
            return None
        name = self.trailers.target.rsplit("/", 1)[-1]
        return name[:-3] if name.endswith(".md") else None


def body_digest(document: bytes | str) -> str:
    """sha256 of the page body after the frontmatter block, as bytes (no normalization)."""
    text = document.decode("utf-8", "replace") if isinstance(document, bytes) else document
    _, offset, _ = split(text)
    return "sha256:" + hashlib.sha256(text[offset:].encode("utf-8")).hexdigest()


def new_id(git: Git, slug: str) -> str:
    for _ in range(16):
        candidate_id = f"{slug}-{secrets.token_hex(4)}"
        if check_id(git, candidate_id, must_exist=False):
            return candidate_id
    raise LlmwikiError("could not allocate a fresh candidate id (16 collisions)")


def check_id(git: Git, candidate_id: str, *, must_exist: bool = True) -> bool:
    """Whether ``candidate_id`` is safe as a ref component; raise UsageError otherwise."""
    if not _ID.match(candidate_id) or candidate_id.endswith(".lock") or ".." in candidate_id or "@{" in candidate_id:
        raise UsageError(f"{candidate_id!r} is not a valid candidate id", hint="ids look like <slug>-<8 hex>")
    probe = git.run("check-ref-format", "--branch", f"llmwiki/review/{candidate_id}", check=False)
    if not probe.strip():
        raise UsageError(f"{candidate_id!r} is not a valid candidate id (not a valid ref name)")
    exists = git.rev_parse(PREFIX + candidate_id) is not None
    if must_exist and not exists:
        raise CandidateNotFound(candidate_id)
    return not exists


def list_candidates(git: Git) -> list[Candidate]:
    """Open candidates, oldest first. A branch whose trailers are malformed is listed with a
    note (it can be rejected, never approved)."""
    out = git.run("for-each-ref", "--format=%(refname)%09%(objectname)%09%(committerdate:unix)%09%(subject)",
                  PREFIX).decode("utf-8", "replace")
    rows = []
    for line in out.splitlines():
        ref, commit, stamp, subject = (line.split("\t") + ["", "", "", ""])[:4]
        rows.append((ref[len(PREFIX):], commit, int(stamp or 0), subject))
    found = T.read_many(git, [c for _, c, _, _ in rows])
    candidates = []
    for candidate_id, commit, stamp, subject in rows:
        parsed = T.parse(found.get(commit, {}))
        candidate = Candidate(candidate_id, commit, parsed, subject, stamp)
        if parsed is None:
            candidate.notes.append("malformed trailers: cannot be approved")
        elif parsed.candidate != candidate_id:
            candidate.notes.append(f"trailer names candidate {parsed.candidate!r}, not the branch's id")
        candidates.append(candidate)
    candidates.sort(key=lambda c: (c.committed_at, c.id))
    return candidates


def get(git: Git, candidate_id: str) -> Candidate:
    check_id(git, candidate_id)
    for candidate in list_candidates(git):
        if candidate.id == candidate_id:
            return candidate
    raise CandidateNotFound(candidate_id)


@dataclass(frozen=True)
class BranchPending:
    """The pending index of DESIGN §3 from open candidate branches: slug -> candidate ids.
    Only well-formed candidates whose target is a query page count."""

    by_slug: dict[str, tuple[str, ...]]

    def candidates_for(self, slug: str) -> Sequence[str]:
        return self.by_slug.get(slug, ())

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.by_slug.values())


def pending_index(git: Git) -> BranchPending:
    by_slug: dict[str, list[str]] = {}
    for candidate in list_candidates(git):
        if candidate.trailers is None or candidate.notes or candidate.slug is None:
            continue
        if candidate.trailers.kind != T.KIND or "/queries/" not in f"/{candidate.trailers.target}":
            continue
        by_slug.setdefault(candidate.slug, []).append(candidate.id)
    return BranchPending({k: tuple(sorted(v)) for k, v in by_slug.items()})


def reject(git: Git, candidate_id: str) -> str:
    """Move the branch to ``refs/llmwiki/rejected/<id>`` (bytes kept); returns the new ref."""
    check_id(git, candidate_id)
    commit = git.rev_parse(PREFIX + candidate_id)
    assert commit is not None
    target = REJECTED + candidate_id
    git.run("update-ref", "-m", f"llmwiki: reject {candidate_id}", target, commit, "")
    git.run("update-ref", "-m", f"llmwiki: reject {candidate_id}", "-d", PREFIX + candidate_id, commit)
    return target
