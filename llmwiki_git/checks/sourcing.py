"""Where the provenance rule (stale.py) gets its inputs in each way the engine checks a tree.

* In full: every page's scan carries its record (``PageScan.sourcing``, cached by blob), the
  wiki's listing the sources' blobs; line counts of cited sources are cached by blob.
* Derived from another tree (the hook): the base tree's problems stand for every page the
  diff leaves alone, except the pages of a source the diff changed -- found with one ``git
  grep`` for the source's name, only when a source changed -- and the pages it changed;
  those are re-read and judged against the sources of the new tree.
* Against a base (``--base``, the hook, the Action): what the change newly made stale is
  reported on the source it changed, naming the pages left behind (:func:`stale.scoped`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

from ..gitstore.git import EMPTY_TREE, Git
from ..problems import Problem
from ..wiki.model import Wiki
from ..wiki.pages import sourcing_of
from ..wiki.provenance import citation_name, sources_dir
from ..wiki.snapshots import SourceFile
from .cache import ScanCache
from .result import CheckResult, result_from_record, result_to_record, sort_problems
from .stale import CODES, SourceTable, problems, scoped

Change = tuple[str, str, str, str]  # (status letter, path, old blob, new blob) of a raw diff
_NO_BLOB = "0" * 40


def raw_changes(diff: bytes) -> list[Change]:
    """The entries of ``git diff-index``/``diff-tree -z --no-renames`` raw output."""
    fields = diff.split(b"\0")
    out = []
    for meta, raw in zip(fields[0::2], fields[1::2]):
        parts = meta.decode("ascii", "replace").lstrip(":").split(" ")
        if len(parts) == 5:
            out.append((parts[4][:1], raw.decode("utf-8", "surrogateescape"), parts[2], parts[3]))
    return out


def full_sourcing(wiki: Wiki, project_prefix: str, cache: ScanCache | None) -> list[Problem]:
    """The provenance problems of a wiki read in full (its scans carry every page's record).
    With a cache, they are kept under a digest of everything they depend on -- the blob of
    every page that has a record and of every source -- so an unchanged work tree is not
    judged again (~20 ms on 4,000 pages with provenance)."""
    pages = [page for page in wiki.pages if page.scan.sourcing]
    if not pages:
        return []
    key = None
    if cache is not None and all(page.blob for page in pages) and all(wiki.sources.values()):
        parts = [
            project_prefix,
            *(f"{page.path}\0{page.blob}" for page in pages),
            *(f"{path}\0{blob}" for path, blob in sorted(wiki.sources.items())),
        ]
        key = (
            "sourcing\0"
            + hashlib.sha1("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
        )
        record = cache.result_get(key)
        if record is not None:
            return result_from_record(record).problems
    lines = cache.source_lines() if cache is not None else {}
    known = len(lines)

    def read(paths: list[str]) -> dict[str, bytes]:
        got = wiki.read([SourceFile(path, wiki.sources.get(path)) for path in paths])
        return {path: data for path, data in got.items() if isinstance(data, bytes)}

    found = problems(
        [(page.path, page.scan.sourcing) for page in pages],
        SourceTable(wiki.sources, read, lines),
        project_prefix,
    )
    if cache is not None:
        if len(lines) != known:
            cache.lines_changed()
        if key is not None:
            cache.result_put(key, result_to_record(CheckResult(0, found)))
    return found


def _source_blobs(git: Git, scope: str, tree: str, project_prefix: str) -> dict[str, str]:
    """Path -> blob of the sources in ``tree`` (the index for ``scope`` ``index``)."""
    folder = sources_dir(project_prefix)
    if scope == "index":
        return {e.path: e.blob for e in git.ls_index(folder) if e.mode != "160000"}
    return {e.path: e.blob for e in git.ls_tree_under(tree, folder, literal=True)}


def dependents(git: Git, scope: str, tree: str, names: Iterable[str], root_dir: str) -> set[str]:
    """Files under the wiki root of ``tree`` (the index for ``scope`` ``index``) whose text
    holds one of ``names`` (a superset of the pages naming or citing those sources)."""
    where = f":(top){root_dir}" if root_dir else ":(top)"
    return git.grep_files(sorted(set(names)), None if scope == "index" else tree, where)


def derived_sourcing(
    git: Git,
    result: CheckResult,
    diff: bytes,
    scope: str,
    tree: str,
    pages: set[str],
    locate: Callable[[list[str]], dict[str, str]],
    read: Callable[[Iterable[str]], dict[str, bytes]],
    project_prefix: str,
    root_dir: str,
) -> CheckResult:
    """``result`` (a tree derived from another: delta.derive kept the base's provenance
    problems of every page it did not re-read) with the provenance problems of the pages
    ``diff`` changed, and of the pages of the sources it changed, judged again."""
    folder = sources_dir(project_prefix) + "/"
    changes = raw_changes(diff)
    edited = {path: old for status, path, old, _ in changes if status != "D" and path in pages}
    changed_sources = [path for _, path, _, _ in changes if path.startswith(folder)]
    affected = set(edited)
    if changed_sources:
        names = [citation_name(path, project_prefix) for path in changed_sources]
        affected |= dependents(git, scope, tree, names, root_dir) & pages
    if not affected:
        return result
    where = locate(sorted(affected))
    olds = {
        path: old for path, old in edited.items() if old.strip("0")
    }  # an edited page's blob before
    data = read([*where.values(), *olds.values()])
    items = [
        (path, sourcing_of(data[where[path]]))
        for path in sorted(affected)
        if where.get(path) in data
    ]
    if not changed_sources:  # a page whose record did not change keeps its problems (most edits)
        items = [
            (path, s)
            for path, s in items
            if path not in olds or olds[path] not in data or sourcing_of(data[olds[path]]) != s
        ]
        affected = {path for path, _ in items} | (set(edited) - set(olds))
    items = [(path, sourcing) for path, sourcing in items if sourcing]
    kept = [p for p in result.problems if not (p.code in CODES and p.path in affected)]
    if not items:
        return (
            CheckResult(result.checked, kept, result.base)
            if len(kept) != len(result.problems)
            else result
        )
    blobs = _source_blobs(git, scope, tree, project_prefix)

    def read_sources(paths: list[str]) -> dict[str, bytes]:
        got = read([blobs[p] for p in paths if p in blobs])
        return {p: got[blobs[p]] for p in paths if blobs.get(p) in got}

    found = problems(items, SourceTable(blobs, read_sources), project_prefix)
    return CheckResult(result.checked, sort_problems(kept + found), result.base)


def scope_sourcing(
    git: Git | None,
    result: CheckResult,
    head: str,
    base: str,
    project_prefix: str,
    index_diff_of: Callable[[str], bytes | None],
) -> CheckResult:
    """``result`` (what is new since ``base``) with its provenance problems as a change
    shows them (:func:`stale.scoped`): one on each source the change touched, naming the
    pages it left behind."""
    if git is None or not any(p.code in CODES for p in result.problems):
        return result
    against = base if git.rev_parse(base) is not None else EMPTY_TREE
    if head == "index":
        raw = index_diff_of(base) if against == base else None
        if raw is None:
            raw = git.raw_diff(against, cached=True)
    elif head == "worktree":
        raw = git.raw_diff(against)
    else:
        raw = git.raw_diff(against, head)
    folder = sources_dir(project_prefix) + "/"
    changes = raw_changes(raw)
    touched = {path for _, path, _, _ in changes}
    changed: dict[str, tuple[str | None, str | None]] = {}
    for status, path, old, new in changes:
        if path.startswith(folder):
            changed[path] = (
                None if status == "A" else old,
                None if status == "D" else (new if new != _NO_BLOB else ""),
            )
    return CheckResult(
        result.checked, sort_problems(scoped(result.problems, changed, touched)), result.base
    )
