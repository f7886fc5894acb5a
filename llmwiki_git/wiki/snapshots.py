"""Where a wiki's files come from: the work tree, the git index, or a commit.

Each snapshot lists its files (with blob ids where git already knows them) and reads their
bytes; symlinks that leave the repository are refused here, before anything reads them.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .. import confine
from ..errors import PageReadError, PathRefused
from ..gitstore.git import Git, TreeEntry

_SKIP_DIRS = {"node_modules", "__pycache__"}


@dataclass(frozen=True)
class SourceFile:
    path: str
    blob: str | None = None
    link_target: str | None = None  # a symlink's real path, relative to the repository root


@dataclass(frozen=True)
class SourceIssue:
    path: str
    code: str
    message: str


class Snapshot(Protocol):
    """A set of files at one point in time."""

    label: str

    def files(self) -> tuple[list[SourceFile], list[SourceIssue]]: ...

    def read(self, files: Iterable[SourceFile]) -> dict[str, bytes | PageReadError | OSError]: ...


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


class WorktreeSnapshot:
    """The files on disk. In a git repository, tracked and untracked-but-not-ignored files
    (so build output in .gitignore is not checked); elsewhere every file under the root."""

    label = "work tree"

    def __init__(
        self, root: Path, git: Git | None, *, max_bytes: int = confine.MAX_READ_BYTES
    ) -> None:
        self.root = root.resolve()
        self.git = git
        self.max_bytes = max_bytes
        self._links: dict[str, str] = {}
        self._folders: dict[str, bool] = {}

    def _listing(self) -> list[str]:
        found: list[str] = []
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
            rel = os.path.relpath(folder, self.root)
            for name in names:
                found.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
        return sorted(found)

    def _check_link(self, rel: str, issues: list[SourceIssue]) -> bool:
        """Whether the symlink ``rel`` may be read as a file (its target is remembered, so
        the wiki can refuse one leaving the wiki root)."""
        full = os.path.join(self.root, rel)
        where = confine.real_relative(self.root, rel)
        if where is None:
            issues.append(
                SourceIssue(
                    rel,
                    "symlink-escape",
                    f"symlink points outside the repository ({_readlink(full)}); not read",
                )
            )
            return False
        self._links[rel] = where
        return os.path.isfile(full)

    def _file(self, rel: str) -> SourceFile:
        return SourceFile(rel, None, self._links.get(rel))

    def files(self) -> tuple[list[SourceFile], list[SourceIssue]]:
        if self.git is not None:
            return self._git_files()
        files: list[SourceFile] = []
        issues: list[SourceIssue] = []
        for rel in self._listing():
            full = os.path.join(self.root, rel)
            if os.path.islink(full):
                if not self._check_link(rel, issues):
                    continue
            elif not os.path.isfile(full):
                continue
            files.append(self._file(rel))
        return files, issues

    def _git_files(self) -> tuple[list[SourceFile], list[SourceIssue]]:
        """Unmodified tracked files keep the blob id the index records (so the scan cache
        answers without reading them); modified and untracked files are read from disk.
        On the 10,000-page wiki of docs/benchmarks.md this skips reading and hashing its 35 MB."""
        assert self.git is not None
        index, modified, untracked = (
            self.git.ls_worktree()
        )  # one git process for the three listings
        files: list[SourceFile] = []
        issues: list[SourceIssue] = []
        for path, (mode, blob) in index.items():
            if mode == "120000":
                if os.path.islink(os.path.join(self.root, path)) and self._check_link(path, issues):
                    files.append(self._file(path))
            elif path in modified:
                if os.path.isfile(os.path.join(self.root, path)) and not os.path.islink(
                    os.path.join(self.root, path)
                ):
                    files.append(SourceFile(path))
                elif os.path.islink(os.path.join(self.root, path)) and self._check_link(
                    path, issues
                ):
                    files.append(self._file(path))
            elif mode in ("100644", "100755"):
                files.append(SourceFile(path, blob))
        for rel in untracked:
            full = os.path.join(self.root, rel)
            if os.path.islink(full):
                if self._check_link(rel, issues):
                    files.append(self._file(rel))
            elif os.path.isfile(full):
                files.append(SourceFile(rel))
        return files, issues

    def _plain_folder(self, folder: str) -> bool:
        """Whether ``folder`` (relative) is reached through no symlink (remembered per folder)."""
        known = self._folders.get(folder)
        if known is None:
            known = self._folders[folder] = (
                not folder or confine.real_relative(self.root, folder) == folder
            )
        return known

    def read(self, files: Iterable[SourceFile]) -> dict[str, bytes | PageReadError | OSError]:
        result: dict[str, bytes | PageReadError | OSError] = {}
        for item in files:
            try:
                if item.link_target is None and self._plain_folder(posixpath.dirname(item.path)):
                    # a plain file in a folder reached through no symlink: no symlink may stand there now
                    real, plain = os.path.join(self.root, item.path), True
                else:
                    real, plain = confine.confined(self.root, item.path, allow_hidden=True), False
                result[item.path] = confine.read_file(
                    real, max_bytes=self.max_bytes, name=item.path, nofollow=plain
                )
            except PathRefused as exc:
                code = {"too-large": "page-too-large", "symlink-escape": "symlink-escape"}.get(
                    exc.code, "unreadable-page"
                )
                result[item.path] = PageReadError(item.path, exc.reason, code=code)
        return result


class _GitSnapshot:
    label = "git"

    def __init__(self, git: Git) -> None:
        self.git = git

    def _entries(self) -> list[TreeEntry]:
        raise NotImplementedError

    def files(self) -> tuple[list[SourceFile], list[SourceIssue]]:
        entries = self._entries()
        by_path = {e.path: e for e in entries if e.is_file}
        files = [SourceFile(e.path, e.blob) for e in entries if e.is_file]
        issues: list[SourceIssue] = []
        links = [e for e in entries if e.is_symlink]
        targets = self.git.read_blobs(e.blob for e in links)
        for entry in links:
            raw = targets.get(entry.blob, b"").decode("utf-8", "replace")
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(entry.path), raw))
            if raw.startswith("/") or joined == ".." or joined.startswith("../"):
                issues.append(
                    SourceIssue(
                        entry.path,
                        "symlink-escape",
                        f"symlink points outside the repository ({raw}); not read",
                    )
                )
            elif joined in by_path:
                files.append(SourceFile(entry.path, by_path[joined].blob, joined))
            else:
                issues.append(
                    SourceIssue(
                        entry.path,
                        "symlink-escape",
                        f"symlink target {raw} is not a file in this tree; not read",
                    )
                )
        return files, issues

    def read(self, files: Iterable[SourceFile]) -> dict[str, bytes | PageReadError | OSError]:
        wanted = [f for f in files if f.blob]
        blobs = self.git.read_blobs(f.blob for f in wanted if f.blob)
        result: dict[str, bytes | PageReadError | OSError] = {}
        for item in wanted:
            data = blobs.get(item.blob or "")
            result[item.path] = (
                data if data is not None else OSError(f"blob {item.blob} is missing")
            )
        return result


class IndexSnapshot(_GitSnapshot):
    """The git index: exactly what the next commit will contain."""

    label = "index"

    def _entries(self) -> list[TreeEntry]:
        return self.git.ls_index()


class RevisionSnapshot(_GitSnapshot):
    """The tree of one commit."""

    def __init__(self, git: Git, rev: str) -> None:
        super().__init__(git)
        self.rev = rev
        self.label = rev

    def _entries(self) -> list[TreeEntry]:
        return self.git.ls_tree(self.rev)
