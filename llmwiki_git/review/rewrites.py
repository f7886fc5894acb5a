"""The files a reviewed move (``move/1``) or page merge (``merge/1``) writes, decided from its
base commit alone: at staging (``stagerewrite.py``), and again in ``review show`` and at
approval (``filespolicy.py``), where a candidate whose commit is not exactly that plan --
the same files, each with the precondition its base gives and the text the plan gives -- is
refused (``plan-mismatch``). A forged or edited branch never passes for a move, and a vault's
own ``index.md`` may be written by one only because its every byte is the plan's.

A reviewed move holds pages only (regular ``.md`` files under the wiki root, a folder of
them), as every candidate does; images and other files move with ``llmwiki mv`` itself.
llmwiki's generated ``index.md`` and ``log.md`` are left out: approval regenerates them.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import LlmwikiError
from ..gitstore.git import Git
from ..publication import kinds
from ..publication.candidates import GENERATED, Candidate
from ..publication.move import clean_pair, clean_path, is_generated, planned_moves, tree_under
from ..publication.trailers import MERGE_KIND, MOVE_KIND, Trailers
from ..wiki.merge import plan_merge
from ..wiki.model import Wiki
from ..wiki.pages import acceptance_problem
from ..wiki.rewrite import RewritePlan, apply_edits, plan_moves
from ..wiki.snapshots import SourceFile
from ..wording import plural
from .pagepolicy import precondition_of
from .project import ReviewProject
from .stagefiles import FileWrite


@dataclass
class RewriteRun:
    """What a move or merge writes at one base: its files (``writes``, in trailer order), the
    plan as shown (``plan``: moves or the merge, every link edit), and what refuses it."""

    kind: str
    move: tuple[str, str]  # (from, to): the Llmwiki-Move-From / -To trailers
    writes: list[FileWrite]
    plan: dict[str, Any]
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(
        default_factory=dict
    )  # whose text goes where: moved pages, B into A

    @property
    def subject(self) -> str:
        """The commit subject, from the kind's row (``subject``)."""
        return kinds.BY_NAME[self.kind].subject.format_map(self._fields())

    @property
    def summary(self) -> str:
        """The commit body's summary, from the kind's row (``summary``)."""
        return kinds.BY_NAME[self.kind].summary.format_map(self._fields())

    def _fields(self) -> dict[str, str]:
        """What a row's templates may name: from, to, what was rewritten, moved, the heading
        and the aliases a merge adds."""
        links, pages = int(self.plan["links"]), int(self.plan["pages"])
        return {
            "from": self.move[0],
            "to": self.move[1],
            "rewrote": f"rewrote {plural(links, 'link')} in {plural(pages, 'page')}",
            "moved": plural(len(self.plan.get("moves", [])), "file"),
            "heading": str(self.plan.get("heading", "")),
            "aliases": ", ".join(self.plan.get("aliasesAdded") or []) or "none",
        }


def restage(t: Trailers) -> str:
    """How to stage a refused move or merge anew, from its trailers (its row's ``restage``)."""
    source, target = t.move or ("OLD", "NEW")
    return kinds.BY_NAME[t.kind].restage.format_map(
        {"from": shlex.quote(source), "to": shlex.quote(target)}
    )


class _Reader:
    """Page texts of a wiki at a revision, strictly UTF-8 (others are named in ``undecodable``)."""

    def __init__(self, wiki: Wiki) -> None:
        self.wiki = wiki
        self.texts: dict[str, str] = {}
        self.undecodable: list[str] = []

    def __call__(self, paths: list[str]) -> dict[str, str]:
        wanted = [p for p in paths if p not in self.texts and p in self.wiki.by_path]
        found = self.wiki.read([SourceFile(p, self.wiki.by_path[p].blob) for p in wanted])
        for path, data in found.items():
            if isinstance(data, bytes):
                try:
                    self.texts[path] = data.decode("utf-8")
                except UnicodeDecodeError:
                    self.undecodable.append(path)
        return {p: self.texts[p] for p in paths if p in self.texts}


