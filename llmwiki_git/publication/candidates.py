"""Candidates: ``refs/heads/llmwiki/review/<id>`` branches whose single commit writes what
its trailer block lists; what each kind may write is its row of ``kinds.py``. A validated
answer (``validated-answer/1``) may only write ``<wiki root>/queries/<slug>.md``; a page
edit (``page/1``) adds, replaces or deletes any ``.md`` page under the wiki root except the
generated index and journal. A multi-file kind (``compile/1``, ``move/1``, ``merge/1``,
``retraction/1``) writes several such pages in its one commit, each listed in its trailers
with its own precondition and digest, each under the page edit's rules; a retraction also
deletes the one source its ``Llmwiki-Retracts`` trailer names (a regular file in the
project's ``sources/``, deleted, never written). What each kind promises about its base is
checked at approval (``review/promises.py``)."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..controls import name_problem, visible
from ..errors import CandidateNotFound, LlmwikiError, UsageError
from ..gitstore.git import Git
from ..wiki.frontmatter import split
from ..wiki.generated import is_generated_index, is_generated_log
from ..wiki.pages import MAX_PAGE_BYTES, acceptance_problem
from ..wiki.provenance import in_sources
from ..wiki.slug import slugify
from . import kinds
from .kinds import KindRow
from .trailers import ABSENT, FileTrailer, Trailers
from .trailers import (
    parse as parse_trailers,
)
from .trailers import (
    read_many as read_trailers,
)

BRANCH_PREFIX = "llmwiki/review/"
PREFIX = "refs/heads/" + BRANCH_PREFIX
REJECTED = "refs/llmwiki/rejected/"
#: ``<slug>-<8 hex>``, safe as a ref component: no control, space, DEL or ref-special
#: characters, no leading ``.`` or ``-`` (the one rule: review commands and the Action).
CANDIDATE_ID = re.compile(
    r"[^\x00-\x20\x7f/\\~^:?*\[.\-][^\x00-\x20\x7f/\\~^:?*\[]{0,200}-[0-9a-f]{8}"
)


def is_candidate_id(text: str) -> bool:
    """Whether ``text`` is a well-formed candidate id (see :data:`CANDIDATE_ID`)."""
    return (
        CANDIDATE_ID.fullmatch(text) is not None
        and not text.endswith(".lock")
        and ".." not in text
        and "@{" not in text
    )


@dataclass
class Candidate:
    id: str
    commit: str
    trailers: Trailers | None
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
    if not is_candidate_id(candidate_id):
        raise UsageError(
            f"{candidate_id!r} is not a valid candidate id", hint="ids look like <slug>-<8 hex>"
        )
    if not git.branch_name_ok(f"llmwiki/review/{candidate_id}"):
        raise UsageError(f"{candidate_id!r} is not a valid candidate id (not a valid ref name)")
    exists = git.rev_parse(PREFIX + candidate_id) is not None
    if must_exist and not exists:
        raise CandidateNotFound(candidate_id)
    return not exists


def list_candidates(git: Git) -> list[Candidate]:
    """Open candidates, oldest first. A branch whose trailers are malformed is listed with a
    note (it can be rejected, never approved)."""
    rows = []
    for ref, commit, unix_time, subject in git.for_each_ref(
        PREFIX, ("refname", "objectname", "committerdate:unix", "subject")
    ):
        rows.append((ref[len(PREFIX) :], commit, int(unix_time or 0), subject))
    found = read_trailers(git, [c for _, c, _, _ in rows])
    candidates = []
    for candidate_id, commit, stamp, subject in rows:
        parsed = parse_trailers(found.get(commit, {}))
        candidate = Candidate(candidate_id, commit, parsed, subject, stamp)
        if parsed is None:
            edited = edited_by_hand(git, candidate)
            candidate.notes.append(
                "malformed trailers: cannot be approved" if edited is None else edited.message
            )
        elif parsed.candidate != candidate_id:
            candidate.notes.append(
                f"trailer names candidate {parsed.candidate!r}, not the branch's id"
            )
        candidates.append(candidate)
    candidates.sort(key=lambda c: (c.committed_at, c.id))
    return candidates


def get(git: Git, candidate_id: str) -> Candidate:
    check_id(git, candidate_id)
    for candidate in list_candidates(git):
        if candidate.id == candidate_id:
            return candidate
    raise CandidateNotFound(candidate_id)


REGULAR = "100644"


@dataclass(frozen=True)
class Malformed:
    """Why a candidate is not a plain query page (``code`` as in approval verdicts)."""

    code: str
    message: str


def target_problem(target: str, wiki_root: str) -> str | None:
    """Why ``target`` is not an acceptable validated-answer target: it must be exactly
    ``<wiki root>/queries/<slug>.md`` and pass through no hidden folder (``.git``)."""
    parts = target.split("/")
    hidden = [p for p in parts if p.startswith(".") or p.casefold() == ".git" or not p]
    if hidden or "\\" in target or any(ord(c) < 0x20 for c in target):
        return f"target {target!r} goes through a hidden folder or has an unsafe name"
    name = parts[-1]
    slug = name[:-3] if name.endswith(".md") else ""
    expected = "/".join(p for p in (wiki_root, "queries", f"{slug}.md") if p)
    if not slug or slugify(slug) != slug or target != expected:
        return f"target {target!r} is not a query page of this wiki (expected {expected!r} for a validated answer)"
    return None


GENERATED = ("index.md", "log.md")


def page_target_problem(target: str, wiki_root: str) -> str | None:
    """Why ``target`` is not an acceptable ``page/1`` target: a ``.md`` page under the wiki
    root, through no hidden folder (``.git``), and not the generated table of contents or
    journal at the wiki root."""
    parts = target.split("/")
    hidden = [p for p in parts if p.startswith(".") or not p]
    if hidden or "\\" in target or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target):
        return f"target {target!r} goes through a hidden folder or has an unsafe name"
    prefix = f"{wiki_root}/" if wiki_root else ""
    if (
        not target.startswith(prefix)
        or not target.lower().endswith(".md")
        or len(target) <= len(prefix) + 3
    ):
        return f"target {target!r} is not a .md page under the wiki root ({wiki_root or 'the repository root'})"
    if target[len(prefix) :] in GENERATED:
        return f"target {target!r} is llmwiki's generated table of contents or journal, not a page"
    return None


def users_own_page(git: Git, base: str, target: str, wiki_root: str) -> bool:
    """Whether ``target`` is an ``index.md`` or ``log.md`` at the wiki root that is the user's
    own page at ``base`` (a vault's home page: a regular file not in llmwiki's generated
    format). A move or merge (REWRITE_KINDS) may rewrite the links in it, exactly as its
    plan says (review/rewrites.py); no other candidate may write it."""
    prefix = f"{wiki_root}/" if wiki_root else ""
    name = target[len(prefix) :] if target.startswith(prefix) else ""
    if name not in GENERATED:
        return False
    if git.file_mode(base, target) != REGULAR:
        return False
    data = git.read_blob_at(base, target) or b""
    return not (is_generated_index(data) if name == GENERATED[0] else is_generated_log(data))


SOURCE_MODES = ("100644", "100755")  # a source a retraction may delete: a regular file


def source_target_problem(target: str, project_prefix: str | None) -> str | None:
    """Why ``target`` is not a source a retraction may delete: a file inside the project's
    ``sources/`` folder, through no hidden folder, with a plain name (no ``..``, backslash or
    control character). Only its deletion is ever accepted (see :func:`_validate_files`)."""
    if project_prefix is None:
        return f"target {target!r}: the project folder is not known, so no source may be deleted"
    parts = target.split("/")
    if (
        any(not p or p.startswith(".") for p in parts)
        or "\\" in target
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target)
    ):
        return f"target {target!r} goes through a hidden folder or has an unsafe name"
    if not in_sources(target, project_prefix):
        return f"target {target!r} is not a page under the wiki root nor a file in sources/"
    return None


def blob_problem(git: Git, blob: str, *, max_bytes: int = MAX_PAGE_BYTES) -> str | None:
    """The one acceptance rule (:func:`~llmwiki_git.wiki.pages.acceptance_problem`) applied to
    a page a candidate writes, read from its blob: the size is asked first, so an oversize
    blob is refused without being loaded. Every candidate kind calls this for each page."""
    size = git.object_size(blob)
    if size is not None and size > max_bytes:  # None: no such blob, which read_blob reports
        return f"it is over the {max_bytes // (1024 * 1024)} MB page limit ({size} bytes)"
    return acceptance_problem(git.read_blob(blob), max_bytes=max_bytes)


def unchecked(candidate_id: str, target: str, why: str) -> Malformed:
    """The refusal of a page that breaks the acceptance rule."""
    return Malformed(
        "unchecked-page",
        f"candidate {candidate_id} writes {target}, which is not fully checkable: {why}; "
        "a page a candidate writes must be fully checkable, as the gate requires "
        "of a commit; reject it",
    )


def validate(
    git: Git,
    candidate: Candidate,
    wiki_root: str,
    project_prefix: str | None = None,
    *,
    max_bytes: int = MAX_PAGE_BYTES,
) -> Malformed | None:
    """The one structural check of a candidate, used by approve, show, list and the Action:
    a well-formed trailer block; exactly one commit on its base changing exactly one entry,
    its target, to a regular file (mode 100644: no symlink, executable or gitlink); the
    target ``<wiki root>/queries/<slug>.md``, through no ``.git`` or other hidden folder;
    the page it writes acceptable (:func:`blob_problem`: the one acceptance rule, fully
    checkable within ``max_bytes``, no control or bidi characters). Returns None when the
    candidate passes. A multi-file kind (``compile/1``) is held to the same rules for each
    file it lists (:func:`_validate_files`); ``project_prefix`` names the project folder
    whose ``sources/`` no candidate may write (None: the wiki root's parent rules are enough)."""
    t = candidate.trailers
    if t is None:
        edited = edited_by_hand(git, candidate)
        if edited is not None:
            return edited
    if t is None or candidate.notes:
        return Malformed(
            "malformed",
            f"candidate {candidate.id} has a malformed trailer block "
            f"({'; '.join(candidate.notes) or 'missing keys'}); reject it",
        )
    row = kinds.row(t.kind)
    if row is None:
        return Malformed(
            "malformed", f"candidate kind {t.kind!r} is not one of {', '.join(kinds.KINDS)}"
        )
    badly_named = _name_refusal(candidate, t)  # every kind: the one name rule (controls.py)
    if badly_named is not None:
        return badly_named
    if row.files:
        return _validate_files(git, candidate, t, row, wiki_root, project_prefix, max_bytes)
    return _validate_page(git, candidate, t, row, wiki_root, max_bytes)


def _validate_page(
    git: Git, candidate: Candidate, t: Trailers, row: KindRow, wiki_root: str, max_bytes: int
) -> Malformed | None:
    """The structural check of a one-page candidate: one commit on its base changing only
    its target, to a regular, acceptable file (or deleting it, for a kind that deletes)."""
    answer = row.policy == kinds.ANSWER  # a validated answer writes a query page only
    problem = (target_problem if answer else page_target_problem)(t.target, wiki_root)
    if problem is not None:
        return Malformed("bad-target", f"candidate {candidate.id}: {problem}; reject it")
    stacked = _not_one_commit(git, candidate, t)
    if stacked is not None:
        return stacked
    changes = git.raw_changes(t.base, candidate.commit)
    paths = [c[3] for c in changes]
    if paths != [t.target]:
        return Malformed(
            "touches-other-files",
            f"candidate {candidate.id} must change exactly {t.target}, "
            f"but changes: {', '.join(map(repr, paths)) or 'nothing'}",
        )
    mode, blob, status, _path = changes[0]
    if status.startswith("D"):
        if row.deletes:
            return None  # a deletion candidate: no blob at the target
        return Malformed("touches-other-files", f"candidate {candidate.id} deletes {t.target}")
    if mode != REGULAR:
        return Malformed(
            "not-a-regular-file",
            f"candidate {candidate.id} makes {t.target} {_MODES.get(mode, f'mode {mode}')}; "
            "only a regular file (mode 100644) can be approved; reject it",
        )
    why = blob_problem(git, blob, max_bytes=max_bytes)
    return None if why is None else unchecked(candidate.id, t.target, why)


def _name_refusal(candidate: Candidate, t: Trailers) -> Malformed | None:
    """Refusal of a candidate of any kind that writes a file whose name holds a C0 or C1
    control or bidi character (`llmwiki_git.controls`); deleting such a file is how it goes,
    so a deletion passes."""
    written = [f.target for f in t.files if f.body_digest != ABSENT]  # every kind's files
    for target in written:
        why = name_problem(target)
        if why is not None:
            return Malformed(
                "control-character-name",
                f"candidate {candidate.id} writes {visible(target)}: {why}; reject it",
            )
    return None


#: How far back a hand-edited candidate branch is searched for the commit llmwiki staged.
_HAND_EDITS = 20
HAND_EDIT_HINT = (
    "approval takes a candidate only exactly as llmwiki staged it. To keep your version, "
    "put the page in the work tree (`git show {branch}:<page> > <page>`), stage it as a page "
    "edit of its own with `llmwiki review stage <page>`, then reject this candidate "
    "(`llmwiki review reject {id}`)"
)


def edited_by_hand(git: Git, candidate: Candidate) -> Malformed | None:
    """A candidate branch whose tip has no trailers but an ancestor llmwiki staged under this
    id: someone committed on top of it by hand. Refused like any malformed candidate, with a
    message that says so and how to keep the edit (None: not such a branch)."""
    commit = candidate.commit
    for count in range(1, _HAND_EDITS + 1):
        parents = git.parents(commit)
        if not parents:
            return None
        commit = parents[0]
        parsed = parse_trailers(read_trailers(git, [commit]).get(commit, {}))
        if parsed is not None:
            if parsed.candidate != candidate.id:
                return None
            branch = candidate.ref.removeprefix("refs/heads/")
            return Malformed(
                "candidate-edited",
                f"candidate {candidate.id} was edited by hand after staging ({count} "
                f"commit(s) on top of the one llmwiki staged); "
                + HAND_EDIT_HINT.format(branch=branch, id=candidate.id),
            )
    return None


_MODES = {
    "120000": "a symlink",
    "100755": "an executable file",
    "160000": "a gitlink (submodule)",
    "040000": "a folder",
    "000000": "nothing",
}


def _not_one_commit(git: Git, candidate: Candidate, t: Trailers) -> Malformed | None:
    """Refusal unless the branch is exactly one commit on top of the base its trailers name."""
    parents = git.parents(candidate.commit)
    if len(parents) != 1 or parents[0] != t.base:
        return Malformed(
            "not-single-commit",
            f"candidate {candidate.id} must be exactly one commit on top of its base "
            f"{t.base[:12]}; the branch was changed after staging",
        )
    return None


def _validate_files(
    git: Git,
    candidate: Candidate,
    t: Trailers,
    row: KindRow,
    wiki_root: str,
    project_prefix: str | None,
    max_bytes: int,
) -> Malformed | None:
    """The structural check of a multi-file candidate: one commit on its base changing
    exactly the files its trailers list, each a ``.md`` page under the wiki root (not the
    generated index or journal, not in ``sources/``, through no hidden folder) that becomes a
    regular file (mode 100644) passing the one acceptance rule (:func:`blob_problem`) -- or
    is deleted, where its body digest says ``absent``."""
    cid = candidate.id
    for f in t.files:
        problem = _file_target_problem(git, t, f, row, wiki_root, project_prefix)
        if problem is not None:
            return Malformed("bad-target", f"candidate {cid}: {problem}; reject it")
    stacked = _not_one_commit(git, candidate, t)
    if stacked is not None:
        return stacked
    changes = {c[4]: c for c in git.raw_entries(t.base, candidate.commit)}
    unlisted = _not_exactly_listed(cid, t, set(changes))
    if unlisted is not None:
        return unlisted
    for f in t.files:
        wrong = _file_change_problem(git, cid, t, f, changes[f.target], max_bytes)
        if wrong is not None:
            return wrong
    return None


def _file_target_problem(
    git: Git,
    t: Trailers,
    f: FileTrailer,
    row: KindRow,
    wiki_root: str,
    project_prefix: str | None,
) -> str | None:
    """Why a multi-file candidate may not write ``f``'s target (None: it may): a page under
    the wiki root, or the one source a retraction deletes."""
    if t.retracts is not None and f.target == t.retracts:  # the one source a retraction deletes
        problem = source_target_problem(f.target, project_prefix)
        if problem is None and (f.body_digest != ABSENT or f.precondition == ABSENT):
            problem = f"a retraction may only delete {f.target}, which must exist at its base"
        return problem
    problem = page_target_problem(f.target, wiki_root)
    if (
        problem is not None
        and row.rewrites_links
        and users_own_page(git, t.base, f.target, wiki_root)
    ):
        problem = (
            None  # a vault's own home page or diary: the plan check allows its link rewrites only
        )
    if problem is None and project_prefix is not None and in_sources(f.target, project_prefix):
        problem = f"target {f.target!r} is a source (in sources/), not a page"
    return problem


def _not_exactly_listed(cid: str, t: Trailers, changed: set[str]) -> Malformed | None:
    """The refusal of a commit that changes other files than its trailers list (None: it
    changes exactly those)."""
    listed = {f.target for f in t.files}
    if changed == listed:
        return None
    extra, missing = sorted(changed - listed), sorted(listed - changed)
    what = "; ".join(
        part
        for part in (
            f"unlisted: {', '.join(map(repr, extra))}" if extra else "",
            f"listed but unchanged: {', '.join(map(repr, missing))}" if missing else "",
        )
        if part
    )
    return Malformed(
        "touches-other-files",
        f"candidate {cid} must change exactly the {len(listed)} file(s) its trailers list ({what})",
    )


def _file_change_problem(
    git: Git,
    cid: str,
    t: Trailers,
    f: FileTrailer,
    change: tuple[str, str, str, str, str],
    max_bytes: int,
) -> Malformed | None:
    """The refusal of one listed file's change (None: it is what its trailer says): a
    retraction deletes a regular file; a file is deleted exactly when its digest says
    ``absent``; what is written is a regular, acceptable file."""
    old_mode, mode, blob, status, _path = change
    deleted = status.startswith("D")
    if f.target == t.retracts and not (deleted and old_mode in SOURCE_MODES):
        return Malformed(
            "not-a-regular-file",
            f"candidate {cid} must delete the source {f.target}, a regular file "
            f"at its base ({_MODES.get(old_mode, f'mode {old_mode}')} there, "
            f"change {status}); reject it",
        )
    if deleted != (f.body_digest == ABSENT):
        return Malformed(
            "touches-other-files",
            f"candidate {cid} {'deletes' if deleted else 'writes'} "
            f"{f.target}, but its trailers say otherwise",
        )
    if not deleted and mode != REGULAR:
        return Malformed(
            "not-a-regular-file",
            f"candidate {cid} makes {f.target} {_MODES.get(mode, f'mode {mode}')}; "
            "only a regular file (mode 100644) can be approved; reject it",
        )
    why = None if deleted else blob_problem(git, blob, max_bytes=max_bytes)
    return None if why is None else unchecked(cid, f.target, why)


@dataclass(frozen=True)
class BranchPending:
    """The pending index of DESIGN §3 from open candidate branches: slug -> candidate ids.
    Well-formed candidates count whose target is a query page, and page edits that add or
    replace a page (not deletions)."""

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
        t = candidate.trailers
        row = kinds.row(t.kind)
        if row is None or (row.policy == kinds.ANSWER and "/queries/" not in f"/{t.target}"):
            continue
        for f in t.files:  # every page it adds or replaces
            stem = f.target.rsplit("/", 1)[-1]
            if f.body_digest != ABSENT and stem.endswith(".md"):
                by_slug.setdefault(slugify(stem[:-3]), []).append(
                    candidate.id
                )  # a page file name may not be a slug
    return BranchPending({k: tuple(sorted(set(v))) for k, v in by_slug.items()})


def reject(git: Git, candidate_id: str) -> str:
    """Move the branch to ``refs/llmwiki/rejected/<id>`` (bytes kept); returns the new ref."""
    check_id(git, candidate_id)
    commit = git.rev_parse(PREFIX + candidate_id)
    assert commit is not None
    target = REJECTED + candidate_id
    for attempt in range(2, 1002):  # an earlier rejection under this id is kept beside it
        held = git.rev_parse(target)
        if held is None or held == commit:
            break
        target = f"{REJECTED}{candidate_id}-{attempt}"
    else:
        raise LlmwikiError(
            f"too many rejected candidates named {candidate_id}",
            hint=f"delete old ones with `git update-ref -d {REJECTED}{candidate_id}`",
        )
    if git.rev_parse(target) != commit:
        git.update_ref(target, commit, "", message=f"llmwiki: reject {candidate_id}")
    git.delete_ref(PREFIX + candidate_id, commit, message=f"llmwiki: reject {candidate_id}")
    return target
