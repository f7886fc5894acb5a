"""The composition root: finds the repository, reads the settings, and builds what the
services take (snapshots, wikis, the page listing, the retrieval service, the check
engine). It builds; it runs nothing itself."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import config
from .errors import DATA_ERRORS, ConfigError, LlmwikiError, NotARepository, UsageError
from .gitstore.git import EMPTY_TREE, Git, find_project, find_root
from .wiki.flavour import Flavour, flavour_for
from .wiki.listing import PageListing
from .wiki.model import Wiki, load_wiki, page_blobs
from .wiki.snapshots import IndexSnapshot, RevisionSnapshot, Snapshot, WorktreeSnapshot

if TYPE_CHECKING:
    from .checks.cache import ScanCache
    from .checks.engine import CheckEngine
    from .checks.neighbours import Neighbourhood
    from .checks.result import CheckResult
    from .retrieval.preload import ModelPreload
    from .retrieval.service import Retrieval


@dataclass
class Workspace:
    """``root`` is the work-tree root; ``project`` the folder holding ``.llmwiki/`` (the
    root itself unless the wiki lives in a subfolder of a larger repository); ``environ``
    the environment every service reads (provider keys, ``LLMWIKI_*``), passed in, never
    read from ``os.environ`` below this point. ``long_lived``: a process that answers many
    calls (the MCP server): the page listing is reused while no file changes."""

    root: Path
    git: Git | None
    settings: config.Settings
    use_cache: bool = True
    project: Path | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ, repr=False)
    long_lived: bool = False
    listing: PageListing = field(init=False, repr=False)
    _retrieval: Retrieval | None = field(default=None, init=False, repr=False)
    _flavour: Flavour | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.listing = PageListing(self._list_pages, self.root, self.git, reuse=self.long_lived)

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
        long_lived: bool = False,
    ) -> Workspace:
        start = start or Path.cwd()
        env = os.environ if environ is None else environ
        root, is_git = find_root(start, env)
        git = Git(root, env) if is_git else None
        project = find_project(start, root)
        return cls(
            root,
            git,
            config.load(project, wiki_dir=wiki_dir, environ=env),
            use_cache,
            project,
            env,
            long_lived,
        )

    def require_git(self, what: str, *, flag: str | None = None) -> Git:
        """The repository's git; ``flag`` names the option that asked for it, if one did."""
        if self.git is None:
            hint = "run `git init` there, or point -C at a folder inside a git repository"
            raise NotARepository(
                f"{what} needs a git repository, and {self.root} is not in one",
                hint=f"{hint}, or drop {flag}" if flag else hint,
            )
        return self.git

    def _cache(self) -> ScanCache | None:
        if not self.use_cache or self.git is None or self.environ.get("LLMWIKI_NO_CACHE"):
            return None
        from .checks.cache import (
            open_cache,
        )  # the checker's modules: imported by the commands using them

        try:
            return open_cache(self.git.common_dir())
        except DATA_ERRORS:  # an unreadable cache must never stop a check
            return None

    def snapshot(self, scope: str) -> Snapshot:
        """``worktree``, ``index``, or a revision (``HEAD``, a commit id, a branch)."""
        if scope == "worktree":
            return WorktreeSnapshot(self.root, self.git, max_bytes=self.settings.max_page_bytes)
        git = self.require_git("checking the index or a commit", flag="--staged/--rev/--base")
        if scope == "index":
            return IndexSnapshot(git)
        commit = git.rev_parse(scope)
        if commit is None:
            if scope == "HEAD":  # unborn branch: the first commit is compared with nothing
                return RevisionSnapshot(git, EMPTY_TREE)
            raise UsageError(
                f"unknown revision {scope!r}", hint="name a commit, branch or tag that exists"
            )
        return RevisionSnapshot(git, commit)

    def wiki(self, scope: str = "worktree", cache: ScanCache | None = None) -> Wiki:
        if scope == "worktree" and self.settings.wiki_dir is not None:
            folder = (self.project or self.root) / self.settings.wiki_dir
            if not folder.is_dir():
                raise ConfigError(
                    f"the wiki folder {self.settings.wiki_dir!r} does not exist in {self.project or self.root}",
                    hint="fix --wiki-dir or wiki_dir in .llmwiki/config.toml",
                )
        return load_wiki(
            self.snapshot(scope),
            wiki_dir=self.settings.wiki_dir,
            project_prefix=self.project_prefix,
            cache=cache,
            max_page_bytes=self.settings.max_page_bytes,
            flavour=self.flavour,
        )

    @property
    def flavour(self) -> Flavour:
        """The vault flavour (wiki/flavour.py): ``flavour`` in the config, else detected from
        the editor's files in the project folder; read once per workspace."""
        if self._flavour is None:
            self._flavour = flavour_for(
                self.project or self.root, self.settings.flavour, self.settings.template_folders
            )
        return self._flavour

    @property
    def state_path(self) -> Path:
        """Where ``.llmwiki/`` of the project is (nothing created: a read looks here)."""
        return (self.project or self.root) / ".llmwiki"

    @property
    def state_dir(self) -> Path:
        """``.llmwiki/`` of the project: derived data and local state (created, with its
        ``.gitignore``, the first time anything is written there)."""
        from .statedir import ensure

        return ensure(self.state_path)

    @property
    def vector_store(self) -> str | None:
        """The shared vector store's URI (docs/team.md): ``LLMWIKI_VECTOR_STORE``, else
        ``vector_store`` in the config; None for the local file store."""
        return self.environ.get("LLMWIKI_VECTOR_STORE") or self.settings.vector_store or None

    def retrieval(self, *, preload: ModelPreload | None = None) -> Retrieval:
        """The retrieval service (imported here, lazily: it needs numpy, the checker does not),
        one per workspace: what it loads stays warm for the next call of a long-lived process.
        ``preload``: the local model already loading (`preload_model`), taken on first use."""
        if self._retrieval is None:
            from .retrieval.service import Retrieval

            self._retrieval = Retrieval(
                root=self.root,
                project=self.project or self.root,
                state=self.state_dir,
                load_wiki=self._cached_worktree_wiki,
                environ=self.environ,
                provider=self.settings.embedding_provider,
                model=self.settings.embedding_model,
                mode=self.settings.retrieval,
                git=self.git,
                list_pages=self.listing,
                preloaded=preload.take if preload is not None else None,
                vector_store=self.vector_store,
            )
        return self._retrieval

    def preload_model(self) -> ModelPreload | None:
        """Start the local embedding model in a thread when it is the configured provider
        (retrieval/preload.py), for `retrieval(preload=...)`; None when it is not."""
        from .retrieval.preload import ModelPreload

        git, shared = self.git, bool(self.vector_store)

        def without_local_vectors() -> (
            bool
        ):  # asked in the thread, only when the state folder holds no vectors
            # the shared store's vectors, or a published index a fresh clone restores, are ranked with the model
            return shared or (git is not None and git.object_id("refs/llmwiki/index") is not None)

        return ModelPreload.start(
            self.state_path, self.environ, self.settings.embedding_provider, without_local_vectors
        )

    def _list_pages(self) -> dict[str, str]:
        return page_blobs(
            self.snapshot("worktree"),
            wiki_dir=self.settings.wiki_dir,
            project_prefix=self.project_prefix,
        )

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

    def neighbourhood(self, scope: str) -> Neighbourhood | None:
        """The wiki of ``scope`` (a revision, or ``worktree``) as the checker's facts list it:
        what `llmwiki mv` and `merge-pages --suggest` read instead of every page. None when
        no check saw that tree nor one it derives from (a fresh clone), or the cache is off
        or the vault flavoured: the caller then reads the whole wiki."""
        cache = self._cache()
        if cache is None or self.git is None or not self.flavour.plain:
            return None
        from .checks.neighbours import Neighbourhood, tree_facts

        try:
            tree = self._engine(cache).cached_tree(scope)
        except LlmwikiError:  # a bad [check] setting: the caller reads the whole wiki
            return None
        facts = (
            tree_facts(
                cache,
                tree,
                wiki_dir=self.settings.wiki_dir,
                project_prefix=self.project_prefix,
                limit=self.settings.max_page_bytes,
                flavour=self.flavour,
            )
            if tree is not None
            else None
        )
        if tree is None or facts is None:
            return None
        return Neighbourhood(
            self.git, tree, facts, self.snapshot(scope), self.settings.max_page_bytes, cache
        )

    def check(self, head: str = "worktree", base: str | None = None) -> CheckResult:
        """Check ``head``; with ``base``, report only what is newly wrong since ``base``
        (the engine: checks/engine.py)."""
        return self._engine(self._cache()).check(head, base)

    def _engine(self, cache: ScanCache | None) -> CheckEngine:
        from .checks.engine import CheckEngine

        return CheckEngine(
            self.git,
            self.wiki,
            wiki_dir=self.settings.wiki_dir,
            project_prefix=self.project_prefix,
            limit=self.settings.max_page_bytes,
            cache=cache,
            severity=(*self.flavour.severity, *self.settings.check_severity),
            flavour=self.flavour,
        )
