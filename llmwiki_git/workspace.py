"""The composition root: finds the repository, reads settings, builds snapshots and wikis."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import config
from .errors import DATA_ERRORS, ConfigError, LlmwikiError, NotARepository, UsageError
from .git import EMPTY_TREE, Git, find_project, find_root
from .wiki.model import Wiki, load_wiki
from .wiki.snapshots import IndexSnapshot, RevisionSnapshot, Snapshot, WorktreeSnapshot

if TYPE_CHECKING:
    from .checks.cache import ScanCache
    from .checks.result import CheckResult
    from .retrieval.service import Retrieval


@dataclass
class Workspace:
    """``root`` is the work-tree root; ``project`` the folder holding ``.llmwiki/`` (the
    root itself unless the wiki lives in a subfolder of a larger repository)."""

    root: Path
    git: Git | None
    settings: config.Settings
    use_cache: bool = True
    project: Path | None = None
    reuse_listing: bool = False  # a long-running process (MCP): reuse the page listing while no file changes
    _listing: tuple[object, dict[str, str]] | None = field(default=None, repr=False)
    _git_index: str | None = field(default=None, repr=False)
    _watch: Any = field(default=None, repr=False)  # a WorktreeWatch, False where none can be had, None: not tried
    _prefetched: Any = field(default=None, repr=False)  # (thread, result box) of prefetch_pages
    _preloading: Any = field(default=None, repr=False)  # (thread, handed event, result box) of prefetch_embedder

    @property
    def project_prefix(self) -> str:
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
        return cls(root, git, config.load(project, wiki_dir=wiki_dir, environ=environ), use_cache, project)

    def require_git(self, what: str, *, flag: str | None = None) -> Git:
        """The repository's git; ``flag`` names the option that asked for it, if one did."""
        if self.git is None:
            hint = "run `git init` there, or point -C at a folder inside a git repository"
            raise NotARepository(f"{what} needs a git repository, and {self.root} is not in one",
                                 hint=f"{hint}, or drop {flag}" if flag else hint)
        return self.git

    def _cache(self) -> ScanCache | None:
        if not self.use_cache or self.git is None or os.environ.get("LLMWIKI_NO_CACHE"):
            return None
        from .checks.cache import open_cache  # the checker's modules: imported by the commands using them

        try:
            return open_cache(self.git.common_dir())
        except DATA_ERRORS:  # an unreadable cache must never stop a check
            return None

    def snapshot(self, scope: str) -> Snapshot:
        """``worktree``, ``index``, or a revision (``HEAD``, a commit id, a branch)."""
        if scope == "worktree":
            return WorktreeSnapshot(self.root, self.git, max_bytes=self.settings.max_page_mb * 1024 * 1024)
        git = self.require_git("checking the index or a commit", flag="--staged/--rev/--base")
        if scope == "index":
            return IndexSnapshot(git)
        commit = git.rev_parse(scope)
        if commit is None:
            if scope == "HEAD":  # unborn branch: the first commit is compared with nothing
                return RevisionSnapshot(git, EMPTY_TREE)
            raise UsageError(f"unknown revision {scope!r}", hint="name a commit, branch or tag that exists")
        return RevisionSnapshot(git, commit)

    def wiki(self, scope: str = "worktree", cache: ScanCache | None = None) -> Wiki:
        if scope == "worktree" and self.settings.wiki_dir is not None:
            folder = (self.project or self.root) / self.settings.wiki_dir
            if not folder.is_dir():
                raise ConfigError(f"the wiki folder {self.settings.wiki_dir!r} does not exist in {self.project or self.root}",
                                  hint="fix --wiki-dir or wiki_dir in .llmwiki/config.toml")
        return load_wiki(
            self.snapshot(scope),
            wiki_dir=self.settings.wiki_dir,
            project_prefix=self.project_prefix,
            cache=cache,
            max_page_bytes=self.settings.max_page_mb * 1024 * 1024,
        )

    @property
    def state_dir(self) -> Path:
        """``.llmwiki/`` of the project: derived data and local state (created, with its
        ``.gitignore``, the first time anything is written there)."""
        from .statedir import ensure

        return ensure((self.project or self.root) / ".llmwiki")

    def retrieval(self, environ: Mapping[str, str] | None = None) -> Retrieval:
        """The retrieval service (imported here, lazily: it needs numpy, the checker does not)."""
        from .retrieval.service import Retrieval

        return Retrieval(
            root=self.root,
            project=self.project or self.root,
            state=self.state_dir,
            load_wiki=self._cached_worktree_wiki,
            environ=os.environ if environ is None else environ,
            provider=self.settings.embedding_provider,
            model=self.settings.embedding_model,
            mode=self.settings.retrieval,
            git=self.git,
            list_pages=self._page_blobs,
            preloaded=self._take_preloaded if self._preloading is not None else None,
        )

    def prefetch_embedder(self) -> None:
        """Start the local embedding model in a thread, when it is the configured provider and
        the store on disk holds vectors, while a one-shot command imports and loads the rest:
        onnxruntime's import and session start (~0.3 s) release the interpreter lock for most
        of it and overlap the store, the listing and numpy on the second core. The retrieval
        service takes the loaded model on its first use; any failure here is left to that
        normal path (which reports it)."""
        from .retrieval.embedders import provider_name

        try:
            if provider_name(os.environ, self.settings.embedding_provider) != "local":
                return
        except LlmwikiError:  # a misconfigured provider: reported by the normal path
            return
        import threading

        state = (self.project or self.root) / ".llmwiki"
        box: dict[str, Any] = {}
        handed = threading.Event()

        def ready(embedder: Any) -> None:
            box["embedder"] = embedder
            handed.set()

        def preload() -> None:
            from .retrieval.embedders import preload_local

            try:
                preload_local(state, ready)
            except (LlmwikiError, OSError, ImportError, ValueError, RuntimeError):
                pass  # the first embed loads again and reports what goes wrong
            finally:
                handed.set()

        thread = threading.Thread(target=preload, name="llmwiki-model", daemon=True)
        thread.start()
        self._preloading = (thread, handed, box)

    def settle(self) -> None:
        """Wait for the model `prefetch_embedder` is loading, if it still is (a command whose
        search never embedded: the process must not exit inside onnxruntime's start-up)."""
        preloading, self._preloading = self._preloading, None
        if preloading is not None:
            preloading[0].join()

    def _take_preloaded(self) -> Any:
        """The model `prefetch_embedder` made (still loading, perhaps: its first `embed`
        waits), once; None if there is none."""
        if self._preloading is None:
            return None
        _, handed, box = self._preloading
        handed.wait()
        return box.pop("embedder", None)  # once

    def prefetch_pages(self) -> None:
        """Start the listing of `_page_blobs` in a thread (git does the work in its own
        process) while a one-shot command imports and loads the rest: the next
        `_page_blobs` call takes its result."""
        import threading

        from .wiki.stamp import WorktreeWatch, worktree_stamp  # noqa: F401 - imported here, not in the thread

        box: dict[str, Any] = {}

        def list_pages() -> None:
            try:
                box["pages"] = self._list_page_blobs()
            except DATA_ERRORS as exc:  # handed to the caller of _page_blobs
                box["error"] = exc

        thread = threading.Thread(target=list_pages, name="llmwiki-listing", daemon=True)
        thread.start()
        self._prefetched = (thread, box)

    def _page_blobs(self) -> dict[str, str]:
        """Path -> blob id of every live page (no page scanned): how retrieval notices pages
        added, changed or deleted since `llmwiki index`. With ``reuse_listing`` the same dict
        (not to be modified) is returned while nothing changed: a kernel watch on the work
        tree's folders says so in one system call (`stamp.WorktreeWatch`), else a stat of
        every file."""
        if self._prefetched is not None:
            (thread, box), self._prefetched = self._prefetched, None
            thread.join()
            if "error" in box:
                raise box["error"]
            if "pages" in box:
                return box["pages"]  # type: ignore[no-any-return]
        return self._list_page_blobs()  # not prefetched (or the thread died: list here, where errors surface)

    def _list_page_blobs(self) -> dict[str, str]:
        from .wiki.model import page_blobs
        from .wiki.stamp import WorktreeWatch, worktree_stamp

        stamp: object = None
        if self.reuse_listing:
            if self._git_index is None and self.git is not None:  # git's index file, found once
                self._git_index = self.git.text("rev-parse", "--git-path", "index")
            index = self._git_index
            extra = [self.root / index] if index else []
            if self._watch is None:
                self._watch = WorktreeWatch.create(self.root, extra) or False
                # A new watch starts now: the listing made next is its reference.
                stamp = "watched" if self._watch else worktree_stamp(self.root, extra)
            elif self._watch:
                stamp = "watched"
                if self._listing is not None and not self._watch.changed():
                    return self._listing[1]
                # The events are consumed now: if the listing below fails, the next call must
                # not find an empty queue and serve the listing from before the change.
                self._listing = None
            else:
                stamp = worktree_stamp(self.root, extra)
                if self._listing is not None and self._listing[0] == stamp:
                    return self._listing[1]
        blobs = page_blobs(self.snapshot("worktree"), wiki_dir=self.settings.wiki_dir, project_prefix=self.project_prefix)
        if stamp is not None:
            self._listing = (stamp, blobs)
        return blobs

    def _cached_worktree_wiki(self) -> Wiki:
        return self.cached_wiki("worktree")

    def cached_wiki(self, scope: str) -> Wiki:
        """The wiki of ``scope``, its page scans read from (and saved to) the checker's scan
        cache: a command that reads every page (``llmwiki mv``) scans only what changed."""
        cache = self._cache()
        wiki = self.wiki(scope, cache)
        if cache is not None:
            cache.save()
        return wiki

    def check(self, head: str = "worktree", base: str | None = None) -> CheckResult:
        """Check ``head``; with ``base``, report only what is newly wrong since ``base``
        (the engine: checks/engine.py)."""
        from .checks.engine import CheckEngine

        engine = CheckEngine(self.git, self.wiki, wiki_dir=self.settings.wiki_dir, project_prefix=self.project_prefix,
                             limit=self.settings.max_page_mb * 1024 * 1024, cache=self._cache(),
                             severity=self.settings.check_severity)
        return engine.check(head, base)
