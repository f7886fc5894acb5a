"""The composition root: finds the repository, reads settings, builds snapshots and wikis."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import config
from .checkdelta import Facts, derive
from .checks import (Checker, CheckResult, check_wiki_with, fail_closed, names_fingerprint, new_problems, result_from_record,
                     result_to_record)
from .errors import DATA_ERRORS, ConfigError, NotARepository, UsageError
from .problems import make
from .git import EMPTY_TREE, Git, find_project, find_root
from .wiki.model import Wiki, load_wiki
from .wiki.scancache import ScanCache
from .wiki.snapshots import IndexSnapshot, RevisionSnapshot, Snapshot, WorktreeSnapshot

if TYPE_CHECKING:
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
    _trees: dict[str, str] = field(default_factory=dict, repr=False)  # revision -> tree id
    reuse_listing: bool = False  # a long-running process (MCP): reuse the page listing while no file changes
    _listing: tuple[object, dict[str, str]] | None = field(default=None, repr=False)
    _git_index: str | None = field(default=None, repr=False)
    _watch: Any = field(default=None, repr=False)  # a WorktreeWatch, False where none can be had, None: not tried

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
        try:
            return ScanCache(self.git.common_dir() / "llmwiki" / "scan-cache-v1.marshal")
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
        )

    def _page_blobs(self) -> dict[str, str]:
        """Path -> blob id of every live page (no page scanned): how retrieval notices pages
        added, changed or deleted since `llmwiki index`. With ``reuse_listing`` the same dict
        (not to be modified) is returned while nothing changed: a kernel watch on the work
        tree's folders says so in one system call (`stamp.WorktreeWatch`), else a stat of
        every file."""
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
            else:
                stamp = worktree_stamp(self.root, extra)
                if self._listing is not None and self._listing[0] == stamp:
                    return self._listing[1]
        blobs = page_blobs(self.snapshot("worktree"), wiki_dir=self.settings.wiki_dir, project_prefix=self.project_prefix)
        if stamp is not None:
            self._listing = (stamp, blobs)
        return blobs

    def _cached_worktree_wiki(self) -> Wiki:
        cache = self._cache()
        wiki = self.wiki("worktree", cache)
        if cache is not None:
            cache.save()
        return wiki

    def _tree_id(self, scope: str) -> str | None:
        """The git tree a scope stands for (None for the work tree, or when unknown)."""
        if self.git is None or scope == "worktree":
            return None
        if scope == "index":
            # write-tree only adds the tree object the next commit would add anyway
            out = self.git.run("write-tree", check=False).decode().strip()
            return out or None
        known = self._trees.get(scope)
        if known is None:
            out = self.git.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{scope}^{{tree}}",
                               check=False).decode().strip()
            known = self._trees[scope] = out or (EMPTY_TREE if scope == "HEAD" else "")
        return known or None

    def _check_scope(self, scope: str, cache: ScanCache | None) -> CheckResult:
        limit = self.settings.max_page_mb * 1024 * 1024
        tree = self._tree_id(scope) if cache is not None else None
        key = self._tree_key(tree) if tree else None
        if key is not None and cache is not None and tree is not None:
            record = cache.tree_get(key)
            if record is not None and len(record) == 3:  # older records lack the facts: redo once
                return result_from_record(record[:2])
            fast = self._derive(scope, tree, cache, limit)
            if fast is not None:
                result, facts = fast
                cache.facts_put(facts.fingerprint, facts.to_record())
                cache.tree_put(key, (*result_to_record(result), facts.fingerprint))
                return result
        wiki = self.wiki(scope, cache)
        checker = Checker(wiki)
        result = check_wiki_with(wiki, checker, cache, limit)
        if key is not None and cache is not None:
            fingerprint = names_fingerprint(wiki, limit)
            if Facts.from_record(cache.facts_get(fingerprint)) is None:
                for page in wiki.pages:  # every target's outcome, for the next delta
                    for link in page.scan.raw_links:
                        checker.outcome(link[3])
                facts = Facts.build(wiki.root_dir, fingerprint, wiki.name_slugs(), wiki.other_files, checker.outcomes,
                                    [(page.path, page.scan.names_key, page.scan.raw_links) for page in wiki.pages])
                cache.facts_put(fingerprint, facts.to_record(), replace=True)
            cache.tree_put(key, (*result_to_record(result), fingerprint))
        return result

    def _tree_key(self, tree: str) -> str:
        limit = self.settings.max_page_mb * 1024 * 1024
        return f"v5\0{tree}\0{self.project_prefix}\0{self.settings.wiki_dir}\0{limit}"

    def _derive(self, scope: str, tree: str, cache: ScanCache, limit: int) -> tuple[CheckResult, Facts] | None:
        """``tree`` checked as a cached tree's result plus their diff (see checkdelta):
        HEAD's tree for the index when known, else the most recently checked tree, such as
        the other branch before a switch or the index of the previous hook run."""
        git = self.git
        if git is None:
            return None
        trees = cache.trees()
        suffix = self._tree_key("")[len("v5\0"):]
        candidates = [k for k in reversed(list(trees)) if k.startswith("v5\0") and k.endswith(suffix)]
        if scope == "index":
            head = self._tree_key(self._tree_id("HEAD") or EMPTY_TREE)
            if head in trees:
                candidates.insert(0, head)
        for base_key in candidates[:3]:
            record = trees[base_key]
            if len(record) < 3 or not isinstance(record[2], str):
                continue
            facts = Facts.from_record(cache.facts_get(record[2]))
            if facts is None:
                continue
            base_tree = base_key.split("\0")[1]
            if scope == "index":
                diff = git.run("diff-index", "--cached", "-z", "--no-renames", base_tree, check=False)
                read_prefix = ":"
            else:
                diff = git.run("diff-tree", "-r", "-z", "--no-renames", base_tree, tree, check=False)
                read_prefix = f"{tree}:"
            return derive(git, record[1], facts, diff=diff, read_prefix=read_prefix,
                          wiki_dir=self.settings.wiki_dir, base=self.project_prefix, limit=limit)
        return None

    def check(self, head: str = "worktree", base: str | None = None) -> CheckResult:
        """Check ``head``; with ``base``, report only what is newly wrong since ``base``.

        Whole results are cached per git tree: the hook's base (HEAD) is usually the tree
        the previous commit's hook already checked.
        """
        self._trees.clear()  # a long-lived workspace (the MCP server) sees branches move
        cache = self._cache()
        result = checked = self._check_scope(head, cache)
        if base is not None:
            result = new_problems(self._check_scope(base, cache), result)
        if cache is not None:
            cache.save()
        changed = self._changed_paths(head, base)
        if changed:
            result = fail_closed(checked, result, changed)
        return self._mark_pending(result)

    def _changed_paths(self, head: str, base: str | None) -> set[str]:
        """Paths the change adds or modifies: the index against ``base`` (default HEAD) for
        ``--staged``, ``base..head`` for two commits; empty for other scopes."""
        if self.git is None or head == "worktree" or (base is None and head != "index"):
            return set()
        against = base or "HEAD"
        if self.git.rev_parse(against) is None:
            against = EMPTY_TREE
        if head == "index":
            out = self.git.run("diff-index", "--cached", "-z", "--no-renames", "--name-only", "--diff-filter=AMT",
                               "--end-of-options", against, check=False)
        else:
            out = self.git.run("diff-tree", "-r", "-z", "--no-renames", "--name-only", "--diff-filter=AMT",
                               "--end-of-options", against, head, check=False)
        return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}

    def _mark_pending(self, result: CheckResult) -> CheckResult:
        """A broken link to a page an open review candidate would create is pending: a
        warning, not an error (DESIGN §3)."""
        if self.git is None or not any(p.code == "broken-link" for p in result.problems):
            return result
        from .publication.candidates import pending_index

        pending = pending_index(self.git)
        if not pending.by_slug:
            return result
        marked = []
        for p in result.problems:
            slug = (p.target or "").rsplit("/", 1)[-1]
            ids = pending.candidates_for(slug) if p.code == "broken-link" else ()
            if ids:
                p = make(p.path, p.line, p.col, "pending-link",
                         p.message.replace("broken link", "pending link", 1) + f" (review candidate {', '.join(ids)})",
                         p.target)
            marked.append(p)
        return CheckResult(result.checked, marked)
