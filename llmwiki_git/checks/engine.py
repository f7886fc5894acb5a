"""`llmwiki check` for one repository state: which trees to check, from the cache or by
derivation or in full, and the result new since a base (the hook's ``--staged --base HEAD``).

Whole results are cached per git tree: the hook's base (HEAD) is usually the tree the
previous commit's hook already checked; a tree never checked is derived from one that was
(delta.py), and only else checked in full (checker.py, with page scans and problems cached
by blob). A work tree that `git status` finds clean (nothing staged, modified or untracked
outside hidden folders) is HEAD's tree: its check is cached as HEAD's, so the hook's first
run after a whole-tree check (the first commit after a clone) starts from it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from typing import Any

from ..errors import GitError
from ..gitstore.catfile import CatFile
from ..gitstore.git import EMPTY_TREE, Git
from ..problems import make
from ..wiki.flavour import PLAIN, Flavour
from ..wiki.model import Wiki
from .cache import ScanCache
from .checker import check_wiki_with, names_fingerprint
from .delta import Facts, derive
from .extras import MAX_EXTRAS, NO_EXTRAS, Extras, extras_size, facts_id, merge_extras
from .links import Checker, link_keys
from .result import (
    CheckResult,
    fail_closed,
    new_problems,
    result_from_record,
    result_to_record,
    sort_problems,
)
from .severity import apply as apply_severity
from .severity import enabled, severities
from .sourcing import derived_sourcing, full_sourcing, scope_sourcing

BROKEN = ("broken-link", "broken-relative-link")  # what a rename can break (renames.py)
CANDIDATE_REFS = (
    "refs/heads/llmwiki/review/"  # publication.candidates.PREFIX (a test keeps them equal)
)
MAX_WORKTREE_CHANGES = 2000  # beyond this a changed work tree is checked without a tree id
LoadWiki = Callable[[str, "ScanCache | None"], Wiki]  # (scope, cache) -> the wiki of that scope


class CheckEngine:
    """One check of one repository. ``load_wiki`` reads a scope (``worktree``, ``index`` or
    a revision) in full; ``wiki_dir``, ``project_prefix`` (the project folder) and ``limit``
    (the page size limit) are part of every cached tree's key."""

    def __init__(
        self,
        git: Git | None,
        load_wiki: LoadWiki,
        *,
        wiki_dir: str | None,
        project_prefix: str,
        limit: int,
        cache: ScanCache | None,
        severity: Iterable[tuple[str, str]] = (),
        flavour: Flavour = PLAIN,
    ) -> None:
        self.severity = severities(
            severity
        )  # [check.severity]: a bad setting fails before any work
        self.git = git
        self.load_wiki = load_wiki
        self.wiki_dir = wiki_dir
        self.project_prefix = project_prefix
        self.limit = limit
        self.cache = cache
        self.flavour = flavour  # part of every cached tree's key; not plain: no staged delta
        self._trees: dict[str, str] = {}  # revision -> tree id, for this check
        self._derived: dict[str, Facts] = {}  # tree key -> the facts this check derived for it
        self._index_diffs: dict[
            str, Callable[[], bytes]
        ] = {}  # tree -> `diff-index --cached` against it
        self._cat = CatFile(git) if git is not None else None  # one process for revisions and blobs
        self._index_next = False
        self._started: list[Callable[[], bytes]] = []  # git commands started ahead of need
        self._write_tree: Callable[[], bytes] | None = None
        self._status: Callable[[], bytes] | None = (
            None  # `git status` of the work tree, started early
        )

    def check(self, head: str = "worktree", base: str | None = None) -> CheckResult:
        """Check ``head``; with ``base``, report only what is newly wrong since ``base``.
        The base goes first: a head never checked is then derived from it (for the hook,
        the index from HEAD, whose diff also names the changed pages)."""
        collecting = gc.isenabled()
        self._index_next = head == "index" and base is not None  # the base first, then the index
        gc.disable()  # ~10 ms of collections over the loaded facts on 10,000 pages; nothing here is cyclic
        try:
            if head == "index" and self.git is not None and self.cache is not None:
                self._prefetch_index()
            if "worktree" in (head, base) and self.git is not None and self.cache is not None:
                self._status = self.git.spawn_status()
                self._started.append(self._status)
            before = self._scope_result(base) if base is not None else None
            result = checked = self._scope_result(head)
            if before is not None and base is not None:
                result = new_problems(before, result, base)
                result = scope_sourcing(
                    self.git, result, head, base, self.project_prefix, self._index_diff_of
                )
            if self.cache is not None:
                self.cache.save()
            changed = self._changed_paths(head, base)
        finally:
            for output in self._started:
                output()  # reap what an early return left running
            if self._cat is not None:
                self._cat.close()
            if collecting:
                gc.enable()
        if changed:
            result = fail_closed(checked, result, changed)
        result = apply_severity(mark_pending(self.git, result), self.severity)
        if (
            head == "index"
            and self.git is not None
            and any(p.code in BROKEN for p in result.errors)
        ):
            from .renames import (
                staged_renames,
            )  # only when links broke: the gate then says what to run

            head_tree = self._trees.get("HEAD") or self.git.rev_parse("HEAD^{tree}")
            raw = self._index_diff(head_tree) if head_tree and head_tree != EMPTY_TREE else b""
            result = replace(result, renames=tuple(staged_renames(self.git, raw)))
        return result

    def _scope_result(self, scope: str) -> CheckResult:
        """A scope's result, with its orphan pages when `orphan-page` is on (they depend on
        every page's links, so they are computed for the whole wiki and cached per tree)."""
        result = self._check_scope(scope)
        if not enabled(self.severity, "orphan-page"):
            return result
        from .orphans import orphan_problems

        tree = self._tree_id(scope) if self.cache is not None else None
        key = f"orphans\0{self._tree_key(tree)}" if tree is not None else None
        record = (
            self.cache.result_get(key) if (self.cache is not None and key is not None) else None
        )
        if record is not None:
            found = result_from_record(record).problems
        else:
            found = orphan_problems(self.load_wiki(scope, self.cache))
            if self.cache is not None and key is not None:
                self.cache.result_put(key, result_to_record(CheckResult(0, found)))
        return CheckResult(result.checked, sort_problems(result.problems + found), result.base)

    def _tree_id(self, scope: str) -> str | None:
        """The git tree a scope stands for (None when unknown, or a work tree that differs
        from HEAD)."""
        if self.git is None:
            return None
        if scope == "worktree":
            status, self._status = self._status, None
            if status is None:
                return None
            out = status()
            if clean_status(out):
                return self._tree_id("HEAD")
            changed = status_paths(out)
            if changed is None or len(changed) > MAX_WORKTREE_CHANGES:
                return None
            from ..gitstore.commits import worktree_tree  # a changed work tree only

            # Keyed by the tree it holds, the result and facts of this check are what the
            # hook's next `--staged --base HEAD` derives from (HEAD and the index are a few
            # files away from it): without them its first run checked HEAD in full.
            return worktree_tree(self.git, changed)
        if scope == "index":
            # write-tree only adds the tree object the next commit would add anyway
            pending, self._write_tree = self._write_tree, None
            if pending is None:
                return self.git.write_tree()
            return pending().decode().strip() or None
        known = self._trees.get(scope)
        if known is None:
            found = self._cat.object_id(f"{scope}^{{tree}}") if self._cat is not None else None
            known = self._trees[scope] = found or (EMPTY_TREE if scope == "HEAD" else "")
        return known or None

    def _tree_key(self, tree: str) -> str:
        return tree_key(tree, self.project_prefix, self.wiki_dir, self.limit, self.flavour)

    def cached_tree(self, scope: str) -> str | None:
        """The tree ``scope`` stands for when its check result and facts are cached, or can
        be derived from a cached tree's (and now are); None otherwise: this never checks in
        full. What `llmwiki mv` and `merge-pages --suggest` ask before reading the facts of a
        tree (the commit of the last move, a work tree edited since its check): a derivation
        costs the pages the change touched."""
        if self.cache is None or self.git is None:
            return None
        try:
            if scope == "worktree":
                self._status = self.git.spawn_status()
                self._started.append(self._status)
            tree = self._tree_id(scope)
            if tree is None or self._cached_or_derived(scope, tree, self.cache) is None:
                return None
            self.cache.save()
            return tree
        finally:
            for output in self._started:
                output()
            if self._cat is not None:
                self._cat.close()

    def _cached_or_derived(self, scope: str, tree: str, cache: ScanCache) -> CheckResult | None:
        """``tree``'s result from the cache, or derived from a cached tree's (and cached)."""
        key = self._tree_key(tree)
        record = cache.tree_get(key)
        if record is not None:
            return result_from_record(record[:2])
        try:
            fast = self._derive(scope, tree, cache)
        except ValueError:  # damaged facts (checks/parts.py): the full check writes its own
            return None
        if fast is None:
            return None
        result, facts, base_id, base_extras = fast
        extras = merge_extras(base_extras, facts.added)
        if extras_size(extras) <= MAX_EXTRAS:  # a delta against the base's facts file
            cache.tree_put(key, (*result_to_record(result), base_id, extras))
        else:
            own = facts_id(facts.fingerprint, tree)
            cache.facts_put(own, facts.to_record(), replace=True)
            cache.tree_put(key, (*result_to_record(result), own, NO_EXTRAS))
        self._derived[key] = facts
        return result

    def _check_scope(self, scope: str) -> CheckResult:
        cache = self.cache
        tree = self._tree_id(scope) if cache is not None else None
        if cache is not None and tree is not None:
            found = self._cached_or_derived(scope, tree, cache)
            if found is not None:
                return found
        wiki = self.load_wiki(scope, cache)
        checker = Checker(wiki)
        fingerprint = names_fingerprint(wiki, self.limit) if cache is not None else ""
        result = check_wiki_with(wiki, checker, cache, self.limit, fingerprint)
        sourcing = full_sourcing(wiki, self.project_prefix, cache)
        if sourcing:
            result = CheckResult(
                result.checked, sort_problems(result.problems + sourcing), result.base
            )
        if cache is not None and tree is not None:
            own = facts_id(fingerprint, tree)
            if not cache.has_facts(own):
                keys = [(page.path, page.scan.names_key, link_keys(page)) for page in wiki.pages]
                for _, _, texts in keys:  # every target's outcome, for the next delta
                    for text in texts:
                        checker.outcome(text)
                facts = Facts.build(
                    wiki.root_dir,
                    fingerprint,
                    wiki.name_slugs(),
                    wiki.other_files,
                    checker.outcomes,
                    keys,
                )
                cache.facts_put(own, facts.to_record(), replace=True)
            cache.tree_put(self._tree_key(tree), (*result_to_record(result), own, NO_EXTRAS))
        return result

    def _derive(
        self, scope: str, tree: str, cache: ScanCache
    ) -> tuple[CheckResult, Facts, str, Extras] | None:
        """``tree`` checked as a cached tree's result plus their diff (see delta.py): HEAD's
        tree for the index when known, else the most recently checked tree, such as the
        other branch before a switch or the index of the previous hook run. Returns the
        result, the new facts, and the facts and extras of the tree it started from."""
        if self.git is None or not self.flavour.plain:
            # The delta's facts know the common rules only (a flavour's markdown links by
            # name, comments and templates are not in them): a flavoured wiki is checked in
            # full, its page scans and problems still cached.
            return None
        for base_key, record in self._bases(scope, cache):
            base_tree = base_key.split("\0")[0]
            diff_output = None if scope == "index" else self.git.spawn_tree_diff(base_tree, tree)
            if diff_output is not None:
                self._started.append(diff_output)  # git diffs while the facts load
            facts = self._derived.get(base_key)
            if facts is None:
                facts = Facts.from_record(cache.facts_get(record[2]))
                if facts is None:
                    continue  # its facts file is gone (pruned) or unreadable
                facts = facts.with_extras(record[3])
            derived = self._derive_from(scope, tree, base_tree, record, facts, diff_output)
            return None if derived is None else (*derived, record[2], record[3])
        return None

    def _bases(self, scope: str, cache: ScanCache) -> list[tuple[str, tuple[Any, ...]]]:
        """The cached trees to derive from, best first (at most three), with their records."""
        trees = cache.trees()
        suffix = self._tree_key("")
        candidates = [k for k in reversed(list(trees)) if k.endswith(suffix)]
        if scope == "index":
            head = self._tree_key(self._tree_id("HEAD") or EMPTY_TREE)
            if head in trees:
                candidates.insert(0, head)
        return [
            (key, trees[key])
            for key in candidates[:3]
            if len(trees[key]) == 4
            and isinstance(trees[key][2], str)
            and Facts.valid_extras(trees[key][3])
        ]

    def _derive_from(
        self,
        scope: str,
        tree: str,
        base_tree: str,
        record: tuple[Any, ...],
        facts: Facts,
        diff_output: Callable[[], bytes] | None,
    ) -> tuple[CheckResult, Facts] | None:
        """``tree``'s result and facts from ``base_tree``'s (``record``, ``facts``) and their
        diff (the index's against it, or ``diff_output``); None when the delta cannot tell."""
        git = self.git
        assert git is not None
        locate: Callable[[list[str]], dict[str, str]]
        if diff_output is None:
            diff = self._index_diff(base_tree)
            locate = _in_index
        else:
            diff = diff_output()
            locate = self._locator(tree)
        read = self._cat.read_blobs if self._cat is not None else git.read_blobs
        derived = derive(
            read,
            locate,
            record[1],
            facts,
            diff=diff,
            wiki_dir=self.wiki_dir,
            base=self.project_prefix,
            limit=self.limit,
        )
        if derived is None:
            return None
        result, new_facts = derived
        result = derived_sourcing(
            git,
            result,
            diff,
            scope,
            tree,
            set(new_facts.names_by_path),
            locate,
            read,
            self.project_prefix,
            new_facts.root_dir,
        )
        return result, new_facts

    def _prefetch_index(self) -> None:
        """Start the git commands a check of the index needs (its tree, its diff against
        HEAD) so git works while the caches load."""
        assert self.git is not None
        self._write_tree = self.git.spawn_write_tree()
        self._started.append(self._write_tree)
        head = self._tree_id("HEAD")
        if head is not None:
            self._index_diffs[head] = self.git.spawn_index_diff(head)
            self._started.append(self._index_diffs[head])

    def _index_diff_of(self, base: str) -> bytes | None:
        """The index's raw diff against the commit ``base`` when this check has it already
        (the hook's ``--staged --base HEAD``), else None."""
        tree = self._trees.get(base)
        return self._index_diff(tree) if tree is not None and tree in self._index_diffs else None

    def _index_diff(self, tree: str) -> bytes:
        """``git diff-index --cached`` against ``tree`` (asked once per check)."""
        assert self.git is not None
        diff = self._index_diffs.get(tree)
        if diff is None:
            diff = self._index_diffs[tree] = self.git.spawn_index_diff(tree)
        return diff()

    def _locator(self, tree: str) -> Callable[[list[str]], dict[str, str]]:
        """Where to read unchanged pages of ``tree``: a hook that checks HEAD and then the
        index reads them from the index, or by the HEAD blob id its diff gives for staged
        ones (no ``ls-tree``: that diff is the one the index derivation needs anyway)."""
        git = self.git
        assert git is not None
        if not self._index_next or tree != self._trees.get("HEAD"):
            return partial(git.blob_ids, tree)
        fields = self._index_diff(tree).split(b"\0")
        in_head = {
            path.decode("utf-8", "surrogateescape"): meta.split(b" ")[2].decode()
            for meta, path in zip(fields[0::2], fields[1::2])
            if meta.count(b" ") == 4
        }  # staged: HEAD's blob

        def locate(paths: list[str]) -> dict[str, str]:
            return {path: in_head.get(path) or f":{path}" for path in paths}

        return locate

    def _changed_paths(self, head: str, base: str | None) -> set[str]:
        """Paths the change adds or modifies: the index against ``base`` (default HEAD) for
        ``--staged``, ``base..head`` for two commits; empty for other scopes."""
        if self.git is None or head == "worktree" or (base is None and head != "index"):
            return set()
        against = base or "HEAD"
        if against == "HEAD" and head == "index" and self._tree_id("HEAD") in self._index_diffs:
            return _added_or_modified(
                self._index_diff(self._tree_id("HEAD") or "")
            )  # the derivation's diff
        if self.git.rev_parse(against) is None:
            against = EMPTY_TREE
        return self.git.changed_names(against, None if head == "index" else head)


