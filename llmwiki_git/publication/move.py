"""``llmwiki mv OLD NEW``: a page, a file or a folder moved, and every link to it rewritten,
as one commit on the current branch through the write transaction (docs/mv.md).

Everything is decided against HEAD under the repository lock before any ref moves: the
files to move (regular files only), the new paths (none may exist), the link rewrites
(`wiki.rewrite.plan_moves`: refused when a link would become ambiguous or change meaning),
and, in the transaction, that no path the commit touches has uncommitted edits. The commit
holds the moves, the rewritten pages, and llmwiki's generated ``index.md`` and ``log.md``
where llmwiki owns them (a user's own ``index.md`` or ``log.md`` is a page like any other:
only the links in it that name a moved file are rewritten, byte for byte otherwise).

A rename the user already made (``git mv OLD NEW`` or a plain ``mv``, staged or not, the
page perhaps edited too) is finished the same way: the commit records the rename with NEW's
content as it stands, links rewritten. That is what the pre-commit gate suggests when a
staged rename breaks links.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol

from ..errors import MoveRefused, UsageError
from ..gitstore.commits import build_commit, check_path, current_branch, move_branch
from ..gitstore.git import Git, TreeEntry
from ..wiki import generated as G
from ..wiki.indexpage import entries_of, moved_entries, render
from ..wiki.model import Wiki
from ..wiki.rewrite import Edit, RewritePlan, apply_edits, decode, encode, plan_moves, wiki_after
from ..wiki.snapshots import SourceFile
from .document import log_entry, now_iso
from .write import Site, finish_local, generated_files, locked


@dataclass
class Moved:
    """What ``llmwiki mv`` did (or, with ``dry_run``, would do)."""

    old: str
    new: str
    plan: RewritePlan
    dry_run: bool
    commit: str | None = None
    adopted: bool = False  # the user had already renamed the file; llmwiki finished it
    notes: list[str] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        return bool(self.plan.refusals)

    def edits(self) -> list[tuple[str, Edit]]:
        """(path, edit) of every rewritten link, by path then position."""
        return [
            (f.path, e)
            for f in sorted(self.plan.edited_files, key=lambda f: f.path)
            for e in sorted(f.edits, key=lambda e: e.start)
        ]

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "from": self.old,
            "to": self.new,
            "dryRun": self.dry_run,
            "commit": self.commit,
            "adopted": self.adopted,
            "moves": [{"from": a, "to": b} for a, b in sorted(self.plan.moves.items())],
            "edits": [
                {"path": f.path, "newPath": f.new_path, **e.to_json()}
                for f in sorted(self.plan.edited_files, key=lambda f: f.path)
                for e in sorted(f.edits, key=lambda e: e.start)
            ],
            "links": self.plan.links,
            "pages": len(self.plan.edited_files),
            "refusals": list(self.plan.refusals),
            "notes": [*self.plan.notes, *self.notes],
        }


class Around(Protocol):
    """A committed tree's wiki read only around a move (`checks.neighbours.Neighbourhood`)."""

    @property
    def root_dir(self) -> str: ...
    def wiki(self, moves: Mapping[str, str]) -> Wiki: ...