def _edits_json(plan: RewritePlan) -> list[dict[str, object]]:
    return [
        {"path": f.path, "newPath": f.new_path, **e.to_json()}
        for f in sorted(plan.edited_files, key=lambda f: f.path)
        for e in sorted(f.edits, key=lambda e: e.start)
    ]


def _finish(
    git: Git,
    base: str,
    wiki: Wiki,
    project_prefix: str,
    run: RewriteRun,
    writes: dict[str, str | None],
    reader: _Reader,
    max_bytes: int,
) -> RewriteRun:
    """The run's writes: llmwiki's generated files left out, a vault's own index.md and
    log.md marked, every page held to the one acceptance rule."""
    prefix = f"{wiki.root_dir}/" if wiki.root_dir else ""
    run.refusals += [
        f"{path}: not valid UTF-8; a review candidate holds only fully checkable pages"
        for path in sorted(set(reader.undecodable))
    ]
    for target, document in writes.items():
        if is_generated(git, base, target, wiki.root_dir, project_prefix):
            run.notes.append(f"{target} is llmwiki's generated file: approval regenerates it")
            continue
        if document is not None:
            why = acceptance_problem(document, max_bytes)
            if why is not None:
                run.refusals.append(
                    f"{target}: {why}; a review candidate holds only fully checkable pages"
                )
        own = target.startswith(prefix) and target[len(prefix) :] in GENERATED
        run.writes.append(FileWrite(target, document, own_page=own))
    return run


def move_run(
    git: Git, base: str, wiki: Wiki, old: str, new: str, project_prefix: str, max_bytes: int
) -> RewriteRun:
    """``llmwiki mv OLD NEW --review`` at ``base``: OLD's pages deleted, added at NEW with their
    links kept whole, and every page linking them rewritten. Raises MoveRefused when OLD is
    not in ``base``."""
    entries, moves, reasons = planned_moves(git, base, wiki, old, new, project_prefix)
    others = [e.path for e in entries if e.path not in wiki.by_path or e.mode != "100644"]
    if others:
        reasons.append(
            f"a reviewed move holds pages only (regular .md files under the wiki root); "
            f"{', '.join(others[:5])} {'is' if len(others) == 1 else 'are'} not: move "
            f"{'it' if len(others) == 1 else 'them'} with `llmwiki mv` (without --review)"
        )
    reader = _Reader(wiki)
    plan = plan_moves(wiki, moves, reader)
    shown = {
        "kind": MOVE_KIND,
        "from": old,
        "to": new,
        "moves": [{"from": a, "to": b} for a, b in sorted(moves.items())],
        "edits": _edits_json(plan),
        "links": plan.links,
        "pages": len(plan.edited_files),
    }
    run = RewriteRun(
        MOVE_KIND, (old, new), [], shown, [*reasons, *plan.refusals], list(plan.notes), dict(moves)
    )
    texts = reader([*moves, *(f.path for f in plan.edited_files)])
    writes: dict[str, str | None] = {}
    for source, target in sorted(moves.items()):
        writes[source] = None
        if source in texts:
            writes[target] = apply_edits(texts[source], plan.files[source].edits)
    for rewrite in sorted(plan.edited_files, key=lambda f: f.path):
        if rewrite.path not in moves and rewrite.path in texts:
            writes[rewrite.path] = apply_edits(texts[rewrite.path], rewrite.edits)
    return _finish(git, base, wiki, project_prefix, run, writes, reader, max_bytes)


