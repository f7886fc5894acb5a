"""Staging a move (``llmwiki mv OLD NEW --review``) or a page merge (``llmwiki merge-pages A
B``) as ONE review candidate: the plan of ``rewrites.py`` made at the current tip under the
repository lock, written as a multi-file candidate (``stagefiles.py``) whose trailers name
the move. The user's work tree, index and HEAD are untouched; approval is the one validated
path of every multi-file kind, all or nothing (``filespolicy.py``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from ..errors import MoveRefused, UsageError
from ..gitstore.commits import current_branch
from ..publication import kinds
from ..publication.move import clean_pair, clean_path
from ..publication.trailers import MERGE_KIND, MOVE_KIND, Recorded
from ..publication.write import Site, locked
from ..wiki.model import Wiki
from ..wiki.slug import slugify
from .project import ReviewProject
from .rewrites import RewriteRun, run_at
from .stagefiles import StagedFiles, stage_locked


@dataclass
class StagedRewrite:
    """A staged (or, with ``dry_run``, planned) move or merge."""

    run: RewriteRun
    dry_run: bool
    staged: StagedFiles | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            **self.run.plan,
            "dryRun": self.dry_run,
            "review": True,
            "candidate": None if self.staged is None else self.staged.to_json(),
            "refusals": list(self.run.refusals),
            "notes": list(self.run.notes),
        }


def stage_move(
    ws: ReviewProject,
    old: str,
    new: str,
    *,
    dry_run: bool = False,
    load_wiki: Callable[[str], Wiki] | None = None,
    note: Callable[[str], None] | None = None,
) -> StagedRewrite:
    """Stage moving ``old`` to ``new`` (paths from the repository root) as a ``move/1``
    candidate; with ``dry_run``, only its plan. Raises MoveRefused when something is in the
    way (not for a dry run: its plan lists it)."""
    old, new = clean_pair(old, new)
    return _stage(ws, MOVE_KIND, old, new, dry_run, load_wiki, note)


def stage_merge(
    ws: ReviewProject,
    keep: str,
    fold: str,
    *,
    dry_run: bool = False,
    load_wiki: Callable[[str], Wiki] | None = None,
    note: Callable[[str], None] | None = None,
) -> StagedRewrite:
    """Stage folding the page ``fold`` into the page ``keep`` as a ``merge/1`` candidate."""
    keep, fold = clean_path(keep), clean_path(fold)
    if keep == fold:
        raise UsageError(f"{keep} cannot be merged into itself", hint="name two different pages")
    return _stage(ws, MERGE_KIND, fold, keep, dry_run, load_wiki, note)


def _what(kind: str, source: str, target: str) -> tuple[str, str]:
    row = kinds.BY_NAME[kind]
    return row.refers.format_map({"from": source, "to": target}), row.verb


def _stage(
    ws: ReviewProject,
    kind: str,
    source: str,
    target: str,
    dry_run: bool,
    load_wiki: Callable[[str], Wiki] | None,
    note: Callable[[str], None] | None,
) -> StagedRewrite:
    git = ws.require_git("staging a review candidate")
    site = Site.of(ws, "staging a review candidate")
    what, verb = _what(kind, source, target)
    try:
        with nullcontext() if dry_run else locked(site):
            current_branch(git)  # refuse on a detached HEAD
            head = git.rev_parse("HEAD")
            if head is None:
                raise MoveRefused(
                    what, ["the branch has no commit yet"], hint="commit the wiki first", verb=verb
                )
            load = load_wiki or ws.wiki
            wiki = load(head)
            run = run_at(ws, kind, source, target, head, lambda _rev: wiki)
            if kinds.BY_NAME[kind].renames_files:
                run.refusals += _worktree_refusals(ws, source, target)
            if dry_run:
                return StagedRewrite(run, True)
            if run.refusals:
                raise MoveRefused(
                    what,
                    run.refusals,
                    verb=verb,
                    hint="nothing was staged; fix what is listed"
                    + (", or pick another name" if kinds.BY_NAME[kind].renames_files else ""),
                )
            staged = stage_locked(
                ws,
                run.writes,
                kind=kind,
                slug=_slug(kind, target),
                subject=run.subject,
                body=run.summary,
                recorded=Recorded(move_from=run.move[0], move_to=run.move[1]),
                base=head,
                root_dir=wiki.root_dir,
            )
            if staged is None:  # every write already reads so: nothing to review
                raise MoveRefused(what, ["it changes nothing"], verb=verb)
            return StagedRewrite(run, False, staged)
    finally:
        for text in site.notes:
            if note is not None:
                note(text)


def _worktree_refusals(ws: ReviewProject, old: str, new: str) -> list[str]:
    """A reviewed move starts from HEAD: a rename already made in the work tree, or a file of
    the user's at NEW, would stand in the approval's way."""
    top = ws.root
    if not os.path.lexists(top / old) and os.path.lexists(top / new):
        return [
            f"{old} was already renamed to {new} in the work tree, and a review candidate is staged from HEAD: "
            f"run `llmwiki mv {old} {new}` without --review to commit that rename with its links, or undo it "
            f"(git mv {new} {old}) first"
        ]
    if os.path.lexists(top / new):
        return [f"{new} exists in the work tree; move it away first or pick another name"]
    return []


def _slug(kind: str, target: str) -> str:
    stem = target.rsplit("/", 1)[-1]
    stem = stem[:-3] if stem.lower().endswith(".md") else stem
    return f"{kinds.BY_NAME[kind].id_prefix}-{slugify(stem)[:60].strip('-') or 'page'}"