def move(
    site: Site,
    old: str,
    new: str,
    *,
    dry_run: bool = False,
    around: Callable[[str], Around | None] | None = None,
) -> Moved:
    """Move ``old`` (a file or folder, from the repository root) to ``new`` with every link
    kept whole, as one commit; with ``dry_run`` only the plan (nothing locked or written).
    Raises MoveRefused when something is in the way (not for a dry run: its plan lists it).
    ``around``: the wiki of a revision read only where a move touches it (None when it
    cannot be: the whole wiki is read, to the same plan and commit)."""
    old, new = clean_pair(old, new)
    git = site.git
    with nullcontext() if dry_run else locked(site):
        ref = current_branch(git)
        head = git.rev_parse("HEAD")
        if head is None:
            raise MoveRefused(old, ["the branch has no commit yet"], hint="commit the wiki first")
        near = around(head) if around is not None else None
        # Planning the moves needs the wiki root only; the plan, the pages the moves touch.
        wiki = Wiki(near.root_dir, [], [], []) if near is not None else site.load_wiki(head)
        moves, modes, contents, adopted = _moves(site, head, wiki, old, new)
        wiki, around_only = _wiki_for(site, head, wiki, near, moves)
        plan = plan_moves(wiki, moves, lambda paths: _texts(wiki, paths), contents)
        done = Moved(old, new, plan, dry_run, adopted=adopted)
        if adopted:
            done.notes.append(
                f"{old} was already renamed to {new} in the work tree: its content there is committed"
            )
        if dry_run:
            return done
        if plan.refusals:
            raise MoveRefused(
                old, plan.refusals, hint="nothing moved; fix what is listed, or pick another name"
            )
        change = _Change(ref, head, wiki, plan, modes, contents, adopted, old, new, around_only)
        done.commit = _commit(site, change)
        done.notes.extend(site.notes)
    return done


def _wiki_for(
    site: Site, head: str, wiki: Wiki, near: Around | None, moves: Mapping[str, str]
) -> tuple[Wiki, bool]:
    """The wiki the plan reads: the pages around ``moves`` (and True) when ``near`` can
    give them, else the whole wiki of ``head``."""
    if near is None:
        return wiki, False
    try:
        return near.wiki(moves), True
    except ValueError:  # facts that cannot tell (a damaged part): read every page
        return site.load_wiki(head), False


def clean_path(path: str) -> str:
    """A path from the repository root as git names it (``/`` separators, no ``./``)."""
    cleaned = path.replace("\\", "/").strip().strip("/")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    return check_path(cleaned)


def clean_pair(old: str, new: str) -> tuple[str, str]:
    """OLD and NEW of a move, cleaned; UsageError when they are one path or NEW is inside OLD."""
    old, new = clean_path(old), clean_path(new)
    if old == new:
        raise UsageError(f"{old} and {new} are the same path")
    if new.startswith(old + "/"):
        raise UsageError(f"cannot move {old} into itself ({new})")
    return old, new


def tree_under(git: Git, head: str, path: str) -> list[TreeEntry]:
    """``head``'s entries at ``path`` or under it (recursively), submodules included."""
    return git.ls_tree_under(head, path, literal=True, submodules=True)


def planned_moves(
    git: Git, head: str, wiki: Wiki, old: str, new: str, project_prefix: str
) -> tuple[list[TreeEntry], dict[str, str], list[str]]:
    """What moving ``old`` to ``new`` moves, decided from the tree of ``head`` alone: its
    entries, each file's new path (old -> new), and the reasons that refuse it. Raises
    MoveRefused when ``old`` is not in that tree."""
    entries = [
        e for e in tree_under(git, head, old) if e.path == old or e.path.startswith(old + "/")
    ]
    if not entries:
        raise MoveRefused(
            old,
            [f"{old} is not in HEAD: llmwiki mv moves committed files"],
            hint="commit it first (or use a plain `mv` for an uncommitted file)",
        )
    reasons = []
    odd = [e.path for e in entries if e.mode not in ("100644", "100755")]
    if odd:
        reasons.append(
            f"only regular files move with llmwiki mv; {', '.join(odd[:5])} "
            f"{'is' if len(odd) == 1 else 'are'} a symlink or submodule (use git mv)"
        )
    root = wiki.root_dir
    if root and (root == old or root.startswith(old + "/")):
        reasons.append(
            f"{old} holds the wiki root itself; use git mv and --wiki-dir (or wiki_dir in the config)"
        )
    for entry in entries:
        if is_generated(git, head, entry.path, root, project_prefix):
            reasons.append(f"{entry.path} is llmwiki's generated file; it stays where it is")
    if tree_under(git, head, new):
        reasons.append(f"{new} exists at HEAD; move it away first or pick another name")
    return entries, {e.path: new + e.path[len(old) :] for e in entries}, reasons


