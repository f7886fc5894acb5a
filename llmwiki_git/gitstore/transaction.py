"""One write as a transaction: decide, build, record the intent, move the branch once, follow.

Every llmwiki write that moves a branch (``query --save``, ``review approve``) goes through
:func:`apply`, after its caller has built every commit in the object database:

1. **Decide** (:func:`check_worktree`): every path that differs between the old tip and the
   new commit must be clean in the work tree *and* the index (as at the old tip), except
   llmwiki's own generated files (``force``), which are llmwiki's to overwrite. A refusal
   here leaves everything untouched.
2. **Record the intent**: ``<state>/transaction.json`` holds the branch, the old tip, the new
   tip, the paths the work tree must follow and the refs to delete afterwards. It is written
   atomically before the branch moves.
3. **Move the branch once**, compare-and-swap from the old tip to the final commit.
4. **Follow**: the work tree and index take the new content of those paths, each file
   written atomically; a path that is neither at its old nor at its new content (someone
   edited it in the meantime) is never overwritten.
5. Delete the refs the write consumed (a review candidate), then the journal.

A crash (kill -9, power loss) anywhere leaves either the old state (the branch never moved:
:func:`recover` drops the journal, "rolled back") or a moved branch whose remaining steps
:func:`recover` completes ("completed"). Every llmwiki command runs :func:`recover` first, so
the user sees one line saying which, and never a half-applied write.

``LLMWIKI_TEST_KILL_AT=<point>[:<n>]`` makes the process kill itself with SIGKILL the n-th
time it passes that point (the crash tests use it; see ``POINTS``).
``LLMWIKI_TEST_PAUSE_AT=<point>[:<n>]`` makes it say so on stderr and wait there for a signal
(the Ctrl-C tests send SIGINT then; see :func:`pause_point`); at these points and at
``embedded`` (after each slice of chunks `index` embeds, retrieval/checkpoint.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import confine
from ..errors import (
    DirtyPaths,
    FollowIncomplete,
    GitError,
    GitLockHeld,
    LlmwikiError,
    PathRefused,
    RefChanged,
)
from .git import Git
from .runner import batches

JOURNAL = "transaction.json"
POINTS = ("built", "journal", "ref", "file", "files", "index", "refs")
# Outside a write transaction: between a check cache file's write and its rename (checks/cache.py);
# between a multi-file candidate's commit and its branch (review/stagefiles.py); between the
# vectors file and the metadata of the search index (retrieval/store.py); while a published
# index is restored in its scratch folder (retrieval/indexref.py).
OTHER_POINTS = ("cache", "stage", "store", "snapshot")
TEMP_RE = re.compile(
    "^" + re.escape(confine.TEMP_PREFIX) + "[0-9a-f]{12}" + re.escape(confine.TEMP_SUFFIX) + "$"
)


_passed: dict[str, int] = {}


def crash_point(name: str) -> None:
    """Kill this process with SIGKILL when LLMWIKI_TEST_KILL_AT is ``name`` or ``name:N`` (the
    N-th time this point is passed); the crash tests use it. A no-op otherwise."""
    if _nth_pass("LLMWIKI_TEST_KILL_AT", name):
        os.kill(os.getpid(), signal.SIGKILL)
    pause_point(name)  # every crash point is a place to be interrupted, too


def _nth_pass(variable: str, name: str) -> bool:
    """Whether this pass of point ``name`` is the one the test variable names."""
    wanted = os.environ.get(variable)
    if not wanted:
        return False
    key = f"{variable}\0{name}"
    _passed[key] = _passed.get(key, 0) + 1
    point, _, count = wanted.partition(":")
    return point == name and _passed[key] == int(count or 1)


def pause_point(name: str) -> None:
    """When LLMWIKI_TEST_PAUSE_AT is ``name`` or ``name:N`` (the N-th pass), write
    ``llmwiki-test: paused at <name>`` to stderr and wait for a signal: a test sends SIGINT
    at exactly this point, as Ctrl-C would, with no timing involved. A no-op otherwise."""
    if _nth_pass("LLMWIKI_TEST_PAUSE_AT", name):
        os.write(2, f"llmwiki-test: paused at {name}\n".encode())
        signal.pause()  # the default SIGINT handler raises KeyboardInterrupt here


def _int(value: object) -> int:
    """An integer field of a journal written by any version (0 when absent or unreadable)."""
    try:
        return int(value) if isinstance(value, (int, str)) else 0
    except ValueError:
        return 0


@dataclass
class Intent:
    """What one write will do; also the journal's content."""

    ref: str
    old: str | None
    new: str
    what: str
    paths: list[str] = field(
        default_factory=list
    )  # where old and new differ: the work tree follows
    force: list[str] = field(
        default_factory=list
    )  # llmwiki's generated files: overwrite when dirty
    drop_refs: list[tuple[str, str]] = field(
        default_factory=list
    )  # (ref, expected commit) deleted after
    follow: bool = True  # the branch is checked out here: bring work tree and index along
    pid: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "pid": self.pid,
            "ref": self.ref,
            "old": self.old,
            "new": self.new,
            "what": self.what,
            "paths": self.paths,
            "force": self.force,
            "dropRefs": [list(p) for p in self.drop_refs],
            "follow": self.follow,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Intent:
        def strings(key: str) -> list[str]:
            value = data.get(key) or []
            return [str(v) for v in value] if isinstance(value, list) else []

        drops = data.get("dropRefs") or []
        return cls(
            str(data["ref"]),
            str(data["old"]) if data.get("old") else None,
            str(data["new"]),
            str(data.get("what") or "write"),
            strings("paths"),
            strings("force"),
            [(str(r), str(c)) for r, c in drops] if isinstance(drops, list) else [],
            bool(data.get("follow", True)),
            _int(data.get("pid")),
        )


