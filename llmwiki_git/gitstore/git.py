"""The git adapter: `Git`, one repository's typed helpers (objects, refs, history, changes),
and finding the repository. Plain subprocess, errors converted to GitError (gitstore/runner.py
says why not GitPython)."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ..errors import NotARepository
from .changes import Changes
from .history import History
from .objects import ObjectReads, TreeEntry
from .refs import RefUpdates
from .runner import clean_env

__all__ = ["EMPTY_TREE", "Git", "TreeEntry", "blob_id", "find_project", "find_root"]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class Git(ObjectReads, RefUpdates, History, Changes):
    """Runs git in one work tree: every command llmwiki runs, as a typed method."""

    def common_dir(self) -> Path:
        known = _COMMON_DIRS.get(_repo_key(self.root, self.env))
        if known is not None and known.is_dir():
            return known  # find_root asked already (one git process less in every hook)
        path = Path(self.text("rev-parse", "--git-common-dir"))
        return path if path.is_absolute() else (self.root / path).resolve()

    def git_path(self, name: str) -> Path:
        """Where git keeps ``name`` (``hooks``, ``index``...), ``core.hooksPath`` and
        worktrees respected; absolute."""
        path = Path(self.text("rev-parse", "--git-path", name))
        return path if path.is_absolute() else self.root / path

    def is_shallow(self) -> bool:
        return (
            self.run("rev-parse", "--is-shallow-repository", check=False).decode().strip() == "true"
        )


# Common git dirs find_root learnt with the root, by `_repo_key` (saves Git.common_dir a process).
_COMMON_DIRS: dict[tuple[str, ...], Path] = {}


def _repo_key(root: Path, env: Mapping[str, str]) -> tuple[str, ...]:
    return (
        str(root),
        *(env.get(name, "") for name in ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE")),
    )


def find_root(start: Path, environ: Mapping[str, str] | None = None) -> tuple[Path, bool]:
    """The work-tree root above ``start`` and whether it is a git repository.

    Outside git, the nearest folder holding ``.llmwiki/`` or ``wiki/`` is the root, else
    ``start`` itself, so a plain folder of markdown can still be checked.
    """
    start = start.resolve()
    if not start.is_dir():
        raise NotARepository(f"{start} is not a directory")
    env = clean_env(environ)
    proc = subprocess.run(
        ["git", "rev-parse", "--show-toplevel", "--path-format=absolute", "--git-common-dir"],
        cwd=start,
        capture_output=True,
        env=env,
    )
    if proc.returncode == 0:
        lines = proc.stdout.decode("utf-8", "surrogateescape").split("\n")
        if len(lines) == 3 and not lines[2] and lines[1].startswith("/"):
            root = Path(lines[0])
            _COMMON_DIRS[_repo_key(root, env)] = Path(lines[1])
            return root, True
        proc = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=start, capture_output=True, env=env
        )
    if proc.returncode == 0:
        return Path(proc.stdout.decode("utf-8", "surrogateescape").strip()), True
    for folder in (start, *start.parents):
        if (folder / ".llmwiki").is_dir() or (folder / "wiki").is_dir():
            return folder, False
    return start, False


def blob_id(data: bytes) -> str:
    """The id git gives ``data`` as a blob (so work-tree files share the scan cache)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def find_project(start: Path, root: Path) -> Path:
    """The nearest folder from ``start`` up to ``root`` that holds ``.llmwiki/`` (a wiki
    kept in a subfolder of a larger repository), else ``root``."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".llmwiki").is_dir():
            return folder
        if folder == root:
            break
    return root