def _moves(
    site: Site, head: str, wiki: Wiki, old: str, new: str
) -> tuple[dict[str, str], dict[str, tuple[str, str]], dict[str, str], bool]:
    """The files to move (old -> new path), their (mode, blob), the content of a page the
    user already renamed (by old path), and whether they had."""
    entries, moves, reasons = planned_moves(site.git, head, wiki, old, new, site.project_prefix)
    modes = {e.path: (e.mode, e.blob) for e in entries}
    contents: dict[str, str] = {}
    adopted = False
    top = site.top
    if (
        not reasons
        and len(entries) == 1
        and entries[0].path == old
        and not os.path.lexists(top / old)
        and _is_regular(top / new)
    ):
        adopted = True  # the user renamed it already (git mv or mv): finish the rename
        contents[old] = _adopted_text(site, old, new)
    elif os.path.lexists(top / new):
        reasons.append(f"{new} exists in the work tree; move it away first or pick another name")
    if reasons:
        raise MoveRefused(old, reasons)
    return moves, modes, contents, adopted


def is_generated(git: Git, head: str, rel: str, wiki_root: str, project_prefix: str) -> bool:
    """Whether ``rel`` is llmwiki's table of contents or journal in ``head``'s tree (where a
    wiki keeps them, in llmwiki's generated format)."""
    if rel == G.index_path(wiki_root):
        check = G.is_generated_index
    elif rel == G.log_path(project_prefix):
        check = G.is_generated_log
    else:
        return False
    data = git.read_blob_at(head, rel)
    return data is not None and check(data)


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _adopted_text(site: Site, old: str, new: str) -> str:
    """NEW's content in a rename the user made: the staged version (which must match the
    work tree: nothing unstaged is committed), or the work-tree file when it is not staged."""
    data = (site.top / new).read_bytes()
    blob = site.git.staged_blob(new)
    if blob is not None:
        if site.git.read_blob(blob) != data:
            raise MoveRefused(
                old,
                [f"{new} has unstaged edits"],
                hint=f"stage them (git add {new}) or stash them, then run the command again",
            )
    return decode(data)


def _texts(wiki: Wiki, paths: list[str]) -> dict[str, str]:
    found = wiki.read([SourceFile(p, wiki.by_path[p].blob) for p in paths if p in wiki.by_path])
    return {
        path: decode(data)
        for path, data in found.items()
        if isinstance(data, bytes) and b"\0" not in data
    }


@dataclass
class _Change:
    """A planned move, ready to commit (``partial``: ``wiki`` holds only the pages around it)."""

    ref: str
    head: str
    wiki: Wiki
    plan: RewritePlan
    modes: dict[str, tuple[str, str]]
    contents: dict[str, str]
    adopted: bool
    old: str
    new: str
    partial: bool