# --------------------------------------------------------------------------- files


def write_atomic(target: Path, data: bytes, executable: bool = False, *, root: Path) -> None:
    """Replace ``target`` (a file under ``root``) through a ``.llmwiki-<hex>.tmp`` sibling and
    a rename, never through a symlink on the way from ``root`` (confinement's one write,
    :func:`llmwiki_git.confine.replace_file`); new files get the user's umask."""
    rel = os.path.relpath(target, root)
    confine.replace_file(
        root, rel, data, executable=executable, before_rename=lambda: crash_point("file")
    )


def sweep_temp_files(top: Path, paths: Sequence[str]) -> None:
    """Remove ``.llmwiki-<hex>.tmp`` files a killed writer left next to ``paths`` (callers hold
    the repository lock, so no live llmwiki writer owns them)."""
    folders = {(top / p).parent for p in paths} | {top}
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if TEMP_RE.match(name):
                try:
                    os.unlink(folder / name)
                except OSError:
                    pass


def _delete(top: Path, rel: str) -> None:
    confine.refuse_symlinks(top, rel)  # never unlink through a symlinked folder
    target = top / rel
    try:
        os.unlink(target)
    except FileNotFoundError:
        pass
    for parent in target.parents:  # drop folders the deletion emptied, as git does
        if parent == top or top not in parent.parents:
            break
        try:
            os.rmdir(parent)
        except OSError:
            break


def _read(path: Path) -> bytes | None:
    """The file's bytes; None when absent; a sentinel no blob equals for anything else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return b"\0not a regular file\0"
    try:
        return path.read_bytes()
    except OSError:
        return b"\0unreadable\0"


# --------------------------------------------------------------------------- git side


def _entries(git: Git, rev: str | None, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """{path: (mode, blob)} of ``paths`` at ``rev`` (None: no commit)."""
    if rev is None or not paths:
        return {}
    out = b"".join(
        git.run("ls-tree", "-z", "--full-tree", rev, "--", *chunk)
        for chunk in batches([f":(top,literal){p}" for p in paths])
    )
    found = {}
    for record in out.split(b"\0"):
        if record:
            meta, _, name = record.partition(b"\t")
            mode, _kind, blob = meta.decode().split(" ")
            found[name.decode("utf-8", "surrogateescape")] = (mode, blob)
    return found


def _index_entries(git: Git, paths: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
    out = b"".join(
        git.run("ls-files", "-s", "-z", "--", *chunk)
        for chunk in batches([f":(top,literal){p}" for p in paths])
    )
    found: dict[str, list[tuple[str, str, str]]] = {}
    for record in out.split(b"\0"):
        if record:
            meta, _, name = record.partition(b"\t")
            mode, blob, stage = meta.decode().split(" ")
            found.setdefault(name.decode("utf-8", "surrogateescape"), []).append(
                (mode, blob, stage)
            )
    return found


def changed_paths(git: Git, old: str | None, new: str) -> list[str]:
    """Paths whose entry differs between ``old`` and ``new``."""
    if old is None:
        out = git.run("ls-tree", "-r", "-z", "--name-only", "--full-tree", new)
    else:
        out = git.run(
            "diff-tree", "-r", "-z", "--no-renames", "--name-only", "--no-commit-id", old, new
        )
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def _status(git: Git, paths: Sequence[str]) -> list[tuple[str, str]]:
    if not paths:
        return []
    out = b"".join(
        git.run(
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignored",
            "--no-renames",
            "--",
            *chunk,
        )
        for chunk in batches([f":(top,literal){p}" for p in paths])
    )
    return [
        (rec[:2].decode(), rec[3:].decode("utf-8", "surrogateescape"))
        for rec in out.split(b"\0")
        if len(rec) > 3
    ]


def _holds_new(git: Git, top: Path, intent: Intent, rel: str) -> bool:
    """Whether the work tree and index already hold what the write brings to ``rel`` (a page
    edit staged with `review stage` and kept in the work tree): nothing of the user's is lost."""
    new, old = _entries(git, intent.new, [rel]).get(rel), _entries(git, intent.old, [rel]).get(rel)
    if new is not None and new[0] != "100644":
        return False
    want = git.run("cat-file", "blob", new[1]) if new else None
    stage = [(m, b) for m, b, _ in _index_entries(git, [rel]).get(rel, [])]
    return _read(top / rel) == want and stage in ([], [old], [new])


