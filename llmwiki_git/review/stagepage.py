"""``review stage`` and MCP ``propose_page``: a page edit, addition or deletion staged as a
``page/1`` candidate branch -- one commit on the current tip, built with plumbing (the work
tree, index and HEAD are untouched), naming the blob the editor started from."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..confine import refuse_symlinks
from ..errors import PathRefused, UsageError
from ..gitstore.commits import build_commit, current_branch
from ..gitstore.git import Git
from ..publication.candidates import PREFIX, body_digest, new_id, page_target_problem
from ..publication.trailers import ABSENT, PAGE_KIND, FileTrailer, Recorded, with_files
from ..publication.trailers import message as commit_message
from ..publication.write import Site, locked
from ..wiki.pages import acceptance_problem
from ..wiki.provenance import in_sources, source_paths, sources_dir, stamp
from ..wiki.slug import slugify
from .pagepolicy import blob_of_precondition, precondition_of
from .project import ReviewProject
from .stage import Staged


@dataclass(frozen=True)
class PageEdit:
    target: str  # repository-relative path of the page
    document: str | None  # None: delete the page
    started_from: str | None = None  # "absent", a blob id, or a commit-ish; None: HEAD's blob
    sources: tuple[
        str, ...
    ] = ()  # sources it was written from (paths from the project folder): recorded as compile does


def source_blobs(
    git: Git, base: str, project_prefix: str, names: Sequence[str]
) -> list[tuple[str, str]]:
    """(repository path, blob at ``base``) of each named source; UsageError for a name that
    is not a file in the project's ``sources/`` folder at ``base``."""
    paths = source_paths(list(names), project_prefix)
    if len(paths) != len(names):
        raise UsageError(
            f"sources must be paths from the project folder such as sources/paper.md, not {list(names)!r}"
        )
    found = []
    for path in paths:
        blob = git.blob_at(base, path) if in_sources(path, project_prefix) else None
        if blob is None or git.file_mode(base, path) not in ("100644", "100755"):
            raise UsageError(
                f"source {path} is not a file in {sources_dir(project_prefix)}/ at HEAD",
                hint="name committed sources (`llmwiki ingest` adds them)",
            )
        found.append((path, blob))
    return found


def _started_from(git: Git, base: str, target: str, given: str | None) -> str:
    """The precondition: HEAD's blob (or ``absent``) unless the editor says what they read --
    ``absent``, a blob id, or a commit whose version of the page they read."""
    if given is None:
        return precondition_of(git.blob_at(base, target))
    given = given.strip()
    if given == ABSENT:
        return ABSENT
    kind = git.object_type(given)
    if kind == "blob":
        return precondition_of(git.peel(given, "blob"))
    if kind in ("commit", "tag"):
        commit = git.peel(given, "commit")
        return precondition_of(git.blob_at(commit, target))
    try:
        return precondition_of(
            blob_of_precondition(f"blob {given.lower()}")
        )  # a blob id not in this repository
    except UsageError:
        raise UsageError(
            f"--from {given!r} names no blob or commit here",
            hint="give the blob id you read (read_page's blobId), a commit, or 'absent'",
        ) from None


def stage_pages(
    ws: ReviewProject, edits: Sequence[PageEdit], note: Callable[[str], None] | None = None
) -> list[Staged]:
    """Stage each edit as its own candidate, all on the current tip, under the repository
    lock. Every edit is checked before any branch is created: one bad edit stages nothing."""
    git: Git = ws.require_git("staging a page edit")
    site = Site.of(ws, "staging a page edit")
    try:
        with locked(site):
            current_branch(git)  # refuse on a detached HEAD
            base = git.rev_parse("HEAD")
            if base is None:
                raise UsageError(
                    "the branch has no commit yet", hint="commit the wiki first, then stage edits"
                )
            root_dir = ws.wiki(base).root_dir
            limit = ws.settings.max_page_bytes
            sourced = [_with_sources(git, base, ws.project_prefix, edit) for edit in edits]
            planned = [
                (*_plan(git, Path(ws.root), base, root_dir, edit, limit), pairs)
                for edit, pairs in sourced
            ]
            return [
                _commit(git, base, edit, precondition, pairs)
                for edit, precondition, pairs in planned
            ]
    finally:
        for text in site.notes:
            if note is not None:
                note(text)


def _with_sources(
    git: Git, base: str, project_prefix: str, edit: PageEdit
) -> tuple[PageEdit, tuple[tuple[str, str], ...]]:
    """An edit naming its sources gets them in its frontmatter (``sources:``,
    ``sourceBlobs:``), as a compiled page does; their blobs go into the trailers."""
    if not edit.sources:
        return edit, ()
    if edit.document is None:
        raise UsageError(
            f"cannot stage the deletion of {edit.target} with sources: a deleted page has none"
        )
    pairs = source_blobs(git, base, project_prefix, edit.sources)
    return PageEdit(
        edit.target, stamp(edit.document, pairs, project_prefix), edit.started_from, edit.sources
    ), tuple(pairs)