def _commit(site: Site, change: _Change) -> str:
    """Commit ``change`` (moves, rewritten pages, then the generated files) and move the branch."""
    plan, head = change.plan, change.head
    files, placed = _moved_files(change)
    pages = len(plan.edited_files)
    summary = (
        f"Moved {len(plan.moves)} file{'s' if len(plan.moves) != 1 else ''}; rewrote {plan.links} "
        f"link{'s' if plan.links != 1 else ''} in {pages} page{'s' if pages != 1 else ''}."
    )
    message = f"llmwiki: mv {change.old} -> {change.new}\n\n{summary}\n"
    entry = log_entry("mv", f"{change.old} → {change.new}", [summary])
    first = build_commit(site.git, head, files, message, placed=placed)
    after = wiki_after(change.wiki, plan.moves)
    said = len(site.notes)
    generated, gen, index_text = generated_files(
        site,
        first,
        head,
        entry,
        wiki=after,
        render_index=partial(_index_after, site, change) if change.partial else None,
    )
    _note_own_index(site, change.wiki, gen, files, said)
    # A move creates no table of contents or journal the wiki did not have: those go to
    # llmwiki's own copies in the state folder, as where the user owns the files.
    for rel in [p for p in (gen.index_rel, gen.log_rel) if p is not None]:
        if site.git.blob_at(head, rel) is None:
            generated.pop(rel, None)
            gen.index_rel = None if rel == gen.index_rel else gen.index_rel
            gen.log_rel = None if rel == gen.log_rel else gen.log_rel
    final = (
        build_commit(site.git, head, {**files, **generated}, message, placed=placed)
        if generated
        else first
    )
    force = [p for p in (gen.index_rel, gen.log_rel) if p is not None]
    if change.adopted:
        force.append(change.new)  # the user's renamed file, read above: its links may be rewritten
    move_branch(
        site.git,
        site.top,
        change.ref,
        head,
        final,
        message,
        state_dir=site.state_dir,
        force=force,
        what=f"mv of {change.old}",
    )
    finish_local(gen, index_text, entry)
    return final


def _moved_files(change: _Change) -> tuple[dict[str, bytes | None], dict[str, tuple[str, str]]]:
    """The files the move's first commit writes (None: deleted) and the moved files it places
    as they are (new path -> mode and blob)."""
    plan, contents = change.plan, change.contents
    files: dict[str, bytes | None] = {}
    placed: dict[str, tuple[str, str]] = {}
    texts = _texts(change.wiki, [f.path for f in plan.edited_files if f.path not in contents])
    texts.update(contents)
    for source, _target in plan.moves.items():
        files[source] = None
    for rewrite in plan.files.values():
        mode = change.modes.get(rewrite.path)
        if rewrite.edits or rewrite.path in contents:
            files[rewrite.new_path] = encode(apply_edits(texts[rewrite.path], rewrite.edits))
        elif mode is not None:
            placed[rewrite.new_path] = mode
    return files, placed


def _note_own_index(
    site: Site, wiki: Wiki, gen: G.Generated, files: Mapping[str, object], said: int
) -> None:
    """Where the user owns ``index.md``: say what mv did to it ("never rewrites it", what
    the generated files say, is not what mv does to a user's page)."""
    if gen.index_rel is not None or not gen.notes:
        return
    own = G.index_path(wiki.root_dir)
    site.notes[said:] = [n for n in site.notes[said:] if not n.startswith(own + " ")]
    did = (
        "llmwiki rewrote only its links to moved files"
        if own in files
        else "llmwiki left it as it is (no link in it named a moved file)"
    )
    site.notes.append(
        f"{own} is your own page: {did}; its generated table of contents goes to "
        f"{site.state_dir.name}/{G.INDEX}"
    )


def _index_after(site: Site, change: _Change, gen: G.Generated) -> str:
    """The table of contents after a move planned on the pages around it: the one committed
    (or llmwiki's own copy) with the moved pages' entries changed, when it is exactly what
    llmwiki renders; else rendered from every page, as without the checker's facts."""
    plan = change.plan
    moved = change.wiki.with_pages(
        [change.wiki.by_path[p] for p in plan.moves if p in change.wiki.by_path], []
    )
    now = now_iso(ms=False)
    old: bytes | None = None
    if gen.index_rel is not None:
        blob = site.git.blob_at(change.head, gen.index_rel)
        old = site.git.read_blob(blob) if blob is not None else None
    else:
        try:
            old = gen.local_index.read_bytes()
        except OSError:
            old = None
    if old is not None:
        text = moved_entries(
            old.decode("utf-8", "replace"),
            entries_of(moved),
            entries_of(wiki_after(moved, plan.moves)),
            now,
        )
        if text is not None:
            return text
    whole = wiki_after(site.load_wiki(change.head), plan.moves)
    return render(entries_of(whole), now)