# --------------------------------------------------------------------------- git's own locks


def _lock_names(intent: Intent, *, moving: bool = True) -> list[str]:
    """The lock files (``--git-path`` names) git takes for the steps of ``intent``: the index
    and HEAD when the work tree follows, the branch's ref (``moving``: the ref is yet to move),
    each ref to delete and, for those, ``packed-refs``."""
    names = ["index.lock"] if intent.follow else []
    if intent.ref and moving:
        names.append(f"{intent.ref}.lock")
        if (
            intent.follow
        ):  # the checked-out branch: git logs the move in HEAD's reflog, under HEAD.lock
            names.append("HEAD.lock")
    names += [f"{ref}.lock" for ref, _ in intent.drop_refs]
    if intent.drop_refs:
        names.append("packed-refs.lock")
    return names


def held_git_locks(git: Git, names: Sequence[str]) -> list[Path]:
    """Those of git's lock files ``names`` (``--git-path`` names: ``index.lock``,
    ``refs/heads/main.lock``) that exist now: git would refuse the step that needs them."""
    if not names:
        return []
    out = git.run("rev-parse", *[arg for name in names for arg in ("--git-path", name)])
    held = []
    for line in out.decode("utf-8", "surrogateescape").splitlines():
        path = Path(line) if os.path.isabs(line) else git.root / line
        if os.path.lexists(path):
            held.append(path)
    return held


def check_git_locks(git: Git, intent: Intent) -> None:
    """Refuse (GitLockHeld, naming each lock and what to do) when a lock git needs for the
    write is held: decided before the ref moves, so a held lock never half-applies a write."""
    held = held_git_locks(git, _lock_names(intent))
    if held:
        raise GitLockHeld(held, intent.what)