def tree_key(
    tree: str, project_prefix: str, wiki_dir: str | None, limit: int, flavour: Flavour
) -> str:
    """The key of a tree's cached result and facts: the tree and what else its check read."""
    key = f"{tree}\0{project_prefix}\0{wiki_dir}\0{limit}"
    return key if flavour.plain else f"{key}\0{flavour!r}"


def _hidden(path: bytes) -> bool:
    return path.startswith(b".") or b"/." in path  # never a page nor an attachment (wiki/model.py)


def status_paths(out: bytes) -> list[bytes] | None:
    """The paths ``git status --porcelain=v2 -z --branch`` output names changed, staged or
    untracked, but in hidden folders (never read by the check); None when git failed (no
    branch header) or a path is unmerged."""
    items = iter(out.split(b"\0"))
    header = False
    found: list[bytes] = []
    for item in items:
        if not item or item.startswith(b"# "):
            header = header or item.startswith(b"# branch.oid ")
            continue
        kind = item[:2]
        if kind == b"? ":
            paths = [item[2:]]
        elif kind == b"1 ":
            paths = item.split(b" ", 8)[8:]
        elif kind == b"2 ":
            paths = [*item.split(b" ", 9)[9:], next(items, b"")]
        else:
            return None
        found.extend(p for p in paths if p and not _hidden(p))
    return found if header else None


