"""The composition root: finds the repository, reads settings, builds snapshots and wikis."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from . import config
from .checks import CheckResult, check_wiki, new_problems
from .errors import NotARepository, UsageError
from .git import EMPTY_TREE, Git, find_project, find_root
from .wiki.model import Wiki, load_wiki
from .wiki.scancache import ScanCache
from .wiki.sources import IndexSnapshot, RevisionSnapshot, Snapshot, WorktreeSnapshot


@dataclass
class Workspace:
    """``root`` is the work-tree root; ``project`` the folder holding ``.llmwiki/`` (the
    root itself unless the wiki lives in a subfolder of a larger repository)."""

    root: Path
    git: Git | None
    settings: config.Settings
    use_cache: bool = True
    project: Path | None = None

    @property
    def base(self) -> str:
        """The project folder relative to the root, POSIX, "" for the root itself."""
        if self.project is None or self.project == self.root:
            return ""
        return self.project.relative_to(self.root).as_posix()

    @classmethod
    def open(
        cls,
        start: Path | None = None,
        *,
        wiki_dir: str | None = None,
        environ: Mapping[str, str] | None = None,
        use_cache: bool = True,
    ) -> Workspace:
        start = start or Path.cwd()
        root, is_git = find_root(start, environ)
        git = Git(root, environ) if is_git else None
        project = find_project(start, root)
        return cls(root, git, config.load(project, wiki_dir=wiki_dir), use_cache, project)

    def require_git(self, what: str) -> Git:
        if self.git is None:
            raise NotARepository(f"{what} needs a git repository, and {self.root} is not in one", hint="run `git init` or drop the flag")
        return self.git

    def _cache(self) -> ScanCache | None:
        if not self.use_cache or self.git is None or os.environ.get("LLMWIKI_NO_CACHE"):
            return None
        try:
            return ScanCache(self.git.common_dir() / "llmwiki" / "scan-cache-v1.marshal")
        except Exception:  # a cache must never stop a check
            return None

    def snapshot(self, scope: str) -> Snapshot:
        """``worktree``, ``index``, or a revision (``HEAD``, a commit id, a branch)."""
        if scope == "worktree":
            return WorktreeSnapshot(self.root, self.git)
        git = self.require_git("checking the index or a commit")
        if scope == "index":
            return IndexSnapshot(git)
        commit = git.rev_parse(scope)
        if commit is None:
            if scope == "HEAD":  # unborn branch: the first commit is compared with nothing
                return RevisionSnapshot(git, EMPTY_TREE)
            raise UsageError(f"unknown revision {scope!r}", hint="name a commit, branch or tag that exists")
        return RevisionSnapshot(git, commit)

    def wiki(self, scope: str = "worktree", cache: ScanCache | None = None) -> Wiki:
        return load_wiki(
            self.snapshot(scope),
            wiki_dir=self.settings.wiki_dir,
            base=self.base,
            cache=cache,
            max_page_bytes=self.settings.max_page_mb * 1024 * 1024,
        )

    def check(self, head: str = "worktree", base: str | None = None) -> CheckResult:
        """Check ``head``; with ``base``, report only what is newly wrong since ``base``."""
        cache = self._cache()
        result = check_wiki(self.wiki(head, cache))
        if base is None:
            return result
        return new_problems(check_wiki(self.wiki(base, cache)), result)
