"""The commit builder: commits made with plumbing and a temporary index, never the user's.

``build_commit`` writes blobs, a tree and a commit on top of a parent through a temporary
index inside the git dir; no ref, index or work-tree file changes. ``commit_paths`` builds
one commit on the current branch touching only the given paths and hands it to the write
transaction (``gitstore.transaction``), which refuses dirty paths before anything moves,
records the intent, moves the branch once (compare-and-swap) and brings the work tree and
the real index along for those paths only: every other staged or unstaged change of the
user is exactly as it was.

The caller holds the repository lock around the whole read-validate-write sequence; the lock
keeps llmwiki writers apart, the compare-and-swap catches everyone else (a user's
``git commit`` meanwhile raises RefChanged and leaves HEAD, index and work tree untouched).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..confine import refuse_symlinks
from ..errors import GitError, LlmwikiError, PathRefused, RefChanged, UnsafePath
from .git import Git, TreeEntry
from .lock import sweep_dead
from .transaction import Intent, apply, changed_paths, check_worktree

__all__ = ["build_commit", "commit_paths", "commit_tree", "current_branch", "move_branch"]

_TEMP_PREFIX = "llmwiki-index-"
_TEMP_RE = re.compile(r"^llmwiki-index-(\d+)-")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DRIVE = re.compile(r"^[A-Za-z]:")


# --------------------------------------------------------------------------- checks


def check_path(path: object) -> str:
    """``path`` if it is a repo-relative POSIX file path outside ``.git``, else UnsafePath."""
    if not isinstance(path, str) or not path:
        raise UnsafePath(f"not a path: {path!r}")
    if "\0" in path or "\\" in path or path.startswith("/") or _DRIVE.match(path):
        raise UnsafePath(f"{path!r} is not a repo-relative POSIX path")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePath(
            f"{path!r} is not a normalized repo-relative path (no '..', '.', '//', or trailing '/')"
        )
    if any(part.lower() == ".git" for part in parts):
        raise UnsafePath(f"{path!r} is inside .git")
    return path


def _check_worktree_shape(top: Path, files: Mapping[str, bytes | None]) -> None:
    """No symlink and no non-folder on the way to a target (confine's one walk), and no
    folder at a target."""
    for rel in files:
        try:
            refuse_symlinks(top, rel)
        except PathRefused as exc:
            raise UnsafePath(
                f"{rel}: {exc.message}; refusing to write through it", hint=exc.hint
            ) from exc
        try:
            st = os.lstat(top / rel)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISDIR(st.st_mode):
            raise UnsafePath(f"{rel} is a folder in the work tree")


def _check_tree_shape(entries: Mapping[str, TreeEntry], files: Mapping[str, bytes | None]) -> None:
    """A target must not be a folder, a symlink or a submodule at HEAD, nor sit under a file."""
    folders = set()
    for name in entries:
        parts = name.split("/")
        for i in range(1, len(parts)):
            folders.add("/".join(parts[:i]))
    for rel in files:
        if rel in folders:
            raise UnsafePath(f"{rel} is a folder at HEAD")
        entry = entries.get(rel)
        if entry is not None and not entry.is_file:
            kind = "a symlink" if entry.is_symlink else f"not a regular file (mode {entry.mode})"
            raise UnsafePath(f"{rel} is {kind} at HEAD; refusing to replace it")
        parts = rel.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in entries:
                raise UnsafePath(f"{rel}: {prefix} is a file at HEAD, not a folder")


# --------------------------------------------------------------------------- git helpers


def _with_index(git: Git, index: Path) -> Git:
    """The same git, with GIT_INDEX_FILE pointing at ``index``."""
    env = dict(git.env)
    env["GIT_INDEX_FILE"] = str(index)
    return Git(git.root, env)


def worktree_tree(git: Git, changed: Sequence[bytes]) -> str | None:
    """The tree of the work tree: the index with ``changed`` (the paths `git status` names
    modified, deleted or untracked) taken as they are on disk, written through a temporary
    copy of the index. The user's index is untouched; the changed files' blobs go to the
    object store, as `git add` would put them. None when git cannot (a folder, no index)."""
    lines = git.run("rev-parse", "--git-dir", "--git-path", "index", check=False).splitlines()
    if len(lines) != 2:
        return None
    git_dir, index = (Path(os.fsdecode(line)) for line in lines)
    git_dir, index = (p if p.is_absolute() else git.root / p for p in (git_dir, index))
    try:  # a read-only git dir (no temporary index) must not fail a check: no tree, then
        with temp_index(git_dir) as temp:
            shutil.copyfile(index, temp)
            private = _with_index(git, temp)
            listed = b"".join(path + b"\0" for path in changed)
            code, _ = private.call(
                "update-index", "--add", "--remove", "-z", "--stdin", input=listed, check=False
            )
            return private.write_tree() if code == 0 else None
    except OSError:
        return None


@contextmanager
def temp_index(git_dir: Path) -> Iterator[Path]:
    """A fresh index path in a private folder inside the git dir, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{os.getpid()}-", dir=git_dir))
    try:
        yield folder / "index"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep_temp_indexes(git_dir: Path) -> None:
    """Remove temporary index folders left by writers that died (their pid is gone)."""
    sweep_dead(git_dir, _TEMP_RE)


def current_branch(git: Git) -> str:
    """``refs/heads/<name>`` that HEAD points to; LlmwikiError when detached."""
    ref = (
        git.run("symbolic-ref", "-q", "HEAD", check=False)
        .decode("utf-8", "surrogateescape")
        .strip()
    )
    if not ref:
        raise LlmwikiError(
            "HEAD is detached: llmwiki records changes as a commit on the current branch",
            hint="check out a branch (git switch <branch>) and run the command again",
        )
    if not ref.startswith("refs/heads/"):
        raise LlmwikiError(
            f"HEAD points to {ref}, which is not a branch", hint="check out a branch first"
        )
    return ref


def _identity_args(git: Git) -> list[str]:
    """``-c user.name/email`` fallbacks only when git cannot form an identity itself."""
    if all(
        git.run("var", var, check=False).strip()
        for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
    ):
        return []
    args = []
    if not git.run("config", "--get", "user.name", check=False).strip():
        args += ["-c", "user.name=llmwiki"]
    if not git.run("config", "--get", "user.email", check=False).strip():
        args += ["-c", "user.email=llmwiki@localhost"]
    return args


def _reflog_message(message: str) -> str:
    first = next((line.strip() for line in message.splitlines() if line.strip()), "commit")
    return first if first.startswith("llmwiki") else f"llmwiki: {first}"


def _index_info(records: list[tuple[str, str, str]]) -> bytes:
    return b"".join(
        f"{mode} {blob}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0"
        for mode, blob, path in records
    )


def _oid_length(git: Git) -> int:
    fmt = git.run("rev-parse", "--show-object-format", check=False).decode().strip()
    return 64 if fmt == "sha256" else 40


def _normalize_oid(value: str) -> str:
    oid = value.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", oid):
        raise LlmwikiError(f"expected_head must be a full commit id, not {value!r}")
    return oid


# --------------------------------------------------------------------------- the write


Author = tuple[str, str, str]  # name, email, date (any format git accepts, e.g. "1700000000 +0000")


def _build(
    git: Git,
    git_dir: Path,
    parent: str | None,
    files: Mapping[str, bytes | None],
    message: str,
    *,
    allow_unchanged: bool,
    author: Author | None = None,
    placed: Mapping[str, tuple[str, str]] | None = None,
) -> tuple[str, list[tuple[str, str, str]]] | None:
    """Write the commit ``parent`` + ``files`` through a temporary index; refs, the user's
    index and work tree are not touched. Returns the commit and the index records written
    (mode, blob, path; mode "0" = removed), or None when the tree would not change and
    ``allow_unchanged`` is false. ``placed`` (path -> (mode, blob id)) are written as they
    are, without reading them (a moved file keeps its blob and mode)."""
    sweep_temp_indexes(git_dir)
    zero = "0" * (len(parent) if parent else _oid_length(git))
    with temp_index(git_dir) as index:
        tmp = _with_index(git, index)
        if author is not None:
            tmp = _authored(tmp, author)
        if parent is not None:
            tmp.run("read-tree", parent)
        entries = {entry.path: entry for entry in tmp.ls_index()}
        _check_tree_shape(entries, {**files, **dict.fromkeys(placed or {}, b"")})
        records = _records(tmp, entries, files, placed or {}, zero)
        tmp.run("update-index", "-z", "--index-info", input=_index_info(records))
        tree = tmp.text("write-tree")
        if not allow_unchanged:
            if parent is not None and tree == tmp.text("rev-parse", f"{parent}^{{tree}}"):
                return None
            if parent is None and not tmp.run("ls-files", "-z"):
                raise LlmwikiError("nothing to commit: the new tree would be empty")
        commit = commit_tree(tmp, tree, parent, message)
    return commit, records


def _authored(git: Git, author: Author) -> Git:
    """``git`` (its environment kept) committing as ``author`` (name, email, date)."""
    return Git(
        git.root,
        {
            **getattr(git, "_env", {}),
            "GIT_AUTHOR_NAME": author[0],
            "GIT_AUTHOR_EMAIL": author[1],
            "GIT_AUTHOR_DATE": author[2],
        },
    )


def _records(
    git: Git,
    entries: Mapping[str, TreeEntry],
    files: Mapping[str, bytes | None],
    placed: Mapping[str, tuple[str, str]],
    zero: str,
) -> list[tuple[str, str, str]]:
    """The index records (mode, blob, path; mode "0" = removed) that write ``files`` (their
    blobs hashed into the repository; an executable page stays executable) and ``placed``
    over the index ``entries``."""
    records: list[tuple[str, str, str]] = []
    for rel, data in files.items():
        if data is None:
            records.append(("0", zero, rel))
            continue
        blob = git.run("hash-object", "-w", "--stdin", input=bytes(data)).decode().strip()
        old = entries.get(rel)
        records.append(
            ("100755" if old is not None and old.mode == "100755" else "100644", blob, rel)
        )
    for rel, (mode, blob) in placed.items():
        if mode not in ("100644", "100755"):
            raise UnsafePath(f"{rel}: only regular files can be placed (mode {mode})")
        records.append((mode, blob, rel))
    return records


def commit_tree(git: Git, tree: str, parent: str | None, message: str) -> str:
    """A commit of ``tree`` on ``parent`` (none: a root commit) with ``message``."""
    body = message if message.endswith("\n") else message + "\n"
    parents = ["-p", parent] if parent else []
    return (
        git.run(
            *_identity_args(git),
            "commit-tree",
            tree,
            *parents,
            "-F",
            "-",
            input=body.encode("utf-8"),
        )
        .decode()
        .strip()
    )


def build_commit(
    git: Git,
    parent: str | None,
    files: Mapping[str, bytes | None],
    message: str,
    *,
    author: Author | None = None,
    placed: Mapping[str, tuple[str, str]] | None = None,
) -> str:
    """A commit whose tree is ``parent``'s with ``files`` written (None = deleted), made with
    plumbing and a temporary index. No ref, no index, no work-tree file changes: the caller
    points a ref at it (review candidates, replayed approvals). ``author`` keeps an original
    author; the committer is the user (or the llmwiki fallback identity). ``placed`` (path ->
    (mode, blob id) of a blob already stored) adds files without reading them (a move)."""
    if not files and not placed:
        raise LlmwikiError("nothing to commit: no paths given")
    for rel in [*files, *(placed or {})]:
        check_path(rel)
    git_dir = Path(git.text("rev-parse", "--absolute-git-dir"))
    built = _build(
        git, git_dir, parent, files, message, allow_unchanged=True, author=author, placed=placed
    )
    if built is None:  # pragma: no cover - allow_unchanged=True always builds
        raise LlmwikiError("no commit was built")
    return built[0]


def commit_paths(
    git: Git,
    files: Mapping[str, bytes | None],
    message: str,
    *,
    expected_head: str | None,
    state_dir: Path | None = None,
    force: Collection[str] = (),
) -> str:
    """Commit ``files`` (path -> new bytes, None = delete) as one commit on the current
    branch, as a transaction (gitstore.transaction): refusals first, then the journal, one
    compare-and-swap, then the work tree and index follow for those paths only.

    ``expected_head`` is the commit the caller validated against (None: HEAD as read now);
    if the branch is elsewhere, RefChanged. ``force`` names llmwiki's own generated files,
    overwritten even when they differ from HEAD. ``state_dir`` holds the journal (default
    ``<top>/.llmwiki``). Returns the new commit id, or HEAD itself when the files already
    hold exactly those contents (no empty commit is made).
    """
    if not files:
        raise LlmwikiError("nothing to commit: no paths given")
    for rel, data in files.items():
        check_path(rel)
        if data is not None and not isinstance(data, (bytes, bytearray, memoryview)):
            raise LlmwikiError(f"{rel}: content must be bytes or None, not {type(data).__name__}")
    try:
        top = Path(git.text("rev-parse", "--show-toplevel"))
        git_dir = Path(git.text("rev-parse", "--absolute-git-dir"))
    except GitError as exc:
        raise LlmwikiError(
            f"{git.root} has no git work tree to commit to", hint="run inside a git work tree"
        ) from exc

    ref = current_branch(git)
    head = git.rev_parse("HEAD")
    if expected_head is not None:
        expected: str | None = _normalize_oid(expected_head)
        if expected is not None and set(expected) == {"0"}:
            expected = None  # "the branch must not exist yet"
        if expected != head:
            raise RefChanged(ref, expected, head)

    _check_worktree_shape(top, files)
    built = _build(git, git_dir, head, files, message, allow_unchanged=False)
    if built is None:
        # Nothing changes at HEAD; a refusal still applies to a dirty non-generated path.
        check_worktree(git, Intent(ref, head, head or "", "write", [p for p in files], list(force)))
        return head or ""
    commit, _records = built
    return move_branch(git, top, ref, head, commit, message, state_dir=state_dir, force=force)


def move_branch(
    git: Git,
    top: Path,
    ref: str,
    old: str | None,
    new: str,
    message: str,
    *,
    state_dir: Path | None = None,
    force: Collection[str] = (),
    drop_refs: Sequence[tuple[str, str]] = (),
    what: str | None = None,
) -> str:
    """Move the checked-out ``ref`` from ``old`` to the already built ``new`` as one
    transaction; the work tree and index follow for the paths that differ."""
    paths = changed_paths(git, old, new)
    intent = Intent(
        ref,
        old,
        new,
        what or _reflog_message(message).removeprefix("llmwiki: "),
        paths,
        [p for p in paths if p in set(force)],
        list(drop_refs),
    )
    _check_worktree_shape(
        top, dict.fromkeys(paths)
    )  # a symlink on the way, tracked or not, refuses now
    check_worktree(git, intent, top)
    apply(
        git,
        top,
        state_dir if state_dir is not None else top / ".llmwiki",
        intent,
        _reflog_message(message),
    )
    return new
