"""Multi-file candidates: one commit that adds, replaces or deletes several pages, each listed
in the trailers with its own precondition (``absent`` or the blob its writer read) and body
digest: every kind whose row in ``publication/kinds.py`` has ``files`` (``compile/1``,
``move/1``, ``merge/1``, ``retraction/1``) is staged this way.

Every file is a ``.md`` page under the wiki root (never the generated index or journal,
never in ``sources/``, never through a hidden folder) written as a regular file, and every
page must pass :func:`~llmwiki_git.wiki.pages.acceptance_problem`, the one acceptance rule of
every candidate kind -- the same at staging and at approval. The one exception: a retraction
(``retraction/1``) deletes the source it retracts (``Recorded.retracts``), a regular file in
``sources/`` -- deleted, never written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..gitstore.commits import build_commit, current_branch
from ..gitstore.git import Git
from ..gitstore.transaction import crash_point
from ..publication.candidates import (
    PREFIX,
    SOURCE_MODES,
    body_digest,
    new_id,
    page_target_problem,
    source_target_problem,
    users_own_page,
)
from ..publication.trailers import (
    ABSENT,
    FileTrailer,
    Recorded,
    with_files,
)
from ..publication.trailers import (
    message as commit_message,
)
from ..publication.write import Site, locked
from ..wiki.pages import acceptance_problem  # the one acceptance rule (issue 22), re-exported
from ..wiki.provenance import in_sources
from .pagepolicy import precondition_of
from .project import ReviewProject


@dataclass(frozen=True)
class FileWrite:
    """One page of a multi-file candidate: ``document`` None deletes it; ``started_from`` is
    the blob its writer read (``absent`` for a page believed new), None: the base's."""

    target: str
    document: str | None
    started_from: str | None = None
    own_page: bool = False  # a vault's own index.md or log.md whose links a move or merge rewrites


@dataclass(frozen=True)
class StagedFiles:
    candidate_id: str
    branch: str
    commit: str
    base: str
    files: tuple[FileTrailer, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.candidate_id,
            "branch": self.branch,
            "commit": self.commit,
            "base": self.base,
            "pages": [
                {"target": f.target, "precondition": f.precondition, "bodyDigest": f.body_digest}
                for f in self.files
            ],
        }


def plan_files(
    git: Git,
    base: str,
    root_dir: str,
    project_prefix: str,
    writes: Sequence[FileWrite],
    max_bytes: int,
    retracts: str | None = None,
) -> list[FileTrailer]:
    """Each write checked (target, regular file at the base, acceptance) and described as its
    trailer; writes that change nothing at ``base`` are left out. UsageError names the first
    write refused: one bad page stages nothing."""
    planned = []
    seen: set[str] = set()
    for write in writes:
        target = write.target
        problem = _target_problem(git, base, root_dir, project_prefix, write, retracts)
        if problem is None and target in seen:
            problem = f"{target} is written twice"
        if problem is not None:
            raise UsageError(f"cannot stage {target!r}: {problem}")
        seen.add(target)
        at_base = git.blob_at(base, target)
        regular = SOURCE_MODES if target == retracts else ("100644",)
        if at_base is not None and git.file_mode(base, target) not in regular:
            raise UsageError(
                f"cannot stage {target}: it is not a regular file at the base (a symlink, executable "
                "or submodule)"
            )
        if write.document is None:
            if at_base is None:
                continue  # deleting what is not there: nothing to do
            digest = ABSENT
        else:
            bad = acceptance_problem(write.document, max_bytes)
            if bad is not None:
                raise UsageError(f"cannot stage {target}: {bad}")
            if at_base is not None and git.read_blob(at_base) == write.document.encode("utf-8"):
                continue  # the page already reads so
            digest = body_digest(write.document)
        started = write.started_from
        precondition = (
            precondition_of(at_base)
            if started is None
            else ABSENT
            if started == ABSENT
            else f"blob {started}"
        )
        planned.append(FileTrailer(target, precondition, digest))
    return planned


