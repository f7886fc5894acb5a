"""One commit on the current branch that touches only the given paths.

``commit_paths`` never uses the user's index to build the commit: it reads HEAD into a
temporary index inside the git dir, writes the blobs, the tree and the commit with plumbing,
and moves the branch with a compare-and-swap ``update-ref``. Only after the branch moved does
it touch the user's side, and then only the given paths: the work-tree files (written
atomically) and their entries in the real index, so ``git status`` shows nothing for them and
every other staged or unstaged change is exactly as it was.

It refuses up front, writing nothing, when a target path has uncommitted edits (staged,
unstaged, or an untracked or ignored file in the way), when a path is not a plain
repo-relative POSIX path, when HEAD is detached, or when HEAD is no longer ``expected_head``.

The caller holds the ProjectLock around the whole read-validate-write sequence; the lock
keeps llmwiki writers apart, the compare-and-swap catches everyone else (a user's
``git commit`` meanwhile raises RefChanged and leaves HEAD, index and work tree untouched).
Known window: a user editing a target file between the dirty check and the write loses that
edit, as with any tool writing the work tree; the lock cannot cover an editor.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..confine import replace_file
from ..errors import GitError, LlmwikiError
from ..git import Git, TreeEntry
from .lock import pid_alive

_TEMP_PREFIX = "llmwiki-index-"
_TEMP_RE = re.compile(r"^llmwiki-index-(\d+)-")
_DRIVE = re.compile(r"^[A-Za-z]:")


class DirtyPaths(LlmwikiError):
    """A path the commit would write has uncommitted edits; nothing was written."""

    def __init__(self, paths: list[str]) -> None:
        shown = ", ".join(paths)
        super().__init__(
            f"refusing to commit: uncommitted changes to {shown}",
            hint="commit or stash those changes first (git stash push -- <path>), then try again",
        )
        self.paths = paths


class RefChanged(LlmwikiError):
    """The branch moved since it was read; nothing was written."""

    def __init__(self, ref: str, expected: str | None, actual: str | None) -> None:
        super().__init__(
            f"{ref} moved while llmwiki was writing (expected {expected or 'no commit yet'}, "
            f"found {actual or 'no commit'}); nothing was written",
            hint="run the command again",
        )
        self.ref = ref
        self.expected = expected
        self.actual = actual


class UnsafePath(LlmwikiError):
    """A path given to commit_paths is not a plain repo-relative file path."""


# --------------------------------------------------------------------------- checks


def check_path(path: object) -> str:
    """``path`` if it is a repo-relative POSIX file path outside ``.git``, else UnsafePath."""
    if not isinstance(path, str) or not path:
        raise UnsafePath(f"not a path: {path!r}")
    if "\0" in path or "\\" in path or path.startswith("/") or _DRIVE.match(path):
        raise UnsafePath(f"{path!r} is not a repo-relative POSIX path")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePath(f"{path!r} is not a normalized repo-relative path (no '..', '.', '//', or trailing '/')")
    if any(part.lower() == ".git" for part in parts):
        raise UnsafePath(f"{path!r} is inside .git")
    return path


def _check_worktree_shape(top: Path, files: Mapping[str, bytes | None]) -> None:
    """No symlinked or non-folder leading components, and no folder at a target."""
    for rel in files:
        current = top
        parts = rel.split("/")
        for part in parts[:-1]:
            current = current / part
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                break
            if stat.S_ISLNK(st.st_mode):
                raise UnsafePath(f"{rel}: {current.relative_to(top).as_posix()} is a symlink; refusing to write through it")
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafePath(f"{rel}: {current.relative_to(top).as_posix()} is a file, not a folder")
        else:
            try:
                st = os.lstat(top / rel)
            except FileNotFoundError:
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


def _pathspecs(paths: list[str]) -> list[str]:
    return [f":(top,literal){p}" for p in paths]


def dirty_paths(git: Git, paths: list[str]) -> list[str]:
    """The given paths that have uncommitted changes relative to HEAD: staged, unstaged,
    conflicted, or an untracked / ignored file (or files below the path) in the way."""
    out = git.run(
        "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all",
        "--ignored", "--no-renames", "--", *_pathspecs(paths),
    )
    changed = [rec[3:].decode("utf-8", "surrogateescape") for rec in out.split(b"\0") if len(rec) > 3]
    dirty = []
    for target in paths:
        if any(name == target or name.startswith(target + "/") for name in changed):
            dirty.append(target)
    return dirty


# --------------------------------------------------------------------------- git helpers


def _with_index(git: Git, index: Path) -> Git:
    """The same git, with GIT_INDEX_FILE pointing at ``index``."""
    env = dict(getattr(git, "_env", os.environ))
    env["GIT_INDEX_FILE"] = str(index)
    return Git(git.root, env)


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
    try:
        names = os.listdir(git_dir)
    except OSError:
        return
    for name in names:
        match = _TEMP_RE.match(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and not pid_alive(pid):
            shutil.rmtree(git_dir / name, ignore_errors=True)


def current_branch(git: Git) -> str:
    """``refs/heads/<name>`` that HEAD points to; LlmwikiError when detached."""
    ref = git.run("symbolic-ref", "-q", "HEAD", check=False).decode("utf-8", "surrogateescape").strip()
    if not ref:
        raise LlmwikiError(
            "HEAD is detached: llmwiki records changes as a commit on the current branch",
            hint="check out a branch (git switch <branch>) and run the command again",
        )
    if not ref.startswith("refs/heads/"):
        raise LlmwikiError(f"HEAD points to {ref}, which is not a branch", hint="check out a branch first")
    return ref


def _identity_args(git: Git) -> list[str]:
    """``-c user.name/email`` fallbacks only when git cannot form an identity itself."""
    if all(git.run("var", var, check=False).strip() for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")):
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
        f"{mode} {blob}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0" for mode, blob, path in records
    )


def _oid_length(git: Git) -> int:
    fmt = git.run("rev-parse", "--show-object-format", check=False).decode().strip()
    return 64 if fmt == "sha256" else 40


def _normalize_oid(value: str) -> str:
    oid = value.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", oid):
        raise LlmwikiError(f"expected_head must be a full commit id, not {value!r}")
    return oid


# --------------------------------------------------------------------------- work tree


def _write_atomic(target: Path, data: bytes, executable: bool) -> None:
    replace_file(target, data, executable=executable)


def _delete(top: Path, rel: str) -> None:
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


def _update_real_index(git: Git, info: bytes, attempts: int = 40) -> None:
    """``update-index --index-info`` on the user's index, waiting briefly (2 s) while
    another git command holds ``index.lock``."""
    for attempt in range(attempts):
        try:
            git.run("update-index", "-z", "--index-info", input=info)
            return
        except GitError as exc:
            if "index.lock" not in exc.stderr or attempt == attempts - 1:
                raise
            time.sleep(0.05)


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
) -> tuple[str, list[tuple[str, str, str]]] | None:
    """Write the commit ``parent`` + ``files`` through a temporary index; refs, the user's
    index and work tree are not touched. Returns the commit and the index records written
    (mode, blob, path; mode "0" = removed), or None when the tree would not change and
    ``allow_unchanged`` is false."""
    sweep_temp_indexes(git_dir)
    zero = "0" * (len(parent) if parent else _oid_length(git))
    records: list[tuple[str, str, str]] = []
    with temp_index(git_dir) as index:
        tmp = _with_index(git, index)
        if author is not None:
            tmp = Git(tmp.root, {**getattr(tmp, "_env", {}), "GIT_AUTHOR_NAME": author[0],
                                 "GIT_AUTHOR_EMAIL": author[1], "GIT_AUTHOR_DATE": author[2]})
        if parent is not None:
            tmp.run("read-tree", parent)
        entries = {entry.path: entry for entry in tmp.ls_index()}
        _check_tree_shape(entries, files)
        for rel, data in files.items():
            if data is None:
                records.append(("0", zero, rel))
                continue
            blob = tmp.run("hash-object", "-w", "--stdin", input=bytes(data)).decode().strip()
            old = entries.get(rel)
            records.append(("100755" if old is not None and old.mode == "100755" else "100644", blob, rel))
        tmp.run("update-index", "-z", "--index-info", input=_index_info(records))
        tree = tmp.text("write-tree")
        if not allow_unchanged:
            if parent is not None and tree == tmp.text("rev-parse", f"{parent}^{{tree}}"):
                return None
            if parent is None and not tmp.run("ls-files", "-z"):
                raise LlmwikiError("nothing to commit: the new tree would be empty")
        body = message if message.endswith("\n") else message + "\n"
        parents = ["-p", parent] if parent else []
        commit = tmp.run(*_identity_args(tmp), "commit-tree", tree, *parents, "-F", "-",
                         input=body.encode("utf-8")).decode().strip()
    return commit, records


def build_commit(
    git: Git,
    parent: str | None,
    files: Mapping[str, bytes | None],
    message: str,
    *,
    author: Author | None = None,
) -> str:
    """A commit whose tree is ``parent``'s with ``files`` written (None = deleted), made with
    plumbing and a temporary index. No ref, no index, no work-tree file changes: the caller
    points a ref at it (review candidates, replayed approvals). ``author`` keeps an original
    author; the committer is the user (or the llmwiki fallback identity)."""
    if not files:
        raise LlmwikiError("nothing to commit: no paths given")
    for rel in files:
        check_path(rel)
    git_dir = Path(git.text("rev-parse", "--absolute-git-dir"))
    built = _build(git, git_dir, parent, files, message, allow_unchanged=True, author=author)
    if built is None:  # pragma: no cover - allow_unchanged=True always builds
        raise LlmwikiError("no commit was built")
    return built[0]


def commit_paths(git: Git, files: Mapping[str, bytes | None], message: str, *, expected_head: str | None) -> str:
    """Commit ``files`` (path -> new bytes, None = delete) as one commit on the current
    branch and bring the work tree and index in line for those paths only.

    ``expected_head`` is the commit the caller validated against (None: HEAD as read now);
    if the branch is elsewhere, RefChanged. Returns the new commit id, or HEAD itself when
    the files already hold exactly those contents (no empty commit is made).
    """
    if not files:
        raise LlmwikiError("nothing to commit: no paths given")
    paths = [check_path(p) for p in files]
    for rel, data in files.items():
        if data is not None and not isinstance(data, (bytes, bytearray, memoryview)):
            raise LlmwikiError(f"{rel}: content must be bytes or None, not {type(data).__name__}")
    try:
        top = Path(git.text("rev-parse", "--show-toplevel"))
        git_dir = Path(git.text("rev-parse", "--absolute-git-dir"))
    except GitError as exc:
        raise LlmwikiError(f"{git.root} has no git work tree to commit to", hint="run inside a git work tree") from exc

    ref = current_branch(git)
    head = git.rev_parse("HEAD")
    if expected_head is not None:
        expected = _normalize_oid(expected_head)
        if set(expected) == {"0"}:
            expected = None  # "the branch must not exist yet"
        if expected != head:
            raise RefChanged(ref, expected, head)

    _check_worktree_shape(top, files)
    dirty = dirty_paths(git, paths)
    if dirty:
        raise DirtyPaths(dirty)

    built = _build(git, git_dir, head, files, message, allow_unchanged=False)
    if built is None:
        return head or ""  # nothing changes: the files already hold these bytes at HEAD
    commit, records = built
    zero = "0" * (len(head) if head else _oid_length(git))
    try:
        git.run("update-ref", "-m", _reflog_message(message), ref, commit, head or zero)
    except GitError:
        actual = git.rev_parse(ref)
        if actual != head:
            raise RefChanged(ref, head, actual) from None
        raise

    # The branch has moved: make the work tree and the real index agree, for these paths only.
    try:
        for mode, _blob, rel in records:
            data = files[rel]
            if data is None:
                _delete(top, rel)
            else:
                _write_atomic(top / rel, bytes(data), mode == "100755")
        _update_real_index(git, _index_info(records))
    except (OSError, GitError) as exc:
        written = " ".join(shlex.quote(p) for p in paths if files[p] is not None)
        deleted = " ".join(shlex.quote(p) for p in paths if files[p] is None)
        steps = [f"git reset -q -- {' '.join(shlex.quote(p) for p in paths)}"]
        if written:
            steps.append(f"git checkout -- {written}")
        if deleted:
            steps.append(f"rm -f -- {deleted}")
        raise LlmwikiError(
            f"committed {commit[:12]} on {ref}, but could not update the work tree or index for "
            f"{', '.join(paths)}: {exc}",
            hint="the commit is made; bring those paths in line with it: " + " && ".join(steps),
        ) from exc
    git.run("update-index", "-q", "--refresh", check=False)  # stat info only: keeps diff-files exact
    return commit