def _plan(
    git: Git, top: Path, base: str, root_dir: str, edit: PageEdit, limit: int
) -> tuple[PageEdit, str]:
    problem = page_target_problem(edit.target, root_dir)
    if problem is not None:
        raise UsageError(f"cannot stage {edit.target!r}: {problem}")
    refuse_symlinks(top, edit.target)
    at_base = git.blob_at(base, edit.target)
    if at_base is not None and git.file_mode(base, edit.target) != "100644":
        raise PathRefused(
            edit.target, "is not a regular file at HEAD (a symlink, executable or submodule)"
        )
    if edit.document is None:
        if at_base is None:
            raise UsageError(f"cannot stage the deletion of {edit.target}: it is not in HEAD")
    else:
        bad = acceptance_problem(
            edit.document, max_bytes=limit
        )  # the one acceptance rule, as approval applies it
        if bad is not None:
            raise UsageError(
                f"cannot stage {edit.target}: {bad}",
                hint="a page must be fully checkable: UTF-8 within the size limit, without NUL bytes, "
                "escape sequences or bidi overrides",
            )
        if at_base is not None and git.read_blob(at_base) == edit.document.encode("utf-8"):
            raise UsageError(f"{edit.target} is unchanged from HEAD: nothing to stage")
    return edit, _started_from(git, base, edit.target, edit.started_from)


def _commit(
    git: Git,
    base: str,
    edit: PageEdit,
    precondition: str,
    sources: tuple[tuple[str, str], ...] = (),
) -> Staged:
    stem = edit.target.rsplit("/", 1)[-1][:-3]
    candidate_id = new_id(git, (slugify(stem) or "page")[:80])
    digest = ABSENT if edit.document is None else body_digest(edit.document)
    trailers = with_files(
        candidate_id,
        PAGE_KIND,
        [FileTrailer(edit.target, precondition, digest)],
        base,
        Recorded(sources=sources),
    )
    verb = "delete" if edit.document is None else ("edit" if precondition != ABSENT else "add")
    message = commit_message(f"llmwiki: review candidate: {verb} {edit.target}"[:200], "", trailers)
    data = None if edit.document is None else edit.document.encode("utf-8")
    commit = build_commit(git, base, {edit.target: data}, message)
    git.update_ref(PREFIX + candidate_id, commit, "", message=f"llmwiki: stage {candidate_id}")
    return Staged(candidate_id, f"llmwiki/review/{candidate_id}", commit, edit.target, precondition)


def worktree_edits(
    ws: ReviewProject, paths: Sequence[str], started_from: str | None = None
) -> list[PageEdit]:
    """The work-tree state of the named pages (repository-relative; default: every page under
    the wiki root that differs from HEAD) as edits: a missing file is a deletion."""
    from .. import confine

    git: Git = ws.require_git("staging a page edit")
    top = Path(ws.root)
    worktree = ws.wiki("worktree")
    root_dir = worktree.root_dir
    if not paths:
        known = set(worktree.by_path) | (
            set(ws.wiki("HEAD").by_path) if git.rev_parse("HEAD") else set()
        )
        records = git.status_paths(
            f":(top,literal){root_dir}" if root_dir else ":(top)", renames=False
        )
        names = sorted(
            {rec[3:].decode("utf-8", "surrogateescape") for rec in records if len(rec) > 3}
        )
        paths = [n for n in names if n in known and page_target_problem(n, root_dir) is None]
        if not paths:
            raise UsageError(
                "no changed page under the wiki root: nothing to stage",
                hint="edit a page first, or name the pages: `llmwiki review stage <path>`",
            )
    edits = []
    for rel in paths:
        refuse_symlinks(top, rel)
        if not os.path.lexists(top / rel):
            edits.append(PageEdit(rel, None, started_from))
            continue
        data = confine.read_file(
            top / rel, max_bytes=ws.settings.max_page_bytes, name=rel, nofollow=True
        )
        try:
            edits.append(PageEdit(rel, data.decode("utf-8"), started_from))
        except UnicodeDecodeError:
            raise UsageError(f"cannot stage {rel}: it is not UTF-8 text") from None
    return edits


def restore(ws: ReviewProject, edits: Sequence[PageEdit]) -> list[str]:
    """Put the staged pages back to HEAD in the work tree and index; a page edited again since
    staging is left alone and returned."""
    git: Git = ws.require_git("restoring pages")
    top = Path(ws.root)
    kept = []
    for edit in edits:
        path = top / edit.target
        now = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        if now != (None if edit.document is None else edit.document.encode("utf-8")):
            kept.append(edit.target)
            continue
        spec = f":(top,literal){edit.target}"
        if git.blob_at("HEAD", edit.target) is not None:
            git.restore_from_head(spec)
        else:
            git.unstage(spec)
            path.unlink(missing_ok=True)
    return kept
