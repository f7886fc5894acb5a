"""The one write path of saving, staging and approving: the repository lock (with recovery of
an interrupted write), the generated table of contents and journal rendered from the tree
being committed, and the branch moved once by the write transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..gitstore.commits import build_commit, move_branch
from ..gitstore.git import Git
from ..gitstore.lock import repository_lock
from ..gitstore.transaction import pending, recover
from ..wiki import generated as G
from ..wiki.indexpage import entries_of, render, same_content
from ..wiki.model import Wiki
from .document import now_iso


@dataclass
class Site:
    """Where a write happens: the repository, its work tree, the project's state folder, the
    project folder relative to the root, and how to load the wiki at a revision."""

    git: Git
    top: Path
    state_dir: Path
    project_prefix: str
    load_wiki: Callable[[str], Wiki]
    notes: list[str] = field(default_factory=list)  # said once to the user (recovery, ownership)

    @classmethod
    def of(cls, project: Project, what: str) -> Site:
        """The write site of ``project``; ``what`` names the write if there is no git."""
        return cls(
            project.require_git(what),
            project.root,
            project.state_dir,
            project.project_prefix,
            project.wiki,
        )


class Project(Protocol):
    """What the services of publication, review and answering take from the place they run
    in (the workspace builds it): the repository, its folders and its wiki at a revision."""

    @property
    def root(self) -> Path: ...  # the work-tree root
    @property
    def git(self) -> Git | None: ...
    @property
    def project_prefix(
        self,
    ) -> str: ...  # the project folder relative to the root ("" for the root)
    @property
    def state_dir(self) -> Path: ...  # the project's .llmwiki/
    def require_git(self, what: str, *, flag: str | None = None) -> Git: ...
    def wiki(self, scope: str = "worktree") -> Wiki: ...


@contextmanager
def locked(site: Site) -> Iterator[None]:
    """Hold the repository lock; first finish or roll back an interrupted write."""
    with repository_lock(site.git, site.state_dir):
        said = recover(site.git, site.top, site.state_dir)
        if said:
            site.notes.append(said)
        yield


def recover_pending(git: Git, top: Path, state_dir: Path) -> str | None:
    """Run at the start of every command: a journal left by a killed write is finished or
    rolled back under the lock (one stat when there is none)."""
    if not pending(state_dir):
        return None
    with repository_lock(git, state_dir):
        return recover(git, top, state_dir)


def _blob(git: Git, rev: str | None, rel: str) -> bytes | None:
    if rev is None:
        return None
    oid = git.blob_at(rev, rel)
    return git.read_blob(oid) if oid else None


def generated_files(
    site: Site,
    tree: str | None,
    head: str | None,
    entry: str,
    page: tuple[str, str] | None = None,
    wiki: Wiki | None = None,
    render_index: Callable[[G.Generated], str] | None = None,
) -> tuple[dict[str, bytes], G.Generated, str]:
    """The generated files to commit on top of ``tree`` (with ``page`` = (path, document)
    written on it, when given): the table of contents rendered from that tree -- never the
    work tree -- and the journal with ``entry`` appended, each only where llmwiki owns it.
    Also returns the ownership decision and the rendered table of contents (for the local
    copy when the user owns ``index.md``). ``wiki``: that tree's wiki, when the caller has it;
    ``render_index``: the table of contents when the caller renders it (`llmwiki mv`)."""
    wiki = wiki if wiki is not None else site.load_wiki(tree or "HEAD")
    overrides = {}
    if page is not None:
        wiki = wiki.with_page(*page)
        overrides = {page[0]: page[1]}
    gen = G.paths_for(
        site.git,
        site.top,
        site.state_dir,
        head,
        wiki_root=wiki.root_dir,
        project_prefix=site.project_prefix,
    )
    site.notes += gen.notes
    text = (
        render_index(gen)
        if render_index is not None
        else render(entries_of(wiki, overrides), now_iso(ms=False))
    )
    files: dict[str, bytes] = {}
    if gen.index_rel is not None:
        old = _blob(site.git, tree, gen.index_rel)
        if old is None or not same_content(old.decode("utf-8", "replace"), text):
            files[gen.index_rel] = text.encode("utf-8")
    if gen.log_rel is not None:
        files[gen.log_rel] = G.appended_log(_blob(site.git, tree, gen.log_rel), entry)
    return files, gen, text


def finish_local(gen: G.Generated, index_text: str, entry: str) -> None:
    """llmwiki's own copies in the state folder, where the user owns the committed files."""
    if gen.index_rel is None:
        G.write_state_file(gen.local_index, index_text.encode("utf-8"))
    if gen.log_rel is None:
        G.write_local_log(gen.local_log, entry)


def commit_and_move(
    site: Site,
    *,
    ref: str,
    head: str | None,
    page_commit: str | None,
    page: tuple[str, str] | None,
    message: str,
    followup_message: str,
    entry: str,
    drop_refs: Sequence[tuple[str, str]] = (),
    what: str,
) -> tuple[str, str]:
    """Build the final commit and move ``ref`` from ``head`` to it, once.

    With ``page`` = (path, document) (a save) the page and the generated files are folded
    into one commit on ``head``; otherwise ``page_commit`` (an approved candidate or its replay
    on ``head``) gets a follow-up commit with the generated files. Returns (page commit on the
    branch, final commit).
    """
    if page is not None:
        files, gen, index_text = generated_files(site, head, head, entry, page)
        final = build_commit(site.git, head, {page[0]: page[1].encode("utf-8"), **files}, message)
        page_on_branch = final
    else:
        assert page_commit is not None
        files, gen, index_text = generated_files(site, page_commit, head, entry)
        page_on_branch = page_commit
        final = (
            build_commit(site.git, page_commit, files, followup_message) if files else page_commit
        )
    force = [p for p in (gen.index_rel, gen.log_rel) if p is not None]
    move_branch(
        site.git,
        site.top,
        ref,
        head,
        final,
        message,
        state_dir=site.state_dir,
        force=force,
        drop_refs=drop_refs,
        what=what,
    )
    finish_local(gen, index_text, entry)
    return page_on_branch, final


def commit_files(
    site: Site,
    *,
    ref: str,
    head: str | None,
    files: Mapping[str, bytes | None],
    message: str,
    entry: str,
    what: str,
) -> str:
    """Commit ``files`` (path -> bytes, None = delete; not pages: ``llmwiki ingest``'s
    sources) with the generated table of contents and the journal entry as one commit on
    ``head``, and move ``ref`` to it once, as one transaction. Returns the commit."""
    generated, gen, index_text = generated_files(site, head, head, entry)
    final = build_commit(site.git, head, {**files, **generated}, message)
    force = [p for p in (gen.index_rel, gen.log_rel) if p is not None]
    move_branch(
        site.git,
        site.top,
        ref,
        head,
        final,
        message,
        state_dir=site.state_dir,
        force=force,
        what=what,
    )
    finish_local(gen, index_text, entry)
    return final