def _boot_time() -> float | None:
    """When this machine last started (Linux ``/proc/stat``), else None."""
    try:
        with open("/proc/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _clear_stale(paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(cleared, still held): a lock file last written before this machine started cannot be
    held by any process running on it (a power loss or a killed git left it): removed."""
    boot = _boot_time()
    cleared, held = [], []
    for path in paths:
        try:
            stale = boot is not None and os.lstat(path).st_mtime < boot
        except FileNotFoundError:
            continue
        if stale:
            try:
                os.unlink(path)
                cleared.append(path)
                continue
            except OSError:
                pass
        held.append(path)
    return cleared, held


def check_worktree(git: Git, intent: Intent, top: Path | None = None) -> None:
    """Refuse (GitLockHeld) when git's own locks for the write are held, and (DirtyPaths)
    unless every non-generated path the write changes is clean, as at HEAD, in the index and
    the work tree (or, given ``top``, already holds the new content). Nothing is written."""
    check_git_locks(git, intent)
    if not intent.follow:
        return
    wanted = [p for p in intent.paths if p not in intent.force]
    changed = _status(git, wanted)
    dirty, untracked = [], []
    for target in wanted:
        hits = [
            (code, name)
            for code, name in changed
            if name == target or name.startswith(target + "/")
        ]
        if (
            hits
            and top is not None
            and all(name == target for _, name in hits)
            and _holds_new(git, top, intent, target)
        ):
            continue
        if hits:
            dirty.append(target)
            if all(code in ("??", "!!") for code, _ in hits):
                untracked.append(target)
    if dirty:
        raise DirtyPaths(dirty, untracked)


def _follow(git: Git, top: Path, intent: Intent) -> list[str]:
    """Bring the work tree and index from ``old`` to ``new`` for ``intent.paths``; returns the
    paths left alone because someone else changed them (never overwritten)."""
    paths = intent.paths
    if not paths:
        return []
    new_entries = _entries(git, intent.new, paths)
    old_entries = _entries(git, intent.old, paths)
    index = _index_entries(git, paths)
    zero = "0" * len(intent.new)
    kept: list[str] = []
    records: list[tuple[str, str, str]] = []
    for rel in paths:
        new, old = new_entries.get(rel), old_entries.get(rel)
        current = _read(top / rel)
        new_bytes = git.run("cat-file", "blob", new[1]) if new else None
        old_bytes = git.run("cat-file", "blob", old[1]) if old else None
        stage = index.get(rel, [])
        index_ok = not stage or [(m, b) for m, b, _ in stage] in ([old], [new])
        ours = rel in intent.force
        if not ours and (current not in (old_bytes, new_bytes) or not index_ok):
            kept.append(rel)
            continue
        if current != new_bytes:
            if new is None:
                _delete(top, rel)
            else:
                write_atomic(top / rel, new_bytes or b"", new[0] == "100755", root=top)
        records.append((new[0], new[1], rel) if new else ("0", zero, rel))
    crash_point("files")
    if records:
        info = b"".join(
            f"{m} {b}\t".encode() + p.encode("utf-8", "surrogateescape") + b"\0"
            for m, b, p in records
        )
        _update_index(git, info)
        crash_point("index")
    git.run(
        "update-index", "-q", "--refresh", check=False, detached=True
    )  # stat info only: keeps diff-files exact
    return kept


def _update_index(git: Git, info: bytes, attempts: int = 40) -> None:
    """``update-index --index-info`` on the user's index, waiting briefly (2 s) while another
    git command holds ``index.lock``."""
    for attempt in range(attempts):
        try:
            git.run("update-index", "-z", "--index-info", input=info, detached=True)
            return
        except GitError as exc:
            if "index.lock" not in exc.stderr or attempt == attempts - 1:
                raise
            time.sleep(0.05)


def _head_ref(git: Git) -> str:
    return (
        git.run("symbolic-ref", "-q", "HEAD", check=False)
        .decode("utf-8", "surrogateescape")
        .strip()
    )


# --------------------------------------------------------------------------- journal


def journal_path(state_dir: Path) -> Path:
    return state_dir / JOURNAL


def _write_journal(state_dir: Path, intent: Intent) -> None:
    write_atomic(
        journal_path(state_dir),
        (json.dumps(intent.to_json(), indent=2) + "\n").encode(),
        root=state_dir.parent,
    )


def _drop_journal(state_dir: Path) -> None:
    try:
        os.unlink(journal_path(state_dir))
    except FileNotFoundError:
        pass


# --------------------------------------------------------------------------- apply / recover


def _finish(git: Git, top: Path, state_dir: Path, intent: Intent) -> list[str]:
    kept: list[str] = []
    if intent.follow and _head_ref(git) == intent.ref:
        kept = _follow(git, top, intent)
    for ref, commit in intent.drop_refs:
        git.run(
            "update-ref",
            "-m",
            f"llmwiki: {intent.what}",
            "-d",
            ref,
            commit,
            check=False,
            detached=True,
        )
    left = [ref for ref, commit in intent.drop_refs if git.rev_parse(ref) == commit]
    if left:  # not deleted: the journal stays, so the next command finishes the write
        held = held_git_locks(git, [*(f"{ref}.lock" for ref in left), "packed-refs.lock"])
        if held:
            raise GitLockHeld(held, intent.what, recovering=True)
        raise LlmwikiError(
            f"could not delete {', '.join(left)} after the {intent.what}",
            hint="run any llmwiki command (e.g. `llmwiki review list`) to try again",
        )
    crash_point("refs")
    _drop_journal(state_dir)
    sweep_temp_files(top, intent.paths)
    return kept


def apply(git: Git, top: Path, state_dir: Path, intent: Intent, reflog: str) -> None:
    """Record the intent, move ``intent.ref`` once (compare-and-swap), then follow. The caller
    holds the repository lock and has run :func:`check_worktree`."""
    intent.pid = os.getpid()
    zero = "0" * len(intent.new)
    crash_point("built")
    _write_journal(state_dir, intent)
    crash_point("journal")
    try:  # detached: a signal to our process group (a CI timeout, a closed terminal) lets git finish
        git.run(
            "update-ref", "-m", reflog, intent.ref, intent.new, intent.old or zero, detached=True
        )
    except GitError:
        _drop_journal(state_dir)
        actual = git.rev_parse(intent.ref)
        raise RefChanged(intent.ref, intent.old, actual) from None
    crash_point("ref")
    try:
        kept = _finish(git, top, state_dir, intent)
    except GitLockHeld:
        raise
    except (OSError, GitError) as exc:
        raise LlmwikiError(
            f"committed {intent.new[:12]} on {intent.ref}, but could not bring the work tree along yet: {exc}",
            hint="run any llmwiki command (e.g. `llmwiki review list`) to finish it once the cause is gone",
        ) from exc
    if kept:
        raise FollowIncomplete(
            f"committed {intent.new[:12]} on {intent.ref}; {', '.join(kept)} changed in the work tree meanwhile and "
            "was left as you edited it",
            hint="compare with `git diff HEAD -- " + " ".join(kept) + "` and keep what you need",
        )


def recover(git: Git, top: Path, state_dir: Path) -> str | None:
    """Finish or roll back an interrupted write found in the journal; None when there is none.
    The caller holds the repository lock."""
    path = journal_path(state_dir)
    sweep_temp_files(state_dir, [])
    if not path.is_file():
        sweep_temp_files(top, [])
        return None
    try:  # non-blocking, size-capped, bounded depth (confine): a hostile journal is unreadable, not a crash
        intent = Intent.from_json(confine.read_json(path, max_bytes=1024 * 1024, name=JOURNAL))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, PathRefused):
        _drop_journal(state_dir)
        return "llmwiki: dropped an unreadable record of an interrupted write (nothing was changed by it)"
    actual = git.rev_parse(intent.ref)
    if actual == intent.old:
        _drop_journal(state_dir)
        sweep_temp_files(top, intent.paths)
        text = f"llmwiki: an interrupted {intent.what} had not moved {intent.ref}; rolled it back (nothing to undo)"
        return text + _stale_note(git, _lock_names(intent))
    if actual != intent.new:
        _drop_journal(state_dir)
        sweep_temp_files(top, intent.paths)
        return (
            f"llmwiki: an interrupted {intent.what} was found, but {intent.ref} has moved on since; "
            "left the work tree as it is"
        )
    cleared, held = _clear_stale(held_git_locks(git, _lock_names(intent, moving=False)))
    if held:  # the journal stays: the next command finishes the write once the lock is gone
        raise GitLockHeld(held, intent.what, recovering=True)
    kept = _finish(git, top, state_dir, intent)
    text = f"llmwiki: completed an interrupted {intent.what} ({intent.ref} at {intent.new[:12]})"
    if cleared:
        text += f"; removed git's stale lock {', '.join(map(str, cleared))} (left before this machine last started)"
    if kept:
        text += f"; kept your edits to {', '.join(kept)} (compare with `git diff HEAD`)"
    return text


def _stale_note(git: Git, names: Sequence[str]) -> str:
    """A rolled-back write may have left a lock of a killed git behind: clear it when it is
    provably stale, name it otherwise (the next write would refuse on it)."""
    cleared, held = _clear_stale(held_git_locks(git, names))
    text = f"; removed git's stale lock {', '.join(map(str, cleared))}" if cleared else ""
    if held:
        text += (
            f"; git's lock {', '.join(map(str, held))} is still held: if no git command is running, "
            f"remove it (rm {' '.join(str(p) for p in held)})"
        )
    return text


def pending(state_dir: Path) -> bool:
    """A journal, or a temp file a killed writer left in the state folder (one listdir)."""
    try:
        names = os.listdir(state_dir)
    except OSError:
        return False
    return JOURNAL in names or any(TEMP_RE.match(name) for name in names)
