"""The composition root: finds the repository, reads settings, builds snapshots and wikis."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import config
from .checks import (Checker, CheckResult, check_wiki_with, fail_closed, names_fingerprint, new_problems, result_from_record,
                     result_to_record)
from .errors import ConfigError, NotARepository, UsageError
from .problems import make
from .git import EMPTY_TREE, Git, find_project, find_root
from .wiki.model import Wiki, load_wiki
from .wiki.scancache import ScanCache
from .wiki.sources import IndexSnapshot, RevisionSnapshot, Snapshot, WorktreeSnapshot

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
        except Exception:  # a cache must never stop a check
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
            base=self.base,
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
        added, changed or deleted since `llmwiki index`."""
        from .wiki.model import page_blobs
        from .wiki.stamp import worktree_stamp

        stamp = None
        if self.reuse_listing:
            if self._git_index is None and self.git is not None:  # git's index file, found once
                self._git_index = self.git.text("rev-parse", "--git-path", "index")
            index = self._git_index
            stamp = worktree_stamp(self.root, [self.root / index] if index else [])
            if self._listing is not None and self._listing[0] == stamp:
                return dict(self._listing[1])
        blobs = page_blobs(self.snapshot("worktree"), wiki_dir=self.settings.wiki_dir, base=self.base)
        if stamp is not None:
            self._listing = (stamp, blobs)
        return dict(blobs)

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
        if key is not None and cache is not None:
            record = cache.tree_get(key)
            if record is not None and len(record) == 3:  # older records lack the facts: redo once
                return result_from_record(record[:2])
            if scope == "index":
                fast = self._index_delta(cache, limit)
                if fast is not None:
                    result, fingerprint = fast
                    cache.tree_put(key, (*result_to_record(result), fingerprint))
                    return result
        wiki = self.wiki(scope, cache)
        checker = Checker(wiki)
        result = check_wiki_with(wiki, checker, cache, limit)
        if key is not None and cache is not None:
            fingerprint = names_fingerprint(wiki, limit)
            if cache.facts_get(fingerprint) is None:
                for page in wiki.pages:  # every target's outcome, for the next staged delta
                    for link in page.scan.raw_links:
                        checker.outcome(link[3])
                cache.facts_put(fingerprint, (wiki.root_dir, fingerprint, sorted(wiki.name_slugs()),
                                              sorted(wiki.other_files), checker.outcomes,
                                              {page.path: page.scan.names_key for page in wiki.pages}))
            cache.tree_put(key, (*result_to_record(result), fingerprint))
        return result

    def _tree_key(self, tree: str) -> str:
        limit = self.settings.max_page_mb * 1024 * 1024
        return f"v5\0{tree}\0{self.base}\0{self.settings.wiki_dir}\0{limit}"

    def _index_delta(self, cache: ScanCache, limit: int) -> tuple[CheckResult, str] | None:
        """The index checked as HEAD's cached result plus the pages the index changes.

        Only when HEAD's tree was checked before and the index merely modifies files whose
        names, aliases, headings and block ids stay the same (so every other page's problems
        and every known link target mean what they meant at HEAD); anything else, such as an
        added, deleted or renamed file, returns None and the full check runs. Measured: this
        turns a staged one-page edit on 10,000 pages from ~1.1 s into a few hundred ms.
        """
        from .checks import Checker
        from .wiki.model import Page, names_wiki
        from .wiki.pages import scan_page
        from .wiki.slug import parse_target, slugify

        git = self.git
        if git is None:
            return None
        base_tree = self._tree_id("HEAD")
        record = cache.tree_get(self._tree_key(base_tree)) if base_tree else None
        if record is None:
            # HEAD was never checked as a tree (e.g. only `--staged` runs): compare with the
            # most recent tree that was, such as the index of the previous run.
            suffix = self._tree_key("")
            for key, candidate in reversed(list(cache.trees().items())):
                if key.endswith(suffix[len("v5\0"):]) and key.startswith("v5\0"):
                    base_tree, record = key.split("\0")[1], candidate
                    break
        if record is None or len(record) < 3 or not isinstance(record[2], str):
            return None
        checked, rows, fingerprint = record
        facts = cache.facts_get(fingerprint)
        if facts is None:
            return None
        root_dir, _fingerprint, names, other_files, outcomes, names_by_path = facts
        out = git.run("diff-index", "--cached", "-z", "--no-renames", base_tree, check=False)
        fields = out.split(b"\0")
        changed: dict[str, tuple[str, str]] = {}
        for meta, path in zip(fields[0::2], fields[1::2]):
            if not meta:
                continue
            parts = meta.decode().lstrip(":").split(" ")
            if len(parts) != 5 or parts[4] != "M" or parts[0] != parts[1]:
                return None  # added, deleted, type-changed: names may change
            changed[path.decode("utf-8", "surrogateescape")] = (parts[2], parts[3])
        prefix = f"{root_dir}/" if root_dir else ""
        pages: list[Page] = []
        for path, (old_blob, new_blob) in changed.items():
            if not (path.startswith(prefix) and path[-3:].lower() == ".md") or path[:1] == "." or "/." in path:
                continue
            # Scanned here, not through the scan cache: loading that (8 MB on 10,000 pages)
            # would cost more than scanning the few pages a commit changes.
            data = git.read_blobs([new_blob]).get(new_blob)
            if data is None:
                return None
            scan = scan_page(data, max_bytes=limit)
            if names_by_path.get(path) != scan.names_key:
                return None
            page_id = path[len(prefix):-3]
            kind = "concept" if page_id.startswith("concepts/") else "query" if page_id.startswith("queries/") else "page"
            pages.append(Page(path, page_id, page_id.rsplit("/", 1)[-1], kind, new_blob, scan))
        known_names = set(names)
        known_files = {path.rsplit("/", 1)[-1].lower() for path in other_files}

        def outcome(text: str) -> tuple | None:
            target = parse_target(text)
            if target.is_self_anchor:
                return ("self",)
            if target.is_empty:
                return ("empty",)
            if target.slug not in known_names and not (target.file_name and target.file_name.lower() in known_files):
                return ("broken", target.key)  # no page or attachment has that name
            # A new link to an existing name: resolve it against the pages that answer to
            # that slug (by stem or alias), rebuilt from their names alone; resolution never
            # looks at other pages, and this avoids building tables for the whole wiki.
            wanted = f"\x02{target.slug}\x02"
            relevant = {path: key for path, key in names_by_path.items()
                        if slugify(path.rsplit("/", 1)[-1][:-3]) == target.slug
                        or wanted in f"\x02{key.split(chr(1), 1)[0]}\x02"}
            return Checker(names_wiki(root_dir, relevant, other_files)).outcome(text)

        checker = Checker(None, dict(outcomes))
        fresh: list = []
        for page in pages:
            problems = checker.page_problems(page, fallback=outcome)
            if problems is None:
                return None
            fresh.extend(problems)
        changed_paths = {p.path for p in pages}
        kept = [r for r in rows if r[0] not in changed_paths]
        result = result_from_record((checked, kept))
        problems = sorted(result.problems + fresh, key=lambda p: (p.path, p.line, p.col, p.code))
        return CheckResult(checked, problems), fingerprint

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