def clean_status(out: bytes) -> bool:
    """Whether ``git status --porcelain=v2 -z --branch`` output says the work tree is HEAD's
    tree for the wiki: no change staged, modified or untracked but in hidden folders (such
    as ``.llmwiki/``). Output without its branch header (git failed), or with an unmerged
    path, is never clean."""
    return status_paths(out) == []


def _in_index(paths: list[str]) -> dict[str, str]:
    return {path: f":{path}" for path in paths}  # cheap for git: the index is one sorted list


def _added_or_modified(raw: bytes) -> set[str]:
    """The paths ``git diff-index -z`` raw output adds, modifies or changes the type of
    (what ``--name-only --diff-filter=AMT`` prints)."""
    fields = raw.split(b"\0")
    return {
        path.decode("utf-8", "surrogateescape")
        for meta, path in zip(fields[0::2], fields[1::2])
        if meta[-1:] in (b"A", b"M", b"T")
    }


def _may_have_candidates(git: Git) -> bool:
    """False only when the ref files prove there is no candidate branch (no git process:
    a hook that found broken links asks this every time); anything unusual says True."""
    try:
        common = git.common_dir()
        if (common / "reftable").exists() or (common / CANDIDATE_REFS).exists():
            return True
        packed = (common / "packed-refs").read_bytes()
    except FileNotFoundError:
        return False  # no packed refs and no loose candidate folder
    except (OSError, GitError):
        return True
    return CANDIDATE_REFS.encode() in packed


def mark_pending(git: Git | None, result: CheckResult) -> CheckResult:
    """A broken link to a page an open review candidate would create is pending: a
    warning, not an error (DESIGN §3)."""
    if git is None or not any(p.code == "broken-link" for p in result.problems):
        return result
    if not _may_have_candidates(git) or not git.for_each_ref(
        CANDIDATE_REFS, ("objectname",), count=1
    ):
        return result  # no open candidate: the review layer need not be loaded (the hook's budget)
    from ..publication.candidates import pending_index

    pending = pending_index(git)
    if not pending.by_slug:
        return result
    marked = []
    for p in result.problems:
        slug = (p.target or "").rsplit("/", 1)[-1]
        ids = pending.candidates_for(slug) if p.code == "broken-link" else ()
        if ids:
            p = make(
                p.path,
                p.line,
                p.col,
                "pending-link",
                p.message.replace("broken link", "pending link", 1)
                + f" (review candidate {', '.join(ids)})",
                p.target,
            )
        marked.append(p)
    return CheckResult(result.checked, marked, result.base)