def merge_run(
    git: Git, base: str, wiki: Wiki, keep: str, fold: str, project_prefix: str, max_bytes: int
) -> RewriteRun:
    """``llmwiki merge-pages KEEP FOLD`` at ``base``: FOLD's body appended to KEEP, FOLD's
    title and aliases added to KEEP's aliases, FOLD deleted, every link to FOLD rewritten."""
    reasons = []
    for path in (keep, fold):
        entry = [e for e in tree_under(git, base, path) if e.path == path]
        if path not in wiki.by_path or not entry:
            reasons.append(
                f"{path} is not a page of the wiki (a .md file under {wiki.root_dir or 'the repository root'})"
            )
        elif entry[0].mode != "100644":
            reasons.append(f"{path} is not a regular file (a symlink or an executable)")
        elif is_generated(git, base, path, wiki.root_dir, project_prefix):
            reasons.append(f"{path} is llmwiki's generated file, not a page")
    empty = {
        "kind": MERGE_KIND,
        "into": keep,
        "from": fold,
        "title": "",
        "aliasesAdded": [],
        "heading": "",
        "edits": [],
        "links": 0,
        "pages": 0,
    }
    if reasons:
        return RewriteRun(MERGE_KIND, (fold, keep), [], empty, reasons)
    reader = _Reader(wiki)
    merge = plan_merge(wiki, keep, fold, reader)
    shown = {"kind": MERGE_KIND, **merge.to_json()}
    shown.pop("refusals")
    shown.pop("notes")
    run = RewriteRun(
        MERGE_KIND, (fold, keep), [], shown, list(merge.refusals), list(merge.notes), {fold: keep}
    )
    return _finish(
        git,
        base,
        wiki,
        project_prefix,
        run,
        merge.writes() if not merge.refusals else {},
        reader,
        max_bytes,
    )


def run_at(
    ws: ReviewProject,
    kind: str,
    source: str,
    target: str,
    base: str,
    load_wiki: Callable[[str], Wiki] | None = None,
) -> RewriteRun:
    """The move (``source`` -> ``target``) or merge (``source`` folded into ``target``) of
    ``kind`` planned at ``base``."""
    git = ws.require_git("planning a move")
    wiki = (load_wiki or ws.wiki)(base)
    limit = ws.settings.max_page_bytes
    planner = kinds.call(kinds.BY_NAME[kind].planner)
    run: RewriteRun = planner(git, base, wiki, source, target, ws.project_prefix, limit)
    return run


def move_at(
    git: Git, base: str, wiki: Wiki, source: str, target: str, project_prefix: str, limit: int
) -> RewriteRun:
    """The planner of ``move/1`` (its row's ``planner``): ``source`` moved to ``target``."""
    old, new = clean_pair(source, target)
    return move_run(git, base, wiki, old, new, project_prefix, limit)


def merge_at(
    git: Git, base: str, wiki: Wiki, source: str, target: str, project_prefix: str, limit: int
) -> RewriteRun:
    """The planner of ``merge/1`` (its row's ``planner``): ``source`` folded into ``target``."""
    return merge_run(git, base, wiki, clean_path(target), clean_path(source), project_prefix, limit)


def plan_problem(ws: ReviewProject, candidate: Candidate) -> tuple[RewriteRun | None, str | None]:
    """The plan of a move or merge candidate at its base, and why its commit is not exactly
    that plan (None: it is)."""
    git = ws.require_git("reviewing candidates")
    t = candidate.trailers
    assert t is not None and t.move is not None
    try:
        run = run_at(ws, t.kind, t.move[0], t.move[1], t.base)
    except LlmwikiError as exc:
        return None, f"names a {t.kind} that cannot be planned at its base ({exc.message})"
    if run.refusals:
        return run, f"is a {t.kind} its base refuses ({run.refusals[0]})"
    expected: dict[str, tuple[str, bytes | None]] = {}
    for write in run.writes:
        at_base = git.blob_at(t.base, write.target)
        data = None if write.document is None else write.document.encode("utf-8")
        if data is None and at_base is None:
            continue
        if data is not None and at_base is not None and git.read_blob(at_base) == data:
            continue
        expected[write.target] = (precondition_of(at_base), data)
    listed = {f.target: f for f in t.files}
    if set(listed) != set(expected):
        odd = sorted(set(listed) ^ set(expected))
        return (
            run,
            f"does not change exactly the files its {t.kind} plan does ({', '.join(odd[:5])})",
        )
    for target, (precondition, data) in expected.items():
        if listed[target].precondition != precondition:
            return run, (
                f"claims the precondition {listed[target].precondition!r} for {target}, but its base has "
                f"{precondition!r}"
            )
        blob = git.blob_at(candidate.commit, target)
        if (None if blob is None else git.read_blob(blob)) != data:
            return run, f"writes {target} otherwise than its {t.kind} plan"
    return run, None