def _target_problem(
    git: Git,
    base: str,
    root_dir: str,
    project_prefix: str,
    write: FileWrite,
    retracts: str | None,
) -> str | None:
    """Why ``write`` may not be staged at its target (None: it may): a page under the wiki
    root (a user's own page only where ``own_page`` says so), or the source a retraction
    deletes."""
    target = write.target
    if retracts is not None and target == retracts:
        problem = source_target_problem(target, project_prefix)
        if problem is None and write.document is not None:
            problem = "a retraction deletes its source, it never writes one"
        return problem
    problem = page_target_problem(target, root_dir)
    if problem is not None and write.own_page and users_own_page(git, base, target, root_dir):
        problem = None
    if problem is None and in_sources(target, project_prefix):
        problem = f"target {target!r} is a source (in sources/), not a page"
    return problem


def stage_files(
    ws: ReviewProject,
    writes: Sequence[FileWrite],
    *,
    kind: str,
    slug: str,
    subject: str,
    body: str,
    recorded: Recorded = Recorded(),
    base: str | None = None,
    note: Callable[[str], None] | None = None,
) -> StagedFiles | None:
    """Stage ``writes`` as ONE candidate of ``kind`` on ``base`` (default: the current tip),
    under the repository lock; None when no write changes anything. The user's work tree,
    index and HEAD are untouched."""
    site = Site.of(ws, "staging a review candidate")
    try:
        with locked(site):
            return stage_locked(
                ws,
                writes,
                kind=kind,
                slug=slug,
                subject=subject,
                body=body,
                recorded=recorded,
                base=base,
            )
    finally:
        for text in site.notes:
            if note is not None:
                note(text)


def stage_locked(
    ws: ReviewProject,
    writes: Sequence[FileWrite],
    *,
    kind: str,
    slug: str,
    subject: str,
    body: str,
    recorded: Recorded = Recorded(),
    base: str | None = None,
    root_dir: str | None = None,
) -> StagedFiles | None:
    """:func:`stage_files` for a caller that holds the repository lock already (and decides,
    under it, whether to stage at all); ``root_dir``, the wiki root at ``base``, when the
    caller knows it (else the wiki at ``base`` is read to find it)."""
    git: Git = ws.require_git("staging a review candidate")
    current_branch(git)  # refuse on a detached HEAD
    base = base or git.rev_parse("HEAD")
    if base is None:
        raise UsageError("the branch has no commit yet", hint="commit the wiki first")
    root_dir = ws.wiki(base).root_dir if root_dir is None else root_dir
    files = plan_files(
        git,
        base,
        root_dir,
        ws.project_prefix,
        writes,
        ws.settings.max_page_bytes,
        recorded.retracts,
    )
    if not files:
        return None
    return _commit(git, base, writes, files, kind, slug, subject, body, recorded)


def _commit(
    git: Git,
    base: str,
    writes: Sequence[FileWrite],
    files: list[FileTrailer],
    kind: str,
    slug: str,
    subject: str,
    body: str,
    recorded: Recorded,
) -> StagedFiles:
    candidate_id = new_id(git, slug)
    trailers = with_files(candidate_id, kind, files, base, recorded)
    documents = {w.target: w.document for w in writes}
    data = {
        f.target: (
            None if documents[f.target] is None else str(documents[f.target]).encode("utf-8")
        )
        for f in files
    }
    commit = build_commit(git, base, data, commit_message(subject[:200], body, trailers))
    crash_point("stage")  # a kill here leaves an unreferenced commit and no branch: nothing staged
    git.update_ref(PREFIX + candidate_id, commit, "", message=f"llmwiki: stage {candidate_id}")
    return StagedFiles(candidate_id, f"llmwiki/review/{candidate_id}", commit, base, tuple(files))
